import GuestModeKit
import Synchronization

/// The bytes of request bodies the server holds at once, shared by every
/// connection: in memory (`--body-memory`) and, for pushed archives, on disk
/// until they are checked (`--upload-space`). A body is read whole before a
/// route decodes it, and one may come slowly, so without it `--max-requests`
/// bodies of the body cap each (512 MiB by default) could be held together by
/// clients of a few addresses, and as many pushed archives of 256 MiB each
/// could fill the disk before any is found unsigned; with it what bodies
/// take is bounded whatever the clients send, and a request that would pass
/// it is 503 `server_busy`.
final class BodyBudget: Sendable {
    /// The bytes all bodies together may take.
    let capacity: Int
    /// The option that sets it, for the operator's message.
    let option: String
    private let used = Atomic<Int>(0)

    init(capacity: Int, option: String) {
        self.capacity = max(0, capacity)
        self.option = option
    }

    /// The bytes taken now, by every request being read or answered.
    var bytesHeld: Int { used.load(ordering: .relaxed) }

    /// Takes `bytes`; false, and nothing taken, when that would pass the capacity.
    fileprivate func take(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard bytes <= capacity - current else { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    fileprivate func give(_ bytes: Int) {
        used.subtract(bytes, ordering: .relaxed)
    }
}

/// What one request took of the `BodyBudget`: taken as its body is read,
/// given back all at once when its route has answered (`BodyLimitMiddleware`),
/// since the route holds the bytes until then.
final class BodyLease: Sendable {
    private let budget: BodyBudget
    private let held = Atomic<Int>(0)

    init(budget: BodyBudget) {
        self.budget = budget
    }

    /// Takes `bytes` more for the request, or throws `server_busy` and takes nothing.
    func take(_ bytes: Int) throws {
        guard bytes > 0 else { return }
        guard budget.take(bytes) else {
            throw GuestModeError(
                .serverBusy,
                "the server holds as many request bodies as \(budget.option) allows (\(budget.capacity) bytes); nothing was done: try again in a moment"
            )
        }
        held.add(bytes, ordering: .relaxed)
    }

    /// Gives back everything the request took; a second call gives back nothing.
    func giveBack() {
        budget.give(held.exchange(0, ordering: .relaxed))
    }
}
