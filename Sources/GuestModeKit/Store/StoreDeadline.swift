/// The moment by which a store call must have its connection and its locks,
/// set by whoever answers someone waiting (`guestmode serve` sets it from
/// `--store-wait` around each engine call) and read by the backends where
/// they would otherwise wait without end: for a free connection, a new
/// connection, the first statement of a transaction, another writer's lock.
///
/// It bounds waiting, not working: a statement that runs long once the
/// transaction has begun is bounded by the backend's own configured timeout,
/// since a bulk load may legitimately take longer than a client waits in a queue.
/// Unset (the command line), a backend waits as long as its configuration says.
package enum StoreDeadline {
    /// The deadline of the calls made inside `withValue`; nil for none.
    @TaskLocal package static var current: ContinuousClock.Instant?

    /// What is left of the current deadline (zero once it passed), or nil without one.
    package static var remaining: Duration? {
        current.map { max(.zero, $0 - ContinuousClock.now) }
    }

    /// The earlier of the current deadline and `now + limit`; nil when neither bounds the wait.
    package static func bound(_ limit: Duration?) -> ContinuousClock.Instant? {
        let configured = limit.map { ContinuousClock.now + $0 }
        switch (current, configured) {
        case let (deadline?, configured?): return min(deadline, configured)
        case let (deadline, configured): return deadline ?? configured
        }
    }
}
