#!/usr/bin/env bash
# Runs scenarios/lab-hackbench.yaml end to end on the local qemu lab and prints its report.
# Installs what it needs when missing. Uses DATABASE_URL when set, else kreg's own cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kreg_need_packages
kreg_need_apt_lists
cargo build -q --workspace --bins
./target/debug/kreg validate scenarios/lab-hackbench.yaml
exec ./target/debug/kreg run scenarios/lab-hackbench.yaml
