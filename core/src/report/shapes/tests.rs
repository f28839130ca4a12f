//! The thread-shaped reports on the seeds' own scenarios: kept as snapshots (`UPDATE_EXPECT=1
//! cargo test -p kreg-core` rewrites them on purpose), every line within 80 columns, and the
//! figures the threads print checked against this file's own arithmetic on the samples.

use crate::report::{tables, Format, Report};
use crate::results::{KernelProvenance, Sample};
use crate::scenario::Scenario;
use crate::stats::{MetricKind, Settings};

/// A deterministic noise: the sum of 12 uniforms less 6, close to a standard normal.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        (0..12)
            .map(|_| {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (self.0 >> 11) as f64 / (1u64 << 53) as f64
            })
            .sum::<f64>()
            - 6.0
    }
}

struct Metric {
    name: &'static str,
    unit: &'static str,
    higher: bool,
    kind: MetricKind,
}

const NOPM: Metric = Metric {
    name: "nopm",
    unit: "NOPM",
    higher: true,
    kind: MetricKind::Throughput,
};
const P50: Metric = Metric {
    name: "neword_p50_ms",
    unit: "ms",
    higher: false,
    kind: MetricKind::Latency,
};
const TIME: Metric = Metric {
    name: "time",
    unit: "s",
    higher: false,
    kind: MetricKind::Mean,
};
const RR: Metric = Metric {
    name: "transactions_per_s",
    unit: "Trans/s",
    higher: true,
    kind: MetricKind::Throughput,
};

/// `runs` samples of a cell, each on a boot of its own, around `level` with a CoV of `cov`.
fn cell(noise: &mut Noise, at: (&str, &str, &str), m: &Metric, level: f64, cov: f64, runs: usize) -> Vec<Sample> {
    let (kernel, variant, workload) = at;
    (0..runs)
        .map(|i| Sample {
            kernel: kernel.into(),
            variant: variant.into(),
            workload: workload.into(),
            iteration: i as i32 + 1,
            metric: m.name.into(),
            value: level * (1.0 + cov * noise.next()),
            unit: m.unit.into(),
            higher_is_better: m.higher,
            kind: m.kind,
            kernel_release: kernel.into(),
            observed_policy: variant.into(),
            boot_id: format!("{kernel}-{i}").into(),
            machine: "".into(),
        })
        .collect()
}

fn seed(file: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    crate::scenario::from_str(&text, path.parent().unwrap()).unwrap()
}

/// Seed 004's campaign: NOPM down 5–10% and the P50 up on the newer kernels, under each
/// variant; 6 boots a cell.
fn seed004() -> (Scenario, Vec<Sample>) {
    let s = seed("seed004-mysql-hammerdb.yaml");
    let mut noise = Noise(4);
    let mut out = Vec::new();
    let shifts = [
        ("v6.5.13", 0.0),
        ("v6.12.25", -0.051),
        ("v6.14.4", -0.074),
        ("v6.15-rc4", 0.0),
    ];
    for (variant, extra) in [("default", 0.0), ("batch", -0.01), ("NOx2", 0.02)] {
        for (kernel, shift) in shifts {
            let shift = if shift == 0.0 { 0.0 } else { shift + extra };
            let at = (kernel, variant, "tpcc");
            out.extend(cell(&mut noise, at, &NOPM, 100_000.0 * (1.0 + shift), 0.01, 6));
            out.extend(cell(&mut noise, at, &P50, 12.3 * (1.0 - 1.5 * shift), 0.01, 6));
        }
    }
    (s, out)
}

/// Seed 002's comparison: head as base, but 8 groups 10% faster; 8 boots a cell.
fn seed002() -> (Scenario, Vec<Sample>) {
    let s = seed("seed002-hackbench-netperf.yaml");
    let mut noise = Noise(2);
    let mut out = Vec::new();
    for (w, level) in [("hackbench-g1", 3.62), ("hackbench-g8", 8.06), ("hackbench-g16", 11.4)] {
        for kernel in ["base", "head"] {
            let l = if kernel == "head" && w == "hackbench-g8" {
                level * 0.9
            } else {
                level
            };
            out.extend(cell(&mut noise, (kernel, "default", w), &TIME, l, 0.02, 8));
        }
    }
    for (w, level) in [("udp-rr-25", 83_567.0), ("udp-rr-100", 31_277.0)] {
        for kernel in ["base", "head"] {
            out.extend(cell(&mut noise, (kernel, "default", w), &RR, level, 0.005, 8));
        }
    }
    (s, out)
}

fn render(s: &Scenario, samples: &[Sample], format: Format) -> String {
    let base = crate::report::default_baseline(s);
    let settings = Settings::default();
    let t = tables(s, samples, &base, &settings);
    let prov: Vec<KernelProvenance> = Vec::new();
    Report {
        run_id: 12,
        scenario: s,
        baseline: &base,
        tables: &t,
        settings: &settings,
        prov: &prov,
        warnings: Vec::new(),
        failed: Vec::new(),
        boxes: false,
        sched_stats: None,
        provisional: None,
    }
    .render(format)
}

fn values(samples: &[Sample], kernel: &str, variant: &str, workload: &str, metric: &str) -> Vec<f64> {
    samples
        .iter()
        .filter(|x| &*x.kernel == kernel && &*x.variant == variant && &*x.workload == workload && &*x.metric == metric)
        .map(|x| x.value)
        .collect()
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
    (m, var.sqrt())
}

fn within_80(text: &str) {
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} columns: {l:?}\n{text}", l.chars().count());
    }
}

#[test]
fn every_shape_of_every_seed_fits_in_80_columns() {
    for (s, samples) in [seed004(), seed002()] {
        for (name, f) in Format::NAMES.iter().filter(|(_, f)| f.is_shape()) {
            let text = render(&s, &samples, *f);
            within_80(&text);
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("its verdicts: REGR/IMPR a regression"), "{name}: {text}");
        }
    }
}

#[test]
fn the_shapes_read_as_kept() {
    let (s, samples) = seed004();
    expect_test::expect_file!["../snapshots/seed004-kernel-table.txt"].assert_eq(&render(
        &s,
        &samples,
        Format::KernelTable,
    ));
    expect_test::expect_file!["../snapshots/seed004-compare-kernels.txt"].assert_eq(&render(
        &s,
        &samples,
        Format::CompareKernels,
    ));
    let (s, samples) = seed002();
    expect_test::expect_file!["../snapshots/seed002-base-head.txt"].assert_eq(&render(&s, &samples, Format::BaseHead));
    expect_test::expect_file!["../snapshots/seed002-tip-patch.txt"].assert_eq(&render(&s, &samples, Format::TipPatch));
}

/// The line of `text` that starts with `start` (after leading blanks).
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
}

#[test]
fn base_head_prints_the_threads_figures_and_kregs_verdict() {
    let (s, samples) = seed002();
    let text = render(&s, &samples, Format::BaseHead);
    for w in ["hackbench-g1", "hackbench-g8", "hackbench-g16"] {
        let (mb, sb) = mean_sd(&values(&samples, "base", "default", w, "time"));
        let (mh, sh) = mean_sd(&values(&samples, "head", "default", w, "time"));
        let l = line(&text, w);
        let change = 100.0 * (mb - mh) / mb;
        for want in [
            format!("{mb:.2}±{:.2}%", 100.0 * sb / mb),
            format!("{mh:.2}±{:.2}%", 100.0 * sh / mh),
            format!("{change:+.2}%"),
        ] {
            assert!(l.contains(&want), "{want:?} not in {l:?}");
        }
    }
    // 10% faster over 8 boots a side at CoV 2%: an improvement; the others are not changes.
    assert!(line(&text, "hackbench-g8").ends_with("IMPR"), "{text}");
    for w in ["hackbench-g1 ", "hackbench-g16 ", "udp-rr-25 ", "udp-rr-100 "] {
        let l = line(&text, w);
        assert!(l.ends_with("same") || l.ends_with("incon"), "{l}");
    }
    // Throughputs grouped as the thread writes them.
    let (m, _) = mean_sd(&values(&samples, "base", "default", "udp-rr-25", "transactions_per_s"));
    let grouped = format!("{},{:03}", (m.round() as u64) / 1000, (m.round() as u64) % 1000);
    assert!(line(&text, "udp-rr-25").contains(&grouped), "{grouped} in {text}");
}

#[test]
fn tip_patch_normalises_to_the_first_column_and_gives_the_cv() {
    let (s, samples) = seed002();
    let text = render(&s, &samples, Format::TipPatch);
    let (mb, sb) = mean_sd(&values(&samples, "base", "default", "hackbench-g8", "time"));
    let (mh, sh) = mean_sd(&values(&samples, "head", "default", "hackbench-g8", "time"));
    let base = format!("1.00 [  0.00]({:5.2})", 100.0 * sb / mb);
    let head = format!(
        "{:4.2} [{:6.2}]({:5.2})",
        mh / mb,
        100.0 * (mb - mh) / mb,
        100.0 * sh / mh
    );
    let l = line(&text, "hackbench-g8");
    let at = l.find(&base).unwrap_or_else(|| panic!("{base:?} in {l:?}"));
    assert!(
        l[at + base.len()..].trim_start() == head,
        "{head:?} after {base:?} in {l:?}"
    );
    assert!(text.contains("Interpretation: Lower is better") && text.contains("Interpretation: Higher is better"));
}

#[test]
fn compare_kernels_gives_hmean_for_rates_and_marks_the_changes_kreg_calls() {
    let (s, samples) = seed004();
    let text = render(&s, &samples, Format::CompareKernels);
    let hmean = |k: &str| {
        let v = values(&samples, k, "default", "tpcc", "nopm");
        v.len() as f64 / v.iter().map(|x| 1.0 / x).sum::<f64>()
    };
    let (b, n) = (hmean("v6.5.13"), hmean("v6.12.25"));
    let l = line(&text, "Hmean     tpcc");
    let grouped = format!("{},{:03}", (b.round() as u64) / 1000, (b.round() as u64) % 1000);
    assert!(l.contains(&format!("{grouped} (  0.00%)")), "{grouped} in {l}");
    // 5% fewer orders over 6 boots a side at CoV 1%: called, marked *x%*, and negative.
    assert!(l.contains(&format!("*{:6.2}%*", 100.0 * (n - b) / b)), "{l}\n{text}");
    // The kernel as fast as the baseline is not marked.
    let same = text
        .lines()
        .filter(|l| l.starts_with("Hmean"))
        .nth(1)
        .unwrap_or_else(|| panic!("a second chunk:\n{text}"));
    let (c, _) = mean_sd(&values(&samples, "v6.15-rc4", "default", "tpcc", "nopm"));
    assert!(!same.contains('*') && (c - b).abs() / b < 0.02, "{same}");
    assert!(text.contains("v6.15-rc4"), "{text}");
}

#[test]
fn the_kernel_table_has_a_baseline_row_per_variant_and_each_kernels_change() {
    let (s, samples) = seed004();
    let text = render(&s, &samples, Format::KernelTable);
    let baselines = text.lines().filter(|l| l.starts_with("v6.5.13 ")).count();
    assert_eq!(baselines, 3, "one baseline row per variant:\n{text}");
    for variant in ["default", "batch", "NOx2"] {
        let (mb, _) = mean_sd(&values(&samples, "v6.5.13", variant, "tpcc", "nopm"));
        let (mk, _) = mean_sd(&values(&samples, "v6.14.4", variant, "tpcc", "nopm"));
        let want = format!("{:+.1}% REGR", 100.0 * (mk - mb) / mb);
        let row = text
            .lines()
            .find(|l| l.starts_with("v6.14.4") && l.contains(&format!("| {variant} ")))
            .unwrap_or_else(|| panic!("no v6.14.4 {variant} row in\n{text}"));
        assert!(row.contains(&want), "{want:?} in {row:?}");
    }
}

/// Long names, five kernels, three metrics of every kind, huge and tiny figures: still 80
/// columns, every kernel and every workload shown.
#[test]
fn long_names_and_many_kernels_still_fit() {
    let kernels = [
        "v6.5.13",
        "6.15.0-rc4-00123-gabcdef1234-dirty",
        "k3",
        "k4-with-a-long-name",
        "k5",
    ];
    let list: Vec<String> = kernels
        .iter()
        .map(|k| format!("{{ name: {k}, source: running }}"))
        .collect();
    let text = format!(
        "name: long\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\nkernels: [ {} ]\nbaseline: v6.5.13\n\
         variants: [ {{name: a-variant-with-a-very-long-name-indeed}}, {{name: batch, policy: batch}} ]\n\
         workloads: [ {{name: hackbench-with-a-name-longer-than-any-column, kind: hackbench}}, {{name: hb, kind: hackbench}} ]\n",
        list.join(", ")
    );
    let s = crate::scenario::from_str(&text, std::path::Path::new("/")).unwrap();
    let mut noise = Noise(9);
    let mut samples = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        for v in ["a-variant-with-a-very-long-name-indeed", "batch"] {
            for w in ["hackbench-with-a-name-longer-than-any-column", "hb"] {
                let f = 1.0 + 0.3 * i as f64;
                samples.extend(cell(&mut noise, (k, v, w), &TIME, 0.000123 * f, 0.05, 5));
                samples.extend(cell(&mut noise, (k, v, w), &RR, 12_345_678.0 / f, 0.05, 5));
                samples.extend(cell(&mut noise, (k, v, w), &P50, 3.0 * f * f, 0.05, 5));
            }
        }
    }
    for (name, f) in Format::NAMES.iter().filter(|(_, f)| f.is_shape()) {
        let out = render(&s, &samples, *f);
        within_80(&out);
        for k in ["k3", "k5"] {
            assert!(out.contains(k), "{name}: {k} missing\n{out}");
        }
        assert!(
            out.contains("6.15.0-rc4"),
            "{name}: the long kernel's name (cut) missing\n{out}"
        );
        assert!(out.contains("hackbench-with"), "{name}\n{out}");
    }
}

/// One kernel, its variants compared with the first; a count among the metrics; the
/// baseline variant's jobs all failed for one workload: every shape still fits, shows the
/// other variants without a change for that workload, and never a NaN.
#[test]
fn a_missing_baseline_cell_and_counts_are_shown_without_a_change() {
    let text =
        "name: one\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: k, source: running} ]\n\
                variants: [ {name: default}, {name: batch, policy: batch}, {name: idle, policy: idle} ]\n\
                workloads: [ {name: hb, kind: hackbench}, {name: lost, kind: hackbench} ]\n";
    let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
    const CS: Metric = Metric {
        name: "context_switches",
        unit: "",
        higher: false,
        kind: MetricKind::Count,
    };
    let mut noise = Noise(5);
    let mut samples = Vec::new();
    for (v, f) in [("default", 1.0), ("batch", 0.7), ("idle", 1.3)] {
        for w in ["hb", "lost"] {
            if w == "lost" && v == "default" {
                continue;
            }
            samples.extend(cell(&mut noise, ("k", v, w), &TIME, 2.0 * f, 0.01, 6));
            samples.extend(cell(&mut noise, ("k", v, w), &CS, (1000.0 * f).round(), 0.0, 6));
        }
    }
    for (name, f) in Format::NAMES.iter().filter(|(_, f)| f.is_shape()) {
        let out = render(&s, &samples, *f);
        within_80(&out);
        assert!(!out.contains("NaN") && !out.contains("inf"), "{name}\n{out}");
        assert!(out.contains("lost") && out.contains("idle"), "{name}\n{out}");
    }
    let bh = render(&s, &samples, Format::BaseHead);
    let lost = line(&bh, "lost ");
    assert!(
        lost.split_whitespace().nth(1) == Some("-"),
        "the baseline's cell is empty: {lost}"
    );
    assert!(lost.ends_with(" -  -  -") || lost.trim_end().ends_with('-'), "{lost}");
    let hb = line(&bh, "hb ");
    assert!(hb.ends_with("IMPR") || hb.ends_with("REGR"), "{bh}");
    let kt = render(&s, &samples, Format::KernelTable);
    assert!(
        kt.contains("no baseline row (default on k has no value: its jobs failed"),
        "{kt}"
    );
}
