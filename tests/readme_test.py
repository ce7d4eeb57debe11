"""Runs every command of the ```sh blocks of README.md and docs/*.md, so that they cannot drift.

usage: readme_test.py SRC_DIR BUILD_DIR [[FILE:]LINE | FILE.md | -FILE.md ...]   (where chosen
       blocks start, FILE relative to SRC_DIR, e.g. docs/envs.md:52, a bare LINE README.md's;
       FILE.md: every block of that page; -FILE.md: none of its blocks)

Every page of docs/ must be linked from README.md, and every relative link of README.md and
docs/*.md must name a file that exists (and a heading of it, after #): else the test fails.
A ```sh block with a second word (```sh learner-host, ```sh actor-host, ```sh slurm) is not run
here: it runs on the hosts it names, in the test ELSEWHERE names, which reads it from its page;
here its word must be one of those.
Each block runs as one bash script (set -e: a failing command fails the test) in a sandbox
directory that looks like the checkout after `bash compose/setup.sh`: build/ (the real build),
bindings/, bench/, compose/, messages/ and .venv/ are links to the checkout's, tests/ is a
copy (a command there may rewrite its files), and `volley` on PATH is build/volley (the
installed program the README's bare `volley` means). A command is changed only by these
rules, so that it runs here, in a bounded time, without touching the machine:
  - a block that talks to a broker without starting one gets one (and a learner) first;
  - addresses: the README's port 7600 and host 10.0.0.10 (or HOST) become 127.0.0.1 and a
    free port; a broker without --port gets it;
  - placeholders: N (an actor host's number) is 1; myenv.c is the ```c block above the
    command in the same file; --prefix /usr/local becomes a prefix in the sandbox
    (PKG_CONFIG_PATH names it, ldconfig only links it: -n), /etc/volley a directory in the
    sandbox;
  - no Docker engine runs here: `docker-compose ... up -d` and `... run --rm monitor` run as
    `docker-compose ... config -q`, which parses and checks the compose file and settings;
  - a block's lines are separate terminals: a broker, learner or actor not sent to the
    background with & is, unless it is the block's last command; a program that runs until
    stopped (top's live view, an actor) is stopped with SIGINT after 8 s (an example's actor:
    once its learner has ended) and must then exit 0 (`until_stopped`); every background
    program must still run at the end or have exited 0;
  - short budgets: `volley eval ... --render` plays one episode at 500 fps; the stall
    benchmark stops its learner 3 s, not 30; the C and Python benchmarks run in their own
    short modes (--quick; the checkpoint bench with 200 samples, 1 run), as ctest runs them; the examples' learners train until solved, as the README says;
  - `ctest --test-dir build ...` is this suite itself: it runs with -N (lists the tests),
    not recursively; `bash compose/setup.sh` runs for real on the checkout (its build is
    up to date when ctest runs, so it changes nothing there).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRELUDE = r'''
set -eo pipefail
set -m  # job control: background commands keep SIGINT (a Ctrl-C) instead of ignoring it
trap 'rc=$?; set +e; for j in $(jobs -p); do kill -TERM -- "-$j" 2>/dev/null; done; sleep 0.3
      for j in $(jobs -p); do kill -KILL -- "-$j" 2>/dev/null; done; exit $rc' EXIT
until_stopped() {  # SECS CMD...: runs CMD until SECS pass or another of the block's background
    local secs=$1; shift  # commands ends (a learner that solved), then Ctrl-C: wants exit 0
    local others pid t=0 rc=0
    others=$(jobs -p)
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [ "$t" -lt $((secs * 10)) ]; do
        for j in $others; do kill -0 "$j" 2>/dev/null || t=$((secs * 10)); done
        sleep 0.1
        t=$((t + 1))
    done
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || { echo "readme_test: '$*' exited $rc after SIGINT" >&2; return 1; }
}
'''

EPILOGUE = r'''
for j in $(jobs -p); do  # a background command has either ended well or still runs
    if ! kill -0 "$j" 2>/dev/null; then
        wait "$j" || { echo "readme_test: a background command exited $?" >&2; exit 1; }
    fi
done
'''


# A ```sh block with a second word runs elsewhere, on the hosts it names, by the test that reads
# it from its page (tests/lib.sh's doc_block); this test checks only that its word is one of these.
ELSEWHERE = {"learner-host": "tests/multihost_pixels_test.sh",
             "actor-host": "tests/multihost_pixels_test.sh",
             "slurm": "tests/slurm_multihost_test.sh"}


def blocks(readme):
    """[(line, language, text)] of every fenced block; language keeps a block's second word
    ("sh slurm")."""
    out, lang, start, buf = [], None, 0, []
    for i, line in enumerate(readme.splitlines(), 1):
        m = re.match(r"^```(\w*(?: [\w-]+)?)\s*$", line)
        if m and lang is None:
            lang, start, buf = m.group(1), i, []
        elif line.startswith("```") and lang is not None:
            out.append((start, lang, "\n".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
    return out


def sh_blocks_of(page):
    """[(line, text, c_before)] of a page's sh blocks, c_before the ```c block above it in the
    page (myenv.c), or None."""
    out, c_before = [], None
    for line, lang, text in blocks(page):
        if lang == "c":
            c_before = text
        elif lang == "sh":
            out.append((line, text, c_before))
    return out


def free_port(taken=()):
    """A base port below the ephemeral range with the four after it free (and none of taken's
    five)."""
    import random
    for _ in range(500):
        base = 20000 + random.randrange(2500) * 5
        if any(abs(base - t) < 5 for t in taken):
            continue
        try:
            for p in range(base, base + 5):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free port range")


SERVER = re.compile(r"(build/volley|\bvolley) +(broker|learner|actor)\b|"
                    r"custom_policy\.py +(learner|actor)\b|-m volley actor\b")
UNTIL_STOPPED = re.compile(r"(volley +top\b(?!.*--once))|(volley +actor\b)|"
                           r"(custom_policy\.py +actor\b)|(-m volley actor\b)")


def commands(text):
    """The block's commands, a continued line (trailing \\, or a `for ... done` loop) joined."""
    out, cur, depth = [], [], 0
    for line in text.splitlines():
        code = line.split(" #")[0].rstrip() if not line.lstrip().startswith("#") else ""
        if not code.strip():
            continue
        cur.append(code)
        depth += len(re.findall(r"\bdo\b", code)) - len(re.findall(r"\bdone\b", code))
        if depth == 0 and not code.endswith("\\"):
            out.append("\n".join(cur))
            cur = []
    if cur:
        out.append("\n".join(cur))
    return out


def rewrite(cmd, last, env):
    """cmd as the sandbox runs it (the rules in the module's docstring)."""
    port = env["PORT"]
    cmd = re.sub(r"\b(10\.0\.0\.10|127\.0\.0\.1):7600\b", f"127.0.0.1:{port}", cmd)
    cmd = re.sub(r"--broker (HOST|127\.0\.0\.1)(?=\s|$)", f"--broker 127.0.0.1:{port}", cmd)
    cmd = cmd.replace("--port 7600", f"--port {port}")
    cmd = re.sub(r"(volley +broker)(?![^&]*--port)", rf"\1 --port {port}", cmd)
    cmd = cmd.replace("/etc/volley", env["ETC"])
    cmd = cmd.replace("--prefix /usr/local", f"--prefix {env['PREFIX']}")
    cmd = re.sub(r"\bldconfig$", f"ldconfig -n {env['PREFIX']}/lib", cmd)
    cmd = re.sub(r"(docker-compose .*?) (up -d|run --rm \w+)$", r"\1 config -q", cmd)
    cmd = re.sub(r"\bctest --test-dir (\S+)[^&;|\n]*", r"ctest --test-dir \1 -N", cmd)
    cmd = re.sub(r"\bbash compose/setup\.sh", f"bash {env['SRC']}/compose/setup.sh", cmd)
    cmd = re.sub(r"(volley eval \S+ --render)\b.*$", r"\1 --fps 500 --episodes 1", cmd)
    cmd = re.sub(r"(bench/stall_bench\.sh \S+) \d+$", r"\1 3", cmd)
    # The benchmarks' own short modes: ctest's *_quick tests run the same programs, and a full
    # figure is a person's run, not the suite's.
    cmd = re.sub(r"(build/vl_checkpoint_bench)\b", r"\1 --samples 200 --runs 1", cmd)
    cmd = re.sub(r"(build/vl_(?!checkpoint)\w+_bench)\b", r"\1 --quick", cmd)
    cmd = re.sub(r"(bench/py_\w+_bench\.py)\b", r"\1 --quick", cmd)
    # One line may hold several commands: `a & b &`.
    parts = [p.strip() for p in re.split(r"(?<!&)&(?!&)", cmd)]
    bg = cmd.rstrip().endswith("&") or len(parts) > 1
    out = []
    for k, p in enumerate(x for x in parts if x):
        in_bg = bg and (k < len(parts) - 1 or cmd.rstrip().endswith("&"))
        if not in_bg and SERVER.search(p) and not last and "for " not in p:
            in_bg = True
        if not in_bg and UNTIL_STOPPED.search(p) and "for " not in p:
            p = f"until_stopped {600 if 'examples/' in p else 8} {p}"
        out.append(p + (" &" if in_bg else ""))
        if in_bg and re.search(r"volley +broker", p):
            out.append("sleep 1")  # the broker listens before the next command connects
    return "\n".join(out)


def script(text, env):
    cmds = commands(text)
    body = [rewrite(c, i == len(cmds) - 1, env) for i, c in enumerate(cmds)]
    if "--broker" in text and not re.search(r"volley +(broker|up)\b", text):
        port = env["PORT"]  # the broker (and learner) the block's commands talk to
        body.insert(0, f"build/volley broker --port {port} &\nsleep 1\n"
                       f"build/volley learner --broker 127.0.0.1:{port} &")
    return PRELUDE + "\n".join(body) + "\n" + EPILOGUE


def sandbox(src, build, root):
    for name in ("bindings", "bench", "compose", "messages", "include", ".venv"):
        if (src / name).exists():
            os.symlink(src / name, root / name)
    os.symlink(build, root / "build")
    shutil.copytree(src / "tests", root / "tests", symlinks=True)
    (root / "bin").mkdir()
    os.symlink(build / "volley", root / "bin" / "volley")
    (root / "etc").mkdir()


def kill_session(sid):
    """Ends every process of session sid (a block's programs, even those it left behind)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid:  # field 6 of stat: the session
                    os.kill(int(stat.parent.name), sig)
            except (OSError, ValueError, IndexError):
                pass
        time.sleep(0.3)


def run_block(name, text, c_before, env, root):
    """Runs one block (its script saved as root/name); returns (ok, seconds, output tail)."""
    if c_before is not None:
        (root / "myenv.c").write_text(c_before + "\n")
    code = script(text, env)
    (root / name).write_text(code)
    start = time.monotonic()
    p = subprocess.Popen(["bash", str(root / name)], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return False, time.monotonic() - start, "timed out after 900 s\n" + out[-3000:]
    finally:
        kill_session(p.pid)  # the block's background programs
    notes = "".join(line + "\n" for line in out.splitlines() if line.startswith("readme_test:"))
    return p.returncode == 0, time.monotonic() - start, out[-3000:] + notes


def pages(src):
    """README.md, then docs/*.md by name: the files whose sh blocks run."""
    return ["README.md"] + sorted(str(f.relative_to(src)) for f in (src / "docs").glob("*.md"))


def slug(heading):
    """The anchor a heading gets on GitHub: lower case, punctuation gone, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def link_problems(src, files):
    """['FILE:LINE: why'] for each docs page README.md does not link and each relative link
    (to a file, or to a heading of one after #) that leads nowhere."""
    problems, linked = [], set()
    for name in files:
        path, fence = src / name, False
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue  # https:, mailto:: not this checkout's to check
                file, _, anchor = target.partition("#")
                dest = (path.parent / file).resolve() if file else path.resolve()
                if not dest.is_file():
                    problems.append(f"{name}:{i}: link to {target}: no such file")
                    continue
                if name == "README.md":
                    linked.add(dest)
                heads = re.findall(r"^#+ (.*)$", dest.read_text(), re.M) if anchor else []
                if anchor and dest.suffix == ".md" and anchor not in {slug(h) for h in heads}:
                    problems.append(f"{name}:{i}: link to {target}: no such heading")
    for name in files[1:]:
        if (src / name).resolve() not in linked:
            problems.append(f"{name}:1: not linked from README.md")
    return problems


def chosen(args):
    """({(file, line)}, {file}, {file}) from the arguments: [FILE:]LINE (a bare LINE is
    README.md's), a page's every block as FILE.md, and -FILE.md for a page left out."""
    lines, pages_in, pages_out = set(), set(), set()
    for a in args:
        if a.startswith("-"):
            pages_out.add(a[1:])
        elif a.endswith(".md"):
            pages_in.add(a)
        else:
            file, _, line = a.rpartition(":")
            lines.add((file or "README.md", int(line)))
    return lines, pages_in, pages_out


def wanted(name, line, only, pages_in, pages_out):
    """Whether the block of page name at line runs, given chosen()'s sets."""
    if name in pages_out:
        return False
    if only or pages_in:
        return (name, line) in only or name in pages_in
    return True


def main():
    if len(sys.argv) < 3:
        print("\n".join(__doc__.splitlines()[2:4]), file=sys.stderr)
        return 2
    if os.environ.get("VOLLEY_README_TEST"):
        print("FAIL: readme_test started inside itself (a README command ran the test suite)")
        return 1
    os.environ["VOLLEY_README_TEST"] = "1"
    src, build = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    only, pages_in, pages_out = chosen(sys.argv[3:])
    files = pages(src)
    problems = link_problems(src, files)
    for p in problems:
        print(f"FAIL {p}", flush=True)
    sh_blocks = [(name, line, text, c_before) for name in files
                 for line, text, c_before in sh_blocks_of((src / name).read_text())]
    for name in files:
        for line, lang, _ in blocks((src / name).read_text()):
            word = lang.split(" ")[1] if lang.startswith("sh ") else None
            if word and word not in ELSEWHERE:
                problems.append(f"{name}:{line}: ```{lang}: no test runs a sh block of "
                                f"'{word}' (known: {', '.join(sorted(ELSEWHERE))})")
                print(f"FAIL {problems[-1]}", flush=True)
    missing = sorted(f"{f}:{n}" for f, n in only - {(f, n) for f, n, _, _ in sh_blocks})
    for m in missing:
        print(f"FAIL {m}: no ```sh block starts there", flush=True)
    root = Path(tempfile.mkdtemp(prefix="readme_test."))
    sandbox(src, build, root)
    failed, ran = [], 0
    try:
        for name, line, text, c_before in sh_blocks:
            if not wanted(name, line, only, pages_in, pages_out):
                continue
            env = dict(os.environ, PORT=str(free_port()), SRC=str(src), ETC=str(root / "etc"),
                       PREFIX=str(root / "prefix"), N="1",
                       PATH=f"{root / 'bin'}:{os.environ['PATH']}",
                       PKG_CONFIG_PATH=str(root / "prefix" / "lib" / "pkgconfig"))
            env.pop("VOLLEY_LIB", None)
            where = f"{name}:{line}"
            block_sh = f"block-{name.replace('/', '-')[:-3]}-{line}.sh"
            ok, secs, out = run_block(block_sh, text, c_before, env, root)
            ran += 1
            print(f"{'ok  ' if ok else 'FAIL'} {where} ({secs:.0f} s)", flush=True)
            if not ok:
                failed.append(where)
                print(f"--- {where}, as run ({root}/{block_sh}):\n{out}", flush=True)
    finally:
        if not failed and not os.environ.get("KEEP_TMP"):
            shutil.rmtree(root, ignore_errors=True)
    if not sh_blocks:
        print("FAIL: no ```sh block found in README.md or docs/*.md")
        return 1
    if failed or problems or missing:
        print(f"FAIL: {len(failed)} of {ran} sh blocks ({', '.join(failed) or 'none'}); "
              f"{len(problems)} link problems; {len(missing)} chosen blocks not found")
        return 1
    which = (f"the {ran} chosen sh blocks" if only or pages_in or pages_out
             else f"the {ran} sh blocks of {len(files)} pages")
    print(f"ok   every command of {which} ran; every docs page is linked from README.md and "
          f"every link leads somewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
