#!/usr/bin/env bash
# Runs every test: unit tests, the agent over loopback, the controller against a real
# PostgreSQL, the lab (qemu, kexec between two Debian kernels), and the dashboard in
# headless Chromium. Installs what it needs when missing (never removing or downgrading a
# package); without DATABASE_URL it starts a private cluster for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kreg_set_up demo tests
# A clean clone under CI builds everything once: incremental compilation's caches would
# only cost time and disk.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
# The lab machine's disk image (tests/machine.rs) is made while the code compiles: the test
# runs the same script, which waits for this one (a lock) and finds the image made, or
# makes it and says why it failed. Stopped with this script if still going.
machine_dir=${KREG_CACHE_DIR:-$HOME/.cache/kreg}/machine
mkdir -p "$machine_dir"
setsid bash scripts/lab-machine.sh "$machine_dir" >"$machine_dir/background.log" 2>&1 &
machine_pid=$!
trap 'kill -TERM -- "-$machine_pid" 2>/dev/null || true' EXIT
cargo build --workspace --bins
if [ -z "${DATABASE_URL:-}" ]; then
  if [ "${CI:-}" = true ]; then
    KREG_TEST_DATA_DIR=${KREG_TEST_DATA_DIR:-$(mktemp -d /tmp/kreg-ci-data.XXXXXX)}
  fi
  export KREG_TEST_DATA_DIR=${KREG_TEST_DATA_DIR:-/tmp/kreg-test-data}
  DATABASE_URL=$(KREG_DATA_DIR=$KREG_TEST_DATA_DIR ./target/debug/kreg db url)
  export DATABASE_URL
  echo "tests use kreg's private cluster: $DATABASE_URL" >&2
fi
# The lab tests' figures (one CPU against two, a quota against none) were calibrated under
# TCG, and a nested KVM may run a guest for a while and then stop it: the tests use TCG
# unless told otherwise. `kreg run` itself tries KVM first (see KREG_LAB_ACCEL).
export KREG_LAB_ACCEL=${KREG_LAB_ACCEL:-tcg}
cargo test --workspace --no-run
# A lab VM under TCG keeps one core busy and leaves the other mostly idle, so the suite runs
# in two lanes, then alone. The first lane starts with tests/lab_bisect.rs (a git repository
# made from linux-source-6.1, its commits built and bisected in the lab, 25 to 50 minutes as
# its boots vary: the change it must find more than doubles hackbench's time against a
# minimum effect of 90 %; the range without it, under a minimum of 20 %, does not
# reproduce). The second takes, one at a time, the tests whose assertions hold whatever else
# the machine does: kreg's outputs against the tools' own, states, errors, faults
# (tests/machine.rs, a disk machine booted about ten times, its only figures boot timeouts
# of 600 s; tests/bisect_standin.rs, an A/A range that must not pass for a 20 % change; the
# fault suite; the controller, the fleet, the agent over loopback, the unit tests'
# simulations, whose seeds are fixed; tools uploaded into the lab and a run again from its
# bundle; rehearsals of scenarios on two lab machines), longest first; once lab_bisect is over, the first lane takes them too. Last,
# alone, the tests whose figures were calibrated on a quiet machine: the lab's (one CPU
# against two, quotas, A/A boots) and the dashboard's latencies. Every test target runs
# exactly once: the last lane is "all the others", so that a new test file runs alone
# unless it is listed here.
beside=(lab_bisect)
shared=(machine rehearse fleet bisect_standin faults hammerdb kernel_build lab_sched_stats lab_tools lib controller ssh kconfig_real two_hosts netperf parse_cli setup_packages guarantees agent doc)
queue=$(mktemp -d /tmp/kreg-test-queue.XXXXXX)
printf '%s\n' "${shared[@]}" >"$queue/list"
echo "tests in the first lane: ${beside[*]}, then the others' (its output follows when it ends)" >&2
setsid bash scripts/test-lane.sh "$queue" "${beside[0]}" >"$queue/first.log" 2>&1 &
beside_pid=$!
trap 'kill -TERM -- "-$machine_pid" "-$beside_pid" 2>/dev/null || true' EXIT
# The second lane at a lower priority: lab_bisect measures hackbench in its VM, and a VM, a
# compile or a database of this lane that takes its core makes its boots vary (by a third
# under TCG), and the bisection then needs more of them. These tests' figures hold whatever
# else the machine does; they only take a little longer. With autogroups on
# (sched_autogroup_enabled, as Debian's kernels boot), `nice` weighs a process only against
# the others of its session, and each lane has a session of its own: the lane's group is
# made nicer too (/proc/self/autogroup; where the kernel has none, `nice` is all it needs).
setsid bash -c 'echo 10 >/proc/self/autogroup 2>/dev/null || true
  exec nice -n 10 bash scripts/test-lane.sh "$1"' lane "$queue" &
meanwhile_pid=$!
trap 'kill -TERM -- "-$machine_pid" "-$beside_pid" "-$meanwhile_pid" 2>/dev/null || true' EXIT
wait "$meanwhile_pid" || true
wait "$beside_pid" || true
echo "---- the first lane's output ----"
cat "$queue/first.log"
if [ -s "$queue/failed" ]; then
  echo "tests failed: $(tr '\n' ' ' <"$queue/failed")" >&2
  exit 1
fi
rm -rf "$queue"
# kernel_real compiles Debian's linux-source-6.1 and the perf of its tree: it needs the
# feature real-kernel and runs by scripts/test-kernel.sh; `cargo test` alone leaves it out too.
featured=(kernel_real)
args=()
# A test target is a file of tests/ or a folder of it with a main.rs (several modules, one
# binary).
for f in orchestrator/tests/*.rs agent/tests/*.rs orchestrator/tests/*/main.rs agent/tests/*/main.rs; do
  [ -e "$f" ] || continue
  t=$(basename "$f" .rs)
  [ "$t" = main ] && t=$(basename "$(dirname "$f")")
  case " ${beside[*]} ${shared[*]} ${featured[*]} " in *" $t "*) continue ;; esac
  args+=(--test "$t")
done
# (--workspace everywhere: one set of features, so that no lane compiles anything again.)
cargo test --workspace "${args[@]}" -- --test-threads=2
