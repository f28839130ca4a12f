//! `kreg bench dashboard`: stores a run of N samples (two kernels, two variants, ten
//! metrics, one of them changed by 5%), serves the dashboard in-process on loopback, loads
//! the run page and the comparison page several times and prints the server's own time
//! (its Server-Timing header) and each page's weight with its stylesheet and script.

use std::process::ExitCode;

use anyhow::{Context, Result};
use comfy_table::{presets, Table};

use kreg::config::Config;
use kreg::parse::Metric;
use kreg::stats::rng::Rng;
use kreg::stats::MetricKind;
use kreg::store;

const METRICS: usize = 10;

fn scenario_yaml(iterations: usize) -> String {
    let metrics: String = (0..METRICS)
        .map(|i| {
            let kind = if i % 2 == 0 { "mean" } else { "latency" };
            format!("      m{i}: {{ regex: \"m{i}=([0-9.]+)\", unit: us, higher_is_better: false, kind: {kind} }}\n")
        })
        .collect();
    format!(
        "name: bench-dashboard\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab, cpus: 2, memory_mib: 1024 }} }}\n\
kernels:\n  - {{ name: a, source: {{ deb: linux-image-amd64 }} }}\n  - {{ name: b, source: {{ deb: linux-image-6.12-amd64 }} }}\n\
baseline: a\nvariants:\n  - {{ name: default }}\n  - {{ name: batch, policy: batch }}\n\
workloads:\n  - name: probe\n    kind: command\n    argv: [true]\n    timeout: 60\n    metrics:\n{metrics}iterations: {iterations}\n"
    )
}

/// Records the run and stores every job's samples; returns the run id and the sample count.
async fn seed(db: &sqlx::PgPool, samples: usize) -> Result<(i64, usize)> {
    let iterations = (samples / (4 * METRICS)).max(2);
    let yaml = scenario_yaml(iterations);
    let s = kreg::scenario::from_str(&yaml, std::path::Path::new("."))
        .map_err(|d| anyhow::anyhow!("bench scenario: {}", d[0].render("bench")))?;
    let jobs = kreg::plan::expand(&s);
    let run = store::record_run(db, &s.name, &yaml, "bench-dashboard.yaml", &jobs).await?;
    let mut rng = Rng::new(7);
    let mut stored = 0;
    for j in store::jobs(db, run).await? {
        let metrics: Vec<Metric> = (0..METRICS)
            .map(|i| {
                let shift = if j.kernel == "b" && i == 3 { 1.05 } else { 1.0 };
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

/// (server ms per load, bytes) of a page.
async fn load(client: &reqwest::Client, url: &str, repeat: usize) -> Result<(Vec<f64>, usize)> {
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..repeat {
        let res = client.get(url).send().await?.error_for_status()?;
        let ms: f64 = res
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|v| v.parse().ok())
            .context("no Server-Timing header")?;
        bytes = res.bytes().await?.len();
        times.push(ms);
    }
    Ok((times, bytes))
}

pub async fn run(cfg: &Config, samples: usize, repeat: usize) -> Result<ExitCode> {
    let options = super::db::options(cfg).await?;
    let db = store::open(options.clone()).await?;
    let started = std::time::Instant::now();
    let (run, stored) = seed(&db, samples).await?;
    let seeded = started.elapsed().as_secs_f64();
    let (changes, _) = tokio::sync::broadcast::channel(16);
    let app = kreg::web::router(
        kreg::web::AppState {
            db: kreg::web::read_only_pool(options),
            changes,
        },
        kreg::web::guard::Guard::loopback(),
    );
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", socket.local_addr()?);
    tokio::spawn(async move { axum::serve(socket, app).await });
    let client = reqwest::Client::new();
    let (_, css) = load(&client, &format!("{base}/assets/kreg.css"), 1).await?;
    let (_, js) = load(&client, &format!("{base}/assets/kreg.js"), 1).await?;
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header([
        "page",
        "server ms (min)",
        "server ms (median)",
        "server ms (max)",
        "HTML KB",
        "with CSS+JS KB",
    ]);
    for (name, path) in [
        ("run", format!("/runs/{run}")),
        ("comparison", format!("/runs/{run}/report")),
        ("comparison, every row", format!("/runs/{run}/report?show=all")),
        ("runs", "/".to_string()),
    ] {
        let (mut t, bytes) = load(&client, &format!("{base}{path}"), repeat).await?;
        t.sort_by(f64::total_cmp);
        table.add_row(vec![
            name.to_string(),
            format!("{:.1}", t[0]),
            format!("{:.1}", t[t.len() / 2]),
            format!("{:.1}", t[t.len() - 1]),
            format!("{:.1}", bytes as f64 / 1024.0),
            format!("{:.1}", (bytes + css + js) as f64 / 1024.0),
        ]);
    }
    println!(
        "dashboard: run {run} with {stored} samples (stored in {seeded:.1} s), {repeat} loads per page; goals: \
         ≤ 200 ms server time, ≤ 300 KB per page\n{table}"
    );
    Ok(ExitCode::SUCCESS)
}
