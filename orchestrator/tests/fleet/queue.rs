//! The queue takes runs first in, first out among those a free machine could take: runs
//! waiting for the busy machine of one label never hold up a run whose machine is free.

use kreg_testkit::{fresh_db, Scratch};

use super::harness::{kreg_out, pool_entry, until_finished, LoggedAgent, Worker};

const SCENARIO: &str = r#"name: queue
hosts:
  sut: { role: sut, transport: { kind: lab } }
kernels: [ { name: current, source: running } ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "sleep 0.5; echo value: 1"]
    metrics: { value: { regex: "value: ([0-9]+)", higher_is_better: true } }
iterations: 1
"#;

#[tokio::test]
async fn a_run_whose_machine_is_free_is_not_held_up_behind_runs_of_another_label() {
    let db = fresh_db("fleet_queue").await;
    let dir = Scratch::new("fleet-queue");
    let agents: Vec<LoggedAgent> = ["x1", "y1"]
        .iter()
        .map(|n| LoggedAgent::start(&dir.0, n, "127.0.0.1", &[]))
        .collect();
    let pool = format!(
        "machines:\n{}{}",
        pool_entry("x1", "sut", &agents[0], "kind: x", None),
        pool_entry("y1", "sut", &agents[1], "kind: y", None)
    );
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    std::fs::write(dir.0.join("s.yaml"), SCENARIO).unwrap();
    let data = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");
    let s = dir.0.join("s.yaml");
    let s = s.to_str().unwrap();
    // Eighteen runs for the one x machine (more than a claim looks at in one go), then one
    // for the y machine.
    for n in 1..=18 {
        let (ok, out) = run(&["submit", s, "--label", "kind=x"]);
        assert!(ok && out.contains(&format!("run {n}:")), "{out}");
    }
    let (ok, out) = run(&["submit", s, "--label", "kind=y"]);
    assert!(ok && out.contains("run 19:"), "{out}");
    // One worker takes the first x run; a second one, started then, finds the y machine.
    let args = ["--lease", "10", "--poll", "0.2", "--until-empty"];
    let mut workers = vec![Worker::start(&db.url, &dir.0, "w0", None, &args)];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM run_slots WHERE state <> 'queued'")
        .fetch_one(&db.pool)
        .await
        .unwrap()
        == 0
    {
        assert!(std::time::Instant::now() < deadline, "{}", workers[0].text());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    workers.push(Worker::start(&db.url, &dir.0, "w1", None, &args));
    assert!(until_finished(&db.pool, 240).await, "{}", workers[0].text());
    let leased: Vec<(i64, String)> =
        sqlx::query_as("SELECT s.run_id, s.sut FROM run_slots s ORDER BY s.leased_at, s.run_id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let order: Vec<i64> = leased.iter().map(|r| r.0).collect();
    // The y run is taken while the first x run runs; the x runs in the order submitted.
    let y_at = order.iter().position(|r| *r == 19).unwrap();
    assert!(y_at <= 1, "run 19 waited behind the x runs: {order:?}");
    let xs: Vec<i64> = order.iter().copied().filter(|r| *r != 19).collect();
    assert_eq!(xs, (1..=18).collect::<Vec<i64>>(), "first in, first out: {order:?}");
    assert!(leased.iter().all(|(r, m)| (*r == 19) == (m == "y1")), "{leased:?}");
}
