#!/usr/bin/env python3
"""Prints the mdoc list of JSON error codes for guestmode(1): every code of
GuestModeError.Code with its exit status, read from the sources (the kind the
catalogue gives each code, and the CLI's kind-to-status map). `make man-codes`
rewrites the section between its markers."""
import os, re, sys

ROOT = os.path.join(os.path.dirname(__file__), "..")
# The command line maps each failure kind to its exit status in one place.
exit_statuses = open(os.path.join(ROOT, "Sources/GuestModeCommandLine/ExitStatus.swift")).read()
STATUS = {kind: int(status) for kind, status in re.findall(r"case \.(\w+): (\d+)", exit_statuses)}
assert len(STATUS) == 12, "Sources/GuestModeCommandLine/ExitStatus.swift: expected a status for each of the 12 kinds"
catalogue = open(os.path.join(ROOT, "Sources/GuestModeKit/Store/GuestModeError.swift")).read()
# The catalogue is an enum, `case userNotFound = "user_not_found"`, whose kind is a switch:
# `case .a,\n .b:\n return .notFound`.
codes_enum = catalogue[catalogue.index("public enum Code"):]
raw = dict(re.findall(r'case (\w+) = "([a-z0-9_]+)"', codes_enum))
kinds = {}
for names, kind in re.findall(r'case ((?:\.\w+,\s*)*\.\w+):\s*return \.(\w+)', catalogue):
    for name in re.findall(r'\.(\w+)', names):
        kinds[name] = kind
assert set(raw) == set(kinds), "a code without a kind, or a kind for no code: %s" % (set(raw) ^ set(kinds))
codes = [(raw[name], kinds[name]) for name in raw]
assert codes, "Sources/GuestModeKit/Store/GuestModeError.swift: no codes found"
lines = [".Bl -tag -width Ds -compact"]
for raw, kind in sorted(codes):
    lines.append(".It Li %s" % raw)
    lines.append("exit %d" % STATUS[kind])
lines.append(".El")
section = "\n".join(lines)
if len(sys.argv) > 1 and sys.argv[1] == "--write":
    path = os.path.join(ROOT, "man/guestmode.1")
    page = open(path).read()
    start, end = ".\\\" error codes begin\n", ".\\\" error codes end\n"
    head, rest = page.split(start)
    _, tail = rest.split(end)
    open(path, "w").write(head + start + section + "\n" + end + tail)
else:
    print(section)
