import CLibPQ
import Foundation
import GuestModeKit
import Synchronization

/// One libpq connection. Every call into libpq is in this file: results and
/// errors become Swift values here, and every handle is freed with `defer`.
/// Queries use the text protocol with parameters ($1, $2, …), never string
/// interpolation of values.
///
/// A libpq connection must not be used by two threads at once. The pool
/// (`PostgresConnectionPool`) lends each connection to one transaction at a
/// time; the mutex around the handle makes that a property of the type
/// rather than a promise, so the connection is `Sendable` without `@unchecked`.
/// It is never contended, and costs nothing next to a round trip to the server.
final class PostgresConnection: Sendable {
    /// libpq's functions (`LibPQ`).
    private let pq: guestmode_libpq
    /// The libpq handle, and whether a deadline abandoned it halfway through a statement.
    private struct State {
        var handle: OpaquePointer
        var abandoned = false
        /// A read-only transaction's COMMIT was sent and its answer not read
        /// (`commitUnawaited`): the connection's next call reads it first.
        var commitUnread = false
    }

    private let state: Mutex<State>
    /// The statements with parameters this connection has prepared, by their text, and the names the
    /// server knows them by: each is parsed and planned once per connection, not on every run.
    private let prepared = Mutex<[String: String]>([:])
    /// At most this many are kept, whatever text a caller sends: the rest run unprepared.
    private static let preparedLimit = 256
    /// Statements whose outcome is not read yet: a COPY sent whole without
    /// waiting (`copy(_:rows:waiting:appendRow:)`), or `sendWithoutWaiting`'s.
    /// Any later call reads that outcome first.
    private let unsettled = Mutex<String?>(nil)
    /// The `BEGIN …` of the transaction just opened (`begin(_:)`), not sent
    /// yet: it goes out with the transaction's first statement, in one round trip.
    private let unsentBegin = Mutex<String?>(nil)
    /// How many times this connection has sent what it queued to wait for the answer: its round trips.
    let roundTrips = Atomic<Int>(0)
    /// How the store is named in messages: the URI without its password.
    let location: String
    /// How long one statement may go unanswered once sent; nil waits as long as it takes.
    let statementTimeout: Duration?

    /// Connects with a libpq connection string or URI; "" means libpq's
    /// defaults (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ~/.pgpass,
    /// service files), as psql reads them. Connecting, and the session's
    /// settings, give up at `deadline` (nil: never): a server that accepts the
    /// connection and then says nothing (stopped with SIGSTOP, or behind a
    /// dead link) cannot hold the caller longer.
    init(
        connecting conninfo: String, location: String, deadline: ContinuousClock.Instant?,
        statementTimeout: Duration?
    ) throws {
        self.location = location
        self.statementTimeout = statementTimeout
        let pq = try LibPQ.table()
        self.pq = pq
        // The URI (or "") expands as PQconnectdb would read it; guestmode names itself to the server
        // (pg_stat_activity's application_name) unless the URI or PGAPPNAME names the session already.
        let keywords = ["dbname", "fallback_application_name"]
        let values = [conninfo, "guestmode"]
        let started = keywords.withCStringArray { keywords in
            values.withCStringArray { values in pq.PQconnectStartParams(keywords, values, 1) }
        }
        guard let handle = started else {
            throw GuestModeError(
                .storeUnreachable, "cannot reach the PostgreSQL store \(location): out of memory")
        }
        var polling = PGRES_POLLING_WRITING
        while pq.PQstatus(handle) != CONNECTION_BAD && polling != PGRES_POLLING_OK && polling != PGRES_POLLING_FAILED {
            let events = polling == PGRES_POLLING_READING ? Int16(POLLIN) : Int16(POLLOUT)
            switch PostgresConnection.wait(on: pq.PQsocket(handle), for: events, until: deadline) {
            case .ready: polling = pq.PQconnectPoll(handle)
            case .timedOut:
                pq.PQfinish(handle)
                throw GuestModeError(
                    .storeUnreachable,
                    "cannot reach the PostgreSQL store \(location): the server did not answer in time; nothing was changed"
                )
            case .failed: polling = PGRES_POLLING_FAILED
            }
        }
        guard pq.PQstatus(handle) == CONNECTION_OK else {
            let message = PostgresConnection.redacted(
                PostgresConnection.message(pq.PQerrorMessage(handle)), secret: PostgresConnection.password(in: conninfo)
            )
            pq.PQfinish(handle)
            throw PostgresConnection.connectionFailure(message, location: location)
        }
        // libpq prints the server's notices to standard error by default
        // ("WARNING: terminating connection due to immediate shutdown…"):
        // guestmode's standard error carries its own one-line messages only.
        _ = pq.PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Sending never blocks: every wait for the server is a poll() with a deadline, here.
        _ = pq.PQsetnonblocking(handle, 1)
        state = Mutex(State(handle: handle))
        // Times are compared as text in UTC; no server setting may change them.
        do {
            try execute("SET TIME ZONE 'UTC'", until: deadline)
            try execute("SET client_min_messages TO WARNING", until: deadline)
        } catch let failure as PostgresFailure {
            throw failure.asGuestModeError
        }
    }

    deinit { state.withLock { pq.PQfinish($0.handle) } }

    /// Whether the connection can serve another transaction: still connected,
    /// not abandoned by a deadline, and not left inside a transaction by one
    /// that could not roll back.
    var isReusable: Bool {
        state.withLock {
            guard !$0.abandoned && pq.PQstatus($0.handle) == CONNECTION_OK else { return false }
            let transaction = pq.PQtransactionStatus($0.handle)
            // An unread COMMIT keeps libpq's status at "active" until its answer is read.
            return transaction == PQTRANS_IDLE || ($0.commitUnread && transaction == PQTRANS_ACTIVE)
        }
    }

    /// Runs `body` with the handle, unless a deadline abandoned the connection:
    /// its statement may still be running on the server, so nothing more is sent on it.
    private func withHandle<T: Sendable>(_ body: (OpaquePointer) throws -> T) throws -> T {
        try state.withLock { state in
            guard !state.abandoned else { throw abandonedFailure }
            do {
                if state.commitUnread {
                    state.commitUnread = false
                    try readUnawaitedCommit(on: state.handle)
                }
                return try body(state.handle)
            } catch let failure as PostgresFailure where failure.missedDeadline == .unanswered {
                state.abandoned = true
                throw failure
            } catch let broken as BrokenStream {
                state.abandoned = true
                throw broken.failure
            }
        }
    }

    /// A failure while a COPY's rows were flowing (`copyOut`): the rest of the
    /// stream is unread, so nothing more can be sent on the connection.
    private struct BrokenStream: Error {
        let failure: any Error
    }

    private var abandonedFailure: PostgresFailure {
        PostgresFailure(
            sqlState: nil, message: "the connection was abandoned when the server did not answer in time",
            location: location)
    }

    /// Runs one statement with text parameters and returns its rows. It may
    /// go unanswered for `statementTimeout`, after which the connection is abandoned.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue?] = []) throws -> PostgresRows {
        try execute(sql, parameters, until: statementTimeout.map { ContinuousClock.now + $0 })
    }

    /// The first statement of a transaction: it also waits no longer than the
    /// caller's `StoreDeadline`, and is not sent at all once that has passed.
    @discardableResult
    func executeFirst(_ sql: String) throws -> PostgresRows {
        try execute(sql, [], until: StoreDeadline.bound(statementTimeout))
    }

    /// Opens a transaction with `statement` (`BEGIN …`), sent now or, with
    /// `withFirstStatement`, with the transaction's first statement that has
    /// parameters: a read of one row then costs one round trip, not two. Either
    /// waits as `executeFirst` does (the pair as a whole), and a failure before
    /// the transaction began is marked `isBeforeTransaction`.
    func begin(_ statement: String, withFirstStatement: Bool) throws {
        unsentBegin.withLock { $0 = statement }
        if !withFirstStatement { try withHandle { try sendUnsentBegin(on: $0) } }
    }

    /// Ends a read-only transaction without waiting for the server's answer:
    /// COMMIT is sent, and read by the connection's next call, by when it has
    /// long arrived. Nothing a read-only transaction did depends on it, and
    /// the server ends the transaction (and lets its snapshot go) as soon as
    /// it reads the COMMIT, so a connection that then sits idle holds nothing.
    func commitUnawaited() throws {
        try withHandle { handle in
            try settle(on: handle)
            try send("COMMIT", [], on: handle, until: nextDeadline, awaited: false)
        }
        state.withLock { $0.commitUnread = true }
    }

    /// Reads the answer to a COMMIT sent unawaited. Its failure means the
    /// connection broke after the last transaction: nothing of the next is
    /// done yet, so it is marked `isBeforeTransaction`.
    private func readUnawaitedCommit(on handle: OpaquePointer) throws {
        do {
            // It has long arrived: read without asking the socket first (`nextResult` would poll it).
            guard pq.PQconsumeInput(handle) == 1 else {
                throw failure(
                    sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: "COMMIT")
            }
            _ = try answer(of: "COMMIT", on: handle, until: nextDeadline)
        } catch var failure as PostgresFailure {
            failure.isBeforeTransaction = true
            throw failure
        }
    }

    /// Whether the transaction opened by `begin(_:)` never sent its BEGIN
    /// (it ran no statement), forgetting it: then there is nothing to commit or roll back.
    func forgetUnsentBegin() -> Bool {
        unsentBegin.withLock { $0.take() } != nil
    }

    /// Runs statements that do not read each other's results in one round
    /// trip (libpq's pipeline mode), each with parameters, and returns their
    /// rows in order. The first failure is thrown: the server skips the
    /// statements after it, and the transaction they are in is aborted.
    ///
    /// ```swift
    /// let answers = try connection.execute([
    ///     ("SELECT state FROM users WHERE id = $1", [PostgresValue(id)]),
    ///     ("SELECT action, total FROM counters WHERE user_id = $1", [PostgresValue(id)]),
    /// ])
    /// let (user, counters) = (answers[0].first, answers[1])
    /// ```
    func execute(_ statements: [(sql: String, parameters: [PostgresValue?])]) throws -> [PostgresRows] {
        guard !statements.isEmpty else { return [] }
        return try withHandle { handle in
            try settle(on: handle)
            if statements.contains(where: \.parameters.isEmpty) {
                try sendUnsentBegin(on: handle)
                return try statements.map { try execute($0.sql, $0.parameters, until: nextDeadline, on: handle) }
            }
            return try pipeline(statements, after: unsentBegin.withLock { $0.take() }, on: handle)
        }
    }

    @discardableResult
    private func execute(
        _ sql: String, _ parameters: [PostgresValue?] = [], until deadline: ContinuousClock.Instant?
    ) throws -> PostgresRows {
        try withHandle { handle in
            try settle(on: handle)
            // Without parameters the statement may be several (simple protocol), which a pipeline cannot carry.
            if !parameters.isEmpty, let begin = unsentBegin.withLock({ $0.take() }) {
                return try pipeline([(sql, parameters)], after: begin, on: handle)[0]
            }
            try sendUnsentBegin(on: handle)
            return try execute(sql, parameters, until: deadline, on: handle)
        }
    }

    private func execute(
        _ sql: String, _ parameters: [PostgresValue?], until deadline: ContinuousClock.Instant?,
        on handle: OpaquePointer
    ) throws -> PostgresRows {
        try send(sql, parameters, on: handle, until: deadline)
        return try answer(of: sql, on: handle, until: deadline)
    }

    /// The answer to `sql`, sent: as PQexec's, the first failure, else the
    /// last result (several statements answer several).
    private func answer(
        of sql: String, on handle: OpaquePointer, until deadline: ContinuousClock.Instant?
    ) throws -> PostgresRows {
        var kept: OpaquePointer?
        defer { if let kept { pq.PQclear(kept) } }
        while let result = try nextResult(of: handle, sql: sql, until: deadline) {
            let status = pq.PQresultStatus(result)
            if let previous = kept, pq.PQresultStatus(previous) == PGRES_FATAL_ERROR {
                pq.PQclear(result)
                continue
            }
            if let previous = kept { pq.PQclear(previous) }
            kept = result
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { break }
        }
        guard let result = kept else {
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
        return try rows(of: result, sql: sql)
    }

    /// The rows of a statement's result, or its failure; `result` stays the caller's to free.
    private func rows(of result: OpaquePointer, sql: String) throws(PostgresFailure) -> PostgresRows {
        switch pq.PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(result, location: location, pq: pq)
        default:
            let state = pq.PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PostgresConnection.message(pq.PQresultErrorMessage(result))
            var failed = failure(sqlState: state, message: message, sql: sql)
            // The server's own function name, whatever language its messages are in.
            failed.isStalePlan =
                state == "0A000"
                && pq.PQresultErrorField(result, Int32(UInt8(ascii: "R"))).map { String(cString: $0) }
                    == "RevalidateCachedQuery"
            throw failed
        }
    }

    /// Sends the transaction's BEGIN on its own, if it is still unsent, before
    /// a statement that cannot go in a pipeline with it.
    private func sendUnsentBegin(on handle: OpaquePointer) throws {
        guard let begin = unsentBegin.withLock({ $0.take() }) else { return }
        do {
            _ = try execute(begin, [], until: StoreDeadline.bound(statementTimeout), on: handle)
        } catch var failure as PostgresFailure {
            failure.isBeforeTransaction = true
            throw failure
        }
    }

    /// `statements` (each with parameters) sent together in pipeline mode,
    /// after `begin` when the transaction's BEGIN is still unsent, and
    /// answered in one round trip. With `begin`, bounded as `executeFirst` is:
    /// the caller's `StoreDeadline` bounds the wait for the transaction to begin.
    private func pipeline(
        _ statements: [(sql: String, parameters: [PostgresValue?])], after begin: String?, on handle: OpaquePointer
    ) throws -> [PostgresRows] {
        let deadline = begin == nil ? nextDeadline : StoreDeadline.bound(statementTimeout)
        let first = begin ?? statements.first?.sql ?? ""
        var begun = begin == nil
        do {
            if begin != nil, let deadline, deadline <= ContinuousClock.now {
                var missed = failure(sqlState: nil, message: "no store connection answered in time", sql: first)
                missed.missedDeadline = .beforeSending
                throw missed
            }
            let texts = statements.map { $0.parameters.map { $0?.text } }
            // Prepared first when new: outside the transaction, which changes nothing about what is prepared.
            let names = try zip(statements, texts).map { statement, texts in
                try preparedName(of: statement.sql, parameters: texts.count, on: handle, until: deadline)
            }
            guard pq.PQenterPipelineMode(handle) == 1 else {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: first)
            }
            var queued = begin.map { pq.PQsendQueryParams(handle, $0, 0, nil, nil, nil, nil, 0) == 1 } ?? true
            for (index, statement) in statements.enumerated() where queued {
                queued =
                    withCStrings(texts[index]) { pointers in
                        if let name = names[index] {
                            return pq.PQsendQueryPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
                        }
                        return pq.PQsendQueryParams(
                            handle, statement.sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
                    } == 1
            }
            guard queued, pq.PQpipelineSync(handle) == 1 else {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: first)
            }
            try flush(handle, sql: first, until: deadline)
            var beginAnswer: Result<PostgresRows, PostgresFailure>?
            if let begin {
                beginAnswer = try pipelineAnswer(of: handle, sql: begin, until: deadline)
                if case .success? = beginAnswer { begun = true }
            }
            // Nil for each statement the server skipped after a failure.
            let answers = try statements.map { try pipelineAnswer(of: handle, sql: $0.sql, until: deadline) }
            guard let sync = try nextResult(of: handle, sql: first, until: deadline) else {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: first)
            }
            let synced = pq.PQresultStatus(sync) == PGRES_PIPELINE_SYNC
            pq.PQclear(sync)
            guard synced, pq.PQexitPipelineMode(handle) == 1 else {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: first)
            }
            if let beginAnswer { _ = try beginAnswer.get() }
            return try zip(answers, statements).map { answer, statement in
                guard let answer else {
                    throw failure(sqlState: nil, message: "the server skipped the statement", sql: statement.sql)
                }
                return try answer.get()
            }
        } catch var failure as PostgresFailure {
            failure.isBeforeTransaction = !begun
            throw failure
        }
    }

    /// One statement's answer in a pipeline, read up to the null that ends
    /// it: its rows or its failure; nil when the server skipped it, as it
    /// does every statement after a failure up to the pipeline's sync.
    private func pipelineAnswer(
        of handle: OpaquePointer, sql: String, until deadline: ContinuousClock.Instant?
    ) throws -> Result<PostgresRows, PostgresFailure>? {
        guard let first = try nextResult(of: handle, sql: sql, until: deadline) else {
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
        let answer: Result<PostgresRows, PostgresFailure>? =
            pq.PQresultStatus(first) == PGRES_PIPELINE_ABORTED
            ? nil : Result { () throws(PostgresFailure) in try rows(of: first, sql: sql) }
        pq.PQclear(first)
        while let rest = try nextResult(of: handle, sql: sql, until: deadline) { pq.PQclear(rest) }
        return answer
    }

    /// Forgets every statement this connection prepared, on the server too:
    /// after another process changed the schema under them (a migration
    /// giving a column another collation or type), the server refuses to run
    /// them again (`isStalePlan`), and they are prepared anew from their text.
    /// Run outside a transaction, or in one that has not failed.
    func forgetPreparedStatements() throws {
        try execute("DEALLOCATE ALL")
        prepared.withLock { $0.removeAll() }
    }

    /// Queues the statement and pushes it to the server: not sent at all once
    /// `deadline` has passed (the connection is untouched and still good).
    private func send(
        _ sql: String, _ parameters: [PostgresValue?], on handle: OpaquePointer,
        until deadline: ContinuousClock.Instant?, awaited: Bool = true
    ) throws {
        if let deadline, deadline <= ContinuousClock.now {
            var missed = failure(sqlState: nil, message: "no store connection answered in time", sql: sql)
            missed.missedDeadline = .beforeSending
            throw missed
        }
        let texts = parameters.map { $0?.text }
        // Without parameters the simple protocol runs several statements at once (schema migrations).
        let name = texts.isEmpty ? nil : try preparedName(of: sql, parameters: texts.count, on: handle, until: deadline)
        let queued =
            texts.isEmpty
            ? pq.PQsendQuery(handle, sql)
            : withCStrings(texts) { pointers in
                if let name {
                    return pq.PQsendQueryPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
                }
                return pq.PQsendQueryParams(handle, sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
            }
        guard queued == 1 else {
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
        try flush(handle, sql: sql, until: deadline, awaited: awaited)
    }

    /// The name `sql` is prepared under on this connection, preparing it
    /// first (one round trip, once); nil once the connection keeps as many as
    /// it may. A statement the server cannot prepare fails here as it would
    /// have run (a transaction it was part of is then aborted, as it would be).
    private func preparedName(
        of sql: String, parameters: Int, on handle: OpaquePointer, until deadline: ContinuousClock.Instant?
    ) throws -> String? {
        let known = prepared.withLock { prepared -> (name: String?, full: Bool) in
            (prepared[sql], prepared.count >= Self.preparedLimit)
        }
        if let name = known.name { return name }
        guard !known.full else { return nil }
        if let deadline, deadline <= ContinuousClock.now {
            var missed = failure(sqlState: nil, message: "no store connection answered in time", sql: sql)
            missed.missedDeadline = .beforeSending
            throw missed
        }
        let name = "guestmode_\(prepared.withLock { $0.count })"
        guard pq.PQsendPrepare(handle, name, sql, Int32(parameters), nil) == 1 else {
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
        try flush(handle, sql: sql, until: deadline)
        var failed: PostgresFailure?
        while let result = try nextResult(of: handle, sql: sql, until: deadline) {
            defer { pq.PQclear(result) }
            if failed == nil, pq.PQresultStatus(result) != PGRES_COMMAND_OK {
                let state = pq.PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
                failed = failure(
                    sqlState: state, message: PostgresConnection.message(pq.PQresultErrorMessage(result)), sql: sql)
            }
        }
        if let failed { throw failed }
        prepared.withLock { $0[sql] = name }
        return name
    }

    /// Sends what libpq holds back, reading meanwhile as libpq asks (the server may be answering already).
    private func flush(
        _ handle: OpaquePointer, sql: String, until deadline: ContinuousClock.Instant?, awaited: Bool = true
    ) throws {
        if awaited { roundTrips.add(1, ordering: .relaxed) }
        while true {
            switch pq.PQflush(handle) {
            case 0: return
            case 1:
                try waitFor(handle, Int16(POLLIN) | Int16(POLLOUT), sql: sql, until: deadline)
                guard pq.PQconsumeInput(handle) == 1 else {
                    throw failure(
                        sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
                }
            default:
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
            }
        }
    }

    /// The next result of the statement sent, nil after the last, read without ever blocking past `deadline`.
    private func nextResult(
        of handle: OpaquePointer, sql: String, until deadline: ContinuousClock.Instant?
    ) throws -> OpaquePointer? {
        while pq.PQisBusy(handle) == 1 {
            try waitFor(handle, Int16(POLLIN), sql: sql, until: deadline)
            guard pq.PQconsumeInput(handle) == 1 else {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
            }
        }
        return pq.PQgetResult(handle)
    }

    /// Waits for the socket, or throws the deadline's failure: the statement
    /// went out and no answer came, so what it did is not known here.
    private func waitFor(
        _ handle: OpaquePointer, _ events: Int16, sql: String, until deadline: ContinuousClock.Instant?
    ) throws {
        switch PostgresConnection.wait(on: pq.PQsocket(handle), for: events, until: deadline) {
        case .ready: return
        case .timedOut:
            var missed = failure(sqlState: nil, message: "the server did not answer in time", sql: sql)
            missed.missedDeadline = .unanswered
            throw missed
        case .failed:
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
    }

    private enum Readiness { case ready, timedOut, failed }

    /// poll() on the connection's socket (`PQsocket`) until it is ready for `events` or `deadline` passes.
    private static func wait(
        on socket: Int32, for events: Int16, until deadline: ContinuousClock.Instant?
    ) -> Readiness {
        guard socket >= 0 else { return .failed }
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .timedOut }
                let (seconds, attoseconds) = left.components
                // Rounded up: a poll that wakes a hair early would spin.
                milliseconds = Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, 3_600_000))
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return .ready }
            if ready < 0 && errno != EINTR { return .failed }
        }
    }

    /// Sends `rows` through `COPY … FROM STDIN` (text format) in one round trip;
    /// each wait for the server is bounded by `statementTimeout`. `sql` may
    /// hold statements before and after the COPY (simple protocol: a failure
    /// skips the statements after it), which then cost no round trip of their own.
    /// Without `waiting`, it returns once every row is sent, and the server's
    /// answer is read by `settle` or by the next call on the connection,
    /// which throws the COPY's failure, if any: the caller prepares its next
    /// rows while the server writes these.
    func copy(_ sql: String, rows: [[PostgresValue?]], waiting: Bool = true) throws {
        try copy(sql, rows: rows, waiting: waiting) { row, buffer in
            for (index, value) in row.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: "\t")) }
                PostgresConnection.appendCopyText(value?.text, to: &buffer)
            }
        }
    }

    /// As `copy(_:rows:waiting:)`, each row written into the COPY text by
    /// `appendRow` (its cells, tab-separated, without the newline), so a
    /// caller that holds its rows in its own form does not convert them first.
    func copy<Row>(
        _ sql: String, rows: [Row], waiting: Bool = true, appendRow: (Row, inout [UInt8]) -> Void
    ) throws {
        try withHandle { handle in
            try settle(on: handle)
            try sendUnsentBegin(on: handle)
            try sendCopy(sql, rows: rows, on: handle, appendRow: appendRow)
            if waiting {
                try readCopyOutcome(of: handle, sql: sql)
            } else {
                unsettled.withLock { $0 = sql }
            }
        }
    }

    /// Sends `sql` (statements without parameters, run in turn, a failure
    /// skipping the rest) and returns at once: the server runs them while the
    /// caller works, and their outcome is read as a COPY's sent without
    /// waiting is, by `settle` or the next call on the connection.
    func sendWithoutWaiting(_ sql: String) throws {
        try withHandle { handle in
            try settle(on: handle)
            try sendUnsentBegin(on: handle)
            try send(sql, [], on: handle, until: nextDeadline)
            unsettled.withLock { $0 = sql }
        }
    }

    /// Reads the outcome of statements sent without waiting, if one is
    /// unread: throws their failure.
    func settle() throws {
        try withHandle { handle in try settle(on: handle) }
    }

    private func settle(on handle: OpaquePointer) throws {
        guard let sql = unsettled.withLock({ $0.take() }) else { return }
        try readCopyOutcome(of: handle, sql: sql)
    }

    private var nextDeadline: ContinuousClock.Instant? { statementTimeout.map { ContinuousClock.now + $0 } }

    /// Frees `start`, the first answer to a COPY: returns when the server
    /// began the copy (`status`); otherwise reads the statement's other
    /// results, so the connection is idle again, and throws its failure.
    private func requireCopyStarted(
        _ start: OpaquePointer?, as status: ExecStatusType, on handle: OpaquePointer, sql: String
    ) throws {
        guard let start else {
            throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
        }
        let started = pq.PQresultStatus(start) == status
        let startMessage = PostgresConnection.message(pq.PQresultErrorMessage(start))
        let startState = pq.PQresultErrorField(start, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        pq.PQclear(start)
        guard started else {
            while let rest = try nextResult(of: handle, sql: sql, until: nextDeadline) { pq.PQclear(rest) }
            throw failure(sqlState: startState, message: startMessage, sql: sql)
        }
    }

    private func sendCopy<Row>(
        _ sql: String, rows: [Row], on handle: OpaquePointer, appendRow: (Row, inout [UInt8]) -> Void
    ) throws {
        try send(sql, [], on: handle, until: nextDeadline)
        var first = try nextResult(of: handle, sql: sql, until: nextDeadline)
        // The statements before the COPY answer first (a query's rows are not read).
        while let done = first, [PGRES_COMMAND_OK, PGRES_TUPLES_OK].contains(pq.PQresultStatus(done)) {
            pq.PQclear(done)
            first = try nextResult(of: handle, sql: sql, until: nextDeadline)
        }
        try requireCopyStarted(first, as: PGRES_COPY_IN, on: handle, sql: sql)
        var buffer = [UInt8]()
        buffer.reserveCapacity(1 << 16)
        func flush() throws {
            guard !buffer.isEmpty else { return }
            while true {
                let sent = buffer.withUnsafeBufferPointer { bytes in
                    bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        pq.PQputCopyData(handle, $0, Int32(bytes.count))
                    }
                }
                if sent == 1 { break }
                if sent != 0 {
                    throw failure(
                        sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
                }
                try waitFor(handle, Int16(POLLOUT), sql: sql, until: nextDeadline)
            }
            buffer.removeAll(keepingCapacity: true)
        }
        // Each row lent where it lies: `for row in rows` copied it, a retain and a release a row.
        try rows.withUnsafeBufferPointer { rows in
            for index in rows.indices {
                appendRow(rows[index], &buffer)
                buffer.append(UInt8(ascii: "\n"))
                if buffer.count >= 1 << 16 { try flush() }
            }
        }
        try flush()
        while true {
            let ended = pq.PQputCopyEnd(handle, nil)
            if ended == 1 { break }
            if ended != 0 {
                throw failure(sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
            }
            try waitFor(handle, Int16(POLLOUT), sql: sql, until: nextDeadline)
        }
        try self.flush(handle, sql: sql, until: nextDeadline)
    }

    /// Runs `sql`, a `COPY … TO STDOUT` in text format, and calls `body` with
    /// each row as the server sends it: one line, its newline included, in
    /// libpq's memory and valid only during the call. Rows are read as they
    /// arrive, so the server goes on writing while the caller handles them,
    /// and a row is freed before the next is read: memory stays at one row
    /// and the socket's buffers. Each wait is bounded by `statementTimeout`.
    /// Once rows flow nothing else can be sent before the last is read, so
    /// when `body` throws, or the stream breaks off, the connection is
    /// abandoned: the pool closes it, and the server rolls its transaction back.
    ///
    /// ```swift
    /// try connection.copyOut("COPY (SELECT id FROM users ORDER BY id) TO STDOUT") { line in lines += 1 }
    /// ```
    func copyOut(_ sql: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        try withHandle { handle in
            try settle(on: handle)
            try sendUnsentBegin(on: handle)
            try send(sql, [], on: handle, until: nextDeadline)
            try requireCopyStarted(
                try nextResult(of: handle, sql: sql, until: nextDeadline), as: PGRES_COPY_OUT, on: handle, sql: sql)
            do {
                var row: UnsafeMutablePointer<CChar>?
                while true {
                    let length = pq.PQgetCopyData(handle, &row, 1)
                    if length > 0, let line = row {
                        row = nil
                        defer { pq.PQfreemem(line) }
                        try line.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                            try body(UnsafeBufferPointer(start: $0, count: Int(length)))
                        }
                    } else if length == 0 {
                        // No whole row yet: wait for more of the stream.
                        try waitFor(handle, Int16(POLLIN), sql: sql, until: nextDeadline)
                        guard pq.PQconsumeInput(handle) == 1 else {
                            throw failure(
                                sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
                        }
                    } else if length == -1 {
                        break
                    } else {
                        throw failure(
                            sqlState: nil, message: PostgresConnection.message(pq.PQerrorMessage(handle)), sql: sql)
                    }
                }
            } catch {
                throw BrokenStream(failure: error)
            }
            // The COPY's own outcome: a server error that ended the stream (a cancelled or terminated
            // backend) is thrown here, and the connection is idle again.
            try readCopyOutcome(of: handle, sql: sql)
        }
    }

    /// The results of a COPY whose rows are all sent, up to the last: throws the first failure.
    private func readCopyOutcome(of handle: OpaquePointer, sql: String) throws {
        var problem: (String?, String)?
        while let result = try nextResult(of: handle, sql: sql, until: nextDeadline) {
            defer { pq.PQclear(result) }
            if pq.PQresultStatus(result) != PGRES_COMMAND_OK, problem == nil {
                problem = (
                    pq.PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) },
                    PostgresConnection.message(pq.PQresultErrorMessage(result))
                )
            }
        }
        if let problem { throw failure(sqlState: problem.0, message: problem.1, sql: sql) }
    }

    /// COPY text format: backslash, tab, newline and carriage return escaped; NULL as \N.
    static func appendCopyText(_ text: String?, to buffer: inout [UInt8]) {
        guard let text else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        // The bytes between two that need escaping go in as one run, not byte by byte.
        text.withUTF8Bytes { bytes in
            // Nearly every text has nothing to escape (a backslash, or a control character as tab, newline
            // and carriage return are), and is found so eight bytes at a time.
            guard ByteWord.mayContain(controlOr: UInt8(ascii: "\\"), in: bytes) else {
                buffer.append(contentsOf: bytes)
                return
            }
            var start = 0
            for (index, byte) in bytes.enumerated() {
                let escaped: UInt8
                switch byte {
                case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
                case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
                case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
                default: continue
                }
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(escaped)
                start = index + 1
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
    }

    /// An integer in COPY text: its decimal digits, written without a string.
    static func appendCopyInteger(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var divisor: UInt64 = 1
        // Ten times the divisor is at most the magnitude here, so it cannot overflow.
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            buffer.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        }
    }

    private func failure(sqlState: String?, message: String, sql: String) -> PostgresFailure {
        PostgresFailure(sqlState: sqlState, message: message, location: location)
    }

    /// libpq's messages span lines ("server closed the connection
    /// unexpectedly\n\tThis probably means…"); guestmode's are one line.
    static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return oneLine(String(cString: text))
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    private static func connectionFailure(_ message: String, location: String) -> GuestModeError {
        if message.contains("password authentication failed") || message.contains("no password supplied")
            || message.contains("does not exist")
        {
            return GuestModeError(
                .cannotOpenStore,
                "cannot open the PostgreSQL store \(location): \(redacted(message))")
        }
        return GuestModeError(
            .storeUnreachable,
            "cannot reach the PostgreSQL store \(location): \(redacted(message)); nothing was changed")
    }

    /// libpq's messages can quote the connection string; a password never leaves this file.
    /// Covers the three ways libpq takes one: a URI's user information
    /// (`postgres://user:secret@host`, up to the last `@` before the path),
    /// a URI parameter (`?password=secret`) and a keyword/value pair
    /// (`password=secret`, `password = 'a b'`). Other spellings (a
    /// percent-encoded parameter name) are caught by `PostgresStore.describe`.
    static func redacted(_ message: String) -> String {
        message
            .replacing(/((?i)[a-z][a-z0-9+.\-]*:\/\/[^:@\/?#\s]*):[^\s\/?#]*@/) { "\($0.output.1):…@" }
            .replacing(/(?i)password\s*=\s*(?:'(?:[^'\\]|\\.)*'?|[^&\s]*)/, with: "password=…")
    }

    /// `redacted`, and the exact password wherever it still appears (a short
    /// one is left to the patterns: cutting every "ab" out of a message would hide the message).
    static func redacted(_ message: String, secret: String?) -> String {
        let patterned = redacted(message)
        guard let secret, secret.count >= 4 else { return patterned }
        return patterned.replacingOccurrences(of: secret, with: "…")
    }

    /// The password libpq would send for `conninfo`, read by libpq's own parser,
    /// so that no spelling of it can slip past `redacted`.
    static func password(in conninfo: String) -> String? {
        // Without libpq to read it, the whole text counts as the secret: `PostgresStore.describe` then shows
        // no more of it than `passwordlessURI` can, which is nothing.
        guard let pq = try? LibPQ.table() else { return conninfo }
        var error: UnsafeMutablePointer<CChar>?
        guard let options = pq.PQconninfoParse(conninfo, &error) else {
            if let error { pq.PQfreemem(error) }
            return nil
        }
        defer { pq.PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val {
                let password = String(cString: value)
                return password.isEmpty ? nil : password
            }
            option += 1
        }
        return nil
    }

    /// The host, port, user and database of `conninfo` as libpq reads them, as
    /// a URI without password or parameters: what is shown when a password
    /// could not be cut out of the text as written.
    static func passwordlessURI(of conninfo: String) -> String {
        guard let pq = try? LibPQ.table() else { return "postgres://…" }
        var error: UnsafeMutablePointer<CChar>?
        guard let options = pq.PQconninfoParse(conninfo, &error) else {
            if let error { pq.PQfreemem(error) }
            return "postgres://…"
        }
        defer { pq.PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let user = values["user"].map { "\($0)@" } ?? ""
        let port = values["port"].map { ":\($0)" } ?? ""
        return "postgres://\(user)\(values["host"] ?? "")\(port)/\(values["dbname"] ?? "")"
    }

    private func withCStrings<T>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let buffers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
        defer { for buffer in buffers { free(buffer) } }
        return body(buffers.map { $0.map { UnsafePointer($0) } })
    }
}

/// libpq, opened the first time a PostgreSQL store is (`dlopen`, CLibPQ/shim.h) rather than linked: a command
/// on a SQLite store never loads it, nor the shared objects it brings, most of a short command's start-up
/// (bench/results.md, "Start-up"). Every libpq function this file calls is in its table.
private enum LibPQ {
    private static let opened: Result<guestmode_libpq, GuestModeError> = {
        var reason: UnsafePointer<CChar>?
        guard let table = guestmode_libpq_open(&reason) else {
            return .failure(
                GuestModeError(
                    .cannotOpenStore,
                    "cannot load libpq, which a PostgreSQL store needs (\(reason.map { String(cString: $0) } ?? "no reason given")); install it (Debian: libpq5)"
                ))
        }
        return .success(table.pointee)
    }()

    /// The table, or why libpq could not be opened.
    static func table() throws -> guestmode_libpq { try opened.get() }
}

/// A failure reported by the server, with its SQLSTATE so callers can tell a
/// unique violation or a serialization failure from the rest.
struct PostgresFailure: Error, CustomStringConvertible {
    var sqlState: String?
    var message: String
    var location: String

    var description: String { message }

    /// Another transaction won a race; running the whole transaction again is safe.
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    var isUniqueViolation: Bool { sqlState == "23505" }
    var isConnectionLost: Bool { sqlState == nil || sqlState?.hasPrefix("08") == true || sqlState == "57P01" }
    /// Set when the server refused a prepared statement because the schema
    /// changed its result's shape since it was prepared ("cached plan must
    /// not change result type"): the transaction is run again once its
    /// connection has forgotten its statements.
    var isStalePlan = false
    /// Set when the failure came from COMMIT itself: with the connection
    /// gone then, the server may have committed or not, and nobody can say.
    var isDuringCommit = false
    /// Set when a deadline ended the statement: whether it had been sent.
    var missedDeadline: MissedDeadline?
    /// Set when the failure came before the transaction's BEGIN was
    /// answered (`PostgresConnection.begin(_:)`): nothing was done in it.
    var isBeforeTransaction = false

    /// How a deadline ended a statement.
    enum MissedDeadline: Equatable {
        /// It was never sent: nothing happened, and the connection is as it was.
        case beforeSending
        /// It was sent and no answer came: the connection is abandoned, and a
        /// COMMIT's outcome is unknown.
        case unanswered
    }

    var asGuestModeError: GuestModeError {
        if isConnectionLost && isDuringCommit && missedDeadline != .beforeSending {
            return GuestModeError(
                .commitUnknown,
                "the connection to the PostgreSQL store \(location) was lost while committing (\(PostgresConnection.redacted(message))); the change may or may not have been made: look before repeating it"
            )
        }
        if isConnectionLost || isRetryable || sqlState == "55P03" || sqlState == "57014" {
            return GuestModeError(
                .storeBusy,
                "the PostgreSQL store \(location) is unavailable or busy (\(PostgresConnection.redacted(message))); the transaction was rolled back, try again later"
            )
        }
        if sqlState == "22003" {
            // An integer column's bound (counters.total + a count past 2^63-1): the statement is refused
            // and its transaction rolled back, as SQLiteStore refuses the same addition.
            return GuestModeError(
                .countOverflow,
                "a count would pass \(Bounds.maximumCounterTotal), the largest count a store holds (\(PostgresConnection.redacted(message)) on \(location)); nothing was written"
            )
        }
        if sqlState == "53100" {
            // The server's disk, not this machine's: said so, with the server's own words.
            return GuestModeError(
                .diskFull,
                "no space left on the PostgreSQL server's disk for the store \(location) (\(PostgresConnection.redacted(message))); free space on the server and run the command again"
            )
        }
        return GuestModeError(
            .databaseError,
            "database error on \(location): \(PostgresConnection.redacted(message)) (SQLSTATE \(sqlState ?? "none"))")
    }
}

/// A parameter sent as text, as libpq's text protocol expects.
struct PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    var text: String

    init(_ text: String) { self.text = text }
    init(stringLiteral value: String) { text = value }
    init(integerLiteral value: Int) { text = String(value) }
    init(_ value: Int) { text = String(value) }
    init(_ value: Int64) { text = String(value) }
    init(_ value: Date) { text = Timestamp.format(value) }
    init(_ value: Bool) { text = value ? "true" : "false" }
}

/// The rows of one result, copied out of libpq before its result is freed.
/// Reading a value never traps: a value that is not what the schema promises
/// is reported as a corrupt store.
struct PostgresRows: Sequence {
    let columns: [String]
    let values: [[String?]]
    /// Rows a command changed (INSERT, UPDATE, DELETE).
    let changes: Int
    let location: String

    fileprivate init(_ result: OpaquePointer, location: String, pq: guestmode_libpq) {
        let rowCount = Int(pq.PQntuples(result))
        let columnCount = Int(pq.PQnfields(result))
        // Through the table libpq's `char *` results are optionals; for a column or row of the result none is null.
        columns = (0..<columnCount).map { pq.PQfname(result, Int32($0)).map { String(cString: $0) } ?? "" }
        var values: [[String?]] = []
        values.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            values.append(
                (0..<columnCount).map { column in
                    pq.PQgetisnull(result, Int32(row), Int32(column)) == 1
                        ? nil : pq.PQgetvalue(result, Int32(row), Int32(column)).map { String(cString: $0) }
                })
        }
        self.values = values
        changes = pq.PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        self.location = location
    }

    var count: Int { values.count }
    var first: PostgresRow? { values.first.map { PostgresRow(columns: columns, values: $0, location: location) } }

    func makeIterator() -> some IteratorProtocol<PostgresRow> {
        values.lazy.map { PostgresRow(columns: columns, values: $0, location: location) }.makeIterator()
    }
}

struct PostgresRow {
    let columns: [String]
    let values: [String?]
    let location: String

    private func raw(_ column: String) throws -> String? {
        guard let index = columns.firstIndex(of: column) else {
            throw corrupt("the result has no column '\(column)'")
        }
        return values[index]
    }

    private func corrupt(_ what: String) -> GuestModeError {
        GuestModeError(.corruptStore, "the PostgreSQL store \(location) holds \(what)")
    }

    func optionalString(_ column: String) throws -> String? { try raw(column) }

    func string(_ column: String) throws -> String {
        guard let value = try raw(column) else { throw corrupt("NULL in \(column)") }
        return value
    }

    func optionalInt64(_ column: String) throws -> Int64? {
        guard let text = try raw(column) else { return nil }
        guard let value = Int64(text) else { throw corrupt("'\(text)' in \(column), not an integer") }
        return value
    }

    func int64(_ column: String) throws -> Int64 {
        guard let value = try optionalInt64(column) else { throw corrupt("NULL in \(column)") }
        return value
    }

    func int(_ column: String) throws -> Int { Int(try int64(column)) }

    func double(_ column: String) throws -> Double {
        let text = try string(column)
        guard let value = Double(text), value.isFinite else { throw corrupt("'\(text)' in \(column), not a number") }
        return value
    }

    func bool(_ column: String) throws -> Bool {
        switch try string(column) {
        case "t", "true": return true
        case "f", "false": return false
        case let other: throw corrupt("'\(other)' in \(column), not a boolean")
        }
    }

    func date(_ column: String) throws -> Date {
        let text = try string(column)
        guard let date = Timestamp.parse(text) else { throw corrupt("'\(text)' in \(column), not a time") }
        return date
    }

    func optionalDate(_ column: String) throws -> Date? {
        guard let text = try raw(column) else { return nil }
        guard let date = Timestamp.parse(text) else { throw corrupt("'\(text)' in \(column), not a time") }
        return date
    }

    func decode<T: RawRepresentable>(_ column: String, as type: T.Type) throws -> T where T.RawValue == String {
        let text = try string(column)
        guard let value = T(rawValue: text) else { throw corrupt("an unknown value '\(text)' in \(column)") }
        return value
    }
}

extension Array where Element == String {
    /// The strings as a NULL-terminated array of C strings, valid inside `body`.
    fileprivate func withCStringArray<T>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
