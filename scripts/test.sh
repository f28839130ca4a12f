#!/usr/bin/env bash
# Runs every test: unit tests, the agent over loopback, the controller against a real
# PostgreSQL, the lab (qemu, kexec between two Debian kernels), and the dashboard in
# headless Chromium. Installs what it needs when missing (never removing or downgrading a
# package); without DATABASE_URL it starts a private cluster for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
before=$(kreg_dpkg_snapshot)
kreg_need_demo
kreg_need_tests
kreg_need_apt_lists
kreg_check_nothing_lost "$before"
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
cargo test --workspace -- --test-threads=2
