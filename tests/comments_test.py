#!/usr/bin/env python3
"""Checks that volley's source describes the code, not the documents it was planned from.

usage: comments_test.py SOURCE_DIR

Every source file under SOURCE_DIR (C, headers, Python, shell, CMake, .proto) is searched for
a citation of a planning document (seeds/NNN). Prints FILE:LINE: TEXT for each and exits 1 if
there is any, 0 otherwise; 2 on a usage error.
"""
import os
import re
import sys

CITATION = re.compile(r"\bseeds/\d+")
SUFFIXES = (".c", ".h", ".py", ".sh", ".proto", "CMakeLists.txt")
SKIP_DIRS = {".git", "build", ".venv", "__pycache__"}


def citations(source_dir):
    """Yields (path, line number, line) for each line citing a planning document."""
    me = os.path.abspath(__file__)
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            path = os.path.join(root, name)
            if not name.endswith(SUFFIXES) or os.path.abspath(path) == me:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if CITATION.search(line):
                        yield os.path.relpath(path, source_dir), number, line.strip()


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    found = list(citations(sys.argv[1]))
    for path, number, line in found:
        print(f"{path}:{number}: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
