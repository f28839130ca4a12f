#!/usr/bin/env bash
# The real kernel build test: compiles Debian's linux-source-6.1 (tinyconfig plus a lab
# fragment), boots it in the lab by kexec and runs hackbench on it. About 20 minutes of
# compile on 2 cores the first time; later runs find the build in kreg's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kreg_set_up demo tests kernel_build
cargo build --workspace --bins
if [ -z "${DATABASE_URL:-}" ]; then
  export KREG_TEST_DATA_DIR=${KREG_TEST_DATA_DIR:-/tmp/kreg-test-data}
  DATABASE_URL=$(KREG_DATA_DIR=$KREG_TEST_DATA_DIR ./target/debug/kreg db url)
  export DATABASE_URL
fi
cargo test -p kreg --features real-kernel --test kernel_real -- --nocapture
