//! A job's record besides its metrics: the raw outputs it keeps, each typed by what it is
//! ([`RawKind`]), stored under the kind's name. The engine builds it, the store writes it,
//! pages list it; nobody spells a kind as free text.

use std::fmt;

/// Which end of the measured phase a snapshot was taken at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Before,
    After,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::Before => "before",
            When::After => "after",
        }
    }
}

/// What a raw output of a job is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawKind {
    /// The workload's (or client's) standard output and error.
    Stdout,
    Stderr,
    /// One client of several (numbered from 1).
    ClientStdout(usize),
    ClientStderr(usize),
    /// /proc/schedstat around the measured phase.
    Schedstat(When),
    /// The job's cgroup's `cpu.stat` around it.
    CgroupStat(When),
    /// /proc/interrupts around it, and the per-CPU table of the difference.
    Interrupts(When),
    InterruptsDelta,
    /// `perf stat`'s output, its sums per event, and the events it could not count (one
    /// per line, with perf's reason), when there were any.
    PerfStat,
    PerfStatTotals,
    PerfStatUncounted,
    /// `perf sched stats`: its report, its data file (xz, base64), what `record` said.
    PerfSchedStatsReport,
    PerfSchedStatsData,
    PerfSchedStatsRecord,
    /// The per-task figures the agent took at each exit.
    TaskSchedstat,
    /// The sched features in effect for the job.
    SchedFeatures,
    /// A two-host workload's server: its version, its threads and their policies.
    ServerVersion,
    ServerThreads,
    /// The cgroup the job ran in, said (`… on sut, top /sys/fs/cgroup/…`) and as a
    /// [`CgroupSetup`] in JSON; where its processes were seen.
    Cgroup,
    CgroupSetup,
    CgroupPlacement,
    /// The tuning read back before the job: the SUT's (`None`) or another host's.
    Tuning(Option<String>),
    /// HammerDB's script (passwords masked), its version, its time profile.
    HammerdbScript,
    HammerdbVersion,
    HammerdbProfile,
    /// The command lines the measured phase ran, one per process: the host, the policy,
    /// CPUs and cgroup it was given, and its argv as a shell would take it.
    Commands,
}

/// The kinds with a fixed name, for reading a name back.
const FIXED: &[(&str, RawKind)] = &[
    ("stdout", RawKind::Stdout),
    ("stderr", RawKind::Stderr),
    ("interrupts_delta", RawKind::InterruptsDelta),
    ("perf_stat", RawKind::PerfStat),
    ("perf_stat_totals", RawKind::PerfStatTotals),
    ("perf_stat_uncounted", RawKind::PerfStatUncounted),
    ("perf_sched_stats_report", RawKind::PerfSchedStatsReport),
    ("perf_sched_stats_data.xz.base64", RawKind::PerfSchedStatsData),
    ("perf_sched_stats_record", RawKind::PerfSchedStatsRecord),
    ("task_schedstat", RawKind::TaskSchedstat),
    ("sched_features", RawKind::SchedFeatures),
    ("server_version", RawKind::ServerVersion),
    ("server_threads", RawKind::ServerThreads),
    ("cgroup", RawKind::Cgroup),
    ("cgroup_setup", RawKind::CgroupSetup),
    ("cgroup_placement", RawKind::CgroupPlacement),
    ("tuning", RawKind::Tuning(None)),
    ("hammerdb_script", RawKind::HammerdbScript),
    ("hammerdb_version", RawKind::HammerdbVersion),
    ("hammerdb_profile", RawKind::HammerdbProfile),
    ("commands", RawKind::Commands),
];

impl RawKind {
    /// The name it is stored under (`stdout`, `schedstat_before`, `tuning@ldg`, …).
    pub fn name(&self) -> String {
        match self {
            RawKind::ClientStdout(i) => format!("client{i}_stdout"),
            RawKind::ClientStderr(i) => format!("client{i}_stderr"),
            RawKind::Schedstat(w) => format!("schedstat_{}", w.as_str()),
            RawKind::CgroupStat(w) => format!("cgroup_stat_{}", w.as_str()),
            RawKind::Interrupts(w) => format!("interrupts_{}", w.as_str()),
            RawKind::Tuning(Some(host)) => format!("tuning@{host}"),
            fixed => FIXED
                .iter()
                .find(|(_, k)| k == fixed)
                .map(|(n, _)| n.to_string())
                .expect("every other kind has a fixed name"),
        }
    }

    /// The kind a stored name stands for; `None` for a name kreg never writes.
    pub fn parse(name: &str) -> Option<RawKind> {
        if let Some((_, k)) = FIXED.iter().find(|(n, _)| *n == name) {
            return Some(k.clone());
        }
        if let Some(host) = name.strip_prefix("tuning@") {
            return Some(RawKind::Tuning(Some(host.to_string())));
        }
        let when = |rest: &str| match rest {
            "before" => Some(When::Before),
            "after" => Some(When::After),
            _ => None,
        };
        if let Some(rest) = name.strip_prefix("schedstat_") {
            return when(rest).map(RawKind::Schedstat);
        }
        if let Some(rest) = name.strip_prefix("cgroup_stat_") {
            return when(rest).map(RawKind::CgroupStat);
        }
        if let Some(rest) = name.strip_prefix("interrupts_") {
            return when(rest).map(RawKind::Interrupts);
        }
        let client = name.strip_prefix("client")?;
        let (n, stream) = client.split_once('_')?;
        let n: usize = n.parse().ok()?;
        match stream {
            "stdout" => Some(RawKind::ClientStdout(n)),
            "stderr" => Some(RawKind::ClientStderr(n)),
            _ => None,
        }
    }

    /// Whether a page shows it open at first (what a reader looks at first).
    pub fn shown_open(&self) -> bool {
        matches!(self, RawKind::Stdout | RawKind::ServerThreads)
    }
}

impl fmt::Display for RawKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The cgroup a job ran in, as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CgroupSetup {
    /// What it is, the same for every job of a cell: `quota 50% of 2 CPUs on sut`.
    pub what: String,
    /// Its top group, which names the job: `/sys/fs/cgroup/kreg/run-3/job-7`.
    pub top: String,
}

impl fmt::Display for CgroupSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, top {}", self.what, self.top)
    }
}

/// The raw outputs of one job, in the order taken, and the metrics its collectors took
/// as they went (the workload's own are its parser's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outputs {
    raw: Vec<(RawKind, String)>,
    collected: Vec<crate::parse::Metric>,
}

impl Outputs {
    pub fn push(&mut self, kind: RawKind, content: impl Into<String>) {
        self.raw.push((kind, content.into()));
    }

    /// A line at the end of the output of `kind` (made when there is none yet).
    pub fn append_line(&mut self, kind: RawKind, line: &str) {
        match self.raw.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => self.raw.push((kind, format!("{line}\n"))),
        }
    }

    /// The first output of `kind`.
    pub fn get(&self, kind: &RawKind) -> Option<&str> {
        self.raw.iter().find(|(k, _)| k == kind).map(|(_, c)| c.as_str())
    }

    /// Another record's outputs and metrics after these.
    pub fn extend(&mut self, other: Outputs) {
        self.raw.extend(other.raw);
        self.collected.extend(other.collected);
    }

    pub fn iter(&self) -> impl Iterator<Item = &(RawKind, String)> {
        self.raw.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Metrics a collector took.
    pub fn collect(&mut self, metrics: impl IntoIterator<Item = crate::parse::Metric>) {
        self.collected.extend(metrics);
    }

    /// The collectors' metrics, handed over once.
    pub fn take_collected(&mut self) -> Vec<crate::parse::Metric> {
        std::mem::take(&mut self.collected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name() {
        let mut all: Vec<RawKind> = FIXED.iter().map(|(_, k)| k.clone()).collect();
        for w in [When::Before, When::After] {
            all.extend([RawKind::Schedstat(w), RawKind::CgroupStat(w), RawKind::Interrupts(w)]);
        }
        all.extend([
            RawKind::ClientStdout(1),
            RawKind::ClientStderr(12),
            RawKind::Tuning(Some("ldg".into())),
        ]);
        for k in all {
            assert_eq!(RawKind::parse(&k.name()), Some(k.clone()), "{k}");
        }
        assert_eq!(RawKind::Schedstat(When::Before).name(), "schedstat_before");
        assert_eq!(RawKind::ClientStdout(2).name(), "client2_stdout");
        for unknown in [
            "",
            "stdin",
            "schedstat_during",
            "client_stdout",
            "clientx_stdout",
            "client1_stdin",
        ] {
            assert_eq!(RawKind::parse(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn outputs_keep_their_order_and_find_by_kind() {
        let mut o = Outputs::default();
        o.push(RawKind::Stdout, "a");
        o.push(RawKind::PerfStat, "b");
        o.push(RawKind::Stdout, "c");
        assert_eq!(o.get(&RawKind::Stdout), Some("a"));
        assert_eq!(o.get(&RawKind::PerfStat), Some("b"));
        assert_eq!(o.get(&RawKind::Stderr), None);
        let names: Vec<String> = o.iter().map(|(k, _)| k.name()).collect();
        assert_eq!(names, ["stdout", "perf_stat", "stdout"]);
    }
}
