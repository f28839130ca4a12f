//! The queue takes runs first in, first out among those a free machine could take: runs
//! waiting for the busy machine of one label never hold up a run whose machine is free. A
//! slot that takes a machine kills what an earlier holder left running there.

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

/// The `sleep 300` processes of this host whose environment has `KEY=VALUE` for each pair
/// given.
fn marked(with: &[(&str, &str)]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x00300\x00"))
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
            with.iter().all(|(k, v)| {
                vars.iter()
                    .any(|kv| kv.starts_with(format!("{k}=").as_bytes()) && kv.ends_with(v.as_bytes()))
            })
        })
        .collect()
}

/// A machine whose `kreg run` stalled mid-job (SIGSTOP: its request stays open, its job
/// runs on), given to the fleet: the slot that takes it kills what that holder left running
/// there, and only what this machine's agent started.
#[tokio::test]
async fn a_slot_taking_a_machine_kills_what_its_earlier_holder_left() {
    let db = fresh_db("fleet_leftover").await;
    let dir = Scratch::new("fleet-leftover");
    let agents: Vec<LoggedAgent> = ["m1", "other"]
        .iter()
        .map(|n| LoggedAgent::start(&dir.0, n, "127.0.0.1", &[]))
        .collect();
    let data = dir.0.join("cli");
    let token = dir.0.join("token");
    let direct = format!(
        "name: direct\nhosts:\n  sut: {{ role: sut, transport: {{ kind: http, url: \"{}\", token_file: \"{}\" }} }}\nkernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - {{ name: w, kind: command, argv: [sh, -c, \"sleep 300; echo value: 1\"], metrics: {{ value: {{ regex: \"value: ([0-9]+)\", higher_is_better: true }} }}, timeout: 10m }}\niterations: 1\n",
        agents[0].url,
        token.display()
    );
    std::fs::write(dir.0.join("direct.yaml"), &direct).unwrap();
    // The other agent runs a process of another owner too: it must survive.
    let other = direct
        .replace(&agents[0].url, &agents[1].url)
        .replace("name: direct", "name: other");
    std::fs::write(dir.0.join("other.yaml"), other).unwrap();
    let mut runs: Vec<std::process::Child> = ["direct.yaml", "other.yaml"]
        .iter()
        .map(|f| {
            super::harness::kreg_at(&db.url, &data)
                .arg("run")
                .arg(dir.0.join(f))
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(dir.0.join(format!("{f}.log"))).unwrap())
                .spawn()
                .unwrap()
        })
        .collect();
    let agent_id = |a: &LoggedAgent| {
        std::fs::read_to_string(a.data.join("agent-id"))
            .unwrap()
            .trim()
            .to_string()
    };
    let (id1, id2) = (agent_id(&agents[0]), agent_id(&agents[1]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while marked(&[("KREG_AGENT_ID", &id1)]).is_empty() || marked(&[("KREG_AGENT_ID", &id2)]).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the direct runs' jobs never started: {}",
            std::fs::read_to_string(dir.0.join("direct.yaml.log")).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for r in &runs {
        // SAFETY: kill takes no pointers; the test's own child.
        unsafe { libc::kill(r.id() as i32, libc::SIGSTOP) };
    }
    let left = marked(&[("KREG_AGENT_ID", &id1)]);
    assert!(!left.is_empty(), "the stalled run's job runs on m1");

    let pool = format!("machines:\n{}", pool_entry("m1", "sut", &agents[0], "kind: x", None));
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    std::fs::write(dir.0.join("s.yaml"), SCENARIO).unwrap();
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["submit", dir.0.join("s.yaml").to_str().unwrap()]);
    assert!(ok && out.contains("run 3:"), "{out}");
    let w = Worker::start(
        &db.url,
        &dir.0,
        "w0",
        None,
        &["--lease", "10", "--poll", "0.2", "--until-empty"],
    );
    assert!(until_finished_run(&db.pool, 3, 120).await, "{}", w.text());
    let said = w.text();
    assert!(
        said.contains("sut: killed what an earlier holder of the machine left running: "),
        "{said}"
    );
    // Gone, or a zombie its parent has not reaped yet: not running.
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|st| st.rsplit(") ").next().map(|rest| !rest.starts_with('Z')))
            .unwrap_or(false)
    };
    for pid in &left {
        assert!(!running(pid), "pid {pid} lives on\n{said}");
    }
    // The other agent's process, of another owner, was not this machine's to kill.
    let kept = marked(&[("KREG_AGENT_ID", &id2)]);
    assert!(!kept.is_empty(), "another agent's process was killed");
    for pid in kept {
        // SAFETY: kill takes no pointers; the test's own leftover.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    for r in &mut runs {
        r.kill().unwrap();
        r.wait().unwrap();
    }
}

/// Waits until run `id` has finished (done or failed), up to `secs`.
async fn until_finished_run(db: &sqlx::PgPool, id: i64, secs: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
            .bind(id)
            .fetch_one(db)
            .await
            .unwrap();
        if state == "done" || state == "failed" {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    false
}
