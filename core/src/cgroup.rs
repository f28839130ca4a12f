//! A job's cgroup (v2), as a scenario declares it: CPU bandwidth (`cpu.max`), weight,
//! cpuset, and a generated hierarchy whose leaves hold the workload's processes.

use serde::{Deserialize, Serialize};

/// `cgroup:` of a variant or a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cgroup {
    /// `cpu.max`'s quota, in each group holding the limits.
    pub quota: Option<Quota>,
    /// `cpu.max`'s period, in microseconds.
    pub period_us: u64,
    /// `cpu.weight` (1–10000).
    pub weight: Option<u32>,
    /// `cpuset.cpus`.
    pub cpus: Option<Vec<u32>>,
    /// Levels of groups below the top; the limits go on the first level.
    pub hierarchy: Option<Hierarchy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Quota {
    /// A share (0–1] of the CPUs the job may use: `50%`.
    Share(f64),
    /// A number of CPUs: `1.5`.
    Cpus(f64),
}

/// `hierarchy: { fanout: [2, 100, 10], depth: 5 }`: `fanout[i]` children per group at
/// level `i + 1`; levels past the list have one child each, down to `depth`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hierarchy {
    pub fanout: Vec<u32>,
    pub depth: u32,
}

impl Hierarchy {
    /// Children per level, `depth` levels.
    pub fn levels(&self) -> Vec<u32> {
        (0..self.depth as usize)
            .map(|i| self.fanout.get(i).copied().unwrap_or(1))
            .collect()
    }

    pub fn leaves(&self) -> u64 {
        self.levels().iter().map(|f| u64::from(*f)).product()
    }

    /// Groups below the top, all levels.
    pub fn groups(&self) -> u64 {
        let mut level = 1u64;
        self.levels()
            .iter()
            .map(|f| {
                level = level.saturating_mul(u64::from(*f));
                level
            })
            .fold(0u64, u64::saturating_add)
    }
}

impl Cgroup {
    /// The interface files and values for the groups holding the limits, for a job that
    /// may use `cpus` CPUs.
    pub fn limits(&self, cpus: usize) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(q) = self.quota {
            let cpus_worth = match q {
                Quota::Share(s) => s * cpus.max(1) as f64,
                Quota::Cpus(c) => c,
            };
            // The kernel takes at least 1 ms of quota.
            let quota = ((cpus_worth * self.period_us as f64).round() as u64).max(1000);
            out.push(("cpu.max".into(), format!("{quota} {}", self.period_us)));
        }
        if let Some(w) = self.weight {
            out.push(("cpu.weight".into(), w.to_string()));
        }
        if let Some(c) = &self.cpus {
            out.push(("cpuset.cpus".into(), crate::tuning::cpu_list(c)));
        }
        out
    }

    /// One line for plans and reports: `quota 50% of 2 CPUs, cpu.max "100000 100000",
    /// hierarchy 2/10/2 (40 leaves, limits on level 1)`; with `cpus` unknown (a plan),
    /// the quota as declared.
    pub fn describe(&self, cpus: Option<usize>) -> String {
        let mut parts = Vec::new();
        if let Some(q) = self.quota {
            let of = cpus.map_or("the job's CPUs".to_string(), |n| format!("{n} CPUs"));
            let what = match q {
                Quota::Share(s) => format!("{}% of {of}", fmt_num(s * 100.0)),
                Quota::Cpus(c) => format!("{} CPUs", fmt_num(c)),
            };
            parts.push(format!("quota {what}"));
        }
        if let Some(w) = self.weight {
            parts.push(format!("weight {w}"));
        }
        if let Some(c) = &self.cpus {
            parts.push(format!("cpuset {}", crate::tuning::cpu_list(c)));
        }
        if let Some(n) = cpus {
            for (file, value) in self.limits(n) {
                if file == "cpu.max" {
                    parts.push(format!("cpu.max \"{value}\""));
                }
            }
        }
        match &self.hierarchy {
            Some(h) => {
                let levels: Vec<String> = h.levels().iter().map(u32::to_string).collect();
                parts.push(format!(
                    "hierarchy {} ({} leaves, limits on level 1)",
                    levels.join("/"),
                    h.leaves()
                ));
            }
            None => parts.push("one group".into()),
        }
        parts.join(", ")
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(quota: Option<Quota>, hierarchy: Option<Hierarchy>) -> Cgroup {
        Cgroup {
            quota,
            period_us: 100_000,
            weight: None,
            cpus: None,
            hierarchy,
        }
    }

    #[test]
    fn a_share_of_the_cpus_becomes_cpu_max() {
        assert_eq!(
            cg(Some(Quota::Share(0.5)), None).limits(2),
            [("cpu.max".to_string(), "100000 100000".to_string())]
        );
        assert_eq!(cg(Some(Quota::Share(0.5)), None).limits(240)[0].1, "12000000 100000");
        assert_eq!(cg(Some(Quota::Cpus(1.5)), None).limits(8)[0].1, "150000 100000");
        assert_eq!(cg(Some(Quota::Cpus(0.0001)), None).limits(8)[0].1, "1000 100000");
        assert!(cg(None, None).limits(8).is_empty());
    }

    #[test]
    fn hierarchies_fill_their_depth_with_single_children() {
        let h = Hierarchy {
            fanout: vec![2, 100, 10],
            depth: 5,
        };
        assert_eq!(h.levels(), [2, 100, 10, 1, 1]);
        assert_eq!(h.leaves(), 2000);
        let d = cg(Some(Quota::Share(0.25)), Some(h)).describe(Some(4));
        assert_eq!(
            d,
            "quota 25% of 4 CPUs, cpu.max \"100000 100000\", hierarchy 2/100/10/1/1 (2000 leaves, limits on level 1)"
        );
    }
}
