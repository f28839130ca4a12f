//! How a run's provenance reads: each item as one line (a boot, a tool's version, a build,
//! a setting kreg changed, the tuning and the set-up a kernel's jobs ran with), the same in
//! every format (the JSON report carries the lines too).

use crate::results::{BootSeen, BuildUsed, KernelProvenance, SettingChange, SetupUsed, ToolVersion, TuningUsed};

/// "variant V, HOST: settings; online CPUs".
impl std::fmt::Display for TuningUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.record {
            Ok(r) => write!(f, "variant {}, {}", self.variant, r.summary()),
            Err(e) => write!(f, "variant {}: unreadable tuning record ({e})", self.variant),
        }
    }
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

    /// The knobs kreg changed as a run still going has them: one not put back yet is "in
    /// effect" (kreg puts it back when the run ends), not "NOT restored".
    pub fn setting_lines_running(&self) -> Vec<String> {
        distinct(self.settings.iter().map(|s| {
            if s.restored {
                s.to_string()
            } else {
                format!("{}, in effect", s.change())
            }
        }))
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
