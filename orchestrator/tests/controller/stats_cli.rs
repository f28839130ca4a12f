//! `kreg stats` as a user runs it: files of numbers with comments, `kreg parse` JSON, and
//! bad files (empty, one number, text, NaN, JSON without the metric) refused with the line.

use std::process::Command;

use common::Scratch;
use kreg_testkit as common;

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
    let a = "# hackbench -g 16, 6.9\n10.1\n10.3  # warm\n9.9\n10.0\n# -\n10.2\n9.8\n10.1\n10.0\n9.9\n10.1\n";
    let b = "11.1\n11.3\n10.9\n11.0\n11.2\n10.8\n11.1\n11.0\n10.9\n11.1\n";
    let (ok, out, err) = stats(&dir, a, b, &["--format", "json", "--same-boot"]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["verdict"], "regression", "a time: lower is better by default: {j}");
    // Two files are two kernels' boots unless said otherwise: one boot each, unconfirmed.
    let (_, out, _) = stats(&dir, a, b, &["--format", "json"]);
    let j1: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j1["verdict"], "unconfirmed regression", "{j1}");
    assert_eq!((j1["p"].clone(), j1["ci"].clone()), (j["p"].clone(), j["ci"].clone()));
    assert_eq!(j["n"], serde_json::json!([10, 10]));
    assert_eq!(j["test"], "welch");
    let change = j["change"].as_f64().unwrap();
    let ci = j["ci"].as_array().unwrap();
    assert!((change - 0.0995).abs() < 0.002, "{change}");
    assert!(ci[0].as_f64().unwrap() < change && change < ci[1].as_f64().unwrap());
    // Higher is better: the same numbers are an improvement.
    let (_, out, _) = stats(
        &dir,
        a,
        b,
        &["--format", "json", "--direction", "higher", "--same-boot"],
    );
    assert!(out.contains("\"verdict\": \"improvement\""), "{out}");
    // The text form says the interval and the reason.
    let (_, out, _) = stats(&dir, a, b, &["--same-boot"]);
    assert!(
        out.contains("verdict: regression") && out.contains("90% CI [+") && out.contains("reason: Welch t-test"),
        "{out}"
    );
    // A latency, untied, is compared on its logarithms.
    let (la, lb) = (
        "100.1\n101.3\n99.2\n100.7\n98.9\n",
        "110.2\n111.5\n109.1\n110.9\n108.8\n",
    );
    let (_, out, _) = stats(&dir, la, lb, &["--format", "json", "--kind", "latency", "--same-boot"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (j["verdict"].as_str(), j["test"].as_str()),
        (Some("regression"), Some("welch-log")),
        "{j}"
    );
    // Equal samples (each value tied with its twin): no change, by ranks.
    for kind in ["latency", "count"] {
        let (_, out, _) = stats(&dir, a, a, &["--format", "json", "--kind", kind]);
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (j["verdict"].as_str(), j["test"].as_str()),
            (Some("no change"), Some("rank-exact")),
            "{j}"
        );
    }
    // Two a side by ranks: no interval can be had, and the reason says what would do.
    let (ok, out, err) = stats(&dir, "1\n2\n", "3\n4\n", &["--format", "json", "--kind", "count"]);
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
    let (ok, out, err) = stats(&dir, &a, &b, &["--metric", "time", "--format", "json", "--same-boot"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"verdict\": \"regression\"") && out.contains("\"direction\": \"lower\""),
        "{out}"
    );
    // An array of outputs reads the same.
    let arr = format!("[{}]", a.trim_end().replace('\n', ","));
    let (ok, out2, err) = stats(&dir, &arr, &b, &["--metric", "time", "--format", "json", "--same-boot"]);
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

/// Numbers of two kernels as a run stores them: `boots` boots of `per_boot` runs each
/// (noise 3% a run, 1% a boot), `b` slower by `shift`.
fn stored(boots: usize, per_boot: usize, shift: f64, kind: kreg::stats::MetricKind) -> Vec<kreg::results::Sample> {
    let mut x: u64 = 0x2545_f491;
    let mut normal = || {
        let mut u = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (u1, u2) = (u(), u());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut out = Vec::new();
    for boot in 0..boots {
        for (kernel, centre) in [("a", 100.0), ("b", 100.0 * (1.0 + shift))] {
            let offset = 1.0 + 0.01 * normal();
            for r in 0..per_boot {
                out.push(kreg::results::Sample {
                    kernel: kernel.into(),
                    variant: "default".into(),
                    workload: "hb".into(),
                    iteration: (boot * per_boot + r + 1) as i32,
                    metric: "time".into(),
                    value: (centre * offset * (1.0 + 0.03 * normal()) * 1000.0).round() / 1000.0,
                    unit: "s".into(),
                    higher_is_better: false,
                    kind,
                    kernel_release: format!("rel-{kernel}").into(),
                    observed_policy: "normal".into(),
                    boot_id: format!("{kernel}-boot-{boot}").into(),
                    machine: "".into(),
                });
            }
        }
    }
    out
}

/// The stored numbers of `kernel` as a file: one per line, a blank line between boots.
fn as_file(samples: &[kreg::results::Sample], kernel: &str) -> String {
    let mut text = String::new();
    let mut last = None;
    for s in samples.iter().filter(|s| *s.kernel == *kernel) {
        if last.is_some() && last != Some(&s.boot_id) {
            text.push('\n');
        }
        text.push_str(&format!("{}\n", s.value));
        last = Some(&s.boot_id);
    }
    text
}

#[test]
fn boot_groups_and_a_plan_give_the_verdict_a_report_gives() {
    use kreg::stats::MetricKind;
    let dir = Scratch::new("stats-report");
    let scenario = |iterations: &str, boots: u32| {
        let text = format!(
            "name: r\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\n\
             kernels: [ {{ name: a, source: {{ deb: linux-image-amd64 }} }}, {{ name: b, source: {{ deb: linux-image-amd64 }} }} ]\n\
             baseline: a\nboots: {boots}\niterations: {iterations}\nworkloads: [ {{ name: hb, kind: hackbench }} ]\n"
        );
        kreg::scenario::from_str(&text, std::path::Path::new("/")).unwrap()
    };
    // (scenario's iterations, boots, boots stored, runs per boot, kreg stats' plan)
    let cases = [
        ("{ min: 6, max: 12 }", 3, 6, 2, Some("6..12")),
        ("{ min: 6, max: 12 }", 3, 4, 2, Some("6..12")),
        ("{ min: 3, max: 10 }", 1, 1, 10, Some("3..10")),
        ("10", 1, 1, 10, None),
        ("8", 2, 2, 4, None),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (i, (iterations, boots, stored_boots, per_boot, plan)) in cases.into_iter().enumerate() {
        for kind in [MetricKind::Mean, MetricKind::Latency] {
            for shift in [0.0, 0.05, 0.12] {
                let s = scenario(iterations, boots);
                let samples = stored(stored_boots, per_boot, shift, kind);
                let t = kreg::report::tables(
                    &s,
                    &samples,
                    &kreg::report::Baseline::Kernel("a".into()),
                    &kreg::stats::Settings::default(),
                );
                let c = t[0].rows[1].comparison.clone().expect("b is compared with a");
                let mut args = vec![
                    "--format",
                    "json",
                    "--kind",
                    if kind == MetricKind::Mean { "mean" } else { "latency" },
                ];
                if let Some(p) = plan {
                    args.extend(["--plan", p]);
                }
                let (ok, out, err) = stats(&dir, &as_file(&samples, "a"), &as_file(&samples, "b"), &args);
                assert!(ok, "{err}");
                let j: serde_json::Value = serde_json::from_str(&out).unwrap();
                let what = format!("case {i} {kind:?} shift {shift}: report {c:?}\nstats {j}");
                assert_eq!(j["verdict"], c.verdict.as_str(), "{what}");
                assert_eq!(j["unit"], serde_json::to_value(c.unit).unwrap(), "{what}");
                assert_eq!(
                    (j["look"].as_u64(), j["looks"].as_u64()),
                    (Some(c.look as u64), Some(c.looks as u64)),
                    "{what}"
                );
                assert!((j["p"].as_f64().unwrap() - c.p).abs() < 1e-12, "{what}");
                // The same interval, to the last bits of a sum taken in another order.
                let ci: Vec<Option<f64>> = serde_json::from_value(j["ci"].clone()).unwrap();
                let want: Vec<Option<f64>> =
                    serde_json::from_value(serde_json::to_value(&c).unwrap()["ci"].clone()).unwrap();
                let close = ci.iter().zip(&want).all(|(x, y)| match (x, y) {
                    (Some(x), Some(y)) => (x - y).abs() < 1e-12,
                    (x, y) => x == y,
                });
                assert!(close, "{what}");
                seen.insert(c.verdict.as_str());
            }
        }
    }
    // The cases reach verdicts of several kinds, confirmed and not.
    for v in ["regression", "unconfirmed regression", "inconclusive"] {
        assert!(seen.contains(v), "{seen:?}");
    }
}
