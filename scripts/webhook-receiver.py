#!/usr/bin/env python3
"""A webhook receiver for the tests (Tests/EndToEndTests/WebhookTests.swift) and the README.

    webhook-receiver.py --port-file FILE --log FILE --secret-file FILE [--mode-file FILE] [--port N]
                        [--listen-file FILE]
                        [--lifetime SECONDS]

Listens on 127.0.0.1 (a free port unless --port), writes the port to --port-file, and appends one JSON line
per request to --log: the event's id, type and user_id, the SHA-256 of the body, whether the
Guestmode-Signature header verifies with Python's hmac under the secret, and the answer given. What it
answers is read from --mode-file at each request: `ok` (200, the default), `500`, `timeout` (answers 200
after 3 seconds, later than the tests' --timeout), `slow` (200 after 20 ms), `redirect` (302).
"""
import argparse
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret, header, body):
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if "t" not in fields or "v1" not in fields:
        return False
    expected = hmac.new(secret, fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--mode-file")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=300, help="exit after this many seconds")
    parser.add_argument(
        "--listen-file",
        help="hold the port bound without listening (a connection is refused, as when nothing listens) until"
        " this file exists; then listen and create FILE.done",
    )
    options = parser.parse_args()
    # Descriptors inherited from the starting process (other children's pipes, when a test runner starts
    # several at once) would keep those pipes open as long as the receiver runs.
    os.closerange(3, 4096)
    with open(options.secret_file, "rb") as handle:
        secret = handle.read().rstrip(b"\r\n")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            mode = "ok"
            if options.mode_file and os.path.exists(options.mode_file):
                with open(options.mode_file) as handle:
                    mode = handle.read().strip() or "ok"
            try:
                event = json.loads(body)
            except ValueError:
                event = {}
            entry = {
                "id": event.get("id"), "type": event.get("type"), "user_id": event.get("user_id"),
                "header_id": self.headers.get("Guestmode-Event-Id"),
                "body_sha256": hashlib.sha256(body).hexdigest(),
                "verified": verify(secret, self.headers.get("Guestmode-Signature", ""), body),
                "mode": mode,
            }
            if mode == "timeout":
                time.sleep(3)
            elif mode == "slow":
                time.sleep(0.02)
            status = {"500": 500, "redirect": 302}.get(mode, 200)
            entry["status"] = status
            with lock, open(options.log, "a") as log:
                log.write(json.dumps(entry) + "\n")
            try:
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
            except OSError:
                pass

    # A test that fails before stopping the receiver must not leave it running.
    threading.Timer(options.lifetime, lambda: os._exit(0)).start()
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.server_bind()
    if not options.listen_file:
        server.server_activate()
    with open(options.port_file + ".tmp", "w") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(options.port_file + ".tmp", options.port_file)
    if options.listen_file:
        while not os.path.exists(options.listen_file):
            time.sleep(0.02)
        server.server_activate()
        open(options.listen_file + ".done", "w").close()
    server.serve_forever()


if __name__ == "__main__":
    main()
