import Foundation
import Testing

/// libpq and libarchive are opened on first use, not linked
/// (Sources/CLibPQ/libpq.c, Sources/CArchive/libarchive.c): loading them and
/// what they need cost every command about 14 M instructions at start-up.
@Suite struct LazyLibraryTests {
    @Test func theBinaryDoesNotLoadLibpqOrLibarchiveAtStart() async throws {
        let sandbox = try Sandbox()
        let result = try await sandbox.shell("ldd '\(Sandbox.binary.path)'")
        #expect(result.status == 0)
        #expect(result.stdout.contains("libsqlite3"))
        #expect(!result.stdout.contains("libpq.so"))
        #expect(!result.stdout.contains("libarchive.so"))
    }
}
