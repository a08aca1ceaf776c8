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

    /// The file's bytes as a body of `size` bytes, read `fileChunkSize` at
    /// a time on `services`' pool. A file that ends early (cut short while
    /// answered) fails the body, so the client sees a short answer, never
    /// bytes that were not the file's.
    ///
    /// Each write waits for the client to take the bytes before it, and a
    /// client may stop reading: Hummingbird's idle timeout is off while an
    /// answer is in progress. So each write has the services' idle timeout
    /// (`--idle-timeout`), past which `connection` is closed, and with it
    /// the request's slot and the file. That cut gets an access line of its
    /// own, under the request's id: the request's was written with its 200.
    func body(on services: Services, context: ServerContext, accessLogger: Logger) -> ResponseBody {
        let connection = context.channel
        let requestID = context.id
        let route = ObservabilityMiddleware.route(of: context)
        let chunkSize = services.fileChunkSize
        let timeout = TimeAmount(services.idleTimeout)
        return ResponseBody(contentLength: size) { writer in
            let stalled = StallFlag()
            var offset = 0
            func bounded(_ write: () async throws -> Void) async throws {
                let deadline = connection.eventLoop.scheduleTask(in: timeout) {
                    stalled.value.store(true, ordering: .relaxed)
                    connection.close(promise: nil)
                }
                defer { deadline.cancel() }
                do {
                    try await write()
                } catch  where stalled.value.load(ordering: .relaxed) {
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
                let chunk = try await services.perform { _, _ in try self.read(length, at: start) }
                offset += chunk.readableBytes
                try await bounded { try await writer.write(chunk) }
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

/// Set on the event loop when a write's deadline closed the connection, read by the task whose write
/// then failed: a failure of its own making, not the client's going away.
private final class StallFlag: Sendable {
    let value = Atomic<Bool>(false)
}
