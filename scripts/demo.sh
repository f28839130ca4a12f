#!/usr/bin/env bash
# Runs scenarios/lab-hackbench.yaml end to end on the local qemu lab and prints its report.
# Installs the Debian packages the demo needs when missing (and no more; never removing or
# downgrading one). Uses DATABASE_URL when set, else kreg's own cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
echo "kreg demo: 1/3 the Debian packages it needs"
kreg_set_up demo
echo "kreg demo: 2/3 building kreg and kreg-agent after ${SECONDS} s (cargo; about 6 minutes on 2 cores the first time, seconds later)"
mark=$SECONDS
cargo build --workspace --bins
./target/debug/kreg validate scenarios/lab-hackbench.yaml
echo "kreg demo: 3/3 kreg run scenarios/lab-hackbench.yaml after $((SECONDS - mark)) s of build (two kernels, a boot of a qemu VM each, 40 jobs or more)"
mark=$SECONDS
out=$(mktemp)
trap 'rm -f "$out"' EXIT
./target/debug/kreg run scenarios/lab-hackbench.yaml | tee "$out"
run=$(sed -n 's/^run \([0-9][0-9]*\): .*jobs done.*/\1/p' "$out" | tail -n 1)
echo "kreg demo: the run took $((SECONDS - mark)) s; ${SECONDS} s in all"
echo
echo "kreg demo: the variants against default on each kernel (kreg report $run --baseline-variant default):"
./target/debug/kreg report "$run" --baseline-variant default --format base-head
# What the demo must show: a difference called, and the A/A comparison (variant again, the
# same as default) not flagged. The CSV's 6th, 7th and 35th fields: kernel, variant, verdict.
./target/debug/kreg report "$run" --baseline-variant default --format csv >"$out"
called=$(awk -F, 'NR > 1 && $7 != "again" && ($35 == "regression" || $35 == "improvement") { print "  " $7 " on " $6 ": " $35 }' "$out")
flagged=$(awk -F, 'NR > 1 && $7 == "again" && $35 != "inconclusive" && $35 != "no change" { print "  " $7 " on " $6 ": " $35 }' "$out")
aa=$(awk -F, 'NR > 1 && $7 == "again" { print "  " $7 " on " $6 ": " $35 }' "$out")
echo
echo "kreg demo: changes called:"
echo "${called:-  none}"
echo "kreg demo: the A/A rows (again, the same as default):"
echo "$aa"
if [ -z "$called" ] || [ -n "$flagged" ]; then
    echo "kreg demo: FAILED: the demo should call at least one change and flag no A/A row" >&2
    exit 1
fi
echo "kreg demo: done: a change called, the A/A comparison not flagged"
