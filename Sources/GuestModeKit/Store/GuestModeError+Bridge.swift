// Temporary: lets files still being converted name codes as literals. Removed once every literal is a constant.
extension GuestModeError.Code: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}
