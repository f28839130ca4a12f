//! One SSH connection to a machine: the host key checked before anything is sent, public
//! key authentication, commands run with their stdin, stdout, stderr and exit status, and
//! channels to the agent's port on the machine's loopback.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::{PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::ChannelMsg;

use super::hostkey::{self, HostKeyError, Trust};
use crate::scenario::SshSpec;

/// How long a TCP connect and the SSH handshake and login may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("ssh {target}: {cause}")]
    HostKey { target: String, cause: Box<HostKeyError> },
    #[error("ssh {target}: cannot connect: {cause}")]
    Connect { target: String, cause: String },
    #[error(
        "ssh {target}: authentication failed: the server did not accept the key {identity} ({fingerprint}) for user {user}; \
         add its public key to ~{user}/.ssh/authorized_keys on the machine (it accepts: {methods})"
    )]
    Auth {
        target: String,
        user: String,
        identity: String,
        fingerprint: String,
        methods: String,
    },
    #[error("ssh {target}: identity {path}: {cause}")]
    Identity {
        target: String,
        path: String,
        cause: String,
    },
    #[error("ssh {target}: {what}: {cause}")]
    Channel {
        target: String,
        what: String,
        cause: String,
    },
    /// The agent could not be installed, started or reached through the tunnel: said in
    /// full (the machine, the step, the cause).
    #[error("{0}")]
    Agent(String),
}

impl SshError {
    /// Whether trying again later may help (the network, a machine rebooting), rather
    /// than a refused host key, a refused login or an unreadable identity.
    pub fn is_transient(&self) -> bool {
        matches!(self, SshError::Connect { .. } | SshError::Channel { .. })
    }
}

/// What the host-key check decided, kept by the handler for the caller.
#[derive(Default)]
struct Checked {
    trust: Option<Trust>,
    refused: Option<Box<HostKeyError>>,
    fingerprint: Option<String>,
}

struct Handler {
    host: String,
    port: u16,
    files: Vec<PathBuf>,
    pin: Option<String>,
    checked: Arc<std::sync::Mutex<Checked>>,
}

impl client::Handler for Handler {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let mut checked = self.checked.lock().expect("host key lock");
        let key = match key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key,
            PublicKeyOrCertificate::Certificate(_) => {
                checked.refused = Some(Box::new(HostKeyError::Certificate {
                    host: hostkey::host_name(&self.host, self.port),
                }));
                return Ok(false);
            }
        };
        checked.fingerprint = Some(hostkey::fingerprint(key));
        match hostkey::verify(&self.host, self.port, key, &self.files, self.pin.as_deref()) {
            Ok(t) => {
                checked.trust = Some(t);
                Ok(true)
            }
            Err(e) => {
                checked.refused = Some(e);
                Ok(false)
            }
        }
    }
}

/// An open, authenticated SSH connection.
pub struct Session {
    handle: Handle<Handler>,
    /// `user@address:port`.
    pub target: String,
    /// The host key's fingerprint, and how it came to be trusted.
    pub host_key: String,
    pub trust: Trust,
    /// Whether the tunnel started the agent again over this connection already.
    pub(crate) revived: std::sync::atomic::AtomicBool,
}

/// The result of a command run over SSH.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit status; None when the command died of a signal or the channel closed first.
    pub status: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// One argument quoted for the remote shell (sshd runs commands through the user's
/// shell): every argument becomes a single word, whatever it holds.
pub fn quote(arg: &str) -> String {
    crate::text::shell_quote(arg).into_owned()
}

/// An argv as one command line for sshd, each argument quoted.
pub fn command_line(argv: &[&str]) -> String {
    argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

fn home_file(rel: &str) -> PathBuf {
    crate::config::home().join(rel)
}

/// The identity the spec names, else the user's first default key that exists.
fn identity_path(spec: &SshSpec, target: &str) -> Result<PathBuf, SshError> {
    if let Some(p) = &spec.identity {
        return Ok(p.clone());
    }
    let tried = ["ed25519", "ecdsa", "rsa"].map(|k| home_file(&format!(".ssh/id_{k}")));
    tried
        .iter()
        .find(|p| p.exists())
        .cloned()
        .ok_or_else(|| SshError::Identity {
            target: target.to_string(),
            path: "(default)".into(),
            cause: format!(
                "no identity given and none of {} exists: give `identity:` in the host's entry",
                tried
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

fn load_identity(spec: &SshSpec, target: &str) -> Result<(PathBuf, russh::keys::PrivateKey), SshError> {
    let path = identity_path(spec, target)?;
    let err = |cause: String| SshError::Identity {
        target: target.to_string(),
        path: path.display().to_string(),
        cause,
    };
    let passphrase = match &spec.passphrase_file {
        Some(f) => Some(kreg_protocol::wire::read_secret(f, "passphrase_file").map_err(|e| err(e.to_string()))?),
        None => None,
    };
    match russh::keys::load_secret_key(&path, passphrase.as_deref()) {
        Ok(k) => Ok((path, k)),
        Err(russh::keys::Error::KeyIsEncrypted) => Err(err(
            "the key is encrypted: give a file holding its passphrase as `passphrase_file:`".into(),
        )),
        // Never the passphrase: only what went wrong.
        Err(e) if passphrase.is_some() => Err(err(format!(
            "cannot decrypt or read the key ({e}); check passphrase_file"
        ))),
        Err(e) => Err(err(format!("cannot read the key: {e}"))),
    }
}

impl Session {
    /// Connects, checks the host key (nothing is sent before it is trusted) and logs in.
    pub async fn connect(spec: &SshSpec) -> Result<Session, SshError> {
        let target = spec.target();
        match tokio::time::timeout(CONNECT_TIMEOUT, Self::connect_inner(spec, &target)).await {
            Ok(r) => r,
            Err(_) => Err(SshError::Connect {
                target,
                cause: format!("no login within {} s", CONNECT_TIMEOUT.as_secs()),
            }),
        }
    }

    async fn connect_inner(spec: &SshSpec, target: &str) -> Result<Session, SshError> {
        let files = match &spec.known_hosts {
            Some(f) => vec![f.clone()],
            None => hostkey::default_files(),
        };
        // The identity is read first: a wrong passphrase is reported without a connection.
        let (identity, key) = load_identity(spec, target)?;
        let config = client_config(spec, &files);
        let checked = Arc::new(std::sync::Mutex::new(Checked::default()));
        let handler = Handler {
            host: spec.address.clone(),
            port: spec.port,
            files,
            pin: spec.host_key.clone(),
            checked: checked.clone(),
        };
        let connected = client::connect(Arc::new(config), (spec.address.as_str(), spec.port), handler).await;
        let mut handle = match connected {
            Ok(h) => h,
            Err(e) => {
                if let Some(cause) = checked.lock().expect("host key lock").refused.take() {
                    return Err(SshError::HostKey {
                        target: target.to_string(),
                        cause,
                    });
                }
                return Err(SshError::Connect {
                    target: target.to_string(),
                    cause: e.to_string(),
                });
            }
        };
        let (fingerprint, trust) = {
            let c = checked.lock().expect("host key lock");
            (c.fingerprint.clone().unwrap_or_default(), c.trust.clone())
        };
        let trust = trust.ok_or_else(|| SshError::Connect {
            target: target.to_string(),
            cause: "the server's host key was never checked".into(),
        })?;
        let hash = match handle.best_supported_rsa_hash().await {
            Ok(h) => h.flatten(),
            Err(_) => None,
        };
        let public = key.public_key().clone();
        let auth = handle
            .authenticate_publickey(&spec.user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
            .await
            .map_err(|e| SshError::Connect {
                target: target.to_string(),
                cause: format!("during login: {e}"),
            })?;
        match auth {
            russh::client::AuthResult::Success => Ok(Session {
                handle,
                target: target.to_string(),
                host_key: fingerprint,
                trust,
                revived: std::sync::atomic::AtomicBool::new(false),
            }),
            russh::client::AuthResult::Failure { remaining_methods, .. } => {
                let names: Vec<String> = remaining_methods
                    .iter()
                    .map(|m| format!("{m:?}").to_lowercase())
                    .collect();
                Err(SshError::Auth {
                    target: target.to_string(),
                    user: spec.user.clone(),
                    identity: identity.display().to_string(),
                    fingerprint: hostkey::fingerprint(&public),
                    methods: if names.is_empty() {
                        "nothing".into()
                    } else {
                        names.join(", ")
                    },
                })
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    fn channel_err(&self, what: &str, e: impl std::fmt::Display) -> SshError {
        SshError::Channel {
            target: self.target.clone(),
            what: what.to_string(),
            cause: e.to_string(),
        }
    }

    /// Runs `argv` (quoted for the remote shell) with `stdin`, within `timeout`.
    pub async fn run(&self, argv: &[&str], stdin: Option<&[u8]>, timeout: Duration) -> Result<Output, SshError> {
        let line = command_line(argv);
        let what = argv.first().copied().unwrap_or("command");
        match tokio::time::timeout(timeout, self.run_inner(&line, stdin, what)).await {
            Ok(r) => r,
            Err(_) => Err(self.channel_err(what, format!("no answer within {} s", timeout.as_secs()))),
        }
    }

    async fn run_inner(&self, line: &str, stdin: Option<&[u8]>, what: &str) -> Result<Output, SshError> {
        let mut ch = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| self.channel_err(what, e))?;
        ch.exec(true, line.as_bytes())
            .await
            .map_err(|e| self.channel_err(what, e))?;
        if let Some(data) = stdin {
            ch.data(data).await.map_err(|e| self.channel_err(what, e))?;
        }
        ch.eof().await.map_err(|e| self.channel_err(what, e))?;
        let mut out = Output {
            status: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        while let Some(msg) = ch.wait().await {
            match msg {
                ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, ext: 1 } => out.stderr.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => out.status = Some(exit_status),
                ChannelMsg::Failure => return Err(self.channel_err(what, "the server refused to run it")),
                _ => {}
            }
        }
        Ok(out)
    }

    /// A channel to `host:port` as the machine sees it (its loopback, say), as a byte stream.
    pub async fn forward(&self, host: &str, port: u16) -> Result<russh::ChannelStream<client::Msg>, SshError> {
        let open = self.handle.channel_open_direct_tcpip(host, port as u32, "127.0.0.1", 0);
        match tokio::time::timeout(Duration::from_secs(10), open).await {
            Ok(Ok(ch)) => Ok(ch.into_stream()),
            Ok(Err(e)) => Err(self.channel_err(&format!("a channel to {host}:{port} on the machine"), e)),
            // A session that does not answer is as good as dead.
            Err(_) => Err(SshError::Connect {
                target: self.target.clone(),
                cause: format!("a channel to {host}:{port} got no answer within 10 s"),
            }),
        }
    }

    pub async fn close(&self) {
        let _ = self.handle.disconnect(russh::Disconnect::ByApplication, "", "en").await;
    }
}

/// The client's settings: keepalives that notice a dead machine within 15 s, and the key
/// types the known_hosts files list for this host asked for first, as OpenSSH orders them.
fn client_config(spec: &SshSpec, files: &[PathBuf]) -> client::Config {
    let mut config = client::Config {
        inactivity_timeout: None,
        keepalive_interval: Some(Duration::from_secs(5)),
        keepalive_max: 3,
        nodelay: true,
        ..Default::default()
    };
    let known = hostkey::known_algorithms(files, &spec.address, spec.port);
    if !known.is_empty() && spec.host_key.is_none() {
        let (mut first, rest): (Vec<_>, Vec<_>) = config
            .preferred
            .key
            .iter()
            .cloned()
            .partition(|a| known.iter().any(|k| same_type(k, a)));
        first.extend(rest);
        config.preferred.key = first.into();
    }
    config
}

fn same_type(a: &russh::keys::Algorithm, b: &russh::keys::Algorithm) -> bool {
    use russh::keys::Algorithm::Rsa;
    matches!((a, b), (Rsa { .. }, Rsa { .. })) || a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_single_words_for_the_remote_shell() {
        assert_eq!(quote("/usr/local/lib/kreg"), "/usr/local/lib/kreg");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(
            command_line(&["sh", "-c", "echo $1", "sh", "x;y"]),
            "sh -c 'echo $1' sh 'x;y'"
        );
    }
}
