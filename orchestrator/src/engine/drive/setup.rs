//! The driver's set-up of a job beyond the boot: each host's tuning put in effect, read
//! back and put back; a job's CPUs; its own cgroup, and the run's cgroups cleared.

use std::collections::HashMap;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::Identity;

use super::{Booted, Driver, Failure};
use crate::engine::Event;
use crate::record::{Outputs, RawKind};
use crate::scenario::{Variant, Workload};
use crate::store::JobRow;

impl Driver<'_> {
    /// The tuning each host declares, put in effect after the boot (the SUT's variants add
    /// theirs job by job). On a failure, what was changed is put back.
    pub(super) async fn tune_hosts(
        &mut self,
        sut_id: &Identity,
    ) -> Result<HashMap<String, crate::engine::tune::Tuner>, Failure> {
        let variants_tune = self.scenario.variants.iter().any(|v| !v.tuning.is_empty());
        let mut tuners = HashMap::new();
        for h in &self.scenario.hosts {
            let is_sut = h.name == self.sut;
            if h.tuning.is_empty() && !(is_sut && variants_tune) {
                continue;
            }
            let failure = |detail: String| Failure::Tuning {
                host: h.name.clone(),
                detail,
            };
            let Some(client) = self.conns[&h.name].client().cloned() else {
                self.untune(&mut tuners).await;
                return Err(Failure::NotConnected(h.name.clone()));
            };
            let boot_id = if is_sut {
                sut_id.boot_id.clone()
            } else {
                client.identity().await.map_err(|e| failure(e.to_string()))?.boot_id
            };
            let mut tuner = match crate::engine::tune::Tuner::new(&client, &h.name, &boot_id).await {
                Ok(t) => t,
                Err(e) => {
                    self.untune(&mut tuners).await;
                    return Err(failure(e.to_string()));
                }
            };
            if !h.tuning.is_empty() {
                if let Err(e) = tuner.ensure(self.db, self.run.id, &client, &h.tuning).await {
                    self.untune(&mut tuners).await;
                    return Err(failure(e.to_string()));
                }
            }
            tuners.insert(h.name.clone(), tuner);
        }
        Ok(tuners)
    }

    /// Puts every tuned knob back; what could not be is said (`kreg resume` tries again).
    pub(super) async fn untune(&mut self, tuners: &mut HashMap<String, crate::engine::tune::Tuner>) {
        for (host, tuner) in tuners.iter_mut() {
            let Some(client) = self.conns[host].client().cloned() else {
                continue;
            };
            if let Err(e) = tuner.restore(self.db, self.run.id, &client).await {
                self.ledger.say(Event::Warning {
                    message: format!(
                        "{host}: tuning not all put back ({e}); `kreg resume {}` tries again",
                        self.run.id
                    ),
                });
            }
        }
    }

    /// Each tuned host's tuning for a variant's jobs in effect and read back: a record per
    /// host (the kind of raw output it is stored as, and its JSON).
    pub(super) async fn tune_for(&mut self, booted: &mut Booted, variant: &Variant) -> Result<Outputs, Failure> {
        let mut out = Outputs::default();
        let mut hosts: Vec<String> = booted.tuners.keys().cloned().collect();
        hosts.sort();
        for host in hosts {
            let spec = self.scenario.host(&host).expect("tuners are of the scenario's hosts");
            let want = if host == self.sut {
                spec.tuning.with(&variant.tuning)
            } else {
                spec.tuning.clone()
            };
            let client = self.conns[&host]
                .client()
                .cloned()
                .ok_or_else(|| Failure::NotConnected(host.clone()))?;
            let tuner = booted.tuners.get_mut(&host).expect("listed");
            let record = tuner
                .ensure(self.db, self.run.id, &client, &want)
                .await
                .map_err(|detail| Failure::Tuning {
                    host: host.clone(),
                    detail: detail.to_string(),
                })?;
            let kind = RawKind::Tuning((host != self.sut).then(|| host.clone()));
            out.push(kind, serde_json::to_string(&record).expect("a record serializes"));
        }
        Ok(out)
    }

    /// A single-host job's own cgroup, made on its host (a two-host workload's is its
    /// server's, made with the server).
    pub(super) async fn job_cgroup(
        &self,
        variant: &Variant,
        workload: &Workload,
        runner: &AgentClient,
        cpus: Option<&[u32]>,
        j: &JobRow,
    ) -> Result<Option<crate::engine::cgroup::Placed>, Failure> {
        let spec = match crate::engine::cgroup::spec_for(variant, workload) {
            Some(s) if workload.kind.server_host().is_none() => s,
            _ => return Ok(None),
        };
        let name = format!("run-{}/job-{}", self.run.id, j.id);
        crate::engine::cgroup::make(runner, &workload.on, name, spec, cpus)
            .await
            .map(Some)
            .map_err(|e| Failure::Cgroup {
                host: workload.on.clone(),
                detail: e.to_string(),
            })
    }

    /// The run's cgroups on every host removed: at a boot (what a crashed attempt left) and
    /// after a kernel's jobs.
    pub(super) async fn clear_cgroups(&mut self) {
        if !self.scenario.uses_cgroups() {
            return;
        }
        for h in &self.scenario.hosts {
            if let Some(c) = self.conns[&h.name].client() {
                if let Err(e) = crate::engine::cgroup::clear_run(c, self.run.id).await {
                    self.ledger.say(Event::Warning {
                        message: format!("{}: the run's cgroups could not be removed: {e}", h.name),
                    });
                }
            }
        }
    }

    /// A job's tuning in effect: the records to store with it, and its workload's CPUs.
    pub(super) async fn tuned_job(
        &mut self,
        booted: &mut Booted,
        variant: &Variant,
        workload: &Workload,
    ) -> Result<(Outputs, Option<Vec<u32>>), Failure> {
        let records = self.tune_for(booted, variant).await?;
        let cpus = Self::cpus_on(booted, variant, &workload.on)?;
        Ok((records, cpus))
    }

    /// The CPUs a workload (or server) on `host` may use: the variant's, within the cache
    /// the host's tuning confined it to.
    pub(super) fn cpus_on(booted: &Booted, variant: &Variant, host: &str) -> Result<Option<Vec<u32>>, Failure> {
        let llc = booted.tuners.get(host).and_then(|t| t.workload_cpus());
        match (variant.cpus.as_deref(), llc) {
            (None, None) => Ok(None),
            (Some(v), None) => Ok(Some(v.to_vec())),
            (None, Some(l)) => Ok(Some(l.to_vec())),
            (Some(v), Some(l)) => {
                let both: Vec<u32> = v.iter().copied().filter(|c| l.contains(c)).collect();
                if both.is_empty() {
                    return Err(Failure::Variant(format!(
                        "variant {}: its CPUs {} and the last-level cache's {} have none in common",
                        variant.name,
                        crate::tuning::cpu_list(v),
                        crate::tuning::cpu_list(l)
                    )));
                }
                Ok(Some(both))
            }
        }
    }
}
