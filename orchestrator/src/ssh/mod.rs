//! Machines reached over SSH: the host key checked against known_hosts or a pinned
//! fingerprint before anything is sent ([`hostkey`]), a login by public key
//! ([`session`]), the agent installed or upgraded through it ([`install`]) and spoken to
//! through a tunnel to its port on the machine's loopback ([`tunnel`]), reopened when
//! the connection dies.

pub mod hostkey;
pub mod install;
pub mod session;
pub mod tunnel;

use std::path::{Path, PathBuf};

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
pub async fn reach(spec: &SshSpec, agent_bin: &Path, token: &str) -> Result<Reached, String> {
    let setup = install::Setup::loopback(spec.agent_port);
    let session = Session::connect(spec).await.map_err(|e| e.to_string())?;
    let host_key = session.host_key.clone();
    let tunnel = Tunnel::start(spec, session, "127.0.0.1", spec.agent_port)
        .await
        .map_err(|e| format!("ssh {}: cannot open a local port for the tunnel: {e}", spec.target()))?;
    let session = tunnel.session().await.map_err(|e| e.to_string())?;
    let (outcome, client) = install::ensure(&session, agent_bin, token, &setup, &tunnel.url()).await?;
    if !outcome.systemd {
        let sha256 = install::sha256_of(agent_bin).map_err(|e| format!("{}: {e}", agent_bin.display()))?;
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

fn managed_path(data_dir: &Path, spec: &SshSpec) -> PathBuf {
    let safe: String = spec
        .target()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '@' | '.' | '_' | '-' | ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    data_dir.join("ssh").join(format!("{safe}.token"))
}

/// The token kreg keeps for the machine, when it has made one.
pub fn managed_token_if_any(data_dir: &Path, spec: &SshSpec) -> Option<String> {
    let path = managed_path(data_dir, spec);
    read_token(&path).ok()
}

/// The token kreg keeps for a machine reached over SSH when its entry names no token file:
/// `DATA_DIR/ssh/USER@ADDRESS:PORT.token`, made (random, mode 0600) on first use.
pub fn managed_token(data_dir: &Path, spec: &SshSpec) -> Result<(PathBuf, String), String> {
    let path = managed_path(data_dir, spec);
    let token = token_file(&path)?;
    Ok((path, token))
}

/// The token in `path`, made first (random, mode 0600, its folder created) when the file
/// does not exist. It is written whole under another name, then linked in: a second kreg
/// making the same file at once keeps the first one's token.
pub fn token_file(path: &Path) -> Result<String, String> {
    if !path.exists() {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let token = crate::lab::random_token().map_err(|e| e.to_string())?;
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        f.write_all(format!("{token}\n").as_bytes())
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        drop(f);
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    read_token(path)
}

/// A token file's token (its first line), as the agent reads it.
fn read_token(path: &Path) -> Result<String, String> {
    let token = kreg_protocol::wire::Token::read_file(path)?;
    crate::secrets::remember(token.expose());
    Ok(token.expose().to_string())
}
