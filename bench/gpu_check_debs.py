#!/usr/bin/python3
"""gpu_check_debs: the Debian packages bench/gpu_check.sh carries to a machine
with no package registry, printed one a line as `main NAME` or `base NAME`.

main: the -dev packages volley's CMake asks for (pkg-config modules libzmq,
libczmq, libprotobuf-c, liblz4; oneDNN; protoc-c), every package their
Depends reach (the -dev packages named in the .pc files' Requires.private
included: pkg-config wants their .pc files for --cflags, CMake wants the
include folders those name), and pkg-config itself.

base: libraries volley's libraries link that any Python 3.12 / CUDA image
already has (libsystemd, liblzma, libzstd, libgcrypt...). They are carried
but used only for a soname the machine lacks (gpu_check.sh links just those).

Left out: libc6, libstdc++6, libgcc-s1 and the C toolchain's own packages
(a machine with nvcc has them and a copy could not replace them), and ICU,
which libxml2-dev (reached through libnorm-dev's norm.pc) needs only for a
static link of libxml2 (nothing of volley links libxml2), and libssl3, which
krb5's packages name but none of the libraries volley loads links.

usage: python3 bench/gpu_check_debs.py
"""
import subprocess
import sys

ROOTS = ["libzmq3-dev", "libczmq-dev", "libprotobuf-c-dev", "protobuf-c-compiler", "liblz4-dev",
         "libdnnl-dev", "pkgconf"]
BASE = {"libsystemd0", "libcap2", "libgcrypt20", "libgpg-error0", "liblzma5", "libzstd1",
        "libuuid1", "zlib1g", "libgomp1"}
SKIP = {"libc6", "libc6-dev", "libc-dev-bin", "linux-libc-dev", "libcrypt1", "libcrypt-dev",
        "libnsl-dev", "libnsl2", "libtirpc-dev", "libtirpc3", "libtirpc-common", "rpcsvc-proto",
        "libgcc-s1", "gcc-12-base", "libstdc++6", "libelogind0", "libicu72", "libicu-dev",
        "icu-devtools", "libxml2", "libsqlite3-0", "libssl3", "debconf", "dpkg", "perl-base"}


def depends(pkg):
    """pkg's Depends (and Pre-Depends), the first of each alternative, virtual ones left out."""
    out = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests",
                          "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", pkg],
                         capture_output=True, text=True, check=True).stdout
    deps, alt = [], False
    for line in out.splitlines()[1:]:
        s = line.strip()
        if not (s.startswith("Depends:") or s.startswith("|Depends:")
                or s.startswith("PreDepends:") or s.startswith("|PreDepends:")):
            continue
        name = s.split(":", 1)[1].strip()
        if not alt and not name.startswith("<"):
            deps.append(name.split(":")[0])
        alt = s.startswith("|")
    return deps


def main():
    seen, todo, out = set(), ROOTS + sorted(BASE), []
    while todo:
        p = todo.pop()
        if p in seen or p in SKIP:
            continue
        seen.add(p)
        out.append(("base" if p in BASE else "main", p))
        if p not in BASE:  # a base library's own needs are the machine's
            todo.extend(depends(p))
    for kind, p in sorted(out):
        print(kind, p)


if __name__ == "__main__":
    sys.exit(main())
