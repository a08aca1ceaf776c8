import Foundation
import GuestModeKit

/// Where a row came from, for error messages that point at it.
struct RowLocation {
    var entry: String
    var line: Int

    var description: String { "line \(line) of \(entry)" }
}

/// What one pass over an archive saw.
struct ArchiveWalk {
    struct Observed {
        var size: Int64
        var sha256: String?
        var rows: Int?
    }

    enum Depth {
        /// Names, order, types, sizes and limits; entry bytes are read but not hashed.
        case structure
        /// Also hashes every entry and parses every row.
        case full
    }

    /// The header, its `users` holding the first `userSampleLimit` users only:
    /// the whole list went to the walk's `onUser` as it streamed.
    var header: BackupHeader
    /// How many users header.json lists.
    var userCount: Int
    /// The format version the archive was written in, before any upgrade.
    var writtenVersion: Int
    var manifest: BackupManifest
    var observed: [String: Observed]
    var order: [String]
    /// The MACs header.json would have under each key that may have signed it.
    var headerMACs: HeaderMACs
    var manifestBytes: [UInt8]
    var signature: BackupSignature?
    var encrypted: Bool

    /// The users of header.json `header.users` keeps; the rest are counted.
    static let userSampleLimit = 1000

    /// Reads the archive once, front to back. `listed` hears every user of
    /// header.json as it streams (`restart` when the list must be heard again
    /// from the start); `onHeader` runs after the whole header, before any
    /// row; `onRow` (full depth only) gets every row already upgraded to the
    /// current format. Refuses entries this format does not define.
    static func read(
        path: String, depth: Depth, limits: ArchiveLimits, chain: ArchiveMigrationChain = .standard,
        keys: BackupKeys = .none, listed: (any ListedUserSink)? = nil,
        onHeader: (BackupHeader) throws -> Void = { _ in },
        onRow: (BackupTable, consuming BackupRow, RowLocation) throws -> Void = { _, _, _ in }
    ) throws -> ArchiveWalk {
        try ArchiveReader.read(path: path, limits: limits, keys: keys) { reader in
            guard let first = try reader.nextEntry() else {
                throw GuestModeError(
                    .notABackup, "the archive '\(path)' has no entries; it is not a guestmode backup")
            }
            guard first == BackupFormat.headerName else {
                throw GuestModeError(
                    .notABackup,
                    "the archive '\(path)' starts with '\(first)' instead of \(BackupFormat.headerName); it is not a guestmode backup"
                )
            }
            let read = try readHeader(reader, path: path, chain: chain, keys: keys, listed: listed)
            let header = read.header
            let writtenVersion = read.version
            let migrations = read.migrations
            var observed = [first: Observed(size: read.size, sha256: read.sha256, rows: nil)]
            var order = [first]
            try onHeader(header)

            var manifest: BackupManifest?
            var manifestBytes: [UInt8] = []
            var signature: BackupSignature?
            while let name = try reader.nextEntry() {
                if signature != nil || (manifest != nil && (name != BackupFormat.signatureName || writtenVersion < 2)) {
                    let concatenated = name == BackupFormat.headerName ? " (two archives concatenated?)" : ""
                    throw GuestModeError(
                        .hostileArchive,
                        "refusing the archive '\(path)': it has data after its end, an entry '\(name)' after \(signature == nil ? BackupFormat.manifestName : BackupFormat.signatureName)\(concatenated); nothing was changed"
                    )
                }
                order.append(name)
                if name == BackupFormat.manifestName {
                    manifestBytes = try reader.readAll()
                    manifest = try decodeManifest(manifestBytes, path: path)
                    continue
                }
                if name == BackupFormat.signatureName, manifest != nil {
                    signature = try decodeSignature(try reader.readAll(), path: path)
                    continue
                }
                guard let table = BackupFormat.table(forEntry: name) else {
                    throw GuestModeError(
                        .hostileArchive,
                        "refusing the archive '\(path)': it has an entry '\(name)' that guestmode backups do not contain; nothing was changed"
                    )
                }
                switch depth {
                case .structure:
                    observed[name] = Observed(size: try reader.readData { _ in }, sha256: nil, rows: nil)
                case .full:
                    var hasher = StreamingSHA256()
                    var splitter = LineSplitter(entry: name)
                    var previousColumns: [String] = []
                    let size = try reader.readData { chunk in
                        hasher.update(chunk)
                        try splitter.feed(chunk) { line, location in
                            var row = try decodeRow(line, like: previousColumns, location: location, path: path)
                            // The same array row after row: kept without a retain and a release each time.
                            if previousColumns != row.columns { previousColumns = row.columns }
                            if !migrations.isEmpty {
                                for step in migrations { try step.upgradeRow(table.name, &row) }
                            }
                            // Handed on, not copied: the import drops a surrogate id from the row in place.
                            try onRow(table, consume row, location)
                        }
                    }
                    try splitter.finish()
                    observed[name] = Observed(size: size, sha256: hasher.finalizeHex(), rows: splitter.lines)
                }
            }
            guard let manifest else {
                throw GuestModeError(
                    .missingManifest,
                    "the archive '\(path)' has no \(BackupFormat.manifestName); it is truncated or was altered")
            }
            return ArchiveWalk(
                header: header, userCount: read.userCount, writtenVersion: writtenVersion, manifest: manifest,
                observed: observed, order: order, headerMACs: read.macs, manifestBytes: manifestBytes,
                signature: signature,
                encrypted: reader.encrypted)
        }
    }

    /// Who signed the archive, judged with this deployment's keys. A
    /// signature that names this deployment's key but does not hold is a
    /// damaged or altered archive and throws.
    func signatureStatus(key: BackupKey?, path: String) throws -> SignatureStatus {
        guard let signature else {
            guard header.signingKeyId == nil else {
                throw GuestModeError(
                    .badSignature,
                    "the archive '\(path)' says in header.json that it is signed but has no signature.json; it is damaged or was altered, and nothing was changed"
                )
            }
            return .unsigned
        }
        guard signature.keyId == header.signingKeyId, signature.algorithm == BackupSignature.algorithmName else {
            throw GuestModeError(
                .badSignature,
                "the archive '\(path)' has a signature.json that does not agree with header.json; it is damaged or was altered, and nothing was changed"
            )
        }
        // The current key or a rotated one: a retired key vouches for nothing any more.
        guard let signer = key?.trusted(id: signature.keyId) else { return .anotherDeployment }
        guard let mac = Self.bytes(ofHex: signature.mac),
            headerMACs.isValid(mac, key: signer, manifest: manifestBytes)
        else {
            throw GuestModeError(
                .badSignature,
                "the archive '\(path)' claims this deployment's signature but signature.json does not match its header and manifest; it is damaged or was altered, and nothing was changed"
            )
        }
        return .thisDeployment
    }

    private static func bytes(ofHex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    private static func decodeSignature(_ bytes: [UInt8], path: String) throws -> BackupSignature {
        do {
            return try BackupFormat.decoder().decode(BackupSignature.self, from: Data(bytes))
        } catch {
            throw GuestModeError(
                .badSignature, "the archive '\(path)' has a malformed signature.json (\(describe(error)))")
        }
    }

    /// Every way the archive differs from its manifest; empty when it matches.
    var problems: [String] {
        var problems: [String] = []
        if manifest.formatVersion != writtenVersion {
            problems.append(
                "manifest.json says format version \(manifest.formatVersion) but header.json says \(writtenVersion)")
        }
        let listed = Dictionary(manifest.entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        if listed.count != manifest.entries.count { problems.append("manifest.json lists an entry twice") }
        for name in order
        where name != BackupFormat.manifestName && name != BackupFormat.signatureName && listed[name] == nil {
            problems.append("\(name) is not listed in manifest.json")
        }
        var rowsPerTable: [String: Int] = [:]
        for entry in manifest.entries {
            guard let seen = observed[entry.name] else {
                problems.append("\(entry.name) is listed in manifest.json but missing from the archive")
                continue
            }
            if seen.size != entry.size {
                problems.append("\(entry.name) is \(seen.size) bytes but manifest.json says \(entry.size)")
            }
            if let sha256 = seen.sha256, sha256 != entry.sha256.lowercased() {
                problems.append("\(entry.name) has SHA-256 \(sha256) but manifest.json says \(entry.sha256)")
            }
            if let rows = seen.rows, rows != (entry.rows ?? 0) {
                problems.append("\(entry.name) has \(rows) rows but manifest.json says \(entry.rows ?? 0)")
            }
            if let table = entry.table { rowsPerTable[table, default: 0] += entry.rows ?? 0 }
        }
        for (table, count) in manifest.tables where (rowsPerTable[table] ?? 0) != count {
            problems.append(
                "manifest.json counts \(count) rows in \(table) but its entries hold \(rowsPerTable[table] ?? 0)")
        }
        return problems
    }

    /// Throws the manifest mismatches as one error.
    func requireMatchingManifest(path: String) throws {
        let problems = problems
        guard let first = problems.first else { return }
        let more = problems.count > 1 ? " (and \(problems.count - 1) more problems)" : ""
        throw GuestModeError(
            .manifestMismatch,
            "the archive '\(path)' does not match its manifest: \(first)\(more); it is damaged or was altered, and nothing was changed"
        )
    }

    /// What `readHeader` found.
    private struct HeaderRead {
        var header: BackupHeader
        var version: Int
        var migrations: [ArchiveMigration]
        var userCount: Int
        var size: Int64
        var sha256: String
        var macs: HeaderMACs
    }

    /// Header bytes kept for the general reader (`decodeHeader`), which reads
    /// a header whole: for the messages of a header that is not well-formed,
    /// and to upgrade an older format with its steps as written.
    static let retainedHeaderLimit = 1 << 20

    /// Streams header.json: its users go to `listed` one by one and are
    /// never held together; everything else is small and parsed whole.
    private static func readHeader(
        _ reader: ArchiveReader, path: String, chain: ArchiveMigrationChain, keys: BackupKeys,
        listed: (any ListedUserSink)?
    ) throws -> HeaderRead {
        final class Heard {
            var sample: [String] = []
            var count = 0
            var badText: (index: Int, user: String)?
            let listed: (any ListedUserSink)?
            init(_ listed: (any ListedUserSink)?) { self.listed = listed }

            func add(_ user: String) throws {
                // A NUL would be cut by the store's C strings: "new\u{0}victim" reported as one user, stored as another.
                if badText == nil, !TextRule.isAcceptable(user) { badText = (count, user) }
                if sample.count < ArchiveWalk.userSampleLimit { sample.append(user) }
                count += 1
                try listed?.add(user)
            }
        }
        let heard = Heard(listed)
        var stream = HeaderStream(onUser: heard.add)
        var hasher = StreamingSHA256()
        var macs = HeaderMACs(key: keys.deployment, declaredSize: reader.declaredSize)
        var retained: [UInt8]? = []
        var failure: HeaderStream.Failure?
        let size = try reader.readData { chunk in
            hasher.update(chunk)
            macs.update(chunk)
            if retained != nil, retained!.count + chunk.count <= retainedHeaderLimit {
                retained!.append(contentsOf: chunk)
            } else {
                retained = nil
            }
            guard failure == nil else { return }
            do {
                try stream.feed(chunk)
            } catch let error as HeaderStream.Failure {
                failure = error
            }
        }
        macs.finish(size: size)
        var members: [String: JSONValue]?
        if failure == nil {
            do {
                members = try stream.finish()
            } catch let error as HeaderStream.Failure {
                failure = error
            }
        }
        let streamed = members.flatMap { streamedHeader(from: $0, users: heard.sample) }
        if let retained, streamed == nil || streamed?.1 != chain.current {
            // Small enough to read whole: the general reader, its upgrades and its messages.
            try listed?.restart()
            let (header, version, migrations) = try decodeHeader(retained, path: path, chain: chain)
            for user in header.users { try listed?.add(user) }
            var sampled = header
            sampled.users = Array(header.users.prefix(userSampleLimit))
            return HeaderRead(
                header: sampled, version: version, migrations: migrations, userCount: header.users.count,
                size: size, sha256: hasher.finalizeHex(), macs: macs)
        }
        guard let members, let streamed else {
            if let members, !(members["format"] == .string(BackupFormat.formatName)) {
                throw GuestModeError(
                    .notABackup, "the archive '\(path)' has a header.json that is not a guestmode backup header")
            }
            throw GuestModeError(
                .badHeader,
                "the archive '\(path)' has a malformed header.json (\(failure?.description ?? "a member is missing or of the wrong type")); nothing was changed"
            )
        }
        var (header, version) = streamed
        let migrations = try chain.steps(from: version, archive: path)
        if !migrations.isEmpty {
            // Too big to read whole: the steps see the header without its user list, which they never change.
            var object = members.mapValues(\.foundationObject)
            object["users"] = [String]()
            header = try upgradedHeader(object, through: migrations, path: path)
            header.users = heard.sample
        }
        if let bad = heard.badText {
            try TextRule.check(
                bad.user, what: "users[\(bad.index)] in \(BackupFormat.headerName) of the archive '\(path)'")
        }
        try checkFields(of: header, path: path)
        return HeaderRead(
            header: header, version: version, migrations: migrations, userCount: heard.count, size: size,
            sha256: hasher.finalizeHex(), macs: macs)
    }

    /// A header of an older format taken through `migrations`, then decoded as the current one.
    private static func upgradedHeader(
        _ object: [String: Any], through migrations: [ArchiveMigration], path: String
    ) throws -> BackupHeader {
        var object = object
        for step in migrations {
            try step.upgradeHeader(&object)
            object["format_version"] = step.from + 1
        }
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return try BackupFormat.decoder().decode(BackupHeader.self, from: data)
        } catch {
            throw GuestModeError(
                .badHeader, "the archive '\(path)' has a malformed header.json (\(describe(error)))")
        }
    }

    /// The general reader: the whole header through `JSONSerialization`, so
    /// older formats can be upgraded step by step.
    private static func decodeHeader(
        _ bytes: [UInt8], path: String, chain: ArchiveMigrationChain
    ) throws -> (BackupHeader, Int, [ArchiveMigration]) {
        _ = try TextRule.decode(bytes, what: "\(BackupFormat.headerName) of the archive '\(path)'")
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
            object["format"] as? String == BackupFormat.formatName,
            let version = object["format_version"] as? Int
        else {
            throw GuestModeError(
                .notABackup, "the archive '\(path)' has a header.json that is not a guestmode backup header")
        }
        let migrations = try chain.steps(from: version, archive: path)
        let header = try upgradedHeader(object, through: migrations, path: path)
        for (index, user) in header.users.enumerated() where !TextRule.isAcceptable(user) {
            try TextRule.check(user, what: "users[\(index)] in \(BackupFormat.headerName) of the archive '\(path)'")
        }
        try checkFields(of: header, path: path)
        return (header, version, migrations)
    }

    /// A header from the streamed members, `users` standing for the list;
    /// nil when a member is missing or of the wrong type (the general reader
    /// words that).
    private static func streamedHeader(from members: [String: JSONValue], users: [String]) -> (BackupHeader, Int)? {
        guard case .string(let format)? = members["format"], format == BackupFormat.formatName,
            case .number(let versionText)? = members["format_version"], let version = Int(versionText),
            case .string(let toolVersion)? = members["tool_version"],
            case .object(let profile)? = members["profile"],
            case .string(let profileName)? = profile["name"],
            case .number(let profileVersionText)? = profile["version"], let profileVersion = Int(profileVersionText),
            case .array? = members["users"],
            case .string(let created)? = members["created"]
        else { return nil }
        func optionalString(_ name: String) -> String?? {
            switch members[name] {
            case nil, .null?: return .some(nil)
            case .string(let value)?: return .some(value)
            default: return nil
            }
        }
        guard let guestOwner = optionalString("guest_owner"), let signingKeyId = optionalString("signing_key_id")
        else { return nil }
        return (
            BackupHeader(
                format: format, formatVersion: version, toolVersion: toolVersion,
                profile: BackupHeader.ProfileReference(name: profileName, version: profileVersion), users: users,
                guestOwner: guestOwner, created: created, signingKeyId: signingKeyId),
            version
        )
    }

    private static func checkFields(of header: BackupHeader, path: String) throws {
        let fields: [(String, String?)] = [
            ("guest_owner", header.guestOwner), ("profile.name", header.profile.name),
            ("tool_version", header.toolVersion), ("created", header.created),
            ("signing_key_id", header.signingKeyId),
        ]
        for case (let field, let value?) in fields {
            try TextRule.check(value, what: "\(field) in \(BackupFormat.headerName) of the archive '\(path)'")
        }
    }

    private static func decodeManifest(_ bytes: [UInt8], path: String) throws -> BackupManifest {
        do {
            return try BackupFormat.decoder().decode(BackupManifest.self, from: Data(bytes))
        } catch {
            throw GuestModeError(
                .badManifest, "the archive '\(path)' has a malformed manifest.json (\(describe(error)))")
        }
    }

    private static func decodeRow(
        _ line: UnsafeBufferPointer<UInt8>, like previousColumns: [String], location: RowLocation, path: String
    ) throws -> BackupRow {
        if let row = RowDecoder.decode(line, like: previousColumns) { return row }
        _ = try TextRule.decode(line, what: "the row at \(location.description) of the archive '\(path)'")
        throw GuestModeError(
            .badRow,
            "the archive '\(path)' has a malformed row at \(location.description): expected a JSON object of column values"
        )
    }

    private static func describe(_ error: Error) -> String {
        if case DecodingError.keyNotFound(let key, _) = error { return "missing '\(key.stringValue)'" }
        if case DecodingError.typeMismatch(_, let context) = error {
            return "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        }
        return "not valid JSON"
    }
}

/// Hears the users of header.json one by one as the header streams in.
protocol ListedUserSink: AnyObject {
    func add(_ user: String) throws
    /// Forget the users heard so far: the list is heard again from its start.
    func restart() throws
}

extension JSONValue {
    /// The value as `JSONSerialization` gives it, for the upgrade steps.
    fileprivate var foundationObject: Any {
        switch self {
        case .null: NSNull()
        case .bool(let value): value
        case .number(let text):
            if let integer = Int(text) { integer } else { Double(text) ?? 0 }
        case .string(let value): value
        case .array(let values): values.map(\.foundationObject)
        case .object(let members): members.mapValues(\.foundationObject)
        }
    }
}

/// Cuts a stream of NDJSON chunks into lines without holding more than one line.
struct LineSplitter {
    let entry: String
    private(set) var lines = 0
    private var partial: [UInt8] = []

    init(entry: String) { self.entry = entry }

    /// Hands over every complete line in `chunk` (without its newline);
    /// lines found with `memchr` and passed in place unless they span chunks.
    mutating func feed(
        _ chunk: UnsafeRawBufferPointer, _ line: (UnsafeBufferPointer<UInt8>, RowLocation) throws -> Void
    ) throws {
        guard let base = chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), chunk.count > 0 else { return }
        var start = 0
        while start < chunk.count,
            let found = memchr(base + start, Int32(UInt8(ascii: "\n")), chunk.count - start)
        {
            let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            lines += 1
            let location = RowLocation(entry: entry, line: lines)
            if partial.isEmpty {
                try line(UnsafeBufferPointer(start: base + start, count: end - start), location)
            } else {
                partial.append(contentsOf: UnsafeBufferPointer(start: base + start, count: end - start))
                try partial.withUnsafeBufferPointer { try line($0, location) }
                partial.removeAll(keepingCapacity: true)
            }
            start = end + 1
        }
        if start < chunk.count {
            partial.append(contentsOf: UnsafeBufferPointer(start: base + start, count: chunk.count - start))
        }
    }

    /// Every row ends with a newline, so leftover bytes mean a cut-off entry.
    func finish() throws {
        guard partial.isEmpty else {
            throw GuestModeError(
                .badRow, "\(entry) ends in the middle of a row (line \(lines + 1)); the archive is damaged")
        }
    }
}

/// Checking and describing archives without a store.
package enum BackupArchive {
    package struct Verification: Codable, Sendable {
        package var archive: String
        package var ok: Bool
        package var full: Bool
        package var formatVersion: Int?
        package var profile: String?
        package var users: Int?
        package var entries: Int
        package var bytes: Int64
        package var tables: [String: Int]
        /// Who signed it: this deployment, another, or nobody (nil when unreadable).
        package var signature: SignatureStatus?
        /// The id of the key that signed it, when signed.
        package var signatureKeyId: String?
        package var encrypted: Bool
        package var errors: [String]
    }

    package struct Inspection: Codable, Sendable {
        package var archive: String
        /// The header, its `users` holding the first `ArchiveWalk.userSampleLimit` of `userCount`.
        package var header: BackupHeader
        /// How many users header.json lists.
        package var userCount: Int
        package var manifest: BackupManifest
        package var signature: SignatureStatus
        package var signatureKeyId: String?
        package var encrypted: Bool
    }

    /// A structural check (names, order, sizes against the manifest) or, with
    /// `full`, a hash of every entry and a parse of every row. Content
    /// problems are reported, not thrown; a missing file is thrown.
    package static func verify(
        path: String, full: Bool, limits: ArchiveLimits = .standard, keys: BackupKeys = .none
    ) throws -> Verification {
        var report = Verification(
            archive: path, ok: false, full: full, formatVersion: nil, profile: nil, users: nil, entries: 0, bytes: 0,
            tables: [:], signature: nil, signatureKeyId: nil, encrypted: false, errors: [])
        do {
            let walk = try ArchiveWalk.read(path: path, depth: full ? .full : .structure, limits: limits, keys: keys)
            report.encrypted = walk.encrypted
            report.signatureKeyId = walk.signature?.keyId
            report.formatVersion = walk.writtenVersion
            report.profile = "\(walk.header.profile.name) v\(walk.header.profile.version)"
            report.users = walk.userCount
            report.entries = walk.order.count
            report.bytes = walk.observed.values.reduce(0) { $0 + $1.size }
            report.tables = walk.manifest.tables
            report.errors = walk.problems
            do {
                report.signature = try walk.signatureStatus(key: keys.deployment, path: path)
            } catch let error as GuestModeError where error.kind == .badData {
                report.errors.append(error.message)
            }
        } catch let error as GuestModeError where error.kind == .badData {
            report.errors = [error.message]
        }
        report.ok = report.errors.isEmpty
        return report
    }

    /// The cheap structural check (header, entry names, order, sizes against
    /// the manifest, limits, signature) that throws the first problem. Import
    /// calls it before opening the store, so an archive that is not a backup
    /// or is cut short never reaches the store; the one full pass (hashes,
    /// rows) runs inside the import transaction, which rolls back on any
    /// mismatch.
    /// Returns who signed the archive.
    @discardableResult
    package static func requireIntact(
        path: String, limits: ArchiveLimits = .standard, keys: BackupKeys = .none
    ) throws -> SignatureStatus {
        let walk = try ArchiveWalk.read(path: path, depth: .structure, limits: limits, keys: keys)
        try walk.requireMatchingManifest(path: path)
        return try walk.signatureStatus(key: keys.deployment, path: path)
    }

    /// Whether header.json lists `user`, the list streamed past, never held.
    package static func lists(
        _ user: String, path: String, limits: ArchiveLimits = .standard, keys: BackupKeys = .none
    ) throws -> Bool {
        final class Finder: ListedUserSink {
            let wanted: String
            var found = false
            init(_ wanted: String) { self.wanted = wanted }
            func add(_ user: String) throws { if user.utf8.elementsEqual(wanted.utf8) { found = true } }
            func restart() throws { found = false }
        }
        let finder = Finder(user)
        _ = try ArchiveWalk.read(path: path, depth: .structure, limits: limits, keys: keys, listed: finder)
        return finder.found
    }

    package static func inspect(
        path: String, limits: ArchiveLimits = .standard, keys: BackupKeys = .none
    ) throws -> Inspection {
        let walk = try ArchiveWalk.read(path: path, depth: .structure, limits: limits, keys: keys)
        return Inspection(
            archive: path, header: walk.header, userCount: walk.userCount, manifest: walk.manifest,
            signature: try walk.signatureStatus(key: keys.deployment, path: path),
            signatureKeyId: walk.signature?.keyId,
            encrypted: walk.encrypted)
    }
}
