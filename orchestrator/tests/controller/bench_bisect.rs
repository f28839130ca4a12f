//! `kreg bench bisect` as a user runs it: the synthetic ranges' table, a range replayed
//! from a file, and a bad file refused with the reason.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["bench", "bisect"])
        .args(args)
        .output()
        .unwrap()
}

/// The row of a table whose first cell starts with `what`, as its cells.
fn cells(out: &str, what: &str) -> Vec<String> {
    let line = out
        .lines()
        .find(|l| l.trim_start_matches("| ").starts_with(what))
        .unwrap_or_else(|| panic!("no row {what}: {out}"));
    line.split('|')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn synthetic_ranges_and_a_replayed_one() {
    let out = bench(&["--trials", "100"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = cells(&text, "64 commits, +3% at 37");
    let exact: f64 = row[1].trim_end_matches('%').parse().unwrap();
    assert!(exact >= 90.0, "{text}");
    // Columns: range, exact, confirmed, two named, wrong, partly named, does not reproduce,
    // an endpoint failed, a range, ambiguous, ...
    let row = cells(&text, "two commits of +1.5%");
    assert_eq!(row[1], "0.0%", "never one commit when two share the change: {text}");
    let named: f64 = row[3].trim_end_matches('%').parse().unwrap();
    assert!(named >= 80.0, "both changes named: {text}");
    // A change just above the minimum effect, on a quiet machine, is found; the same
    // change on a machine whose boots vary as much as it is said not to reproduce or left
    // ambiguous, never pinned on a commit; no range of the table names a wrong culprit.
    let pct = |c: &str| -> f64 { c.trim_end_matches('%').parse().unwrap() };
    let near = cells(&text, "+1.3% at 37, near the 1% minimum");
    assert!(pct(&near[1]) >= 90.0, "{text}");
    // A machine that drifts ±0.01 % a boot (±2 % over a bisection) moves no decision.
    for sign in ["+", "-"] {
        let drifting = cells(&text, &format!("the same, the machine drifting {sign}0.01% a boot"));
        assert!(pct(&drifting[1]) >= 90.0, "{text}");
    }
    let noisy = cells(&text, "+1.2% at 37, boots 1%");
    assert!(pct(&noisy[6]) + pct(&noisy[9]) >= 90.0, "{text}");
    for line in text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| range"))
    {
        let c: Vec<&str> = line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        if c.len() > 4 {
            assert_eq!(c[4], "0.0%", "a wrong culprit: {line}");
        }
    }

    // A replayed range: 12 commits, the 8th (index 7) 4% slower, index 3 broken.
    let scratch = kreg_testkit::Scratch::new("bench_bisect");
    let dir = &scratch.0;
    let commits: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            let mean = if i >= 7 { 104.0 } else { 100.0 };
            serde_json::json!({ "mean": mean, "sd": 1.0, "boot_sd": 0.5, "build_fails": i == 3 })
        })
        .collect();
    let file = dir.join("range.json");
    std::fs::write(
        &file,
        serde_json::json!({ "commits": commits, "culprit": 7 }).to_string(),
    )
    .unwrap();
    let out = bench(&["--trials", "50", "--replay", file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = cells(&text, file.to_str().unwrap());
    assert_eq!(row[1], "100.0%", "{text}");
    // Two changes of 3 % each (at 4 and 8): both named, from `culprits`.
    let two: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            let mean = 100.0 + if i >= 4 { 3.0 } else { 0.0 } + if i >= 8 { 3.0 } else { 0.0 };
            serde_json::json!({ "mean": mean, "sd": 1.0, "boot_sd": 0.5 })
        })
        .collect();
    let two_file = dir.join("two.json");
    std::fs::write(
        &two_file,
        serde_json::json!({ "commits": two, "culprits": [4, 8] }).to_string(),
    )
    .unwrap();
    let out = bench(&["--trials", "30", "--replay", two_file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = cells(&text, two_file.to_str().unwrap());
    assert!(pct(&row[3]) >= 80.0 && row[4] == "0.0%", "{text}");
    // The same on a machine that slows by 0.05 % a boot (5 % over 100 boots).
    let out = bench(&[
        "--trials",
        "50",
        "--replay",
        file.to_str().unwrap(),
        "--drift",
        "-0.0005",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = cells(&text, file.to_str().unwrap());
    assert!(row[1] == "100.0%" || row[1] == "98.0%", "{text}");

    // Runs of other shapes, a commit that never boots, and 5 % of all boots failing: each
    // bisection one line of JSON, the table on stderr; the lines agree with the table.
    let commits: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            let mean = if i >= 7 { 106.0 } else { 100.0 };
            let dist = match i % 3 {
                0 => serde_json::json!({ "kind": "normal" }),
                1 => serde_json::json!({ "kind": "lognormal" }),
                _ => serde_json::json!({ "kind": "bimodal", "share": 0.2, "gap": 0.01 }),
            };
            serde_json::json!({ "mean": mean, "sd": 1.0, "boot_sd": 0.5, "dist": dist,
                                "boot_fails": if i == 5 { 1.0 } else { 0.0 } })
        })
        .collect();
    std::fs::write(
        &file,
        serde_json::json!({ "commits": commits, "culprit": 7, "runs": 5 }).to_string(),
    )
    .unwrap();
    let out = bench(&[
        "--trials",
        "40",
        "--replay",
        file.to_str().unwrap(),
        "--boot-failures",
        "0.05",
        "--trials-json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 40);
    let exact = lines
        .iter()
        .filter(|l| l["outcome"]["kind"] == "culprit" && l["outcome"]["commit"] == 7)
        .count();
    let table = String::from_utf8_lossy(&out.stderr);
    assert!(table.contains("5 runs a boot"), "{table}");
    let row = cells(&table, file.to_str().unwrap());
    assert_eq!(pct(&row[1]), 100.0 * exact as f64 / 40.0, "{table}");
    assert!(exact >= 36, "{table}");
    // Failed boots happened and were tried again: more boots than measured ones.
    let failed: u64 = lines.iter().map(|l| l["failed_boots"].as_u64().unwrap()).sum();
    assert!(failed >= 40, "{failed} failed boots in 40 bisections: {table}");
    assert!(lines.iter().all(|l| l["boots"].as_u64() > l["failed_boots"].as_u64()));
    let mean_failed: f64 = row[12].parse().unwrap();
    assert!((mean_failed - failed as f64 / 40.0).abs() < 0.051, "{table}");

    // A misspelt field is refused, naming it.
    std::fs::write(&file, r#"{"commits": [{"mean": 1, "sd": 1, "bootsd": 1}]}"#).unwrap();
    let out = bench(&["--replay", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("range.json") && err.contains("bootsd"), "{err}");
}
