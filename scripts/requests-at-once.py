#!/usr/bin/env python3
"""Sends many HTTP requests to one server at the same moment, for the server tests
(Tests/EndToEndTests/TestSupport/Server.swift).

    requests-at-once.py < plan.json > answers.json

The plan is {"address": "127.0.0.1:PORT", "requests": [{"method", "path", "headers", "body"}, ...],
"terminate": {"pid": N, "after": SECONDS}}. Every request gets its own connection, opened before any is
sent; a barrier then releases all of them together, so they are all in flight at once (curl processes
cannot do that: each costs a fork and an exec). With "terminate", SIGTERM goes to pid that many seconds
after the release. The answers come back in the plan's order: {"status", "headers", "body"}, with status
0 for a request that got no answer (refused, reset, or cut by the shutdown).
"""
import http.client
import json
import os
import signal
import sys
import threading
import time


def main():
    plan = json.load(sys.stdin)
    host, port = plan["address"].rsplit(":", 1)
    requests = plan["requests"]
    answers = [{"status": 0, "headers": {}, "body": ""} for _ in requests]
    connections = []
    for _ in requests:
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            connection.connect()
        except OSError:
            connection = None
        connections.append(connection)
    barrier = threading.Barrier(len(requests) + 1)

    def send(index):
        request, connection = requests[index], connections[index]
        barrier.wait()
        if connection is None:
            return
        try:
            body = request.get("body")
            connection.request(
                request["method"], request["path"], body=None if body is None else body.encode(),
                headers=request.get("headers", {}))
            response = connection.getresponse()
            answers[index] = {
                "status": response.status,
                "headers": {name.lower(): value for name, value in response.getheaders()},
                "body": response.read().decode("utf-8", "replace"),
            }
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(requests))]
    for thread in threads:
        thread.start()
    barrier.wait()
    terminate = plan.get("terminate")
    if terminate:
        time.sleep(terminate.get("after", 0))
        os.kill(terminate["pid"], signal.SIGTERM)
    for thread in threads:
        thread.join()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
