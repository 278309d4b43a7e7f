import Testing
@Test func placeholderNotifications() { #expect(Bool(true)) }
