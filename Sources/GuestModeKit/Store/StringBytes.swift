extension String {
    /// Calls `body` with the string's UTF-8 where it lies, without copying
    /// the string: `withUTF8` needs a `var`, and the copy into it is a retain
    /// and a release, each an atomic instruction, which an import paid for
    /// every text of millions of rows (`bench/results.md`).
    ///
    /// ```swift
    /// let length = name.withUTF8Bytes { $0.count }
    /// ```
    @inlinable package func withUTF8Bytes<Result>(
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var contiguous = self
        return try contiguous.withUTF8(body)
    }
}
