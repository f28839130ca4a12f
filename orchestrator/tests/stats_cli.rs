//! `kreg stats` as a user runs it: files of numbers with comments, `kreg parse` JSON, and
//! bad files (empty, one number, text, NaN, JSON without the metric) refused with the line.

use std::process::Command;

mod common;
use common::Scratch;

fn stats(dir: &Scratch, a: &str, b: &str, extra: &[&str]) -> (bool, String, String) {
    std::fs::write(dir.0.join("a"), a).unwrap();
    std::fs::write(dir.0.join("b"), b).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .arg("stats")
        .arg(dir.0.join("a"))
        .arg(dir.0.join("b"))
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn numbers_by_hand_give_a_verdict_with_its_interval() {
    let dir = Scratch::new("stats-cli");
    let a = "# hackbench -g 16, 6.9\n10.1\n10.3  # warm\n9.9\n10.0\n\n10.2\n9.8\n10.1\n10.0\n9.9\n10.1\n";
    let b = "11.1\n11.3\n10.9\n11.0\n11.2\n10.8\n11.1\n11.0\n10.9\n11.1\n";
    let (ok, out, err) = stats(&dir, a, b, &["--format", "json"]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["verdict"], "regression", "a time: lower is better by default: {j}");
    assert_eq!(j["n"], serde_json::json!([10, 10]));
    assert_eq!(j["test"], "welch");
    let change = j["change"].as_f64().unwrap();
    let ci = j["ci"].as_array().unwrap();
    assert!((change - 0.0995).abs() < 0.002, "{change}");
    assert!(ci[0].as_f64().unwrap() < change && change < ci[1].as_f64().unwrap());
    // Higher is better: the same numbers are an improvement.
    let (_, out, _) = stats(&dir, a, b, &["--format", "json", "--direction", "higher"]);
    assert!(out.contains("\"verdict\": \"improvement\""), "{out}");
    // The text form says the interval and the reason.
    let (_, out, _) = stats(&dir, a, b, &[]);
    assert!(
        out.contains("verdict: regression") && out.contains("90% CI [+") && out.contains("reason: Welch t-test"),
        "{out}"
    );
    // Equal samples: no change; a latency is compared by ranks.
    let (_, out, _) = stats(&dir, a, a, &["--format", "json", "--kind", "latency"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (j["verdict"].as_str(), j["test"].as_str()),
        (Some("no change"), Some("rank-exact")),
        "{j}"
    );
    // Two a side by ranks: no interval can be had, and the reason says what would do.
    let (ok, out, err) = stats(&dir, "1\n2\n", "3\n4\n", &["--format", "json", "--kind", "latency"]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["ci"], serde_json::json!([null, null]), "{j}");
    assert_eq!(j["verdict"], "inconclusive");
    assert!(
        j["reason"].as_str().unwrap().starts_with("needs ≥ 6 runs per side"),
        "{j}"
    );
}

#[test]
fn kreg_parse_json_with_a_metric() {
    let dir = Scratch::new("stats-json");
    let one = |t: f64| {
        format!(
            "[{{\"name\": \"time\", \"value\": {t}, \"unit\": \"s\", \"direction\": \"lower\", \"kind\": \"mean\"}}]\n"
        )
    };
    let a: String = [1.00, 1.02, 0.99, 1.01, 1.00, 0.98].iter().map(|t| one(*t)).collect();
    let b: String = [1.50, 1.52, 1.49, 1.51, 1.50, 1.48].iter().map(|t| one(*t)).collect();
    let (ok, out, err) = stats(&dir, &a, &b, &["--metric", "time", "--format", "json"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"verdict\": \"regression\"") && out.contains("\"direction\": \"lower\""),
        "{out}"
    );
    // An array of outputs reads the same.
    let arr = format!("[{}]", a.trim_end().replace('\n', ","));
    let (ok, out2, err) = stats(&dir, &arr, &b, &["--metric", "time", "--format", "json"]);
    assert!(ok, "{err}");
    assert_eq!(out, out2);
    let (ok, _, err) = stats(&dir, &a, &b, &["--metric", "wall"]);
    assert!(!ok && err.contains("a:1: no metric \"wall\""), "{err}");
    let (ok, _, err) = stats(&dir, &a, &b, &[]);
    assert!(!ok && err.contains("needs --metric NAME"), "{err}");
}

#[test]
fn bad_files_are_refused_naming_the_line() {
    let dir = Scratch::new("stats-bad");
    let good = "1\n2\n3\n";
    for (bad, want) in [
        ("", "b: no numbers"),
        ("# only a comment\n\n", "b: no numbers"),
        ("4.5\n", "b: only one number"),
        ("1\n2\nthree\n", "b:3: \"three\" is not a number"),
        ("1\nNaN\n3\n", "b:2: NaN is not a finite number"),
        ("1\n2\ninf\n", "b:3: inf is not a finite number"),
    ] {
        let (ok, _, err) = stats(&dir, good, bad, &[]);
        assert!(!ok && err.contains(want), "{bad:?}: {err}");
    }
    let (ok, _, err) = stats(&dir, good, good, &["--alpha", "2"]);
    assert!(!ok && err.contains("alpha must be between 0 and 1"), "{err}");
}
