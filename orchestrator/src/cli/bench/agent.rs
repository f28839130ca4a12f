//! `kreg bench agent`: what the agent costs the machine it measures. Its resident memory
//! idle and while it receives a 100 MB upload, the CPU it uses idle, and hackbench's time
//! with the agent running against without it (median of each, interleaved), as a table.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use comfy_table::{presets, Table};

use kreg_protocol::client::AgentClient;

const TOKEN: &str = "bench-agent-token-0123456789";

#[derive(clap::Args)]
pub struct AgentArgs {
    /// The agent binary (default: KREG_AGENT_BIN, else kreg-agent beside kreg; build the
    /// small one with `cargo build --profile agent -p kreg-agent`).
    #[arg(long)]
    agent_bin: Option<PathBuf>,
    /// Seconds of idle whose CPU ticks are counted.
    #[arg(long, default_value_t = 60)]
    idle_secs: u64,
    /// Megabytes uploaded.
    #[arg(long, default_value_t = 100)]
    upload_mb: usize,
    /// hackbench runs with the agent and as many without.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// hackbench's arguments.
    #[arg(long, default_value = "-p -g 4 -l 2000", allow_hyphen_values = true)]
    hackbench: String,
}

struct Agent {
    child: Child,
    url: String,
    _dir: Scratch,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(bin: &Path, tls: bool) -> Result<Agent> {
    let dir = kreg::config::temp_dir().join(format!("kreg-bench-agent-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir)?;
    let dir = Scratch(dir);
    std::fs::write(dir.0.join("token"), TOKEN)?;
    let (child, url) = spawn_loopback(bin, &dir.0.join("token"), &dir.0.join("data"), tls)?;
    Ok(Agent { url, child, _dir: dir })
}

/// An agent on a free loopback port (logging warnings only, to nowhere): the process and
/// its URL, read from its first line.
pub(super) fn spawn_loopback(bin: &Path, token: &Path, data: &Path, tls: bool) -> Result<(Child, String)> {
    let mut child = Command::new(bin)
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(token)
        .arg("--data-dir")
        .arg(data)
        .args(tls.then_some("--tls"))
        .env("KREG_AGENT_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("kreg-agent listening on ")
        .ok_or_else(|| anyhow!("the agent said {line:?}"))?;
    Ok((child, format!("http://{addr}")))
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A field of /proc/PID/status, in kB.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| {
        l.strip_prefix(field)?
            .trim_start_matches(':')
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// A field of /proc/PID/smaps_rollup, in kB.
fn rollup_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// utime + stime of a process, in clock ticks.
fn ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = text.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn mib(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// hackbench's own `Time:` figure, in seconds.
fn hackbench(args: &str) -> Result<f64> {
    let out = Command::new("hackbench")
        .args(args.split_whitespace())
        .output()
        .context("hackbench (Debian package rt-tests)")?;
    if !out.status.success() {
        bail!("hackbench {args}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Time:")?.trim().parse().ok())
        .ok_or_else(|| anyhow!("hackbench printed no Time: {text}"))
}

/// Waits until the agent is down to its one thread (tokio's blocking pool lets idle
/// threads go after 10 s), at most 15 s.
fn settle(pid: u32) -> u64 {
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until && status_kb(pid, "Threads").unwrap_or(1) > 1 {
        std::thread::sleep(Duration::from_millis(200));
    }
    status_kb(pid, "Threads").unwrap_or(0)
}

pub async fn run(cfg: &kreg::config::Config, a: AgentArgs) -> Result<ExitCode> {
    let bin = a.agent_bin.clone().unwrap_or_else(|| cfg.agent_bin.clone());
    let size = std::fs::metadata(&bin)
        .with_context(|| bin.display().to_string())?
        .len();
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header(["measure", "figure", "goal"]);
    let agent = start(&bin, false)?;
    let client = AgentClient::new(&agent.url, TOKEN);
    client.identity().await?;
    idle(&agent, &a, &mut table).await;
    idle_tls(&bin, &mut table)?;
    upload(&agent, &client, a.upload_mb, &mut table).await?;
    drop(client);
    drop(agent);
    hackbench_rows(&bin, &a, &mut table)?;
    println!(
        "kreg-agent {} ({} bytes), {} CPUs",
        bin.display(),
        size,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}

/// Memory of an agent serving HTTPS (as `kreg agent install` sets it up), idle.
fn idle_tls(bin: &Path, table: &mut Table) -> Result<()> {
    let agent = start(bin, true)?;
    let pid = agent.child.id();
    let threads = settle(pid);
    table.add_row(vec![
        "RSS idle, serving HTTPS (threads)".to_string(),
        format!("{} ({threads})", mib(status_kb(pid, "VmRSS").unwrap_or(0))),
        "<= 4 MiB".into(),
    ]);
    Ok(())
}

/// Memory once the agent is down to its one thread, and its CPU over `idle_secs`.
async fn idle(agent: &Agent, a: &AgentArgs, table: &mut Table) {
    let pid = agent.child.id();
    let threads = settle(pid);
    let idle_rss = status_kb(pid, "VmRSS").unwrap_or(0);
    table.add_row(vec![
        "RSS idle (threads)".to_string(),
        format!("{} ({threads})", mib(idle_rss)),
        "<= 4 MiB".into(),
    ]);
    // Most of the RSS is the program's and libc's pages mapped from the page cache; the
    // memory the agent holds alone is its anonymous part, and its proportional share of
    // the shared pages is PSS.
    table.add_row(vec![
        "  of which anonymous; PSS".to_string(),
        format!(
            "{}; {}",
            mib(status_kb(pid, "RssAnon").unwrap_or(0)),
            mib(rollup_kb(pid, "Pss").unwrap_or(0))
        ),
        String::new(),
    ]);
    let t0 = ticks(pid).unwrap_or(0);
    eprintln!("kreg: counting the idle agent's CPU for {} s", a.idle_secs);
    tokio::time::sleep(Duration::from_secs(a.idle_secs)).await;
    let idle_ticks = ticks(pid).unwrap_or(0) - t0;
    table.add_row(vec![
        format!("CPU ticks in {} s idle", a.idle_secs),
        idle_ticks.to_string(),
        "0".into(),
    ]);
}

/// The upload, with the agent's resident memory sampled every 5 ms meanwhile.
async fn upload(agent: &Agent, client: &AgentClient, mb: usize, table: &mut Table) -> Result<()> {
    let pid = agent.child.id();
    let bytes = vec![0x5a_u8; mb << 20];
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let s2 = sampling.clone();
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        while s2.load(std::sync::atomic::Ordering::Relaxed) {
            peak = peak.max(status_kb(pid, "VmRSS").unwrap_or(0));
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let started = Instant::now();
    let sent = client.upload("bench-upload", bytes).await;
    let took = started.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler
        .join()
        .expect("sampler")
        .max(status_kb(pid, "VmHWM").unwrap_or(0));
    sent?;
    table.add_row(vec![
        format!("RSS peak during a {mb} MB upload"),
        format!("{} ({:.0} MB/s)", mib(peak), mb as f64 / took.as_secs_f64().max(1e-9)),
        "<= 8 MiB".into(),
    ]);
    Ok(())
}

/// hackbench, interleaved: without the agent, then with it (started fresh and settled).
fn hackbench_rows(bin: &Path, a: &AgentArgs, table: &mut Table) -> Result<()> {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..a.runs {
        eprintln!("kreg: hackbench {} of {} (without, then with the agent)", i + 1, a.runs);
        without.push(hackbench(&a.hackbench)?);
        let agent = start(bin, false)?;
        settle(agent.child.id());
        with.push(hackbench(&a.hackbench)?);
        drop(agent);
    }
    let (mw, mo) = (median(&mut with), median(&mut without));
    table.add_row(vec![
        format!("hackbench {} median of {}: with / without", a.hackbench, a.runs),
        format!("{:.3} s / {:.3} s = {:.3}", mw, mo, mw / mo),
        "<= 1.01".into(),
    ]);
    Ok(())
}
