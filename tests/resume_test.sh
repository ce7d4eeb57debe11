#!/usr/bin/env bash
# A learner killed with SIGKILL and started again with --resume continues:
# its version numbers go on from the checkpoint and its policy is as good as
# it was (not back to a random one). A corrupt or truncated checkpoint is
# refused with a reason and never loaded.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
CK="$TMP/ck"

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --quiet > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
learner() {  # $1: log file, rest: extra flags; run with & (exec: $! is the learner itself)
    local log=$1; shift
    exec "$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --checkpoint "$CK" --checkpoint-every 1 \
        --batch 8 --capacity 32 --verbose "$@" > "$log" 2>&1
}
learner "$TMP/learner1.log" &
L1=$!
PIDS+=($L1)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 8 --quiet > "$TMP/actor.log" 2>&1 &
PIDS+=($!)

returns() { sed -n 's/.* return=\([0-9.]*\) .*/\1/p' "$1"; }
good=0
for _ in $(seq 300); do
    r=$(returns "$TMP/learner1.log" | tail -1)
    if [ -n "$r" ] && [ "${r%.*}" -ge 150 ] && grep -q "checkpoint saved" "$TMP/learner1.log"; then
        good=1; break
    fi
    sleep 0.2
done
[ $good -eq 1 ] || fail "the first learner never reached a mean return of 150"
sleep 1.2  # one more checkpoint of the trained policy
kill -KILL $L1
wait $L1 2>/dev/null
kill -0 $L1 2>/dev/null && fail "the first learner survived SIGKILL"
pgrep -f "learner --broker 127.0.0.1:$PORT" > /dev/null && fail "a learner of this test is still running"
saved=$(sed -n 's/.*checkpoint saved: version=\([0-9]*\) .*/\1/p' "$TMP/learner1.log" | tail -1)
pass "trained to a mean return of $r, checkpoint at version $saved, then SIGKILL"

learner "$TMP/learner2.log" --resume &
PIDS+=($!)
wait_for "$TMP/learner2.log" 10 "resumed from .* at version [0-9]+," || fail "no resume"
# The kill can land after a checkpoint's rename and before its log line: the
# file may be newer than the last "saved" line, never older.
resumed=$(sed -n 's/.*resumed from .* at version \([0-9]*\),.*/\1/p' "$TMP/learner2.log")
[ "$resumed" -ge "$saved" ] || fail "resumed at version $resumed, older than the saved $saved"
saved=$resumed
wait_for "$TMP/learner2.log" 20 "version=[0-9]+ .* return=([1-9][0-9][0-9]|[2-9][0-9])\." ||
    fail "the resumed policy is not the trained one: $(returns "$TMP/learner2.log" | tr '\n' ' ')"
versions() { sed -n 's/.*debug: version=\([0-9]*\) .*/\1/p' "$TMP/learner2.log"; }
for _ in $(seq 100); do # the first report may come before the first update
    last=$(versions | tail -1)
    [ "${last:-0}" -gt "$saved" ] && break
    sleep 0.2
done
first=$(versions | head -1)
[ "$first" -ge "$saved" ] && [ "$last" -gt "$saved" ] || fail "versions did not continue from $saved ($first..$last)"
r2=$(returns "$TMP/learner2.log" | sort -n | tail -1)
pass "resumed at version $saved, went on to $last, mean return $r2 (a fresh policy scores ~20)"
kill -TERM "${PIDS[@]}" 2>/dev/null
wait 2>/dev/null
PIDS=()

cp "$CK/default.ckpt" "$TMP/good.ckpt"
printf '\x55' | dd of="$CK/default.ckpt" bs=1 seek=200 conv=notrunc 2>/dev/null
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --checkpoint "$CK" --resume > "$TMP/bad.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "refusing checkpoint .*default.ckpt: " "$TMP/bad.log" ||
    fail "a corrupt checkpoint was not refused (exit $rc): $(cat "$TMP/bad.log")"
head -c 5000 "$TMP/good.ckpt" > "$CK/default.ckpt"
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --checkpoint "$CK" --resume > "$TMP/short.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "refusing checkpoint .*truncated" "$TMP/short.log" ||
    fail "a truncated checkpoint was not refused (exit $rc): $(cat "$TMP/short.log")"
pass "corrupt and truncated checkpoints refused: $(sed -n 's/.*refusing checkpoint [^:]*: //p' "$TMP/bad.log")"
echo "3 passed, 0 failed"
