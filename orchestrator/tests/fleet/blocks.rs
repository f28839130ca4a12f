//! A scenario spread over three pairs whose machines differ by a fixed offset gives the
//! verdicts it gives on one pair (the report compares within each machine); machines of
//! different labels are mixed only when the submission allows it, and the report says so.

use kreg_testkit::{fresh_db, Scratch};

use super::harness::{kreg_out, pool_entry, until_finished, LoggedAgent, Worker};

/// A command workload whose value is 1000 + the agent's OFFSET + 60 under SCHED_BATCH,
/// with noise of about 10 (the sum of four uniforms from /dev/urandom).
const SCENARIO: &str = r#"name: offsets
hosts:
  sut: { role: sut, transport: { kind: lab } }
kernels: [ { name: current, source: running } ]
variants: [ { name: default }, { name: batch, policy: batch }, { name: idle, policy: idle } ]
workloads:
  - name: probe
    kind: command
    argv: [sh, -c, "d=0; chrt -p $$ | grep -q SCHED_BATCH && d=60; n=$(od -An -N8 -tu2 /dev/urandom | awk '{s=0; for(i=1;i<=NF;i++) s+=$i/65536; print s}'); awk -v o=${OFFSET:-0} -v d=$d -v n=$n 'BEGIN{printf \"value: %.3f\\n\", 1000+o+d+(n-2)*17}'"]
    metrics: { value: { regex: "value: ([0-9.]+)", higher_is_better: true } }
iterations: 12
"#;

/// The verdicts of a run's report, row by row: "variant verdict".
fn verdicts(url: &str, data: &std::path::Path, run: &str) -> Vec<String> {
    let (ok, out) = kreg_out(url, data, &["report", run, "--format", "json"]);
    assert!(ok, "{out}");
    let start = out.find('{').unwrap();
    let v: serde_json::Value = serde_json::Deserializer::from_str(&out[start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    let mut out = Vec::new();
    for r in v["rows"].as_array().unwrap() {
        if let Some(c) = r.get("comparison").filter(|c| !c.is_null()) {
            out.push(format!(
                "{} {}",
                r["variant"].as_str().unwrap(),
                c["verdict"].as_str().unwrap()
            ));
        }
    }
    out
}

#[tokio::test]
async fn three_pairs_with_offsets_judge_as_one_pair_and_labels_are_not_mixed_unasked() {
    let db = fresh_db("fleet_blocks").await;
    let dir = Scratch::new("fleet-blocks");
    let agents: Vec<LoggedAgent> = [("one", 0), ("m1", 0), ("m2", 250), ("m3", -180), ("odd", 0)]
        .iter()
        .map(|(n, o)| LoggedAgent::start(&dir.0, n, "127.0.0.1", &[("OFFSET", o.to_string())]))
        .collect();
    let mut pool = String::from("machines:\n");
    pool += &pool_entry("one", "sut", &agents[0], "cpu: solo", None);
    // Each epyc has a serial of its own: it describes the machine and is never compared,
    // so the three still serve one run.
    for (i, m) in ["m1", "m2", "m3"].iter().enumerate() {
        let entry = pool_entry(m, "sut", &agents[i + 1], "cpu: epyc", None);
        pool += &entry.replace(
            "labels: { cpu: epyc }",
            &format!("labels: {{ cpu: epyc }}, about: {{ serial: SN-{i} }}"),
        );
    }
    pool += &pool_entry("odd", "sut", &agents[4], "cpu: xeon", None);
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    std::fs::write(dir.0.join("s.yaml"), SCENARIO).unwrap();
    let data = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok && out.contains("m2: sut cpu=epyc (about serial=SN-1)"), "{out}");
    let s = dir.0.join("s.yaml");
    let s = s.to_str().unwrap();
    // Asking for a serial is asking for a label no machine has: serials only describe.
    let (ok, out) = run(&["submit", s, "--label", "serial=SN-1"]);
    assert!(
        !ok && out.contains("the pool has 0 SUTs with labels serial=SN-1 (want 1)"),
        "{out}"
    );
    let (ok, out) = run(&["submit", s, "--label", "cpu=solo"]);
    assert!(ok && out.contains("run 1:"), "{out}");
    let (ok, out) = run(&["submit", s, "--pairs", "3", "--label", "cpu=epyc"]);
    assert!(ok && out.contains("run 2:"), "{out}");
    // Three pairs among machines of two kinds: refused, nothing queued.
    let (ok, out) = run(&["submit", s, "--pairs", "3", "--label", "cpu=solo"]);
    assert!(
        !ok && out.contains("the pool has 1 SUTs with labels cpu=solo (want 3)"),
        "{out}"
    );
    let (ok, out) = run(&["submit", s, "--pairs", "4"]);
    assert!(
        !ok && out.contains("no 4 of the pool's SUTs have the same labels") && out.contains("nothing queued"),
        "{out}"
    );
    // Allowed: run 3 mixes kinds.
    let (ok, out) = run(&["submit", s, "--pairs", "5", "--mix-labels"]);
    assert!(ok && out.contains("run 3:"), "{out}");
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
    assert!(until_finished(&db.pool, 240).await, "{}", workers[0].text());
    let one = verdicts(&db.url, &data, "1");
    let three = verdicts(&db.url, &data, "2");
    assert_eq!(one, vec!["batch improvement", "idle no change"], "one pair");
    assert_eq!(three, one, "three pairs with offsets 0, +250, -180");
    // Every job of run 2 on its slot's machine, each machine a third of them.
    let per: Vec<(String, i64)> =
        sqlx::query_as("SELECT machine, count(*) FROM jobs WHERE run_id = 2 GROUP BY machine ORDER BY machine")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(per, vec![("m1".into(), 12), ("m2".into(), 12), ("m3".into(), 12)]);
    let (_, text) = run(&["report", "2"]);
    assert!(
        text.contains("machines: 3 (m1, m2, m3): every row is compared with its baseline within each machine"),
        "{text}"
    );
    assert!(!text.contains("of different labels were mixed"), "{text}");
    let (_, text) = run(&["report", "3"]);
    assert!(
        text.contains("machines of different labels were mixed in this run"),
        "{text}"
    );
    // A submitted run is resumed by queueing its failed slots (none here), not driven here.
    let (ok, out) = run(&["resume", "2"]);
    assert!(
        ok && out.contains("run 2: a submitted run; 0 failed slot(s) queued again"),
        "{out}"
    );
    // Idle workers say they are alive at each look at the queue: one killed is shown gone
    // once silent for three of its heartbeats (here 1 s apart), one idle beside it is not.
    let idle: Vec<Worker> = ["idle-live", "idle-killed"]
        .iter()
        .map(|n| Worker::start(&db.url, &dir.0, n, None, &["--lease", "3", "--poll", "0.3"]))
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !idle.iter().all(|w| w.text().contains(") up, lease 3 s")) {
        assert!(std::time::Instant::now() < deadline, "{}", idle[1].text());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    idle[1].signal("KILL");
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let (_, status) = run(&["status"]);
    assert!(
        status.contains("queue (slots of runs not finished):\n  empty")
            && status.contains("m2 ")
            && status.contains("workers"),
        "{status}"
    );
    let line = |name: &str| status.lines().find(|l| l.contains(name)).unwrap_or("").to_string();
    assert!(line("idle-killed").contains("GONE: silent for "), "{status}");
    assert!(line("idle-live").contains("last heartbeat "), "{status}");
    assert!(line(" w0 ").contains("stopped "), "{status}");
}

/// One agent listed under two addresses that no rewriting makes equal (127.0.0.1 and
/// 127.0.0.2, the agent listening on every address) is told by the id it reports: the
/// second entry is refused, in the file and against the pool, and nothing is added; an
/// entry whose agent is down is added with a word that it was not checked.
#[tokio::test]
async fn one_agent_under_two_addresses_is_refused_by_the_id_it_reports() {
    let db = fresh_db("fleet_twice").await;
    let dir = Scratch::new("fleet-twice");
    let agent = LoggedAgent::start(&dir.0, "x", "0.0.0.0", &[]);
    let other = LoggedAgent::start(&dir.0, "y", "127.0.0.1", &[]);
    let port = agent.url.rsplit(':').next().unwrap().to_string();
    let id = std::fs::read_to_string(agent.data.join("agent-id")).unwrap();
    assert_eq!(id.trim().len(), 32, "{id:?}");
    let entry = |name: &str, host: &str, port: &str| {
        format!("  {name}: {{ role: sut, transport: {{ kind: http, url: \"http://{host}:{port}\", token_file: token }} }}\n")
    };
    let data = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let write = |file: &str, text: String| {
        let p = dir.0.join(file);
        std::fs::write(&p, format!("machines:\n{text}")).unwrap();
        p.to_str().unwrap().to_string()
    };
    let both = write(
        "both.yaml",
        entry("a", "127.0.0.1", &port) + &entry("b", "127.0.0.2", &port),
    );
    let (ok, out) = run(&["machines", "add", &both]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "machine `b` reaches the same agent as machine `a` (agent id {}…)",
            &id[..12]
        )) && out.contains("no machine added"),
        "{out}"
    );
    let (_, list) = run(&["machines", "list"]);
    assert!(list.contains("no machines"), "{list}");
    // Two agents on one host are two machines; an agent that is down is not checked.
    let gone = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let first = write(
        "first.yaml",
        entry("a", "127.0.0.1", &port)
            + &entry("c", "127.0.0.1", other.url.rsplit(':').next().unwrap())
            + &entry("down", "127.0.0.1", &gone.to_string()),
    );
    let (ok, out) = run(&["machines", "add", &first]);
    assert!(ok, "{out}");
    assert!(
        out.contains("machine `down`: its agent was not reached") && out.contains("3 machine(s) in the pool"),
        "{out}"
    );
    // Another file that names the same agent under another name and address.
    let second = write("second.yaml", entry("b", "127.0.0.2", &port));
    let (ok, out) = run(&["machines", "add", &second]);
    assert!(
        !ok && out.contains("machine `b` reaches the same agent as machine `a`, already in the pool"),
        "{out}"
    );
    // The same machine added again (its pool file edited) is itself, not a twin.
    let (ok, out) = run(&["machines", "add", &first]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["machines", "remove", "a"]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["machines", "add", &second]);
    assert!(ok, "{out}");
}
