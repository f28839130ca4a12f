//! `kreg bench dashboard`: stores a run of N samples (two variants, ten metrics, one of
//! them 5% worse on every kernel but the baseline; two kernels, more past 500 runs a cell)
//! and, with `--runs`, that many small runs besides; serves the dashboard in-process on
//! loopback; loads each page (run, comparison, its live rows, its API, the runs list)
//! several times and prints the server's own time (its Server-Timing header) for the first
//! load and the later ones, and each page's weight plain and gzipped; with `--viewers`,
//! that many pages following the run live, and what each change costs them.

use std::process::ExitCode;

use anyhow::{Context, Result};
use comfy_table::{presets, Table};

use kreg::config::Config;
use kreg::parse::Metric;
use kreg::stats::rng::Rng;
use kreg::stats::MetricKind;
use kreg::store;

const METRICS: usize = 10;

/// The most runs a cell takes here; more samples are more kernels.
const MAX_ITERATIONS: usize = 500;

fn scenario_yaml(kernels: usize, iterations: usize) -> String {
    let metrics: String = (0..METRICS)
        .map(|i| {
            let kind = if i % 2 == 0 { "mean" } else { "latency" };
            format!("      m{i}: {{ regex: \"m{i}=([0-9.]+)\", unit: us, higher_is_better: false, kind: {kind} }}\n")
        })
        .collect();
    format!(
        "name: bench-dashboard\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab, cpus: 2, memory_mib: 1024 }} }}\n\
kernels:\n  - {{ name: a, source: {{ deb: linux-image-amd64 }} }}\n  - {{ name: b, source: {{ deb: linux-image-6.12-amd64 }} }}\n{more}\
baseline: a\nvariants:\n  - {{ name: default }}\n  - {{ name: batch, policy: batch }}\n\
workloads:\n  - name: probe\n    kind: command\n    argv: [true]\n    timeout: 60\n    metrics:\n{metrics}iterations: {iterations}\n",
        more = (2..kernels)
            .map(|k| format!("  - {{ name: k{k}, source: {{ deb: linux-image-amd64 }} }}\n"))
            .collect::<String>()
    )
}

/// Records the run and stores every job's samples; returns the run id and the sample count.
async fn seed(db: &sqlx::PgPool, samples: usize) -> Result<(i64, usize)> {
    // Two variants, ten metrics; kernels added past MAX_ITERATIONS runs a cell.
    let cells = (samples / (2 * METRICS)).max(4);
    let kernels = cells.div_ceil(MAX_ITERATIONS).max(2);
    let iterations = (cells / kernels).max(2);
    let yaml = scenario_yaml(kernels, iterations);
    let s = kreg::scenario::from_str(&yaml, std::path::Path::new("."))
        .map_err(|d| anyhow::anyhow!("bench scenario: {}", d[0].render("bench")))?;
    let jobs = kreg::plan::expand(&s);
    let run = store::record_run(
        db,
        &store::ScenarioText {
            name: &s.name,
            yaml: &yaml,
            source_path: "bench-dashboard.yaml",
            files: &[],
        },
        kreg::plan::RunKind::of(&s),
        &jobs,
    )
    .await?;
    let mut rng = Rng::new(7);
    let mut stored = 0;
    for j in store::jobs(db, run).await? {
        let metrics: Vec<Metric> = (0..METRICS)
            .map(|i| {
                let shift = if j.kernel != "a" && i == 3 { 1.05 } else { 1.0 };
                Metric {
                    name: format!("m{i}"),
                    value: (100.0 + 10.0 * i as f64) * shift * (1.0 + 0.02 * (rng.uniform() - 0.5)),
                    unit: "us".into(),
                    higher_is_better: false,
                    kind: if i % 2 == 0 {
                        MetricKind::Mean
                    } else {
                        MetricKind::Latency
                    },
                }
            })
            .collect();
        stored += metrics.len();
        let outcome = store::JobOutcome {
            kernel_release: format!("6.1.0-bench-{}", j.kernel),
            boot_id: format!("boot-{}-{}", j.kernel, j.boot),
            observed_policy: if j.variant == "batch" {
                "SCHED_BATCH"
            } else {
                "SCHED_OTHER"
            }
            .into(),
            metrics,
            raw: {
                let mut o = kreg::record::Outputs::default();
                o.push(kreg::record::RawKind::Stdout, "m0=100\n");
                o
            },
            tool_versions: Default::default(),
        };
        let mut tx = db.begin().await?;
        store::start_job(&mut *tx, j.id).await?;
        store::finish_job(&mut tx, run, j.id, &outcome).await?;
        tx.commit().await?;
    }
    store::set_run_state(db, run, kreg::plan::RunState::Done).await?;
    Ok((run, stored))
}

/// One load of a page as a browser makes it, then once more plain: (the browser's load's
/// server ms, compression included; bytes plain; bytes gzipped).
async fn load_once(client: &reqwest::Client, url: &str) -> Result<(f64, usize, usize)> {
    let (ms, gzipped) = gzipped(client, url).await?;
    let plain = client.get(url).send().await?.error_for_status()?.bytes().await?.len();
    Ok((ms, plain, gzipped))
}

/// One load as a browser makes it (gzip accepted): the server's time (its Server-Timing,
/// which counts the compression) and the bytes sent.
async fn gzipped(client: &reqwest::Client, url: &str) -> Result<(f64, usize)> {
    let res = client
        .get(url)
        .header("accept-encoding", "gzip")
        .send()
        .await?
        .error_for_status()?;
    let ms = res
        .headers()
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("dur=").nth(1))
        .and_then(|v| v.parse().ok())
        .context("no Server-Timing header")?;
    Ok((ms, res.bytes().await?.len()))
}

/// Stores `n` small finished runs (one job each) for the runs list.
async fn more_runs(db: &sqlx::PgPool, n: usize) -> Result<()> {
    let yaml = "name: bench-runs\nhosts:\n  sut: { role: sut, transport: { kind: lab } }\n\
kernels: [ { name: a, source: { deb: linux-image-amd64 } } ]\nworkloads:\n  - { name: probe, kind: command, argv: [true], \
metrics: { m: { regex: \"m=([0-9.]+)\", higher_is_better: false } } }\niterations: 1\n";
    let s = kreg::scenario::from_str(yaml, std::path::Path::new("."))
        .map_err(|d| anyhow::anyhow!("bench scenario: {}", d[0].render("bench")))?;
    let jobs = kreg::plan::expand(&s);
    for _ in 0..n {
        let run = store::record_run(
            db,
            &store::ScenarioText {
                name: &s.name,
                yaml,
                source_path: "bench-runs.yaml",
                files: &[],
            },
            kreg::plan::RunKind::of(&s),
            &jobs,
        )
        .await?;
        store::set_run_state(db, run, kreg::plan::RunState::Done).await?;
    }
    Ok(())
}

/// `viewers` pages following run `run`: each hears the run's change on the event stream
/// and fetches the report's live rows, as a browser on the report page does. Returns, per
/// change, the server time each fetch took (waiting for the one judging the report
/// included), the time until every viewer had its rows, and this process's CPU time.
async fn viewers(
    db: &sqlx::PgPool,
    base: &str,
    live: &str,
    run: i64,
    viewers: usize,
    changes: usize,
) -> Result<Vec<(Vec<f64>, f64, f64)>> {
    // The run goes on: each change is a job finishing again (its state written, as the
    // engine writes it; the trigger announces it), which changes the run's report. Its
    // state changes first, before the viewers listen.
    store::set_run_state(db, run, kreg::plan::RunState::Running).await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let client = reqwest::Client::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, f64)>();
    let mut tasks = Vec::new();
    for _ in 0..viewers {
        let mut res = client
            .get(format!("{base}/api/v1/events?run={run}"))
            .send()
            .await?
            .error_for_status()?;
        let (client, tx, rows) = (client.clone(), tx.clone(), format!("{base}{live}"));
        tasks.push(tokio::spawn(async move {
            let mut seen = 0;
            while let Ok(Some(chunk)) = res.chunk().await {
                // One change event per notification (keep-alives are comments).
                let events = String::from_utf8_lossy(&chunk).matches("event: change").count();
                for _ in 0..events {
                    seen += 1;
                    if let Ok((ms, _)) = gzipped(&client, &rows).await {
                        let _ = tx.send((seen, ms));
                    }
                }
            }
        }));
    }
    let mut out = Vec::new();
    for change in 1..=changes {
        let started = std::time::Instant::now();
        let cpu = cpu_ms();
        kreg::store::bench::finish_first_job(db, run).await?;
        let mut times = Vec::new();
        while times.len() < viewers {
            let (seen, ms) = tokio::time::timeout(std::time::Duration::from_secs(120), rx.recv())
                .await
                .context("a viewer did not get its rows within 120 s")?
                .context("the viewers ended")?;
            if seen == change {
                times.push(ms);
            }
        }
        out.push((times, started.elapsed().as_secs_f64() * 1000.0, cpu_ms() - cpu));
    }
    for t in tasks {
        t.abort();
    }
    store::set_run_state(db, run, kreg::plan::RunState::Done).await?;
    Ok(out)
}

/// The CPU time so far (user and system, in ms) of this process — the server, compression
/// included, with the viewers' light clients — and of every PostgreSQL process of the
/// machine (its backends do the queries' work): what a change costs in all.
fn cpu_ms() -> f64 {
    own_cpu_ms("/proc/self/stat") + postgres_cpu_ms()
}

/// The CPU time of every process named `postgres` (the server and its backends), in ms.
/// A backend that exits between two readings takes its time away: the benchmark keeps its
/// connections open, so its backends live through it.
fn postgres_cpu_ms() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "postgres"))
        .map(|e| own_cpu_ms(&e.path().join("stat").to_string_lossy()))
        .filter(|v| v.is_finite())
        .sum()
}

/// The user and system CPU time of the process whose `stat` file is at `path`, in ms.
fn own_cpu_ms(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The fields after the command's closing parenthesis: utime and stime are the 12th and
    // 13th of them, in clock ticks.
    let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    match (field(11), field(12)) {
        (Some(u), Some(s)) if ticks > 0.0 => (u + s) * 1000.0 / ticks,
        _ => f64::NAN,
    }
}

/// The viewers of one live page, three changes: a table of what each change cost.
async fn live_table(db: &sqlx::PgPool, base: &str, live: &str, run: i64, watchers: usize) -> Result<Table> {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN);
    t.set_header([
        "change",
        "viewers",
        "CPU ms per viewer (kreg + PostgreSQL)",
        "response ms (mean)",
        "response ms (slowest)",
        "ms until every viewer had its update",
    ]);
    for (i, (times, wall, cpu)) in viewers(db, base, live, run, watchers, 3).await?.into_iter().enumerate() {
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let worst = times.iter().copied().fold(0.0, f64::max);
        t.add_row(vec![
            (i + 1).to_string(),
            times.len().to_string(),
            format!("{:.1}", cpu / times.len() as f64),
            format!("{mean:.1}"),
            format!("{worst:.1}"),
            format!("{wall:.0}"),
        ]);
    }
    Ok(t)
}

/// Run `run` made to finish again while the server is up (running, then done): the server
/// time of a reader's first load of its report 2 s after it finished.
async fn finishing_while_served(db: &sqlx::PgPool, base: &str, run: i64) -> Result<f64> {
    let client = reqwest::Client::new();
    store::set_run_state(db, run, kreg::plan::RunState::Running).await?;
    store::set_run_state(db, run, kreg::plan::RunState::Done).await?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    Ok(load_once(&client, &format!("{base}/runs/{run}/report")).await?.0)
}

/// Each page loaded `repeat` times: server time of the first and later loads, weights.
async fn pages_table(base: &str, run: i64, repeat: usize) -> Result<Table> {
    let client = reqwest::Client::new();
    let (_, _, css) = load_once(&client, &format!("{base}/assets/kreg.css")).await?;
    let (_, _, js) = load_once(&client, &format!("{base}/assets/kreg.js")).await?;
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header([
        "page",
        "server ms, first load",
        "server ms, again (median)",
        "again (max)",
        "KB",
        "KB gzipped",
        "with CSS+JS, gzipped KB",
    ]);
    for (name, path) in [
        ("run", format!("/runs/{run}")),
        ("comparison", format!("/runs/{run}/report")),
        ("comparison, every row", format!("/runs/{run}/report?show=all")),
        ("comparison, live rows", format!("/runs/{run}/report/rows")),
        ("comparison, API", format!("/api/v1/runs/{run}/report")),
        ("runs (a page)", "/".to_string()),
        ("runs, API (a page)", "/api/v1/runs".to_string()),
    ] {
        let url = format!("{base}{path}");
        let (first, bytes, gzipped) = load_once(&client, &url).await?;
        let mut again = Vec::new();
        for _ in 1..repeat.max(2) {
            again.push(load_once(&client, &url).await?.0);
        }
        again.sort_by(f64::total_cmp);
        table.add_row(vec![
            name.to_string(),
            format!("{first:.1}"),
            format!("{:.1}", again[again.len() / 2]),
            format!("{:.1}", again[again.len() - 1]),
            format!("{:.1}", bytes as f64 / 1024.0),
            format!("{:.1}", gzipped as f64 / 1024.0),
            format!("{:.1}", (gzipped + css + js) as f64 / 1024.0),
        ]);
    }
    Ok(table)
}

pub async fn run(cfg: &Config, samples: usize, repeat: usize, runs: usize, watchers: usize) -> Result<ExitCode> {
    let options = crate::cli::db::options(cfg).await?;
    let db = store::open(options.clone()).await?;
    let started = std::time::Instant::now();
    more_runs(&db, runs).await?;
    let (run, stored) = seed(&db, samples).await?;
    let seeded = started.elapsed().as_secs_f64();
    let app = kreg::web::router(
        kreg::web::AppState::listening(kreg::web::read_only_pool(options)),
        kreg::web::guard::Guard::loopback(),
    );
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", socket.local_addr()?);
    tokio::spawn(async move { axum::serve(socket, app).await });
    let table = pages_table(&base, run, repeat).await?;
    println!(
        "dashboard: run {run} with {stored} samples, {} runs in all (stored in {seeded:.1} s), {repeat} loads per page \
         (the first judges the report; later loads of an unchanged run are made once and kept); goals: \
         ≤ 200 ms server time, ≤ 300 KB gzipped per page\n{table}",
        runs + 1
    );
    let first = finishing_while_served(&db, &base, run).await?;
    println!(
        "a run finishing while served (made running, then done): the server makes its report as it finishes; \
         a reader's first load 2 s later: {first:.1} ms of server time"
    );
    if watchers > 0 {
        for (page, live) in [
            ("report", format!("/runs/{run}/report/rows")),
            ("run", format!("/runs/{run}/live")),
        ] {
            let t = live_table(&db, &base, &live, run, watchers).await?;
            println!(
                "live: {watchers} viewers of run {run}'s {page} page, each fetching {live} on every change \
                 (a job of the run finishing); CPU of this process (the server, compression included) and of \
                 PostgreSQL's processes, per change per viewer; goal: ≤ 50 ms per viewer per change\n{t}"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
