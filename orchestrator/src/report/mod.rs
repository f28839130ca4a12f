//! `kreg report`: per workload metric, one row per kernel × variant with the summary
//! statistics and, against the baseline kernel with the same variant, the change, the test
//! behind it and a verdict. The report controls false discoveries across all its rows
//! (Benjamini–Hochberg). Pure: samples in, tables out; `render` writes them.

mod notes;
mod render;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

pub use notes::{definition_changes, environment_changes, failed_cells, unlike, FailedCell, JobSummary, Unlike};

/// The formats a report is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
}

/// A report: its tables and everything said around them. One value, four formats.
pub struct Report<'a> {
    pub run_id: i64,
    pub scenario: &'a Scenario,
    pub baseline: &'a Baseline,
    pub tables: &'a [MetricTable],
    pub settings: &'a Settings,
    pub prov: &'a [KernelProvenance],
    /// The caller's warnings (e.g. what differs between two compared runs).
    pub warnings: Vec<String>,
    /// Cells whose jobs failed: every format lists them with their reasons.
    pub failed: Vec<FailedCell>,
}

impl Report<'_> {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => render_text(self),
            Format::Markdown => render::render_markdown(self),
            Format::Csv => render::render_csv(self),
            Format::Json => render::render_json(self),
        }
    }

    /// What the reader must see before any number: environments that differ, settings not
    /// put back, the caller's warnings, and failed jobs.
    pub fn warning_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = provenance_lines(self.prov)
            .into_iter()
            .filter(|l| l.starts_with("WARNING"))
            .collect();
        out.extend(self.warnings.iter().map(|w| format!("WARNING: {w}")));
        if !self.failed.is_empty() {
            let n: usize = self.failed.iter().map(|c| c.failed).sum();
            out.push(format!(
                "WARNING: {n} job(s) failed in {} kernel/variant/workload cell(s); their samples are missing from the tables (failed jobs are listed below)",
                self.failed.len()
            ));
        }
        out
    }

    /// Provenance lines that are not warnings.
    pub fn info_lines(&self) -> Vec<String> {
        provenance_lines(self.prov)
            .into_iter()
            .filter(|l| !l.starts_with("WARNING"))
            .collect()
    }
}

use crate::results::{KernelProvenance, Sample};
use crate::scenario::Scenario;
use crate::stats::{self, Comparison, Settings, Summary};

/// One row of a metric's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kernel: String,
    pub variant: String,
    pub releases: Vec<String>,
    pub policies: Vec<String>,
    pub summary: Summary,
    /// Against the baseline kernel with the same variant; `None` for the baseline itself
    /// or when the baseline has no samples.
    pub change_pct: Option<f64>,
    /// The test and verdict against the baseline (same variant), when there is one.
    pub comparison: Option<Comparison>,
    pub samples: Vec<f64>,
    /// Samples the robust outlier rule flags.
    pub outliers: Vec<f64>,
    /// Whether the samples look like two modes.
    pub bimodal: bool,
    /// The baseline's sample count (for `kreg compare`).
    pub base_n: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricTable {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub rows: Vec<Row>,
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// What each row is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The row of this kernel with the same variant (kernels compared).
    Kernel(String),
    /// The row of this variant on the same kernel (variants compared).
    Variant(String),
    /// The same kernel, variant and workload in another run (`kreg compare`).
    Run(i64),
}

impl Baseline {
    fn is_base(&self, r: &Row) -> bool {
        match self {
            Baseline::Kernel(k) => &r.kernel == k,
            Baseline::Variant(v) => &r.variant == v,
            Baseline::Run(_) => false,
        }
    }

    fn base_of<'r>(&self, rows: &'r [Row], r: &Row) -> Option<&'r Row> {
        rows.iter().find(|b| match self {
            Baseline::Kernel(k) => &b.kernel == k && b.variant == r.variant,
            Baseline::Variant(v) => &b.variant == v && b.kernel == r.kernel,
            Baseline::Run(_) => false,
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Baseline::Kernel(k) => format!("baseline kernel {k} (same variant)"),
            Baseline::Variant(v) => format!("baseline variant {v} (same kernel)"),
            Baseline::Run(id) => format!("baseline run {id} (same kernel, variant and workload)"),
        }
    }
}

/// Groups samples into tables, in the scenario's order of workloads, kernels and variants,
/// compares every row with its baseline row and settles the verdicts across the whole
/// report.
pub fn tables(s: &Scenario, samples: &[Sample], baseline: &Baseline, settings: &Settings) -> Vec<MetricTable> {
    let mut out = group(s, samples);
    for t in out.iter_mut() {
        let snapshot = t.rows.clone();
        for r in t.rows.iter_mut().filter(|r| !baseline.is_base(r)) {
            if let Some(base) = baseline.base_of(&snapshot, r) {
                r.comparison = stats::compare(&base.samples, &r.samples, &t.metric, settings);
                r.change_pct = r.comparison.as_ref().map(|c| c.change_pct);
            }
        }
    }
    // Benjamini–Hochberg over every comparison in the report.
    let ps: Vec<f64> = out
        .iter()
        .flat_map(|t| t.rows.iter().filter_map(|r| r.comparison.as_ref().map(|c| c.p)))
        .collect();
    let mut adjusted = stats::benjamini_hochberg(&ps).into_iter();
    for t in out.iter_mut() {
        let hib = t.higher_is_better;
        let snapshot = t.rows.clone();
        for r in t.rows.iter_mut() {
            let n_base = baseline.base_of(&snapshot, r).map(|b| b.summary.n).unwrap_or(0);
            let n_new = r.summary.n;
            if let Some(c) = r.comparison.as_mut() {
                c.p_adjusted = adjusted.next().expect("one adjusted p per comparison");
                stats::settle(c, n_base, n_new, hib, settings);
            }
        }
    }
    out
}

/// Run B's rows, each compared with the row of run A that has the same workload, metric,
/// kernel and variant; verdicts settled over all of them.
pub fn compare_runs(sa: &Scenario, a: &[Sample], sb: &Scenario, b: &[Sample], settings: &Settings) -> Vec<MetricTable> {
    let ta = group(sa, a);
    let mut tb = group(sb, b);
    for t in tb.iter_mut() {
        let Some(base) = ta.iter().find(|x| x.workload == t.workload && x.metric == t.metric) else {
            continue;
        };
        for r in t.rows.iter_mut() {
            if let Some(br) = base
                .rows
                .iter()
                .find(|x| x.kernel == r.kernel && x.variant == r.variant)
            {
                r.comparison = stats::compare(&br.samples, &r.samples, &t.metric, settings);
                r.change_pct = r.comparison.as_ref().map(|c| c.change_pct);
                // Remember the baseline's n for the verdict.
                r.base_n = br.summary.n;
            }
        }
    }
    let ps: Vec<f64> = tb
        .iter()
        .flat_map(|t| t.rows.iter().filter_map(|r| r.comparison.as_ref().map(|c| c.p)))
        .collect();
    let mut adjusted = stats::benjamini_hochberg(&ps).into_iter();
    for t in tb.iter_mut() {
        let hib = t.higher_is_better;
        for r in t.rows.iter_mut() {
            let (n_base, n_new) = (r.base_n, r.summary.n);
            if let Some(c) = r.comparison.as_mut() {
                c.p_adjusted = adjusted.next().expect("one adjusted p per comparison");
                stats::settle(c, n_base, n_new, hib, settings);
            }
        }
    }
    tb
}

/// How many comparisons a report makes (the BH family size).
pub fn comparisons(tables: &[MetricTable]) -> usize {
    tables
        .iter()
        .map(|t| t.rows.iter().filter(|r| r.comparison.is_some()).count())
        .sum()
}

fn group(s: &Scenario, samples: &[Sample]) -> Vec<MetricTable> {
    let mut out = Vec::new();
    for w in &s.workloads {
        let mut metrics: Vec<(String, String, bool)> = Vec::new();
        for x in samples.iter().filter(|x| x.workload == w.name) {
            if !metrics.iter().any(|(m, _, _)| *m == x.metric) {
                metrics.push((x.metric.clone(), x.unit.clone(), x.higher_is_better));
            }
        }
        for (metric, unit, hib) in metrics {
            let mut rows = Vec::new();
            for k in &s.kernels {
                for v in &s.variants {
                    let mine: Vec<&Sample> = samples
                        .iter()
                        .filter(|x| {
                            x.workload == w.name && x.metric == metric && x.kernel == k.name && x.variant == v.name
                        })
                        .collect();
                    let values: Vec<f64> = mine.iter().map(|x| x.value).collect();
                    let Some(summary) = Summary::of(&values) else {
                        continue;
                    };
                    let mut releases = Vec::new();
                    let mut policies = Vec::new();
                    for x in &mine {
                        push_unique(&mut releases, &x.kernel_release);
                        push_unique(&mut policies, &x.observed_policy);
                    }
                    rows.push(Row {
                        kernel: k.name.clone(),
                        variant: v.name.clone(),
                        releases,
                        policies,
                        summary,
                        change_pct: None,
                        comparison: None,
                        base_n: 0,
                        outliers: stats::outliers(&values),
                        bimodal: stats::bimodal(&values),
                        samples: values,
                    });
                }
            }
            out.push(MetricTable {
                workload: w.name.clone(),
                metric,
                unit,
                higher_is_better: hib,
                rows,
            });
        }
    }
    out
}

pub(crate) fn fmt_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// What the verdicts rest on, for the top of every report.
pub fn method_line(tables: &[MetricTable], settings: &Settings) -> String {
    format!(
        "verdicts: Welch t-test on means, Mann-Whitney U on latencies and percentiles; alpha {} with Benjamini-Hochberg over {} comparisons; minimum effect {}%; median ratio CI by bootstrap ({} resamples)",
        settings.alpha,
        comparisons(tables),
        100.0 * settings.min_effect,
        settings.bootstrap_resamples
    )
}

pub(crate) fn unit_and_direction(t: &MetricTable) -> String {
    let better = if t.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    if t.unit.is_empty() {
        better.to_string()
    } else {
        format!("{}, {better}", t.unit)
    }
}

pub(crate) fn change_text(r: &Row, baseline: &Baseline) -> String {
    match (&r.comparison, r.change_pct) {
        (Some(c), _) => format!("{:+.2}%", c.change_pct),
        (None, Some(c)) => format!("{c:+.2}%"),
        (None, None) if baseline.is_base(r) => "(base)".into(),
        _ => "-".into(),
    }
}

/// The command line without what names the image itself.
fn comparable_cmdline(c: &str) -> String {
    c.split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Provenance lines for the top of a report, warnings first: compared sides that ran on
/// other CPU models or with other kernel command lines.
pub fn provenance_lines(prov: &[KernelProvenance]) -> Vec<String> {
    let mut out = Vec::new();
    let models: Vec<String> = {
        let mut m: Vec<String> = prov
            .iter()
            .flat_map(|p| p.cpu_models())
            .filter(|m| !m.is_empty())
            .collect();
        m.sort();
        m.dedup();
        m
    };
    if models.len() > 1 {
        out.push(format!(
            "WARNING: the kernels ran on different CPU models: {}",
            models.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" | ")
        ));
    }
    let cmdlines: Vec<String> = {
        let mut c: Vec<String> = prov
            .iter()
            .flat_map(|p| p.cmdlines())
            .map(|c| comparable_cmdline(&c))
            .collect();
        c.sort();
        c.dedup();
        c
    };
    if cmdlines.len() > 1 {
        out.push(format!(
            "WARNING: the kernels booted with different command lines: {}",
            cmdlines.join(" | ")
        ));
    }
    let not_restored: Vec<String> = prov
        .iter()
        .flat_map(|p| &p.settings)
        .filter(|s| !s.restored)
        .map(|s| s.to_string())
        .collect();
    if !not_restored.is_empty() {
        out.push(format!(
            "WARNING: settings kreg changed and could not put back yet (`kreg resume` or a reboot does): {}",
            not_restored.join("; ")
        ));
    }
    if prov.iter().any(|p| !p.settings.is_empty()) {
        out.push(
            "tuning: none applied by kreg (governor, turbo and sysctls as the hosts had them) but for the settings listed per kernel, which kreg changed for the run and puts back"
                .into(),
        );
    } else {
        out.push("tuning: none applied by kreg (governor, turbo and sysctls as the hosts had them)".into());
    }
    for p in prov {
        let mut parts = vec![format!("kernel {}: {}", p.kernel, p.boot_lines().join("; "))];
        if !p.settings.is_empty() {
            parts.push(format!("settings changed {}", p.setting_lines().join(", ")));
        }
        if p.no_schedstat {
            parts.push("no /proc/schedstat on the SUT: no scheduler statistics".to_string());
        }
        if !p.boots.is_empty() {
            parts.push(format!("CPU {}", p.cpu_models().join(" / ")));
        }
        if !p.builds.is_empty() {
            parts.push(format!("built {}", p.build_lines().join(", ")));
        }
        if !p.tools.is_empty() {
            parts.push(format!("tools {}", p.tool_lines().join(", ")));
        }
        out.push(parts.join("; "));
    }
    out
}

/// "outliers: 31.0; bimodal" or empty.
pub(crate) fn flags(r: &Row) -> String {
    let mut f = Vec::new();
    if !r.outliers.is_empty() {
        f.push(format!(
            "outliers: {}",
            r.outliers.iter().map(|v| fmt_value(*v)).collect::<Vec<_>>().join(" ")
        ));
    }
    if r.bimodal {
        f.push("bimodal".to_string());
    }
    f.join("; ")
}

/// The text report for a terminal.
fn render_text(r: &Report) -> String {
    let (baseline, tables) = (r.baseline, r.tables);
    let mut out = format!(
        "run {}: scenario {}, {}\n{}\n",
        r.run_id,
        r.scenario.name,
        baseline.describe(),
        method_line(tables, r.settings)
    );
    for line in r.warning_lines().into_iter().chain(r.info_lines()) {
        out.push_str(&line);
        out.push('\n');
    }
    if tables.is_empty() {
        out.push_str("no results stored yet\n");
    }
    for t in tables {
        out.push_str(&format!(
            "\n{} / {} ({})\n",
            t.workload,
            t.metric,
            unit_and_direction(t)
        ));
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED);
        table.set_header([
            "kernel", "variant", "release", "policy", "n", "mean", "stddev%", "change%", "verdict", "p (adj)", "flags",
        ]);
        for r in &t.rows {
            let (verdict, p) = match &r.comparison {
                Some(c) => (
                    c.verdict.as_str().to_string(),
                    format!("{:.3} ({:.3})", c.p, c.p_adjusted),
                ),
                None => (String::new(), String::new()),
            };
            table.add_row(vec![
                Cell::new(&r.kernel),
                Cell::new(&r.variant),
                Cell::new(r.releases.join(",")),
                Cell::new(r.policies.join(",")),
                Cell::new(r.summary.n).set_alignment(CellAlignment::Right),
                Cell::new(fmt_value(r.summary.mean)).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}%", r.summary.stddev_pct())).set_alignment(CellAlignment::Right),
                Cell::new(change_text(r, baseline)).set_alignment(CellAlignment::Right),
                Cell::new(verdict),
                Cell::new(p).set_alignment(CellAlignment::Right),
                Cell::new(flags(r)),
            ]);
        }
        out.push_str(&table.to_string());
        out.push('\n');
    }
    if !r.failed.is_empty() {
        out.push_str("\nfailed jobs:\n");
        for c in &r.failed {
            out.push_str(&format!("  {}\n", c.line()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Verdict;

    fn sample(kernel: &str, variant: &str, value: f64) -> Sample {
        Sample {
            kernel: kernel.into(),
            variant: variant.into(),
            workload: "hb".into(),
            iteration: 1,
            metric: "time".into(),
            value,
            unit: "s".into(),
            higher_is_better: false,
            kernel_release: format!("rel-{kernel}"),
            observed_policy: variant.into(),
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
        }
    }

    fn scenario() -> Scenario {
        let text = "name: r\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running}, {name: b, source: running} ]\nbaseline: a\nvariants: [ {name: other}, {name: batch, policy: batch} ]\nworkloads: [ {name: hb, kind: hackbench} ]\n";
        crate::scenario::from_str(text, std::path::Path::new("/")).unwrap()
    }

    #[test]
    fn change_is_against_baseline_with_same_variant() {
        let s = scenario();
        let mut samples = Vec::new();
        for v in [10.0, 10.1, 9.9, 10.05, 9.95] {
            samples.push(sample("a", "other", v));
            samples.push(sample("b", "other", v * 1.5));
            samples.push(sample("a", "batch", v * 2.0));
            samples.push(sample("b", "batch", v));
        }
        let base = Baseline::Kernel("a".into());
        let t = tables(&s, &samples, &base, &Settings::default());
        assert_eq!(t.len(), 1);
        let rows = &t[0].rows;
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[0].summary.n, rows[0].comparison.is_none()), (5, true));
        let c2 = rows[2].comparison.as_ref().unwrap();
        let c3 = rows[3].comparison.as_ref().unwrap();
        assert!((c2.change_pct - 50.0).abs() < 1e-9 && (c3.change_pct + 50.0).abs() < 1e-9);
        // time: lower is better.
        assert_eq!((c2.verdict, c3.verdict), (Verdict::Regression, Verdict::Improvement));
        let out = report(1, &s, &base, &t, &[]).render(Format::Text);
        assert!(out.contains("p (adj)") && out.contains("flags"), "{out}");
        assert!(
            out.contains("+50.00%") && out.contains("-50.00%") && out.contains("regression"),
            "{out}"
        );
        // Another baseline flips the comparison.
        let t = tables(&s, &samples, &Baseline::Kernel("b".into()), &Settings::default());
        assert_eq!(t[0].rows[0].comparison.as_ref().unwrap().verdict, Verdict::Improvement);
        // Variants compared on each kernel: batch against other.
        let t = tables(&s, &samples, &Baseline::Variant("other".into()), &Settings::default());
        let rows = &t[0].rows;
        assert!(rows[0].comparison.is_none() && rows[2].comparison.is_none());
        assert_eq!(
            rows[1].comparison.as_ref().unwrap().verdict,
            Verdict::Regression,
            "a/batch is 2x a/other"
        );
        assert!((rows[3].comparison.as_ref().unwrap().change_pct + 100.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn markdown_has_a_well_formed_table_per_metric() {
        let s = scenario();
        let mut samples = Vec::new();
        for (i, v) in [10.0, 10.1, 9.9].into_iter().enumerate() {
            for k in ["a", "b"] {
                for var in ["other", "batch"] {
                    samples.push(sample(k, var, v + i as f64 * 0.01));
                    let mut m = sample(k, var, v * 100.0);
                    m.metric = "lat_p99".into();
                    samples.push(m);
                }
            }
        }
        let base = Baseline::Kernel("a".into());
        let t = tables(&s, &samples, &base, &Settings::default());
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
        let headings = md.lines().filter(|l| l.starts_with("### ")).count();
        assert_eq!(headings, 2, "{md}");
        // Each table: a header, an alignment row of the same width, then data rows.
        let lines: Vec<&str> = md.lines().collect();
        let mut tables_seen = 0;
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("| kernel |") {
                tables_seen += 1;
                let cols = l.matches('|').count();
                assert!(
                    lines[i + 1].starts_with("|:--") && lines[i + 1].matches('|').count() == cols,
                    "{md}"
                );
                let body: Vec<&&str> = lines[i + 2..].iter().take_while(|r| r.starts_with('|')).collect();
                assert_eq!(body.len(), 4, "{md}");
                assert!(body.iter().all(|r| r.matches('|').count() == cols), "{md}");
            }
        }
        assert_eq!(tables_seen, 2);
        let csv = report(7, &s, &base, &t, &prov).render(Format::Csv);
        let width = csv.lines().next().unwrap().split(',').count();
        assert_eq!(csv.lines().count(), 1 + 8);
        assert!(csv.lines().all(|l| l.split(',').count() >= width), "{csv}");
        let json: serde_json::Value =
            serde_json::from_str(&report(7, &s, &base, &t, &prov).render(Format::Json)).unwrap();
        assert_eq!(json["rows"].as_array().unwrap().len(), 8);
        assert_eq!(json["settings"]["comparisons"], 4);
    }
}
