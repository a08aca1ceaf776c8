#!/usr/bin/env python3
"""Checks answers of `guestmode serve` against schemas/openapi.json: reads NDJSON on standard input,
one answer a line, {"method", "path", "status", "content_type", "body"} (the path as sent, without its
query), finds the operation whose path template matches, and checks that the document lists the status,
the media type and, for JSON, that the body is valid against the schema (a real JSON Schema 2020-12
validator: Debian's python3-jsonschema, `make deps`). Prints each problem and exits 1 if there is any.

    python3 scripts/check-openapi-responses.py < answers.ndjson
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("check-openapi-responses: the JSON Schema validator is missing; install python3-jsonschema (make deps)",
          file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_document():
    with open(os.path.join(ROOT, "schemas", "openapi.json"), encoding="utf-8") as handle:
        return json.load(handle)


def match(document, method, path):
    """The operation of the template that matches `path`, literal segments before parameters."""
    segments = path.split("/")
    best = None
    for template, item in document["paths"].items():
        parts = template.split("/")
        if len(parts) != len(segments):
            continue
        literal = 0
        for part, segment in zip(parts, segments):
            if part.startswith("{"):
                if not segment:
                    break
            elif part != segment:
                break
            else:
                literal += 1
        else:
            operation = item.get("x-move" if method == "MOVE" else method.lower())
            if operation is not None and (best is None or literal > best[0]):
                best = (literal, template, operation)
    return best


def main():
    document = load_document()
    problems = 0
    answers = 0
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        answer = json.loads(line)
        answers += 1
        method, path, status = answer["method"], answer["path"], str(answer["status"])
        where = f"{method} {path} {status}"
        found = match(document, method, path)
        if found is None:
            # A request to no route: it must be the error document of a 404 route_not_found.
            if status != "404" or '"route_not_found"' not in answer["body"]:
                print(f"{where}: no operation of the document matches", file=sys.stderr)
                problems += 1
            continue
        _, template, operation = found
        response = operation["responses"].get(status)
        if response is None:
            print(f"{where}: {method} {template} does not list the status {status}", file=sys.stderr)
            problems += 1
            continue
        content = response.get("content")
        media = (answer.get("content_type") or "").split(";")[0].strip()
        if content is None:
            continue
        if media not in content:
            print(f"{where}: the answer is {media or 'without a type'}, not {', '.join(content)}", file=sys.stderr)
            problems += 1
            continue
        if media != "application/json":
            continue
        try:
            body = json.loads(answer["body"])
        except ValueError:
            print(f"{where}: the body is not JSON: {answer['body'][:200]}", file=sys.stderr)
            problems += 1
            continue
        schema = dict(content[media]["schema"])
        schema["components"] = document["components"]
        validator = jsonschema.Draft202012Validator(schema)
        for error in validator.iter_errors(body):
            location = "/".join(str(part) for part in error.absolute_path)
            print(f"{where}: at '{location}': {error.message[:300]}", file=sys.stderr)
            problems += 1
    print(f"check-openapi-responses: {answers} answers, {problems} problems", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
