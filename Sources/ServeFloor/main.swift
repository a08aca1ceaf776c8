// The floor `make bench` measures `guestmode serve` against: Hummingbird's own minimal route, on the same
// framework version, the same HTTP/1 server and the same event loops, answering a small JSON document.
// Whatever `serve` costs beyond this is guestmode's (bench/serve.sh, bench/results.md).
import Foundation
import Hummingbird

let router = Router()
router.get("/floor") { _, _ -> Response in
    Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(string: #"{"allowed":true,"remaining":"60"}"#)))
}
let application = Application(
    router: router,
    configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
    })
try await application.runService()
