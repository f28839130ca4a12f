//! What a run produced, in the shape the store returns it and reports, comparisons and the
//! dashboard read it. Plain data: no I/O here, and no text (how it reads is `report`'s).

pub use crate::stats::Shared;

/// One stored sample with the matrix point it belongs to.
#[derive(Debug, Clone)]
pub struct Sample {
    pub kernel: Shared,
    pub variant: Shared,
    pub workload: Shared,
    pub iteration: i32,
    pub metric: Shared,
    pub value: f64,
    pub unit: Shared,
    pub higher_is_better: bool,
    pub kind: crate::stats::MetricKind,
    pub kernel_release: Shared,
    pub observed_policy: Shared,
    /// The boot the job ran in.
    pub boot_id: Shared,
    /// The machine (SUT) the job ran on, for a run spread over a fleet's pairs; empty for
    /// a run on one machine set.
    pub machine: Shared,
}

/// A boot a kernel's jobs ran on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct BootSeen {
    pub host: String,
    pub release: String,
    pub cpus: i32,
    pub cpu_model: String,
    pub cmdline: String,
}

/// The version of a tool (or program) on a host, as a job recorded it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolVersion {
    /// "tool@host".
    pub tool: String,
    pub version: String,
}

/// A kernel kreg built, as a run used it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct BuildUsed {
    pub key: String,
    pub config_hash: String,
}

/// A setting kreg changed on a host for the run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SettingChange {
    pub host: String,
    pub name: String,
    pub before: String,
    pub after: String,
    pub restored: bool,
    /// How many knobs the setting changed (a governor: one per CPU).
    #[serde(default = "one")]
    pub knobs: i64,
}

fn one() -> i64 {
    1
}

/// The tuning a variant's jobs ran with, as read back before each (its record, or why the
/// stored record could not be read).
#[derive(Debug, Clone, PartialEq)]
pub struct TuningUsed {
    pub variant: String,
    pub record: Result<crate::tuning::Record, String>,
}

/// Something else a kernel's jobs ran in or with.
#[derive(Debug, Clone, PartialEq)]
pub enum SetupUsed {
    /// A cell's cgroup (what it is: the same for each job of the cell), or why its
    /// record could not be read.
    Cgroup {
        variant: String,
        workload: String,
        what: Result<String, String>,
    },
    /// The perf events the SUT could not count (with perf's reason).
    Uncounted(Vec<String>),
}

/// Provenance of one kernel of a run: the boots it ran on and what its jobs ran with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelProvenance {
    pub kernel: String,
    /// Distinct.
    pub boots: Vec<BootSeen>,
    /// Distinct, sorted.
    pub tools: Vec<ToolVersion>,
    pub builds: Vec<BuildUsed>,
    pub settings: Vec<SettingChange>,
    /// The tuning its jobs ran with, read back.
    pub tuning: Vec<TuningUsed>,
    /// What else its jobs ran in or with: each cell's cgroup, the perf events the SUT
    /// could not count.
    pub setup: Vec<SetupUsed>,
    /// The SUT had no /proc/schedstat on this kernel: no scheduler statistics.
    pub no_schedstat: bool,
}
