//! HammerDB TPROC-C for real (seed 004's workload): MariaDB on a SUT and HammerDB on a load
//! generator, each in a network namespace with its own kreg-agent. kreg installs HammerDB
//! from its release tarball on the load generator, builds a one-warehouse schema, runs
//! TPROC-C under two variants (the controller killed during the first job's run and the run
//! resumed), and stores what HammerDB itself printed; then HammerDB 4.4
//! (aws/repro-collection's version) runs one job on the schema built, and 4.12 one job with
//! HammerDB and the server both on the SUT at 127.0.0.1. A build against a port nothing
//! listens on fails with HammerDB's own line. The password appears nowhere kreg keeps (a
//! pg_dump of the results database).
//!
//! HammerDB comes from KREG_TEST_HAMMERDB (a tarball), else the shared third-party folder
//! beside the repository; the test fails, never skips, when neither is there. Needs root,
//! iproute2, mariadb-server and HammerDB's Tcl packages (scripts/test.sh installs them).

use common::netns::{agent_in, Net, NsAgent};
use common::{fresh_db, kreg, kreg_run, Scratch, TestDb, TOKEN};
use kreg_testkit as common;

use std::path::Path;

const PASSWORD: &str = "hdb-S3cret-pw";

use common::hammerdb_tarball as tarball;

fn scenario(sut: &NsAgent, ldg: &NsAgent, datadir: &Path, version: &str, variants: &str) -> String {
    scenario_of(sut, ldg, datadir, version, variants, "mariadb", 3306)
}

fn scenario_of(
    sut: &NsAgent,
    ldg: &NsAgent,
    datadir: &Path,
    version: &str,
    variants: &str,
    kind: &str,
    port: u16,
) -> String {
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
    server: {{ on: sut, kind: {kind}, address: 10.232.3.1, port: {port}, datadir: {datadir}, database: tpcc, user: hdb, password_file: db.pass }}
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

async fn last_run(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT max(id) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// Whether a job's timed-run script (not a schema build's) is in a HammerDB TMP now.
fn timed_script() -> bool {
    std::fs::read_dir("/tmp").unwrap().flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("kreg-hammerdb.")
            && std::fs::read_to_string(e.path().join("script.tcl")).is_ok_and(|t| t.contains("vurun"))
    })
}

/// The pids of HammerDB's processes on this machine (every namespace shares its /proc).
fn hammerdb_processes() -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("hammerdbcli") {
            out.push(pid);
        }
    }
    out
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
    // `kind: mysql` with MariaDB's binaries (Debian's mysqld is mariadbd).
    std::fs::write(
        &file,
        scenario_of(&sut, &ldg, &datadir, "4.12", variants, "mysql", 3306),
    )
    .unwrap();
    // The controller is killed (SIGKILL) while the first job's HammerDB runs, then resumed.
    let child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    loop {
        assert!(std::time::Instant::now() < deadline, "no timed HammerDB run began");
        let running: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE state = 'running'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        if running == 1 && !hammerdb_processes().is_empty() && timed_script() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(15)).await;
    // SAFETY: signals the kreg child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let killed = child.wait_with_output().unwrap();
    assert!(!killed.status.success());
    let run412 = last_run(&db).await;
    let out = kreg(&db, &dir.0)
        .args(["resume", &run412.to_string()])
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "kreg resume (HammerDB 4.12) failed\n{text}");
    // Nothing of the killed attempt lives on, and every job has exactly one sample.
    assert!(hammerdb_processes().is_empty(), "{:?}", hammerdb_processes());
    let per_job: Vec<i64> = sqlx::query_scalar(
        "SELECT count(r.id) FROM jobs j LEFT JOIN results r ON r.job_id = j.id AND r.metric = 'nopm' WHERE j.run_id = $1 GROUP BY j.id ORDER BY j.id",
    )
    .bind(run412)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(per_job, [1, 1], "{text}");
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
    // The exact script per job, its password masked.
    let scripts: Vec<String> = sqlx::query_scalar(
        "SELECT o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id WHERE j.run_id = $1 AND o.kind = 'hammerdb_script'",
    )
    .bind(run412)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(scripts.len(), 2, "{scripts:?}");
    for s in &scripts {
        assert!(
            s.contains("vurun") && s.contains("diset tpcc mysql_pass {********}"),
            "{s}"
        );
    }
    // The database server's own version line, per job.
    let servers: Vec<String> = sqlx::query_scalar(
        "SELECT o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id WHERE j.run_id = $1 AND o.kind = 'server_version'",
    )
    .bind(run412)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(servers.len(), 2, "{servers:?}");
    assert!(
        servers.iter().all(|v| v.starts_with("mysqld") && v.contains("MariaDB")),
        "{servers:?}"
    );

    // HammerDB 4.4 on the schema 4.12 built: one job.
    let file = dir.0.join("h44.yaml");
    std::fs::write(&file, scenario(&sut, &ldg, &datadir, "4.4", "  - { name: default }")).unwrap();
    let (ok, text) = kreg_run(&db, &dir.0, &file);
    assert!(ok, "kreg run (HammerDB 4.4) failed\n{text}");
    let done = jobs(&db, last_run(&db).await).await;
    assert_eq!(done.len(), 1, "{text}");
    let (_, _, metrics, stdout, profile) = &done[0];
    assert!(stdout.contains("HammerDB CLI v4.4"), "{stdout}");
    assert_eq!(metric(metrics, "nopm"), test_result(stdout).0);
    assert_eq!(metric(metrics, "neword_p99_ms"), neword(profile)[2]);

    // The server at 127.0.0.1 (HammerDB would take its socket instead of host and port):
    // HammerDB and MariaDB both on the SUT, one job on the schema built.
    let local = scenario_of(&sut, &ldg, &datadir, "4.12", "  - { name: default }", "mariadb", 3306)
        .replace("address: 10.232.3.1", "address: 127.0.0.1")
        .replace("    on: ldg\n", "    on: sut\n")
        .replace("on: [ldg], from:", "on: [sut], from:");
    let file = dir.0.join("h412-local.yaml");
    std::fs::write(&file, local).unwrap();
    let (ok, text) = kreg_run(&db, &dir.0, &file);
    assert!(ok, "kreg run (HammerDB at 127.0.0.1) failed\n{text}");
    let done = jobs(&db, last_run(&db).await).await;
    assert_eq!(done.len(), 1, "{text}");
    let (_, _, metrics, stdout, _) = &done[0];
    assert!(metric(metrics, "nopm") > 0.0);
    assert_eq!(metric(metrics, "nopm"), test_result(stdout).0);
    // Host and port, not HammerDB's default socket.
    assert!(
        stdout.contains("Changed connection:mysql_socket from /tmp/mysql.sock to null"),
        "{stdout}"
    );

    // A database HammerDB cannot reach (nothing listens on the port): the schema build
    // fails with HammerDB's own line, naming the host HammerDB ran on.
    let text = scenario_of(&sut, &ldg, &datadir, "4.12", "  - { name: default }", "mariadb", 3399);
    let sc = kreg::scenario::from_str(&text, &dir.0).expect("the scenario loads");
    let kreg::scenario::WorkloadKind::Hammerdb(h) = &sc.workload("tpcc").unwrap().kind else {
        panic!("a hammerdb workload")
    };
    let client = kreg_protocol::client::AgentClient::pinned(&ldg.url, TOKEN, &ldg.fingerprint).unwrap();
    // The 4.12 tree kreg unpacked for the runs above (named by the tarball's SHA-256).
    let hash: String = {
        use sha2::Digest;
        let bytes = std::fs::read(tarball("4.12")).unwrap();
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let tree = format!("/var/lib/kreg/tools/hammerdbcli-{}", &hash[..16]);
    assert!(Path::new(&tree).join("hammerdbcli").exists(), "{tree}");
    client.set_program("hammerdbcli", &format!("{tree}/hammerdbcli"));
    let err = kreg::engine::build_schema(&client, "ldg", &h.script(PASSWORD, 1, true), PASSWORD)
        .await
        .expect_err("a build against a closed port fails")
        .to_string();
    assert!(
        err.starts_with("hammerdbcli on ldg, building the TPROC-C schema, failed: "),
        "{err}"
    );
    assert!(err.contains("Can't connect to") && err.contains("10.232.3.1"), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");

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
