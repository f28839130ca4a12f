//! HammerDB TPROC-C for real (seed 004's workload): MariaDB on a SUT and HammerDB on a load
//! generator, each in a network namespace with its own kreg-agent. kreg installs HammerDB
//! from its release tarball on the load generator, builds a one-warehouse schema, runs
//! TPROC-C under two variants, and stores what HammerDB itself printed; then HammerDB 4.4
//! (aws/repro-collection's version) runs one job on the schema built. The password appears
//! nowhere kreg keeps (a pg_dump of the results database).
//!
//! HammerDB comes from KREG_TEST_HAMMERDB (a tarball), else the shared third-party folder
//! beside the repository; the test fails, never skips, when neither is there. Needs root,
//! iproute2, mariadb-server and HammerDB's Tcl packages (scripts/test.sh installs them).

mod common;
use common::netns::{agent_in, Net, NsAgent};
use common::{fresh_db, kreg, Scratch, TestDb, TOKEN};

use std::path::{Path, PathBuf};

const PASSWORD: &str = "hdb-S3cret-pw";

/// The HammerDB tarball of `version` ("4.12", "4.4").
fn tarball(version: &str) -> PathBuf {
    let name = format!("HammerDB-{version}.tar.gz");
    if let Ok(given) = std::env::var("KREG_TEST_HAMMERDB") {
        let p = PathBuf::from(given);
        if p.file_name().and_then(|n| n.to_str()) == Some(name.as_str()) || p.is_dir() {
            let p = if p.is_dir() { p.join(&name) } else { p };
            assert!(p.exists(), "KREG_TEST_HAMMERDB: {} does not exist", p.display());
            return p;
        }
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        here.join("../../shared/third_party").join(&name),
        PathBuf::from("/work/shared/third_party").join(&name),
    ];
    candidates.iter().find(|p| p.exists()).cloned().unwrap_or_else(|| {
        panic!(
            "HammerDB {version}: no tarball (set KREG_TEST_HAMMERDB to it or its folder; looked in {:?})",
            candidates
        )
    })
}

fn scenario(sut: &NsAgent, ldg: &NsAgent, datadir: &Path, version: &str, variants: &str) -> String {
    format!(
        r#"
name: hammerdb-{version}
hosts:
  sut: {{ role: sut, transport: {{ kind: http, url: "{sut}", tls_fingerprint: "{sut_fp}", token_file: token }} }}
  ldg: {{ role: loadgen, transport: {{ kind: http, url: "{ldg}", tls_fingerprint: "{ldg_fp}", token_file: token }} }}
kernels: [ {{ name: current, source: running }} ]
tools:
  - {{ name: hammerdbcli, on: [ldg], from: {{ tarball: "{tarball}", binary: hammerdbcli }} }}
variants:
{variants}
workloads:
  - name: tpcc
    kind: hammerdb
    on: ldg
    warehouses: 1
    virtual_users: 2
    rampup: 0
    duration: 1
    timeout: 10m
    server: {{ on: sut, kind: mariadb, address: 10.232.3.1, port: 3306, datadir: {datadir}, database: tpcc, user: hdb, password_file: db.pass }}
iterations: 1
"#,
        sut = sut.url,
        ldg = ldg.url,
        sut_fp = sut.fingerprint,
        ldg_fp = ldg.fingerprint,
        tarball = tarball(version).display(),
        datadir = datadir.display(),
    )
}

/// Per job: its metrics, its stored stdout and time profile.
async fn jobs(db: &TestDb, run: i64) -> Vec<(i64, String, Vec<(String, f64)>, String, String)> {
    let ids: Vec<(i64, String)> =
        sqlx::query_as("SELECT id, variant FROM jobs WHERE run_id = $1 AND state = 'done' ORDER BY ordinal")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let mut out = Vec::new();
    for (id, variant) in ids {
        let metrics: Vec<(String, f64)> = sqlx::query_as("SELECT metric, value FROM results WHERE job_id = $1")
            .bind(id)
            .fetch_all(&db.pool)
            .await
            .unwrap();
        let raw = |kind: &'static str| {
            sqlx::query_scalar::<_, String>("SELECT content FROM raw_outputs WHERE job_id = $1 AND kind = $2")
                .bind(id)
                .bind(kind)
                .fetch_one(&db.pool)
        };
        let stdout = raw("stdout").await.unwrap();
        let profile = raw("hammerdb_profile").await.unwrap();
        out.push((id, variant, metrics, stdout, profile));
    }
    out
}

/// NOPM and TPM as HammerDB's `TEST RESULT` line says them.
fn test_result(stdout: &str) -> (f64, f64) {
    let line = stdout
        .lines()
        .find(|l| l.contains("TEST RESULT"))
        .expect("a TEST RESULT line");
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    (
        words[at("NOPM") - 1].parse().unwrap(),
        words[at("from") + 1].parse().unwrap(),
    )
}

/// NEWORD's P50, P95 and P99 in the profile's summary over all virtual users.
fn neword(profile: &str) -> [f64; 3] {
    let summary = profile.rfind("SUMMARY OF").expect("a summary");
    let rest = &profile[summary..];
    let at = rest.find(">>>>> PROC: NEWORD").expect("NEWORD");
    let line = rest[at..].lines().find(|l| l.starts_with("P99:")).unwrap();
    let get = |k: &str| -> f64 {
        let v = line.split(&format!("{k}: ")).nth(1).unwrap();
        v.split("ms").next().unwrap().parse().unwrap()
    };
    [get("P50"), get("P95"), get("P99")]
}

fn metric(ms: &[(String, f64)], name: &str) -> f64 {
    ms.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {ms:?}"))
        .1
}

async fn run(db: &TestDb, dir: &Path, file: &Path) -> (bool, String) {
    let out = kreg(db, dir).arg("run").arg(file).output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

async fn last_run(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT max(id) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn tproc_c_from_the_ldg_against_mariadb_on_the_sut() {
    let db = fresh_db("hammerdb").await;
    let dir = Scratch::new("hammerdb");
    let tag = format!("{}", std::process::id() % 10000);
    let net = Net::new(&tag, "10.232");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    std::fs::write(dir.0.join("db.pass"), format!("{PASSWORD}\n")).unwrap();
    let sut = agent_in(&net.names[0], "10.232.1.2", &dir.0, &token_file);
    let ldg = agent_in(&net.names[1], "10.232.2.2", &dir.0, &token_file);
    let datadir = dir.0.join("mariadb");

    // HammerDB 4.12: the schema built, then TPROC-C under two variants.
    let variants = "  - { name: default }\n  - { name: batch, policy: batch }";
    let file = dir.0.join("h412.yaml");
    std::fs::write(&file, scenario(&sut, &ldg, &datadir, "4.12", variants)).unwrap();
    let (ok, text) = run(&db, &dir.0, &file).await;
    assert!(ok, "kreg run (HammerDB 4.12) failed\n{text}");
    let run412 = last_run(&db).await;
    let done = jobs(&db, run412).await;
    assert_eq!(done.len(), 2, "{text}");
    for (_, variant, metrics, stdout, profile) in &done {
        let (nopm, tpm) = test_result(stdout);
        assert!(nopm > 0.0 && tpm > 0.0, "{variant}: {stdout}");
        assert_eq!(metric(metrics, "nopm"), nopm, "{variant}");
        assert_eq!(metric(metrics, "tpm"), tpm, "{variant}");
        let [p50, p95, p99] = neword(profile);
        assert_eq!(metric(metrics, "neword_p50_ms"), p50, "{variant}");
        assert_eq!(metric(metrics, "neword_p95_ms"), p95, "{variant}");
        assert_eq!(metric(metrics, "neword_p99_ms"), p99, "{variant}");
        assert!(stdout.contains("HammerDB CLI v4.12"), "{stdout}");
    }
    let versions: Vec<String> = sqlx::query_scalar(
        "SELECT o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id WHERE j.run_id = $1 AND o.kind = 'hammerdb_version'",
    )
    .bind(run412)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(versions, ["v4.12", "v4.12"]);

    // HammerDB 4.4 on the schema 4.12 built: one job.
    let file = dir.0.join("h44.yaml");
    std::fs::write(&file, scenario(&sut, &ldg, &datadir, "4.4", "  - { name: default }")).unwrap();
    let (ok, text) = run(&db, &dir.0, &file).await;
    assert!(ok, "kreg run (HammerDB 4.4) failed\n{text}");
    let done = jobs(&db, last_run(&db).await).await;
    assert_eq!(done.len(), 1, "{text}");
    let (_, _, metrics, stdout, profile) = &done[0];
    assert!(stdout.contains("HammerDB CLI v4.4"), "{stdout}");
    assert_eq!(metric(metrics, "nopm"), test_result(stdout).0);
    assert_eq!(metric(metrics, "neword_p99_ms"), neword(profile)[2]);

    // The password is in nothing kreg stored.
    let dump = std::process::Command::new("pg_dump")
        .arg(&db.url)
        .output()
        .expect("pg_dump runs");
    assert!(
        dump.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("TEST RESULT"), "the dump holds the outputs");
    assert!(!dump.contains(PASSWORD), "the password is in the database");
    assert!(
        dump.contains("Changed tpcc:mysql_pass from mysql to ********"),
        "the echo is kept, masked"
    );
    drop((sut, ldg, net));
}
