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
echo "kreg demo: 3/3 kreg run scenarios/lab-hackbench.yaml after $((SECONDS - mark)) s of build (two kernels, eight boots or more of a qemu VM, 32 jobs or more)"
mark=$SECONDS
./target/debug/kreg run scenarios/lab-hackbench.yaml
echo "kreg demo: the run took $((SECONDS - mark)) s; ${SECONDS} s in all"
