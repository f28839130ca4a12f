//! PostgreSQL stopped while a bisection measures a boot, started again 5 s later: the
//! bisection waits for it (as `kreg run` does) and ends where it would have. The range is
//! the stand-in tree's (testkit's standin.rs: every commit builds the same image, booted by
//! kexec in the lab VM), its endpoints alike: "does not reproduce" after two boots of each.
//! The bisection with a kill and a resume, its report and its pinned commands are
//! tests/bisect_standin.rs's.

use std::time::{Duration, Instant};

use super::common::{self, standin::standin_repo};
use super::{finish, kreg, outcome, Row};

fn scenario(repo: &std::path::Path) -> String {
    format!(
        r#"
name: fault-bisect
hosts:
  sut: {{ role: sut, transport: {{ kind: lab, cpus: 2, memory_mib: 1024 }} }}
kernels:
  - name: standin
    source: {{ git: "{}", ref: v1 }}
    config: {{ base: defconfig }}
baseline: standin
boot: {{ timeout: 3m }}
workloads:
  - {{ name: hb, kind: hackbench, groups: 1, loops: 10, pipe: true }}
iterations: 2
bisect:
  good: v1
  metric: hb/time
  alpha: 0.001
  min_effect: 0.2
  endpoint_boots: {{ min: 2, max: 2 }}
"#,
        repo.display()
    )
}

async fn count(pool: &sqlx::PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// Done jobs of the boot measurement 1 is measured in.
const FIRST_DONE: &str = "SELECT count(*) FROM jobs j JOIN bisect_measurements m ON m.kernel = j.kernel AND m.boot = j.boot WHERE j.state = 'done' AND m.seq = 1";

pub async fn database_restart_mid_measurement() -> Row {
    let c = super::database::Cluster::new("fault-bisect").await;
    let (scratch, url, pool) = (&c.scratch, &c.url, &c.pool);
    let db_cmd = |what: &str| c.db(what);
    let (repo, _) = standin_repo(&scratch.0);
    std::fs::write(repo.join("README"), "stand-in tree, one more commit\n").unwrap();
    common::git(&repo, &["add", "README"]);
    common::git(&repo, &["commit", "-q", "-m", "README"]);
    let head = common::git(&repo, &["rev-parse", "HEAD"]);
    let file = scratch.0.join("b.yaml");
    std::fs::write(&file, scenario(&repo)).unwrap();
    let data = scratch.0.join("data");
    // Its progress (builds, boots) to a file: a pipe nobody reads until the end could fill.
    let progress = scratch.0.join("bisect.stderr");
    let child = kreg(url, &data)
        .args(["bisect", "--bad", &head])
        .arg(&file)
        .stderr(std::fs::File::create(&progress).unwrap())
        .spawn()
        .unwrap();
    let mut row = Row {
        fault: "PostgreSQL restarted mid-measurement of a bisection".into(),
        count: 1,
        ..Row::default()
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    while count(pool, FIRST_DONE).await < 1 {
        assert!(
            Instant::now() < deadline,
            "the first measurement did not run in 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    db_cmd("stop");
    std::thread::sleep(Duration::from_secs(5));
    db_cmd("url");
    let (ok, report) = finish(child, Duration::from_secs(600));
    let text = format!("{report}{}", std::fs::read_to_string(&progress).unwrap_or_default());
    account(pool, &mut row).await;
    if !text.contains("does not reproduce") {
        row.checks
            .push("the bisection did not end \"does not reproduce\"".into());
    }
    row.done = ok;
    row.outcome = outcome(ok, &text, "database went away");
    pool.close().await;
    db_cmd("stop");
    // Nothing of the bisection's left running (the lab VM, its helpers), nor the cluster.
    row.left = common::gone_within(&scratch.0.display().to_string(), Duration::from_secs(10));
    row
}

/// The measurements and their jobs: two boots of each endpoint measured, none twice; every
/// run a measurement counts done once; a run of a boot the outage cut off failed with why.
async fn account(pool: &sqlx::PgPool, row: &mut Row) {
    let measured: Vec<(String, Option<f64>)> =
        sqlx::query_as("SELECT role, value FROM bisect_measurements ORDER BY seq")
            .fetch_all(pool)
            .await
            .unwrap();
    if measured.len() != 4 || measured.iter().any(|(role, v)| role != "endpoint" || v.is_none()) {
        row.checks
            .push(format!("measurements {measured:?}, not four endpoints measured"));
    }
    let counted = "FROM jobs j JOIN bisect_measurements m ON m.kernel = j.kernel AND m.boot = j.boot";
    let done = count(pool, &format!("SELECT count(*) {counted} WHERE j.state = 'done'")).await;
    row.jobs = count(pool, "SELECT count(*) FROM jobs").await as usize;
    row.lost = (8 - done).max(0) as usize
        + count(pool, "SELECT count(*) FROM jobs WHERE state IN ('pending', 'running')").await as usize;
    row.duplicated = count(
        pool,
        "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'done' GROUP BY kernel, boot, iteration HAVING count(*) > 1) x",
    )
    .await as usize;
    let failed: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT id, error FROM jobs WHERE state = 'failed' ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    row.failed = failed
        .into_iter()
        .map(|(id, e)| format!("job {id}: {}", e.unwrap_or_default()))
        .collect();
    let unrestored = count(pool, "SELECT count(*) FROM host_settings WHERE restored_at IS NULL").await;
    row.settings_back = unrestored == 0;
}
