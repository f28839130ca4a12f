//! Every mapping the scenario and pool loaders read, each a [`Section`] (its path and its
//! keys) that the loader reads it with: those of the scenario's own parts here, a workload
//! kind's beside its options in `workload`. [`SECTIONS`] lists them all; `docs/keys.md` is
//! held to this list both ways by the documentation test, and a test here finds every
//! section the crate defines in the list.

use crate::workload;
pub use crate::yaml::Section;

pub const SCENARIO: Section = Section::new(
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
);
pub const HOST: Section = Section::new("hosts.NAME", "scenario", &["role", "transport", "tuning"]);
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
pub const TRANSPORT: Section = Section::new(
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
);
pub const TUNING: Section = Section::new(
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
);
pub const BOOT: Section = Section::new("boot", "scenario", &["timeout", "method"]);
pub const KERNEL: Section = Section::new(
    "kernels[]",
    "scenario",
    &["name", "source", "config", "patches", "cmdline", "build_on", "perf"],
);
pub const KERNEL_SOURCE: Section = Section::new(
    "kernels[].source",
    "scenario",
    &["deb", "path", "git", "ref", "tarball"],
);
pub const KERNEL_CONFIG: Section = Section::new("kernels[].config", "scenario", &["base", "set"]);
pub const PERF: Section = Section::new("perf", "scenario", &["git", "ref", "tarball", "debian"]);
pub const VARIANT: Section = Section::new(
    "variants[]",
    "scenario",
    &["name", "policy", "features", "cpus", "tuning", "cgroup"],
);
pub const CGROUP: Section = Section::new(
    "cgroup",
    "scenario",
    &["quota", "period_us", "weight", "cpus", "hierarchy"],
);
pub const HIERARCHY: Section = Section::new("cgroup.hierarchy", "scenario", &["fanout", "depth"]);
pub const WORKLOAD: Section = Section {
    path: "workloads[]",
    file: "scenario",
    keys: workload::COMMON_KEYS,
    kinds: workload::KINDS,
};
pub const TOOL: Section = Section::new("tools[]", "scenario", &["name", "on", "from", "install_dir"]);
pub const TOOL_SOURCE: Section = Section::new(
    "tools[].from",
    "scenario",
    &["apt", "git", "ref", "build", "binary", "upload", "tarball"],
);
pub const BISECT: Section = Section::new(
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
);
/// A range: `iterations`, and a bisection's `endpoint_boots` and `step_rounds`.
pub const RANGE: Section = Section::new("{ min, max }", "scenario", &["min", "max"]);
pub const POOL: Section = Section::new("pool", "pool", &["machines"]);
pub const MACHINE: Section = Section::new(
    "machines.NAME",
    "pool",
    &["role", "transport", "loadgen", "labels", "about"],
);

/// Every section, the scenario file's first, then the pool file's.
pub const SECTIONS: &[&Section] = &[
    &SCENARIO,
    &HOST,
    &TRANSPORT,
    &TUNING,
    &BOOT,
    &KERNEL,
    &KERNEL_SOURCE,
    &KERNEL_CONFIG,
    &PERF,
    &VARIANT,
    &CGROUP,
    &HIERARCHY,
    &WORKLOAD,
    &workload::command::METRIC,
    &workload::netperf::SERVER,
    &workload::db::SERVER,
    &TOOL,
    &TOOL_SOURCE,
    &BISECT,
    &RANGE,
    &POOL,
    &MACHINE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_and_every_ssh_key_is_a_transport_key() {
        for (i, s) in SECTIONS.iter().enumerate() {
            assert!(SECTIONS[..i].iter().all(|t| t.path != s.path), "{} twice", s.path);
            for (j, k) in s.keys.iter().enumerate() {
                assert!(!s.keys[..j].contains(k), "{}: `{k}` twice", s.path);
            }
        }
        assert!(SSH_KEYS.iter().all(|k| TRANSPORT.takes(k)));
    }

    /// Every section the crate defines (a `pub const NAME: Section`; `Cx::map` takes no
    /// other) is in [`SECTIONS`]: a mapping read with a section left out of the list would
    /// escape the documentation test.
    #[test]
    fn every_section_the_crate_defines_is_listed() {
        fn walk(dir: &std::path::Path, found: &mut usize) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, found);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("yaml/section.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    *found += text
                        .lines()
                        .filter(|l| l.trim_start().starts_with("pub const ") && l.contains(": Section = "))
                        .count();
                }
            }
        }
        let mut found = 0;
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert_eq!(
            found,
            SECTIONS.len(),
            "sections defined in core/src and listed in SECTIONS"
        );
    }
}
