//! PostgreSQL stopped mid-job and started again, under `kreg run` and under a fleet worker
//! driving a slot: the driver waits for it and goes on where the run stands.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use super::common::{self, Scratch};
use super::{account, finish, knob, kreg, outcome, Case, LoopAgent, Row};

fn restart_twice(case: &Case, pgdata: &Path, row: &mut Row) {
    for n in [1, 3] {
        case.wait_attempts(n);
        common::private_db(pgdata, "stop");
        std::thread::sleep(Duration::from_secs(3));
        common::private_db(pgdata, "url");
        row.count += 1;
    }
}

/// A private PostgreSQL cluster of a fault's own (stopping it disturbs no other test): its
/// folder, its URL, and a pool opened as kreg opens it.
pub struct Cluster {
    pub scratch: Scratch,
    pub pgdata: std::path::PathBuf,
    pub url: String,
    pub pool: sqlx::PgPool,
}

impl Cluster {
    pub async fn new(name: &str) -> Cluster {
        let scratch = Scratch::new(name);
        let pgdata = scratch.0.join("pg");
        let url = common::private_db(&pgdata, "url");
        let pool = kreg::store::open(sqlx::postgres::PgConnectOptions::from_str(&url).unwrap())
            .await
            .unwrap();
        Cluster {
            scratch,
            pgdata,
            url,
            pool,
        }
    }

    /// `kreg db stop` or `url` (started again) on it.
    pub fn db(&self, what: &str) -> String {
        common::private_db(&self.pgdata, what)
    }
}

/// PostgreSQL stopped (fast) while a job runs, started again 3 s later.
pub async fn database_restart() -> Row {
    let c = Cluster::new("fault-pg").await;
    let (pgdata, url, pool) = (&c.pgdata, &c.url, &c.pool);
    let db_cmd = |what: &str| c.db(what);
    let agent = LoopAgent::start();
    let case = Case::new("pg", 10, &agent.hosts_yaml(), "1.5", 60, 2);
    let orig = knob();
    let data = case.dir.0.join("data");
    let child = kreg(url, &data).arg("run").arg(case.file()).spawn().unwrap();
    let mut row = Row {
        fault: "PostgreSQL restarted mid-job".into(),
        ..Row::default()
    };
    restart_twice(&case, pgdata, &mut row);
    let (ok, text) = finish(child, Duration::from_secs(300));
    account(pool, &case, &orig, &mut row).await;
    row.done = ok;
    row.outcome = outcome(ok, &text, "database went away");
    pool.close().await;
    db_cmd("stop");
    row
}

/// PostgreSQL stopped (fast) while a fleet worker drives a slot's job, started again 3 s
/// later: the worker waits for it, keeps its lease (30 s: the outage with the server's
/// restart takes a few seconds more on a loaded machine) and goes on where the slot stands.
pub async fn fleet_database_restart() -> Row {
    let c = Cluster::new("fault-fleetpg").await;
    let (pgdata, url, pool) = (&c.pgdata, &c.url, &c.pool);
    let db_cmd = |what: &str| c.db(what);
    let agent = LoopAgent::start();
    let hosts = "hosts:\n  sut: { role: sut, transport: { kind: lab } }\n";
    let case = Case::new("fleetpg", 12, hosts, "1.5", 60, 2);
    std::fs::write(
        case.dir.0.join("pool.yaml"),
        format!(
            "machines:\n  m1: {{ role: sut, transport: {{ kind: http, url: \"http://{}\", token_file: \"{}\" }} }}\n",
            agent.addr,
            agent.token_file.display()
        ),
    )
    .unwrap();
    let orig = knob();
    let data = case.dir.0.join("data");
    for args in [vec!["machines", "add", "pool.yaml"], vec!["submit", "s.yaml"]] {
        let out = kreg(url, &data).args(&args).current_dir(&case.dir.0).output().unwrap();
        assert!(
            out.status.success(),
            "kreg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let child = kreg(url, &data)
        .args(["worker", "--lease", "30", "--poll", "0.3", "--until-empty"])
        .spawn()
        .unwrap();
    let mut row = Row {
        fault: "PostgreSQL restarted mid-job of a fleet slot".into(),
        ..Row::default()
    };
    restart_twice(&case, pgdata, &mut row);
    let (ok, text) = finish(child, Duration::from_secs(300));
    account(pool, &case, &orig, &mut row).await;
    let states: Vec<String> = sqlx::query_scalar("SELECT state FROM run_slots UNION ALL SELECT state FROM runs")
        .fetch_all(pool)
        .await
        .unwrap();
    if states.iter().any(|s| s != "done") {
        row.checks
            .push(format!("the slot and its run end {states:?}, not done"));
    }
    if text.contains("lease of epoch") {
        row.checks.push("the lease was lost over a 3 s outage".into());
    }
    row.done = ok;
    row.outcome = outcome(ok, &text, "database went away");
    pool.close().await;
    db_cmd("stop");
    row
}
