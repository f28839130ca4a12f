//! Reaching a host's agent: at its URL on an http host; through SSH on an ssh host, after
//! kreg installed, upgraded or started the agent there.

use kreg_protocol::client::AgentClient;

use super::error::HostError;
use crate::config::Config;
use crate::scenario::{Host, HttpTransport, SshTransport, Transport};
use crate::ssh;

/// The agents already reached (by the preflight), by host name: the engine takes them
/// over instead of logging in again.
pub type Reached = std::collections::HashMap<String, Agent>;

/// A host's agent.
pub struct Agent {
    pub client: AgentClient,
    /// How the engine reaches it, as the stored rows say: `http URL` or `ssh USER@HOST:PORT`.
    pub reached: String,
    /// For an ssh host: the tunnel (the client goes through it) and what was done to get
    /// the agent running.
    pub ssh: Option<(ssh::Tunnel, ssh::install::Outcome)>,
    /// The machine as an http host kreg boots kernels on (an ssh host's URL is the tunnel's).
    pub how: HttpTransport,
}

/// The token of an ssh host: its `token_file`, or the one kreg keeps for the machine.
pub fn ssh_token(t: &SshTransport, cfg: &Config) -> Result<(std::path::PathBuf, String), HostError> {
    match &t.token_file {
        Some(f) => Ok((f.clone(), crate::token::read(f)?)),
        None => Ok(crate::token::Kept::Ssh.read_or_make(&cfg.data_dir, &t.ssh)?),
    }
}

/// Reaches the agent of `host` (an http or ssh host; a lab host has none before its VM
/// starts).
pub async fn agent(host: &Host, cfg: &Config) -> Result<Option<Agent>, HostError> {
    match &host.transport {
        Transport::Http(http) => {
            let token = crate::token::read(&http.token_file)?;
            let client = match &http.tls_fingerprint {
                Some(fp) => AgentClient::pinned(&http.url, &token, fp)?,
                None => AgentClient::new(&http.url, &token),
            };
            Ok(Some(Agent {
                client,
                reached: format!("http {}", http.url),
                ssh: None,
                how: http.clone(),
            }))
        }
        Transport::Ssh(t) => {
            let (token_file, token) = ssh_token(t, cfg)?;
            let r = ssh::reach(&t.ssh, &cfg.agent_bin, &token).await?;
            tracing::info!(host = %host.name, "ssh {}: agent {}", t.ssh.target(), r.outcome);
            let how = HttpTransport {
                url: r.tunnel.url(),
                token_file,
                tls_fingerprint: None,
                insecure: false,
                machine: t.machine.clone(),
            };
            Ok(Some(Agent {
                client: r.client,
                reached: format!("ssh {} (host key {})", t.ssh.target(), r.host_key),
                ssh: Some((r.tunnel, r.outcome)),
                how,
            }))
        }
        Transport::Lab { .. } => Ok(None),
    }
}
