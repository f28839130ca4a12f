//! The fleet page: the queue, each machine (free or leased by which worker, since when, its
//! last heartbeat) and each worker, with a real `kreg worker` holding a lease on one of two
//! loopback agents while another run waits.

use super::*;

#[tokio::test]
async fn the_fleet_page_shows_the_queue_the_machines_and_the_workers() {
    let db = fresh_db("dash_fleet").await;
    let dir = Scratch::new("dash_fleet");
    let (a, b) = (Agent::start(), Agent::start());
    let pool = format!(
        "machines:\n  epyc-1: {{ role: sut, labels: {{ cpu: epyc, numa: \"2\" }}, transport: {{ kind: http, url: \"{}\", token_file: \"{}\" }} }}\n  epyc-2: {{ role: sut, labels: {{ cpu: epyc, numa: \"2\" }}, about: {{ serial: J-7 }}, transport: {{ kind: http, url: \"{}\", token_file: \"{}\" }} }}\n",
        a.url,
        a.token_file.display(),
        b.url,
        b.token_file.display()
    );
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    let scenario = "name: long\nhosts:\n  sut: { role: sut, transport: { kind: lab } }\nkernels: [ { name: current, source: running } ]\nworkloads:\n  - { name: w, kind: command, argv: [sleep, \"60\"], timeout: 120, metrics: { value: { regex: \"(x)?\", higher_is_better: true } } }\niterations: 2\n";
    std::fs::write(dir.0.join("long.yaml"), scenario).unwrap();
    let run = |args: &[&str]| {
        let out = kreg(&db, &dir.0).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "kreg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let file = dir.0.join("long.yaml");
    run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    run(&["submit", file.to_str().unwrap()]);
    run(&["submit", file.to_str().unwrap(), "--pairs", "2"]);
    let mut worker = kreg(&db, &dir.0)
        .args(["worker", "--name", "lab-worker-1", "--lease", "30", "--poll", "0.3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The worker holds run 1's slot (its job sleeps a minute); run 2 waits for machines.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM jobs WHERE state = 'running'")
        .fetch_one(&db.pool)
        .await
        .unwrap()
        == 0
    {
        assert!(Instant::now() < deadline, "the worker never started a job");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The free machine drained by hand: shown in maintenance, with why.
    run(&["machines", "drain", "epyc-2", "--reason", "fan <replaced>"]);
    let server = Server::start(&db, &dir.0);
    let api: Value = reqwest::get(format!("{}/api/v1/fleet", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let leased: Vec<&Value> = api["machines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["leased"] == true)
        .collect();
    assert_eq!(leased.len(), 1, "{api:#}");
    let described: Vec<&Value> = api["machines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["about"]["serial"] == "J-7")
        .collect();
    assert_eq!(described.len(), 1, "{api:#}");
    assert!(described[0]["labels"].get("serial").is_none(), "{api:#}");
    assert_eq!(api["workers"][0]["name"], "lab-worker-1", "{api:#}");
    assert_eq!(api["workers"][0]["holding"], 1, "{api:#}");
    let queue = api["queue"].as_array().unwrap();
    assert_eq!(queue.len(), 3, "{api:#}");
    assert_eq!(
        (queue[0]["run_id"].as_i64(), queue[0]["state"].as_str()),
        (Some(1), Some("leased"))
    );
    assert_eq!(queue[0]["sut"], leased[0]["name"]);
    assert!(queue[1..].iter().all(|s| s["state"] == "queued"), "{api:#}");

    let b = Browser::start().await;
    visit(&b, &format!("{}/fleet", server.base), "fleet").await;
    let machines = b.text("table.machines").await;
    assert!(
        machines.contains("leased by worker 1") && machines.contains("free"),
        "{machines}"
    );
    assert!(machines.contains("cpu=epyc, numa=2"), "{machines}");
    assert!(machines.contains("about: serial=J-7"), "{machines}");
    assert!(
        machines.contains("maintenance since") && machines.contains("fan <replaced>"),
        "{machines}"
    );
    let drained: Vec<&Value> = api["machines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["health"] == "maintenance")
        .collect();
    assert_eq!(drained.len(), 1, "{api:#}");
    assert_eq!(drained[0]["name"], "epyc-2");
    // Left at a phone's width: the machines' table says which of its columns are out of
    // sight (its last ones, health and record, at least).
    let hint = b
        .js("const h = document.querySelector('table.machines').closest('.scroll').previousElementSibling; return h && !h.hidden ? h.textContent : ''")
        .await;
    let hint = hint.as_str().unwrap_or("").to_string();
    assert!(
        hint.contains("swipe it sideways") && hint.contains("health, record)"),
        "{hint}"
    );
    let queue = b.text("table.queue").await;
    assert!(
        queue.contains("run 1") && queue.contains("leased") && queue.contains("queued"),
        "{queue}"
    );
    let workers = b.text("table.workers").await;
    assert!(
        workers.contains("lab-worker-1") && workers.contains("s ago"),
        "{workers}"
    );
    // The navigation leads there from any page.
    b.client.goto(&format!("{}/", server.base)).await.unwrap();
    b.client
        .find(Locator::LinkText("Fleet"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert!(b.client.current_url().await.unwrap().as_str().ends_with("/fleet"));
    b.close().await;
    let _ = worker.kill();
    let _ = worker.wait();
}
