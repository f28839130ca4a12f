//! `kreg bench fleet`: the queue under many workers and machine pairs. In a database of
//! its own (made on the configured server, dropped after), with agents on loopback and
//! real `kreg worker` processes: how long a claim takes (p50, p99), what the database does
//! meanwhile, and how soon the machines of killed workers are leased again after their
//! leases time out.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use sqlx::PgPool;

use kreg::config::Config;
use kreg::store::{self, fleet};

const TOKEN: &str = "bench-fleet-token-0123456789";

#[derive(clap::Args)]
pub struct FleetArgs {
    /// `kreg worker` processes.
    #[arg(long, default_value_t = 10)]
    workers: usize,
    /// Machine pairs (a SUT agent each, on loopback).
    #[arg(long, default_value_t = 500)]
    pairs: usize,
    /// The workers' lease (seconds).
    #[arg(long, default_value_t = 10.0)]
    lease: f64,
    /// Workers killed (SIGKILL) while they hold leases, for the re-lease figure (default:
    /// half the workers, at least one).
    #[arg(long)]
    kill: Option<usize>,
}

impl FleetArgs {
    fn kill(&self) -> usize {
        self.kill.unwrap_or((self.workers / 2).max(1))
    }
}

/// Children killed when dropped.
struct Kids(Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A folder removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The URL of database `name` on the server kreg is configured with.
async fn url_of(cfg: &Config, name: &str) -> Result<String> {
    if let Some(url) = &cfg.database_url {
        let url = url.expose();
        let (head, query) = match url.split_once('?') {
            Some((h, q)) => (h, format!("?{q}")),
            None => (url, String::new()),
        };
        let (server, _) = head
            .rsplit_once('/')
            .filter(|(s, _)| s.contains("://") && !s.ends_with('/'))
            .ok_or_else(|| anyhow!("DATABASE_URL names no database"))?;
        return Ok(format!("{server}/{name}{query}"));
    }
    store::cluster::ensure(&cfg.data_dir).await?;
    let dir = store::cluster::cluster_dir(&cfg.data_dir.canonicalize()?)?;
    Ok(format!("postgres://kreg@localhost/{name}?host={}", dir.display()))
}

fn agent(bin: &Path, dir: &Path, i: usize) -> Result<(Child, String)> {
    super::agent::spawn_loopback(bin, &dir.join("token"), &dir.join(format!("a{i}")), false)
}

fn worker(url: &str, dir: &Path, name: &str, a: &FleetArgs, until_empty: bool) -> Result<Child> {
    let log = std::fs::File::create(dir.join(format!("{name}.log")))?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.env("DATABASE_URL", url)
        .env("KREG_DATA_DIR", dir.join(name))
        .args([
            "worker",
            "--name",
            name,
            "--lease",
            &a.lease.to_string(),
            "--poll",
            "0.5",
        ])
        .args(until_empty.then_some("--until-empty"))
        .stdout(log.try_clone()?)
        .stderr(log);
    Ok(cmd.spawn()?)
}

/// A scenario of one command job per slot (`iterations` = the pairs of a run).
fn scenario(argv: &str, iterations: usize) -> String {
    format!(
        "name: bench-fleet\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab }} }}\nkernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - {{ name: w, kind: command, argv: {argv}, timeout: 600, metrics: {{ value: {{ regex: \"value: ([0-9]+)\", higher_is_better: true }} }} }}\niterations: {iterations}\n"
    )
}

async fn submit(db: &PgPool, text: &str, pairs: usize) -> Result<i64> {
    let s = kreg::scenario::from_str(text, Path::new("/")).map_err(|d| anyhow!("{:?}", d))?;
    let jobs = kreg::plan::expand(&s);
    let slots = kreg::plan::slots(&s, &jobs, pairs as u32).map_err(|e| anyhow!(e))?;
    let with: Vec<_> = jobs.into_iter().zip(slots.into_iter().map(|x| x as i32)).collect();
    let labels = Default::default();
    let sub = fleet::Submission {
        pairs: pairs as i32,
        labels: &labels,
        mix_labels: false,
        needs_loadgen: false,
    };
    Ok(fleet::submit(
        db,
        &store::ScenarioText {
            name: &s.name,
            yaml: text,
            source_path: "bench",
            files: &[],
        },
        &with,
        &sub,
    )
    .await?)
}

/// CPU seconds used so far by this machine's PostgreSQL servers (0 when the server is
/// elsewhere): each server's own and its ended backends' (reaped into its children's
/// times), and its live backends'.
pub(super) fn postgres_cpu() -> f64 {
    let tick = 100.0;
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim() != "postgres" {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let fields: Vec<f64> = stat
            .rsplit_once(')')
            .map_or("", |x| x.1)
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        let pid: f64 = e.file_name().to_string_lossy().parse().unwrap_or(-1.0);
        if fields.len() > 14 {
            procs.push((pid, fields));
        }
    }
    let pids: Vec<f64> = procs.iter().map(|p| p.0).collect();
    procs
        .iter()
        .map(|(_, f)| {
            // Fields after the command: 1 is the parent, 11-14 utime, stime, cutime, cstime.
            let backend = pids.contains(&f[1]);
            (f[11] + f[12] + if backend { 0.0 } else { f[13] + f[14] }) / tick
        })
        .sum()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The claim times the workers said (`claimed in X ms`).
fn claim_times(dir: &Path) -> Vec<f64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "log") {
            for line in std::fs::read_to_string(e.path()).unwrap_or_default().lines() {
                if let Some(ms) = line
                    .split("(claimed in ")
                    .nth(1)
                    .and_then(|r| r.split(" ms").next())
                    .and_then(|x| x.parse().ok())
                {
                    out.push(ms);
                }
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

pub async fn run(cfg: &Config, a: FleetArgs) -> Result<ExitCode> {
    if a.workers == 0 || a.pairs < a.workers || a.kill() > a.workers {
        bail!("give --workers ≥ 1, --pairs ≥ --workers and --kill ≤ --workers");
    }
    let name = format!("kreg_bench_fleet_{}", std::process::id());
    let url = url_of(cfg, &name).await?;
    let admin_url = url_of(cfg, "postgres").await?;
    store::bench::create_database(&admin_url, &name).await?;
    let result = bench(cfg, &a, &url).await;
    store::bench::drop_database(&admin_url, &name).await?;
    result
}

async fn bench(cfg: &Config, a: &FleetArgs, url: &str) -> Result<ExitCode> {
    let dir = Scratch(kreg::config::temp_dir().join(format!("kreg-bench-fleet-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    std::fs::write(dir.0.join("token"), TOKEN)?;
    let db = store::open(url.parse()?).await?;
    let started = Instant::now();
    let mut agents = Kids(Vec::new());
    let mut pool = String::from("machines:\n");
    for i in 0..a.pairs {
        let (child, agent_url) = agent(&cfg.agent_bin, &dir.0, i)?;
        agents.0.push(child);
        pool += &format!(
            "  sut{i:04}: {{ role: sut, labels: {{ bench: fleet }}, transport: {{ kind: http, url: \"{agent_url}\", token_file: token }} }}\n"
        );
    }
    let machines = kreg::scenario::pool_from_str(&pool, &dir.0).map_err(|d| anyhow!("{d:?}"))?;
    let rows: Vec<fleet::NewMachine> = machines
        .iter()
        .map(|m| fleet::NewMachine {
            name: &m.name,
            role: kreg::scenario::Role::Sut,
            loadgen: None,
            labels: &m.labels,
            about: &m.about,
            agent_id: None,
        })
        .collect();
    fleet::add_machines(&db, &pool, &dir.0.display().to_string(), &rows).await?;
    eprintln!("{} agents up in {:.1} s", a.pairs, started.elapsed().as_secs_f64());
    // Claims: a slot of one job on every pair, runs of up to 100 pairs each.
    let mut left = a.pairs;
    while left > 0 {
        let n = left.min(100);
        submit(&db, &scenario("[sh, -c, \"echo value: 1\"]", n), n).await?;
        left -= n;
    }
    let (before, cpu_before, t0) = (store::bench::counters(&db).await?, postgres_cpu(), Instant::now());
    let mut workers = Kids(Vec::new());
    for i in 0..a.workers {
        workers.0.push(worker(url, &dir.0, &format!("claim-w{i}"), a, true)?);
    }
    for w in &mut workers.0 {
        w.wait()?;
    }
    let secs = t0.elapsed().as_secs_f64();
    let (after, cpu_after) = (store::bench::counters(&db).await?, postgres_cpu());
    let claims = claim_times(&dir.0);
    let done = store::bench::jobs_done(&db).await?;
    let releases = relet(&db, a, url, &dir.0).await?;
    drop(workers);
    drop(agents);
    print_figures(
        a,
        &Figures {
            secs,
            done,
            claims,
            counters: (before, after),
            cpu: cpu_after - cpu_before,
            relet: releases,
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// Leases taken over after `--kill` workers holding them were SIGKILLed: seconds from the
/// moment each lease timed out to its new lease.
async fn relet(db: &PgPool, a: &FleetArgs, url: &str, dir: &Path) -> Result<Vec<f64>> {
    let run = submit(
        db,
        &scenario("[sh, -c, \"sleep 120; echo value: 1\"]", a.workers),
        a.workers,
    )
    .await?;
    let mut workers = Kids(Vec::new());
    for i in 0..a.workers {
        workers.0.push(worker(url, dir, &format!("hold-w{i}"), a, false)?);
    }
    // Every worker holding a slot of the run.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let leased = store::bench::slots_leased(db, run).await?;
        if leased as usize == a.workers {
            break;
        }
        if Instant::now() > deadline {
            bail!("{leased} of {} slots leased after 120 s", a.workers);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Their last heartbeats, then SIGKILL: each lease times out `lease` after its last.
    let victims = store::bench::slot_lease_expiry(db, run).await?;
    for w in workers.0.iter_mut().take(a.kill()) {
        let _ = w.kill();
        let _ = w.wait();
    }
    let killed_at = store::bench::now(db).await?;
    // Fresh workers to take the machines over.
    for i in 0..a.kill() {
        workers.0.push(worker(url, dir, &format!("relief-w{i}"), a, false)?);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(a.lease + 90.0);
    let taken: Vec<(i32, f64)> = loop {
        let rows = store::bench::slots_taken_over(db, run).await?;
        if rows.len() >= a.kill() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if taken.len() < a.kill() {
        bail!(
            "only {} of {} killed workers' slots were leased again within {} s",
            taken.len(),
            a.kill(),
            a.lease + 90.0
        );
    }
    let mut out: Vec<f64> = taken
        .iter()
        .map(|(slot, at)| {
            // The lease timed out at its expiry as of the kill (a heartbeat may have come
            // between the reading and the kill: the later of the two).
            let expiry = victims.iter().find(|v| v.0 == *slot).map_or(killed_at, |v| v.1);
            at - expiry.max(killed_at)
        })
        .collect();
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// What the claims' phase measured.
struct Figures {
    /// Its length, and the one-job slots done in it.
    secs: f64,
    done: i64,
    /// Each claim's time, ms, sorted.
    claims: Vec<f64>,
    /// The database's counters before and after, and PostgreSQL's CPU seconds meanwhile.
    counters: ([i64; 5], [i64; 5]),
    cpu: f64,
    /// Seconds from each killed worker's lease timing out to the machine's new lease.
    relet: Vec<f64>,
}

fn print_figures(a: &FleetArgs, f: &Figures) {
    let (secs, done, cpu) = (f.secs, f.done, f.cpu);
    let (claims, relet) = (&f.claims, &f.relet);
    let (before, after) = f.counters;
    let d = |i: usize| (after[i] - before[i]) as f64;
    println!(
        "fleet: {} workers, {} pairs (agents on loopback), lease {} s",
        a.workers, a.pairs, a.lease
    );
    println!(
        "claims: {} in {secs:.1} s ({done} one-job slots done): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (goal p99 ≤ 100 ms)",
        claims.len(),
        percentile(claims, 0.5),
        percentile(claims, 0.99),
        claims.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "database meanwhile: {:.0} transactions/s, {:.0} rows read/s ({:.0} returned by scans, {:.0} fetched by index), {:.0} rows written/s, {:.0} blocks read from disk; postgres CPU {cpu:.1} s ({:.0}% of one core)",
        d(0) / secs,
        (d(1) + d(2)) / secs,
        d(1) / secs,
        d(2) / secs,
        d(3) / secs,
        d(4),
        100.0 * cpu / secs
    );
    println!(
        "re-lease after SIGKILL of {} workers holding leases: each machine leased again p50 {:.1} s, max {:.1} s after its lease timed out (goal ≤ 30 s; idle workers look every 0.5 s)",
        relet.len(),
        percentile(relet, 0.5),
        relet.last().copied().unwrap_or(f64::NAN)
    );
}
