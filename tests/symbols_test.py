#!/usr/bin/env python3
"""Checks that libvolley.so exports exactly what its installed headers declare.

usage: symbols_test.py CC LIBVOLLEY.so SOURCE_DIR BUILD_DIR HEADER...

HEADER... are the installed public headers (VL_PUBLIC_HEADERS in the root CMakeLists.txt).
Each is run through the preprocessor (CC -E) and the functions and objects it declares at
file scope are collected; `nm -D --defined-only` of the library must name exactly those, no
more and no fewer. Every header in SOURCE_DIR/include/volley must be among HEADER... (a public
header left out of the install would declare what nobody can include). And the library, its
debug sections stripped, holds neither SOURCE_DIR nor BUILD_DIR: nothing of the machine that
built it. Prints one line per difference and exits 1 if there is any, 0 otherwise.
"""
import os
import re
import subprocess
import sys
import tempfile

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ATTRIBUTE = re.compile(r"__attribute__\s*\(\(.*?\)\)")
SKIP_FIRST = {"typedef", "enum", "struct", "union"}


def own_text(cpp_out, header):
    """The preprocessed text that came from header itself (line markers say which file)."""
    keep, out = False, []
    real = os.path.realpath(header)
    for line in cpp_out.splitlines():
        m = re.match(r'^# \d+ "([^"]+)"', line)
        if m:
            keep = os.path.realpath(m.group(1)) == real
            continue
        if keep:
            out.append(line)
    return "\n".join(out)


def top_level_statements(text):
    """The statements at file scope (brace depth 0), each ended by ';'."""
    depth, cur, out = 0, [], []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            if ch == ";":
                out.append(" ".join("".join(cur).split()))
                cur = []
            else:
                cur.append(ch)
    return out


def declared_name(stmt):
    """The function or object a file-scope statement declares, or None (types, enums)."""
    stmt = ATTRIBUTE.sub(" ", stmt).strip()
    words = IDENT.findall(stmt)
    if not words or words[0] in SKIP_FIRST:
        return None
    if "(" in stmt:  # a function: the name is the identifier just before the first '('
        names = IDENT.findall(stmt[: stmt.index("(")])
        return names[-1] if names else None
    if words[0] == "extern":  # an object the library defines
        return words[-1]
    return None


def declarations(cc, headers, include_dirs):
    names = {}
    for h in headers:
        args = [cc, "-std=c11", "-E", "-x", "c", h] + [f"-I{d}" for d in include_dirs]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"symbols_test: {cc} -E {h} failed: {r.stderr.strip()[:300]}")
        for stmt in top_level_statements(own_text(r.stdout, h)):
            name = declared_name(stmt)
            if name:
                names[name] = os.path.basename(h)
    return names


def exported(lib):
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"symbols_test: nm -D {lib} failed: {r.stderr.strip()}")
    return {parts[2] for parts in (l.split() for l in r.stdout.splitlines()) if len(parts) == 3}


def machine_paths(lib, dirs):
    """The directories of dirs that the library, stripped of its debug sections, names."""
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "libvolley.so")
        subprocess.run(["objcopy", "--strip-debug", lib, stripped], check=True)
        data = open(stripped, "rb").read()
    return [d for d in dirs if d.encode() in data]


def main(argv):
    if len(argv) < 6:
        sys.exit(__doc__)
    cc, lib, src, build, headers = argv[1], argv[2], argv[3], argv[4], argv[5:]
    bad = []
    listed = {os.path.basename(h) for h in headers}
    for f in sorted(os.listdir(os.path.join(src, "include", "volley"))):
        name = f[:-3] if f.endswith(".h.in") else f
        if name.endswith(".h") and name not in listed:
            bad.append(f"include/volley/{f}: a public header that is not installed")
    declared = declarations(cc, headers, [os.path.join(build, "include"), os.path.join(src, "include")])
    exports = exported(lib)
    for name in sorted(exports - set(declared)):
        bad.append(f"{name}: exported by {os.path.basename(lib)}, declared in no public header")
    for name in sorted(set(declared) - exports):
        bad.append(f"{name}: declared in volley/{declared[name]}, not exported")
    for d in machine_paths(lib, sorted({os.path.realpath(src), os.path.realpath(build)})):
        bad.append(f"{os.path.basename(lib)} (debug sections stripped) names this machine's {d}")
    for line in bad:
        print(line)
    if bad:
        print(f"symbols_test: {len(bad)} difference(s)")
        return 1
    print(f"symbols_test: {len(exports)} symbols exported, exactly the {len(declared)} that "
          f"{len(headers)} public headers declare; no machine path in the library")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
