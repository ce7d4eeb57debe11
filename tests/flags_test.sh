#!/usr/bin/env bash
# A typo in a flag gets one line naming it and the nearest flag, plus "see --help", not the
# whole usage; a flag missing its value is named too. Every command, exit 2, nothing started.
. "$(dirname "$0")/lib.sh"

n=0
# expect_typo "ARGS" WANT: ARGS fail with exit 2 and exactly one line on stderr containing WANT.
expect_typo() {
    local args=$1 want=$2 rc lines
    # shellcheck disable=SC2086
    "$VOLLEY" $args > "$TMP/out" 2> "$TMP/err"
    rc=$?
    lines=$(wc -l < "$TMP/err")
    [ $rc -eq 2 ] || fail "volley $args exited $rc, not 2: $(head -3 "$TMP/err")"
    [ "$lines" -eq 1 ] || fail "volley $args printed $lines lines on stderr, not 1: $(head -3 "$TMP/err")"
    [ ! -s "$TMP/out" ] || fail "volley $args printed to stdout: $(head -3 "$TMP/out")"
    grep -qF -- "$want" "$TMP/err" || fail "volley $args: wanted '$want' in: $(cat "$TMP/err")"
    grep -qF "see --help" "$TMP/err" || fail "volley $args does not point at --help: $(cat "$TMP/err")"
    pass "volley $args: $(cat "$TMP/err")"
    n=$((n + 1))
}
expect_typo "up --max-stpes 100" "unknown flag --max-stpes (did you mean --max-steps?)"
expect_typo "up --acters 2" "unknown flag --acters (did you mean --actors?)"
expect_typo "up --max-steps" "--max-steps wants a value"
expect_typo "up --resume=yes" "--resume takes no value"
# The first numeric flag of a command has getopt's val 0, which getopt also gives an unknown one.
expect_typo "up --actors" "--actors wants a value"
expect_typo "learner --broker 127.0.0.1 --seed" "--seed wants a value"
expect_typo "actor --broker 127.0.0.1 --envs" "--envs wants a value"
expect_typo "learner --brokr 127.0.0.1" "unknown flag --brokr (did you mean --broker?)"
expect_typo "actor --broker 127.0.0.1 --envz 4" "unknown flag --envz (did you mean --envs?)"
expect_typo "broker --prot 7600" "unknown flag --prot (did you mean --port?)"
expect_typo "replay --pase fast x.vlrec" "unknown flag --pase (did you mean --pace?)"
expect_typo "top --brokr 127.0.0.1" "unknown flag --brokr (did you mean --broker?)"
expect_typo "eval --greddy runs/x" "unknown flag --greddy (did you mean --greedy?)"
expect_typo "keygen --zzzzzzzzzz" "unknown flag --zzzzzzzzzz;"
expect_typo "up -x" "unknown flag -x"
# A command is refused as a flag is: one line, the nearest command named.
expect_typo "lerner --broker 127.0.0.1" "unknown command 'lerner' (did you mean 'learner'?)"
expect_typo "zzzzzzzzzz" "unknown command 'zzzzzzzzzz';"

# Each command's --help and its parser agree. A flag listed in a help entry is accepted (given
# "--flag=@@ --help", nothing but "unknown flag" would name it unknown); every flag any help names
# as an entry that a command accepts is one of its entries (or a prefix of one, as getopt takes it).
cmds="broker eval export keygen top ctl actor learner replay up"
for cmd in $cmds; do
    "$VOLLEY" $cmd --help > "$TMP/help-$cmd.txt" || fail "volley $cmd --help exited $?"
    # the flags of its entries: "  --name VALUE  help" or "  -h, --help  help", left column only
    grep -E '^  (-[a-z], )?--[a-z]' "$TMP/help-$cmd.txt" | sed -E 's/^  //; s/  .*//' \
        | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u > "$TMP/entries-$cmd.txt"
    [ -s "$TMP/entries-$cmd.txt" ] || fail "volley $cmd --help lists no flag"
done
cat "$TMP"/entries-*.txt | sort -u > "$TMP/named.txt"
# accepts CMD FLAG: the command does not call FLAG unknown.
accepts() {
    local said=""
    "$VOLLEY" "$1" "$2=@@" --help > /dev/null 2> "$TMP/err"
    read -r said < "$TMP/err"
    [[ $said != *"unknown flag"* ]]
}
checked=0
for cmd in $cmds; do
    while read -r flag; do
        accepts "$cmd" "$flag" || fail "volley $cmd --help lists $flag, which it refuses: $(cat "$TMP/err")"
        checked=$((checked + 1))
    done < "$TMP/entries-$cmd.txt"
    grep -vxF -f "$TMP/entries-$cmd.txt" "$TMP/named.txt" | while read -r flag; do
        accepts "$cmd" "$flag" || continue
        grep -q -- "^$flag" "$TMP/entries-$cmd.txt" \
            || fail "volley $cmd accepts $flag, which its --help does not list"
    done || exit 1
    checked=$((checked + $(grep -cvxF -f "$TMP/entries-$cmd.txt" "$TMP/named.txt")))
done
pass "every command's --help lists exactly the flags it accepts ($checked checks)"
n=$((n + 1))
echo "$n passed, 0 failed"
