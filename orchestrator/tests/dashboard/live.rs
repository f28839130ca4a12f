//! A run's job states reach an open page while the engine runs; every page and its
//! filters, in the browser.

use super::*;

#[tokio::test]
async fn a_live_run_in_the_browser() {
    let db = fresh_db("dash_live").await;
    let agent = Agent::start();
    let dir = Scratch::new("dash_live");
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, scenario(&agent)).unwrap();
    let server = Server::start(&db, &dir.0);
    let b = Browser::start().await;
    let base = &server.base;

    // The runs page, open before the run exists, shows it once it starts.
    b.client.goto(&format!("{base}/")).await.unwrap();
    assert!(b.text("main").await.contains("No runs yet"));
    let mut run = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        if n > 0 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no run recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let recorded = Instant::now();
    loop {
        let found = b
            .js("return document.querySelector('a[href=\"/runs/1\"]') !== null")
            .await;
        if found == json!(true) {
            break;
        }
        assert!(
            recorded.elapsed() < Duration::from_secs(2),
            "the new run did not reach the open runs page within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The run page follows every job's state while the engine runs.
    b.client.goto(&format!("{base}/runs/1")).await.unwrap();
    // The page is never loaded again while it follows the run: a mark left on it stays.
    b.js("window.keptMark = 42; return 0").await;
    let delays = watch_run(&b, &db, &mut run).await;
    assert!(run.wait().unwrap().success(), "kreg run failed");
    // Its facts follow from the run's live parts: the state and the progress, done.
    let t = Instant::now();
    loop {
        let facts = b
            .js("return [document.getElementById('run-state').innerText, document.getElementById('run-progress').innerText, window.keptMark || 0]")
            .await;
        if facts[0] == json!("done") && facts[1].as_str().is_some_and(|p| p.contains("10/10 done")) {
            assert_eq!(facts[2], json!(42), "the run page loaded itself again");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the run page's facts did not follow: {facts}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(delays.len() >= 10, "too few state changes watched: {}", delays.len());
    let worst = delays.iter().max().unwrap();
    eprintln!(
        "dashboard: {} state changes reached the page, the slowest in {worst:?}",
        delays.len()
    );
    assert!(b.console_errors().await.is_empty());

    // The finished run: kernels, variants, every cell done, provenance of the kernel.
    b.client.refresh().await.unwrap();
    let summary = b.text("#summary").await;
    assert!(
        summary.contains("current") && summary.contains("default, batch"),
        "{summary}"
    );
    assert!(summary.contains("10/10 done"), "{summary}");
    let states = page_states(&b).await;
    assert_eq!(states.len(), 10);
    assert!(states.iter().all(|(_, s)| s == "done"), "{states:?}");
    let kernel = b.text("h3.kernel").await;
    assert_eq!(kernel, "kernel current");

    // The runs page: the run, its scenario, done.
    b.client.goto(&format!("{base}/")).await.unwrap();
    let row = b.text("table.runs tbody tr").await;
    assert!(
        row.contains("dashboard-live") && row.contains("done") && row.contains("10/10 done"),
        "{row}"
    );

    // The comparison: the verdicts kreg report gives, row by row.
    let rep = report_json(&db, &dir.0, 1);
    b.client.goto(&format!("{base}/runs/1/report?show=all")).await.unwrap();
    let rows = b
        .js("return [...document.querySelectorAll('table.report tbody tr')].map(tr => [...tr.children].map(td => td.innerText.trim()))")
        .await;
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    let want: Vec<(String, String, String)> = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kernel"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["comparison"]["verdict"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[7].clone()))
        .collect();
    assert_eq!(got, want);
    let batch_verdict = want.iter().find(|w| w.1 == "batch").unwrap().2.clone();
    assert_eq!(batch_verdict, "improvement", "a 50% higher throughput under batch");

    // A filter changes the URL; that URL, loaded again, gives the same view.
    b.client.goto(&format!("{base}/runs/1/report")).await.unwrap();
    let select = b.client.find(Locator::Css("select[name=verdict]")).await.unwrap();
    select.select_by_value("improvement").await.unwrap();
    let t = Instant::now();
    while !b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .contains("verdict=improvement")
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the filter did not change the URL"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = b.client.current_url().await.unwrap().to_string();
    assert!(!url.contains("workload="), "empty filters stay out of the URL: {url}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let filtered = b.text("main").await;
    let verdicts = b
        .js("return [...document.querySelectorAll('table.report tbody tr')].map(tr => tr.children[7].innerText.trim())")
        .await;
    let verdicts: Vec<String> = serde_json::from_value(verdicts).unwrap();
    assert_eq!(
        verdicts,
        ["", "improvement"],
        "the baseline row and the improvement only"
    );
    b.client.goto(&url).await.unwrap();
    assert_eq!(b.text("main").await, filtered);
    let verdict_selected = b
        .js("return document.querySelector('select[name=verdict]').value")
        .await;
    assert_eq!(verdict_selected, json!("improvement"));

    // What the lab and kernel builds would have stored beside such a run (this machine has
    // no /proc/schedstat, and builds take minutes): real snapshots from 6.1 and 6.12, and
    // two build records, so that those pages are seen with data.
    stand_ins(&db).await;
    b.client
        .goto(&format!("{base}/runs/1/schedstat?detail=cpu"))
        .await
        .unwrap();
    let stats = b.text("main").await;
    for want in [
        "current/default (5 jobs)",
        "current/batch (5 jobs)",
        "avg wait per timeslice",
        "cpu0",
        "perf sched stats",
        "probe: current/batch against current/default",
        "fields zero in every job, not listed",
        "run_delay (ns)",
        "rq_cpu_time (ns)",
        "sched_count (calls)",
    ] {
        assert!(stats.contains(want), "schedstat page lacks {want:?}: {stats}");
    }
    // Times in a time unit scaled to their size, counters whole.
    let delay = b
        .js("return [...document.querySelectorAll('table.schedstat tbody tr')].find(tr => tr.children[0].innerText.startsWith('run_delay')).children[1].innerText")
        .await;
    let delay = delay.as_str().unwrap();
    let mut words = delay.split_whitespace();
    let (number, unit) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    assert!(
        number.parse::<f64>().is_ok() && ["s", "ms", "µs", "ns"].contains(&unit),
        "{delay:?}"
    );
    // Five jobs a side: the exact test of counts cannot reach alpha 0.005 with five against
    // five (its smallest p is 2/252), so nothing is called moved — not even sched_count, 40%
    // up — and every field that varies says "too few jobs"; nothing is in bold.
    let calls = b
        .js("return [...document.querySelectorAll('table.perfstats tbody tr')].map(tr => [tr.children[1].innerText.trim(), tr.children[8].innerText.trim(), tr.querySelector('strong') !== null])")
        .await;
    let calls: Vec<(String, String, bool)> = serde_json::from_value(calls).unwrap();
    assert!(calls.len() > 20, "{calls:?}");
    for (field, call, strong) in &calls {
        assert!(
            !*strong && (call == "too few jobs" || call == "same"),
            "{field}: {call} in {calls:?}"
        );
    }
    let sched = calls.iter().find(|c| c.0 == "sched_count").unwrap();
    assert_eq!(sched.1, "too few jobs", "{calls:?}");
    assert!(
        stats.contains("\"too few jobs\" where no test of that many jobs can reach"),
        "{stats}"
    );
    assert!(stats.contains("cross-check:"), "{stats}");
    b.js("document.getElementById('perf-sched-stats').scrollIntoView(); return 0")
        .await;
    std::fs::write(
        shots_dir().join("schedstat-perf-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    // The kernel's set-up: the variant's tuning, read back by the agent, and (stood in)
    // the cgroup and the perf events a lab run records.
    b.client.goto(&format!("{base}/runs/1")).await.unwrap();
    let page = b.text("main").await;
    for want in [
        "variant batch, here: dma_latency=0; online CPUs",
        "unavailable: governor (no cpufreq",
        "changed: here: dma_latency /dev/cpu_dma_latency",
        "variant batch, workload probe: cgroup quota 50% of 2 CPUs",
        "perf stat could not count: cycles <not supported>, instructions <not supported>",
    ] {
        assert!(page.contains(want), "run page lacks {want:?}: {page}");
    }
    // The run's bundle, from its link: a tar whose first member is the manifest.
    let bundle = b
        .client
        .execute_async(
            "const a = [...document.querySelectorAll('a')].find(a => a.innerText === 'Bundle (kreg export)');
             const done = arguments[arguments.length - 1];
             fetch(a.href).then(r => r.arrayBuffer().then(buf => done([r.status, a.getAttribute('href'),
               new TextDecoder().decode(new Uint8Array(buf, 0, 13)), buf.byteLength])));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(bundle[0], 200, "{bundle}");
    assert_eq!(bundle[1], "/runs/1/bundle", "{bundle}");
    assert_eq!(bundle[2], "manifest.json", "{bundle}");
    assert!(bundle[3].as_u64().unwrap() > 10_000, "{bundle}");
    b.client
        .goto(&format!("{base}/kernels/diff?a=key-a&b=key-b"))
        .await
        .unwrap();
    let diff = b.text("table.configdiff").await;
    assert!(
        diff.contains("CONFIG_PREEMPT") && diff.contains("CONFIG_HZ_250") && !diff.contains("CONFIG_SCHED_DEBUG"),
        "{diff}"
    );

    // Each report row links to the command lines its jobs ran, and says how to reproduce.
    b.client.goto(&format!("{base}/runs/1/report?show=all")).await.unwrap();
    let links = b
        .js("return [...document.querySelectorAll('small.row-links a')].filter(a => a.innerText === 'command lines').length")
        .await;
    let rows = b
        .js("return document.querySelectorAll('table.report tbody tr, table.comparison tbody tr').length")
        .await;
    assert!(
        links.as_u64().unwrap() >= 2 && links == rows,
        "{links} links for {rows} rows"
    );
    // Under each table's interval drawings their % axis; a legend says what the columns are.
    let axes = b
        .js("return [...document.querySelectorAll('table.report')].map(t => t.querySelector('tfoot svg.axis') ? t.querySelector('tfoot svg.axis').textContent : null)")
        .await;
    let axes = axes.as_array().unwrap();
    assert!(
        !axes.is_empty()
            && axes
                .iter()
                .all(|a| a.as_str().is_some_and(|a| a.contains('0') && a.contains('%'))),
        "{axes:?}"
    );
    let legend = b.text("p.reading").await;
    assert!(
        legend.contains("spread") && legend.contains("interval") && legend.contains("±2%"),
        "{legend}"
    );
    b.js("[...document.querySelectorAll('small.row-links a')].find(a => a.href.includes('variant=batch') && a.innerText === 'command lines').click(); return 0")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let url = b.client.current_url().await.unwrap();
    assert!(url.as_str().ends_with("variant=batch#commands"), "{url}");
    let cmds = b.text("pre.cmd").await;
    assert!(cmds.starts_with("here$ chrt -b 0 sh -c "), "{cmds}");
    let reproduce = b.text("#reproduce + p + pre.cmd").await;
    assert!(reproduce.starts_with("kreg run /"), "{reproduce}");
    dots_name_and_open_their_jobs(&b, base).await;

    // Every page: a title, no console error, fits 800 px, a screenshot at each width.
    let job: i64 = sqlx::query_scalar("SELECT min(id) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    for (path, name) in [
        ("/".to_string(), "runs"),
        ("/runs/1".to_string(), "run"),
        ("/runs/1/report".to_string(), "comparison"),
        ("/runs/1/report?show=all".to_string(), "comparison-all"),
        (
            "/runs/1/samples?workload=probe&metric=value&kernel=current&variant=batch".to_string(),
            "samples",
        ),
        ("/compare?a=1&b=1".to_string(), "compare"),
        ("/runs/1/schedstat?detail=domain".to_string(), "schedstat"),
        (format!("/jobs/{job}"), "job"),
        ("/kernels".to_string(), "kernels"),
        ("/kernels/key-a".to_string(), "kernel"),
        ("/kernels/diff?a=key-a&b=key-b".to_string(), "kernel-diff"),
        ("/history".to_string(), "history-choices"),
        (
            "/history?scenario=dashboard-live&workload=probe&metric=value".to_string(),
            "history",
        ),
        ("/runs/999".to_string(), "not-found"),
    ] {
        visit_allowing_status(&b, &format!("{base}{path}"), name).await;
    }
    b.close().await;
}

/// A report's strip of replicates, under a real mouse: the pointer over a dot names its
/// value and job, a click opens that job.
async fn dots_name_and_open_their_jobs(b: &Browser, base: &str) {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
    let row = "workload=probe&metric=value&kernel=current&variant=batch";
    let view: Value = reqwest::get(format!("{base}/api/v1/runs/1/samples?{row}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let samples: Vec<&Value> = view["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["warmup"] == false)
        .collect();
    b.client.goto(&format!("{base}/runs/1/report?show=all")).await.unwrap();
    for i in [samples.len() - 1, 0] {
        // Where dot i is in the window.
        let at = b
            .js(&format!(
                "const svg = document.querySelector('a[href*=\"variant=batch\"] > svg.strip');
                 svg.scrollIntoView({{block: 'center'}});
                 const box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
                 const d = [...svg.querySelector('path.dots').getAttribute('d').matchAll(/M([-\\d.]+) ([-\\d.]+)h0/g)][{i}];
                 return [box.left + d[1] * box.width / vb.width, box.top + d[2] * box.height / vb.height];"
            ))
            .await;
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        let moved = MouseActions::new("mouse".into()).then(PointerAction::MoveTo {
            duration: None,
            x: x.round(),
            y: y.round(),
        });
        b.client.perform_actions(moved).await.unwrap();
        let job = samples[i]["job_id"].as_i64().unwrap();
        let mut tip = String::new();
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tip = b
                .js("const t = document.getElementById('dot-tip'); return t.hidden ? '' : t.innerText")
                .await
                .as_str()
                .unwrap()
                .to_string();
            if tip.contains(&format!("job {job} ")) {
                break;
            }
        }
        let value = samples[i]["value"].as_f64().unwrap();
        assert!(
            tip.starts_with(&format!("{value} ")) && tip.contains(&format!("job {job} ")),
            "dot {i}: {tip}"
        );
    }
    let png = b.client.screenshot().await.unwrap();
    std::fs::write(shots_dir().join("comparison-dot.png"), png).unwrap();
    // A click on the dot under the pointer (the first) opens its job.
    let click = MouseActions::new("mouse".into())
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    b.client.perform_actions(click).await.unwrap();
    let job = samples[0]["job_id"].as_i64().unwrap();
    let mut url = String::new();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        url = b.client.current_url().await.unwrap().to_string();
        if url.ends_with(&format!("/jobs/{job}")) {
            break;
        }
    }
    assert!(url.ends_with(&format!("/jobs/{job}")), "{url}");
}
