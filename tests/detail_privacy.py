#!/usr/bin/env python3
"""A `detail` namespace is private to its folder (test headers.detail_private).

Every name declared in a namespace whose name ends in `detail` (detail, op_detail, cdo_detail, ...)
under include/devtensor/<folder>/ may be used, as `<...>detail::<name>`, only by headers of that
folder (the top-level headers are the folder `core`). What one folder offers another is public API:
documented, outside any detail namespace.

Usage: detail_privacy.py <include dir>     exit 0 clean, 1 with the violations listed
"""
import os
import re
import sys
from collections import defaultdict

DETAIL_BLOCK = re.compile(r"namespace ((?:\w+::)*(\w*detail)(?:::\w+)*) \{(.*?)\n\}  // namespace", re.S)
DECLARATIONS = [
    re.compile(r"(?:struct|class|using|enum class|enum|concept)\s+(\w+)"),
    re.compile(r"^\s*(?:inline |constexpr |static |constinit |DEVTENSOR_\w+ |\[\[\w+\]\] )*"
               r"[\w:<>,\s\*&]+?\b(\w+)\s*[\(\{=;]", re.M),
]
USE = re.compile(r"\b(\w*detail)::(\w+)")


def folder_of(root, path):
    relative = os.path.relpath(path, root)
    return relative.split("/")[0] if "/" in relative else "core"


def main(include_dir):
    root = os.path.join(include_dir, "devtensor")
    headers = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith((".hpp", ".cuh"))]
    texts = {h: open(h, encoding="utf-8").read() for h in headers}
    owners = defaultdict(set)  # (namespace, name) -> folders that declare it
    for header, text in texts.items():
        for block in DETAIL_BLOCK.finditer(text):
            for pattern in DECLARATIONS:
                for name in pattern.findall(block.group(3)):
                    owners[(block.group(2), name)].add(folder_of(root, header))
    violations = []
    for header, text in sorted(texts.items()):
        folder = folder_of(root, header)
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for namespace, name in USE.findall(line):
                declared = owners.get((namespace, name))
                if declared and folder not in declared:
                    violations.append(f"  devtensor/{os.path.relpath(header, root)}:{number}: {namespace}::{name} "
                                      f"is private to {', '.join(sorted(declared))}/")
    if violations:
        print("detail names used outside their folder:\n" + "\n".join(violations) +
              "\nMake what one folder offers another public (documented, outside `detail`), or move the code.")
        return 1
    print("detail namespaces: each private to its folder")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
