//! The dashboard in Debian's Chromium driven over WebDriver (chromedriver), against a real
//! PostgreSQL, a real `kreg serve` and a real engine run on a real kreg-agent:
//! - a run's job states reach an open page within 2 s while the engine runs;
//! - the runs page, a run page and the comparison show the right kernels, variants and
//!   verdicts (the verdicts `kreg report --format json` gives);
//! - a filter changes the URL, and reloading that URL gives the same view;
//! - no page logs a console error, no page scrolls sideways at 800 px;
//! - screenshots of every page at 1280 and 800 px go to target/screenshots/.
//!
//! Bad requests and the server's read-only promise: `controller/dashboard_http.rs`.

use kreg_testkit as common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::web::{report_json, Server};
use common::{fresh_db, kreg, Agent, Scratch, TestDb};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// chromedriver with a headless Chromium session. `close` ends the session (chromedriver
/// then quits Chromium); on drop, after a failure, the whole process group is killed, so
/// that no browser outlives the test.
struct Browser {
    driver: Child,
    driver_url: String,
    client: Client,
    _profile: Scratch,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    async fn start() -> Browser {
        let port = free_port();
        use std::os::unix::process::CommandExt;
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver; scripts/deps.sh installs it)");
        let driver_url = format!("http://127.0.0.1:{port}");
        let profile = Scratch::new("chromium-profile");
        let caps = json!({
            "browserName": "chrome",
            "goog:loggingPrefs": { "browser": "ALL" },
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,900",
                         format!("--user-data-dir={}", profile.0.display())],
            }
        });
        let caps = caps.as_object().unwrap().clone();
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&driver_url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("no WebDriver session: {e}"),
            }
        };
        Browser {
            driver,
            driver_url,
            client,
            _profile: profile,
        }
    }

    /// The console entries of level SEVERE since the last call (chromedriver's log).
    async fn console_errors(&self) -> Vec<String> {
        let id = self.client.session_id().await.unwrap().unwrap();
        let res: Value = reqwest::Client::new()
            .post(format!("{}/session/{id}/se/log", self.driver_url))
            .json(&json!({ "type": "browser" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        res["value"]
            .as_array()
            .unwrap_or_else(|| panic!("chromedriver's log: {res}"))
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
            .collect()
    }

    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    async fn text(&self, css: &str) -> String {
        self.client.find(Locator::Css(css)).await.unwrap().text().await.unwrap()
    }
}

impl Browser {
    async fn close(self) {
        self.client.clone().close().await.unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The group chromedriver leads: Chromium and its helpers with it.
        unsafe {
            libc::kill(-(self.driver.id() as i32), libc::SIGKILL);
        }
        let _ = self.driver.wait();
    }
}

fn shots_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_path_buf();
    let dir = target.join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens a page at 1280 and 800 px: a title, no console error, no sideways scrolling at
/// 800 px; a screenshot at each width.
async fn visit(b: &Browser, url: &str, name: &str) {
    for width in [1280u32, 800] {
        b.client.set_window_size(width, 900).await.unwrap();
        b.client.goto(url).await.unwrap();
        let title = b.client.title().await.unwrap();
        assert!(title.ends_with("· kreg") && title.len() > 8, "{url}: title {title:?}");
        let overflow = b
            .js("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            .await;
        assert!(
            overflow.as_i64().unwrap() <= 0,
            "{url} at {width} px scrolls sideways by {overflow}"
        );
        let png = b.client.screenshot().await.unwrap();
        std::fs::write(shots_dir().join(format!("{name}-{width}.png")), png).unwrap();
        let errors = b.console_errors().await;
        assert!(errors.is_empty(), "{url}: console errors {errors:?}");
    }
}

/// Prints `value: ~100` under SCHED_OTHER and `value: ~150` under SCHED_BATCH, after a
/// pause long enough for a page to watch each job.
const PROBE: &str = r#"[sh, -c, "sleep 1; n=$(od -An -N1 -tu1 /dev/urandom); if grep -q '^policy *: *3' /proc/self/sched; then echo value: $((150 + n % 5)); else echo value: $((100 + n % 5)); fi"]"#;

fn scenario(agent: &Agent) -> String {
    format!(
        r#"
name: dashboard-live
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: [ {{name: default}}, {{name: batch, policy: batch, tuning: {{ dma_latency: 0, governor: performance, optional: [governor] }} }} ]
workloads:
  - name: probe
    kind: command
    argv: {PROBE}
    timeout: 60
    metrics:
      value: {{ regex: "value: ([0-9.]+)", unit: ops, higher_is_better: true, kind: throughput }}
iterations: 5
"#,
        hosts = agent.hosts_yaml(),
    )
}

async fn job_states(db: &TestDb) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT id, state FROM jobs ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

/// The state each job cell of the open page shows.
async fn page_states(b: &Browser) -> Vec<(i64, String)> {
    let v = b
        .js("return [...document.querySelectorAll('[data-job]')].map(e => [Number(e.dataset.job), e.dataset.state])")
        .await;
    serde_json::from_value(v).unwrap()
}

fn rank(state: &str) -> u8 {
    match state {
        "pending" => 0,
        "running" => 1,
        _ => 2,
    }
}

/// Follows the run from the open run page: every state the database takes must show on
/// the page within 2 s (or be overtaken there by a later one). Returns the delays seen.
async fn watch_run(b: &Browser, db: &TestDb, run: &mut Child) -> Vec<Duration> {
    let mut waiting: Vec<(i64, String, Instant)> = Vec::new();
    let mut seen: Vec<(i64, String)> = Vec::new();
    let mut delays = Vec::new();
    let mut shot = false;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let now = Instant::now();
        for (id, state) in job_states(db).await {
            if !seen.contains(&(id, state.clone())) {
                seen.push((id, state.clone()));
                waiting.push((id, state, now));
            }
        }
        let page = page_states(b).await;
        if !shot && page.iter().any(|(_, s)| s == "running") && page.iter().any(|(_, s)| s == "pending") {
            std::fs::write(
                shots_dir().join("run-live-1280.png"),
                b.client.screenshot().await.unwrap(),
            )
            .unwrap();
            shot = true;
        }
        waiting.retain(|(id, state, since)| {
            let shown = page.iter().find(|(j, _)| j == id).map(|(_, s)| s.as_str());
            if shown.is_some_and(|s| rank(s) >= rank(state)) {
                delays.push(since.elapsed());
                return false;
            }
            assert!(
                since.elapsed() < Duration::from_secs(2),
                "job {id} became {state} in the database {:?} ago; the page still shows {shown:?}",
                since.elapsed()
            );
            true
        });
        let finished = run.try_wait().unwrap().is_some();
        if finished && waiting.is_empty() {
            return delays;
        }
        assert!(Instant::now() < deadline, "the run did not end in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_live_run_in_the_browser() {
    let db = fresh_db("dash_live").await;
    let agent = Agent::start();
    let dir = Scratch::new("dash_live");
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, scenario(&agent)).unwrap();
    let server = Server::start(&db, &dir.0);
    let b = Browser::start().await;
    let base = &server.base;

    // The runs page, open before the run exists, shows it once it starts.
    b.client.goto(&format!("{base}/")).await.unwrap();
    assert!(b.text("main").await.contains("No runs yet"));
    let mut run = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        if n > 0 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no run recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let recorded = Instant::now();
    loop {
        let found = b
            .js("return document.querySelector('a[href=\"/runs/1\"]') !== null")
            .await;
        if found == json!(true) {
            break;
        }
        assert!(
            recorded.elapsed() < Duration::from_secs(2),
            "the new run did not reach the open runs page within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The run page follows every job's state while the engine runs.
    b.client.goto(&format!("{base}/runs/1")).await.unwrap();
    let delays = watch_run(&b, &db, &mut run).await;
    assert!(run.wait().unwrap().success(), "kreg run failed");
    assert!(delays.len() >= 10, "too few state changes watched: {}", delays.len());
    let worst = delays.iter().max().unwrap();
    eprintln!(
        "dashboard: {} state changes reached the page, the slowest in {worst:?}",
        delays.len()
    );
    assert!(b.console_errors().await.is_empty());

    // The finished run: kernels, variants, every cell done, provenance of the kernel.
    b.client.refresh().await.unwrap();
    let summary = b.text("#summary").await;
    assert!(
        summary.contains("current") && summary.contains("default, batch"),
        "{summary}"
    );
    assert!(summary.contains("10/10 done"), "{summary}");
    let states = page_states(&b).await;
    assert_eq!(states.len(), 10);
    assert!(states.iter().all(|(_, s)| s == "done"), "{states:?}");
    let kernel = b.text("h3.kernel").await;
    assert_eq!(kernel, "kernel current");

    // The runs page: the run, its scenario, done.
    b.client.goto(&format!("{base}/")).await.unwrap();
    let row = b.text("table.runs tbody tr").await;
    assert!(
        row.contains("dashboard-live") && row.contains("done") && row.contains("10/10 done"),
        "{row}"
    );

    // The comparison: the verdicts kreg report gives, row by row.
    let rep = report_json(&db, &dir.0, 1);
    b.client.goto(&format!("{base}/runs/1/report?show=all")).await.unwrap();
    let rows = b
        .js("return [...document.querySelectorAll('table.report tbody tr')].map(tr => [...tr.children].map(td => td.innerText.trim()))")
        .await;
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    let want: Vec<(String, String, String)> = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kernel"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["comparison"]["verdict"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[7].clone()))
        .collect();
    assert_eq!(got, want);
    let batch_verdict = want.iter().find(|w| w.1 == "batch").unwrap().2.clone();
    assert_eq!(batch_verdict, "improvement", "a 50% higher throughput under batch");

    // A filter changes the URL; that URL, loaded again, gives the same view.
    b.client.goto(&format!("{base}/runs/1/report")).await.unwrap();
    let select = b.client.find(Locator::Css("select[name=verdict]")).await.unwrap();
    select.select_by_value("improvement").await.unwrap();
    let t = Instant::now();
    while !b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .contains("verdict=improvement")
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the filter did not change the URL"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = b.client.current_url().await.unwrap().to_string();
    assert!(!url.contains("workload="), "empty filters stay out of the URL: {url}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let filtered = b.text("main").await;
    let verdicts = b
        .js("return [...document.querySelectorAll('table.report tbody tr')].map(tr => tr.children[7].innerText.trim())")
        .await;
    let verdicts: Vec<String> = serde_json::from_value(verdicts).unwrap();
    assert_eq!(
        verdicts,
        ["", "improvement"],
        "the baseline row and the improvement only"
    );
    b.client.goto(&url).await.unwrap();
    assert_eq!(b.text("main").await, filtered);
    let verdict_selected = b
        .js("return document.querySelector('select[name=verdict]').value")
        .await;
    assert_eq!(verdict_selected, json!("improvement"));

    // What the lab and kernel builds would have stored beside such a run (this machine has
    // no /proc/schedstat, and builds take minutes): real snapshots from 6.1 and 6.12, and
    // two build records, so that those pages are seen with data.
    stand_ins(&db).await;
    b.client
        .goto(&format!("{base}/runs/1/schedstat?detail=cpu"))
        .await
        .unwrap();
    let stats = b.text("main").await;
    for want in [
        "current/default (5 jobs)",
        "current/batch (5 jobs)",
        "avg wait per timeslice",
        "cpu0",
        "perf sched stats",
        "probe: current/batch against current/default",
        "fields zero in every job, not listed",
    ] {
        assert!(stats.contains(want), "schedstat page lacks {want:?}: {stats}");
    }
    // Only sched_count moved (in bold); every other listed field is noise or the same.
    let calls = b
        .js("return [...document.querySelectorAll('table.perfstats tbody tr')].map(tr => [tr.children[1].innerText.trim(), tr.children[8].innerText.trim(), tr.querySelector('strong') !== null])")
        .await;
    let calls: Vec<(String, String, bool)> = serde_json::from_value(calls).unwrap();
    assert!(calls.len() > 20, "{calls:?}");
    for (field, call, strong) in &calls {
        let moved = field == "sched_count";
        assert_eq!(
            (call == "moved", *strong),
            (moved, moved),
            "{field}: {call} in {calls:?}"
        );
        assert!(moved || call == "noise" || call == "same", "{field}: {call}");
    }
    assert!(stats.contains("cross-check:"), "{stats}");
    b.js("document.getElementById('perf-sched-stats').scrollIntoView(); return 0")
        .await;
    std::fs::write(
        shots_dir().join("schedstat-perf-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    // The kernel's set-up: the variant's tuning, read back by the agent, and (stood in)
    // the cgroup and the perf events a lab run records.
    b.client.goto(&format!("{base}/runs/1")).await.unwrap();
    let page = b.text("main").await;
    for want in [
        "variant batch, here: dma_latency=0; online CPUs",
        "unavailable: governor (no cpufreq",
        "changed: here: dma_latency /dev/cpu_dma_latency",
        "variant batch, workload probe: cgroup quota 50% of 2 CPUs",
        "perf stat could not count: cycles <not supported>, instructions <not supported>",
    ] {
        assert!(page.contains(want), "run page lacks {want:?}: {page}");
    }
    b.client
        .goto(&format!("{base}/kernels/diff?a=key-a&b=key-b"))
        .await
        .unwrap();
    let diff = b.text("table.configdiff").await;
    assert!(
        diff.contains("CONFIG_PREEMPT") && diff.contains("CONFIG_HZ_250") && !diff.contains("CONFIG_SCHED_DEBUG"),
        "{diff}"
    );

    // Every page: a title, no console error, fits 800 px, a screenshot at each width.
    let job: i64 = sqlx::query_scalar("SELECT min(id) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    for (path, name) in [
        ("/".to_string(), "runs"),
        ("/runs/1".to_string(), "run"),
        ("/runs/1/report".to_string(), "comparison"),
        ("/runs/1/report?show=all".to_string(), "comparison-all"),
        (
            "/runs/1/samples?workload=probe&metric=value&kernel=current&variant=batch".to_string(),
            "samples",
        ),
        ("/compare?a=1&b=1".to_string(), "compare"),
        ("/runs/1/schedstat?detail=domain".to_string(), "schedstat"),
        (format!("/jobs/{job}"), "job"),
        ("/kernels".to_string(), "kernels"),
        ("/kernels/key-a".to_string(), "kernel"),
        ("/kernels/diff?a=key-a&b=key-b".to_string(), "kernel-diff"),
        ("/history".to_string(), "history-choices"),
        (
            "/history?scenario=dashboard-live&workload=probe&metric=value".to_string(),
            "history",
        ),
        ("/runs/999".to_string(), "not-found"),
    ] {
        visit_allowing_status(&b, &format!("{base}{path}"), name).await;
    }
    b.close().await;
}

async fn stand_ins(db: &TestDb) {
    let fixture = |name: &str| {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../core/fixtures")
                .join(name),
        )
        .unwrap()
    };
    for (variant, release) in [("default", "6.1"), ("batch", "6.12")] {
        for (kind, file) in [("schedstat_before", "before"), ("schedstat_after", "after")] {
            sqlx::query(
                "INSERT INTO raw_outputs (run_id, job_id, kind, content)
                 SELECT run_id, id, $1, $2 FROM jobs WHERE variant = $3",
            )
            .bind(kind)
            .bind(fixture(&format!("schedstat-{file}.{release}.txt")))
            .bind(variant)
            .execute(&db.pool)
            .await
            .unwrap();
        }
    }
    // perf sched stats as 6.12 reported it, each job's counters off by its own small
    // factor, and batch's sched_count 40% up: that field alone stands beyond noise.
    let jobs: Vec<(i64, String)> = sqlx::query_as("SELECT id, variant FROM jobs WHERE run_id = 1 ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    let report = fixture("perf-7.2-sched-stats-report.6.12.txt");
    for (id, variant) in jobs {
        let noise = 1.0 + 0.01 * (id % 3) as f64;
        let scaled: Vec<String> = report
            .lines()
            .map(|l| {
                let Some((name, rest)) = l.split_once(" : ") else {
                    return l.to_string();
                };
                let head = rest.trim_start();
                let digits: String = head.chars().take_while(|c| c.is_ascii_digit()).collect();
                if digits.is_empty() || head[digits.len()..].starts_with('.') {
                    return l.to_string();
                }
                let up = if variant == "batch" && name.trim() == "sched_count" {
                    1.4
                } else {
                    1.0
                };
                let v = (digits.parse::<f64>().unwrap() * noise * up).round();
                format!("{name} : {v:>11}{}", &head[digits.len()..])
            })
            .collect();
        sqlx::query(
            "INSERT INTO raw_outputs (run_id, job_id, kind, content) VALUES (1, $1, 'perf_sched_stats_report', $2)",
        )
        .bind(id)
        .bind(scaled.join("\n"))
        .execute(&db.pool)
        .await
        .unwrap();
    }
    // As the lab's 6.12 recorded them (tests/lab_tuning.rs, tests/lab_tools.rs).
    for (kind, content) in [
        (
            "cgroup",
            "quota 50% of 2 CPUs, cpu.max \"100000 100000\", one group on sut, top /sys/fs/cgroup/kreg/run-1/job-30",
        ),
        (
            "cgroup_setup",
            "{\"what\":\"quota 50% of 2 CPUs, cpu.max \\\"100000 100000\\\", one group on sut\",\"top\":\"/sys/fs/cgroup/kreg/run-1/job-30\"}",
        ),
        (
            "perf_stat_totals",
            "event                    total\ncontext-switches         3979\ncpu-migrations           100\ncycles                   <not supported> (no metric)\ninstructions             <not supported> (no metric)\ncache-misses             <not supported> (no metric)\n",
        ),
        (
            "perf_stat_uncounted",
            "cycles <not supported>\ninstructions <not supported>\ncache-misses <not supported>",
        ),
    ] {
        sqlx::query(
            "INSERT INTO raw_outputs (run_id, job_id, kind, content)
             SELECT run_id, id, $1, $2 FROM jobs WHERE variant = 'batch'",
        )
        .bind(kind)
        .bind(content)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    for (key, config) in [
        (
            "key-a",
            "CONFIG_HZ_250=y\nCONFIG_SCHED_DEBUG=y\n# CONFIG_PREEMPT is not set\n",
        ),
        ("key-b", "CONFIG_HZ_1000=y\nCONFIG_SCHED_DEBUG=y\nCONFIG_PREEMPT=y\n"),
    ] {
        sqlx::query(
            "INSERT INTO kernel_builds (key, release, localversion, tree_hash, config_hash, patches_hash, compiler, build_id, built_on, path, config, build_log)
             VALUES ($1, '6.1.0-kreg-' || $1, '-kreg', 'tree', md5($2), 'none', 'gcc 12.2.0', 'abc123', 'localhost', '/var/cache/kreg/' || $1, $2, 'make -j2\n  CC kernel/sched/core.o\n  LD vmlinux\n')",
        )
        .bind(key)
        .bind(config)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    sqlx::query("INSERT INTO kernel_build_runs (build_key, run_id, kernel) VALUES ('key-a', 1, 'current')")
        .execute(&db.pool)
        .await
        .unwrap();
}

/// `visit`, except that a 404 page's own failed load is the one console entry expected.
async fn visit_allowing_status(b: &Browser, url: &str, name: &str) {
    if name != "not-found" {
        return visit(b, url, name).await;
    }
    b.client.set_window_size(1280, 900).await.unwrap();
    b.client.goto(url).await.unwrap();
    assert!(b.text("main").await.contains("run 999 does not exist"));
    std::fs::write(
        shots_dir().join("not-found-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    let errors = b.console_errors().await;
    assert!(errors.iter().all(|e| e.contains("404")), "{errors:?}");
}

/// Two kernels, each measured in a boot of its own (`boots: 1`), one warm-up run a boot:
/// the report page shows the change as unconfirmed (in the CLI's words, marked as such),
/// says the warm-ups were not judged, and the samples page lists them marked.
///
/// The loopback agent cannot boot a second kernel, so both kernels run on this machine's
/// running kernel; what a second boot leaves in the database is then stood in: the jobs of
/// `next` get a boot id of their own, and their values are made 10% higher.
#[tokio::test]
async fn one_boot_a_kernel_shows_an_unconfirmed_change_and_warmups_marked() {
    let db = fresh_db("dash_unconfirmed").await;
    let agent = Agent::start();
    let dir = Scratch::new("dash_unconfirmed");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            r#"
name: dashboard-one-boot
{hosts}kernels: [ {{ name: current, source: running }}, {{ name: next, source: running }} ]
variants: [ {{ name: default }} ]
workloads:
  - name: probe
    kind: command
    argv: [sh, -c, "n=$(od -An -N1 -tu1 /dev/urandom); echo value: $((100 + n % 5))"]
    timeout: 60
    metrics:
      value: {{ regex: "value: ([0-9.]+)", unit: ops, higher_is_better: true, kind: throughput }}
iterations: 6
warmup: 1
"#,
            hosts = agent.hosts_yaml()
        ),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "run");
    for sql in [
        "UPDATE jobs SET boot_id = 'stand-in-boot-of-next' WHERE kernel = 'next'",
        "UPDATE results r SET value = r.value * 1.1 FROM jobs j WHERE j.id = r.job_id AND j.kernel = 'next'",
    ] {
        sqlx::query(sql).execute(&db.pool).await.unwrap();
    }
    let rep = report_json(&db, &dir.0, 1);
    let next = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kernel"] == "next")
        .expect("a row of next")
        .clone();
    assert_eq!(next["comparison"]["verdict"], "unconfirmed improvement", "{next}");

    let server = Server::start(&db, &dir.0);
    let b = Browser::start().await;
    let base = &server.base;
    visit(&b, &format!("{base}/runs/1/report?show=all"), "one-boot-report").await;
    let page = b.text("main").await;
    assert!(page.contains("unconfirmed improvement"), "{page}");
    assert!(
        page.contains("unconfirmed: each side's runs share boots of their own"),
        "{page}"
    );
    assert!(
        page.contains("warm-up (stored, not judged): kernel next, variant default, probe: 1 run"),
        "{page}"
    );
    let marked = b
        .js("return [...document.querySelectorAll('.v-unconfirmed-improvement')].map(e => e.textContent.trim())")
        .await;
    assert!(
        marked
            .as_array()
            .is_some_and(|m| m.iter().any(|t| t == "unconfirmed improvement")),
        "{marked}"
    );
    let samples = format!("{base}/runs/1/samples?workload=probe&metric=value&kernel=next&variant=default");
    visit(&b, &samples, "one-boot-samples").await;
    let rows = b
        .js("return [...document.querySelectorAll('table.samples tbody tr')].map(tr => tr.children[0].textContent.trim())")
        .await;
    let rows: Vec<String> = serde_json::from_value(rows).unwrap();
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert_eq!(rows[0], "warm-up, not judged", "{rows:?}");
    assert!(rows[1..].iter().all(|r| r.parse::<u32>().is_ok()), "{rows:?}");
    assert!(b.text("main").await.contains("1 warm-up run"));
    let api: Value = reqwest::get(samples.replace("/runs/1/samples", "/api/v1/runs/1/samples"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let flags: Vec<bool> = api["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["warmup"].as_bool().unwrap())
        .collect();
    assert_eq!(flags.iter().filter(|w| **w).count(), 1, "{api}");
    b.close().await;
}
