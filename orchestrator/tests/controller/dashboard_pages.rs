//! The dashboard's answers as they grow and while a run goes, over plain HTTP against a
//! real PostgreSQL and a real `kreg serve`: gzip, ETags and 304s, the runs list a page at a
//! time; a running run's pages (settings in effect, the plan that may grow, provisional
//! reports in every format).

use kreg_testkit as common;

use common::web::Server;
use common::{fresh_db, Scratch};
use serde_json::Value;

/// `gzip -dc` of `bytes`.
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Answers are gzipped for a client that accepts it, carry an ETag that an unchanged page
/// answers with a 304, and the runs are listed a page at a time (`after`, `page`, `limit`),
/// in the API with a `Link` to the next page and the total in `X-Total-Count`.
#[tokio::test]
async fn answers_are_gzipped_and_tagged_and_runs_come_a_page_at_a_time() {
    let db = fresh_db("dash_scale").await;
    let dir = Scratch::new("dash_scale");
    let mut runs = Vec::new();
    for _ in 0..7 {
        runs.push(common::stored::finished(&db, 2, "2").await);
    }
    let server = Server::start(&db, &dir.0);
    let http = reqwest::Client::new();
    let report = format!("{}/runs/{}/report", server.base, runs[6]);
    let plain = http.get(&report).send().await.unwrap();
    assert_eq!(plain.headers().get("content-encoding"), None);
    let tag = plain.headers()["etag"].to_str().unwrap().to_string();
    assert!(tag.starts_with("W/\"") && tag.ends_with('"'), "{tag}");
    assert_eq!(plain.headers()["cache-control"], "no-cache");
    let plain = plain.bytes().await.unwrap();
    let zipped = http
        .get(&report)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    assert_eq!(
        zipped.headers()["etag"].to_str().unwrap(),
        tag,
        "one tag for both forms"
    );
    let zipped = zipped.bytes().await.unwrap();
    assert!(
        zipped.len() * 2 < plain.len(),
        "{} bytes gzipped of {}",
        zipped.len(),
        plain.len()
    );
    assert_eq!(gunzip(&zipped), plain.to_vec());
    // The page the client holds is still the page: 304, nothing sent.
    let again = http.get(&report).header("if-none-match", &tag).send().await.unwrap();
    assert_eq!(again.status().as_u16(), 304);
    assert!(again.bytes().await.unwrap().is_empty());
    let other = http
        .get(&report)
        .header("if-none-match", "W/\"0123\"")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 200);

    // Pages of the runs: 3 a page, newest first, each with the next one's link.
    let ids = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    let mut url = format!("{}/api/v1/runs?limit=3", server.base);
    let mut pages = Vec::new();
    loop {
        let res = http.get(&url).send().await.unwrap();
        assert_eq!(res.headers()["x-total-count"], "7");
        let next = res.headers().get("link").map(|l| l.to_str().unwrap().to_string());
        pages.push(ids(&res.json().await.unwrap()));
        let Some(next) = next else { break };
        let target = next
            .strip_prefix('<')
            .and_then(|l| l.strip_suffix(">; rel=\"next\""))
            .unwrap_or_else(|| panic!("{next}"));
        url = format!("{}{target}", server.base);
    }
    let newest: Vec<i64> = runs.iter().rev().copied().collect();
    assert_eq!(
        pages,
        [newest[0..3].to_vec(), newest[3..6].to_vec(), newest[6..].to_vec()]
    );
    let second: Value = http
        .get(format!("{}/api/v1/runs?page=2&limit=3", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&second), newest[3..6]);
    let all: Value = http
        .get(format!("{}/api/v1/runs", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&all), newest, "50 a page by default");
    for (query, said) in [
        ("limit=0", "limit must be 1 to 500, not 0"),
        ("limit=501", "limit must be 1 to 500, not 501"),
        ("page=0", "page counts from 1, not 0"),
        ("after=x", "after must be a whole number"),
        ("pages=2", "pages"),
    ] {
        let res = http
            .get(format!("{}/api/v1/runs?{query}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 400, "{query}");
        let body = res.text().await.unwrap();
        assert!(body.contains(said), "{query}: {body}");
    }
    let page = http
        .get(format!("{}/?limit=3&after={}", server.base, newest[2]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("runs 4–6 of 7 (newest first)"), "{page}");
    assert!(
        page.contains(&format!("href=\"/?after={}&amp;limit=3\" rel=\"next\"", newest[5])),
        "{page}"
    );
    assert!(page.contains("<a href=\"/\">newest</a>"), "{page}");
    // The event stream is neither compressed nor buffered for a tag.
    let events = http
        .get(format!("{}/api/v1/events", server.base))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(events.status().as_u16(), 200);
    assert_eq!(events.headers().get("content-encoding"), None);
    assert_eq!(events.headers().get("etag"), None);
}

/// While a run goes, a knob kreg changed is "in effect" and an adaptive plan says it may
/// still add runs; once the run ended without putting the knob back, it is "NOT restored".
#[tokio::test]
async fn a_running_run_says_its_settings_are_in_effect_and_its_plan_may_grow() {
    let db = fresh_db("dash_running").await;
    let dir = Scratch::new("dash_running");
    let run = common::stored::finished(&db, 2, "{ min: 2, max: 6 }").await;
    kreg::store::record_setting(
        &db.pool,
        run,
        "sut",
        "boot-k0-1",
        "/proc/sys/kernel/sched_schedstats",
        "0",
        "1",
    )
    .await
    .unwrap();
    let server = Server::start(&db, &dir.0);
    let page = || async {
        reqwest::get(format!("{}/runs/{run}", server.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    kreg::store::set_run_state(&db.pool, run, kreg::plan::RunState::Running)
        .await
        .unwrap();
    let going = page().await;
    assert!(
        going.contains("sut: /proc/sys/kernel/sched_schedstats 0 → 1, in effect") && !going.contains("NOT restored"),
        "{going}"
    );
    assert!(
        going.contains(
            "up to 2 iterations per cell so far; the adaptive plan runs 2 to 6 per cell and may still add runs"
        ),
        "{going}"
    );
    // Its report, in the page and every download, says the verdicts are provisional.
    let get = |path: String| async move { reqwest::get(path).await.unwrap().text().await.unwrap() };
    let report = get(format!("{}/runs/{run}/report?show=all", server.base)).await;
    assert!(
        report.contains("PROVISIONAL: the run is still running: 4 of 4 jobs done so far; every verdict below stands on the runs done so far and may change, as the plan may still add up to 4 run(s) to a cell"),
        "{report}"
    );
    assert!(
        report.contains("<small class=\"provisional\">provisional: 2 runs so far, up to 4 more</small>"),
        "{report}"
    );
    // The notes `kreg report` prints under its table, on the row: here the plan's look.
    assert!(report.contains("<small class=\"notes\">judged at look "), "{report}");
    // And the knob kreg changed is in effect, as on the run page.
    assert!(
        report.contains("sched_schedstats 0 → 1, in effect") && !report.contains("NOT restored"),
        "{report}"
    );
    let json: Value =
        serde_json::from_str(&get(format!("{}/runs/{run}/download/report.json", server.base)).await).unwrap();
    assert_eq!(json["provisional"]["state"], "running");
    assert_eq!(
        json["rows"][1]["provisional"],
        serde_json::json!({ "observations": 2, "may_add": 4 })
    );
    let csv = get(format!("{}/runs/{run}/download/report.csv", server.base)).await;
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .contains("provisional: 2 runs so far, up to 4 more"),
        "{csv}"
    );
    let text = get(format!("{}/runs/{run}/download/report.md", server.base)).await;
    assert!(text.contains("- PROVISIONAL: the run is still running"), "{text}");
    kreg::store::set_run_state(&db.pool, run, kreg::plan::RunState::Done)
        .await
        .unwrap();
    let report = get(format!("{}/runs/{run}/report?show=all", server.base)).await;
    assert!(!report.contains("PROVISIONAL") && !report.contains("class=\"provisional\""));
    let json: Value =
        serde_json::from_str(&get(format!("{}/runs/{run}/download/report.json", server.base)).await).unwrap();
    assert_eq!(json["provisional"], Value::Null);
    let ended = page().await;
    assert!(ended.contains("sched_schedstats 0 → 1, NOT restored"), "{ended}");
    assert!(
        ended.contains("up to 2 iterations per cell (adaptive plan: 2 to 6 per cell)"),
        "{ended}"
    );
}
