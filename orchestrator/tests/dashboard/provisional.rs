//! A running run's report: provisional in the page, each row with its runs so far and what
//! the plan may still add; a job that finishes updates its row in place (no reload); a
//! dropped event stream shows a banner, and the page catches up when it comes back.
//!
//! The run is stood in through kreg's own store functions (as the engine stores jobs), so
//! that the test decides when each job finishes; a real engine run on a real agent drives
//! the run page in `live`.

use super::*;

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
    let (run, jobs) = common::stored::record(&db, "provisional", 2, "{ min: 2, max: 6 }").await;
    let (k0, k1): (Vec<_>, Vec<_>) = jobs.iter().partition(|j| j.kernel == "k0");
    common::stored::finish(&db, run, k0[0], 100.0).await;
    common::stored::finish(&db, run, k0[1], 101.0).await;
    common::stored::finish(&db, run, k1[0], 110.0).await;

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
    common::stored::finish(&db, run, k1[1], 111.0).await;
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
