#!/usr/bin/env bash
# Runs scenarios/lab-hackbench.yaml end to end on the local qemu lab and prints its report.
# Installs the Debian packages the demo needs when missing (and no more; never removing or
# downgrading one). Uses DATABASE_URL when set, else kreg's own cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
echo "kreg demo: 1/3 the Debian packages it needs"
before=$(kreg_dpkg_snapshot)
kreg_need_demo
kreg_need_apt_lists
kreg_check_nothing_lost "$before"
echo "kreg demo: 2/3 building kreg and kreg-agent (cargo; the first build takes about 15 minutes on 2 cores, later ones seconds)"
cargo build --workspace --bins
./target/debug/kreg validate scenarios/lab-hackbench.yaml
echo "kreg demo: 3/3 kreg run scenarios/lab-hackbench.yaml (two kernels, eight boots of a qemu VM, 32 jobs or more)"
exec ./target/debug/kreg run scenarios/lab-hackbench.yaml
