//! The agent's protocol through SSH: a listener on the controller's loopback whose every
//! connection becomes a direct-tcpip channel to the agent's port on the machine's
//! loopback. The agent client speaks plain HTTP to the listener, with its bearer token;
//! no port is opened on the machine's network.
//!
//! A connection that died (the machine rebooted, sshd was restarted, the network dropped)
//! is opened again when the next request needs it, with growing pauses between tries;
//! until then requests fail as "unreachable", which the engine already waits out
//! after a kexec or treats as a lost agent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::session::{Session, SshError};
use crate::scenario::SshSpec;

/// The longest pause between two tries to reconnect.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// How long one request waits for a connection before it fails as unreachable.
const REQUEST_BUDGET: Duration = Duration::from_secs(12);

struct Shared {
    spec: SshSpec,
    remote_host: String,
    remote_port: u16,
    session: Mutex<Option<Arc<Session>>>,
    /// When the next try to connect may start, and the pause after it.
    backoff: std::sync::Mutex<(Instant, Duration)>,
    /// Connections made, the first included.
    connects: std::sync::atomic::AtomicU32,
    /// How to start the agent again on a machine without systemd after a boot.
    revive: std::sync::Mutex<Option<super::install::Revive>>,
}

/// A running tunnel; dropping it stops the listener (open streams end with it).
pub struct Tunnel {
    local: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Tunnel {
    /// Starts a tunnel to `remote_host:remote_port` as the machine sees it (its loopback,
    /// say), over `session` (already connected and trusted) and over new sessions to
    /// `spec` when it dies.
    pub async fn start(
        spec: &SshSpec,
        session: Session,
        remote_host: &str,
        remote_port: u16,
    ) -> std::io::Result<Tunnel> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local = listener.local_addr()?;
        let shared = Arc::new(Shared {
            spec: spec.clone(),
            remote_host: remote_host.to_string(),
            remote_port,
            session: Mutex::new(Some(Arc::new(session))),
            backoff: std::sync::Mutex::new((Instant::now(), Duration::from_millis(250))),
            connects: std::sync::atomic::AtomicU32::new(1),
            revive: std::sync::Mutex::new(None),
        });
        let s = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let s = s.clone();
                tokio::spawn(async move { s.serve(tcp).await });
            }
        });
        Ok(Tunnel { local, shared, task })
    }

    /// The agent's base URL through the tunnel.
    pub fn url(&self) -> String {
        format!("http://{}", self.local)
    }

    /// Lets the tunnel start the agent again (as `how` says) when a new connection finds
    /// it not running: a machine without systemd does not start it after a boot.
    pub fn revive_with(&self, how: super::install::Revive) {
        *self.shared.revive.lock().expect("revive lock") = Some(how);
    }

    /// SSH connections made so far, the first included.
    pub fn connects(&self) -> u32 {
        self.shared.connects.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The current session (connected again if it died), for commands on the machine.
    pub async fn session(&self) -> Result<Arc<Session>, SshError> {
        self.shared.session(Instant::now() + REQUEST_BUDGET).await
    }
}

impl Shared {
    async fn serve(&self, mut tcp: tokio::net::TcpStream) {
        let deadline = Instant::now() + REQUEST_BUDGET;
        loop {
            let session = match self.session(deadline).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(target = %self.spec.target(), "tunnel: {e}");
                    return;
                }
            };
            match session.forward(&self.remote_host, self.remote_port).await {
                Ok(mut ch) => {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut ch).await;
                    return;
                }
                // A refused channel on a live session: nothing listens on the agent's
                // port (the agent is starting, or stopped). On a machine without systemd
                // that came back from a reboot, kreg starts its agent again (once per
                // connection); otherwise the request fails as unreachable.
                Err(SshError::Channel { .. }) if !session.is_closed() => {
                    if self.revive(&session).await {
                        continue;
                    }
                    return;
                }
                // The session is dead or does not answer: the next one is tried.
                Err(e) => {
                    tracing::debug!(target = %self.spec.target(), "tunnel: {e}");
                    self.forget(&session).await;
                }
            }
            if Instant::now() >= deadline {
                return;
            }
        }
    }

    /// Starts the agent again over `session` when the tunnel was told how, and this
    /// connection has not tried yet; waits up to 3 s for its port. Whether it listens.
    async fn revive(&self, session: &Arc<Session>) -> bool {
        let how = self.revive.lock().expect("revive lock").clone();
        let Some(how) = how else {
            return false;
        };
        if session.revived.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        match super::install::revive(session, &how).await {
            Ok(true) => {
                tracing::info!(target = %session.target, "ssh: the agent was not running after a boot; started it again")
            }
            Ok(false) => return false,
            Err(e) => {
                tracing::warn!(target = %session.target, "ssh: could not start the agent again: {e}");
                return false;
            }
        }
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if let Ok(ch) = session.forward(&self.remote_host, self.remote_port).await {
                drop(ch);
                return true;
            }
        }
        false
    }

    /// Drops `dead` as the current session, unless another already replaced it.
    async fn forget(&self, dead: &Arc<Session>) {
        let mut cur = self.session.lock().await;
        if cur.as_ref().is_some_and(|s| Arc::ptr_eq(s, dead)) {
            *cur = None;
        }
    }

    /// The live session, or a new one, trying until `deadline` with growing pauses (shared
    /// by every request, so a dead machine is not hammered).
    async fn session(&self, deadline: Instant) -> Result<Arc<Session>, SshError> {
        let mut cur = self.session.lock().await;
        if let Some(s) = cur.as_ref() {
            if !s.is_closed() {
                return Ok(s.clone());
            }
            *cur = None;
        }
        loop {
            let (next, pause) = *self.backoff.lock().expect("backoff lock");
            let now = Instant::now();
            if next > now {
                if next >= deadline {
                    return Err(SshError::Connect {
                        target: self.spec.target(),
                        cause: format!("connection lost; next try in {} ms", (next - now).as_millis()),
                    });
                }
                tokio::time::sleep(next - now).await;
            }
            match Session::connect(&self.spec).await {
                Ok(s) => {
                    *self.backoff.lock().expect("backoff lock") = (Instant::now(), Duration::from_millis(250));
                    let n = self.connects.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    tracing::info!(target = %s.target, connects = n, "ssh: connected again");
                    let s = Arc::new(s);
                    *cur = Some(s.clone());
                    return Ok(s);
                }
                Err(e) => {
                    *self.backoff.lock().expect("backoff lock") =
                        (Instant::now() + pause, (pause * 2).min(MAX_BACKOFF));
                    if !e.is_transient() {
                        // A refused host key or login is said once per try, loudly.
                        tracing::warn!("{e}");
                        return Err(e);
                    }
                    if Instant::now() >= deadline {
                        return Err(e);
                    }
                }
            }
        }
    }
}
