//! Alerts on a history: thirteen real runs of one scenario against a real agent, the
//! workload's value stepping up 5 % (noise about 1 %) from the eighth (testkit's
//! `history::step_runs`); each `kreg run` scans
//! its scenario's histories when it ends, and the change point is raised once, at the right
//! run, when enough runs stand on its far side. Triage through `kreg alerts`, kept across a
//! restart of PostgreSQL (kreg's private cluster, stopped and started again).

use std::path::Path;
use std::process::Command;

use kreg_testkit as common;

/// `kreg` on the private cluster under `data` (no DATABASE_URL).
fn kreg(data: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(args)
        .env_remove("DATABASE_URL")
        .env("KREG_DATA_DIR", data)
        .env("KREG_AGENT_BIN", common::agent_bin())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_step_in_a_history_is_raised_once_at_its_run_and_triaged_through_the_cli() {
    let dir = common::Scratch::new("alerts");
    let data = dir.0.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let agent = common::Agent::start();
    let raised_by = common::history::step_runs(&dir.0, &agent, |args| kreg(&data, args));
    assert_eq!(raised_by.len(), 1, "one alert, once: {raised_by:?}");
    let (run, line) = &raised_by[0];
    assert!(
        *run >= 11,
        "raised after run {run}, with too few runs after the step: {line}"
    );
    assert!(
        line.contains("#1 [new] steps: probe/latency on current/default: regression +")
            && line.contains("at run 8 (after run 7)"),
        "{line}"
    );

    let (code, out, err) = kreg(&data, &["alerts", "list", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let alerts: serde_json::Value = serde_json::from_str(&out).unwrap();
    let a = &alerts[0];
    assert_eq!(alerts.as_array().unwrap().len(), 1, "{out}");
    assert_eq!(
        (a["run_id"].as_i64(), a["previous_run_id"].as_i64()),
        (Some(8), Some(7))
    );
    // The numbers of the scan that raised it: the runs up to the one that ended then.
    assert_eq!(
        (a["before_runs"].as_i64(), a["after_runs"].as_i64()),
        (Some(7), Some(*run as i64 - 7))
    );
    let (change, low, high) = (
        a["change"].as_f64().unwrap(),
        a["change_low"].as_f64().unwrap(),
        a["change_high"].as_f64().unwrap(),
    );
    assert!(
        (change - 0.05).abs() < 0.01 && low < 0.05 && high > 0.05 && low > 0.0,
        "{a}"
    );
    assert_eq!(a["direction"], "regression");
    assert_eq!(a["state"], "new");

    let (code, out, _) = kreg(&data, &["alerts", "show", "1"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("change point between run 7 and run 8: regression +"),
        "{out}"
    );
    assert!(out.contains("kreg compare 7 8"), "{out}");
    // The p-value said once, as everywhere: "(p=…)", never "(p p=…)".
    assert!(out.contains(" (p=") && !out.contains("p p="), "{out}");
    assert!(
        out.contains("no bisection: kernel current of runs 7 and 8 was not built from git by kreg"),
        "{out}"
    );

    // Triage: a bad state and a missing alert are refused with the reason.
    let (code, _, err) = kreg(&data, &["alerts", "set", "1", "closed"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("\"closed\" is not a state of an alert: use one of new, acknowledged, invalid, fixed"),
        "{err}"
    );
    let (code, _, err) = kreg(&data, &["alerts", "set", "99", "fixed"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("there is no alert 99"), "{err}");
    let (code, out, err) = kreg(
        &data,
        &["alerts", "set", "1", "ack", "--note", "THP default changed on the SUT"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "alert #1: acknowledged");

    // Scanning again raises nothing more and keeps the state.
    let (code, out, _) = kreg(&data, &["alerts", "scan"]);
    assert_eq!((code, out.trim()), (Some(0), "no new change point"));

    // PostgreSQL stopped and started again: the alert and its triage are still there.
    let (code, _, err) = kreg(&data, &["db", "stop"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = kreg(&data, &["alerts"]);
    assert_eq!(out.trim(), "no new alerts");
    let (code, out, err) = kreg(&data, &["alerts", "list", "--state", "acknowledged", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let kept: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(kept[0]["id"], 1, "{out}");
    assert_eq!(kept[0]["note"], "THP default changed on the SUT");
    assert!(kept[0]["state_changed_at"].is_string());
    let (_, out, _) = kreg(&data, &["alerts", "list", "--state", "all"]);
    assert!(out.contains("acknowledged") && out.contains("regression +"), "{out}");
    let _ = kreg(&data, &["db", "stop"]);
}
