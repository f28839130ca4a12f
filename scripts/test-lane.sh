#!/usr/bin/env bash
# One lane of scripts/test.sh: runs FIRST (a test target) if given, then takes test targets
# from QUEUE/list one at a time (under QUEUE/lock) until none is left. `lib` stands for the
# crates' unit tests, `doc` for their doc tests. A target that fails is added to
# QUEUE/failed and the lane goes on.
set -uo pipefail
queue=$1
first=${2:-}
cd "$(dirname "$0")/.."
run() {
  local rc=0
  case $1 in
    lib) cargo test --workspace --lib --bins -- --test-threads=2 || rc=$? ;;
    doc) cargo test --workspace --doc || rc=$? ;;
    *) cargo test --workspace --test "$1" -- --test-threads=2 || rc=$? ;;
  esac
  if [ "$rc" -ne 0 ]; then
    echo "$1" >>"$queue/failed"
  fi
}
next() {
  flock "$queue/lock" bash -c 'head -n 1 "$1"; sed -i 1d "$1"' next "$queue/list"
}
if [ -n "$first" ]; then
  run "$first"
fi
while t=$(next) && [ -n "$t" ]; do
  run "$t"
done
