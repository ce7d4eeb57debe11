#!/usr/bin/env bash
# Checkpoints are never lost: a directory that holds one is refused
# without --resume (--force keeps the old one as .bak), --resume with none is
# an error, so is --resume on a corrupt checkpoint, before any broker is
# reached; an unwritable --checkpoint fails at start (exit 2), a resume on
# another network is refused naming the field, a run whose last checkpoint
# could not be written does not end "solved" with exit 0, and --keep N keeps
# the newest N and the best.
. "$(dirname "$0")/lib.sh"
cd "$TMP"
R="$TMP/runs"
V() { "$VOLLEY" "$@"; }

V up --runs "$R" --checkpoint ck > first.log 2>&1 || fail "first run: $(tail -3 first.log)"
[ -s ck/default.ckpt ] || fail "no checkpoint written"
sum=$(md5sum < ck/default.ckpt)

V up --runs "$R" --checkpoint ck > again.log 2>&1
rc=$?
[ $rc -eq 2 ] || fail "up over an existing checkpoint without --resume exited $rc"
grep -q "ck/default.ckpt holds a checkpoint: --resume to continue it, or --force to start over" again.log || fail "no way out named: $(cat again.log)"
V learner --broker 127.0.0.1:1 --checkpoint ck > learner.log 2>&1
[ $? -eq 2 ] && grep -q "holds a checkpoint" learner.log || fail "learner over an existing checkpoint: $(cat learner.log)"
[ "$(md5sum < ck/default.ckpt)" = "$sum" ] || fail "the refused runs touched the checkpoint"
pass "an existing checkpoint without --resume is refused (exit 2, up and learner), untouched"

# A corrupt checkpoint is refused at start with one line, before the learner
# waits for anything: no broker listens on NOBROKER, so a learner that got past
# the check would wait there (the timeout only stops a hang; it is not a bound).
NOBROKER=$(free_port)
for kind in flip truncated empty directory; do
  mkdir -p "bad-$kind"
  case $kind in
    flip) python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0x10; open(sys.argv[2], "wb").write(b)' ck/default.ckpt bad-flip/default.ckpt ;;
    truncated) head -c "$(( $(stat -c %s ck/default.ckpt) - 100 ))" ck/default.ckpt > bad-truncated/default.ckpt ;;
    empty) : > bad-empty/default.ckpt ;;
    directory) mkdir -p bad-directory/default.ckpt ;;
  esac
  timeout 60 "$VOLLEY" learner --broker 127.0.0.1:$NOBROKER --checkpoint "bad-$kind" --resume > "bad-$kind.log" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "learner --resume on a checkpoint with a $kind: exit $rc (124: it waited), $(cat "bad-$kind.log")"
  [ "$(wc -l < "bad-$kind.log")" -eq 1 ] && grep -q "^volley learner: --resume: refusing checkpoint bad-$kind/default.ckpt: " "bad-$kind.log" ||
    fail "learner --resume on a checkpoint with a $kind: not one line naming it: $(cat "bad-$kind.log")"
done
grep -q "checksum mismatch" bad-flip.log && grep -q "truncated at byte" bad-truncated.log &&
  grep -q "truncated at byte 0" bad-empty.log && grep -q "not a regular file" bad-directory.log ||
  fail "the reasons are not named: $(cat bad-*.log)"
pass "--resume on a corrupt checkpoint (flipped byte, truncated, empty, a directory) is refused at start, one line, no broker needed"

V up --runs "$R" --checkpoint ck --force > force.log 2>&1 || fail "up --force: $(tail -3 force.log)"
[ "$(md5sum < ck/default.ckpt.bak)" = "$sum" ] || fail "--force did not keep the old checkpoint as .bak: $(ls ck)"
[ "$(md5sum < ck/default.ckpt)" != "$sum" ] || fail "--force did not start over"
pass "--force starts over, the old checkpoint kept as default.ckpt.bak"

V up --runs "$R" --checkpoint nothing-here --resume > noresume.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "resume: there is no checkpoint at nothing-here/default.ckpt" noresume.log || fail "--resume with nothing: exit $rc, $(cat noresume.log)"
[ ! -e nothing-here/default.ckpt ] || fail "--resume with nothing started a fresh run"
pass "--resume where there is no checkpoint is an error (exit 2), not a fresh start"

touch plainfile
V up --runs "$R" --checkpoint plainfile > file.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "checkpoint plainfile: not a directory" file.log || fail "--checkpoint at a file: exit $rc, $(cat file.log)"
V learner --broker 127.0.0.1:1 --checkpoint plainfile > lfile.log 2>&1
[ $? -eq 2 ] || fail "learner --checkpoint at a file did not exit 2: $(cat lfile.log)"
pass "a --checkpoint that cannot be written fails at start (exit 2)"

V up --runs "$R" --checkpoint ck --resume --hidden 32 > shape.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "ck/default.ckpt was trained with hidden = 64; this learner has hidden = 32" shape.log || fail "resume on another network: exit $rc, $(cat shape.log)"
V up --runs "$R" --checkpoint ck --resume --env catch > env.log 2>&1
[ $? -eq 2 ] && grep -q "was trained with obs = f32\[4\]" env.log || fail "resume on another env: $(cat env.log)"
pass "a resume whose checkpoint was trained on another network or env is refused, naming the field"

# The learner cannot write its last checkpoint (its directory is gone): not "solved", exit 1.
V up --runs "$R" --name gone2 --until steps --max-steps 3e5 > gone2.log 2>&1 &
UP2=$!
PIDS+=($UP2)
wait_for gone2.log 30 "^[0-9:]{8} steps=" || fail "no progress in the second run"
rm -rf "$R/gone2/checkpoints"
wait "$UP2"
rc2=$?
last=$(tail -n 1 gone2.log)
[ $rc2 -ne 0 ] && ! echo "$last" | grep -q "^done:" || fail "a run whose checkpoint was lost ended with exit $rc2: '$last'"
echo "$last" | grep -q "^not done: the learner failed at exit" || fail "no reason given: '$last'"
pass "a run whose last checkpoint could not be written exits $rc2, not done ('$last')"

V up --runs "$R" --name kept --keep 3 --checkpoint-every 1 --until steps --max-steps 6e5 > kept.log 2>&1 || fail "--keep 3: $(tail -3 kept.log)"
n=$(ls "$R/kept/checkpoints" | grep -c -- '-v[0-9]*\.ckpt$')
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "--keep 3 kept $n numbered checkpoints: $(ls "$R/kept/checkpoints")"
[ -s "$R/kept/checkpoints/default-best.ckpt" ] || fail "no best checkpoint: $(ls "$R/kept/checkpoints")"
pass "--keep 3 keeps $n numbered checkpoints and default-best.ckpt"
# volley learner --run-dir: a learner started by hand keeps its run too.
P=$(free_port)
"$VOLLEY" broker --port "$P" --quiet > broker.log 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --broker 127.0.0.1:$P --env cartpole --run-dir "$TMP/byhand" --checkpoint-every 1 > byhand.log 2>&1 &
L=$!
PIDS+=($L)
"$VOLLEY" actor --broker 127.0.0.1:$P --envs 8 --quiet > actor.log 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/byhand/checkpoints/default.ckpt" ] && break; sleep 0.1; done
kill -TERM $L; wait $L
[ $? -eq 0 ] || fail "learner --run-dir did not stop cleanly: $(tail -3 byhand.log)"
grep -qx "\[learner\]" "$TMP/byhand/config.ini" && grep -qx "env = cartpole" "$TMP/byhand/config.ini" || fail "config.ini: $(cat "$TMP/byhand/config.ini")"
[ "$(wc -l < "$TMP/byhand/metrics.jsonl")" -ge 1 ] || fail "no metrics in the learner's run"
V eval "$TMP/byhand" --episodes 5 > eval.log 2>&1 || fail "volley eval of the learner's run: $(cat eval.log)"
V learner --broker 127.0.0.1:$P --env cartpole --run-dir "$TMP/byhand" > again2.log 2>&1
[ $? -eq 2 ] && grep -q "exists" again2.log || fail "a second learner into the same --run-dir: $(cat again2.log)"
pass "volley learner --run-dir keeps config.ini, checkpoints and metrics (volley eval reads it); an existing one is refused"
echo "8 passed, 0 failed"
