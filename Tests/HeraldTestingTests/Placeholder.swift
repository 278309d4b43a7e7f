import Testing
@Test func placeholderTesting() { #expect(Bool(true)) }
