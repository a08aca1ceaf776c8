import Foundation
import Testing

/// `record list` a page at a time: the command line's side of the paged record route.
@Suite("record list: a collection a page at a time")
struct RecordPagesTests {
    @Test(
        "--limit and --after walk the collection by key, in byte order, each page after the last key of the one before")
    func pages() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        // Keys whose byte order is not the order a person would sort them in.
        let keys = ["b", "a", "B", "é", "a0", "Z", "c"]
        let lines = keys.map { #"{"user_id":"\#(guest)","collection":"habits","key":"\#($0)","data":{}}"# }
        let loaded = try await sandbox.run("record", "load", "-", input: lines.joined(separator: "\n"))
        #expect(loaded.status == 0, "\(loaded.stderr)")
        let all = try await sandbox.run("record", "list", guest, "habits", "--format", "tsv", "--quiet")
        let ordered = keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(all.stdout.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) } == ordered)

        var walked: [String] = []
        var after: [String] = []
        while true {
            let page = try await sandbox.run(
                arguments: ["record", "list", guest, "habits", "--limit", "3", "--json"] + after)
            #expect(page.status == 0, "\(page.stderr)")
            let got = (page.json as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
            walked += got
            guard got.count == 3, let last = got.last else { break }
            after = ["--after", last]
        }
        #expect(walked == ordered)

        for bad in ["0", "1000001", "-1"] {
            let refused = try await sandbox.run("record", "list", guest, "habits", "--limit", bad)
            #expect(refused.status == 64, "--limit \(bad): \(refused.stderr)")
            #expect(refused.stderr.contains("--limit"), "\(refused.stderr)")
        }
    }
}
