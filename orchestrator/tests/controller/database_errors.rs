//! A database kreg cannot reach is reported with its real cause, once, within the connect
//! timeout, not as a pool that timed out 30 s later.

use std::process::Command;

#[test]
fn an_unreachable_database_says_why_once() {
    // A loopback port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .env("DATABASE_URL", format!("postgres://kreg@127.0.0.1:{port}/kreg"))
        .args(["status"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot connect to PostgreSQL at 127.0.0.1:{port}/kreg")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("Connection refused").count(), 1, "{stderr}");
    assert!(!stderr.contains("pool timed out"), "{stderr}");
}
