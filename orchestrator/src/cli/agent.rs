//! `kreg agent install|status`: kreg's agent put on a machine over SSH for the http
//! transport (HTTPS with a pinned certificate by default), and what agents run where.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Subcommand;

use kreg::config::Config;
use kreg::scenario::{SshSpec, Transport};
use kreg::ssh::install::Slot;
use kreg::ssh::{install, Session, Tunnel};
use kreg::token::Kept;
use kreg_protocol::client::AgentClient;

#[derive(clap::Args, Clone)]
pub struct SshArgs {
    /// The private key to log in with (default: ~/.ssh/id_ed25519, id_ecdsa or id_rsa).
    #[arg(long)]
    identity: Option<PathBuf>,
    /// A file holding the identity's passphrase.
    #[arg(long)]
    passphrase_file: Option<PathBuf>,
    /// Known host keys (default: ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts).
    #[arg(long)]
    known_hosts: Option<PathBuf>,
    /// The host key's fingerprint (SHA256:…), instead of known_hosts.
    #[arg(long)]
    host_key: Option<String>,
}

impl SshArgs {
    fn spec(&self, target: &str) -> Result<SshSpec> {
        let mut s = SshSpec::from_target(target).map_err(|e| anyhow!(e))?;
        s.identity = self.identity.clone();
        s.passphrase_file = self.passphrase_file.clone();
        s.known_hosts = self.known_hosts.clone();
        s.host_key = self.host_key.clone();
        Ok(s)
    }
}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Install (or upgrade) kreg's agent on a machine over SSH for the http transport: it
    /// serves HTTPS with a certificate it makes, started by a systemd unit; prints the host
    /// entry to put in a scenario. (The ssh transport needs none of this: kreg installs
    /// the agent itself.)
    Install {
        /// USER@HOST[:PORT] of the machine's sshd (user root when not given).
        target: String,
        #[command(flatten)]
        ssh: SshArgs,
        /// Where the agent listens on the machine.
        #[arg(long, default_value = "0.0.0.0:7878")]
        listen: std::net::SocketAddr,
        /// Plain HTTP: the agent's token then crosses the network in clear text.
        #[arg(long)]
        insecure: bool,
        /// The agent's token on this machine (made when missing; default
        /// DATA_DIR/agents/HOST.token).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// The host's name in the printed entry (default: the machine's address).
        #[arg(long)]
        name: Option<String>,
    },
    /// The agents of machines: build, whether it runs, its uptime, and the machine's
    /// release, boot id and uptime. Nothing is installed or changed.
    Status {
        /// USER@HOST[:PORT] of machines' sshd.
        targets: Vec<String>,
        #[command(flatten)]
        ssh: SshArgs,
        /// The hosts of a scenario (http and ssh hosts).
        #[arg(long)]
        scenario: Option<PathBuf>,
    },
}

pub async fn dispatch(cmd: AgentCmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        AgentCmd::Install {
            target,
            ssh,
            listen,
            insecure,
            token_file,
            name,
        } => install_cmd(cfg, &ssh.spec(&target)?, listen, insecure, token_file, name).await,
        AgentCmd::Status { targets, ssh, scenario } => status_cmd(cfg, &targets, &ssh, scenario.as_deref()).await,
    }
}

/// A token file of kreg's: read when it exists, else made (random, mode 0600).
fn token_at(path: &Path) -> Result<String> {
    kreg::token::read_or_make(path).map_err(|e| anyhow!(e))
}

fn url_host(address: &str) -> String {
    if address.contains(':') {
        format!("[{address}]")
    } else {
        address.to_string()
    }
}

async fn install_cmd(
    cfg: &Config,
    spec: &SshSpec,
    listen: std::net::SocketAddr,
    insecure: bool,
    token_file: Option<PathBuf>,
    name: Option<String>,
) -> Result<ExitCode> {
    let token_file = token_file.unwrap_or_else(|| Kept::Service.path(&cfg.data_dir, spec));
    let token = token_at(&token_file)?;
    let setup = install::Setup {
        slot: Slot::SERVICE,
        listen: listen.to_string(),
        tls: !insecure,
    };
    // Checked from here through SSH: at the address it listens on, or its loopback.
    let check_at = match listen.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => "::1".to_string(),
        ip => ip.to_string(),
    };
    let session = Session::connect(spec).await?;
    let tunnel = Tunnel::start(spec, session, &check_at, listen.port()).await?;
    let session = tunnel.session().await?;
    let (outcome, _client) = install::ensure(
        &session,
        &cfg.agent_bin,
        &token,
        &setup,
        install::Via {
            url: &tunnel.url(),
            epoch: None,
        },
    )
    .await
    .map_err(|e| anyhow!(e))?;
    let scheme = if insecure { "http" } else { "https" };
    println!(
        "kreg: {}: agent {outcome}, listening on {listen}{}",
        spec.target(),
        match &outcome.tls_fingerprint {
            Some(fp) => format!(" with TLS (certificate {fp})"),
            None => " in plain HTTP".into(),
        }
    );
    match install::install_page(&session).await {
        Ok(()) => println!(
            "kreg: {}: its manual page in {}",
            spec.target(),
            install::AGENT_PAGE_PATH
        ),
        Err(e) => eprintln!(
            "kreg: warning: {}: the agent's manual page was not installed: {e}",
            spec.target()
        ),
    }
    if insecure {
        eprintln!("kreg: warning: --insecure: the agent's token will cross the network in clear text");
    }
    let url = format!("{scheme}://{}:{}", url_host(&spec.address), listen.port());
    let how = match &outcome.tls_fingerprint {
        Some(fp) => format!("tls_fingerprint: \"{fp}\""),
        None => "insecure: true".into(),
    };
    let host = name.unwrap_or_else(|| spec.address.replace([':', '[', ']'], "-"));
    println!("A host entry for a scenario (role sut or loadgen):");
    println!(
        "  {host}: {{ role: sut, transport: {{ kind: http, url: \"{url}\", {how}, token_file: \"{}\" }} }}",
        token_file.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// One line of `kreg agent status`.
struct Row {
    host: String,
    reached: String,
    agent: String,
    agent_up: String,
    release: String,
    boot_id: String,
    up: String,
    /// Whether the host was asked and answered: its agent running, or none installed (a
    /// lab VM, started by each run, counts as such). Not: refused host keys or logins,
    /// unreadable secrets, unreachable hosts, an installed agent not answering.
    ok: bool,
}

fn secs(s: f64) -> String {
    let s = s as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{:.1} h", s as f64 / 3600.0),
        _ => format!("{:.1} d", s as f64 / 86400.0),
    }
}

impl Row {
    fn failed(host: &str, reached: &str, why: String) -> Row {
        Row {
            host: host.into(),
            reached: reached.into(),
            agent: why,
            agent_up: "-".into(),
            release: "-".into(),
            boot_id: "-".into(),
            up: "-".into(),
            ok: false,
        }
    }

    /// From an agent that answered with its identity.
    fn of(host: &str, reached: &str, agent: String, id: &kreg_protocol::wire::Identity) -> Row {
        Row {
            host: host.into(),
            reached: reached.into(),
            agent,
            agent_up: secs(id.agent_uptime_secs),
            release: id.kernel_release.clone(),
            boot_id: id.boot_id.clone(),
            up: secs(id.uptime_secs),
            ok: true,
        }
    }
}

/// The agent's port on the machine, from the command line kreg started it with.
fn listen_port(args: Option<&str>) -> Option<u16> {
    let args = args?;
    let mut words = args.split_whitespace();
    words.find(|w| *w == "--listen")?;
    words.next()?.rsplit_once(':')?.1.parse().ok()
}

/// The machine's release, boot id and uptime into `row`, when it says them.
async fn machine_facts(session: &Session, row: &mut Row) {
    let argv = [
        "sh",
        "-c",
        "uname -r; cat /proc/sys/kernel/random/boot_id; cut -d' ' -f1 /proc/uptime",
    ];
    let facts: Vec<String> = match session.run(&argv, None, Duration::from_secs(20)).await {
        Ok(o) if o.success() => o.stdout_text().lines().map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if let [release, boot, up] = &facts[..] {
        row.release = release.clone();
        row.boot_id = boot.clone();
        row.up = secs(up.parse().unwrap_or(0.0));
    }
}

/// A machine over SSH: what is installed in each of `slots` (with the token kreg keeps for
/// it), and what each installed agent says through a tunnel.
async fn ssh_row(cfg: &Config, host: &str, spec: &SshSpec, slots: &[(Slot, Option<String>)]) -> Row {
    let reached = format!("ssh {}", spec.target());
    let session = match Session::connect(spec).await {
        Ok(s) => s,
        Err(e) => return Row::failed(host, &reached, e.to_string()),
    };
    let mut row = Row::failed(host, &reached, String::new());
    machine_facts(&session, &mut row).await;
    let mut session = Some(session);
    let mut parts = Vec::new();
    let mut ok = true;
    for (slot, token) in slots {
        // Each slot's tunnel takes a connection of its own.
        let s = match session.take() {
            Some(s) => s,
            None => match Session::connect(spec).await {
                Ok(s) => s,
                Err(e) => {
                    ok = false;
                    parts.push((slot, e.to_string()));
                    continue;
                }
            },
        };
        let st = slot_state(cfg, spec, s, slot, token.as_deref()).await;
        ok &= st.ok;
        if let Some(up) = st.agent_up {
            row.agent_up = up;
        }
        if st.installed || !st.ok {
            parts.push((slot, st.text));
        }
    }
    row.ok = ok;
    row.agent = match &parts[..] {
        [] => "not installed".into(),
        [(_, text)] if slots.len() == 1 => text.clone(),
        _ => parts
            .iter()
            .map(|(slot, text)| format!("{}: {text}", slot_label(slot)))
            .collect::<Vec<_>>()
            .join("; "),
    };
    row
}

fn slot_label(slot: &Slot) -> &'static str {
    if *slot == Slot::SSH {
        "ssh transport"
    } else {
        "service"
    }
}

/// What `kreg agent status` says of one slot.
struct SlotState {
    text: String,
    installed: bool,
    ok: bool,
    agent_up: Option<String>,
}

async fn slot_state(cfg: &Config, spec: &SshSpec, session: Session, slot: &Slot, token: Option<&str>) -> SlotState {
    let state = |text: String, installed: bool, ok: bool| SlotState {
        text,
        installed,
        ok,
        agent_up: None,
    };
    let ours = install::sha256_of(&cfg.agent_bin).ok();
    let p = match install::probe(&session, slot, ours.as_deref().unwrap_or("")).await {
        Ok(p) => p,
        Err(e) => return state(e.to_string(), false, false),
    };
    let Some(sha) = &p.sha256 else {
        // An answer about the machine, not a failure to ask it.
        return state("not installed".into(), false, true);
    };
    let build = format!(
        "{} (sha256 {}{})",
        p.version.as_deref().unwrap_or("unknown"),
        &sha[..12.min(sha.len())],
        if ours.as_deref() == Some(sha.as_str()) {
            ", this kreg's"
        } else {
            ", another build"
        }
    );
    let default_port = if *slot == Slot::SSH { spec.agent_port } else { 7878 };
    let port = listen_port(p.args.as_deref()).unwrap_or(default_port);
    let tunnel = match Tunnel::start(spec, session, "127.0.0.1", port).await {
        Ok(t) => t,
        Err(e) => return state(format!("{build}; {e}"), true, false),
    };
    let tls = p
        .args
        .as_deref()
        .is_some_and(|a| a.split_whitespace().any(|w| w == "--tls"));
    let Some(client) = tunnel_client(&tunnel, slot, tls, token.unwrap_or_default()).await else {
        return state(format!("{build}; its TLS certificate could not be read"), true, false);
    };
    let scheme = if tls { "HTTPS" } else { "HTTP" };
    let mut st = match client.version().await {
        Ok(v) => state(
            format!("{build}, running, {scheme} on port {port} (protocol {})", v.protocol),
            true,
            true,
        ),
        Err(_) => state(format!("{build}, NOT answering on port {port}"), true, false),
    };
    st.agent_up = Some(match client.identity().await {
        Ok(id) => secs(id.agent_uptime_secs),
        Err(_) => "? (no token for it here)".into(),
    });
    st
}

/// A client of the agent through `tunnel`: under TLS pinned to the certificate the
/// machine's agent reports (read over SSH).
async fn tunnel_client(tunnel: &Tunnel, slot: &Slot, tls: bool, token: &str) -> Option<AgentClient> {
    if !tls {
        return Some(AgentClient::new(&tunnel.url(), token));
    }
    let argv = [slot.bin, "--tls-fingerprint", "--data-dir", slot.data];
    let session = tunnel.session().await.ok()?;
    let out = session.run(&argv, None, Duration::from_secs(20)).await.ok()?;
    if !out.success() {
        return None;
    }
    let fp = out.stdout_text().trim().to_string();
    AgentClient::pinned(&tunnel.url().replacen("http://", "https://", 1), token, &fp).ok()
}

/// Both slots of a machine, each with the token kreg keeps for it: the ssh transport's
/// (its managed token), and `kreg agent install`'s.
fn both_slots(cfg: &Config, spec: &SshSpec) -> [(Slot, Option<String>); 2] {
    [
        (Slot::SERVICE, service_token(cfg, spec)),
        (Slot::SSH, Kept::Ssh.read_if_any(&cfg.data_dir, spec)),
    ]
}

/// The token `kreg agent install` keeps for a machine.
fn service_token(cfg: &Config, spec: &SshSpec) -> Option<String> {
    Kept::Service.read_if_any(&cfg.data_dir, spec)
}

async fn status_cmd(cfg: &Config, targets: &[String], ssh_args: &SshArgs, scenario: Option<&Path>) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for t in targets {
        let spec = ssh_args.spec(t)?;
        rows.push(ssh_row(cfg, t, &spec, &both_slots(cfg, &spec)).await);
    }
    if let Some(file) = scenario {
        let (_, s) = super::validate::load(file)?;
        for h in &s.hosts {
            match &h.transport {
                Transport::Ssh(t) => {
                    let token = match &t.token_file {
                        Some(f) => kreg::token::read(f).ok(),
                        None => Kept::Ssh.read_if_any(&cfg.data_dir, &t.ssh),
                    };
                    rows.push(ssh_row(cfg, &h.name, &t.ssh, &[(Slot::SSH, token)]).await);
                }
                Transport::Http(_) => {
                    let row = match kreg::engine::reach::agent(h, cfg, None).await {
                        Ok(Some(a)) => match a.client.identity().await {
                            Ok(id) => Row::of(
                                &h.name,
                                &a.reach.describe(),
                                format!("kreg-agent {}", id.agent_version),
                                &id,
                            ),
                            Err(e) => Row::failed(&h.name, &a.reach.describe(), e.to_string()),
                        },
                        Ok(None) => continue,
                        Err(e) => Row::failed(&h.name, "http", e.to_string()),
                    };
                    rows.push(row);
                }
                Transport::Lab { .. } => rows.push(Row {
                    ok: true,
                    ..Row::failed(&h.name, "lab", "a lab VM: started by each run".into())
                }),
            }
        }
    }
    if rows.is_empty() {
        bail!("name machines (USER@HOST[:PORT]) or a scenario (--scenario FILE)");
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "host",
        "reached",
        "agent",
        "agent up",
        "release",
        "boot id",
        "machine up",
    ]);
    let failed: Vec<String> = rows.iter().filter(|r| !r.ok).map(|r| r.host.clone()).collect();
    let total = rows.len();
    for r in rows {
        table.add_row(vec![r.host, r.reached, r.agent, r.agent_up, r.release, r.boot_id, r.up]);
    }
    println!("{table}");
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "kreg: {} of {total} host(s) not reached, or with an agent not answering: {}",
        failed.len(),
        failed.join(", ")
    );
    Ok(ExitCode::FAILURE)
}
