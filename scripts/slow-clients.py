#!/usr/bin/env python3
"""Raw-socket clients for the slow-client tests of `guestmode serve`
(Tests/EndToEndTests/ServerSlowClientTests.swift): what curl cannot send.

    slow-clients.py < plan.json > result.json

The plan is {"address": "127.0.0.1:PORT", "connections": [...], "flood": {...}}, both parts optional,
both run at once; every loop is bounded by the plan's seconds, and only 127.0.0.1 and 127.0.0.2 are
ever spoken to.

Each connection is {"source": "127.0.0.1", "delay": SECONDS, "steps": [...], "timeout": SECONDS}: it opens
after `delay` (default 0), then the steps, in order, are
{"send": TEXT} (written at once), {"trickle": TEXT, "every": SECONDS} (one byte at a time, stopping as
soon as the server answers or closes), {"wait": SECONDS} (reading what comes) and {"stall": SECONDS}
(reading nothing, so the server's writes back up); then the answer is read until the server closes
or `timeout` passes. "receive_buffer": BYTES makes the socket's receive buffer that small. Its result
is {"status", "body", "closed", "seconds", "received"}: the first answer's status (0 for none) and
body (its first 4096 bytes), whether the server closed the connection, the seconds from the first
byte sent to the close (or to the timeout), and how many bytes came in all, head included.

The flood is {"slow": {"source", "count", "head", "every"}, "probe": {"source", "requests": [TEXT...]},
"seconds": S, "head_start": H, "control": C}: `count` connections from `slow.source` each send `head`,
then one byte every `every` seconds, reconnecting when the server closes them; H seconds after they
start, and until S seconds after, one connection from `probe.source` sends the probe requests in turn
(keep-alive, reconnecting when closed) and times each answer. Its result is
{"probes": [{"request": INDEX, "status", "ms"}], "control": [...], "slow": {"connected", "closed",
"statuses": {...}}}, the control being the same probes for C seconds before the slow side starts.
"""
import json
import select
import socket
import sys
import threading
import time

ALLOWED = {"127.0.0.1", "127.0.0.2"}


def connect(address, source, timeout=5, receive_buffer=None):
    host, port = address
    if host not in ALLOWED or source not in ALLOWED:
        raise SystemExit("slow-clients.py speaks only to 127.0.0.1 and 127.0.0.2")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if receive_buffer:
        # Before connecting: the window offered to the server is fixed at the handshake.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.bind((source, 0))
    sock.settimeout(timeout)
    sock.connect((host, port))
    return sock


def parse(raw):
    """The first answer in raw bytes: its status and its body (by Content-Length when given)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        return 0, ""
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = rest if length is None else rest[:length]
    return status, body.decode("utf-8", "replace")


def run_connection(address, plan):
    result = {"status": 0, "body": "", "closed": False, "seconds": 0.0, "received": 0}
    # A later connection opens after "delay" seconds: the server counts connections as they open.
    time.sleep(min(plan.get("delay", 0), 60))
    deadline = time.monotonic() + min(plan.get("timeout", 10), 60)
    try:
        sock = connect(address, plan.get("source", "127.0.0.1"), receive_buffer=plan.get("receive_buffer"))
    except OSError:
        result["closed"] = True
        return result
    started = time.monotonic()
    # A bytearray: an answer of many megabytes is appended to in place, not copied each time.
    received = bytearray()
    closed = False

    def poll(wait):
        nonlocal received, closed
        readable, _, _ = select.select([sock], [], [], max(0, wait))
        if not readable:
            return False
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            closed = True
        received += data
        return True

    try:
        for step in plan.get("steps", []):
            if closed or time.monotonic() >= deadline:
                break
            if "send" in step:
                sock.sendall(step["send"].encode("latin-1"))
            elif "trickle" in step:
                for byte in step["trickle"].encode("latin-1"):
                    if poll(0) or time.monotonic() >= deadline:
                        break
                    sock.sendall(bytes([byte]))
                    if poll(min(step["every"], deadline - time.monotonic())):
                        break
            elif "wait" in step:
                end = min(deadline, time.monotonic() + step["wait"])
                while not closed and time.monotonic() < end:
                    poll(end - time.monotonic())
            elif "stall" in step:
                time.sleep(max(0, min(deadline, time.monotonic() + step["stall"]) - time.monotonic()))
        while not closed and time.monotonic() < deadline:
            poll(deadline - time.monotonic())
    except OSError:
        closed = True
    finally:
        sock.close()
    result["closed"] = closed
    result["seconds"] = round(time.monotonic() - started, 3)
    result["received"] = len(received)
    result["status"], result["body"] = parse(bytes(received[:65536]))
    result["body"] = result["body"][:4096]
    return result


def read_answer(sock, stop):
    """One answer on a kept-alive connection: its status, or raises when the connection ends first (or
    the flood's time does)."""
    data = b""
    while b"\r\n\r\n" not in data:
        if time.monotonic() >= stop + 5:
            raise OSError("no answer in time")
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status, _ = parse(data)
    length = 0
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        if time.monotonic() >= stop + 5:
            raise OSError("no answer in time")
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed")
        rest += chunk
    if b"connection: close" in head.lower():
        raise ConnectionResetError(status)
    return status


def run_flood(address, plan):
    seconds = min(plan.get("seconds", 10), 60)
    control = min(plan.get("control", 0), 30)
    slow, probe = plan["slow"], plan["probe"]
    stop = time.monotonic() + seconds
    state = {"connected": 0, "closed": 0, "statuses": {}}
    probes = []
    controls = []

    def slow_side():
        head = slow["head"].encode("latin-1")
        sockets = {}

        def open_one(index):
            try:
                sock = connect(address, slow["source"], timeout=2)
                sock.sendall(head)
                sock.setblocking(False)
                sockets[index] = sock
                state["connected"] += 1
            except OSError:
                state["closed"] += 1

        for index in range(min(slow["count"], 1000)):
            open_one(index)
            if time.monotonic() >= stop:
                break
        while time.monotonic() < stop:
            time.sleep(min(slow["every"], max(0, stop - time.monotonic())))
            for index in range(min(slow["count"], 1000)):
                if time.monotonic() >= stop:
                    break
                sock = sockets.get(index)
                if sock is None:
                    open_one(index)
                    continue
                try:
                    data = sock.recv(65536)
                    if data:
                        status, _ = parse(data)
                        state["statuses"][str(status)] = state["statuses"].get(str(status), 0) + 1
                    raise OSError("answered or closed")
                except BlockingIOError:
                    pass
                except OSError:
                    sock.close()
                    del sockets[index]
                    state["closed"] += 1
                    continue
                try:
                    sock.send(b"{")
                except OSError:
                    sock.close()
                    del sockets[index]
                    state["closed"] += 1
        for sock in sockets.values():
            sock.close()

    def probe_side(until, samples):
        sock = None
        index = 0
        requests = [text.encode("latin-1") for text in probe["requests"]]
        while time.monotonic() < until:
            request = index % len(requests)
            started = time.monotonic()
            try:
                if sock is None:
                    sock = connect(address, probe["source"], timeout=5)
                sock.sendall(requests[request])
                status = read_answer(sock, stop)
            except ConnectionResetError as closing:
                status = closing.args[0] if closing.args and isinstance(closing.args[0], int) else 0
                sock.close()
                sock = None
            except OSError:
                status = 0
                if sock is not None:
                    sock.close()
                sock = None
            samples.append({"request": request, "status": status, "ms": round((time.monotonic() - started) * 1000, 2)})
            index += 1
            # A short pause, not none: the probe measures the server, it does not load it.
            time.sleep(0.002)
        if sock is not None:
            sock.close()

    # The control: the same probes on the same machine without the slow side, so a reader can tell the
    # slow clients' cost from the machine's own load (other tests, other builds).
    if control:
        probe_side(time.monotonic() + control, controls)
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=slow_side)]
    threads[0].start()
    # The slow side takes its places first: the probes are measured against a server already held.
    time.sleep(min(plan.get("head_start", 2), seconds))
    threads.append(threading.Thread(target=probe_side, args=(stop, probes)))
    threads[1].start()
    for thread in threads:
        thread.join()
    return {"control": controls, "probes": probes, "slow": state}


def main():
    plan = json.load(sys.stdin)
    host, port = plan["address"].rsplit(":", 1)
    address = (host, int(port))
    connections = plan.get("connections", [])
    results = [None] * len(connections)

    def one(index):
        results[index] = run_connection(address, connections[index])

    threads = [threading.Thread(target=one, args=(index,)) for index in range(len(connections))]
    for thread in threads:
        thread.start()
    flood = run_flood(address, plan["flood"]) if "flood" in plan else None
    for thread in threads:
        thread.join()
    json.dump({"connections": results, "flood": flood}, sys.stdout)


if __name__ == "__main__":
    main()
