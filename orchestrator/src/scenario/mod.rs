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
    Schbench(Schbench),
    PerfBench(PerfBench),
    Sysbench(Sysbench),
    Netperf(Netperf),
    Hammerdb(Hammerdb),
    Command(CommandWorkload),
}

impl WorkloadKind {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadKind::Hackbench(_) => "hackbench",
            WorkloadKind::Schbench(_) => "schbench",
            WorkloadKind::PerfBench(_) => "perf-bench",
            WorkloadKind::Sysbench(_) => "sysbench",
            WorkloadKind::Netperf(_) => "netperf",
            WorkloadKind::Hammerdb(_) => "hammerdb",
            WorkloadKind::Command(_) => "command",
        }
    }
}

/// Validated command-line flags of a tool, in a fixed order: (flag, value).
pub type Flags = Vec<(String, Option<String>)>;

fn push_flags(argv: &mut Vec<String>, flags: &Flags) {
    for (flag, value) in flags {
        argv.push(flag.clone());
        if let Some(v) = value {
            argv.push(v.clone());
        }
    }
}

/// schbench with any of its flags (-m -t -r -M -W -L -n -F -R -A -p -i -w -s -z -C).
#[derive(Debug, Clone, PartialEq)]
pub struct Schbench {
    pub flags: Flags,
    /// Also ask for `-j -` (JSON on stdout) and read it; the text report stays on stderr.
    pub json: bool,
}

impl Schbench {
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec!["schbench".to_string()];
        push_flags(&mut v, &self.flags);
        if self.json {
            v.extend(["-j".into(), "-".into()]);
        }
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfBenchKind {
    Messaging,
    Pipe,
}

/// `perf bench sched messaging|pipe` with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfBench {
    pub bench: PerfBenchKind,
    pub flags: Flags,
}

impl PerfBench {
    pub fn argv(&self) -> Vec<String> {
        let bench = match self.bench {
            PerfBenchKind::Messaging => "messaging",
            PerfBenchKind::Pipe => "pipe",
        };
        let mut v = vec!["perf".to_string(), "bench".into(), "sched".into(), bench.into()];
        push_flags(&mut v, &self.flags);
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Mariadb,
    Mysql,
}

/// A database server that kreg starts on a host (normally the SUT) for a client workload.
#[derive(Debug, Clone, PartialEq)]
pub struct DbServer {
    pub on: String,
    pub kind: DbKind,
    /// The address it listens on and clients connect to.
    pub address: String,
    pub port: u16,
    /// Created with mariadb-install-db / mysqld --initialize-insecure when empty.
    pub datadir: String,
    pub database: String,
    pub user: String,
    /// File on the controller holding the client user's password (never logged or stored).
    pub password_file: PathBuf,
}

/// sysbench OLTP against a MySQL/MariaDB server.
#[derive(Debug, Clone, PartialEq)]
pub struct Sysbench {
    /// oltp_read_write, oltp_read_only, oltp_point_select, …
    pub test: String,
    pub threads: u32,
    pub time_secs: u32,
    pub tables: u32,
    pub table_size: u32,
    pub percentile: u32,
    pub server: DbServer,
}

/// A count of client processes or users, absolute or relative to the SUT's CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Fixed(u32),
    /// Percent of the SUT's CPUs (seed 002: 25/50/75/100%), at least 1.
    PercentOfCpus(u32),
    /// Per SUT CPU (HammerDB virtual users "per CPU").
    PerCpu(f64),
}

impl Count {
    pub fn resolve(self, sut_cpus: u32) -> u32 {
        let n = match self {
            Count::Fixed(n) => n as f64,
            Count::PercentOfCpus(p) => (sut_cpus as f64 * p as f64 / 100.0).round(),
            Count::PerCpu(f) => (sut_cpus as f64 * f).round(),
        };
        (n as u32).max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetTest {
    UdpRr,
    TcpRr,
}

impl NetTest {
    pub fn name(self) -> &'static str {
        match self {
            NetTest::UdpRr => "UDP_RR",
            NetTest::TcpRr => "TCP_RR",
        }
    }
}

/// netperf request/response: `netserver` on the server host, clients on the workload's host.
#[derive(Debug, Clone, PartialEq)]
pub struct Netperf {
    pub test: NetTest,
    pub clients: Count,
    pub duration_secs: u32,
    pub server_on: String,
    pub server_address: String,
    pub server_port: u16,
}

/// HammerDB TPROC-C against MySQL/MariaDB; kreg writes the hammerdbcli script.
#[derive(Debug, Clone, PartialEq)]
pub struct Hammerdb {
    pub warehouses: u32,
    pub virtual_users: Count,
    pub rampup_min: u32,
    pub duration_min: u32,
    pub server: DbServer,
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
