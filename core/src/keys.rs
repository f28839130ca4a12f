//! Every mapping of a scenario file and of a pool file, with the keys the loader takes in
//! it. The loader reads a mapping only through its section here (`Cx::map` takes the
//! section's path, the one `docs/keys.md` heads its part with), so this list is the
//! loader's own: a key added here is taken, a key not here is refused, and the
//! documentation test holds `docs/keys.md` to this list both ways. A leaf: it uses nothing
//! of the crate.

/// One kind of mapping: where it is, and the keys it may hold.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// Where it is (a `[]` an element of a list, `NAME` a name the user gives), as
    /// `docs/keys.md` heads its part.
    pub path: &'static str,
    /// Which file it is in: `scenario` or `pool`.
    pub file: &'static str,
    pub keys: &'static [&'static str],
    /// Keys a kind adds to `keys` (a workload's, by its `kind:`).
    pub kinds: &'static [(&'static str, &'static [&'static str])],
}

impl Section {
    const fn of(path: &'static str, file: &'static str, keys: &'static [&'static str]) -> Section {
        Section {
            path,
            file,
            keys,
            kinds: &[],
        }
    }

    /// Every key the mapping may hold, whatever its kind: its own, then each kind's.
    pub fn all(&self) -> Vec<&'static str> {
        let mut all = self.keys.to_vec();
        for key in self.kinds.iter().flat_map(|(_, k)| k.iter()) {
            if !all.contains(key) {
                all.push(key);
            }
        }
        all
    }

    pub fn takes(&self, key: &str) -> bool {
        self.keys.contains(&key) || self.kinds.iter().any(|(_, k)| k.contains(&key))
    }
}

/// The keys only an ssh transport takes.
pub const SSH_KEYS: &[&str] = &[
    "address",
    "user",
    "identity",
    "passphrase_file",
    "known_hosts",
    "host_key",
    "agent_port",
];

/// Keys every workload may have.
pub const WORKLOAD_COMMON: &[&str] = &["name", "kind", "on", "timeout", "collect", "cgroup"];

/// Every workload kind's name and the keys it takes besides [`WORKLOAD_COMMON`].
pub const WORKLOAD_KINDS: &[(&str, &[&str])] = &[
    (
        "hackbench",
        &["groups", "loops", "pipe", "threads", "process", "fds", "datasize"],
    ),
    (
        "schbench",
        &[
            "message_threads",
            "threads",
            "runtime",
            "operations",
            "cache_footprint_kb",
            "requests_per_sec",
            "auto_rps",
            "pipe",
            "intervaltime",
            "warmuptime",
            "sleep_usec",
            "zerotime",
            "no_locking",
            "calibrate",
            "message_cpus",
            "worker_cpus",
            "json",
        ],
    ),
    ("perf-bench", &["bench", "groups", "loops", "pipe", "threads"]),
    (
        "sysbench",
        &[
            "test",
            "threads",
            "time",
            "tables",
            "table_size",
            "percentile",
            "server",
        ],
    ),
    ("netperf", &["test", "clients", "duration", "server"]),
    (
        "hammerdb",
        &["warehouses", "virtual_users", "rampup", "duration", "server"],
    ),
    ("command", &["argv", "metrics"]),
];

/// A `{ min, max }` range: `iterations`, and a bisection's `endpoint_boots` and
/// `step_rounds`.
pub const RANGE: &str = "{ min, max }";

/// Every section, scenario file first, then the pool file.
pub const SECTIONS: &[Section] = &[
    Section::of(
        "scenario",
        "scenario",
        &[
            "name",
            "hosts",
            "kernels",
            "baseline",
            "boot",
            "variants",
            "workloads",
            "iterations",
            "boots",
            "warmup",
            "tools",
            "order",
            "collect",
            "perf",
            "bisect",
        ],
    ),
    Section::of("hosts.NAME", "scenario", &["role", "transport", "tuning"]),
    Section::of(
        "transport",
        "scenario",
        &[
            "kind",
            "url",
            "token_file",
            "cpus",
            "memory_mib",
            "parallel",
            "boot",
            "reset",
            "console",
            "keep_kernels",
            "address",
            "user",
            "identity",
            "passphrase_file",
            "known_hosts",
            "host_key",
            "agent_port",
            "tls_fingerprint",
            "insecure",
        ],
    ),
    Section::of(
        "tuning",
        "scenario",
        &[
            "governor",
            "turbo",
            "deep_idle",
            "dma_latency",
            "smt",
            "cpus_offline",
            "llc",
            "numa_balancing",
            "thp",
            "sched",
            "sysctl",
            "optional",
        ],
    ),
    Section::of("boot", "scenario", &["timeout", "method"]),
    Section::of(
        "kernels[]",
        "scenario",
        &["name", "source", "config", "patches", "cmdline", "build_on", "perf"],
    ),
    Section::of(
        "kernels[].source",
        "scenario",
        &["deb", "path", "git", "ref", "tarball"],
    ),
    Section::of("kernels[].config", "scenario", &["base", "set"]),
    Section::of("perf", "scenario", &["git", "ref", "tarball", "debian"]),
    Section::of(
        "variants[]",
        "scenario",
        &["name", "policy", "features", "cpus", "tuning", "cgroup"],
    ),
    Section::of(
        "cgroup",
        "scenario",
        &["quota", "period_us", "weight", "cpus", "hierarchy"],
    ),
    Section::of("cgroup.hierarchy", "scenario", &["fanout", "depth"]),
    Section {
        path: "workloads[]",
        file: "scenario",
        keys: WORKLOAD_COMMON,
        kinds: WORKLOAD_KINDS,
    },
    Section::of(
        "workloads[].metrics.NAME",
        "scenario",
        &["regex", "unit", "higher_is_better", "kind"],
    ),
    Section::of("workloads[].server (netperf)", "scenario", &["on", "address", "port"]),
    Section::of(
        "workloads[].server (hammerdb, sysbench)",
        "scenario",
        &[
            "on",
            "kind",
            "address",
            "port",
            "datadir",
            "database",
            "user",
            "password_file",
        ],
    ),
    Section::of("tools[]", "scenario", &["name", "on", "from", "install_dir"]),
    Section::of(
        "tools[].from",
        "scenario",
        &["apt", "git", "ref", "build", "binary", "upload", "tarball"],
    ),
    Section::of(
        "bisect",
        "scenario",
        &[
            "kernel",
            "good",
            "bad",
            "metric",
            "variant",
            "alpha",
            "min_effect",
            "endpoint_boots",
            "step_rounds",
            "boot_tries",
        ],
    ),
    Section::of(RANGE, "scenario", &["min", "max"]),
    Section::of("pool", "pool", &["machines"]),
    Section::of(
        "machines.NAME",
        "pool",
        &["role", "transport", "loadgen", "labels", "about"],
    ),
];

/// The section at `path`. A path not in [`SECTIONS`] is a mistake in the loader (every
/// mapping it reads is listed there), found by the first test that reads such a mapping.
pub fn section(path: &str) -> &'static Section {
    SECTIONS
        .iter()
        .find(|s| s.path == path)
        .unwrap_or_else(|| panic!("the loader reads a mapping `{path}` that scenario::keys::SECTIONS does not list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_and_every_ssh_key_is_a_transport_key() {
        for (i, s) in SECTIONS.iter().enumerate() {
            assert!(SECTIONS[..i].iter().all(|t| t.path != s.path), "{} twice", s.path);
            let all = s.all();
            for (j, k) in all.iter().enumerate() {
                assert!(!all[..j].contains(k) || !s.kinds.is_empty(), "{}: `{k}` twice", s.path);
            }
        }
        let transport = section("transport");
        assert!(SSH_KEYS.iter().all(|k| transport.takes(k)));
    }
}
