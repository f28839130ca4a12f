//! The controller stopped in the middle of a job (SIGINT, then SIGKILL) and resumed: the
//! job in progress ends on the host with its controller, the retry never overlaps what the
//! earlier attempt started (each attempt checks the host for the earlier ones' processes,
//! a daemon among them), and every job stores exactly one sample. Resuming a finished run
//! changes nothing.

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{assert_ok, fresh_db, gone_within, kreg, Agent, Scratch};
use kreg_testkit as common;

/// Waits until `path` has more than `n` lines; panics after a minute.
fn wait_lines(path: &std::path::Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0) <= n {
        assert!(Instant::now() < deadline, "no job started within a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_stopped_mid_job_leaves_nothing_running_and_one_sample_per_job() {
    let db = fresh_db("interrupt").await;
    let agent = Agent::start();
    let dir = Scratch::new("interrupt");
    let d = dir.0.display().to_string();
    let tag = format!("301.{}", std::process::id());
    // Each attempt records its shell and a daemon (own session), after checking that
    // nothing recorded by an earlier attempt is still alive.
    let script = format!(
        "log={d}/attempts.log; for p in $(cat $log 2>/dev/null); do if grep -q {tag} /proc/$p/cmdline 2>/dev/null; then echo $p >> {d}/overlaps.log; fi; done; echo $$ >> $log; setsid sleep {tag} & echo $! >> $log; sleep 2; echo 'value: 1'"
    );
    let scenario = format!(
        r#"
name: interrupt
{hosts}kernels: [ {{ name: current, source: running }} ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "{script}"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: 3
"#,
        hosts = agent.hosts_yaml(),
    );
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, scenario).unwrap();
    let log = dir.0.join("attempts.log");

    for (run, signal) in [(1i64, libc::SIGINT), (2, libc::SIGKILL)] {
        let before = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
        let child = kreg(&db, &dir.0)
            .arg("run")
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_lines(&log, before + 1);
        // SAFETY: signals the kreg child this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if signal == libc::SIGINT {
            assert_eq!(out.status.code(), Some(130), "{stderr}");
            assert!(
                stderr.contains("interrupted by SIGINT") && stderr.contains(&format!("kreg resume {run}")),
                "{stderr}"
            );
            let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(state, "interrupted");
            let running: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE run_id = $1 AND state = 'running'")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(running, 0);
            // The job in progress ended on the host with its controller, daemon included.
            let left = gone_within(&tag, Duration::from_secs(5));
            assert!(left.is_empty(), "still running after SIGINT: {left:?}");
        }
        // Resumed at once: the retry must not overlap the earlier attempt.
        let out = kreg(&db, &dir.0).args(["resume", &run.to_string()]).output().unwrap();
        assert_ok(&out, "kreg");
    }
    assert!(
        !dir.0.join("overlaps.log").exists(),
        "a retry ran while an earlier attempt's processes lived: {}",
        std::fs::read_to_string(dir.0.join("overlaps.log")).unwrap_or_default()
    );
    // Exactly one sample per job, every job done, in both runs.
    let per_job: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT j.run_id, count(r.id) FROM jobs j LEFT JOIN results r ON r.job_id = j.id AND r.metric = 'value'
         GROUP BY j.id, j.run_id ORDER BY j.id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(per_job.len(), 6, "{per_job:?}");
    assert!(per_job.iter().all(|(_, n)| *n == 1), "{per_job:?}");
    let states: Vec<String> = sqlx::query_scalar("SELECT state FROM runs ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(states, ["done", "done"]);

    // Resuming a finished run touches nothing, not even its hosts.
    let finished: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT finished_at FROM runs WHERE id = 1")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    drop(agent);
    let out = kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("nothing to resume"), "{stdout}");
    let (state, after): (String, Option<chrono::DateTime<chrono::Utc>>) =
        sqlx::query_as("SELECT state, finished_at FROM runs WHERE id = 1")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!((state.as_str(), after), ("done", finished));
}
