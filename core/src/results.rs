//! What a run produced, in the shape the store returns it and reports, comparisons and the
//! dashboard read it. Plain data: no I/O here.

/// One stored sample with the matrix point it belongs to.
#[derive(Debug, Clone)]
pub struct Sample {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub iteration: i32,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
    pub kind: crate::stats::MetricKind,
    pub kernel_release: String,
    pub observed_policy: String,
    /// The boot the job ran in.
    pub boot_id: String,
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

/// "variant V, HOST: settings; online CPUs".
impl std::fmt::Display for TuningUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.record {
            Ok(r) => write!(f, "variant {}, {}", self.variant, r.summary()),
            Err(e) => write!(f, "variant {}: unreadable tuning record ({e})", self.variant),
        }
    }
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

impl std::fmt::Display for SetupUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupUsed::Cgroup {
                variant,
                workload,
                what: Ok(what),
            } => write!(f, "variant {variant}, workload {workload}: cgroup {what}"),
            SetupUsed::Cgroup {
                variant,
                workload,
                what: Err(e),
            } => write!(
                f,
                "variant {variant}, workload {workload}: unreadable cgroup record ({e})"
            ),
            SetupUsed::Uncounted(events) => write!(f, "perf stat could not count: {}", events.join(", ")),
        }
    }
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

impl std::fmt::Display for BootSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}, {} CPUs", self.host, self.release, self.cpus)
    }
}

impl std::fmt::Display for ToolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.tool, self.version)
    }
}

impl std::fmt::Display for BuildUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (config {})",
            self.key,
            &self.config_hash[..12.min(self.config_hash.len())]
        )
    }
}

impl SettingChange {
    /// "host: setting before → after", without whether it was put back.
    pub fn change(&self) -> String {
        let knobs = if self.knobs > 1 {
            format!(" ({} knobs)", self.knobs)
        } else {
            String::new()
        };
        format!("{}: {} {} → {}{knobs}", self.host, self.name, self.before, self.after)
    }
}

impl std::fmt::Display for SettingChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.restored { "restored" } else { "NOT restored" };
        write!(f, "{}, {state}", self.change())
    }
}

/// Each item's text, once, in order.
fn distinct<T: ToString>(items: impl IntoIterator<Item = T>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in items.into_iter().map(|i| i.to_string()) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl KernelProvenance {
    /// "host: release, N CPUs", one per distinct boot setting.
    pub fn boot_lines(&self) -> Vec<String> {
        distinct(&self.boots)
    }

    pub fn cpu_models(&self) -> Vec<String> {
        distinct(self.boots.iter().map(|b| &b.cpu_model))
    }

    pub fn cmdlines(&self) -> Vec<String> {
        distinct(self.boots.iter().map(|b| &b.cmdline))
    }

    /// "tool@host version".
    pub fn tool_lines(&self) -> Vec<String> {
        distinct(&self.tools)
    }

    /// "key (config hash)".
    pub fn build_lines(&self) -> Vec<String> {
        distinct(&self.builds)
    }

    /// "sut: kernel.sched_schedstats 0 → 1, restored".
    pub fn setting_lines(&self) -> Vec<String> {
        distinct(&self.settings)
    }

    /// "variant V, HOST: settings; online CPUs".
    pub fn tuning_lines(&self) -> Vec<String> {
        distinct(&self.tuning)
    }

    /// "variant V, workload W: cgroup …", "perf stat could not count: …".
    pub fn setup_lines(&self) -> Vec<String> {
        distinct(&self.setup)
    }
}

/// In JSON reports, as text: each list as the lines the other formats print.
impl serde::Serialize for KernelProvenance {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = ser.serialize_struct("KernelProvenance", 10)?;
        st.serialize_field("kernel", &self.kernel)?;
        st.serialize_field("boots", &self.boot_lines())?;
        st.serialize_field("cpu_models", &self.cpu_models())?;
        st.serialize_field("cmdlines", &self.cmdlines())?;
        st.serialize_field("tools", &self.tool_lines())?;
        st.serialize_field("builds", &self.build_lines())?;
        st.serialize_field("settings", &self.setting_lines())?;
        st.serialize_field("tuning", &self.tuning_lines())?;
        st.serialize_field("setup", &self.setup_lines())?;
        st.serialize_field("no_schedstat", &self.no_schedstat)?;
        st.end()
    }
}
