//! The accept loop: every connection gets a header read timeout, and their number is
//! capped. At the cap, the oldest connection with no request in progress (idle keep-alive,
//! or still sending its headers) is closed to make room; when every connection is busy
//! with a request, the new one is closed at once. The agent stays reachable whatever a
//! client holds open.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

/// The TLS side of a connection (an agent reached over a network).
#[derive(Clone)]
pub struct Acceptor(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Acceptor")
    }
}

/// How long and how much the agent waits for and keeps of its clients.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// A request's headers must arrive within this, counted from when the agent starts
    /// waiting for them (so it also closes idle keep-alive connections).
    pub header_timeout: Duration,
    /// The longest pause between two pieces of a request body.
    pub body_idle_timeout: Duration,
    /// The largest step body (JSON); uploads stream to disk and have their own limit.
    pub max_step_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            header_timeout: Duration::from_secs(30),
            body_idle_timeout: Duration::from_secs(60),
            max_step_body: 16 << 20,
        }
    }
}

impl Limits {
    /// The cap, lowered to fit the process's open-file limit (half of it: each step also
    /// opens pipes and files).
    pub fn effective_max_connections(&self) -> usize {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we pass.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
        let fit = if ok && lim.rlim_cur != libc::RLIM_INFINITY {
            (lim.rlim_cur as usize / 2).max(8)
        } else {
            usize::MAX
        };
        self.max_connections.clamp(1, fit)
    }
}

/// Raises the soft open-file limit to the hard one (a systemd unit's LimitNOFILE, or the
/// shell's `ulimit -Hn`).
pub fn raise_nofile_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

struct Slot {
    /// Requests in progress on this connection.
    busy: Arc<AtomicUsize>,
    close: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Registry {
    next: u64,
    open: BTreeMap<u64, Slot>,
}

impl Registry {
    /// Room for one more connection, closing the oldest idle one at the cap; `None` when
    /// every connection is in the middle of a request.
    fn admit(&mut self, cap: usize) -> Option<(u64, Arc<AtomicUsize>, oneshot::Receiver<()>)> {
        if self.open.len() >= cap {
            let idle = self
                .open
                .iter()
                .find(|(_, s)| s.busy.load(Ordering::SeqCst) == 0 && s.close.is_some())
                .map(|(id, _)| *id)?;
            let slot = self.open.remove(&idle).expect("found above");
            if let Some(close) = slot.close {
                let _ = close.send(());
            }
        }
        self.next += 1;
        let (tx, rx) = oneshot::channel();
        let busy = Arc::new(AtomicUsize::new(0));
        self.open.insert(
            self.next,
            Slot {
                busy: busy.clone(),
                close: Some(tx),
            },
        );
        Some((self.next, busy, rx))
    }
}

/// Counts a request as in progress until it is answered or dropped.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(counter: &Arc<AtomicUsize>) -> Busy {
        counter.fetch_add(1, Ordering::SeqCst);
        Busy(counter.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then lets requests in progress
/// finish (at most 10 s).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<Acceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cap = limits.effective_max_connections();
    let registry = Arc::new(Mutex::new(Registry::default()));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    let mut refused = 0u64;
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors or memory: wait a little rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let admitted = registry.lock().expect("registry lock").admit(cap);
        let Some((id, busy, close)) = admitted else {
            refused += 1;
            if refused.is_power_of_two() {
                tracing::warn!(%peer, refused, cap, "every connection is busy: a new one was closed");
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let registry = registry.clone();
        let (app, limits, stop_rx, tls) = (app.clone(), limits.clone(), stop_rx.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, app, &limits, busy, close, stop_rx).await,
                // The handshake has the header timeout too: a client that opens a
                // connection and says nothing holds it no longer than that.
                Some(acceptor) => match tokio::time::timeout(limits.header_timeout, acceptor.0.accept(stream)).await {
                    Ok(Ok(tls_stream)) => serve_connection(tls_stream, app, &limits, busy, close, stop_rx).await,
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "no TLS handshake in time"),
                },
            }
            registry.lock().expect("registry lock").open.remove(&id);
        });
    }
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline && !registry.lock().expect("registry lock").open.is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn serve_connection<S>(
    stream: S,
    app: Router,
    limits: &Limits,
    busy: Arc<AtomicUsize>,
    close: oneshot::Receiver<()>,
    mut stop: watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send + 'static
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 << 10);
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let guard = Busy::new(&busy);
        let app = app.clone();
        async move {
            let resp = tower::ServiceExt::oneshot(app, req.map(axum::body::Body::new)).await;
            drop(guard);
            resp
        }
    });
    async move {
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            // Evicted to make room: dropped, which closes the socket.
            _ = close => {}
            _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
    }
}
