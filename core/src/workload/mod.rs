//! Workload kinds, one module each: a kind's options and how they are read from a scenario,
//! its command lines (client, server, scripts), the programs it runs, and the parser of its
//! output. [`WorkloadKind`] is the closed set the rest of kreg dispatches on.
//!
//! Adding a kind: a module here with its options type, `KEYS` and a `load` function; an arm
//! in [`WorkloadKind`], [`KINDS`], [`WorkloadKind::load`] and [`WorkloadKind::plan`]; its keys
//! in `docs/keys.md` (a test holds the page to [`KINDS`]). A kind
//! that runs as one process on one host implements [`SingleHost`] and the engine needs
//! nothing more; a kind with a server of its own also needs its arm in the engine's
//! `server` and `job` modules, which the compiler points to.

pub mod command;
pub mod common;
pub mod db;
pub mod hackbench;
pub mod hammerdb;
pub mod netperf;
pub mod perf_bench;
pub mod schbench;
pub mod sysbench;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod parse_tests;

pub use command::{CommandWorkload, MetricPattern};
pub use common::{Count, Flags};
pub use db::{DbKind, DbServer};
pub use hackbench::Hackbench;
pub use hammerdb::Hammerdb;
pub use netperf::{NetTest, Netperf};
pub use perf_bench::{PerfBench, PerfBenchKind};
pub use schbench::Schbench;
pub use sysbench::Sysbench;

use crate::parse::{perr, Metric, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::yaml::Node;

/// Hosts a workload's options name (a server's `on`), with where, for the loader to check.
pub type HostRefs = Vec<(String, usize, usize)>;

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

/// Every kind's name and the keys it takes besides [`COMMON_KEYS`].
pub const KINDS: &[(&str, &[&str])] = &[
    ("hackbench", hackbench::KEYS),
    ("schbench", schbench::KEYS),
    ("perf-bench", perf_bench::KEYS),
    ("sysbench", sysbench::KEYS),
    ("netperf", netperf::KEYS),
    ("hammerdb", hammerdb::KEYS),
    ("command", command::KEYS),
];

/// Keys every workload may have.
pub const COMMON_KEYS: &[&str] = &["name", "kind", "on", "timeout", "collect", "cgroup"];

/// An argv as a reader would type it, each word quoted for a shell where it needs it.
pub fn shell_words(argv: &[String]) -> String {
    crate::text::shell_words(argv)
}

/// A kind that runs as one process on the workload's host, under the variant's policy and
/// CPUs, and is measured from that process's output.
pub trait SingleHost: Sync {
    fn argv(&self) -> Vec<String>;
    /// The metrics in the process's stdout and stderr.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError>;
}

/// How the engine runs a kind.
pub enum Plan<'a> {
    Single(&'a dyn SingleHost),
    /// sysbench against a database server kreg starts.
    Sysbench(&'a Sysbench),
    /// Concurrent netperf clients against one netserver.
    Netperf(&'a Netperf),
    /// hammerdbcli against a database server kreg starts; measured after the rampup.
    Hammerdb(&'a Hammerdb),
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

    pub fn plan(&self) -> Plan<'_> {
        match self {
            WorkloadKind::Hackbench(h) => Plan::Single(h),
            WorkloadKind::Schbench(s) => Plan::Single(s),
            WorkloadKind::PerfBench(p) => Plan::Single(p),
            WorkloadKind::Command(c) => Plan::Single(c),
            WorkloadKind::Sysbench(s) => Plan::Sysbench(s),
            WorkloadKind::Netperf(n) => Plan::Netperf(n),
            WorkloadKind::Hammerdb(h) => Plan::Hammerdb(h),
        }
    }

    /// The programs the workload runs, each with the host it runs on (`on` for the client
    /// side): the tools whose versions a result records.
    pub fn programs(&self, on: &str) -> Vec<(String, String)> {
        let program = |p: &str, host: &str| (p.to_string(), host.to_string());
        match self.plan() {
            Plan::Single(s) => vec![program(&s.argv()[0], on)],
            Plan::Sysbench(sb) => vec![program("sysbench", on), program(sb.server.programs().0, &sb.server.on)],
            Plan::Hammerdb(h) => vec![program("hammerdbcli", on), program(h.server.programs().0, &h.server.on)],
            Plan::Netperf(n) => vec![program("netperf", on), program("netserver", &n.server_on)],
        }
    }

    /// The command line a report states for the workload (passwords as `***`).
    pub fn command_line(&self) -> String {
        let join = |v: Vec<String>| shell_words(&v);
        match self.plan() {
            Plan::Single(s) => join(s.argv()),
            Plan::Sysbench(sb) => format!(
                "{} (server: {})",
                join(sb.argv("PRIVATE-FILE", "run")),
                join(sb.server.server_argv())
            ),
            Plan::Netperf(n) => format!("{} (server: {})", join(n.client_argv()), join(n.server_argv())),
            Plan::Hammerdb(h) => format!(
                "./hammerdbcli auto $TMP/script.tcl in HammerDB's folder, TMP of the job's own: TPROC-C, {} warehouses, {} min rampup, {} min timed (server: {})",
                h.warehouses,
                h.rampup_min,
                h.duration_min,
                join(h.server.server_argv())
            ),
        }
    }

    /// The host a two-host workload's server runs on.
    pub fn server_host(&self) -> Option<&str> {
        match self.plan() {
            Plan::Single(_) => None,
            Plan::Sysbench(s) => Some(&s.server.on),
            Plan::Hammerdb(h) => Some(&h.server.on),
            Plan::Netperf(n) => Some(&n.server_on),
        }
    }

    /// Reads the options of kind `kind` from `f` (a workload mapping whose keys are all
    /// known to some kind). `None` once a problem is reported.
    pub(crate) fn load(
        cx: &mut Cx,
        kind_node: &Node,
        f: &Fields,
        what: &str,
        refs: &mut HostRefs,
    ) -> Option<WorkloadKind> {
        let kind = cx.string(kind_node, "kind")?;
        let Some((name, keys)) = KINDS.iter().find(|(k, _)| *k == kind) else {
            let names: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
            cx.error(
                kind_node,
                format!("kind: unknown workload kind `{kind}`; expected {}", names.join(", ")),
            );
            return None;
        };
        for (k, v) in &f.entries {
            if !COMMON_KEYS.contains(k) && !keys.contains(k) {
                cx.error(
                    v,
                    format!(
                        "`{k}` does not apply to workload kind `{name}`; it takes: {}",
                        keys.join(", ")
                    ),
                );
            }
        }
        Some(match *name {
            "hackbench" => WorkloadKind::Hackbench(Hackbench::load(cx, f)?),
            "schbench" => WorkloadKind::Schbench(Schbench::load(cx, f)?),
            "perf-bench" => WorkloadKind::PerfBench(PerfBench::load(cx, f, what)?),
            "sysbench" => WorkloadKind::Sysbench(Sysbench::load(cx, f, what, refs)?),
            "netperf" => WorkloadKind::Netperf(Netperf::load(cx, f, what, refs)?),
            "hammerdb" => WorkloadKind::Hammerdb(Hammerdb::load(cx, f, what, refs)?),
            _ => WorkloadKind::Command(CommandWorkload::load(cx, f, what)?),
        })
    }
}

/// The tools whose output `kreg parse` reads.
pub const PARSE_KINDS: &[&str] = &[
    "hackbench",
    "schbench",
    "schbench-json",
    "sysbench",
    "netperf",
    "hammerdb",
    "perf-bench",
    "perf-sched-stats",
];

/// Parses `text` as the output of `kind` (one of [`PARSE_KINDS`]).
pub fn parse_output(kind: &str, text: &str) -> Result<Vec<Metric>, ParseError> {
    match kind {
        "hackbench" => hackbench::parse(text),
        // schbench writes its report as text, or as JSON with `-j`: either is read.
        "schbench" if looks_like_json(text) => schbench::parse_json(text),
        "schbench" => schbench::parse_text(text),
        "schbench-json" => schbench::parse_json(text),
        "sysbench" => sysbench::parse(text),
        "netperf" => netperf::parse(text),
        "hammerdb" => hammerdb::parse(text),
        "perf-bench" => perf_bench::parse(text),
        // A collector's report, read by hand like a workload's output.
        "perf-sched-stats" => {
            crate::collect::perf_sched_stats::parse(text).and_then(|r| crate::collect::perf_sched_stats::metrics(&r))
        }
        other => Err(perr(
            other,
            format!("unknown kind; expected one of: {}", PARSE_KINDS.join(", ")),
        )),
    }
}

/// Whether `text` starts like a JSON object (0x7b is an opening brace).
fn looks_like_json(text: &str) -> bool {
    text.trim_start().as_bytes().first() == Some(&0x7b)
}
