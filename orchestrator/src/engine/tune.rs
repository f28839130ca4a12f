//! The tuning of one host on one boot: put in effect for each job (the host's settings, on
//! the SUT with the variant's on top), every knob noted in the database before it changes,
//! read back for each job's record, and put back (latest change first) when the boot's
//! jobs are over, when a setting cannot be had, or by `kreg resume` after a crash.

use kreg_protocol::client::AgentClient;
use sqlx::PgPool;

use super::error::HostError;
use super::knobs;
use crate::store;
use crate::tuning::resolve::{normal, parse_cpus, Machine};
use crate::tuning::{cpu_list, resolve, Record, Resolved, Tuning, Write};

/// A host's sysfs and procfs as the tuning model reads them, through its agent.
struct Knobs<'a>(&'a AgentClient);

impl Machine for Knobs<'_> {
    type Error = HostError;
    async fn read(&self, path: &str) -> Result<Option<String>, HostError> {
        knobs::read(self.0, path).await
    }
}

pub struct Tuner {
    pub host: String,
    boot_id: String,
    /// The CPUs online when the boot came up, before kreg took any offline.
    boot_online: Vec<u32>,
    /// The tuning in effect and what it resolved to.
    now: Option<(Tuning, Resolved)>,
    /// Knobs changed, in order, with the value each had: (path, before).
    changed: Vec<(String, String)>,
}

async fn online_cpus(client: &AgentClient) -> Result<Vec<u32>, HostError> {
    let path = "/sys/devices/system/cpu/online";
    let text = Knobs(client).read(path).await?.ok_or_else(|| format!("no {path}"))?;
    parse_cpus(&text).ok_or_else(|| format!("{path} reads {text:?}, not a CPU list").into())
}

impl Tuner {
    pub async fn new(client: &AgentClient, host: &str, boot_id: &str) -> Result<Tuner, HostError> {
        Ok(Tuner {
            host: host.to_string(),
            boot_id: boot_id.to_string(),
            boot_online: online_cpus(client).await?,
            now: None,
            changed: Vec::new(),
        })
    }

    /// The CPUs a setting confined the workload to.
    pub fn workload_cpus(&self) -> Option<&[u32]> {
        self.now.as_ref().and_then(|(_, r)| r.workload_cpus.as_deref())
    }

    /// Puts `want` in effect (from the boot's own state: what an earlier variant changed is
    /// put back first) unless it already is, and reads every knob back. On an error nothing
    /// stays changed.
    pub async fn ensure(
        &mut self,
        db: &PgPool,
        run_id: i64,
        client: &AgentClient,
        want: &Tuning,
    ) -> Result<Record, HostError> {
        if self.now.as_ref().map(|(t, _)| t) != Some(want) {
            self.restore(db, run_id, client).await?;
            let applied = self.apply(db, run_id, client, want).await;
            if let Err(e) = applied {
                return Err(match self.restore(db, run_id, client).await {
                    Ok(()) => format!("{e}; nothing stays changed").into(),
                    Err(put) => format!("{e}; and putting back what was changed failed: {put}").into(),
                });
            }
        }
        self.read_back(db, run_id, client).await
    }

    async fn apply(&mut self, db: &PgPool, run_id: i64, client: &AgentClient, want: &Tuning) -> Result<(), HostError> {
        let resolved = resolve(&Knobs(client), want, &self.boot_online).await?;
        for w in &resolved.writes {
            self.set(db, run_id, client, w).await?;
        }
        self.now = Some((want.clone(), resolved));
        Ok(())
    }

    /// One knob: its value before noted (once per boot), written, read back.
    async fn set(&mut self, db: &PgPool, run_id: i64, client: &AgentClient, w: &Write) -> Result<(), HostError> {
        let (key, path, value) = (w.key.as_str(), w.path.as_str(), w.value.as_str());
        let before = Knobs(client)
            .read(path)
            .await?
            .ok_or_else(|| format!("{key}: {path} is gone"))?;
        if normal(&before) == normal(value) {
            return Ok(());
        }
        if !self.changed.iter().any(|(p, _)| p == path) {
            store::record_tuning(db, run_id, &self.host, &self.boot_id, w, &before)
                .await
                .map_err(|e| e.to_string())?;
            self.changed.push((path.to_string(), before));
        }
        let back = knobs::write(client, path, value)
            .await
            .map_err(|e| format!("{key}: {e}"))?;
        if normal(&back) != normal(value) {
            return Err(format!("{key}: wrote {value} to {path}, it reads back as {}", back.trim()).into());
        }
        Ok(())
    }

    /// Every knob of the tuning in effect read back (one that drifted is written again),
    /// and the job's record.
    async fn read_back(&mut self, db: &PgPool, run_id: i64, client: &AgentClient) -> Result<Record, HostError> {
        let (tuning, resolved) = self.now.clone().expect("ensure applied a tuning");
        for w in &resolved.writes {
            let now = Knobs(client).read(&w.path).await?.unwrap_or_default();
            if normal(&now) != normal(&w.value) {
                tracing::warn!(host = %self.host, path = %w.path, was = %now.trim(), "a tuned knob drifted; set again");
                self.set(db, run_id, client, w).await?;
            }
        }
        let online = online_cpus(client).await?;
        if online != resolved.online {
            return Err(format!(
                "online CPUs are {}, the tuning wants {}",
                cpu_list(&online),
                cpu_list(&resolved.online)
            )
            .into());
        }
        let lacking: Vec<&String> = resolved.unavailable.iter().map(|(k, _)| k).collect();
        Ok(Record {
            host: self.host.clone(),
            settings: tuning
                .settings
                .iter()
                .filter(|s| !lacking.contains(&&s.knob.key()))
                .map(|s| format!("{}={}", s.knob.key(), s.knob.value()))
                .collect(),
            unavailable: resolved
                .unavailable
                .iter()
                .map(|(k, why)| format!("{k} ({why})"))
                .collect(),
            online: cpu_list(&online),
            nr_online: online.len(),
            workload_cpus: resolved.workload_cpus.as_deref().map(cpu_list),
        })
    }

    /// Every knob changed put back, latest first, each noted as put back.
    pub async fn restore(&mut self, db: &PgPool, run_id: i64, client: &AgentClient) -> Result<(), HostError> {
        self.now = None;
        let mut problems = Vec::new();
        while let Some((path, before)) = self.changed.pop() {
            match put_back(client, &path, &before).await {
                Ok(()) => store::setting_restored(db, run_id, &self.host, &self.boot_id, &path)
                    .await
                    .map_err(|e| e.to_string())?,
                Err(e) => problems.push(format!("{path} not put back to {}: {e}", normal(&before))),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; ").into())
        }
    }
}

/// Writes a knob's value before back (a choice list such as "[always] madvise never" by its
/// choice) and checks that it reads so.
pub async fn put_back(client: &AgentClient, path: &str, before: &str) -> Result<(), HostError> {
    let back = knobs::write(client, path, &normal(before))
        .await
        .map_err(|e| e.to_string())?;
    if normal(&back) == normal(before) {
        Ok(())
    } else {
        Err(format!("it reads {} after writing it back", back.trim()).into())
    }
}
