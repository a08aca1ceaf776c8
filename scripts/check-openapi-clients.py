#!/usr/bin/env python3
"""Checks that the OpenAPI document `guestmode serve` serves makes a working client:

    python3 scripts/check-openapi-clients.py --binary .build/debug/guestmode [--keep DIR]

It starts the server on 127.0.0.1 and a free port over a new SQLite store of the voice profile, reads
/v1/openapi.json, checks every example of the document against its schema, and generates a Python client
from it with openapi-python-client (PyPI; `make deps` installs it): any warning, or an operation the
client leaves out, fails. Then it plays a guest's journey with that client against the server: a guest
signs in, puts and reads a record, checks and uses a meter until the meter refuses (402, with the prompt
it raised), asks for the prompt due and records what the person did with it, reads the profile and its
own user, refreshes its session and signs out. Every answer must decode as the document says.

Without openapi-python-client this exits 2, a failure, never a skip. The server's standard error is
printed on failure.
"""
import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

try:
    import openapi_python_client  # noqa: F401
except ImportError:
    print("check-openapi-clients: openapi-python-client is missing; `make deps` installs it (pip)", file=sys.stderr)
    sys.exit(2)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def fail(message):
    print("check-openapi-clients: " + message, file=sys.stderr)
    sys.exit(1)


def check_examples(document):
    """Every example of a body against its schema (a JSON Schema 2020-12 validator, when there is one)."""
    try:
        import jsonschema
    except ImportError:
        return 0
    checked = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            bodies = [("request", operation.get("requestBody", {}))]
            bodies += [(status, response) for status, response in operation["responses"].items()]
            for where, body in bodies:
                for media_type, content in body.get("content", {}).items():
                    if "example" not in content or media_type != "application/json":
                        continue
                    schema = dict(content["schema"], components=document["components"])
                    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(content["example"]))
                    if errors:
                        fail(f"{method.upper()} {path} {where}: the example does not fit its schema: "
                             f"{errors[0].message[:300]}")
                    checked += 1
    return checked


def generate(document_path, folder):
    """The Python client of the document, as package `guestmode_client` in `folder`; fails on a warning."""
    output = os.path.join(folder, "guestmode_client")
    result = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", document_path, "--meta", "none",
         "--output-path", output],
        capture_output=True, text=True, timeout=300)
    text = result.stdout + result.stderr
    warnings = [line for line in text.splitlines() if "warning" in line.lower() or "unable to" in line.lower()]
    if result.returncode != 0 or warnings:
        fail(f"openapi-python-client exited {result.returncode} with {len(warnings)} warnings:\n{text[-6000:]}")
    return output


def generated_operations(package):
    operations = 0
    for folder, _, files in os.walk(os.path.join(package, "api")):
        for file in files:
            if file.endswith(".py") and file != "__init__.py":
                with open(os.path.join(folder, file), encoding="utf-8") as handle:
                    operations += "def sync_detailed(" in handle.read()
    return operations


def journey(base):
    """A guest's journey through the generated client; every answer decoded into the document's types."""
    from guestmode_client import AuthenticatedClient, Client
    from guestmode_client.api.guests import create_guest
    from guestmode_client.api.meters import check_meter, get_meter, use_meter
    from guestmode_client.api.profile import get_profile
    from guestmode_client.api.prompts import next_prompt, record_prompt
    from guestmode_client.api.records import get_record, list_records, put_record
    from guestmode_client.api.sessions import refresh_session, sign_out
    from guestmode_client.api.users import get_me
    from guestmode_client import models

    def expect(response, status, kind):
        if response.status_code != status or not isinstance(response.parsed, kind):
            fail(f"expected {status} {kind.__name__}, got {response.status_code} "
                 f"{type(response.parsed).__name__}: {response.content[:400]!r}")
        return response.parsed

    anonymous = Client(base_url=base, raise_on_unexpected_status=True)
    session = expect(create_guest.sync_detailed(client=anonymous, body=models.CreateGuestRequest(device="phone-1")),
                     201, models.Session)
    if session.token_type != models.SessionTokenType.BEARER or session.expires_at.year < 2000:
        fail(f"the session decoded wrong: {session}")
    client = AuthenticatedClient(base_url=base, token=session.access_token, raise_on_unexpected_status=True)
    user = session.user_id

    record = models.RecordData.from_dict({"dark": True, "voice": "calm"})
    expect(put_record.sync_detailed(user, "settings", "theme/main", client=client, body=record), 201,
           models.RecordWrite)
    read = expect(get_record.sync_detailed(user, "settings", "theme/main", client=client), 200, models.Record)
    if read.key != "theme/main" or read.data.to_dict() != {"dark": True, "voice": "calm"}:
        fail(f"the record read back is {read.key}: {read.data}")
    expect(list_records.sync_detailed(user, "settings", client=client), 200, list)

    check = expect(check_meter.sync_detailed(user, "api_minutes", client=client, amount="30"), 200,
                   models.MeterCheck)
    used = expect(use_meter.sync_detailed(user, "api_minutes", client=client,
                                          body=models.UseMeterRequest(amount=50, id="call-1")), 200, models.MeterUse)
    refused = expect(use_meter.sync_detailed(user, "api_minutes", client=client,
                                             body=models.UseMeterRequest(amount=20, id="call-2")),
                     402, models.MeterUseRefused)
    if refused.error.code != models.ErrorCode.METER_EXHAUSTED or not isinstance(refused.result, models.MeterUse):
        fail(f"the refusal decoded wrong: {refused}")
    prompt = refused.error.prompt
    if prompt is None or not prompt.content.title:
        fail(f"the refusal raised no prompt: {refused}")
    refused_check = expect(check_meter.sync_detailed(user, "api_minutes", client=client, amount="20"), 402,
                           models.MeterCheckRefused)
    status = expect(get_meter.sync_detailed(user, "api_minutes", client=client), 200, models.MeterStatus)
    if status.used != 50:
        fail(f"the meter used {status.used}, not 50")

    due = expect(next_prompt.sync_detailed(user, client=client), 200, models.Prompt)
    expect(next_prompt.sync_detailed(user, client=client, explain=True), 200, models.PromptExplanation)
    expect(record_prompt.sync_detailed(user, client=client,
                                       body=models.RecordPromptRequest(
                                           context=due.context, outcome=models.RecordPromptRequestOutcome.DISMISSED)),
           200, models.PromptOutcome)

    expect(get_profile.sync_detailed(client=client), 200, models.Profile)
    me = expect(get_me.sync_detailed(client=client), 200, models.UserDetails)
    if me.user.device != "phone-1" or me.user.linked_at is not None:
        fail(f"the user decoded wrong: {me.user}")
    refreshed = expect(refresh_session.sync_detailed(
        client=anonymous, body=models.RefreshTokenRequest(refresh_token=session.refresh_token)), 200, models.Session)
    expect(sign_out.sync_detailed(client=anonymous,
                                  body=models.RefreshTokenRequest(refresh_token=refreshed.refresh_token)),
           200, models.SessionsRevoked)
    return [check.allowed, used.status.used, refused_check.error.code.value, due.context]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--keep", metavar="DIR", help="write the document and the client there and keep them")
    arguments = parser.parse_args()
    binary = os.path.abspath(arguments.binary)
    folder = os.path.abspath(arguments.keep) if arguments.keep else tempfile.mkdtemp(prefix="guestmode-clients-")
    os.makedirs(folder, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    store = ["--store", os.path.join(folder, "store.sqlite")]
    # A kept folder may be used again: a new store and a new client each run.
    for stale in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
        if os.path.exists(os.path.join(folder, stale)):
            os.remove(os.path.join(folder, stale))
    shutil.rmtree(os.path.join(folder, "guestmode_client"), ignore_errors=True)
    environment = dict(os.environ, HOME=folder, NO_COLOR="1", GUESTMODE_TEMPLATES=os.path.join(root, "Templates"))
    subprocess.run([binary, *store, "init", "--profile", "voice"], env=environment, check=True,
                   capture_output=True, timeout=60)
    log_path = os.path.join(folder, "serve.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([binary, *store, "serve", "--listen", "127.0.0.1:0"], env=environment,
                                  stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline().strip()
        prefix = "listening on http://"
        if not line.startswith(prefix):
            fail(f"the server did not start: '{line}'")
        base = "http://" + line[len(prefix):]
        with urllib.request.urlopen(base + "/v1/openapi.json", timeout=20) as answer:
            text = answer.read().decode()
        document = json.loads(text)
        document_path = os.path.join(folder, "openapi.json")
        with open(document_path, "w", encoding="utf-8") as handle:
            handle.write(text)
        examples = check_examples(document)
        package = generate(document_path, folder)
        # Every operation but MOVE (no OpenAPI method: x-move) is a function of the client.
        documented = sum(1 for item in document["paths"].values() for method in item if method in METHODS)
        operations = generated_operations(package)
        if operations != documented:
            fail(f"the client has {operations} operations of the document's {documented}")
        sys.path.insert(0, folder)
        importlib.invalidate_caches()
        steps = journey(base)
    except BaseException:
        with open(log_path) as log:
            print("check-openapi-clients: the server's last log lines:\n" + "".join(log.readlines()[-10:]),
                  file=sys.stderr)
        raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
    if not arguments.keep:
        shutil.rmtree(folder, ignore_errors=True)
    version = subprocess.run([sys.executable, "-m", "openapi_python_client", "--version"], capture_output=True,
                             text=True).stdout.strip()
    print(f"check-openapi-clients: {version}: 0 warnings, {operations} operations; {examples} examples fit "
          f"their schemas; the journey decoded every answer ({steps})", file=sys.stderr)


if __name__ == "__main__":
    main()
