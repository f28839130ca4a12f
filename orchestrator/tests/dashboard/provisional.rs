//! A running run's report: provisional in the page, each row with its runs so far and what
//! the plan may still add; a job that finishes updates its row in place (no reload); a
//! dropped event stream shows a banner, and the page catches up when it comes back.
//!
//! The run is stood in through kreg's own store functions (as the engine stores jobs), so
//! that the test decides when each job finishes; a real engine run on a real agent drives
//! the run page in `live`.

use super::*;

/// Stores job `j`'s outcome (one sample of `m`) as the engine does, in one transaction
/// that notifies the dashboard.
async fn finish(db: &TestDb, run: i64, j: &kreg::store::JobRow, value: f64) {
    let mut raw = kreg::record::Outputs::default();
    raw.push(kreg::record::RawKind::Stdout, format!("m={value}\n"));
    let outcome = kreg::store::JobOutcome {
        kernel_release: format!("6.1.0-{}", j.kernel),
        boot_id: format!("boot-{}-{}", j.kernel, j.boot),
        observed_policy: "SCHED_OTHER".into(),
        metrics: vec![kreg::parse::Metric {
            name: "m".into(),
            value,
            unit: "us".into(),
            higher_is_better: false,
            kind: kreg::stats::MetricKind::Mean,
        }],
        raw,
        tool_versions: Default::default(),
    };
    let mut tx = db.pool.begin().await.unwrap();
    kreg::store::start_job(&mut *tx, j.id).await.unwrap();
    kreg::store::finish_job(&mut tx, run, j.id, &outcome).await.unwrap();
    tx.commit().await.unwrap();
}

async fn wait_for(b: &Browser, script: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if b.js(script).await == json!(true) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: not within 15 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_running_report_is_provisional_updates_rows_in_place_and_survives_a_dropped_stream() {
    let db = fresh_db("dash_provisional").await;
    let dir = Scratch::new("dash_provisional");
    let yaml = "name: provisional\nhosts:\n  sut: { role: sut, transport: { kind: lab, cpus: 2, memory_mib: 1024 } }\n\
kernels:\n  - { name: k0, source: { deb: linux-image-amd64 } }\n  - { name: k1, source: { deb: linux-image-amd64 } }\n\
baseline: k0\nworkloads:\n  - name: probe\n    kind: command\n    argv: [true]\n    timeout: 60\n    \
metrics:\n      m: { regex: \"m=([0-9.]+)\", unit: us, higher_is_better: false }\niterations: { min: 2, max: 6 }\n";
    let s =
        kreg::scenario::from_str(yaml, std::path::Path::new(".")).unwrap_or_else(|d| panic!("{}", d[0].render("p")));
    let run = kreg::store::record_run(&db.pool, &s.name, yaml, "provisional.yaml", &kreg::plan::expand(&s))
        .await
        .unwrap();
    let jobs = kreg::store::jobs(&db.pool, run).await.unwrap();
    let (k0, k1): (Vec<_>, Vec<_>) = jobs.iter().partition(|j| j.kernel == "k0");
    finish(&db, run, k0[0], 100.0).await;
    finish(&db, run, k0[1], 101.0).await;
    finish(&db, run, k1[0], 110.0).await;

    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let server = Server::start_on(&db, &dir.0, &listen);
    let b = Browser::start().await;
    let page = format!("{}/runs/{run}/report?show=all", server.base);
    visit(&b, &page, "provisional").await;
    let notes = b.text("#report-notes").await;
    assert!(
        notes.contains("PROVISIONAL: the run is still running: 3 of 4 jobs done so far"),
        "{notes}"
    );
    let row = "[...document.querySelectorAll('table.report tbody tr')].find(tr => tr.children[0].innerText === 'k1')";
    let k1_text = b.js(&format!("return {row}.innerText")).await;
    assert!(
        k1_text
            .as_str()
            .unwrap()
            .contains("provisional: 1 runs so far, up to 5 more"),
        "{k1_text}"
    );

    // The job finishes: its row changes in place, the page is not loaded again.
    b.js("window.kregMarker = 42; return 0").await;
    finish(&db, run, k1[1], 111.0).await;
    wait_for(
        &b,
        &format!("return {row}.dataset.updated !== undefined && {row}.children[2].innerText === '2'"),
        "the k1 row updated in place",
    )
    .await;
    assert_eq!(
        b.js("return window.kregMarker").await,
        json!(42),
        "the page was loaded again"
    );
    let k1_text = b.js(&format!("return {row}.innerText")).await;
    assert!(
        k1_text
            .as_str()
            .unwrap()
            .contains("provisional: 2 runs so far, up to 4 more"),
        "{k1_text}"
    );
    let notes = b.text("#report-notes").await;
    assert!(notes.contains("4 of 4 jobs done so far"), "{notes}");

    // The server goes away: a banner says the page stopped following.
    drop(server);
    wait_for(
        &b,
        "const e = document.getElementById('stream-down'); return e !== null && !e.hidden",
        "the stream-down banner",
    )
    .await;
    let banner = b.text("#stream-down").await;
    assert!(
        banner.starts_with("Live updates stopped at ") && banner.ends_with("Reconnecting…"),
        "{banner}"
    );
    std::fs::write(
        shots_dir().join("provisional-stream-down-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    // Meanwhile the run ends; once the server is back the page catches up by itself.
    kreg::store::set_run_state(&db.pool, run, kreg::plan::RunState::Done)
        .await
        .unwrap();
    let _server = Server::start_on(&db, &dir.0, &listen);
    wait_for(
        &b,
        "return document.getElementById('stream-down').hidden && !document.getElementById('report-notes').innerText.includes('PROVISIONAL')",
        "the page caught up after the stream came back",
    )
    .await;
    assert_eq!(b.js("return window.kregMarker").await, json!(42));
    let k1_text = b.js(&format!("return {row}.innerText")).await;
    assert!(!k1_text.as_str().unwrap().contains("provisional"), "{k1_text}");
    assert!(
        b.console_errors().await.iter().all(|e| e.contains("api/v1/events")),
        "console errors other than the dropped stream"
    );
    b.close().await;
}
