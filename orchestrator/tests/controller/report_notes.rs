//! What reports say besides their tables, on runs against a real agent: failed cells with
//! their reasons in every format; two runs whose workloads differ by content compared only
//! where they are alike; the schedstat switch kreg turns on, put back and listed, or a
//! kernel without /proc/schedstat said once.

use common::{fresh_db, kreg, Agent, Scratch, TestDb};
use kreg_testkit as common;

fn scenario(agent: &Agent, second_argv: &str) -> String {
    format!(
        r#"
name: notes
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: [ {{ name: default }}, {{ name: batch, policy: batch }} ]
workloads:
  - {{ name: good, kind: command, argv: [sh, -c, "echo value: 1"], metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }} }}
  - {{ name: other, kind: command, argv: {second_argv}, metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }} }}
iterations: 2
"#,
        hosts = agent.hosts_yaml(),
    )
}

fn run(db: &TestDb, dir: &Scratch, name: &str, text: &str) -> (Option<i32>, String, String) {
    let file = dir.0.join(name);
    std::fs::write(&file, text).unwrap();
    let out = kreg(db, &dir.0).arg("run").arg(&file).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kreg_out(db: &TestDb, dir: &Scratch, args: &[&str]) -> (Option<i32>, String, String) {
    let out = kreg(db, &dir.0).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn failed_cells_are_listed_in_every_format() {
    let db = fresh_db("notes_failed").await;
    let agent = Agent::start();
    let dir = Scratch::new("notes-failed");
    let (code, _, err) = run(
        &db,
        &dir,
        "a.yaml",
        &scenario(&agent, r#"[sh, -c, "echo broken >&2; exit 7"]"#),
    );
    assert_eq!(code, Some(3), "{err}");
    for format in ["text", "markdown", "csv", "json"] {
        let (code, out, err) = kreg_out(&db, &dir, &["report", "1", "--format", format]);
        assert_eq!(code, Some(0), "{err}");

        match format {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                let failed = v["failed"].as_array().unwrap();
                assert_eq!(failed.len(), 2, "{out}");
                assert_eq!(failed[0]["workload"], "other");
                assert_eq!(failed[0]["failed"], 2);
                assert!(
                    failed[0]["reasons"][0]
                        .as_str()
                        .unwrap()
                        .contains("exited with status 7: broken"),
                    "{out}"
                );
                let warnings = v["warnings"].as_array().unwrap();
                assert!(
                    warnings.iter().any(|w| w.as_str().unwrap().contains("4 job(s) failed")),
                    "{out}"
                );
            }
            "csv" => {
                let rows: Vec<&str> = out.lines().filter(|l| l.contains(",failed,")).collect();
                assert_eq!(rows.len(), 2, "{out}");
                assert!(
                    rows[0].starts_with("other,,,,,current,default,") && rows[0].contains("2 of 2 jobs failed"),
                    "{out}"
                );
            }
            _ => {
                for variant in ["default", "batch"] {
                    let line = format!("kernel current, variant {variant}, workload other: 2 of 2 jobs failed: ");
                    assert!(out.contains(&line), "{format}: {out}");
                }
                assert!(
                    out.contains("exited with status 7: broken") && out.contains("4 job(s) failed"),
                    "{format}: {out}"
                );
            }
        }
    }
}

#[tokio::test]
async fn compare_takes_only_workloads_defined_alike() {
    let db = fresh_db("notes_compare").await;
    let agent = Agent::start();
    let dir = Scratch::new("notes-compare");
    let (code, _, err) = run(&db, &dir, "a.yaml", &scenario(&agent, r#"[sh, -c, "echo value: 2"]"#));
    assert_eq!(code, Some(0), "{err}");
    // Same scenario name, the second workload changed: it must not be compared.
    let (code, _, err) = run(&db, &dir, "b.yaml", &scenario(&agent, r#"[sh, -c, "echo value: 20"]"#));
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = kreg_out(&db, &dir, &["compare", "1", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("WARNING: workloads `other` differs between run 1 and run 2 (argv: [sh, -c, echo value: 2] → [sh, -c, echo value: 20]): not compared"),
        "{out}"
    );
    assert!(
        out.contains("good (variant ") && !out.contains("other (variant "),
        "{out}"
    );
    // Nothing alike: refused, with the differences.
    let both = scenario(&agent, r#"[sh, -c, "echo value: 20"]"#).replace("echo value: 1", "echo value: 5");
    let (code, _, err) = run(&db, &dir, "c.yaml", &both);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = kreg_out(&db, &dir, &["compare", "1", "3"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("share no workload defined alike") && err.contains("workloads `good` differs"),
        "{err}"
    );
}

#[tokio::test]
async fn the_schedstat_switch_is_put_back_or_its_absence_said_once() {
    let db = fresh_db("notes_schedstat").await;
    let agent = Agent::start();
    let dir = Scratch::new("notes-schedstat");
    let knob = std::path::Path::new("/proc/sys/kernel/sched_schedstats");
    let before = std::fs::read_to_string(knob).ok();
    let (code, _, err) = run(&db, &dir, "a.yaml", &scenario(&agent, r#"[sh, -c, "echo value: 2"]"#));
    assert_eq!(code, Some(0), "{err}");
    let (_, report, _) = kreg_out(&db, &dir, &["report", "1"]);
    if std::path::Path::new("/proc/schedstat").exists() {
        // The switch is as it was, and any change kreg made is listed as put back.
        assert_eq!(std::fs::read_to_string(knob).ok(), before);
        if before.as_deref().map(str::trim) == Some("0") {
            assert!(
                report.contains("here: kernel.sched_schedstats 0 → 1, restored"),
                "{report}"
            );
        }
    } else {
        // Said once in the run's output, and in the report.
        let said = err.matches("has no /proc/schedstat").count();
        assert_eq!(said, 1, "{err}");
        assert!(report.contains("no /proc/schedstat on the SUT"), "{report}");
        let snaps: i64 = sqlx::query_scalar("SELECT count(*) FROM raw_outputs WHERE kind LIKE 'schedstat%'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert_eq!(snaps, 0);
    }
}

#[tokio::test]
async fn warm_up_runs_are_stored_and_shown_but_not_judged() {
    let db = fresh_db("notes_warmup").await;
    let agent = Agent::start();
    let dir = Scratch::new("notes-warmup");
    // The first run prints 240 (a cold start), the others 100 or 101.
    let count = dir.0.join("count");
    let text = format!(
        r#"
name: warm
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: [ {{ name: default }}, {{ name: batch, policy: batch }} ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; if [ $n = 0 ]; then echo value: 240; else echo value: $((100 + n % 2)); fi"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: false }} }}
iterations: 4
warmup: 1
"#,
        hosts = agent.hosts_yaml(),
        c = count.display()
    );
    let (code, out, err) = run(&db, &dir, "w.yaml", &text);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let jobs: Vec<(bool, i32, String)> = sqlx::query_as("SELECT warmup, iteration, variant FROM jobs ORDER BY ordinal")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 10, "{jobs:?}");
    assert_eq!(
        jobs.iter().filter(|j| j.0).count(),
        2,
        "one warm-up per variant: {jobs:?}"
    );
    assert!(jobs.iter().filter(|j| j.0).all(|j| j.1 == 0));
    // Stored like any run.
    let warm: Vec<f64> = sqlx::query_scalar(
        "SELECT r.value FROM results r JOIN jobs j ON j.id = r.job_id WHERE j.warmup ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(warm.len(), 2, "{warm:?}");
    let (code, report, err) = kreg_out(&db, &dir, &["report", "1", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let j: serde_json::Value = serde_json::from_str(&report).unwrap();
    for row in j["rows"].as_array().unwrap() {
        assert_eq!(row["summary"]["n"], 4, "four judged runs a row: {row}");
        assert!(
            row["summary"]["max"].as_f64().unwrap() < 200.0,
            "no warm-up judged: {row}"
        );
    }
    let (_, text, _) = kreg_out(&db, &dir, &["report", "1"]);
    assert!(
        text.contains("warm-up (stored, not judged): kernel current, variant default, w: 1 run; farthest: value"),
        "{text}"
    );
    let (_, status, _) = kreg_out(&db, &dir, &["status", "1"]);
    assert!(status.contains("warm-up"), "{status}");
}
