#!/usr/bin/env python3
"""Runs schemathesis against a real `guestmode serve` and the OpenAPI document it serves:

    python3 scripts/check-openapi-live.py --binary .build/debug/guestmode [--as admin|session]
        [--profile NAME] [--postgres URI] [--examples N] [--seed N] [--phases LIST]

It starts the server on 127.0.0.1 and a free port over a new store (a SQLite file, or a schema of the
PostgreSQL database --postgres names; the voice profile, a guest, an admin key, a folder for pushed
backups), points schemathesis at /v1/openapi.json with the admin key (or the guest's session), the
guest's id as every {user}, the profile's names most of the time, and a bounded number of examples per
operation, and fails on
any 5xx and any answer the document does not describe (status, media type or schema). Needs
schemathesis (PyPI; `make deps` installs it): without it this exits 2, a failure, never a skip.

The server's standard error (its JSON access log) is kept in the run's folder, printed on failure.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import schemathesis  # noqa: F401
except ImportError:
    print("check-openapi-live: schemathesis is missing; `make deps` installs it (pip)", file=sys.stderr)
    sys.exit(2)

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
          "response_headers_conformance")


def guestmode(binary, store, *arguments):
    result = subprocess.run([binary, *store, *arguments], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        sys.exit(f"check-openapi-live: guestmode {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
    return result.stdout.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--examples", type=int, default=12, help="examples per operation and phase")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--as", dest="caller", choices=["admin", "session"], default="admin",
                        help="call with an admin key, or with the seeded guest's access token")
    parser.add_argument("--phases", default="examples,coverage,fuzzing")
    parser.add_argument("--profile", default="voice")
    parser.add_argument("--postgres", metavar="URI",
                        help="serve a new schema of this PostgreSQL database instead of a SQLite file")
    arguments = parser.parse_args()
    binary = os.path.abspath(arguments.binary)
    folder = tempfile.mkdtemp(prefix="guestmode-openapi-")
    store = ["--store", os.path.join(folder, "store.sqlite")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The deployment's backup key (which signs access tokens) lives under HOME: a new one for the run.
    environment = dict(os.environ, HOME=folder, NO_COLOR="1", GUESTMODE_TEMPLATES=os.path.join(root, "Templates"))
    if arguments.postgres:
        store = []
        environment.update(GUESTMODE_STORE=arguments.postgres,
                           GUESTMODE_SCHEMA="openapi_" + os.path.basename(folder).replace("-", "_").lower())
    os.environ.update(environment)
    guestmode(binary, store, "init", "--profile", arguments.profile)
    key = guestmode(binary, store, "serve", "key", "create", "fuzz", "--scope", "admin").splitlines()[0]
    user = guestmode(binary, store, "guest", "new", "-q", "--device", "fuzz-device")
    if arguments.profile == "voice":
        guestmode(binary, store, "record", "put", user, "settings", "theme", "--data", '{"dark": true}')
        guestmode(binary, store, "meter", "use", user, "api_minutes", "5")
    log_path = os.path.join(folder, "serve.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [binary, *store, "serve", "--listen", "127.0.0.1:0", "--guests-per-hour", "0",
             "--backups-dir", os.path.join(folder, "backups")],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    status = 1
    try:
        line = server.stdout.readline().strip()
        prefix = "listening on http://"
        if not line.startswith(prefix):
            sys.exit(f"check-openapi-live: the server did not start: '{line}'")
        base = "http://" + line[len(prefix):]
        credential = key
        if arguments.caller == "session":
            # The guest's own session: a device sign-in answers the seeded guest's id and a token for it.
            import json
            import urllib.request
            request = urllib.request.Request(base + "/v1/guests", data=b'{"device": "fuzz-device"}', method="POST")
            with urllib.request.urlopen(request, timeout=20) as answer:
                session = json.load(answer)
            user, credential = session["user_id"], session["access_token"]
        config = os.path.join(folder, "schemathesis.toml")
        with open(config, "w") as handle:
            # Every {user} is the seeded guest; the profile's names most of the time, else whatever
            # schemathesis makes up, so both the engine and its refusals are reached.
            handle.write(f"""
[dictionaries.collections]
values = ["settings", "commands"]
[dictionaries.meters]
values = ["api_minutes"]
[dictionaries.plans]
values = ["premium"]
[dictionaries.providers]
values = ["apple", "google"]
[dictionaries.actions]
values = ["app_opened", "command_spoken"]
[dictionaries.amounts]
values = [1, 2.5, "0.25", 1000]
[dictionaries.decimals]
values = ["1", "2.5", "0.25", "1000"]
[dictionaries.contexts]
values = ["guest_cap_reached", "paywall_viewed"]
[dictionaries.durations]
values = ["P7D", "24h"]
[dictionaries.times]
values = ["2026-11-01T10:00:00Z", "2030-01-01T00:00:00Z"]
[dictionaries.limits]
values = [1, 10, 0, -1]

[parameters]
"path.user" = "{user}"
"path.collection" = {{ dictionary = "collections", probability = 0.8 }}
"path.meter" = {{ dictionary = "meters", probability = 0.8 }}
"path.plan" = {{ dictionary = "plans", probability = 0.8 }}
"path.provider" = {{ dictionary = "providers", probability = 0.8 }}
"body.action" = {{ dictionary = "actions", probability = 0.7 }}
"body.plan" = {{ dictionary = "plans", probability = 0.7 }}
"body.provider" = {{ dictionary = "providers", probability = 0.7 }}
"body.amount" = {{ dictionary = "amounts", probability = 0.7 }}
"body.context" = {{ dictionary = "contexts", probability = 0.7 }}
"body.trial" = {{ dictionary = "durations", probability = 0.5 }}
"body.expires" = {{ dictionary = "durations", probability = 0.5 }}
"body.until" = {{ dictionary = "times", probability = 0.5 }}
"query.collection" = {{ dictionary = "collections", probability = 0.7 }}
"query.amount" = {{ dictionary = "decimals", probability = 0.7 }}
"query.since" = {{ dictionary = "times", probability = 0.7 }}
"query.until" = {{ dictionary = "times", probability = 0.7 }}
"query.limit" = {{ dictionary = "limits", probability = 0.7 }}
""")
        command = [
            # NDJSON bodies (the bulk routes) are text: sent as schemathesis sends text/plain.
            sys.executable, "-c",
            "import sys, schemathesis; schemathesis.serializer.alias('application/x-ndjson', 'text/plain'); "
            "from schemathesis.cli import schemathesis as main; sys.exit(main())",
            "--config-file", config, "run", base + "/v1/openapi.json",
            "--checks", CHECKS, "--header", f"Authorization: Bearer {credential}",
            "--max-examples", str(arguments.examples), "--seed", str(arguments.seed), "--workers", "1",
            "--phases", arguments.phases, "--request-timeout", "20", "--no-color",
            "--suppress-health-check", "all", "--output-truncate", "true",
        ]
        result = subprocess.run(command, cwd=folder, env=environment)
        status = result.returncode
    finally:
        server.terminate()
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
    if status != 0:
        with open(log_path) as log:
            tail = log.readlines()[-20:]
        print("check-openapi-live: the server's last log lines:\n" + "".join(tail), file=sys.stderr)
        print(f"check-openapi-live: schemathesis found problems (exit {status}); the run is in {folder}",
              file=sys.stderr)
        sys.exit(1)
    # What the run reached: the statuses each route answered, from the server's access log.
    import collections
    import json
    tally = collections.defaultdict(collections.Counter)
    with open(log_path) as log:
        for line in log:
            entry = json.loads(line)
            if entry.get("logger") == "guestmode.access":
                tally[f"{entry['method']} {entry['route']}"][entry["status"]] += 1
    for route in sorted(tally):
        counts = " ".join(f"{status}x{count}" for status, count in sorted(tally[route].items()))
        print(f"  {route}: {counts}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    print("check-openapi-live: schemathesis found no problem", file=sys.stderr)


if __name__ == "__main__":
    main()
