//! A job's cgroup (v2), as a scenario declares it: CPU bandwidth (`cpu.max`), weight,
//! cpuset, and a generated hierarchy whose leaves hold the workload's processes.

use crate::Error;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::{Metric, MetricKind};

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

/// Checks that every process seen (cgroup path → processes) was in one of `leaves`; says
/// how the processes spread.
pub fn check_in_leaves(leaves: &[String], observed: &BTreeMap<String, u32>) -> Result<String, Error> {
    if observed.is_empty() {
        return Err(Error::unreadable("no process of the workload was seen in any cgroup"));
    }
    let outside: Vec<String> = observed
        .iter()
        .filter(|(cg, _)| !leaves.contains(cg))
        .map(|(cg, n)| format!("{n} in {cg}"))
        .collect();
    if !outside.is_empty() {
        return Err(Error::unreadable(format!(
            "the workload's processes were not all in its cgroup's leaves: {}",
            outside.join(", ")
        )));
    }
    let processes: u32 = observed.values().sum();
    Ok(format!(
        "{processes} processes seen in {} of {} leaves",
        observed.len(),
        leaves.len()
    ))
}

/// Sums each counter of the `cpu.stat` blocks of the limited groups (each block headed by a `# GROUP` line).
pub fn parse_cpu_stat(text: &str) -> Result<BTreeMap<String, u64>, Error> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::unreadable(format!("cpu.stat: unexpected line {line:?}")));
        };
        let v: u64 = value
            .parse()
            .map_err(|_| Error::unreadable(format!("cpu.stat: {key} is not a count: {value:?}")))?;
        *out.entry(key.to_string()).or_insert(0) += v;
    }
    Ok(out)
}

/// The throttling over the measured phase: periods, throttled periods, time throttled.
pub fn metrics(before: &str, after: &str) -> Result<Vec<Metric>, Error> {
    let (b, a) = (parse_cpu_stat(before)?, parse_cpu_stat(after)?);
    let delta = |k: &str| -> Result<f64, Error> {
        match (b.get(k), a.get(k)) {
            (Some(x), Some(y)) => Ok(y.saturating_sub(*x) as f64),
            _ => Err(Error::unreadable(format!(
                "cpu.stat has no {k} (a kernel without CONFIG_CFS_BANDWIDTH?)"
            ))),
        }
    };
    let usage = delta("usage_usec")?;
    let mut out = vec![Metric::new(
        "cg_usage_ms",
        usage / 1000.0,
        "ms",
        false,
        MetricKind::Mean,
    )];
    // The bandwidth counters exist only where the kernel has CFS bandwidth control.
    if a.contains_key("nr_periods") {
        out.push(Metric::new(
            "cg_nr_periods",
            delta("nr_periods")?,
            "",
            false,
            MetricKind::Count,
        ));
        out.push(Metric::new(
            "cg_nr_throttled",
            delta("nr_throttled")?,
            "",
            false,
            MetricKind::Count,
        ));
        out.push(Metric::new(
            "cg_throttled_ms",
            delta("throttled_usec")? / 1000.0,
            "ms",
            false,
            MetricKind::Mean,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod cpu_stat_tests {
    use super::*;
    use std::collections::BTreeMap;

    const BEFORE: &str = "# /sys/fs/cgroup/kreg/t/g0\nusage_usec 100\nuser_usec 60\nsystem_usec 40\nnr_periods 2\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n\
                          # /sys/fs/cgroup/kreg/t/g1\nusage_usec 50\nuser_usec 25\nsystem_usec 25\nnr_periods 1\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n";
    const AFTER: &str = "# /sys/fs/cgroup/kreg/t/g0\nusage_usec 900100\nuser_usec 60\nsystem_usec 40\nnr_periods 30\nnr_throttled 12\nthrottled_usec 250000\nnr_bursts 0\nburst_usec 0\n\
                         # /sys/fs/cgroup/kreg/t/g1\nusage_usec 100050\nuser_usec 25\nsystem_usec 25\nnr_periods 11\nnr_throttled 3\nthrottled_usec 50500\nnr_bursts 0\nburst_usec 0\n";

    #[test]
    fn cpu_stat_deltas_are_summed_over_the_limited_groups() {
        let m = metrics(BEFORE, AFTER).unwrap();
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(get("cg_usage_ms"), 1000.0);
        assert_eq!(get("cg_nr_periods"), 38.0);
        assert_eq!(get("cg_nr_throttled"), 15.0);
        assert_eq!(get("cg_throttled_ms"), 300.5);
    }

    #[test]
    fn a_kernel_without_bandwidth_control_gives_usage_only_and_garbage_is_an_error() {
        let m = metrics("usage_usec 1\n", "usage_usec 2001\n").unwrap();
        assert_eq!(m.len(), 1);
        assert!(metrics("usage_usec x\n", "usage_usec 1\n").is_err());
        assert!(metrics("nr_periods 1\n", "nr_periods 2\n").is_err());
    }

    #[test]
    fn processes_outside_the_leaves_are_named() {
        let leaves = vec!["/c/kreg/t/g0".to_string(), "/c/kreg/t/g1".to_string()];
        let seen: BTreeMap<String, u32> = [("/c/kreg/t/g0".to_string(), 3), ("/c/kreg/t/g1".to_string(), 2)].into();
        assert_eq!(
            check_in_leaves(&leaves, &seen).unwrap(),
            "5 processes seen in 2 of 2 leaves"
        );
        let stray: BTreeMap<String, u32> = [("/c/kreg/t/g0".to_string(), 3), ("/c/system.slice".to_string(), 1)].into();
        let e = check_in_leaves(&leaves, &stray).unwrap_err();
        assert!(e.to_string().contains("1 in /c/system.slice"), "{e}");
        assert!(check_in_leaves(&leaves, &BTreeMap::new()).is_err());
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
