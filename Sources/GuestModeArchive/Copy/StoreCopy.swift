import Foundation
import GuestModeKit

/// One table of a copy: how many rows it holds and their checksum.
package struct TableDigest: Codable, Sendable, Equatable {
    package var rows: Int
    /// SHA-256 over the table's rows in primary key order, each row's columns
    /// sorted by name (see `StoreCopy.digests(of:)`), as lowercase hex.
    package var sha256: String
}

/// `guestmode db copy`: a whole store copied from one backend to another (or
/// the same), checked table by table before it is called done.
package enum StoreCopy {
    /// Each table's row count and checksum, read from one snapshot. Both
    /// backends stream rows in the same order with the same values, and the
    /// hashing is done here, so equal stores give equal digests whatever
    /// holds them.
    ///
    /// Encoding of a row: for each column in name order, the name, a NUL, a
    /// type tag and the value (`N`; `I` decimal; `R` the IEEE bit pattern in
    /// hex; `T` the UTF-8 byte count, `:`, the bytes), then a newline.
    package static func digests(of store: any StoreTableStore) throws -> [String: TableDigest] {
        try store.readStoreTables { snapshot in
            var digests: [String: TableDigest] = [:]
            for table in StoreTable.all {
                var hasher = StreamingSHA256()
                var rows = 0
                var order: [Int] = []
                try snapshot.forEachRow(in: table) { columns, values in
                    if order.count != columns.count { order = columns.indices.sorted { columns[$0] < columns[$1] } }
                    var bytes: [UInt8] = []
                    for index in order {
                        bytes += Array(columns[index].utf8)
                        bytes.append(0)
                        switch index < values.count ? values[index] : .null {
                        case .null: bytes.append(UInt8(ascii: "N"))
                        case .integer(let number): bytes += Array("I\(number)".utf8)
                        case .real(let number): bytes += Array("R\(String(number.bitPattern, radix: 16))".utf8)
                        case .text(let text):
                            let utf8 = Array(text.utf8)
                            bytes += Array("T\(utf8.count):".utf8)
                            bytes += utf8
                        }
                    }
                    bytes.append(UInt8(ascii: "\n"))
                    bytes.withUnsafeBytes { hasher.update($0) }
                    rows += 1
                }
                digests[table.name] = TableDigest(rows: rows, sha256: hasher.finalizeHex())
            }
            return digests
        }
    }

    /// Copies every row of `source` into `destination`, a store just created
    /// (empty but for its profile binding), keeping every id, then checks
    /// that each table of the destination has the source's row count and
    /// checksum. Throws `copy_mismatch` (exit 65) when anything differs, so
    /// the caller discards the destination. `progress` gets one line per step.
    /// Returns the digests, equal on both sides.
    package static func copy(
        from source: any GuestStore, to destination: any GuestStore, guestOwner: String,
        progress: (String) -> Void = { _ in }
    ) throws -> [String: TableDigest] {
        progress("reading the source's checksums")
        let expected = try digests(of: source)
        try source.readBackupRows(.all, guestOwner: guestOwner) { snapshot in
            try destination.importBackupRows(dryRun: false) { writes in
                for table in BackupTable.all {
                    let accepted = try writes.columns(of: table)
                    var copied = 0
                    try snapshot.forEachRow(in: table) { columns, values in
                        if let missing = columns.first(where: { !accepted.contains($0) }) {
                            throw mismatch("the destination store has no column \(table.name).\(missing)")
                        }
                        let row = BackupRow(columns: columns, values: values)
                        // The users table is copied first, and the source's own keys hold every other row's
                        // user to one of its users rows: the destination has each row's user already.
                        if try writes.insert(row, into: table, ownerHasUsersRow: table.name != "users") == .renumbered {
                            throw mismatch("the destination already held a row of \(table.name) with the same id")
                        }
                        copied += 1
                    }
                    progress("copied \(copied) rows of \(table.name)")
                }
                if let table = try writes.tableWithDanglingReferences() {
                    throw mismatch("rows of \(table) refer to users the copy does not hold")
                }
            }
        }
        try source.readStoreTables { snapshot in
            try destination.replaceOwnTableRows { writes in
                for table in StoreTable.own {
                    var copied = 0
                    try snapshot.forEachRow(in: table) { columns, values in
                        try writes.insert(columns, values, into: table)
                        copied += 1
                    }
                    progress("copied \(copied) rows of \(table.name)")
                }
            }
        }
        progress("verifying the destination")
        let found = try digests(of: destination)
        for table in StoreTable.all {
            guard let want = expected[table.name], let got = found[table.name] else { continue }
            if want.rows != got.rows {
                throw mismatch(
                    "\(table.name) has \(got.rows) rows in the copy but \(want.rows) in the source (rows no user owns are not copied, or the source changed during the copy)"
                )
            }
            if want.sha256 != got.sha256 {
                throw mismatch(
                    "\(table.name) differs between the source and the copy (checksum \(want.sha256.prefix(12))… against \(got.sha256.prefix(12))…)"
                )
            }
        }
        return expected
    }

    private static func mismatch(_ detail: String) -> GuestModeError {
        GuestModeError(
            .copyMismatch, "the copy does not match its source: \(detail); the destination was not kept"
        )
    }
}
