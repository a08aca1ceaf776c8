#!/usr/bin/env python3
"""Runs the commands of schemas/cases.txt with --json and validates every document against its schema.

    python3 scripts/check-json-schemas.py --binary .build/debug/guestmode
    python3 scripts/check-json-schemas.py --binary .build/debug/guestmode --draft NAME...

Needs a real JSON Schema validator: Debian's python3-jsonschema (`make deps`). Without it this exits 2:
a missing validator is a failure, never a skip.

--draft writes schemas/NAME.json from the documents the cases produce (types merged over every sample,
every key required that every sample has, no other keys allowed), for a new command; edit the draft
(descriptions, nulls never seen) before committing it.

Besides its schema, every document must follow the conventions of guestmode(1): snake_case keys, no
`is_` prefix, no bare `user`, `id` or `created` key. Keys of maps (counters, tables) are data and are
not checked: a schema marks a map with `additionalProperties` and no `properties`.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "schemas")
NOW = "2026-11-01T10:00:00Z"

try:
    import jsonschema
except ImportError:
    print("check-json-schemas: the JSON Schema validator is missing; install python3-jsonschema (make deps)",
          file=sys.stderr)
    sys.exit(2)


def load_schema(name):
    with open(os.path.join(SCHEMAS, name + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def validator_for(name):
    schema = load_schema(name)
    store = {}
    for file in os.listdir(SCHEMAS):
        if file.endswith(".json"):
            with open(os.path.join(SCHEMAS, file), encoding="utf-8") as handle:
                document = json.load(handle)
            store[document.get("$id", file)] = document
            store[file] = document
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    try:
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            [(key, Resource.from_contents(value)) for key, value in store.items() if "$schema" in value])
        return cls(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=store)
        return cls(schema, resolver=resolver)


SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# As names of a scalar: a user id is `user_id`, a time `created_at`. (`user` may name the user object.)
FORBIDDEN = {"user", "id", "created", "guest", "account"}


def conventions(document, schema, path="$"):
    """Problems with key names, following the schema to skip the keys of maps."""
    problems = []
    if isinstance(document, dict):
        properties = (schema or {}).get("properties")
        is_map = properties is None and isinstance((schema or {}).get("additionalProperties"), dict)
        for key, value in document.items():
            if not is_map:
                if not SNAKE.match(key):
                    problems.append(f"{path}: key '{key}' is not snake_case")
                if key.startswith("is_") or (key in FORBIDDEN and not isinstance(value, (dict, list))):
                    problems.append(f"{path}: key '{key}' breaks the naming conventions (guestmode(1), JSON)")
            child = (properties or {}).get(key) if properties else (schema or {}).get("additionalProperties")
            problems += conventions(value, resolve(child), f"{path}.{key}")
    elif isinstance(document, list):
        items = resolve((schema or {}).get("items"))
        for index, value in enumerate(document):
            problems += conventions(value, items, f"{path}[{index}]")
    elif isinstance(document, float) and len(repr(document)) > 16:
        problems.append(f"{path}: {document!r} is not rounded")
    return problems


def resolve(schema):
    """The object schema inside anyOf/oneOf/$ref of defs.json, for the conventions walk."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        reference = schema["$ref"]
        file, _, pointer = reference.partition("#")
        target = load_schema(file[:-5]) if file else None
        if target is None:
            return None
        for part in [p for p in pointer.split("/") if p]:
            target = target.get(part, {})
        return resolve(target)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            for option in schema[key]:
                resolved = resolve(option)
                if resolved and (resolved.get("type") in ("object", "array") or "properties" in resolved):
                    return resolved
    return schema


def read_cases():
    cases = []
    with open(os.path.join(SCHEMAS, "cases.txt"), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cases.append((number, line))
    return cases


def run_cases(binary, directory):
    """Yields (line, schema, status, expected, stdout, stderr)."""
    variables = {}
    environment = dict(os.environ, GUESTMODE_NOW=NOW, NO_COLOR="1", HOME=directory,
                       GUESTMODE_TEMPLATES=os.environ.get("GUESTMODE_TEMPLATES", os.path.join(ROOT, "Templates")))
    # Profiles the cases bind (schemas/*.yaml) are files in the working directory, as a user's would be.
    for name in os.listdir(SCHEMAS):
        if name.endswith(".yaml"):
            shutil.copy(os.path.join(SCHEMAS, name), directory)
    for number, line in read_cases():
        words = line.split()
        head, rest = words[0], words[1:]
        stdin = None
        if len(rest) >= 2 and rest[-2] == "<":
            local = os.path.join(directory, rest[-1])
            with open(local if os.path.exists(local) else os.path.join(SCHEMAS, rest[-1]), "rb") as handle:
                stdin = handle.read()
            rest = rest[:-2]
        if head.startswith("@") or head == "-":
            expected, arguments, json_flag = 0, rest, []
        else:
            expected, arguments, json_flag = int(rest[0]), rest[1:], ["--json"]
        arguments = [re.sub(r"\$([A-Z]+)", lambda m: variables.get(m.group(1), m.group(0)), a) for a in arguments]
        result = subprocess.run([binary] + json_flag + arguments, cwd=directory, env=environment, input=stdin,
                                capture_output=True)
        stdout, stderr = result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")
        if head.startswith("@"):
            variables[head[1:]] = stdout.split()[0] if stdout.split() else ""
        yield number, line, head, result.returncode, expected, stdout, stderr


def check(binary):
    failures = []
    validators = {}
    count = 0
    with tempfile.TemporaryDirectory(prefix="guestmode-schemas-") as directory:
        for number, line, head, status, expected, stdout, stderr in run_cases(binary, directory):
            where = f"cases.txt:{number}: {line}"
            if status != expected:
                failures.append(f"{where}: exit {status}, expected {expected}\n{stdout}{stderr}")
                continue
            if head.startswith("@") or head == "-":
                continue
            # JSON-lines progress (schemas/progress.json) comes first on stderr; the rest is the error document.
            def is_progress(line):
                return line.startswith("{") and '"message_type":' in line
            progress = [line for line in stderr.splitlines() if is_progress(line)]
            stderr = "\n".join(line for line in stderr.splitlines() if not is_progress(line))
            documents = [("progress", line, "stderr") for line in progress]
            if progress and json.loads(progress[-1]).get("message_type") != "summary" and status == 0:
                failures.append(f"{where}: the progress lines do not end with a summary")
            if head == "error":
                if stdout.strip():
                    failures.append(f"{where}: a failure printed on stdout: {stdout}")
                documents.append(("error", stderr, "stderr"))
            else:
                documents.append((head, stdout, "stdout"))
                if stderr.strip():
                    documents.append(("error", stderr, "stderr"))
            for schema_name, text, stream in documents:
                count += 1
                try:
                    document = json.loads(text)
                except ValueError as error:
                    failures.append(f"{where}: {stream} is not one JSON document ({error}): {text!r}")
                    continue
                if not os.path.exists(os.path.join(SCHEMAS, schema_name + ".json")):
                    failures.append(f"{where}: no schemas/{schema_name}.json")
                    continue
                validator = validators.get(schema_name) or validators.setdefault(schema_name, validator_for(schema_name))
                for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
                    path = "$" + "".join(f"[{p!r}]" for p in error.absolute_path)
                    failures.append(f"{where}: {stream} does not match schemas/{schema_name}.json at {path}: "
                                    f"{error.message}")
                for problem in conventions(document, resolve(load_schema(schema_name))):
                    failures.append(f"{where}: {problem}")
    for failure in failures:
        print(failure)
    print(f"check-json-schemas: {count} documents, {len(failures)} problems", file=sys.stderr)
    return 1 if failures else 0


def merge(schema, value):
    """Widens `schema` (None for nothing seen yet) to accept `value`."""
    kind = ("null" if value is None else "boolean" if isinstance(value, bool) else
            "number" if isinstance(value, (int, float)) else "string" if isinstance(value, str) else
            "array" if isinstance(value, list) else "object")
    schema = schema or {"types": set(), "properties": {}, "seen": 0, "present": {}, "items": None}
    schema["types"].add(kind)
    if kind == "object":
        schema["seen"] += 1
        for key, item in value.items():
            schema["properties"][key] = merge(schema["properties"].get(key), item)
            schema["present"][key] = schema["present"].get(key, 0) + 1
    elif kind == "array":
        for item in value:
            schema["items"] = merge(schema["items"], item)
    return schema


MAPS = {"counters", "tables", "rows", "records", "moved", "caps", "allowances", "headers"}


def render(schema, key=None):
    types = sorted(schema["types"])
    result = {}
    result["type"] = types[0] if len(types) == 1 else types
    if "object" in types:
        if key in MAPS:
            values = [p for p in schema["properties"].values()]
            merged = None
            for value in values:
                for t in value["types"]:
                    merged = merged or {"types": set(), "properties": {}, "seen": 0, "present": {}, "items": None}
                    merged["types"].add(t)
            result["additionalProperties"] = render(merged) if merged else {}
        else:
            result["properties"] = {k: render(v, k) for k, v in sorted(schema["properties"].items())}
            result["required"] = sorted(k for k, n in schema["present"].items() if n == schema["seen"])
            result["additionalProperties"] = False
    if "array" in types:
        result["items"] = render(schema["items"]) if schema["items"] else {}
    if key and key.endswith("_at") and "string" in types:
        result["$comment"] = "ISO 8601, UTC, milliseconds"
        result["pattern"] = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$"
    return result


def draft(binary, names):
    samples = {}
    with tempfile.TemporaryDirectory(prefix="guestmode-schemas-") as directory:
        for _, _, head, status, _, stdout, _ in run_cases(binary, directory):
            if head in names and stdout.strip():
                samples[head] = merge(samples.get(head), json.loads(stdout))
    for name in names:
        if name not in samples:
            print(f"no case in schemas/cases.txt prints '{name}'", file=sys.stderr)
            return 1
        schema = {"$schema": "http://json-schema.org/draft-07/schema#", "$id": f"{name}.json",
                  "title": f"guestmode {name.replace('-', ' ')} --json"}
        schema.update(render(samples[name]))
        with open(os.path.join(SCHEMAS, name + ".json"), "w", encoding="utf-8") as handle:
            json.dump(schema, handle, indent=2)
            handle.write("\n")
        print(f"wrote schemas/{name}.json")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/guestmode"))
    parser.add_argument("--draft", nargs="+", metavar="NAME")
    options = parser.parse_args()
    sys.exit(draft(options.binary, options.draft) if options.draft else check(options.binary))
