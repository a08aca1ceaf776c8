#!/usr/bin/env python3
"""Turns `code: "snake_case"` literals into catalogue constants and adds any
new code to GuestModeError.Code (kept sorted) with a placeholder for its
kind, which does not compile until someone chooses it, and without the
one-line meaning each code carries, which scripts/check-sources.py asks
for. For merging work written against string codes; run from the package
root."""
import os, re
def camel(s):
    parts = s.split("_")
    return parts[0] + "".join(x[:1].upper() + x[1:] for x in parts[1:])
catalogue_path = "Sources/GuestModeKit/Store/GuestModeError.swift"
found = set()
for base in ["Sources", "Tests"]:
    for root, _, files in os.walk(base):
        for name in files:
            if not name.endswith(".swift"):
                continue
            path = os.path.join(root, name)
            text = open(path).read()
            new = re.sub(r'code: "([a-z0-9_]+)"', lambda m: found.add(m.group(1)) or "code: ." + camel(m.group(1)), text)
            new = re.sub(r'\.code == "([a-z0-9_]+)"', lambda m: found.add(m.group(1)) or ".code == ." + camel(m.group(1)), new)
            if new != text:
                open(path, "w").write(new)
                print("converted", path)
catalogue = open(catalogue_path).read()
lets = set(re.findall(r'public static let (\w+) = Code\("([a-z0-9_]+)", (\.\w+)\)', catalogue))
# The one-line meaning above each code, kept through the rewrite.
meanings = {name: doc for doc, name in re.findall(r'(        ///[^\n]*\n)        public static let (\w+) = Code\(', catalogue)}
known = {raw for _, raw, _ in lets}
for code in sorted(found - known):
    lets.add((camel(code), code, "<#kind#>"))
    print("new code", code, "- choose its kind in", catalogue_path)
lets = sorted(lets, key=lambda item: item[1])
start = catalogue.index("        /// Every code the engine")
end = catalogue.rindex("    }\n}")
catalogue = (catalogue[:start]
    + "        /// Every code the engine and the command line raise, in order.\n        public static let all: [Code] = [\n"
    + "".join(f"            .{name},\n" for name, _, _ in lets) + "        ]\n\n"
    + "".join(meanings.get(name, "") + f'        public static let {name} = Code("{raw}", {kind})\n'
              for name, raw, kind in lets) + catalogue[end:])
open(catalogue_path, "w").write(catalogue)
