//! The scenario model: what a user declares in YAML (hosts, kernels, variants, workloads,
//! iterations), and its loading with every problem reported as `FILE:LINE:COL: message`.
//!
//! Loading walks a position-aware YAML tree ([`yaml`]) by hand rather than through serde
//! derive: serde stops at the first error, and users want all of them at once.

mod load;
pub mod yaml;

use std::path::PathBuf;

pub use kreg_agent::wire::Policy;
pub use load::{from_str, Diagnostic};

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub hosts: Vec<Host>,
    pub kernels: Vec<Kernel>,
    pub baseline: String,
    pub boot: Boot,
    pub variants: Vec<Variant>,
    pub workloads: Vec<Workload>,
    pub iterations: u32,
}

impl Scenario {
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
    pub fn variant(&self, name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == name)
    }
    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }
    /// The machine under test (validation guarantees there is exactly one).
    pub fn sut(&self) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.role == Role::Sut)
            .expect("validated: one sut")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sut,
    Loadgen,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub role: Role,
    pub transport: Transport,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A running `kreg-agent`; the token file is resolved against the scenario's folder.
    Http { url: String, token_file: PathBuf },
    /// A qemu VM that kreg starts on this machine.
    Lab { cpus: u32, memory_mib: u32 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub source: KernelSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum KernelSource {
    /// A Debian linux-image package (a meta-package is followed to the image it depends on).
    Deb { package: String },
    /// A prebuilt image on the controller's machine.
    Path { vmlinuz: PathBuf },
    /// Whatever kernel the SUT runs: nothing is booted.
    Running,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boot {
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    pub policy: Policy,
    /// Written one by one to /sys/kernel/debug/sched/features, e.g. `NO_PLACE_LAG`.
    pub features: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    /// Host that runs it.
    pub on: String,
    pub timeout_secs: u64,
    pub kind: WorkloadKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadKind {
    Hackbench(Hackbench),
    Command(CommandWorkload),
}

impl WorkloadKind {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadKind::Hackbench(_) => "hackbench",
            WorkloadKind::Command(_) => "command",
        }
    }
}

/// rt-tests hackbench; each field is one of its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Hackbench {
    /// `-g`
    pub groups: u32,
    /// `-l`
    pub loops: u32,
    /// `-p`: pipes instead of sockets.
    pub pipe: bool,
    /// `-T`: threads instead of processes.
    pub threads: bool,
    /// `-f`: file descriptors (senders and receivers) per group.
    pub fds: Option<u32>,
    /// `-s`: bytes per message.
    pub datasize: Option<u32>,
}

impl Hackbench {
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec!["hackbench".to_string()];
        if self.pipe {
            v.push("-p".into());
        }
        if self.threads {
            v.push("-T".into());
        }
        v.extend([
            "-g".into(),
            self.groups.to_string(),
            "-l".into(),
            self.loops.to_string(),
        ]);
        if let Some(f) = self.fds {
            v.extend(["-f".into(), f.to_string()]);
        }
        if let Some(s) = self.datasize {
            v.extend(["-s".into(), s.to_string()]);
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandWorkload {
    pub argv: Vec<String>,
    pub metrics: Vec<MetricPattern>,
}

/// A metric read from a command's output: the first capture group of `regex`, searched in
/// stdout, then in stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPattern {
    pub name: String,
    pub regex: String,
    pub unit: String,
    pub higher_is_better: bool,
}
