//! The dashboard over plain HTTP, against a real PostgreSQL and a real `kreg serve`: every
//! page and API answers; unknown things are 404 pages, malformed queries 400 with the
//! reason; downloads are the CLI's reports; and serving never writes.

use kreg_testkit as common;

use common::web::{report_json, Server};
use common::{assert_ok, fresh_db, kreg, Scratch, TestDb};
use serde_json::Value;

/// A snapshot of everything the engine writes, to see that serving changed nothing.
async fn fingerprint(db: &TestDb) -> Vec<i64> {
    let row: (i64, i64, i64, i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM scenarios), (SELECT count(*) FROM runs),
                (SELECT COALESCE(sum(extract(epoch FROM updated_at))::BIGINT, 0) FROM runs),
                (SELECT count(*) FROM jobs), (SELECT COALESCE(sum(attempts), 0) FROM jobs),
                (SELECT count(*) FROM results), (SELECT count(*) FROM raw_outputs)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    vec![row.0, row.1, row.2, row.3, row.4, row.5, row.6]
}

#[tokio::test]
async fn bad_requests_are_404_or_400_and_serving_never_writes() {
    let db = fresh_db("dash_errors").await;
    let dir = Scratch::new("dash_errors");
    // A stored run of 400 samples (the benchmark's run) to ask about.
    let out = kreg(&db, &dir.0)
        .args(["bench", "dashboard", "--samples", "400", "--repeat", "1"])
        .output()
        .unwrap();
    assert_ok(&out, "bench dashboard");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("with 400 samples") && printed.contains("| comparison "),
        "{printed}"
    );
    let before = fingerprint(&db).await;
    let server = Server::start(&db, &dir.0);
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let url = format!("{}{path}", server.base);
        let http = http.clone();
        async move {
            let res = http.get(&url).send().await.unwrap();
            let status = res.status().as_u16();
            let ctype = res.headers()[reqwest::header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .to_string();
            (status, ctype, res.text().await.unwrap())
        }
    };
    let job: i64 = sqlx::query_scalar("SELECT min(id) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    for path in [
        "/".to_string(),
        "/runs/1".into(),
        "/runs/1/report".into(),
        "/runs/1/report?baseline=variant:batch&verdict=no%20change&show=all".into(),
        "/runs/1/schedstat?detail=cpu".into(),
        format!("/jobs/{job}"),
        format!("/jobs/{job}/raw/stdout"),
        "/kernels".into(),
        "/history?scenario=bench-dashboard&workload=probe&metric=m3".into(),
        "/compare?a=1&b=1".into(),
        "/runs/1/samples?workload=probe&metric=m3&kernel=b&variant=batch".into(),
        "/api/v1/runs".into(),
        "/api/v1/runs/1".into(),
        "/api/v1/runs/1/report?metric=m3".into(),
        "/api/v1/runs/1/schedstat".into(),
        format!("/api/v1/jobs/{job}"),
        "/api/v1/kernels".into(),
        "/api/v1/history".into(),
        "/api/v1/compare?a=1&b=1".into(),
    ] {
        let (status, _, body) = get(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    for (path, status, says) in [
        ("/runs/999", 404, "run 999 does not exist"),
        ("/runs/abc", 404, "does not exist"),
        ("/jobs/99999999", 404, "job 99999999 does not exist"),
        ("/runs/1/report?metric=nope", 404, "no metric \"nope\""),
        (
            "/history?scenario=bench-dashboard&workload=probe&metric=nope",
            404,
            "no samples of metric \"nope\"",
        ),
        ("/kernels/nokey", 404, "no kernel build"),
        ("/nowhere", 404, "no page at /nowhere"),
        ("/runs/1/report?verdict=bogus", 400, "verdict must be one of"),
        ("/runs/1/report?alpha=abc", 400, "alpha must be a number"),
        ("/runs/1/report?alpha=2", 400, "alpha"),
        ("/runs/1/report?colour=red", 400, "unknown query parameter"),
        ("/runs/1/report?metric=m1&metric=m2", 400, "given twice"),
        (
            "/runs/1/report?baseline=kernel:zz",
            400,
            "kernel \"zz\" is not in run 1",
        ),
        ("/compare?a=1", 400, "give two runs"),
        ("/runs/1/schedstat?detail=everything", 400, "detail must be one of"),
    ] {
        let (got, ctype, body) = get(path).await;
        assert_eq!(got, status, "{path}: {body}");
        assert!(ctype.starts_with("text/html"), "{path}: {ctype}");
        assert!(body.contains(&says.replace('"', "&quot;")), "{path}: {body}");
    }
    let (status, ctype, body) = get("/api/v1/runs/999").await;
    assert_eq!((status, ctype.as_str()), (404, "application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"],
        "run 999 does not exist"
    );
    let (status, _, body) = get("/api/v1/runs/1/report?verdict=maybe").await;
    assert_eq!(status, 400, "{body}");
    // Only GET: nothing can be posted.
    let res = http.post(format!("{}/runs/1", server.base)).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 405);

    // Downloads are the CLI's own renderings.
    for (file, format) in [
        ("report.json", "json"),
        ("report.md", "markdown"),
        ("report.csv", "csv"),
    ] {
        let (status, _, body) = get(&format!("/runs/1/download/{file}?baseline=kernel:a")).await;
        assert_eq!(status, 200);
        let cli = kreg(&db, &dir.0)
            .args(["report", "1", "--baseline", "a", "--format", format])
            .output()
            .unwrap();
        assert_ok(&cli, "report");
        assert_eq!(body, String::from_utf8_lossy(&cli.stdout), "{file}");
    }
    // The comparison page names rows as the report does, with the changed metric's verdict.
    let rep = report_json(&db, &dir.0, 1);
    let m3_b: Vec<&Value> = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "m3" && r["kernel"] == "b")
        .collect();
    let (_, _, page) = get("/runs/1/report?metric=m3").await;
    for r in &m3_b {
        let v = r["comparison"]["verdict"].as_str().unwrap();
        assert!(
            page.contains(&format!("v-{}\">{v}</span>", v.replace(' ', "-"))),
            "{v} missing"
        );
    }

    assert_eq!(fingerprint(&db).await, before, "serving changed the database");
    // The server's pool cannot write, whatever a handler did.
    let ro = kreg::web::read_only_pool(std::str::FromStr::from_str(&db.url).unwrap());
    let err = sqlx::query("DELETE FROM runs").execute(&ro).await.unwrap_err();
    assert!(err.to_string().contains("read-only transaction"), "{err}");
}

/// `kreg serve` with `args`; its base URL and, first, whatever it said before it (a warning).
type Served = (std::process::Child, String, Vec<String>);

// The caller kills and waits for the child it is handed.
#[allow(clippy::zombie_processes)]
fn serve_with(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> Served {
    use std::io::BufRead;
    let mut child = kreg(db, dir)
        .arg("serve")
        .args(args)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut said = Vec::new();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("kreg: dashboard on ") {
            let port = rest.trim_end_matches('/').rsplit(':').next().unwrap().to_string();
            return (child, format!("http://127.0.0.1:{port}"), said);
        }
        said.push(line);
    }
}

/// A page on another site (DNS rebinding: its own name pointed at 127.0.0.1) gets a 403;
/// a control character in a path or query is a 400 before any handler; a huge value is
/// not echoed whole; browsers are told not to sniff, frame or load from elsewhere;
/// half-sent requests are closed after the header timeout and more connections than the
/// cap leave the dashboard answering; a bind beyond loopback is said loudly.
#[tokio::test]
async fn other_sites_bad_bytes_and_held_connections_get_nothing() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = fresh_db("dash_guard").await;
    let dir = Scratch::new("dash_guard");
    let out = kreg(&db, &dir.0)
        .args(["bench", "dashboard", "--samples", "40", "--repeat", "1"])
        .output()
        .unwrap();
    assert_ok(&out, "bench dashboard");
    let (mut child, base, said) = serve_with(&db, &dir.0, &["--listen", "127.0.0.1:0", "--header-timeout", "2"]);
    assert!(said.is_empty(), "a loopback bind warns of nothing: {said:?}");
    let port = base.rsplit(':').next().unwrap().to_string();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let get = |path: &str, host: Option<String>| {
        let mut req = http.get(format!("{base}{path}"));
        if let Some(h) = host {
            req = req.header(reqwest::header::HOST, h);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let headers = res.headers().clone();
            (status, headers, res.text().await.unwrap())
        }
    };
    let (status, headers, body) = get("/runs/1", Some(format!("localhost:{port}"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["x-frame-options"], "DENY");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'self'"),
        "{csp}"
    );
    for host in [
        format!("attacker.example:{port}"),
        "127.0.0.1.nip.io".into(),
        format!("0.0.0.0:{port}"),
    ] {
        let (status, _, body) = get("/api/v1/runs", Some(host.clone())).await;
        assert_eq!(status, 403, "{host}: {body}");
        assert!(!body.contains("bench-dashboard"), "{host}: {body}");
        assert!(body.contains("--allow-host"), "{body}");
    }
    for path in ["/kernels/%00", "/runs/1/report?metric=m%001", "/jobs/1/raw/std%1bout"] {
        let (status, _, body) = get(path, None).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(
            !body.contains("byte sequence") && !body.contains("0x00"),
            "{path}: {body}"
        );
    }
    let huge = "x".repeat(60_000);
    for path in [
        format!("/runs/1/report?metric={huge}"),
        format!("/{huge}"),
        format!("/api/v1/kernels/{huge}"),
    ] {
        let (status, _, body) = get(&path, None).await;
        assert!(status == 404 || status == 400, "{status}");
        assert!(body.len() < 8_000, "echoed {} bytes", body.len());
    }

    // Half-sent: closed after the 2 s header timeout.
    let mut s = tokio::net::TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    let mut buf = [0u8; 512];
    let closed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "a half-sent request was kept open");
    // More idle connections than the cap (512): the oldest go, the dashboard answers.
    let mut held = Vec::new();
    for _ in 0..600 {
        if let Ok(c) = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await {
            held.push(c);
        }
    }
    let (status, _, _) = get("/", None).await;
    assert_eq!(status, 200, "answering with {} connections held", held.len());
    drop(held);
    let _ = child.kill();
    let _ = child.wait();

    // Beyond loopback: said loudly, with the names it answers to.
    let (mut child, _, said) = serve_with(
        &db,
        &dir.0,
        &["--listen", "0.0.0.0:0", "--allow-host", "perf-lab.example"],
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        said.iter().any(
            |l| l.starts_with("kreg: WARNING: the dashboard listens on 0.0.0.0:0, beyond this machine")
                && l.contains("perf-lab.example")
        ),
        "{said:?}"
    );
}

/// A finished run of `kernels` kernels (two iterations each, one metric).
async fn stored_run(db: &TestDb, kernels: usize) -> i64 {
    common::stored::finished(db, kernels, "2").await
}

/// The run page asks PostgreSQL the same number of questions for a run of two kernels as
/// for one of seven: counted from the statements `kreg serve` logs (`KREG_LOG`).
/// A `kreg serve` on a free loopback port logging every statement it sends (`KREG_LOG`):
/// the child, its address and its log lines as they come.
fn serve_logged(
    db: &TestDb,
    dir: &Scratch,
) -> (
    std::process::Child,
    String,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use std::io::BufRead;
    let mut child = kreg(db, &dir.0)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("KREG_LOG", "sqlx::query=debug,kreg=info")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut before = Vec::new();
    let base = loop {
        let line = lines.next().expect("kreg serve ended").unwrap();
        if let Some(rest) = line.strip_prefix("kreg: dashboard on ") {
            break rest.trim_end_matches('/').to_string();
        }
        before.push(line);
    };
    let said = std::sync::Arc::new(std::sync::Mutex::new(before));
    let keep = said.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(|l| l.ok()) {
            keep.lock().unwrap().push(line);
        }
    });
    (child, base, said)
}

#[tokio::test]
async fn the_run_page_issues_a_fixed_number_of_queries() {
    let db = fresh_db("dash_queries").await;
    let dir = Scratch::new("dash_queries");
    let small = stored_run(&db, 2).await;
    let large = stored_run(&db, 7).await;
    let (mut child, base, said) = serve_logged(&db, &dir);
    let statements = || {
        said.lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("sqlx::query"))
            .count()
    };
    let http = reqwest::Client::new();
    // Each page is loaded once first (the pool opens its connection then), then counted.
    let mut counts = Vec::new();
    for run in [small, large, small, large] {
        let before = statements();
        let res = http.get(format!("{base}/runs/{run}")).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200);
        let page = res.text().await.unwrap();
        assert!(page.contains("k1"), "{page}");
        // The statements are logged before the answer is sent; give the reader a moment.
        let mut after = statements();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            after = statements();
        }
        counts.push(after - before);
    }
    let _ = child.kill();
    let _ = child.wait();
    let (two, seven) = (counts[2], counts[3]);
    assert!(two > 0, "no statement logged: {:?}", said.lock().unwrap());
    assert_eq!(two, seven, "queries for 2 kernels vs 7: {counts:?}");
    // A finished run's page is made once: loaded again, it costs the one look-up of the
    // run's state that says it has not changed.
    assert!(
        two <= 1 && counts[0] > two,
        "a finished run's page made again: {counts:?}"
    );
    println!(
        "run page: {two} queries for 2 kernels and for 7 (first loads {} and {})",
        counts[0], counts[1]
    );
}

/// A run that finishes while `kreg serve` is up has its report judged at once, before anyone
/// asks, and once for its page, its API and its downloads: counted from the statements the
/// server logs (the read of the run's jobs with their samples).
#[tokio::test]
async fn a_finished_run_is_judged_once_before_it_is_asked_for() {
    let db = fresh_db("dash_judged_once").await;
    let dir = Scratch::new("dash_judged_once");
    let (run, jobs) = common::stored::record(&db, "judged-once", 2, "4").await;
    let (mut child, base, said) = serve_logged(&db, &dir);
    let reads = || {
        said.lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("COALESCE(boot_id, '') AS boot_id, warmup"))
            .count()
    };
    // Once the server follows the database's changes, the run ends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !said
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("following the database's changes"))
    {
        assert!(std::time::Instant::now() < deadline, "{:?}", said.lock().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let http = reqwest::Client::new();
    // Its jobs finish (each announced): nothing is judged while it runs and nobody asks.
    for (n, j) in jobs.iter().enumerate() {
        common::stored::finish(
            &db,
            run,
            j,
            if j.kernel == "k0" { 100.0 } else { 120.0 } + n as f64 % 2.0,
        )
        .await;
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(reads(), 0, "judged before the run ended");
    kreg::store::set_run_state(&db.pool, run, kreg::plan::RunState::Done)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while reads() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(reads(), 1, "not judged when it ended: {:?}", said.lock().unwrap());
    for path in [
        format!("/runs/{run}/report"),
        format!("/api/v1/runs/{run}/report"),
        format!("/runs/{run}/download/report.json"),
        format!("/runs/{run}/download/report.md"),
        format!("/runs/{run}/report?show=all"),
    ] {
        let res = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let text = res.text().await.unwrap();
        assert!(text.contains("regression"), "{path}: {text}");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Another baseline is another judging.
    let res = http
        .get(format!("{base}/api/v1/runs/{run}/report?baseline=k1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let n = reads();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(n, 2, "{:?}", said.lock().unwrap());
}

/// A bisection's page reads the few commits it names (the ends, the commits measured, the
/// culprit), not its whole range: counted from the rows the server's statements return
/// (`KREG_LOG`), for a range of 16,000 commits.
#[tokio::test]
async fn a_bisection_page_reads_the_commits_it_names_not_the_range() {
    use kreg::store::bisect as sb;
    let db = fresh_db("dash_bisect_range").await;
    let dir = Scratch::new("dash_bisect_range");
    let commits: Vec<sb::Commit> = (0..16_000)
        .map(|i| sb::Commit {
            hash: format!("{i:040x}"),
            subject: format!("commit {i}"),
            author: "A U Thor <a@example.org>".into(),
        })
        .collect();
    let row = sb::BisectionRow {
        run_id: 0,
        kernel: "tree".into(),
        workload: "hb".into(),
        metric: "time".into(),
        variant: "default".into(),
        good: "v1".into(),
        bad: "v2".into(),
        commit_count: 0,
        rules: sqlx::types::Json(serde_json::to_value(kreg::bisect::Rules::default()).unwrap()),
        outcome: None,
    };
    let yaml = "name: b\nhosts: { sut: { role: sut, transport: { kind: lab } } }\nkernels: [ { name: tree, source: running } ]\nworkloads: [ { name: hb, kind: hackbench } ]\n";
    let run = sb::record_bisection(
        &db.pool,
        &kreg::store::ScenarioText {
            name: "b",
            yaml,
            source_path: "/nowhere/b.yaml",
            files: &[],
        },
        &row,
        &commits,
    )
    .await
    .unwrap();
    assert_eq!(
        sb::commits(&db.pool, run).await.unwrap(),
        commits,
        "the range is kept whole, in order"
    );
    let (mut child, base, said) = serve_logged(&db, &dir);
    let page = reqwest::get(format!("{base}/runs/{run}/bisect")).await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let text = page.text().await.unwrap();
    assert!(
        text.contains("16000 commits") && text.contains("commit 15999"),
        "{text}"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    let lines = said.lock().unwrap().clone();
    let reads: Vec<&String> = lines.iter().filter(|l| l.contains("bisect_commits")).collect();
    assert!(!reads.is_empty(), "{lines:?}");
    for l in &reads {
        let returned: u64 = l
            .split("rows_returned=")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no row count in {l}"));
        assert!(returned <= 2, "the page read {returned} commits: {l}");
    }
}
