#!/usr/bin/env python3
"""Finds policy lists typed by hand: a string literal (C++, Python) or a shell `for … in` line of the
sources and tests that lists three or more positional encodings in a row. Such a list goes stale when a
policy is added; the registry (encodings/all.hpp: AllPolicies, RotaryPolicies, policy_names,
rotary_policy_names) or `shakespeare --list-posenc` gives it instead.

check_policy_lists.py ROOT    (the repository; exits 1 listing each line found)
"""
import re
import sys
from pathlib import Path

# the policies' names as their headers declare them
NAME = re.compile(r'(?:std::string_view name = |Basic\w+<)"([a-z][a-z0-9-]*)"')
# a string literal: C++/Python double- or single-quoted (not spanning lines)
LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
SHELL_LOOP = re.compile(r"^\s*for \w+ in (.*?);? do")
# files that define or are the registry, and the PyTorch twin, which implements each policy
EXEMPT = {"include/posenc/encodings/all.hpp", "tools/posenc_torch.py"}


def policy_names(root):
    names = set()
    for header in (root / "include/posenc/encodings").glob("*.hpp"):
        names.update(NAME.findall(header.read_text()))
    return names


def listed(text, names):
    """Whether `text` lists three or more policies in a row, joined as a list is (", ", " ", " and "),
    rather than naming them in a table or a ranking (" | ", " < "), which a design's variants fill."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    name = rf"(?<![\w-])(?:{alternatives})(?![\w-])"
    return re.search(rf"{name}(?:(?:,? and |, | ){name}){{2,}}", text) is not None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    names = policy_names(root)
    if len(names) < 3:
        sys.exit(f"check_policy_lists: found only {sorted(names)} in include/posenc/encodings")
    found = []
    files = [p for d in ("include", "examples", "tests", "tools", "scripts", "benchmarks")
             for p in (root / d).rglob("*") if p.suffix in (".hpp", ".cpp", ".py", ".sh")]
    for path in sorted(files):
        relative = path.relative_to(root).as_posix()
        if relative in EXEMPT or relative.startswith("include/posenc/encodings/"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith(("//", "#")):
                continue  # a comment may give examples
            pieces = LITERAL.findall(line)
            loop = SHELL_LOOP.match(line) if path.suffix == ".sh" else None
            if loop:
                pieces.append(loop.group(1))
            for piece in pieces:
                if listed(piece, names):
                    found.append(f"{relative}:{number}: {line.strip()}")
                    break
    for f in found:
        print(f)
    print(f"check_policy_lists: {len(found)} hand-typed list(s) of three or more policies")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
