//! The dashboard over plain HTTP, against a real PostgreSQL and a real `kreg serve`: every
//! page and API answers; unknown things are 404 pages, malformed queries 400 with the
//! reason; downloads are the CLI's reports; and serving never writes.

mod common;

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
