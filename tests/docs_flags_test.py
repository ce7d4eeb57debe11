#!/usr/bin/env python3
"""Checks what README.md and docs/*.md show of volley against the program itself.

usage: docs_flags_test.py SRC_DIR BUILD_DIR

(a) Flags. Every `volley CMD ... --flag` and `PYTHON -m volley CMD ... --flag` the pages write,
in code blocks and in inline code, names a flag that CMD's --help names, in its usage lines or
as one of its entries: BUILD_DIR/volley's for a `volley CMD`, SRC_DIR/.venv/bin/python's
`-m volley CMD --help` for a Python one, and `-m volley learner --torch --help` for a learner
given --torch (the PyTorch learner, whose own lines call it `volley learner --torch`). A
command of a code block that is neither one of volley's nor one of its Python module's is
refused too. A command ends at the end of its line (a trailing backslash, or an indented `[...`
line under a usage line, goes on), at a spaced |, at ; or &, or at a # comment.

(b) Sample output. A code block right under a line `<!-- output: SOURCE -->` shows what the
program prints: each of its lines (but a lone `...`, lines left out) must have the shape of a
line it printed in SOURCE, from short real runs made here. A line's shape is its text with
every number one token (a sign, a decimal part, a K/M/G suffix, a byte unit and a time of day's
colons included), every run directory one name (runs/NAME) and runs of spaces one space; the
whole line must match, so a word, a column or a field gone or added fails. A block of a whole
frame (WHOLE: volley top's) without a `...` line must also hold a line of every shape the real
frame has, so that a part the program added to the view is not left out. The runs, side by
side on free loopback ports, each a `volley up` in a scratch directory:
  A  cartpole, --until seconds --max-seconds 15 --max-lag 1000: a run without drops (however
     busy the machine, no segment is too old), long enough for the learner's 10 s progress
     line; `volley top --once` of it after its first progress lines;
  B  the same with --batch 2 --max-lag 1, whose learner drops most of what arrives as too old;
     beside it an actor of --horizon 32 (its spec refused) and an actor of a second policy
     (corridor, no learner), then `volley top --once`;
  C  cartpole until solved (--max-seconds 120 only as a hang guard).
SOURCES names what each source holds. Exits 0 when every check holds, 1 otherwise.
"""
import difflib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from readme_test import free_port  # tests/, this file's folder, is on sys.path

# What each output source is: files of the runs' scratch directory.
SOURCES = {
    "up": ["A.out", "C.out"],                      # volley up's terminal, no drops; solved
    "up-drops": ["B.out"],                         # volley up's terminal, a learner dropping
    "top": ["A.top"],                              # volley top --once, no drops
    "top-drops": ["B.top"],                        # ... learner drops, a refused spec, 2 policies
    "learner-log": ["runs/A/logs/learner.log", "runs/C/logs/learner.log"],
    "learner-log-drops": ["runs/B/logs/learner.log"],
    "broker-log": ["runs/A/logs/broker.log", "runs/C/logs/broker.log"],
    "broker-log-drops": ["runs/B/logs/broker.log"],
}
# Sources that are one whole frame: a block of one without a `...` line must show every line
# of the frame (by shape), so that a block or a column the program added is not left out.
WHOLE = {"top", "top-drops"}
MARKER = re.compile(r"^<!-- output: ([\w-]+) -->\s*$")
FENCE = re.compile(r"^```")
PROGRESS = re.compile(r"^\d\d:\d\d:\d\d steps=")
HANG_S = 120  # a hang guard for each wait, far above a run's normal time; never asserted


def pages(src):
    """README.md, then docs/*.md by name."""
    return ["README.md"] + sorted(str(f.relative_to(src)) for f in (src / "docs").glob("*.md"))


def fenced(text):
    """[(first line number, info string, [lines])] of a page's fenced blocks, and the page with
    those blocks blanked (so that line numbers hold)."""
    out, prose, cur = [], [], None
    for i, line in enumerate(text.splitlines(), 1):
        if cur is None and FENCE.match(line):
            cur = (i + 1, line[3:].strip(), [])
            prose.append("")
        elif cur is not None and line.startswith("```"):
            out.append(cur)
            cur = None
            prose.append("")
        elif cur is not None:
            cur[2].append(line)
            prose.append("")
        else:
            prose.append(line)
    return out, prose


def help_entries(text):
    """The flags a --help text names: those of its usage (up to its first blank line) and those
    it lists as entries, its lines "  --name VALUE  what it does" (or "  -h, --help", or
    argparse's "  --actor-id ID, --id ID"), from the left column only."""
    flags = set(re.findall(r"--[a-z][a-z0-9-]*", text.split("\n\n")[0]))  # the usage lines
    for line in text.splitlines():
        if re.match(r"^  (-\w, )?--[a-z]", line):
            left = re.split(r"\s{2,}", line.strip())[0]
            flags.update(re.findall(r"--[a-z][a-z0-9-]*", left))
    return flags


def run_help(argv, cwd, env=None):
    """What argv (a --help) prints; a failure that ends the test if it exits other than 0."""
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG_S)
    if p.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(argv)} exited {p.returncode}: {p.stderr[-500:]}")
    return p.stdout


class Helps:
    """The commands of volley and of its Python module, and the flags each one's --help names
    (help_entries), asked for once."""

    def __init__(self, src, build):
        self.src, self.volley = src, str(build / "volley")
        self.python = os.environ.get("VOLLEY_PYTHON") or str(src / ".venv" / "bin" / "python")
        if not os.access(self.python, os.X_OK):
            raise SystemExit(f"FAIL no Python with volley's package at {self.python} (make it "
                             f"with compose/setup.sh, or set VOLLEY_PYTHON)")
        self.env = dict(os.environ, VOLLEY_LIB=str(build / "libvolley.so"),
                        VOLLEY_BIN=self.volley, PYTHONDONTWRITEBYTECODE="1")
        self.cache = {}
        top = run_help([self.volley, "--help"], src)
        self.c_cmds = set(re.findall(r"^  ([a-z]+)  ", top.split("commands:")[1], re.M))
        py = run_help([self.python, "-m", "volley", "--help"], src, self.env)
        self.py_cmds = set(re.findall(r"^  ([a-z]+)\b", py, re.M))
        if not self.c_cmds or not self.py_cmds:
            raise SystemExit("FAIL no command list in volley --help or python -m volley --help")

    def entries(self, python, cmd, torch):
        key = (python, cmd, torch)
        if key not in self.cache:
            argv = ([self.python, "-m", "volley"] if python or torch else [self.volley]) + [cmd]
            argv += ["--torch", "--help"] if torch else ["--help"]
            self.cache[key] = help_entries(run_help(argv, self.src, self.env))
        return self.cache[key]


# `volley CMD` (build/volley, bin/volley, ./volley) or `PYTHON -m volley CMD`, CMD a word that
# ends where the command's words go on (not `volley up:`, a program's own line).
COMMAND = re.compile(r"(?:(?<![\w/.-])(?:[\w./-]*/)?volley"
                     r"|(?P<py>(?<![\w/.-])(?:[\w./-]*/)?"
                     r"(?:python3?(?:\.\d+)?|PYTHON|\$\{?\w*PYTHON\}?) +-m +volley))"
                     r" +(?P<cmd>[a-z][\w-]*)(?=\s|$)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# A pipe (spaced: a bare | is a usage line's "or"), ;, & (not 2>&1's) or a comment ends one.
END = re.compile(r"\s\|\s|\|\||;|(?<![>&])&(?!>)|(?:^|\s)#")


def commands_in(text):
    """[(python, cmd, [flags], offset, extent text)] of each volley command in a piece of text."""
    out = []
    matches = list(COMMAND.finditer(text))
    for k, m in enumerate(matches):
        stop = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        rest = text[m.end():stop]
        e = END.search(rest)
        rest = rest[:e.start()] if e else rest
        out.append((bool(m.group("py")), m.group("cmd"), FLAG.findall(rest), m.start(),
                    text[m.start():m.end()] + rest))
    return out


def logical_lines(lines, first):
    """A code block's lines as commands read them: a line ending in a backslash, or a usage line
    followed by indented `[...` lines, goes on. [(line number, text)]."""
    out = []
    for i, line in enumerate(lines):
        if out and (out[-1][1].endswith("\\") or re.match(r"^\s+\[", line)):
            out[-1] = (out[-1][0], out[-1][1].rstrip("\\") + " " + line.strip())
        else:
            out.append((first + i, line))
    return out


def inline_spans(prose):
    """[(line number, text)] of the inline code of a page's prose (a span may cross lines)."""
    out, para, start = [], [], 0
    for i, line in enumerate(prose + [""], 1):
        if line.strip():
            if not para:
                start = i
            para.append(line)
            continue
        text = "\n".join(para)
        for m in re.finditer(r"`([^`]+)`", text):
            out.append((start + text.count("\n", 0, m.start()), m.group(1).replace("\n", " ")))
        para = []
    return out


def check_flags(src, helps):
    """(['FILE:LINE: why'] for each flag a page gives a command that its --help does not name,
    and each unknown command of a code block; how many flags were checked)."""
    problems, checked = [], 0
    for name in pages(src):
        blocks, prose = fenced((src / name).read_text())
        pieces = [(n, re.sub(r"(?:^|\s)#.*", "", t), True)
                  for first, _, lines in blocks for n, t in logical_lines(lines, first)]
        pieces += [(n, t, False) for n, t in inline_spans(prose)]
        for line, text, in_block in pieces:
            for python, cmd, flags, _, said in commands_in(text):
                known = helps.py_cmds if python else helps.c_cmds
                if cmd not in known:
                    if in_block:
                        problems.append(f"{name}:{line}: `{said.strip()}`: '{cmd}' is not a "
                                        f"command of {'python -m volley' if python else 'volley'}")
                    continue
                torch = cmd == "learner" and "--torch" in flags
                entries = helps.entries(python, cmd, torch)
                for flag in flags:
                    checked += 1
                    if flag in entries or (torch and flag == "--torch"):
                        continue
                    who = ("python -m volley " if python or torch else "volley ") + cmd
                    problems.append(f"{name}:{line}: `{said.strip()}`: {flag} is not named by "
                                    f"`{who}{' --torch' if torch else ''} --help`")
    return problems, checked


def shape(line):
    """A line's shape: numbers, run directories and runs of spaces each one token."""
    s = re.sub(r"\bruns/[^\s,;:)]+", "runs/NAME", line.strip())
    s = re.sub(r"(?<![\w.])-?\d+(?:\.\d+)*(?:e[-+]?\d+)?[KMG]?(?![\w])", "#", s)
    s = re.sub(r"(?<=\w)\d+", "#", s)  # f32, v344, u2
    s = re.sub(r"# (?:B|KiB|MiB|GiB)\b", "#B", s)
    return re.sub(r"\s+", " ", s)


def output_blocks(src):
    """[(file, line, source, [lines])] of the blocks marked as sample output; problems."""
    out, problems = [], []
    for name in pages(src):
        lines = (src / name).read_text().splitlines()
        for i, line in enumerate(lines):
            m = MARKER.match(line)
            if not m:
                continue
            if m.group(1) not in SOURCES:
                problems.append(f"{name}:{i + 1}: output source '{m.group(1)}' is none of "
                                f"{', '.join(SOURCES)}")
                continue
            if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
                problems.append(f"{name}:{i + 1}: an output marker not right above a ``` block")
                continue
            body, j = [], i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                body.append((j + 1, lines[j]))
                j += 1
            out.append((name, i + 1, m.group(1), body))
    return out, problems


def wait_for(path, pattern, proc, what):
    """Waits until a line of path matches pattern; fails if proc ends first or HANG_S pass."""
    end = time.monotonic() + HANG_S
    while time.monotonic() < end:
        if path.exists() and any(pattern.search(x) for x in path.read_text().splitlines()):
            return
        if proc.poll() is not None:
            raise SystemExit(f"FAIL {what} ended (exit {proc.returncode}) before printing "
                             f"'{pattern.pattern}': {path.read_text()[-1500:]}")
        time.sleep(0.1)
    raise SystemExit(f"FAIL {what}: no '{pattern.pattern}' within {HANG_S} s")


def top_once(volley, port, root, name, ready):
    """Keeps the first `volley top --once` frame of run name for which ready(frame) holds (the
    last one after HANG_S: its lines are then checked as they are)."""
    end = time.monotonic() + HANG_S
    while True:
        p = subprocess.run([volley, "top", "--broker", f"127.0.0.1:{port}", "--once"], cwd=root,
                           capture_output=True, text=True, timeout=HANG_S)
        if p.returncode != 0:
            raise SystemExit(f"FAIL volley top --once of run {name} exited {p.returncode}: "
                             f"{p.stderr[-800:]}")
        if ready(p.stdout) or time.monotonic() > end:
            break
        time.sleep(0.5)
    (root / f"{name}.top").write_text(p.stdout)


def make_outputs(build, root):
    """Runs A, B and C (the module's docstring) in root, leaving SOURCES' files there."""
    volley = str(build / "volley")
    ports = []
    for _ in range(3):
        ports.append(free_port(ports))
    runs = {
        "A": ["--until", "seconds", "--max-seconds", "15", "--max-lag", "1000"],
        "B": ["--until", "seconds", "--max-seconds", "15", "--batch", "2", "--max-lag", "1"],
        "C": ["--max-seconds", "120"],
    }
    procs = {}
    try:
        for (name, args), port in zip(runs.items(), ports):
            with open(root / f"{name}.out", "w") as out:
                procs[name] = subprocess.Popen(
                    [volley, "up", "--name", name, "--port", str(port)] + args, cwd=root,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        port = dict(zip(runs, ports))
        for name in ("A", "B"):
            wait_for(root / f"{name}.out", PROGRESS, procs[name], f"volley up (run {name})")
        broker = f"127.0.0.1:{port['B']}"
        refused = subprocess.run([volley, "actor", "--broker", broker, "--horizon", "32",
                                  "--envs", "1", "--id", "77"], cwd=root, capture_output=True,
                                 text=True, timeout=HANG_S)
        if refused.returncode != 2:
            raise SystemExit(f"FAIL an actor of --horizon 32 beside run B exited "
                             f"{refused.returncode}, not 2: {refused.stderr[-800:]}")
        with open(root / "corridor.out", "w") as out:
            procs["corridor"] = subprocess.Popen(
                [volley, "actor", "--broker", broker, "--env", str(build / "libvl_corridor.so"),
                 "--policy", "corridor", "--envs", "1", "--id", "78"], cwd=root, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(2)  # a few progress lines in
        # A's frame once its learner's stats and both actors' beats are in; B's once the corridor
        # actor has declared its policy and the learner's drops are booked
        top_once(volley, port["A"], root, "A",
                 lambda t: "\n  training " in t and re.search(r"\n +2 default ", t))
        top_once(volley, port["B"], root, "B",
                 lambda t: "\n  corridor " in t and "learner dropped" in t)
        procs["corridor"].send_signal(signal.SIGINT)
        for name in ("A", "B", "C"):
            rc = procs[name].wait(timeout=HANG_S + 30)
            if rc != 0:
                raise SystemExit(f"FAIL volley up (run {name} {' '.join(runs[name])}) exited {rc}: "
                                 f"{(root / f'{name}.out').read_text()[-1500:]}")
        procs["corridor"].wait(timeout=HANG_S)
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def check_outputs(blocks, root):
    """['FILE:LINE: why'] for each documented output line no real line of its source shapes."""
    problems, checked = [], 0
    for name, marker_line, source, body in blocks:
        real = []
        for f in SOURCES[source]:
            real += (root / f).read_text().splitlines()
        shapes = {shape(x) for x in real if x.strip()}
        for line, text in body:
            if not text.strip() or text.strip() == "...":
                continue
            checked += 1
            if shape(text) not in shapes:
                near = max(real, default="", key=lambda x: difflib.SequenceMatcher(
                    None, shape(x), shape(text)).ratio())
                problems.append(f"{name}:{line}: no line of {source} has the shape of\n"
                                f"      doc:  {text.strip()}\n      real: {near.strip()}\n"
                                f"      (doc shape:  {shape(text)}\n       real shape: "
                                f"{shape(near)})")
        if source in WHOLE and not any(t.strip() == "..." for _, t in body):
            shown = {shape(t) for _, t in body if t.strip()}
            for x in real:
                if x.strip() and shape(x) not in shown:
                    problems.append(f"{name}:{marker_line}: the {source} frame shown has no line "
                                    f"of the shape of the real frame's\n      real: {x.strip()}\n"
                                    f"      (shape: {shape(x)}; or mark lines left out with ...)")
    return problems, checked


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src, build = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    flags = {}

    def s_flags():
        try:
            flags["problems"], flags["n"] = check_flags(src, Helps(src, build))
        except SystemExit as e:  # a --help that failed: one problem
            flags["problems"], flags["n"] = [str(e).replace("FAIL ", "", 1)], 0

    # the --help runs of (a) go on while the runs of (b) take their wall-clock time
    asking = threading.Thread(target=s_flags)
    asking.start()
    blocks, problems = output_blocks(src)
    n_lines = 0
    try:
        if blocks:
            with tempfile.TemporaryDirectory(prefix="docs_flags_") as tmp:
                root = Path(tmp)
                start = time.monotonic()
                make_outputs(build, root)
                print(f"runs A, B, C and their views made in {time.monotonic() - start:.0f} s",
                      flush=True)
                more, n_lines = check_outputs(blocks, root)
                problems += more
    finally:
        asking.join()
    for p in flags["problems"]:
        print(f"FAIL {p}", flush=True)
    print(f"{'FAIL' if flags['problems'] else 'PASS'} flags: {flags['n']} flags of the docs' "
          f"commands checked against their --help, {len(flags['problems'])} problems", flush=True)
    for p in problems:
        print(f"FAIL {p}", flush=True)
    print(f"{'FAIL' if problems else 'PASS'} output: {n_lines} lines of {len(blocks)} sample "
          f"output blocks checked against real runs, {len(problems)} problems", flush=True)
    if not blocks:
        print("FAIL no block is marked <!-- output: SOURCE -->: nothing of the docs' output is "
              "checked", flush=True)
        return 1
    return 1 if flags["problems"] or problems else 0

if __name__ == "__main__":
    sys.exit(main())
