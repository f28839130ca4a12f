//! `kreg-agent` put on a machine over SSH and kept current: the controller's own agent
//! binary is uploaded when the machine has none or another build (compared by SHA-256,
//! and checked by SHA-256 after the upload), the token written with mode 0600, and the
//! agent started by a systemd unit (enabled, so it is back after every boot) or, on a
//! machine without systemd, detached, with a warning that it will not come back by itself
//! after a reboot.
//!
//! Commands run through sshd are fixed scripts; the values they need (paths, the port)
//! follow as arguments, each quoted as one word. The token only ever travels on a
//! command's standard input, never on a command line.

use std::path::Path;
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use sha2::{Digest, Sha256};

use super::session::{Session, SshError};

/// Where one of kreg's agents lives on a machine. There are two slots, which never touch
/// each other's files, unit or port: the ssh transport's agent (on the machine's loopback,
/// reached through SSH) and the one `kreg agent install` sets up for http hosts (a service
/// on the network). A machine may run both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The binary.
    pub bin: &'static str,
    /// Its token (mode 0600).
    pub token: &'static str,
    /// Its data folder; without systemd also its log and pid file.
    pub data: &'static str,
    pub unit_name: &'static str,
    pub unit_path: &'static str,
    /// Where kreg notes the command line it started the agent with.
    pub args_file: &'static str,
}

impl Slot {
    /// The ssh transport's agent.
    pub const SSH: Slot = Slot {
        bin: "/usr/local/lib/kreg/ssh/kreg-agent",
        token: "/etc/kreg/ssh/agent.token",
        data: "/var/lib/kreg-agent-ssh",
        unit_name: "kreg-agent-ssh.service",
        unit_path: "/etc/systemd/system/kreg-agent-ssh.service",
        args_file: "/etc/kreg/ssh/agent.args",
    };
    /// The agent `kreg agent install` sets up.
    pub const SERVICE: Slot = Slot {
        bin: "/usr/local/lib/kreg/kreg-agent",
        token: "/etc/kreg/agent.token",
        data: "/var/lib/kreg-agent",
        unit_name: "kreg-agent.service",
        unit_path: "/etc/systemd/system/kreg-agent.service",
        args_file: "/etc/kreg/agent.args",
    };

    /// What the slot is for, in a sentence.
    pub fn purpose(&self) -> &'static str {
        if *self == Slot::SSH {
            "the ssh transport's agent"
        } else {
            "the agent of `kreg agent install`"
        }
    }

    fn upload_path(&self) -> String {
        format!("{}.upload", self.bin)
    }
}

/// The agent's manual page, as its crate ships it (made from its arguments' definition).
pub const AGENT_PAGE: &str = include_str!("../../../agent/kreg-agent.8");
/// Where `kreg agent install` puts it on the machine.
pub const AGENT_PAGE_PATH: &str = "/usr/local/share/man/man8/kreg-agent.8";

/// The agent's manual page written to [`AGENT_PAGE_PATH`] (`man 8 kreg-agent` on the
/// machine).
pub async fn install_page(session: &Session) -> Result<(), SshError> {
    let script = r#"umask 022 && mkdir -p "${1%/*}" && cat > "$1""#;
    sh(session, script, &[AGENT_PAGE_PATH], Some(AGENT_PAGE.as_bytes()))
        .await
        .map(|_| ())
}

const TIMEOUT: Duration = Duration::from_secs(60);
/// How long a started agent has to answer.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// What the machine had, before anything changed.
#[derive(Debug, Clone)]
pub struct Probe {
    pub arch: String,
    /// SHA-256 of its agent binary, when it has one.
    pub sha256: Option<String>,
    /// What that binary says of its version.
    pub version: Option<String>,
    pub systemd: bool,
    /// The command line kreg last started the agent with (from the slot's `args_file`).
    pub args: Option<String>,
}

/// How the agent is to run: in which slot, where it listens, and whether it serves TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub slot: Slot,
    pub listen: String,
    pub tls: bool,
}

impl Setup {
    /// The ssh transport's: on the machine's loopback, reached through SSH (which encrypts
    /// already).
    pub fn loopback(port: u16) -> Setup {
        Setup {
            slot: Slot::SSH,
            listen: format!("127.0.0.1:{port}"),
            tls: false,
        }
    }

    pub fn argv(&self) -> Vec<String> {
        let mut v: Vec<String> = [
            self.slot.bin,
            "--listen",
            &self.listen,
            "--token-file",
            self.slot.token,
            "--data-dir",
            self.slot.data,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if self.tls {
            v.push("--tls".into());
        }
        v
    }
}

/// What `ensure` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The agent was the controller's build and answered with its token.
    Reused,
    /// The same build, started again (it was not running, or had another token).
    Restarted,
    /// There was no agent.
    Installed,
    /// Another build was replaced.
    Upgraded { from: String },
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub action: Action,
    pub systemd: bool,
    /// The slot's unit.
    pub unit: &'static str,
    pub version: String,
    /// The agent's certificate, when it serves TLS.
    pub tls_fingerprint: Option<String>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.systemd {
            format!("systemd unit {}, enabled", self.unit)
        } else {
            "no systemd: started detached; after a reboot kreg starts it again when it reconnects".into()
        };
        match &self.action {
            Action::Reused => write!(f, "{} already installed and running ({how})", self.version),
            Action::Restarted => write!(f, "{} started again ({how})", self.version),
            Action::Installed => write!(f, "{} installed ({how})", self.version),
            Action::Upgraded { from } => write!(f, "upgraded from {from} to {} ({how})", self.version),
        }
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The machine's architecture as `uname -m` names it, for the controller's build.
fn local_arch() -> &'static str {
    std::env::consts::ARCH
}

async fn sh(session: &Session, script: &str, args: &[&str], stdin: Option<&[u8]>) -> Result<String, SshError> {
    let mut argv = vec!["sh", "-c", script, "kreg"];
    argv.extend_from_slice(args);
    let out = session.run(&argv, stdin, TIMEOUT).await?;
    if !out.success() {
        return Err(SshError::Agent(format!(
            "ssh {}: a command failed (exit {}): {}",
            session.target,
            out.status.map_or("by a signal".into(), |s| s.to_string()),
            out.stderr_text()
        )));
    }
    Ok(out.stdout_text())
}

/// What is on the machine. The installed binary is run (for its version) only when its
/// SHA-256 is `$3`, the build kreg knows: an unknown file at that path is never executed.
const PROBE: &str = r#"uname -m
if [ -f "$1" ]; then s=$(sha256sum "$1" | cut -d' ' -f1); echo "$s"; if [ -n "$3" ] && [ "$s" = "$3" ]; then "$1" --version 2>/dev/null | head -n1 || echo unknown; else echo unknown; fi; else echo none; echo none; fi
if [ -d /run/systemd/system ]; then echo systemd; else echo plain; fi
if [ -f "$2" ]; then head -n1 "$2"; else echo none; fi"#;

/// What is installed in `slot` on the machine; `known` is the SHA-256 of the agent build
/// kreg would install (the only one whose `--version` it runs).
pub async fn probe(session: &Session, slot: &Slot, known: &str) -> Result<Probe, SshError> {
    let out = sh(session, PROBE, &[slot.bin, slot.args_file, known], None).await?;
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let [arch, sha, version, init, args] = lines[..] else {
        return Err(SshError::Agent(format!(
            "ssh {}: unexpected answer to the probe: {out:?}",
            session.target
        )));
    };
    let some = |s: &str| (s != "none" && !s.is_empty()).then(|| s.to_string());
    Ok(Probe {
        arch: arch.to_string(),
        sha256: some(sha),
        version: some(version),
        systemd: init == "systemd",
        args: some(args),
    })
}

/// Whether the agent answers through `client` with the controller's token.
/// Whether the agent answers: with its identity, or by refusing a request whose lease
/// epoch it has seen superseded (a fleet's machine: it is up, restarting it would not
/// change its answer, and the refusal says why to whoever asked).
async fn answers(client: &AgentClient) -> bool {
    match tokio::time::timeout(Duration::from_secs(15), client.identity()).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => fenced(&e),
        Err(_) => false,
    }
}

/// A refusal for a stale (or missing) lease epoch.
fn fenced(e: &kreg_protocol::client::ClientError) -> bool {
    matches!(e, kreg_protocol::client::ClientError::Step { error, .. } if error.kind == kreg_protocol::wire::ErrorKind::Fenced)
}

/// Where the agent's port is reached from here (the tunnel's URL), and the fleet lease's
/// epoch every request carries, if any.
#[derive(Debug, Clone, Copy)]
pub struct Via<'a> {
    pub url: &'a str,
    pub epoch: Option<u64>,
}

/// Makes the machine run the controller's agent (`agent_bin`) as `setup` says, with
/// `token`, reached `via` the tunnel. Returns what was done and a client of the agent
/// (pinned to its certificate under TLS).
pub async fn ensure(
    session: &Session,
    agent_bin: &Path,
    token: &str,
    setup: &Setup,
    via: Via<'_>,
) -> Result<(Outcome, AgentClient), SshError> {
    let (base, epoch) = (via.url, via.epoch);
    let bin = std::fs::read(agent_bin).map_err(|e| {
        SshError::Agent(format!(
            "cannot read the agent to install, {}: {e} (build it with `cargo build -p kreg-agent`, or set KREG_AGENT_BIN)",
            agent_bin.display()
        ))
    })?;
    let want = hex_sha256(&bin);
    let version = format!("kreg-agent {} (sha256 {})", env!("CARGO_PKG_VERSION"), &want[..12]);
    let slot = &setup.slot;
    let p = probe(session, slot, &want).await?;
    if p.arch != local_arch() {
        return Err(SshError::Agent(format!(
            "ssh {}: the machine is {}, and this kreg's agent is built for {}; install a kreg-agent for {} by hand and use the http transport",
            session.target,
            p.arch,
            local_arch(),
            p.arch
        )));
    }
    let same_build = p.sha256.as_deref() == Some(want.as_str());
    if !same_build {
        upload(session, slot, &bin, &want).await?;
    }
    let fingerprint = match setup.tls {
        true => Some(fingerprint(session, slot, same_build).await?),
        false => None,
    };
    let client = match &fingerprint {
        Some(fp) => AgentClient::pinned(&base.replacen("http://", "https://", 1), token, fp)
            .map_err(|e| SshError::Agent(e.to_string()))?,
        None => AgentClient::new(base, token),
    };
    if let Some(e) = epoch {
        client.fence(e);
    }
    let outcome = |action| Outcome {
        action,
        systemd: p.systemd,
        unit: slot.unit_name,
        version: version.clone(),
        tls_fingerprint: fingerprint.clone(),
    };
    let want_args = setup.argv().join(" ");
    if same_build && p.args.as_deref() == Some(want_args.as_str()) && answers(&client).await {
        return Ok((outcome(Action::Reused), client));
    }
    start(session, &p, token, setup, !same_build).await?;
    wait_up(session, slot, &client).await?;
    Ok((outcome(action_of(&p, same_build)), client))
}

/// What starting the agent did, from what the probe found before.
fn action_of(p: &Probe, same_build: bool) -> Action {
    match (&p.sha256, &p.version) {
        _ if same_build => Action::Restarted,
        (None, _) => Action::Installed,
        (Some(sha), v) => Action::Upgraded {
            from: format!(
                "{} (sha256 {})",
                // Only a build kreg knows is run for its version.
                v.as_deref().filter(|v| *v != "unknown").unwrap_or("another build"),
                &sha[..12.min(sha.len())]
            ),
        },
    }
}

/// The certificate's fingerprint of the agent in `slot` (the one just uploaded unless
/// `same_build`), made now when missing: read before the agent starts.
async fn fingerprint(session: &Session, slot: &Slot, same_build: bool) -> Result<String, SshError> {
    let from = if same_build {
        slot.bin.to_string()
    } else {
        slot.upload_path()
    };
    let out = sh(
        session,
        r#""$1" --tls-fingerprint --data-dir "$2""#,
        &[&from, slot.data],
        None,
    )
    .await?;
    Ok(out.trim().to_string())
}

/// What the tunnel needs to start the agent again after a boot on a machine without
/// systemd.
#[derive(Clone)]
pub struct Revive {
    pub token: String,
    pub setup: Setup,
    /// The build kreg installed: nothing else is started.
    pub sha256: String,
}

impl std::fmt::Debug for Revive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revive")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

/// Starts kreg's agent again when the machine has no systemd (which would restart it by
/// itself) and still holds the build kreg installed. Whether it was started.
pub async fn revive(session: &Session, how: &Revive) -> Result<bool, SshError> {
    let p = probe(session, &how.setup.slot, &how.sha256).await?;
    if p.systemd {
        return Ok(false);
    }
    if p.sha256.as_deref() != Some(how.sha256.as_str()) {
        return Err(SshError::Agent(
            "the agent on the machine is not the build kreg installed any more".into(),
        ));
    }
    start(session, &p, &how.token, &how.setup, false).await?;
    Ok(true)
}

/// The binary, beside the one in place, checked by SHA-256 on the machine.
async fn upload(session: &Session, slot: &Slot, bin: &[u8], sha: &str) -> Result<(), SshError> {
    let tmp = slot.upload_path();
    let script =
        r#"umask 022 && mkdir -p "${1%/*}" && cat > "$1" && chmod 0755 "$1" && sha256sum "$1" | cut -d' ' -f1"#;
    let got = sh(session, script, &[&tmp], Some(bin)).await?;
    if got.trim() != sha {
        let _ = sh(session, r#"rm -f "$1""#, &[&tmp], None).await;
        return Err(SshError::Agent(format!(
            "ssh {}: the uploaded agent's SHA-256 is {}, not {sha}: the upload was damaged; nothing was replaced",
            session.target,
            got.trim()
        )));
    }
    Ok(())
}

async fn wait_up(session: &Session, slot: &Slot, client: &AgentClient) -> Result<(), SshError> {
    let until = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), client.identity()).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) if fenced(&e) => return Ok(()),
            Ok(Err(kreg_protocol::client::ClientError::Unauthorized { .. })) => {
                return Err(SshError::Agent(format!(
                    "ssh {}: something else answers on the agent's port with another token (another kreg-agent started by hand?); stop it or give this host another agent_port",
                    session.target
                )))
            }
            _ if tokio::time::Instant::now() >= until => {
                let log = log_tail(session, slot).await;
                return Err(SshError::Agent(format!(
                    "ssh {}: the agent did not answer within {} s of its start{log}",
                    session.target,
                    START_TIMEOUT.as_secs()
                )));
            }
            _ => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

/// The agent's last log lines on the machine, for an error.
async fn log_tail(session: &Session, slot: &Slot) -> String {
    let script = r#"if [ -d /run/systemd/system ]; then journalctl -u "$1" -n 15 --no-pager 2>&1; else tail -n 15 "$2" 2>&1; fi"#;
    let log = format!("{}/agent.log", slot.data);
    match sh(session, script, &[slot.unit_name, &log], None).await {
        Ok(t) if !t.trim().is_empty() => format!("; its log:\n{}", t.trim_end()),
        _ => String::new(),
    }
}

/// Stops a running agent of kreg's, puts the uploaded binary (when `replace`) and the
/// token in place and starts the agent as `setup` says.
async fn start(session: &Session, p: &Probe, token: &str, setup: &Setup, replace: bool) -> Result<(), SshError> {
    let slot = &setup.slot;
    // A fresh file (mktemp: O_EXCL, mode 0600), never one left behind, made private again
    // before it is moved in, and its mode checked after.
    let token_script = r#"umask 077 && mkdir -p "${1%/*}" && t=$(mktemp "$1.XXXXXXXX") || exit 1
if cat > "$t" && chmod 600 "$t" && mv -f "$t" "$1" && [ "$(stat -c %a "$1")" = 600 ]; then exit 0; fi
rm -f "$t"; echo "the token file $1 could not be made private" >&2; exit 1"#;
    sh(
        session,
        token_script,
        &[slot.token],
        Some(format!("{token}\n").as_bytes()),
    )
    .await?;
    stop(session, slot, p).await?;
    if replace {
        sh(session, r#"mv -f "$1" "$2""#, &[&slot.upload_path(), slot.bin], None).await?;
    }
    let argv_owned = setup.argv();
    let argv: Vec<&str> = argv_owned.iter().map(String::as_str).collect();
    let args_line = format!("{}\n", argv.join(" "));
    sh(
        session,
        r#"umask 022 && mkdir -p "${1%/*}" && cat > "$1""#,
        &[slot.args_file],
        Some(args_line.as_bytes()),
    )
    .await?;
    if p.systemd {
        let unit = unit_text(slot, &argv);
        sh(session, r#"cat > "$1""#, &[slot.unit_path], Some(unit.as_bytes())).await?;
        let script = r#"systemctl daemon-reload && systemctl enable --quiet "$1" && systemctl restart "$1""#;
        sh(session, script, &[slot.unit_name], None).await?;
    } else {
        let pid = format!("{}/agent.pid", slot.data);
        let log = format!("{}/agent.log", slot.data);
        let script = r#"pidf=$1 log=$2; shift 2; mkdir -p "${pidf%/*}" && cd / && { setsid "$@" </dev/null >>"$log" 2>&1 & echo $! >"$pidf"; }"#;
        let mut args = vec![pid.as_str(), log.as_str()];
        args.extend_from_slice(&argv);
        sh(session, script, &args, None).await?;
    }
    Ok(())
}

/// Stops kreg's agent: its unit, or the process in its pid file when that process runs
/// kreg's agent binary (nothing else is killed).
async fn stop(session: &Session, slot: &Slot, p: &Probe) -> Result<(), SshError> {
    if p.systemd {
        let script = r#"systemctl stop "$1" 2>/dev/null; true"#;
        sh(session, script, &[slot.unit_name], None).await?;
        return Ok(());
    }
    let pid = format!("{}/agent.pid", slot.data);
    let script = r#"[ -f "$1" ] || exit 0
pid=$(cat "$1")
case "$(readlink "/proc/$pid/exe" 2>/dev/null)" in
  "$2"|"$2 (deleted)") kill "$pid" ;;
  *) exit 0 ;;
esac
i=0
while [ -d "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
[ -d "/proc/$pid" ] && kill -9 "$pid"
rm -f "$1"
true"#;
    sh(session, script, &[&pid, slot.bin], None).await?;
    Ok(())
}

/// The systemd unit: restarted when it dies, started at every boot.
pub fn unit_text(slot: &Slot, argv: &[&str]) -> String {
    let exec = argv.join(" ");
    format!(
        "# Written by kreg: {}, which it drives this machine through.\n\
         [Unit]\n\
         Description=kreg agent (runs kreg's typed steps on this machine)\n\
         After=network.target\n\
         \n\
         [Service]\n\
         ExecStart={exec}\n\
         Restart=always\n\
         RestartSec=1\n\
         LimitNOFILE=65536\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        slot.purpose()
    )
}

/// Fails unless `path` holds the binary the controller would install (for tests and
/// `kreg agent status`).
pub fn sha256_of(path: &Path) -> std::io::Result<String> {
    Ok(hex_sha256(&std::fs::read(path)?))
}
