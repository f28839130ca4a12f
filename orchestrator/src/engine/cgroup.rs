//! A job's cgroup on the host its workload (or, for a two-host kind, its server) runs on:
//! made before, its limits read back, the workload's processes checked to be in its leaves,
//! `cpu.stat` of the groups holding the limits read around the measured phase, and the
//! tree removed after.

use std::collections::BTreeMap;

use kreg_protocol::client::{AgentClient, CONTROL_TIMEOUT};
use kreg_protocol::wire::{CgroupTree, CgroupsMade, Step, StepOutput};

use super::error::HostError;
use crate::cgroup::Cgroup;
use crate::parse::{Metric, MetricKind};
use crate::scenario::{Variant, Workload};

/// The cgroup a job runs in: the workload's own, else its variant's.
pub fn spec_for<'a>(variant: &'a Variant, workload: &'a Workload) -> Option<&'a Cgroup> {
    workload.cgroup.as_ref().or(variant.cgroup.as_ref())
}

/// A tree made on a host.
pub struct Placed {
    pub client: AgentClient,
    pub host: String,
    pub name: String,
    pub made: CgroupsMade,
    /// What it is, for the job's raw outputs and the report.
    pub description: String,
    /// Groups in the tree, its top included.
    pub groups: u64,
}

async fn step(client: &AgentClient, step: Step) -> Result<StepOutput, HostError> {
    let what = step.name();
    client
        .step(step, CONTROL_TIMEOUT * 4)
        .await
        .map_err(HostError::agent(what.to_string()))
}

async fn read(client: &AgentClient, path: &str) -> Result<String, HostError> {
    match step(client, Step::ReadKnob { path: path.into() }).await? {
        StepOutput::Knob(k) => Ok(k.value),
        other => Err(format!("unexpected answer to read_knob: {other:?}").into()),
    }
}

/// How many CPUs the job may use: its CPU list, or the host's online CPUs (as tuning
/// left them).
async fn cpus_for(client: &AgentClient, cpus: Option<&[u32]>) -> Result<usize, HostError> {
    if let Some(c) = cpus {
        return Ok(c.len());
    }
    let online = read(client, "/sys/devices/system/cpu/online").await?;
    crate::tuning::parse_cpu_list(online.trim())
        .map(|l| l.len())
        .ok_or_else(|| HostError::Other(format!("/sys/devices/system/cpu/online reads {online:?}")))
}

/// Makes the tree for `spec` on `host`, its limits read back from the first group
/// holding them.
pub async fn make(
    client: &AgentClient,
    host: &str,
    name: String,
    spec: &Cgroup,
    cpus: Option<&[u32]>,
) -> Result<Placed, HostError> {
    let n = cpus_for(client, cpus).await?;
    let limits = spec.limits(n);
    let fanout = spec.hierarchy.as_ref().map(|h| h.levels()).unwrap_or_default();
    let groups = 1 + spec.hierarchy.as_ref().map_or(0, |h| h.groups());
    let tree = CgroupTree {
        name: name.clone(),
        fanout,
        limits: limits.clone(),
    };
    let made = match step(client, Step::MakeCgroups(tree)).await? {
        StepOutput::Cgroups(m) => m,
        other => return Err(format!("unexpected answer to make_cgroups: {other:?}").into()),
    };
    let placed = Placed {
        client: client.clone(),
        host: host.to_string(),
        name,
        description: format!("{} on {host}, top {}", spec.describe(Some(n)), made.top),
        made,
        groups,
    };
    if let Err(e) = placed.read_back(&limits).await {
        let _ = placed.remove().await;
        return Err(e);
    }
    Ok(placed)
}

impl Placed {
    async fn read_back(&self, limits: &[(String, String)]) -> Result<(), HostError> {
        let Some(group) = self.made.limited.first() else {
            return Ok(());
        };
        for (file, want) in limits {
            let path = format!("{group}/{file}");
            let got = read(&self.client, &path).await?;
            let same = if file == "cpuset.cpus" {
                crate::tuning::parse_cpu_list(got.trim()) == crate::tuning::parse_cpu_list(want)
            } else {
                got.trim() == want
            };
            if !same {
                return Err(HostError::Other(format!(
                    "wrote {want:?} to {path}, it reads back as {:?}",
                    got.trim()
                )));
            }
        }
        Ok(())
    }

    pub fn leaves(&self) -> Vec<String> {
        self.made.leaves.clone()
    }

    /// `cpu.stat` of each group holding the limits, as one text (a `# path` line before
    /// each).
    pub async fn cpu_stat(&self) -> Result<String, HostError> {
        let mut out = String::new();
        for g in &self.made.limited {
            let text = read(&self.client, &format!("{g}/cpu.stat")).await?;
            out.push_str(&format!("# {g}\n{}\n", text.trim_end()));
        }
        Ok(out)
    }

    /// Checks that every process seen (cgroup path → processes) was in a leaf; says how
    /// the processes spread.
    pub fn check(&self, observed: &BTreeMap<String, u32>) -> Result<String, String> {
        check_in_leaves(&self.made.leaves, observed)
    }

    /// Whether a thread's cgroup (as `/proc/PID/cgroup` gives it, from the mount) is a leaf.
    pub fn holds(&self, cgroup: &str) -> bool {
        let path = format!("{}{cgroup}", self.made.mount.trim_end_matches('/'));
        self.made.leaves.contains(&path)
    }

    /// Removes the tree, checking every group went.
    pub async fn remove(&self) -> Result<u64, HostError> {
        let removed = match step(
            &self.client,
            Step::RemoveCgroups {
                name: self.name.clone(),
            },
        )
        .await?
        {
            StepOutput::CgroupsRemoved { removed } => removed,
            other => return Err(format!("unexpected answer to remove_cgroups: {other:?}").into()),
        };
        if removed != self.groups {
            return Err(HostError::Other(format!(
                "removed {removed} cgroups of {} under {}",
                self.groups, self.made.top
            )));
        }
        Ok(removed)
    }
}

/// Removes every tree of run `run` on a host (`kreg/run-N`): what a crashed attempt left,
/// and the run's folder once its jobs are done. How many groups went.
pub async fn clear_run(client: &AgentClient, run: i64) -> Result<u64, HostError> {
    match step(
        client,
        Step::RemoveCgroups {
            name: format!("run-{run}"),
        },
    )
    .await?
    {
        StepOutput::CgroupsRemoved { removed } => Ok(removed),
        other => Err(format!("unexpected answer to remove_cgroups: {other:?}").into()),
    }
}

fn check_in_leaves(leaves: &[String], observed: &BTreeMap<String, u32>) -> Result<String, String> {
    if observed.is_empty() {
        return Err("no process of the workload was seen in any cgroup".into());
    }
    let outside: Vec<String> = observed
        .iter()
        .filter(|(cg, _)| !leaves.contains(cg))
        .map(|(cg, n)| format!("{n} in {cg}"))
        .collect();
    if !outside.is_empty() {
        return Err(format!(
            "the workload's processes were not all in its cgroup's leaves: {}",
            outside.join(", ")
        ));
    }
    let processes: u32 = observed.values().sum();
    Ok(format!(
        "{processes} processes seen in {} of {} leaves",
        observed.len(),
        leaves.len()
    ))
}

/// Sums each counter of the `cpu.stat` blocks of [`Placed::cpu_stat`].
pub fn parse_cpu_stat(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("cpu.stat: unexpected line {line:?}"));
        };
        let v: u64 = value
            .parse()
            .map_err(|_| format!("cpu.stat: {key} is not a count: {value:?}"))?;
        *out.entry(key.to_string()).or_insert(0) += v;
    }
    Ok(out)
}

/// The throttling over the measured phase: periods, throttled periods, time throttled.
pub fn metrics(before: &str, after: &str) -> Result<Vec<Metric>, String> {
    let (b, a) = (parse_cpu_stat(before)?, parse_cpu_stat(after)?);
    let delta = |k: &str| -> Result<f64, String> {
        match (b.get(k), a.get(k)) {
            (Some(x), Some(y)) => Ok(y.saturating_sub(*x) as f64),
            _ => Err(format!("cpu.stat has no {k} (a kernel without CONFIG_CFS_BANDWIDTH?)")),
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
mod tests {
    use super::*;

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
        assert!(e.contains("1 in /c/system.slice"), "{e}");
        assert!(check_in_leaves(&leaves, &BTreeMap::new()).is_err());
    }
}
