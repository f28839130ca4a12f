//! A submitted run carries its files: the workers take them from the database, not from the
//! submitter's paths, which may change or vanish once the run is queued.

use kreg_testkit::{fresh_db, Scratch};

use super::harness::{kreg_out, pool_entry, until_finished, LoggedAgent, Worker};

#[tokio::test]
async fn workers_run_the_tool_the_submission_stored() {
    let db = fresh_db("fleet_carried").await;
    let dir = Scratch::new("fleet-carried");
    let agents: Vec<LoggedAgent> = ["m1", "m2"]
        .iter()
        .map(|n| LoggedAgent::start(&dir.0, n, "127.0.0.1", &[]))
        .collect();
    let mut pool = String::from("machines:\n");
    for (i, m) in ["m1", "m2"].iter().enumerate() {
        pool += &pool_entry(m, "sut", &agents[i], "cpu: any", None);
    }
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    // The submitter's folder: the scenario and its tool.
    let mine = dir.0.join("submitter");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("uptool.sh"), "#!/bin/sh\necho 'value: 41'\n").unwrap();
    let bin = dir.0.join("bin");
    let scenario = format!(
        r#"name: carried
hosts:
  sut: {{ role: sut, transport: {{ kind: lab }} }}
kernels: [ {{ name: current, source: running }} ]
tools:
  - {{ name: uptool, on: [sut], install_dir: "{}", from: {{ upload: uptool.sh }} }}
workloads:
  - name: up
    kind: command
    argv: ["uptool"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: 4
"#,
        bin.display()
    );
    std::fs::write(mine.join("s.yaml"), &scenario).unwrap();
    let data = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["submit", mine.join("s.yaml").to_str().unwrap(), "--pairs", "2"]);
    assert!(ok && out.contains("run 1:"), "{out}");
    // The submitter's files change, then go, before any worker starts.
    std::fs::write(mine.join("uptool.sh"), "#!/bin/sh\necho 'value: 99'\n").unwrap();
    std::fs::remove_dir_all(&mine).unwrap();
    let workers: Vec<Worker> = (0..2)
        .map(|i| {
            Worker::start(
                &db.url,
                &dir.0,
                &format!("w{i}"),
                None,
                &["--lease", "10", "--poll", "0.3", "--until-empty"],
            )
        })
        .collect();
    assert!(until_finished(&db.pool, 120).await, "{}", workers[0].text());
    let values: Vec<(String, f64)> = sqlx::query_as(
        "SELECT j.machine, r.value FROM results r JOIN jobs j ON j.id = r.job_id WHERE j.state = 'done' ORDER BY j.id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(values.len(), 4, "{values:?}");
    assert!(values.iter().all(|(_, v)| *v == 41.0), "{values:?}");
    let machines: std::collections::BTreeSet<&str> = values.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(machines.len(), 2, "{values:?}");
    // A scenario naming a file the submitter does not have is refused at submit.
    let elsewhere = dir.0.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("s.yaml"), &scenario).unwrap();
    let (ok, out) = run(&["submit", elsewhere.join("s.yaml").to_str().unwrap()]);
    assert!(!ok && out.contains("uptool.sh"), "{out}");
    assert!(!out.contains("run 2:"), "{out}");
    // A git source written as a path would be read on the worker's host: refused at submit.
    let local = scenario.replace(
        "from: { upload: uptool.sh }",
        "from: { git: /src/tool, ref: v1, build: [make], binary: t }",
    );
    std::fs::write(elsewhere.join("g.yaml"), local).unwrap();
    let (ok, out) = run(&["submit", elsewhere.join("g.yaml").to_str().unwrap()]);
    assert!(
        !ok && out.contains("git source(s) /src/tool are paths, not URLs") && out.contains("nothing queued"),
        "{out}"
    );
}
