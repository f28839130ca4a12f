//! A run carries its files: stored by content in PostgreSQL when the run is recorded, and
//! taken from there by whoever drives it. The blobs' digests are checked against
//! `sha256sum`'s own.

use std::process::Command;

use common::{assert_ok, fresh_db, kill_when, kreg, Agent, Scratch};
use kreg_testkit as common;

fn sha256sum(path: &std::path::Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// A scenario on `agent` running `uptool.sh` of `dir` (uploaded into `dir/bin`), with
/// `extra` lines (variants) and `iterations`.
fn uptool_scenario(name: &str, agent: &Agent, dir: &std::path::Path, extra: &str, iterations: u32) -> String {
    format!(
        r#"
name: {name}
{hosts}kernels: [ {{ name: current, source: running }} ]
{extra}tools:
  - {{ name: uptool, on: [here], install_dir: "{bin}", from: {{ upload: uptool.sh }} }}
workloads:
  - name: up
    kind: command
    argv: ["uptool"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: {iterations}
"#,
        hosts = agent.hosts_yaml(),
        bin = dir.join("bin").display(),
    )
}

async fn count(db: &common::TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap()
}

/// A file of several chunks stored once however often it is put, fetched whole, and a
/// damaged chunk refused rather than handed on.
#[tokio::test]
async fn blobs_are_stored_once_in_chunks_and_checked_when_fetched() {
    use kreg::store::blobs;
    let db = fresh_db("blobs").await;
    let dir = Scratch::new("blobs");
    let file = dir.0.join("tool.bin");
    // 2.5 chunks of bytes that are not all alike.
    let bytes: Vec<u8> = (0..(blobs::CHUNK * 5 / 2)).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let blob = blobs::put(&db.pool, &file).await.unwrap();
    assert_eq!(blob.sha256, sha256sum(&file));
    assert_eq!(blob.size as usize, bytes.len());
    assert_eq!(count(&db, "SELECT count(*) FROM blob_chunks").await, 3);
    // Again, and under another name: nothing more stored.
    let copy = dir.0.join("copy.bin");
    std::fs::copy(&file, &copy).unwrap();
    assert_eq!(blobs::put(&db.pool, &copy).await.unwrap(), blob);
    assert_eq!(count(&db, "SELECT count(*) FROM blobs").await, 1);
    assert_eq!(count(&db, "SELECT count(*) FROM blob_chunks").await, 3);
    let got = blobs::fetch(&db.pool, &blob.sha256, &dir.0.join("cache"))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&got).unwrap(), bytes);
    // A chunk damaged in the database: the fetch fails, and leaves no file behind.
    sqlx::query("UPDATE blob_chunks SET data = 'x' WHERE n = 1")
        .execute(&db.pool)
        .await
        .unwrap();
    let other = dir.0.join("cache2");
    let e = blobs::fetch(&db.pool, &blob.sha256, &other)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("hash to"), "{e}");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
    // No run carries it: `kreg db gc` removes it, chunks and all.
    let out = kreg(&db, &dir.0).args(["db", "gc"]).output().unwrap();
    assert_ok(&out, "kreg db gc");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("removed 1 stored file(s)"), "{said}");
    assert_eq!(count(&db, "SELECT count(*) FROM blob_chunks").await, 0);
}

/// A run whose uploaded tool is edited, then deleted, after it was recorded: resumed, it
/// runs the tool it recorded, and says the path changed.
#[tokio::test]
async fn a_resumed_run_uses_the_files_it_recorded() {
    let db = fresh_db("carried").await;
    let agent = Agent::start();
    let dir = Scratch::new("carried");
    let tool = dir.0.join("uptool.sh");
    std::fs::write(&tool, "#!/bin/sh\nsleep 0.3\necho 'value: 41'\n").unwrap();
    let recorded = sha256sum(&tool);
    let text = uptool_scenario("carried", &agent, &dir.0, "", 6);
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();
    let mut child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    kill_when(
        &db,
        &mut child,
        "SELECT count(*) FROM jobs WHERE state = 'done'",
        2,
        "two jobs stored",
    )
    .await;
    let stored: Vec<(String, String)> = sqlx::query_as("SELECT path, sha256 FROM run_files")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, [(tool.display().to_string(), recorded.clone())]);
    // Edited: the run goes on with what it recorded (killed again two jobs later).
    std::fs::write(&tool, "#!/bin/sh\necho 'value: 99'\n").unwrap();
    let run: i64 = count(&db, "SELECT max(id) FROM runs").await;
    let said = dir.0.join("resume.stderr");
    let mut child = kreg(&db, &dir.0)
        .args(["resume", &run.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap())
        .spawn()
        .unwrap();
    kill_when(
        &db,
        &mut child,
        "SELECT count(*) FROM jobs WHERE state = 'done'",
        4,
        "four jobs stored",
    )
    .await;
    let said = std::fs::read_to_string(&said).unwrap();
    assert!(
        said.contains("now holds other content") && said.contains(&recorded),
        "{said}"
    );
    // Deleted: the same.
    std::fs::remove_file(&tool).unwrap();
    let out = kreg(&db, &dir.0).args(["resume", &run.to_string()]).output().unwrap();
    assert_ok(&out, "kreg resume after the file was deleted");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot be read any more"), "{said}");
    let values: Vec<f64> =
        sqlx::query_scalar("SELECT r.value FROM results r JOIN jobs j ON j.id = r.job_id ORDER BY j.ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(values, [41.0; 6], "every job ran the recorded tool");
    // A blob a run carries stays.
    let out = kreg(&db, &dir.0).args(["db", "gc"]).output().unwrap();
    assert_ok(&out, "kreg db gc");
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0 stored file(s)"));
    assert_eq!(count(&db, "SELECT count(*) FROM blobs").await, 1);
}

/// `kreg export` then `kreg import` into a fresh database: the same report, byte for byte,
/// and the bundle holds the tool the run carried and the report as the first site printed it.
#[tokio::test]
async fn an_exported_run_imports_elsewhere_with_the_same_report() {
    let db = fresh_db("export").await;
    let other = fresh_db("import").await;
    let agent = Agent::start();
    let dir = Scratch::new("export");
    std::fs::write(dir.0.join("uptool.sh"), "#!/bin/sh\necho \"value: $((40 + $$ % 3))\"\n").unwrap();
    let variants = "variants: [ { name: default }, { name: batch, policy: batch } ]\n";
    let text = uptool_scenario("exported", &agent, &dir.0, variants, 3);
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();
    assert_ok(&kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap(), "kreg run");
    let bundle = dir.0.join("b.tar");
    let out = kreg(&db, &dir.0)
        .args(["export", "1", "--output", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ok(&out, "kreg export");
    // The bundle, read with tar(1): the tool by its digest, the report as printed here.
    let listing = Command::new("tar").arg("-tf").arg(&bundle).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    let tool = sha256sum(&dir.0.join("uptool.sh"));
    assert!(listing.contains(&format!("files/{tool}")), "{listing}");
    assert!(
        listing.contains("tables/jobs.jsonl") && listing.contains("scenario.yaml"),
        "{listing}"
    );
    let report = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    assert_ok(&report, "kreg report");
    let inside = Command::new("tar")
        .arg("-xOf")
        .arg(&bundle)
        .arg("report.txt")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inside.stdout).trim_end(),
        String::from_utf8_lossy(&report.stdout).trim_end()
    );
    // The dashboard's link gives the same bundle, byte for byte, from the run and report
    // pages alike.
    let server = common::web::Server::start(&db, &dir.0);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    for page in ["/runs/1", "/runs/1/report"] {
        let html = http.get(format!("{}{page}", server.base)).send().await.unwrap();
        let html = html.text().await.unwrap();
        assert!(html.contains("href=\"/runs/1/bundle\""), "{page}: {html}");
    }
    let served = http.get(format!("{}/runs/1/bundle", server.base)).send().await.unwrap();
    assert_eq!(served.status(), 200);
    let disposition = served.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(disposition.contains("run-1.tar"), "{disposition}");
    let served = served.bytes().await.unwrap();
    assert!(
        served[..] == std::fs::read(&bundle).unwrap()[..],
        "the served bundle differs"
    );
    let missing = http.get(format!("{}/runs/9/bundle", server.base)).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    drop(server);
    // Into another database: the same report, byte for byte.
    let out = kreg(&other, &dir.0)
        .args(["import", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ok(&out, "kreg import");
    let again = kreg(&other, &dir.0).args(["report", "1"]).output().unwrap();
    assert_ok(&again, "kreg report of the imported run");
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&report.stdout)
    );
    // Twice: refused whole, nothing written.
    let jobs = |db: &common::TestDb| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM jobs")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let before = jobs(&other).await;
    let out = kreg(&other, &dir.0)
        .args(["import", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing imported"));
    assert_eq!(jobs(&other).await, before);
    // Run again from the bundle, the tool gone from this folder: the same jobs, the bundle's
    // tool.
    std::fs::remove_file(dir.0.join("uptool.sh")).unwrap();
    let out = kreg(&other, &dir.0)
        .args(["run", "--from", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ok(&out, "kreg run --from");
    let cells: Vec<(String, i64)> = sqlx::query_as(
        "SELECT variant, count(*) FROM jobs WHERE run_id = 2 AND state = 'done' GROUP BY variant ORDER BY variant",
    )
    .fetch_all(&other.pool)
    .await
    .unwrap();
    assert_eq!(cells, [("batch".to_string(), 3), ("default".to_string(), 3)]);
    let values: Vec<f64> = sqlx::query_scalar("SELECT value FROM results WHERE run_id = 2")
        .fetch_all(&other.pool)
        .await
        .unwrap();
    assert!(
        values.len() == 6 && values.iter().all(|v| (40.0..=42.0).contains(v)),
        "{values:?}"
    );
}
