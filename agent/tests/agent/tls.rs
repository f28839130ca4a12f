//! The agent binary serving HTTPS with the certificate it makes itself; the client pins
//! its fingerprint.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use kreg_protocol::client::AgentClient;

const TOKEN: &str = "tls-test-token-0123456789abcdef";

struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn https_with_a_pinned_certificate() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let bin = env!("CARGO_BIN_EXE_kreg-agent");
    // The fingerprint a user gets before the agent ever runs (made on first use, kept).
    let out = Command::new(bin)
        .args(["--tls-fingerprint", "--data-dir"])
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(printed.starts_with("sha256:") && printed.len() == 71, "{printed}");

    let mut child = Killed(
        Command::new(bin)
            .args(["--listen", "127.0.0.1:0", "--tls", "--token-file"])
            .arg(&token_file)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let addr = lines
        .next()
        .unwrap()
        .unwrap()
        .strip_prefix("kreg-agent listening on ")
        .unwrap()
        .to_string();
    let said = lines.next().unwrap().unwrap();
    assert_eq!(said, format!("kreg-agent TLS certificate {printed}"));
    let url = format!("https://{addr}");

    // The pinned certificate: the agent answers, token and all.
    let c = AgentClient::pinned(&url, TOKEN, &printed).unwrap();
    let id = c.identity().await.expect("identity over https");
    assert!(!id.boot_id.is_empty());
    // OpenSSL's way of writing the fingerprint works as well.
    let hex = printed.strip_prefix("sha256:").unwrap();
    let openssl: Vec<String> = hex
        .as_bytes()
        .chunks(2)
        .map(|b| String::from_utf8_lossy(b).to_uppercase())
        .collect();
    AgentClient::pinned(&url, TOKEN, &openssl.join(":"))
        .unwrap()
        .identity()
        .await
        .unwrap();

    // Another fingerprint: refused before any request (and token) is sent.
    let wrong = format!("sha256:{}", "ab".repeat(32));
    let e = AgentClient::pinned(&url, TOKEN, &wrong)
        .unwrap()
        .identity()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not the pinned"), "{e}");
    // A client with no pin trusts nothing (no CA is consulted).
    assert!(AgentClient::new(&url, TOKEN).identity().await.is_err());
    // Plain HTTP to the TLS port gets nothing.
    assert!(AgentClient::new(&format!("http://{addr}"), TOKEN)
        .identity()
        .await
        .is_err());
    // Not a fingerprint at all: said at once.
    assert!(AgentClient::pinned(&url, TOKEN, "sha256:123").is_err());
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
}
