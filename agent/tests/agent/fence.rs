//! Fencing against the real `kreg-agent` binary: a request of an older lease epoch than the
//! highest the agent has seen is refused with 409 and both epochs, never acted on, logged;
//! the highest epoch outlives a restart of the agent.

use kreg_protocol::client::{AgentClient, ClientError};
use kreg_protocol::wire::{ErrorKind, ExecRequest};
use tokio::io::AsyncReadExt;

use crate::common::TOKEN;

/// The agent binary on a free loopback port with its data in `dir/data`, its log (stderr)
/// in `dir/log`; returns the child and its URL.
async fn agent(dir: &std::path::Path, log: &str) -> (tokio::process::Child, String) {
    std::fs::create_dir_all(dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kreg-agent"))
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.join(log)).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).await.unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8(line).unwrap();
    (child, format!("http://{}", line.rsplit(' ').next().unwrap()))
}

fn client(url: &str, epoch: Option<u64>) -> AgentClient {
    let c = AgentClient::new(url, TOKEN);
    if let Some(e) = epoch {
        c.fence(e);
    }
    c
}

/// The refusal of a fenced request: its message.
fn fenced(err: ClientError) -> String {
    match err {
        ClientError::Step { error, .. } if error.kind == ErrorKind::Fenced => error.message,
        other => panic!("not refused as fenced: {other:?}"),
    }
}

#[tokio::test]
async fn stale_epochs_are_refused_before_anything_runs_even_after_a_restart() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-test-fence-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut child, url) = agent(&dir, "log-1").await;

    // No epoch seen yet: requests without one go through (a single controller, no fleet).
    client(&url, None).identity().await.unwrap();
    // Worker A takes the lease at epoch 5; worker B takes it over at 6.
    let a = client(&url, Some(5));
    a.identity().await.unwrap();
    let b = client(&url, Some(6));
    b.identity().await.unwrap();
    // A wakes up: whatever it asks is refused, with both epochs, and nothing runs.
    let marker = dir.join("a-was-here");
    let exec = ExecRequest {
        argv: vec!["touch".into(), marker.display().to_string()],
        timeout_secs: 10,
        ..Default::default()
    };
    let why = fenced(a.exec(exec.clone()).await.unwrap_err());
    assert!(why.contains("stale epoch 5") && why.contains("at epoch 6"), "{why}");
    assert!(!marker.exists(), "a fenced step ran");
    let why = fenced(a.read_knob("/proc/sys/kernel/ostype").await.unwrap_err());
    assert!(why.contains("stale epoch 5"), "{why}");
    let why = fenced(client(&url, None).identity().await.unwrap_err());
    assert!(why.contains("without an epoch"), "{why}");
    // B goes on.
    b.exec(ExecRequest {
        argv: vec!["true".into()],
        timeout_secs: 10,
        ..Default::default()
    })
    .await
    .unwrap();
    // The raw answer: HTTP 409.
    let raw = reqwest::Client::new()
        .post(format!("{url}/v1/step"))
        .bearer_auth(TOKEN)
        .header(kreg_protocol::EPOCH_HEADER, "4")
        .body(r#"{"step":"identity"}"#)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 409);
    let bad = reqwest::Client::new()
        .post(format!("{url}/v1/step"))
        .bearer_auth(TOKEN)
        .header(kreg_protocol::EPOCH_HEADER, "six")
        .body(r#"{"step":"identity"}"#)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);

    // The agent restarts (a reboot of the machine, a crash): epoch 6 is still the fence.
    child.kill().await.unwrap();
    let _ = child.wait().await;
    let log = std::fs::read_to_string(dir.join("log-1")).unwrap();
    assert_eq!(log.matches("refused a stale request").count(), 4, "{log}");
    let (_child, url) = agent(&dir, "log-2").await;
    let why = fenced(client(&url, Some(5)).identity().await.unwrap_err());
    assert!(why.contains("at epoch 6"), "{why}");
    client(&url, Some(6)).identity().await.unwrap();
    client(&url, Some(9)).identity().await.unwrap();
    let why = fenced(client(&url, Some(8)).identity().await.unwrap_err());
    assert!(why.contains("stale epoch 8") && why.contains("at epoch 9"), "{why}");
    assert_eq!(std::fs::read_to_string(dir.join("data/epoch")).unwrap().trim(), "9");
    // A fence file that is not a number: the agent does not start without its fence.
    std::fs::write(dir.join("data/epoch"), "nine\n").unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kreg-agent"))
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(dir.join("token"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an epoch"), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fence cannot be moved by anything but a real epoch: an upload may not name the
/// agent's own files (`epoch`, `epoch.tmp`, `tls`), and an epoch the database's sequence
/// cannot issue (above i64::MAX, or 0) is refused without touching the fence, so the
/// machine stays usable at every epoch a worker can hold.
#[tokio::test]
async fn the_fence_cannot_be_set_back_or_pushed_out_of_reach() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-test-fence-reserved-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_child, url) = agent(&dir, "log").await;
    let c = client(&url, Some(7));
    let id = c.identity().await.unwrap().agent_id;
    assert_eq!(std::fs::read_to_string(dir.join("data/agent-id")).unwrap().trim(), id);
    for name in ["epoch", "epoch.tmp", "tls", "agent-id", "agent-id.tmp"] {
        match c.upload(name, b"0\n".to_vec()).await {
            Err(ClientError::Step { error, .. }) => {
                assert_eq!(error.kind, ErrorKind::Forbidden, "{name}: {error:?}");
                assert!(
                    error.message.contains("the agent's own file"),
                    "{name}: {}",
                    error.message
                );
            }
            other => panic!("{name}: an upload over the agent's own file was taken: {other:?}"),
        }
    }
    assert_eq!(std::fs::read_to_string(dir.join("data/epoch")).unwrap().trim(), "7");
    assert_eq!(std::fs::read_to_string(dir.join("data/agent-id")).unwrap().trim(), id);
    // Another name is fine.
    c.upload("epochs.txt", b"x".to_vec()).await.unwrap();
    for given in ["18446744073709551615", "9223372036854775808", "0"] {
        let r = reqwest::Client::new()
            .post(format!("{url}/v1/step"))
            .bearer_auth(TOKEN)
            .header(kreg_protocol::EPOCH_HEADER, given)
            .body(r#"{"step":"identity"}"#)
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{given}");
        let body = r.text().await.unwrap();
        assert!(body.contains("an epoch is from 1 to 9223372036854775807"), "{body}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("data/epoch")).unwrap().trim(), "7");
    // The largest epoch the database can issue is taken, and the next worker's is still below none.
    client(&url, Some(i64::MAX as u64)).identity().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
