//! A job's cgroup on the host its workload (or, for a two-host kind, its server) runs on:
//! made before, its limits read back, the workload's processes checked to be in its leaves,
//! `cpu.stat` of the groups holding the limits read around the measured phase, and the
//! tree removed after.

use std::collections::BTreeMap;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{CgroupTree, CgroupsMade};

use super::error::HostError;
use crate::cgroup::Cgroup;
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
    /// What it is, for the job's record and the report.
    pub setup: crate::record::CgroupSetup,
    /// Groups in the tree, its top included.
    pub groups: u64,
}

async fn read(client: &AgentClient, path: &str) -> Result<String, HostError> {
    super::knobs::read_present(client, path).await
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
    let made = client
        .make_cgroups(tree)
        .await
        .map_err(HostError::agent("make_cgroups"))?;
    let placed = Placed {
        client: client.clone(),
        host: host.to_string(),
        name,
        setup: crate::record::CgroupSetup {
            what: format!("{} on {host}", spec.describe(Some(n))),
            top: made.top.clone(),
        },
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
    pub fn check(&self, observed: &BTreeMap<String, u32>) -> Result<String, HostError> {
        Ok(crate::cgroup::check_in_leaves(&self.made.leaves, observed)?)
    }

    /// Whether a thread's cgroup (as `/proc/PID/cgroup` gives it, from the mount) is a leaf.
    pub fn holds(&self, cgroup: &str) -> bool {
        let path = format!("{}{cgroup}", self.made.mount.trim_end_matches('/'));
        self.made.leaves.contains(&path)
    }

    /// Removes the tree, checking every group went.
    pub async fn remove(&self) -> Result<u64, HostError> {
        let removed = self
            .client
            .remove_cgroups(&self.name)
            .await
            .map_err(HostError::agent("remove_cgroups"))?;
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
    client
        .remove_cgroups(&format!("run-{run}"))
        .await
        .map_err(HostError::agent("remove_cgroups"))
}
