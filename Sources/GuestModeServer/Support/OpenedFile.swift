import Foundation
import GuestModeKit
import Hummingbird
import NIOCore

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
    func body(on services: Services) -> ResponseBody {
        let chunkSize = services.fileChunkSize
        return ResponseBody(contentLength: size) { writer in
            var offset = 0
            while offset < self.size {
                let length = min(chunkSize, self.size - offset)
                let start = offset
                let chunk = try await services.perform { _, _ in try self.read(length, at: start) }
                offset += chunk.readableBytes
                try await writer.write(chunk)
            }
            try await writer.finish(nil)
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
