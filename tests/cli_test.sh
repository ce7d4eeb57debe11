#!/usr/bin/env bash
# Every command explains itself with --help, and refuses bad input with a
# clear message and exit code 2 instead of starting anything.
. "$(dirname "$0")/lib.sh"

"$VOLLEY" --help | grep -q "usage: volley <command>" || fail "volley --help"
for cmd in up broker learner actor replay top ctl; do
    "$VOLLEY" $cmd --help > "$TMP/help.txt" || fail "volley $cmd --help exits non-zero"
    grep -q "usage: volley $cmd" "$TMP/help.txt" || fail "volley $cmd --help has no usage line"
done
"$VOLLEY" actor --seed 4611686018427387904 --help > /dev/null || fail "actor refuses a large seed"
"$VOLLEY" learner --seed 4611686018427387904 --help > /dev/null || fail "learner refuses a large seed"
pass "every command has --help"

expect_refusal() {  # $1: message pattern, rest: the command line
    local pattern=$1; shift
    "$VOLLEY" "$@" > "$TMP/out.txt" 2>&1
    local rc=$?
    [ $rc -eq 2 ] || fail "'volley $*' exited $rc, wanted 2"
    grep -qE -e "$pattern" "$TMP/out.txt" || fail "'volley $*' said: $(cat "$TMP/out.txt")"
}
expect_refusal "unknown command 'nope'" nope
expect_refusal "--broker HOST\[:PORT\] is required" actor
expect_refusal "--broker HOST\[:PORT\] is required" learner
expect_refusal "--envs wants a whole number" actor --broker 127.0.0.1 --envs 0
expect_refusal "--lr wants a number" learner --broker 127.0.0.1 --lr nan
expect_refusal "--port wants a whole number" broker --port 99999
expect_refusal "unknown --env 'mars'" up --env mars
expect_refusal "--policy wants" actor --broker 127.0.0.1 --policy '~stats'
expect_refusal "--broker port wants" actor --broker 127.0.0.1:notaport
expect_refusal "--capacity .* must be at least 2 x --batch" learner --broker 127.0.0.1 --batch 40 --capacity 64
expect_refusal "which recording" replay
expect_refusal "one recording at a time" replay a.vlrec b.vlrec
expect_refusal "--pace wants fast or recorded" replay a.vlrec --pace slow
expect_refusal "--checkpoint" replay a.vlrec --checkpoint /tmp
expect_refusal "--record-flush wants always, everysec or never" broker --record-flush sometimes
expect_refusal "--max-lag wants a whole number" broker --max-lag -1
expect_refusal "--policies: ' b' is not a policy id" keygen "$TMP/keys" --learners 1 --policies "a, b"
[ ! -e "$TMP/keys" ] || fail "a refused keygen wrote keys"
# getopt takes an abbreviation of --config; so does the reading of its file (a run that
# did not read it would be a short one).
printf 'actors = 1\nlearning-rate = 0.1\n' > "$TMP/abbrev.ini"
for conf in "--conf $TMP/abbrev.ini" "--conf=$TMP/abbrev.ini"; do
    # shellcheck disable=SC2086
    expect_refusal "abbrev.ini:2: unknown key 'learning-rate'" up $conf --max-steps 64 --runs "$TMP/runs"
done
pass "bad flags are refused with a reason and exit 2"
echo "2 passed, 0 failed"
