//! The history page with a change point: thirteen real runs stepping up 5 % at the eighth
//! (testkit's `history::step_runs`), the alert they raised triaged through `kreg alerts`,
//! and the kernel's commits on each side of the step stood in (as a build of a git kernel
//! records them) so that the page gives the `kreg bisect` command for the range.

use super::*;

fn kreg_out(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = kreg(db, dir).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_history_marks_its_change_point_with_the_alert_and_the_bisect_command() {
    let db = fresh_db("dash_history").await;
    let dir = Scratch::new("dash_history");
    let agent = Agent::start();
    let raised = common::history::step_runs(&dir.0, &agent, |args| kreg_out(&db, &dir.0, args));
    assert_eq!(raised.len(), 1, "{raised:?}");
    // The commits a git kernel's runs record: one before the step, another from it on.
    let (good, bad) = ("1".repeat(40), "2".repeat(40));
    sqlx::query(
        "INSERT INTO kernel_builds (key, release, localversion, tree_hash, config_hash, patches_hash, compiler,
                                    build_id, built_on, path, config, build_log)
         VALUES ('key-h', '6.18.0-kreg', '-kreg', 'tree', 'c', 'none', 'gcc', 'id', 'controller', '/nowhere', '', '')",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO kernel_build_runs (build_key, run_id, kernel, git_commit)
         SELECT 'key-h', id, 'current', CASE WHEN id < $1 THEN $2 ELSE $3 END FROM runs",
    )
    .bind(common::history::STEP_RUN as i64)
    .bind(&good)
    .bind(&bad)
    .execute(&db.pool)
    .await
    .unwrap();
    let (code, _, err) = kreg_out(
        &db,
        &dir.0,
        &["alerts", "set", "1", "acknowledged", "--note", "<looked at>"],
    );
    assert_eq!(code, Some(0), "{err}");

    let server = Server::start(&db, &dir.0);
    let query = "scenario=steps&workload=probe&metric=latency";
    let api: Value = reqwest::get(format!("{}/api/v1/history?{query}", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let change = &api["lines"][0]["changes"][0];
    assert_eq!(
        (change["previous_run"].as_i64(), change["run"].as_i64()),
        (Some(7), Some(8)),
        "{api:#}"
    );
    assert_eq!(change["direction"], "regression");
    assert_eq!(api["lines"][0]["changes"].as_array().unwrap().len(), 1);
    assert_eq!(api["alerts"][0]["state"], "acknowledged");
    let command = api["alerts"][0]["bisect"]["Ok"]
        .as_str()
        .unwrap_or_else(|| panic!("{api:#}"));
    assert!(
        command.starts_with("kreg bisect ")
            && command.ends_with(&format!(
                "steps.yaml --kernel current --good {good} --bad {bad} --metric probe/latency --variant default"
            )),
        "{command}"
    );

    let b = Browser::start().await;
    visit(&b, &format!("{}/history?{query}", server.base), "history-alert").await;
    let marks = b
        .js("return document.querySelectorAll('svg.history line.mark.m-regression').length")
        .await;
    assert_eq!(marks.as_u64(), Some(1));
    let label = b.text("svg.history text.mark-label").await;
    assert!(label.starts_with("#1 +"), "{label}");
    let row = b.text("table.changes tbody tr").await;
    for part in [
        "current/default",
        "7 → 8",
        "regression +",
        "#1 acknowledged",
        "<looked at>",
        &good,
        &bad,
    ] {
        assert!(row.contains(part), "{part:?} not in {row}");
    }
    // Every alert across histories: /alerts lists it with its triage state, its change
    // and interval, its runs, its history and the command that bisects it.
    visit(&b, &format!("{}/alerts", server.base), "alerts").await;
    let row = b.text("table.alerts tbody tr").await;
    for part in [
        "#1",
        "acknowledged",
        "<looked at>",
        "steps",
        "probe/latency",
        "current/default",
        "regression +",
        "7 → 8",
        &good,
        &bad,
    ] {
        assert!(row.contains(part), "{part:?} not in {row}");
    }
    let counts = b.text("main p.links").await;
    assert!(
        counts.contains("new (0)") && counts.contains("acknowledged (1)"),
        "{counts}"
    );
    let listed: Value = reqwest::get(format!("{}/api/v1/alerts?state=new", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["alerts"].as_array().unwrap().len(), 0, "{listed:#}");
    assert_eq!(listed["counts"][1], json!(["acknowledged", 1]), "{listed:#}");
    let bad_state = reqwest::get(format!("{}/api/v1/alerts?state=bogus", server.base))
        .await
        .unwrap();
    assert_eq!(bad_state.status().as_u16(), 400);
    // The two runs around the step, both sides in the page: every value of each as text.
    // Between them the tool was upgraded (as a stored job says): the environments say so.
    for (run, version) in [(7, "coreutils 9.1"), (8, "coreutils 9.4")] {
        sqlx::query("UPDATE jobs SET tool_versions = jsonb_build_object('cat@here', $2::text) WHERE run_id = $1")
            .bind(run as i64)
            .bind(version)
            .execute(&db.pool)
            .await
            .unwrap();
    }
    visit(
        &b,
        &format!("{}/compare?a=7&b=8&sort=verdict", server.base),
        "compare-both",
    )
    .await;
    let sides = b
        .js("return [...document.querySelectorAll('table.both tbody tr td .side')].map(d => [d.querySelector('b').innerText, d.querySelector('small.values').innerText])")
        .await;
    let level = |run: usize| {
        let noise = [0.4, -1.1, 0.7, -0.2, 1.3, -0.8, 0.1, -1.2][run - 1];
        let base = if run >= common::history::STEP_RUN { 105.0 } else { 100.0 };
        format!("{:.2}", base * (1.0 + noise / 100.0))
    };
    let (seven, eight) = (level(7), level(8));
    assert_eq!(
        sides,
        json!([[seven, format!("{seven} {seven}")], [eight, format!("{eight} {eight}")]]),
        "{sides}"
    );
    // Every aspect of the two environments listed, what differs first.
    let env = b
        .js("return [...document.querySelectorAll('#environment table.environment tbody tr')].map(tr => [...tr.children].map(td => td.innerText))")
        .await;
    let env = env.as_array().unwrap();
    assert_eq!(env.len(), 7, "{env:?}");
    assert_eq!(
        env[0],
        json!([
            "current",
            "tool versions",
            "cat@here coreutils 9.1",
            "cat@here coreutils 9.4",
            "differs"
        ]),
        "{env:?}"
    );
    assert!(env[1..].iter().all(|r| r[4] == "same"), "{env:?}");
    assert!(b.text("#environment h2").await.contains("1 of 7 aspects differ"));
    b.js("document.getElementById('environment').scrollIntoView(); return 0")
        .await;
    let png = b.client.screenshot().await.unwrap();
    std::fs::write(shots_dir().join("compare-both-environment-390.png"), png).unwrap();
    // Two runs a side of one value each: too few to judge, and the page says so.
    let verdict = b.text("table.both td .verdict").await;
    assert_eq!(verdict, "inconclusive");
    let api: Value = reqwest::get(format!("{}/api/v1/compare?a=7&b=8", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let base_samples: Vec<f64> = serde_json::from_value(api["rows"][0]["base"]["samples"].clone()).unwrap();
    assert_eq!(base_samples.len(), 2, "{api:#}");
    assert_eq!(format!("{:.2}", base_samples[0]), seven);
    assert_eq!(api["rows"][0]["base"]["run"], 7);
    let env = api["environment"].as_array().unwrap();
    assert_eq!(env.len(), 7, "{api:#}");
    assert_eq!(env.iter().filter(|e| e["same"] == false).count(), 1, "{api:#}");
    let bad = reqwest::get(format!("{}/compare?a=7&b=8&sort=size", server.base))
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);

    // In dark mode: the page's own dark colours, and the marks still stand out.
    b.dark(true).await;
    b.client.set_window_size(1280, 900).await.unwrap();
    b.client
        .goto(&format!("{}/history?{query}", server.base))
        .await
        .unwrap();
    let colours = b
        .js("const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]")
        .await;
    assert_eq!(colours, json!(["rgb(21, 24, 30)", "rgb(222, 226, 230)"]));
    std::fs::write(
        shots_dir().join("history-alert-dark-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    b.dark(false).await;
    // Keyboard: the first Tab lands on a link, with a visible focus ring.
    b.js("document.activeElement.blur(); return 0").await;
    b.client
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{E004}")
        .await
        .unwrap();
    let focus = b
        .js("const e = document.activeElement; return [e.tagName, getComputedStyle(e).outlineStyle]")
        .await;
    assert_eq!(focus, json!(["A", "solid"]), "{focus}");
    b.close().await;
}
