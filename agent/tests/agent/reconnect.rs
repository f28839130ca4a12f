//! A kept-alive connection that outlives a reboot: in front of the agent, a relay that
//! keeps its client's side open and, once "rebooted", takes the next request on a connection
//! opened before and closes it unanswered (what qemu's user network does when the guest
//! behind a forwarded port has rebooted). A step that only reads is sent again on a new
//! connection; one that acts is reported and never sent twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kreg_protocol::client::{AgentClient, ClientError};
use kreg_protocol::wire::ExecRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{start, TOKEN};

/// Relays connections to `to`; connections opened before the latest `reboot()` are cut at
/// their next request. Counts the requests it cut.
struct Relay {
    url: String,
    epoch: Arc<AtomicU64>,
    cut: Arc<AtomicU64>,
}

impl Relay {
    async fn start(to: std::net::SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let epoch = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicU64::new(0));
        let (e, c) = (epoch.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(relay(conn, to, e.clone(), c.clone()));
            }
        });
        Relay { url, epoch, cut }
    }

    fn reboot(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

async fn relay(client: TcpStream, to: std::net::SocketAddr, epoch: Arc<AtomicU64>, cut: Arc<AtomicU64>) {
    let born = epoch.load(Ordering::SeqCst);
    let agent = TcpStream::connect(to).await.unwrap();
    let (mut cr, mut cw) = client.into_split();
    let (mut ar, mut aw) = agent.into_split();
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut ar, &mut cw).await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match cr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if epoch.load(Ordering::SeqCst) != born {
            // The machine behind this connection is gone: the request is read and dropped.
            cut.fetch_add(1, Ordering::SeqCst);
            break;
        }
        if aw.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    back.abort();
}

#[tokio::test]
async fn a_read_is_sent_again_after_its_connection_is_cut_and_an_action_is_not() {
    let agent = start("reconnect").await;
    let relay = Relay::start(agent.addr).await;
    let client = AgentClient::new(&relay.url, TOKEN);
    let before = client.identity().await.unwrap();

    relay.reboot();
    let after = client.identity().await.unwrap();
    assert_eq!(after.boot_id, before.boot_id);
    assert_eq!(
        relay.cut.load(Ordering::SeqCst),
        1,
        "the kept-alive connection was used, and cut"
    );

    std::fs::create_dir_all(&agent.dir).unwrap();
    let marker = agent.dir.join("touched");
    relay.reboot();
    let err = client
        .exec(ExecRequest {
            argv: vec!["touch".into(), marker.display().to_string()],
            timeout_secs: 10,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err:?}");
    assert_eq!(relay.cut.load(Ordering::SeqCst), 2);
    assert!(!marker.exists(), "the cut request never reached the agent");
    // Nothing resent it behind the caller's back, and the next step gets through.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!marker.exists());
    assert_eq!(client.identity().await.unwrap().boot_id, before.boot_id);
}
