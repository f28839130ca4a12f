//! Machines reached over SSH: the host key checked against known_hosts or a pinned
//! fingerprint before anything is sent ([`hostkey`]), a login by public key
//! ([`session`]), the agent installed or upgraded through it ([`install`]) and spoken to
//! through a tunnel to its port on the machine's loopback ([`tunnel`]), reopened when
//! the connection dies.

pub mod hostkey;
pub mod install;
pub mod session;
pub mod tunnel;

use std::path::Path;

use kreg_protocol::client::AgentClient;

pub use session::{Session, SshError};
pub use tunnel::Tunnel;

use crate::scenario::SshSpec;

/// An agent reached over SSH: its client (through the tunnel), the tunnel, and what was
/// done to get it running.
pub struct Reached {
    pub client: AgentClient,
    pub tunnel: Tunnel,
    pub outcome: install::Outcome,
    /// The host key's fingerprint.
    pub host_key: String,
}

/// Connects to the machine, makes it run the controller's agent on its loopback and
/// opens the tunnel to it.
pub async fn reach(spec: &SshSpec, agent_bin: &Path, token: &str) -> Result<Reached, SshError> {
    reach_fenced(spec, agent_bin, token, None).await
}

/// [`reach`] under a fleet lease: every request to the agent, from the first, carries
/// `epoch` (the agent, once fenced, refuses requests without one).
pub async fn reach_fenced(
    spec: &SshSpec,
    agent_bin: &Path,
    token: &str,
    epoch: Option<u64>,
) -> Result<Reached, SshError> {
    let setup = install::Setup::loopback(spec.agent_port);
    let session = Session::connect(spec).await?;
    let host_key = session.host_key.clone();
    let tunnel = Tunnel::start(spec, session, "127.0.0.1", spec.agent_port)
        .await
        .map_err(|e| {
            SshError::Agent(format!(
                "ssh {}: cannot open a local port for the tunnel: {e}",
                spec.target()
            ))
        })?;
    let session = tunnel.session().await?;
    let (outcome, client) = install::ensure(
        &session,
        agent_bin,
        token,
        &setup,
        install::Via {
            url: &tunnel.url(),
            epoch,
        },
    )
    .await?;
    if !outcome.systemd {
        let sha256 =
            install::sha256_of(agent_bin).map_err(|e| SshError::Agent(format!("{}: {e}", agent_bin.display())))?;
        tunnel.revive_with(install::Revive {
            token: token.to_string(),
            setup,
            sha256,
        });
    }
    Ok(Reached {
        client,
        tunnel,
        outcome,
        host_key,
    })
}
