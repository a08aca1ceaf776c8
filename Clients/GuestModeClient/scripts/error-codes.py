#!/usr/bin/env python3
"""Writes Sources/GuestModeClient/ErrorCode.swift, the error codes of the server as a Swift enum, from
the catalogue (GuestModeError.Code in Sources/GuestModeKit/Store/GuestModeError.swift); --check exits 1
when the file is not what it would write (`make client-test` runs it)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
TARGET = os.path.join(HERE, "..", "Sources", "GuestModeClient", "ErrorCode.swift")
catalogue = open(os.path.join(ROOT, "Sources/GuestModeKit/Store/GuestModeError.swift")).read()
codes = re.findall(r'case (\w+) = "([a-z0-9_]+)"', catalogue[catalogue.index("public enum Code"):])
assert len(codes) > 100, "the catalogue of GuestModeError.Code was not found"
codes.sort(key=lambda code: code[1])
lines = [
    "// Written by scripts/error-codes.py from the server's catalogue (GuestModeError.Code); do not edit.",
    "",
    "/// The `code` of a failure the server answers (`{\"error\":{\"code\",\"message\"}}`), one case per code",
    "/// of the catalogue in guestmode(1), EXIT STATUS, Error codes; a code this client does not know yet",
    "/// (a newer server) is `.unknown` with its text.",
    "public enum ErrorCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible {",
]
for name, raw in codes:
    lines.append(f"    /// `{raw}`")
    lines.append(f"    case {name}")
lines += [
    "    /// A code this version of the client does not know.",
    "    case unknown(String)",
    "",
    "    public init(rawValue: String) {",
    "        switch rawValue {",
]
for name, raw in codes:
    lines.append(f'        case "{raw}": self = .{name}')
lines += ["        default: self = .unknown(rawValue)", "        }", "    }", "", "    public var rawValue: String {", "        switch self {"]
for name, raw in codes:
    lines.append(f'        case .{name}: "{raw}"')
lines += ["        case .unknown(let raw): raw", "        }", "    }", "", "    public var description: String { rawValue }", "}", ""]
text = "\n".join(lines)
# The served document's ErrorCode enum comes from the same catalogue: the two must name the same codes.
import json
document = json.load(open(os.path.join(ROOT, "schemas", "openapi.json")))
served = document.get("components", {}).get("schemas", {}).get("ErrorCode", {}).get("enum")
if served is not None and sorted(served) != sorted(raw for _, raw in codes):
    print("schemas/openapi.json's ErrorCode and the catalogue differ: %s" % (set(served) ^ {raw for _, raw in codes}),
          file=sys.stderr)
    sys.exit(1)
if "--check" in sys.argv:
    if open(TARGET).read() != text:
        print(f"{TARGET} is not the catalogue's: run {sys.argv[0]}", file=sys.stderr)
        sys.exit(1)
else:
    open(TARGET, "w").write(text)
