import Foundation
import GuestModeKit
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A file answered as a response body a chunk at a time, each chunk read on
/// the services' pool: an archive of any size (a pushed one may be 256 MiB)
/// is sent in the memory of one chunk, never read whole first
/// (bench/results.md, "Serving, round 9"). The file is opened before the
/// answer starts, so an archive removed meanwhile (a kept backup past
/// `--keep-backups`, the temporary file of an export) is still sent whole;
/// the descriptor is closed when the body is done with, written or not.
final class OpenedFile: Sendable {
    private let descriptor: Int32
    /// The file's length when it was opened: the answer's `Content-Length`.
    let size: Int

    /// Opens `path` for reading; a blocking call, for the pool.
    init(path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw GuestModeError(.archiveUnreadable, "cannot open the archive '\(path)'")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            close(descriptor)
            throw GuestModeError(.archiveUnreadable, "cannot read the size of the archive '\(path)'")
        }
        self.descriptor = descriptor
        size = Int(status.st_size)
    }

    deinit { close(descriptor) }

    /// How much of a chunk one write hands the connection. A write waits
    /// until NIO's buffer for the connection is back under its low mark
    /// (32 KiB, its high being 64 KiB), so within `--idle-timeout` the
    /// client must take about this much and 32 KiB more: 96 KiB, a slow
    /// phone's few seconds, where a whole chunk's 288 KiB would cut off a
    /// client taking under 10 KB a second at the default 30 seconds.
    static let writeSize = 64 * 1024

    /// The file's bytes as a body of `size` bytes, read `fileChunkSize` at
    /// a time on `services`' pool. A file that ends early (cut short while
    /// answered) fails the body, so the client sees a short answer, never
    /// bytes that were not the file's.
    ///
    /// Each write waits for the client to take the bytes before it, and a
    /// client may stop reading: Hummingbird's idle timeout is off while an
    /// answer is in progress. So a write may wait at most the services'
    /// idle timeout (`--idle-timeout`), past which the request's connection
    /// is closed, and with it the request's slot and the file. That cut gets
    /// an access line of its own, under the request's id: the request's was
    /// written with its 200.
    func body(on services: Services, context: ServerContext, accessLogger: Logger) -> ResponseBody {
        let chunkSize = services.fileChunkSize
        let connection = context.channel
        let timeout = TimeAmount(services.idleTimeout)
        let requestID = context.id
        let route = ObservabilityMiddleware.route(of: context)
        return ResponseBody(contentLength: size) { writer in
            let watch = WriteWatch(connection: connection, timeout: timeout)
            watch.start()
            defer { watch.stop() }
            var offset = 0
            func bounded(_ write: () async throws -> Void) async throws {
                do {
                    try await watch.during(write)
                } catch  where watch.stalled {
                    let reason = "the client took nothing of the answer for \(services.idleTimeout): connection closed"
                    accessLogger.info(
                        "answer cut short",
                        metadata: [
                            "request_id": .string(requestID), "route": .string(route),
                            "bytes_written": .stringConvertible(offset), "bytes": .stringConvertible(self.size),
                            "error": .string(reason),
                        ])
                    throw GuestModeError(.requestTimeout, reason)
                }
            }
            while offset < self.size {
                let length = min(chunkSize, self.size - offset)
                let start = offset
                var chunk = try await services.perform { _, _ in try self.read(length, at: start) }
                while let piece = chunk.readSlice(length: min(Self.writeSize, chunk.readableBytes)),
                    piece.readableBytes > 0
                {
                    try await bounded { try await writer.write(piece) }
                    offset += piece.readableBytes
                }
            }
            try await bounded { try await writer.finish(nil) }
        }
    }

    private func read(_ length: Int, at offset: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { bytes in
            var done = 0
            while done < length {
                let got = pread(descriptor, bytes.baseAddress! + done, length - done, off_t(offset + done))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    throw GuestModeError(.archiveUnreadable, "an archive ended or failed while it was being sent")
                }
                done += got
            }
            return done
        }
        return buffer
    }
}

/// Closes a connection whose write has waited its timeout for the client. One callback on the
/// connection's event loop watches the whole answer, armed again for the deadline of the write in
/// progress when it finds one still in time; arming and cancelling one for each write would wake the
/// event loop twice a write.
private final class WriteWatch: Sendable {
    private let connection: any Channel
    private let timeout: TimeAmount
    /// When the write in progress started, in the event loop's uptime nanoseconds (its clock, which a
    /// test's event loop moves itself); 0 while none is (a chunk being read from the file is not the
    /// client's to wait for).
    private let writeStarted = Atomic<UInt64>(0)
    private let cut = Atomic<Bool>(false)
    private let callback = Mutex<(scheduled: Scheduled<Void>?, stopped: Bool)>((nil, false))

    init(connection: any Channel, timeout: TimeAmount) {
        self.connection = connection
        self.timeout = timeout
    }

    /// Whether the watch closed the connection: a write that failed then failed for it.
    var stalled: Bool { cut.load(ordering: .relaxed) }

    func start() { arm(at: connection.eventLoop.now + timeout) }

    /// Stops watching; the connection stays as it is.
    func stop() {
        callback.withLock { state in
            state.stopped = true
            state.scheduled?.cancel()
            state.scheduled = nil
        }
    }

    /// Runs one write under the watch.
    func during(_ write: () async throws -> Void) async throws {
        writeStarted.store(connection.eventLoop.now.uptimeNanoseconds, ordering: .relaxed)
        defer { writeStarted.store(0, ordering: .relaxed) }
        try await write()
    }

    private func arm(at deadline: NIODeadline) {
        callback.withLock { state in
            guard !state.stopped else { return }
            state.scheduled = connection.eventLoop.scheduleTask(deadline: deadline) { self.check() }
        }
    }

    private func check() {
        let started = writeStarted.load(ordering: .relaxed)
        let now = connection.eventLoop.now
        guard started != 0 else { return arm(at: now + timeout) }
        let due = NIODeadline.uptimeNanoseconds(started) + timeout
        guard due <= now else { return arm(at: due) }
        cut.store(true, ordering: .relaxed)
        connection.close(promise: nil)
    }
}
