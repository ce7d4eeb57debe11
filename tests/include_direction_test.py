#!/usr/bin/env python3
"""Checks that dependencies between volley's folders run one way.

usage: include_direction_test.py SOURCE_DIR

Every #include "..." in a .c or .h file under SOURCE_DIR is resolved to the file it names,
and the folder of that file must be the including file's own folder or one listed in an
earlier layer below. Folders of one layer may not include each other. A test file
(*_test.c) may also include tests/vl_test.h. Prints one line per offending include
(FILE:LINE: FOLDER includes TARGET from FOLDER) and exits 1 if there is any, 0 otherwise;
2 on a usage error or an include it cannot resolve.
"""
import os
import re
import sys

# Lower layers first. A folder may include from folders of lower layers only.
LAYERS = [
    ["include"],  # the public headers: include only one another
    ["common"],  # logging, options, processes, sockets, files
    ["messages"],  # the wire contract and its codecs (and the protobuf-c code generated from it)
    ["envs", "models", "store"],  # environments; networks and optimizer; buffers, V-trace, checkpoints
    ["actors", "broker", "learner"],  # the three processes
    ["cli"],  # the command-line program
    ["bench", "tests"],  # programs that measure or test all of the above
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
GENERATED = {"volley.pb-c.h": "messages", "tfevents.pb-c.h": "messages"}
SKIP_DIRS = {".git", "build", "bindings"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(rel):
    return rel.split("/", 1)[0] if "/" in rel else "."


def resolve(root, rel, name):
    """The path (relative to root) of the file that #include "name" in rel names, or None."""
    for cand in (os.path.join(os.path.dirname(rel), name), name, os.path.join("include", name)):
        cand = os.path.normpath(cand)
        for made in (cand, cand + ".in"):  # volley/volley.h is configured from volley.h.in
            if os.path.isfile(os.path.join(root, made)):
                return made
    return None


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not d.startswith(("build", ".")))
        for f in sorted(filenames):
            if f.endswith((".c", ".h", ".h.in")):
                yield os.path.relpath(os.path.join(dirpath, f), root)


def check(root):
    bad, unresolved, seen = [], [], 0
    for rel in sources(root):
        src = folder_of(rel)
        if src not in RANK:
            unresolved.append(f"{rel}: folder '{src}' is not in the layers of {sys.argv[0]}")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                seen += 1
                name = m.group(1)
                if name in GENERATED:
                    target, dst = name, GENERATED[name]
                else:
                    target = resolve(root, rel, name)
                    if target is None:
                        unresolved.append(f"{rel}:{lineno}: cannot find \"{name}\"")
                        continue
                    dst = folder_of(target)
                if dst == src:
                    continue
                if rel.endswith("_test.c") and target == "tests/vl_test.h":
                    continue
                if dst not in RANK or RANK[dst] >= RANK[src]:
                    bad.append(f"{rel}:{lineno}: {src}/ includes {target} from {dst}/,"
                               f" which may not be included from {src}/")
    return bad, unresolved, seen


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: include_direction_test.py SOURCE_DIR", file=sys.stderr)
        return 2
    bad, unresolved, seen = check(sys.argv[1])
    for line in unresolved + bad:
        print(line)
    if unresolved:
        return 2
    if bad:
        print(f"{len(bad)} include(s) against the folders' direction")
        return 1
    if seen == 0:
        print("no #include found: wrong SOURCE_DIR?")
        return 2
    print(f"ok: {seen} includes, all in the folders' direction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
