//! Machines reached over SSH: Debian's sshd in a network and mount namespace of its own
//! (kreg-testkit's `sshd`), kreg's SSH client (russh) checking its host key, logging in,
//! installing the agent and speaking to it through the connection: host keys and
//! identities (`host_keys`), runs over SSH (`runs`), `kreg agent install` (`install`).

use std::path::Path;
use std::process::Command;

use kreg::scenario::SshSpec;
use kreg::ssh::{self, hostkey::HostKeyError, SshError};

use common::sshd::{keygen, SshMachine};
use common::{agent_bin, Scratch};
use kreg_testkit as common;

fn spec(m: &SshMachine) -> SshSpec {
    SshSpec {
        address: m.addr.clone(),
        port: 22,
        user: "root".into(),
        identity: Some(m.identity.clone()),
        passphrase_file: None,
        known_hosts: Some(m.known_hosts.clone()),
        host_key: None,
        agent_port: 7878,
    }
}

fn nothing_installed(m: &SshMachine) -> bool {
    common::sshd::MOUNTED
        .iter()
        .all(|p| std::fs::read_dir(m.path(p)).unwrap().next().is_none())
}

/// A scenario whose one host is `m`, over ssh; a command workload of `iterations` jobs
/// per variant, each taking about `secs` seconds.
fn scenario(m: &SshMachine, name: &str, iterations: u32, secs: &str) -> String {
    format!(
        r#"
name: {name}
hosts:
  box: {{ role: sut, transport: {transport} }}
kernels: [ {{ name: current, source: running }} ]
variants: [ {{ name: default, policy: normal }}, {{ name: batch, policy: batch }} ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "sleep {secs}; echo value: 100"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: {iterations}
"#,
        transport = m.transport("")
    )
}

async fn count(db: &common::TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

mod fleet;
mod host_keys;
mod install;
mod runs;
