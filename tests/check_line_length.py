#!/usr/bin/env python3
"""Fails when a C++ line of posenc is longer than .clang-format's ColumnLimit (120 characters).

    check_line_length.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path


def main():
    root = Path(sys.argv[1])
    limit = int(re.search(r"^ColumnLimit:\s*(\d+)", (root / ".clang-format").read_text(), re.M).group(1))
    long_lines = []
    for folder in ("include", "examples", "tests", "bench"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".hpp", ".cpp") and "build" not in path.parts:
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if len(line) > limit:
                        long_lines.append(f"{path.relative_to(root)}:{number}: {len(line)} characters")
    for entry in long_lines:
        print(entry)
    print(f"check_line_length: {len(long_lines)} line(s) over {limit} characters (clang-format --lines=N:N fixes one)")
    return 1 if long_lines else 0


if __name__ == "__main__":
    sys.exit(main())
