use super::*;
use crate::results::Sample;
use crate::stats::{MetricKind, Verdict};

fn sample(kernel: &str, variant: &str, iteration: i32, value: f64) -> Sample {
    Sample {
        kernel: kernel.into(),
        variant: variant.into(),
        workload: "hb".into(),
        iteration,
        metric: "time".into(),
        value,
        unit: "s".into(),
        higher_is_better: false,
        kind: MetricKind::Mean,
        kernel_release: format!("rel-{kernel}").into(),
        observed_policy: variant.into(),
        boot_id: format!("boot-{kernel}").into(),
        machine: "".into(),
    }
}

fn report<'a>(
    run_id: i64,
    s: &'a Scenario,
    base: &'a Baseline,
    t: &'a [MetricTable],
    prov: &'a [KernelProvenance],
) -> Report<'a> {
    static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
    Report {
        run_id,
        scenario: s,
        baseline: base,
        tables: t,
        settings: SETTINGS.get_or_init(Settings::default),
        prov,
        warnings: Vec::new(),
        failed: Vec::new(),
        boxes: false,
        sched_stats: None,
        provisional: None,
    }
}

fn scenario() -> Scenario {
    let text = "name: r\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running}, {name: b, source: running} ]\nbaseline: a\nvariants: [ {name: other}, {name: batch, policy: batch} ]\nworkloads: [ {name: hb, kind: hackbench} ]\n";
    crate::scenario::from_str(text, std::path::Path::new("/")).unwrap()
}

fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, v) in [10.0, 10.1, 9.9, 10.05, 9.95, 10.02].into_iter().enumerate() {
        let i = i as i32 + 1;
        out.push(sample("a", "other", i, v));
        out.push(sample("b", "other", i, v * 1.5));
        out.push(sample("a", "batch", i, v * 2.0));
        out.push(sample("b", "batch", i, v));
    }
    out
}

/// [`samples`] with a latency metric beside the time (its rows summarised by median and IQR).
fn with_latency() -> Vec<Sample> {
    let mut all = samples();
    for x in samples() {
        all.push(Sample {
            metric: "lat_p99".into(),
            unit: "us".into(),
            kind: MetricKind::Latency,
            value: x.value * 100.0,
            ..x
        });
    }
    all
}

#[test]
fn change_is_against_baseline_with_same_variant() {
    let s = scenario();
    let base = Baseline::Kernel("a".into());
    let t = tables(&s, &samples(), &base, &Settings::default());
    assert_eq!(t.len(), 1);
    let rows = &t[0].rows;
    assert_eq!(rows.len(), 4);
    assert_eq!((rows[0].summary.n, rows[0].comparison.is_none()), (6, true));
    let c2 = rows[2].comparison.as_ref().unwrap();
    let c3 = rows[3].comparison.as_ref().unwrap();
    assert!((c2.change - 0.5).abs() < 1e-9 && (c3.change + 0.5).abs() < 1e-9);
    // time: lower is better. Each kernel ran on a boot of its own, once: the changes are
    // clear but unconfirmed (a difference between two boots would look the same).
    assert_eq!(
        (c2.verdict, c3.verdict),
        (Verdict::UnconfirmedRegression, Verdict::UnconfirmedImprovement)
    );
    // Another baseline flips the comparison.
    let t = tables(&s, &samples(), &Baseline::Kernel("b".into()), &Settings::default());
    assert_eq!(
        t[0].rows[0].comparison.as_ref().unwrap().verdict,
        Verdict::UnconfirmedImprovement
    );
    // Variants compared on each kernel: batch against other.
    let t = tables(&s, &samples(), &Baseline::Variant("other".into()), &Settings::default());
    let rows = &t[0].rows;
    assert!(rows[0].comparison.is_none() && rows[2].comparison.is_none());
    assert_eq!(
        rows[1].comparison.as_ref().unwrap().verdict,
        Verdict::Regression,
        "a/batch is 2x a/other"
    );
    assert!((rows[3].comparison.as_ref().unwrap().change + 1.0 / 3.0).abs() < 1e-9);
}

#[test]
fn text_is_one_compact_ascii_table_per_workload_and_variant_with_reasons() {
    let s = scenario();
    let base = Baseline::Kernel("a".into());
    let all = with_latency();
    let t = tables(&s, &all, &base, &Settings::default());
    let out = report(1, &s, &base, &t, &[]).render(Format::Text);
    // Two tables (variant other, variant batch), each with both metrics as rows.
    assert_eq!(out.matches("hb (variant ").count(), 2, "{out}");
    assert!(out.contains("hb (variant other): hackbench"), "the command line: {out}");
    assert!(!out.contains('─') && !out.contains('│'), "plain ASCII: {out}");
    let table_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| time") || l.starts_with("| lat_p99"))
        .collect();
    assert_eq!(table_lines.len(), 4, "{out}");
    assert!(
        out.contains("a (base)") && out.contains("b change") && out.contains("b verdict"),
        "{out}"
    );
    assert!(
        out.contains("+50.00% worse") && out.contains("unconfirmed regression"),
        "{out}"
    );
    assert!(
        out.contains("-50.00% better") && out.contains("unconfirmed improvement"),
        "{out}"
    );
    assert!(!out.contains("REGRESSION"), "one boot each: never a regression: {out}");
    assert!(
        out.contains(" iqr ") && out.contains(" ±"),
        "median/IQR and mean/stddev: {out}"
    );
    // The reason under the table, with the interval and the adjusted p labelled.
    assert!(
        out.contains("b time: unconfirmed regression (+50.00% worse): Welch t-test")
            && out.contains("unconfirmed: each side's runs share boots of their own"),
        "{out}"
    );
    assert!(out.contains("90% CI ["), "{out}");
    assert!(out.contains("adjusted"), "{out}");
    // The latency rows at 6 vs 6 reach p = 2/924 < 0.01: a verdict too.
    assert!(out.contains("b lat_p99: unconfirmed regression"), "{out}");
    assert!(out.contains("boot-to-boot variation was not measured"), "{out}");
    let boxed = Report {
        boxes: true,
        ..report(1, &s, &base, &t, &[])
    }
    .render(Format::Text);
    assert!(boxed.contains('│'), "{boxed}");
}

#[test]
fn one_kernel_compares_variants_with_the_first() {
    let text = "name: r\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running} ]\nvariants: [ {name: other}, {name: batch, policy: batch} ]\nworkloads: [ {name: hb, kind: hackbench} ]\n";
    let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
    assert_eq!(default_baseline(&s), Baseline::Variant("other".into()));
    assert_eq!(default_baseline(&scenario()), Baseline::Kernel("a".into()));
}

#[test]
fn markdown_has_a_well_formed_table_per_block() {
    let s = scenario();
    let base = Baseline::Kernel("a".into());
    let t = tables(&s, &samples(), &base, &Settings::default());
    let prov = vec![
        KernelProvenance {
            kernel: "a".into(),
            boots: vec![crate::results::BootSeen {
                host: "sut".into(),
                release: "6.1".into(),
                cpus: 2,
                cpu_model: "Xeon".into(),
                cmdline: "BOOT_IMAGE=/a quiet".into(),
            }],
            ..Default::default()
        },
        KernelProvenance {
            kernel: "b".into(),
            boots: vec![crate::results::BootSeen {
                host: "sut".into(),
                release: "6.1".into(),
                cpus: 2,
                cpu_model: "EPYC".into(),
                cmdline: "BOOT_IMAGE=/b quiet".into(),
            }],
            ..Default::default()
        },
    ];
    let md = report(7, &s, &base, &t, &prov).render(Format::Markdown);
    assert!(
        md.contains("WARNING: the kernels ran on different CPU models: EPYC") && md.contains("Xeon"),
        "{md}"
    );
    assert!(
        !md.contains("different command lines"),
        "BOOT_IMAGE differs by design: {md}"
    );
    assert_eq!(md.lines().filter(|l| l.starts_with("### ")).count(), 2, "{md}");
    let lines: Vec<&str> = md.lines().collect();
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("| metric |") {
            seen += 1;
            let cols = l.matches('|').count() - l.matches("\\|").count();
            assert!(
                lines[i + 1].starts_with("|:--") && lines[i + 1].matches('|').count() == cols,
                "{md}"
            );
            let body: Vec<&&str> = lines[i + 2..].iter().take_while(|r| r.starts_with('|')).collect();
            assert_eq!(body.len(), 1, "{md}");
            assert!(body.iter().all(|r| r.matches('|').count() == cols), "{md}");
        }
    }
    assert_eq!(seen, 2);
    assert!(
        md.contains("unconfirmed regression") && md.contains("+50.00% worse") && !md.contains("**"),
        "{md}"
    );
    let csv = report(7, &s, &base, &t, &prov).render(Format::Csv);
    let width = csv.lines().next().unwrap().split(',').count();
    assert_eq!(csv.lines().count(), 1 + 4);
    assert!(csv.lines().all(|l| l.split(',').count() >= width), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&report(7, &s, &base, &t, &prov).render(Format::Json)).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 4);
    assert_eq!(json["settings"]["comparisons"], 2);
    assert_eq!(json["rows"][2]["comparison"]["verdict"], "unconfirmed regression");
    assert_eq!(json["rows"][2]["kind"], "mean");
}

/// The report as `kreg report` prints it, in text and in Markdown, kept in `snapshots/`
/// (a change to the text shows as a diff; `UPDATE_EXPECT=1 cargo test -p kreg-core`
/// rewrites them on purpose).
#[test]
fn the_text_and_markdown_reports_read_as_kept() {
    let s = scenario();
    let base = Baseline::Kernel("a".into());
    let all = with_latency();
    let t = tables(&s, &all, &base, &Settings::default());
    let r = report(7, &s, &base, &t, &[]);
    expect_test::expect_file!["snapshots/report.txt"].assert_eq(&r.render(Format::Text));
    expect_test::expect_file!["snapshots/report.md"].assert_eq(&r.render(Format::Markdown));
}

/// Samples of kernels a and b under two variants, `runs` per cell: b is 6% slower than a
/// under `other` and the same under `batch`. Spread over `machines` (each taking an equal
/// share of every cell's runs, each with its offset added), named only when `named`.
fn fleet_samples(seed: u64, runs: usize, machines: &[(&str, f64)], named: bool) -> Vec<Sample> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut noise = move || {
        // The sum of 12 uniforms less 6: close to a standard normal.
        (0..12)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 11) as f64 / (1u64 << 53) as f64
            })
            .sum::<f64>()
            - 6.0
    };
    let mut out = Vec::new();
    for i in 0..runs {
        let (m, offset) = machines[i % machines.len()];
        for (k, v, level) in [
            ("a", "other", 100.0),
            ("b", "other", 106.0),
            ("a", "batch", 100.0),
            ("b", "batch", 100.0),
        ] {
            let mut x = sample(k, v, i as i32 + 1, level + offset + noise());
            if named {
                x.machine = m.into();
            }
            out.push(x);
        }
    }
    out
}

#[test]
fn a_run_spread_over_machines_with_offsets_is_judged_as_on_one_machine() {
    let s = scenario();
    let base = Baseline::Kernel("a".into());
    let verdicts = |samples: &[Sample]| -> Vec<Verdict> {
        tables(&s, samples, &base, &Settings::default())
            .iter()
            .flat_map(|t| t.rows.iter().filter_map(|r| r.comparison.as_ref().map(|c| c.verdict)))
            .collect()
    };
    let three = [("m1", 0.0), ("m2", 25.0), ("m3", -18.0)];
    let mut pooled_differs = 0;
    for seed in 0..30 {
        let one = verdicts(&fleet_samples(seed, 12, &[("", 0.0)], false));
        // One boot per kernel: a significant change is an unconfirmed regression.
        assert_eq!(
            one,
            vec![Verdict::UnconfirmedRegression, Verdict::NoChange],
            "seed {seed}: one machine"
        );
        let blocked = verdicts(&fleet_samples(seed, 12, &three, true));
        assert_eq!(blocked, one, "seed {seed}: three machines, compared within each");
        // The same samples pooled as replicates: the machines' offsets swamp the change.
        if verdicts(&fleet_samples(seed, 12, &three, false)) != one {
            pooled_differs += 1;
        }
    }
    assert_eq!(
        pooled_differs, 30,
        "pooling machines as replicates should lose the verdicts"
    );
    // The report says how it compared.
    let samples = fleet_samples(1, 12, &three, true);
    let t = tables(&s, &samples, &base, &Settings::default());
    let text = report(1, &s, &base, &t, &[]).render(Format::Text);
    assert!(
        text.contains("machines: 3 (m1, m2, m3): every row is compared with its baseline within each machine"),
        "{text}"
    );
}
