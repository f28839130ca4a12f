//! Reaching a machine's agent (`Agent`: how it is reached, its client, and the scenario's
//! `Machine`): at its URL on an http host; through SSH on an ssh host, after
//! kreg installed, upgraded or started the agent there.

use kreg_protocol::client::AgentClient;

use super::error::HostError;
use crate::config::Config;
use crate::scenario::{Host, Machine, PoolMachine, SshTransport, Transport};
use crate::ssh;
use crate::store::fleet::Lease;

/// The agents already reached (by the preflight), by host name: the engine takes them
/// over instead of logging in again.
pub type Reached = std::collections::HashMap<String, Agent>;

/// How a machine's agent is reached.
pub enum Reach {
    /// At its URL (`insecure`: plain http to another machine, said on purpose).
    Http { url: String, insecure: bool },
    /// Through SSH: the tunnel the client goes through, the host key verified, and what was
    /// done to get the agent running.
    Ssh {
        target: String,
        host_key: String,
        tunnel: ssh::Tunnel,
        outcome: ssh::install::Outcome,
    },
}

impl Reach {
    /// As the stored rows say: `http URL` or `ssh USER@HOST:PORT (host key …)`.
    pub fn describe(&self) -> String {
        match self {
            Reach::Http { url, .. } => format!("http {url}"),
            Reach::Ssh { target, host_key, .. } => format!("ssh {target} (host key {host_key})"),
        }
    }
}

/// A machine with its agent: how it is reached, its client, and how kreg boots, resets and
/// watches it (the scenario's `Machine`, read once).
pub struct Agent {
    pub client: AgentClient,
    pub reach: Reach,
    pub machine: Machine,
}

/// The token of an ssh host: its `token_file`, or the one kreg keeps for the machine.
fn ssh_token(t: &SshTransport, cfg: &Config) -> Result<String, HostError> {
    match &t.token_file {
        Some(f) => Ok(crate::token::read(f)?),
        None => Ok(crate::token::Kept::Ssh.read_or_make(&cfg.data_dir, &t.ssh)?.1),
    }
}

/// Reaches the agent of `host` (an http or ssh host; a lab host has none before its VM
/// starts). Under a fleet `lease`, every request of the client carries its epoch, so that
/// the agent refuses a controller whose lease was taken over.
pub async fn agent(host: &Host, cfg: &Config, lease: Option<&Lease>) -> Result<Option<Agent>, HostError> {
    let epoch = lease.map(Lease::agent_epoch).or(cfg.agent_epoch);
    match &host.transport {
        Transport::Http(http) => {
            let token = crate::token::read(&http.token_file)?;
            let client = match &http.tls_fingerprint {
                Some(fp) => AgentClient::pinned(&http.url, &token, fp)?,
                None => AgentClient::new(&http.url, &token),
            };
            if let Some(e) = epoch {
                client.fence(e);
            }
            Ok(Some(Agent {
                client,
                reach: Reach::Http {
                    url: http.url.clone(),
                    insecure: http.insecure,
                },
                machine: http.machine.clone(),
            }))
        }
        Transport::Ssh(t) => {
            let token = ssh_token(t, cfg)?;
            let r = ssh::reach_fenced(&t.ssh, &cfg.agent_bin, &token, epoch).await?;
            tracing::info!(host = %host.name, "ssh {}: agent {}", t.ssh.target(), r.outcome);
            Ok(Some(Agent {
                client: r.client,
                reach: Reach::Ssh {
                    target: t.ssh.target(),
                    host_key: r.host_key,
                    tunnel: r.tunnel,
                    outcome: r.outcome,
                },
                machine: t.machine.clone(),
            }))
        }
        Transport::Lab { .. } => Ok(None),
    }
}

/// The id the agent of pool machine `m` reports (None: a lab machine, or an agent that has
/// none), or why it could not be asked within `wait`.
pub async fn agent_id(m: &PoolMachine, cfg: &Config, wait: std::time::Duration) -> Result<Option<String>, HostError> {
    let host = Host {
        name: m.name.clone(),
        role: m.role,
        transport: m.transport.clone(),
        tuning: Default::default(),
    };
    let asked = async {
        let Some(a) = agent(&host, cfg, None).await? else {
            return Ok(None);
        };
        let id = a.client.identity().await?;
        Ok(Some(id.agent_id).filter(|i| !i.is_empty()))
    };
    tokio::time::timeout(wait, asked)
        .await
        .map_err(|_| HostError::Other(format!("no answer in {} s", wait.as_secs())))?
}
