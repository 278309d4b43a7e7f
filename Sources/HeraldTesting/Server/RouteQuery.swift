import Foundation

/// The query parameters of a request target, with validated accessors.
struct RouteQuery: Sendable {
    /// A parameter that is present but unusable; becomes a `400 Bad Request`.
    struct InvalidParameter: Error {
        var message: String
    }

    let items: [URLQueryItem]

    init(_ items: [URLQueryItem]) {
        self.items = items
    }

    /// The value of the first parameter named `name`, or `nil` if there is none.
    func value(_ name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    /// Whether parameter `name` is present with the value `1` or `true`.
    func flag(_ name: String) -> Bool {
        guard let value = value(name) else { return false }
        return value == "1" || value == "true"
    }

    /// The integer parameter `name`, or `defaultValue` if it is absent.
    ///
    /// - Throws: ``InvalidParameter`` if the value is not an integer in `range`.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(name) else { return defaultValue }
        return try Self.integer(text, named: name, in: range)
    }

    /// Parses `text` as an integer in `range`.
    ///
    /// - Throws: ``InvalidParameter`` naming `name` if it is not one.
    static func integer(_ text: String, named name: String, in range: ClosedRange<Int>) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw InvalidParameter(message: "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }
}
