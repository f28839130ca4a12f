//! Machine tuning for the measured phase, as the seeds set machines up: the cpufreq
//! governor, turbo, deep idle states (per state, or a held CPU latency request), SMT, CPUs taken offline, the workload kept within
//! one last-level cache, NUMA balancing, transparent hugepages, the scheduler's debugfs
//! knobs and sysctls. A [`Tuning`] is what a scenario declares (per host, overridden per
//! variant on the SUT); [`resolve`] turns it into the knob writes one machine needs.

pub mod resolve;

pub use resolve::{resolve, Machine, Resolved, Write};

/// Settings in the order declared; a key appears once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tuning {
    pub settings: Vec<Setting>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub knob: Knob,
    /// A machine without this setting records it as unavailable instead of failing.
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Knob {
    /// cpufreq's scaling_governor on every online CPU.
    Governor(String),
    /// Turbo/boost: intel_pstate's `no_turbo`, or cpufreq's `boost`.
    Turbo(bool),
    /// Every cpuidle state but the first (the shallowest) enabled or disabled, per CPU.
    DeepIdle(bool),
    /// A CPU latency request (microseconds) the agent holds open on
    /// `/dev/cpu_dma_latency` while the setting is in effect: 0 keeps CPUs out of every
    /// idle state with an exit latency, whatever cpuidle driver the machine has.
    DmaLatency(u32),
    /// Simultaneous multithreading (`/sys/devices/system/cpu/smt/control`).
    Smt(bool),
    /// CPUs taken offline for the run.
    CpusOffline(Offline),
    /// The workload (and a server on this host) confined to the CPUs that share the last
    /// level cache of the first online CPU.
    OneLlc,
    /// `kernel.numa_balancing`.
    NumaBalancing(bool),
    /// Transparent hugepages: always, madvise or never.
    Thp(String),
    /// A scheduler knob: `/sys/kernel/debug/sched/NAME` (or, on kernels before the
    /// debugfs move, `/proc/sys/kernel/sched_NAME`).
    Sched { name: String, value: String },
    /// A sysctl by its dotted name (`kernel.sched_autogroup_enabled`).
    Sysctl { name: String, value: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Offline {
    /// These CPUs.
    Cpus(Vec<u32>),
    /// Every CPU outside the first NUMA node.
    OtherNodes,
    /// Every CPU outside the first CPU's socket.
    OtherSockets,
}

impl Knob {
    /// How the scenario names it: `governor`, `sched.base_slice_ns`, `sysctl.vm.swappiness`.
    pub fn key(&self) -> String {
        match self {
            Knob::Governor(_) => "governor".into(),
            Knob::Turbo(_) => "turbo".into(),
            Knob::DeepIdle(_) => "deep_idle".into(),
            Knob::DmaLatency(_) => "dma_latency".into(),
            Knob::Smt(_) => "smt".into(),
            Knob::CpusOffline(_) => "cpus_offline".into(),
            Knob::OneLlc => "llc".into(),
            Knob::NumaBalancing(_) => "numa_balancing".into(),
            Knob::Thp(_) => "thp".into(),
            Knob::Sched { name, .. } => format!("sched.{name}"),
            Knob::Sysctl { name, .. } => format!("sysctl.{name}"),
        }
    }

    /// The value as the scenario would write it.
    pub fn value(&self) -> String {
        let on_off = |b: &bool| if *b { "on" } else { "off" }.to_string();
        match self {
            Knob::Governor(v) | Knob::Thp(v) => v.clone(),
            Knob::Turbo(b) | Knob::DeepIdle(b) | Knob::Smt(b) | Knob::NumaBalancing(b) => on_off(b),
            Knob::CpusOffline(Offline::Cpus(c)) => cpu_list(c),
            Knob::CpusOffline(Offline::OtherNodes) => "other-nodes".into(),
            Knob::CpusOffline(Offline::OtherSockets) => "other-sockets".into(),
            Knob::OneLlc => "one".into(),
            Knob::DmaLatency(us) => us.to_string(),
            Knob::Sched { value, .. } | Knob::Sysctl { value, .. } => value.clone(),
        }
    }

    /// Whether it changes which CPUs are online (applied before the per-CPU settings).
    pub fn topology(&self) -> bool {
        matches!(self, Knob::Smt(_) | Knob::CpusOffline(_))
    }
}

impl Tuning {
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty()
    }

    /// These settings with `over`'s on top: a key `over` sets replaces this one's.
    pub fn with(&self, over: &Tuning) -> Tuning {
        let keys: Vec<String> = over.settings.iter().map(|s| s.knob.key()).collect();
        let mut settings: Vec<Setting> = self
            .settings
            .iter()
            .filter(|s| !keys.contains(&s.knob.key()))
            .cloned()
            .collect();
        settings.extend(over.settings.iter().cloned());
        Tuning { settings }
    }

    /// "governor=performance, cpus_offline=1 (optional)" for plans and messages.
    pub fn describe(&self) -> String {
        self.settings
            .iter()
            .map(|s| {
                let opt = if s.optional { " (optional)" } else { "" };
                format!("{}={}{opt}", s.knob.key(), s.knob.value())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What a job ran with on one host: stored with the job as its `tuning` output (JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub host: String,
    /// `key=value` as declared, in effect and read back.
    pub settings: Vec<String>,
    /// Optional settings the machine lacks: `key: why`.
    pub unavailable: Vec<String>,
    /// The CPUs online during the job, as a list ("0-3"), and how many.
    pub online: String,
    pub nr_online: usize,
    /// The CPUs the workload was confined to, when a setting confined it.
    pub workload_cpus: Option<String>,
}

impl Record {
    /// "sut: governor=performance; online CPUs 0-3 (4); unavailable: turbo (…)".
    pub fn summary(&self) -> String {
        let mut parts = vec![format!(
            "{}: {}",
            self.host,
            if self.settings.is_empty() {
                "nothing set".to_string()
            } else {
                self.settings.join(", ")
            }
        )];
        parts.push(format!("online CPUs {} ({})", self.online, self.nr_online));
        if let Some(c) = &self.workload_cpus {
            parts.push(format!("workload on CPUs {c}"));
        }
        if !self.unavailable.is_empty() {
            parts.push(format!("unavailable: {}", self.unavailable.join("; ")));
        }
        parts.join("; ")
    }
}

/// "0-3,8" → [0, 1, 2, 3, 8]; `None` when malformed.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b >= 8192 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                let c: u32 = part.parse().ok()?;
                if c >= 8192 {
                    return None;
                }
                out.push(c);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// [0, 1, 2, 5] → "0-2,5".
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        parts.push(if sorted[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", sorted[i])
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(knob: Knob) -> Setting {
        Setting { knob, optional: false }
    }

    #[test]
    fn a_variant_replaces_the_hosts_keys_and_adds_its_own() {
        let host = Tuning {
            settings: vec![
                set(Knob::Governor("performance".into())),
                set(Knob::Sysctl {
                    name: "vm.swappiness".into(),
                    value: "10".into(),
                }),
            ],
        };
        let variant = Tuning {
            settings: vec![
                set(Knob::Sysctl {
                    name: "vm.swappiness".into(),
                    value: "60".into(),
                }),
                set(Knob::CpusOffline(Offline::Cpus(vec![1]))),
            ],
        };
        assert_eq!(
            host.with(&variant).describe(),
            "governor=performance, sysctl.vm.swappiness=60, cpus_offline=1"
        );
        assert_eq!(cpu_list(&[5, 0, 1, 2, 7, 8]), "0-2,5,7-8");
    }
}
