#!/usr/bin/env python3
"""Fails when a posenc header includes one from a folder above its own.

    check_layers.py INCLUDE_DIR     (INCLUDE_DIR/posenc holds the headers)

The folders depend one way, in this order; a header may include headers of its own folder and of
the folders before it. The headers directly in posenc/ are the base (errors, tensors, random
numbers, threads, the parameter table); transformer.hpp, the umbrella, may include everything and
nothing includes it. A folder missing from the order is an error too, so a new folder is placed
on purpose.
"""
import re
import sys
from pathlib import Path

ORDER = ["", "kernels", "data", "encodings", "model", "io", "train", "distributed", "study"]
UMBRELLA = "transformer.hpp"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]posenc/([^">]+)[">]', re.M)


def folder_of(relative):
    parts = Path(relative).parts
    return "" if len(parts) == 1 else parts[0]


def main():
    root = Path(sys.argv[1]) / "posenc"
    problems = []
    for header in sorted(root.rglob("*.hpp")):
        relative = header.relative_to(root).as_posix()
        folder = folder_of(relative)
        if folder not in ORDER:
            problems.append(f"{relative}: folder '{folder}' has no place in the layer order {ORDER} (tests/check_layers.py)")
            continue
        for target in INCLUDE.findall(header.read_text(encoding="utf-8")):
            if target == UMBRELLA:
                problems.append(f"{relative} includes the umbrella header {UMBRELLA}")
                continue
            if relative == UMBRELLA:
                continue
            target_folder = folder_of(target)
            if target_folder not in ORDER:
                problems.append(f"{relative} includes {target}, from a folder outside the layer order")
            elif ORDER.index(target_folder) > ORDER.index(folder):
                problems.append(f"{relative} includes {target}: '{target_folder or 'posenc/'}' is above "
                                f"'{folder or 'posenc/'}' in the order {' -> '.join(f or 'posenc/' for f in ORDER)}")
    for p in problems:
        print(p)
    print(f"check_layers: {len(problems)} upward include(s)" if problems else "check_layers: every include points down")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
