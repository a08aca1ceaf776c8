#!/usr/bin/env python3
"""Prints the mdoc list of JSON error codes for guestmode(1): every code of
GuestModeError.Code with the exit status it is raised with, found by reading
the sources (the kind each code is raised with, and the CLI's kind-to-status map). `make man-codes` rewrites the section between its markers."""
import os, re, sys

ROOT = os.path.join(os.path.dirname(__file__), "..")
# The command line maps each failure kind to its exit status in one place.
exit_statuses = open(os.path.join(ROOT, "Sources/guestmode/Support/ExitStatus.swift")).read()
STATUS = {kind: int(status) for kind, status in re.findall(r"case \.(\w+): (\d+)", exit_statuses)}
assert len(STATUS) == 12, "Sources/guestmode/Support/ExitStatus.swift: expected a status for each of the 12 kinds"
catalogue = open(os.path.join(ROOT, "Sources/GuestModeKit/Store/GuestModeError.swift")).read()
codes = dict(re.findall(r'public static let (\w+) = Code\("([a-z0-9_]+)"\)', catalogue))
statuses = {name: set() for name in codes}
for base, _, files in os.walk(os.path.join(ROOT, "Sources")):
    for file in files:
        if not file.endswith(".swift"):
            continue
        text = open(os.path.join(base, file)).read()
        for match in re.finditer(r"code: \.(\w+)", text):
            before = text[max(0, match.start() - 600):match.start()]
            calls = list(re.finditer(r"GuestModeError\.(usage|notFound|badData|conflict)\(|GuestModeError\(\s*\.(\w+)|\((\.\w+), code: $", before))
            if not calls or match.group(1) not in statuses:
                continue
            last = calls[-1]
            kind = last.group(1) or last.group(2) or (last.group(3) or "")[1:]
            if kind in STATUS:
                statuses[match.group(1)].add(STATUS[kind])
# Codes raised from values (prompt quiet reasons) or by the command line's own layer.
statuses["invalidProfile"].add(65)
statuses["internalFailure"].add(1)
statuses["usage"].add(64)
for name in ("userLinked", "userAuthenticated", "neverAsk", "cooldown", "windowFull", "noEligiblePrompt"):
    statuses[name].add(13)
lines = [".Bl -tag -width Ds -compact"]
for name, raw in sorted(codes.items(), key=lambda item: item[1]):
    found = sorted(statuses[name])
    lines.append(".It Li %s" % raw)
    lines.append("exit %s" % (", ".join(str(s) for s in found) if found else "varies"))
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
