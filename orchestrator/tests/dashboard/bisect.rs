//! A bisection's page: the range drawn with each tested commit at its position, the
//! culprit marked, a skip as a cross, the numbers, the steps and the measurements.
//!
//! What a bisection in the lab stores is stood in: the measurements of a synthetic range
//! (9 commits, the 7th 10 % slower, the 5th not building) are decided by kreg's own
//! bisection code and stored through kreg's own store functions, as `kreg bisect` stores
//! them; the lab bisection itself is tests/bisect_standin.rs and tests/lab_bisect.rs.

use super::*;
use kreg::bisect::report::Commit;
use kreg::bisect::{Ask, Bisection, Role, Rules};
use kreg::failure::{Failed, FailureClass};
use kreg::store::bisect as sb;

const SCENARIO: &str = "name: bisect-page
hosts: { sut: { role: sut, transport: { kind: lab } } }
kernels: [ { name: tree, source: { git: /nowhere/linux, ref: v2 }, config: { base: tinyconfig } } ]
workloads: [ { name: hb, kind: hackbench } ]
";

async fn stand_in_bisection(db: &TestDb) -> i64 {
    let pool = kreg::store::open(db.url.parse().unwrap()).await.unwrap();
    let commits: Vec<Commit> = (0..9)
        .map(|i| Commit {
            hash: format!("abc{i}{}", "0".repeat(36)),
            subject: format!("sched: change number {i} <with markup & quotes\">"),
            author: "A U Thor <a@example.org>".into(),
        })
        .collect();
    let rules = Rules::default();
    let row = sb::BisectionRow {
        run_id: 0,
        kernel: "tree".into(),
        workload: "hb".into(),
        metric: "time".into(),
        variant: "default".into(),
        good: "v1".into(),
        bad: "v2".into(),
        commit_count: commits.len() as i32,
        rules: sqlx::types::Json(serde_json::to_value(rules).unwrap()),
        outcome: None,
    };
    let run = sb::record_bisection(
        &pool,
        &kreg::store::ScenarioText {
            name: "bisect-page",
            yaml: SCENARIO,
            source_path: "/nowhere/b.yaml",
            files: &[],
        },
        &row,
        &commits,
    )
    .await
    .unwrap();
    let mut b = Bisection::new(9, rules);
    let mut seq = 0;
    let mut panicked = false;
    let outcome = loop {
        match b.ask() {
            Ask::Measure { commit, role } => {
                seq += 1;
                let m = sb::Measurement {
                    seq,
                    commit_index: commit as i32,
                    role,
                    reverted: match role {
                        Role::Revert { culprit } => Some(culprit as i32),
                        _ => None,
                    },
                    kernel: format!("c{commit}"),
                    boot: seq,
                    value: None,
                    error: None,
                    failure_class: None,
                    compiled: false,
                    phases: None,
                };
                sb::ask_measurement(&pool, run, &m, &[]).await.unwrap();
                let value = match (commit, role) {
                    (4, _) => Err(Failed::new(
                        FailureClass::Build,
                        "boot failed: make bzImage failed (exit status: 2)",
                    )),
                    // A boot that panicked, tried again.
                    (6, Role::Step) if !panicked => {
                        panicked = true;
                        Err(Failed::new(
                            FailureClass::Kernel,
                            "the kernel panicked (Kernel panic - not syncing: test)",
                        ))
                    }
                    (_, Role::Revert { .. }) => Ok(1.0),
                    (c, _) => Ok(if c >= 6 { 1.1 } else { 1.0 } + 0.004 * ((seq * 7 % 5) as f64 - 2.0)),
                };
                sb::measured(&pool, run, seq, value.as_ref().map(|v| *v), seq < 6)
                    .await
                    .unwrap();
                b.record(commit, role, value);
            }
            Ask::Done(o) => break o,
        }
    };
    sb::set_outcome(&pool, run, &serde_json::to_value(&outcome).unwrap())
        .await
        .unwrap();
    run
}

#[tokio::test]
async fn a_bisection_page_draws_the_range_and_names_the_culprit() {
    let db = fresh_db("dash_bisect").await;
    let dir = Scratch::new("dash_bisect");
    let run = stand_in_bisection(&db).await;
    let server = Server::start(&db, &dir.0);
    let api: Value = reqwest::get(format!("{}/api/v1/runs/{run}/bisect", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(api["report"]["outcome"]["kind"], "culprit", "{api:#}");
    assert_eq!(
        api["report"]["culprit"]["subject"],
        "sched: change number 6 <with markup & quotes\">"
    );
    let b = Browser::start().await;
    visit(&b, &format!("{}/runs/{run}/bisect", server.base), "bisect").await;
    let result = b.text("dl.facts dd").await;
    assert!(result.starts_with("first bad commit abc600000000"), "{result}");
    let steps = b
        .js("return document.querySelectorAll('svg.bisect-range g.step').length")
        .await;
    let skips = b
        .js("return document.querySelectorAll('svg.bisect-range g.step.skip').length")
        .await;
    let culprit = b
        .js("return document.querySelectorAll('svg.bisect-range line.culprit').length")
        .await;
    assert_eq!(
        steps.as_u64(),
        Some(api["report"]["steps"].as_array().unwrap().len() as u64)
    );
    assert_eq!(skips.as_u64(), Some(1), "the commit that does not build is a cross");
    assert_eq!(culprit.as_u64(), Some(1));
    let log_rows = b
        .js("return document.querySelectorAll('#bisect-log tbody tr').length")
        .await;
    assert_eq!(
        log_rows.as_u64(),
        Some(api["measurements"].as_array().unwrap().len() as u64)
    );
    let steps_text = b.text("table.steps").await;
    assert!(steps_text.contains("boot failed: make bzImage failed"), "{steps_text}");
    // The run's page links to it.
    visit(&b, &format!("{}/runs/{run}", server.base), "bisect-run").await;
    let links = b.text("main").await;
    assert!(links.contains("This run is a bisection"), "{links}");
    b.close().await;
}
