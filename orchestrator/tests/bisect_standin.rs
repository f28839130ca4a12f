//! `kreg bisect` end to end on the stand-in tree (see testkit's standin.rs): the range's
//! commits built through the cache in the shared work tree, each boot a fresh kexec in the
//! lab VM, hackbench run and stored as any run's jobs. The stand-in's commits all build the
//! same image, so the endpoints do not differ: the bisection must stop after them with
//! "does not reproduce", building nothing else — even when PostgreSQL is stopped and started
//! again mid-measurement (the bisection waits for it, as `kreg run` does) and when kreg is
//! SIGKILLed midway and resumed, with no finished measurement repeated. The database is a
//! private cluster of the test's own, so that stopping it disturbs no other test. The bisection of a real range with a
//! slow commit in it is tests/lab_bisect.rs (scripts/test-kernel.sh).

use std::process::Command;
use std::time::{Duration, Instant};

use common::standin::standin_repo;
use common::{git, Scratch, TestDb};
use kreg_testkit as common;

async fn count(db: &TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap()
}

/// Done jobs in the boot measurement `seq` is measured in (0 before it is asked).
const DONE_IN: &str = "SELECT count(*) FROM jobs j JOIN bisect_measurements m ON m.kernel = j.kernel AND m.boot = j.boot WHERE j.state = 'done' AND m.seq = ";

/// The jobs of a boot a measurement left, in order: (state, error).
async fn boot_jobs(db: &TestDb, boot: i32) -> Vec<(String, Option<String>)> {
    sqlx::query_as("SELECT state, error FROM jobs WHERE boot = $1 ORDER BY iteration")
        .bind(boot)
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

/// Waits until measurement `seq` has a run done; kreg must not end meanwhile.
async fn until(db: &TestDb, child: &mut std::process::Child, seq: i32, deadline: Instant) {
    let sql = format!("{DONE_IN}{seq}");
    while count(db, &sql).await < 1 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "kreg ended before measurement {seq} ran"
        );
        assert!(Instant::now() < deadline, "measurement {seq} did not run in 15 minutes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn boot_of(db: &TestDb, seq: i32) -> i32 {
    sqlx::query_scalar("SELECT boot FROM bisect_measurements WHERE seq = $1")
        .bind(seq)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_range_whose_ends_do_not_differ_stops_after_them_even_across_a_kill() {
    let dir = Scratch::new("bstandin");
    let pg = dir.0.join("pg");
    let url = common::private_db(&pg, "url");
    let db = TestDb {
        // Opened as kreg opens it: the schema made.
        pool: kreg::store::open(url.parse::<sqlx::postgres::PgConnectOptions>().unwrap())
            .await
            .unwrap(),
        url,
    };
    let cache = dir.0.join("cache");
    let (repo, _) = standin_repo(&dir.0);
    // Two more commits: the range is v1 and three after it.
    for i in 0..2 {
        std::fs::write(repo.join("README"), format!("stand-in tree, commit {i}\n")).unwrap();
        git(&repo, &["commit", "-q", "-am", &format!("README: commit {i}")]);
    }
    let scenario = format!(
        r#"
name: bisect-standin
hosts:
  sut: {{ role: sut, transport: {{ kind: lab, cpus: 2, memory_mib: 1024 }} }}
kernels:
  - name: standin
    source: {{ git: "{repo}", ref: v1 }}
    config: {{ base: defconfig, set: [CONFIG_SCHEDSTATS=y] }}
baseline: standin
boot: {{ timeout: 3m }}
workloads:
  - {{ name: hb, kind: hackbench, groups: 1, loops: 10, pipe: true }}
iterations: 3
bisect:
  good: v1
  metric: hb/time
  # An A/A range: a false "reproduces" needs p < 0.001 and a 20 % change at once.
  alpha: 0.001
  min_effect: 0.2
  endpoint_boots: {{ min: 2, max: 3 }}
"#,
        repo = repo.display()
    );
    let file = dir.0.join("b.yaml");
    std::fs::write(&file, &scenario).unwrap();
    let kreg = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kreg"));
        c.env("DATABASE_URL", &db.url)
            .env("KREG_DATA_DIR", &dir.0)
            .env("KREG_CACHE_DIR", &cache)
            .env("KREG_AGENT_BIN", common::agent_bin());
        c
    };
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // `--format json`: stdout is the report alone, at the end; progress goes to stderr.
    let stdout_file = dir.0.join("bisect.stdout");
    let mut child = kreg()
        .args(["bisect", "--format", "json", "--bad", &head])
        .arg(&file)
        .stdout(std::fs::File::create(&stdout_file).unwrap())
        .stderr(std::fs::File::create(dir.0.join("bisect.stderr")).unwrap())
        .spawn()
        .unwrap();
    // PostgreSQL stopped once the first measurement's first run is stored, for 8 s (the
    // bisection writes within that time whatever it is doing: a run, the measurement, the
    // next one asked), then started again: the bisection waits for it and goes on.
    let measured = "SELECT count(*) FROM bisect_measurements WHERE value IS NOT NULL OR error IS NOT NULL";
    let deadline = Instant::now() + Duration::from_secs(900);
    until(&db, &mut child, 1, deadline).await;
    let first_boot = boot_of(&db, 1).await;
    common::private_db(&pg, "stop");
    std::thread::sleep(Duration::from_secs(8));
    common::private_db(&pg, "url");
    // Killed once the first run of the third measurement is stored: its boot is cut off
    // with two runs to go (each takes longer than the poll's 20 ms).
    until(&db, &mut child, 3, deadline).await;
    let third_boot = boot_of(&db, 3).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(&stdout_file).unwrap(),
        "",
        "a JSON bisection printed before its report"
    );
    let progress = std::fs::read_to_string(dir.0.join("bisect.stderr")).unwrap();
    assert!(progress.contains(": bisecting hb/time over 4 commits"), "{progress}");
    assert!(progress.contains("the database went away"), "{progress}");
    let run: i64 = count(&db, "SELECT run_id FROM bisections").await;
    let kept = count(&db, measured).await;
    assert_eq!(kept, 2, "two boots measured, the third cut off");

    let out = kreg().args(["resume", &run.to_string()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        &stderr[stderr.len().saturating_sub(6000)..]
    );
    assert!(stdout.contains("does not reproduce here"), "{stdout}");
    assert!(stderr.contains(&format!("{kept} measurement(s) stored")), "{stderr}");

    // Only the endpoints, three boots each (the cap: they never differ), each boot its own.
    let rows: Vec<(i32, String, i32, Option<f64>)> =
        sqlx::query_as("SELECT seq, role, commit_index, value FROM bisect_measurements ORDER BY seq")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert!(rows.iter().all(|r| r.1 == "endpoint" && r.3.is_some()), "{rows:?}");
    let good = rows.iter().filter(|r| r.2 == 0).count();
    assert_eq!(good, 3, "{rows:?}");
    // The jobs each measurement counts: three per boot, each boot its own (a measurement the
    // kill cut off was measured again in a new boot, its old jobs counted by nothing).
    let counted =
        "FROM jobs j JOIN bisect_measurements m ON m.kernel = j.kernel AND m.boot = j.boot WHERE j.state = 'done'";
    assert_eq!(count(&db, &format!("SELECT count(*) {counted}")).await, 18);
    let boots = count(&db, &format!("SELECT count(DISTINCT j.boot_id) {counted}")).await;
    assert_eq!(boots, 6, "every measurement in a boot of its own");
    let twice = "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'done' GROUP BY kernel, boot, iteration HAVING count(*) > 1) x";
    assert_eq!(count(&db, twice).await, 0, "a finished job ran again");
    // The cut-off boot: its run stays stored, counted by nothing; its other runs failed
    // with why.
    assert_ne!(
        boot_of(&db, 3).await,
        third_boot,
        "measurement 3 was taken again in a new boot"
    );
    let old = boot_jobs(&db, third_boot).await;
    assert_eq!(old.len(), 3, "{old:?}");
    assert_eq!(old[0].0, "done", "{old:?}");
    for o in &old[1..] {
        assert_eq!(o.0, "failed", "{old:?}");
        assert!(
            o.1.as_deref()
                .unwrap_or("")
                .contains("measurement 3 was taken again in boot"),
            "{old:?}"
        );
    }
    // The boot the outage cut into, when it did (the outage may have come between two
    // measurements): its runs done stay, counted by nothing, the others failed with why.
    if boot_of(&db, 1).await != first_boot {
        let cut = boot_jobs(&db, first_boot).await;
        assert!(cut.iter().any(|j| j.0 == "done"), "{cut:?}");
        for j in cut.iter().filter(|j| j.0 != "done") {
            assert_eq!(j.0, "failed", "{cut:?}");
            assert!(
                j.1.as_deref()
                    .unwrap_or("")
                    .contains("measurement 1 was taken again in boot"),
                "{cut:?}"
            );
        }
    }
    // Two builds (good and bad), each compiled once whatever the outage and the kill
    // interrupted.
    assert_eq!(
        count(&db, "SELECT count(*) FROM bisect_measurements WHERE compiled").await,
        2
    );

    let show = kreg()
        .args(["bisect", "--show", &run.to_string(), "--format", "json"])
        .output()
        .unwrap();
    assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    let r: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(r["outcome"]["kind"], "does_not_reproduce", "{r:#}");
    assert_eq!(r["commits"], 4);
    assert_eq!(r["at_good"]["boots"], 3);
    assert_eq!(r["at_bad"]["boots"], 3);
    assert!(r["endpoints_change"]["lo"].as_f64().unwrap() < r["endpoints_change"]["hi"].as_f64().unwrap());
    assert_eq!(r["builds"], 2);
    let status = kreg().arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(&format!(
            "a bisection of hb/time v1..{head}: does not reproduce (`kreg bisect --show {run}`)"
        )),
        "{status}"
    );
    let report = kreg().args(["report", &run.to_string()]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&report.stdout).starts_with("Bisection (run "),
        "kreg report of a bisection"
    );
    let text = kreg().args(["bisect", "--show", &run.to_string()]).output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&text.stdout));
    // One commit's measurement, again with `kreg run`: the scenario pinned to that commit.
    let v1 = git(&repo, &["rev-parse", "v1"]);
    let pinned = kreg()
        .args(["bisect", "--show", &run.to_string(), "--at", &v1[..10]])
        .output()
        .unwrap();
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    let pinned_file = dir.0.join("pinned.yaml");
    std::fs::write(&pinned_file, &pinned.stdout).unwrap();
    let text = String::from_utf8_lossy(&pinned.stdout);
    assert!(text.contains(&format!("ref: {v1} }}")), "{text}");
    let plan = kreg().arg("plan").arg(&pinned_file).output().unwrap();
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let md = kreg()
        .args(["bisect", "--show", &run.to_string(), "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.starts_with("## Bisection (run "), "{md}");
    assert!(md.contains("kreg bisect "), "{md}");

    // A bad end that does not build: nothing to bisect, an error (exit 1) with why on
    // stderr, and with --format json the report on stdout, alone.
    std::fs::remove_file(repo.join("image")).unwrap();
    git(&repo, &["commit", "-q", "-am", "the image is gone: the build fails"]);
    let broken = git(&repo, &["rev-parse", "HEAD"]);
    let out = kreg()
        .args(["bisect", "--format", "json", "--bad", &broken])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad end (commit 4) could not be built or booted"),
        "{stderr}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(r["outcome"]["kind"], "endpoint_failed", "{r:#}");
    db.pool.close().await;
    common::private_db(&pg, "stop");
}
