import Foundation
import GuestModeKit

/// Progress of long work (guestmode(1), OUTPUT), always on standard error so standard output keeps the
/// data (with --json, its one document):
///
/// - on a terminal, without --json or --quiet: one line redrawn in place, `exporting: 1200/5000 rows`;
/// - with --json: JSON lines, as restic writes them, `{"message_type":"status","action":"backup export",
///   "done":1200,"total":5000}` as the work advances (at most once per percent; `total` null when unknown),
///   then one `{"message_type":"summary","action":…,"done":…,"total":…}` when it is done;
/// - otherwise nothing.
package final class Progress {
    package let action: String
    package let unit: String
    private let isJSON: Bool
    private let isTerminal: Bool
    private var lastReported: Int?
    private(set) var done = 0
    private(set) var total: Int?
    private var drewLine = false

    package init(_ action: String, unit: String, global: GlobalOptions) {
        self.action = action
        self.unit = unit
        isJSON = global.json
        isTerminal = global.output.showsProgress
    }

    /// Whether anything is shown: when not, work that only feeds the progress (counting first) can be skipped.
    package var isShown: Bool { isJSON || isTerminal }

    /// `done` of `total` (nil when not known yet).
    package func update(done: Int, total: Int?) {
        self.done = done
        self.total = total
        guard isShown else { return }
        // At most once per percent, or per 1000 units when the total is unknown: a million guests
        // purged must not mean a million writes to stderr.
        let step = total.map { max(1, $0 / 100) } ?? 1_000
        let bucket = done / step
        guard bucket != lastReported else { return }
        lastReported = bucket
        if isJSON {
            emit("status")
        } else {
            let of = total.map { "/\($0)" } ?? ""
            ConsoleStream.error.write("\r\(action): \(done)\(of) \(unit)")
            drewLine = true
        }
    }

    /// Ends the progress: the summary line with --json, a line break after a redrawn line.
    package func finish(done: Int? = nil, total: Int? = nil) {
        if let done { self.done = done }
        if let total { self.total = total }
        if isJSON {
            emit("summary")
        } else if drewLine {
            ConsoleStream.error.write("\n")
        }
    }

    private func emit(_ type: String) {
        let line = JSONValue.object([
            ("message_type", .string(type)), ("action", .string(action)), ("unit", .string(unit)),
            ("done", .number(String(done))), ("total", total.map { .number(String($0)) } ?? .null),
        ])
        ConsoleStream.error.write(line.text(pretty: false) + "\n")
    }
}
