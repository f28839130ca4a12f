//! `kreg report`: per workload metric, one row per kernel × variant with n, mean, stddev%
//! and the change against the baseline kernel with the same variant.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

use crate::scenario::Scenario;
use crate::stats::{change_pct, Summary};
use crate::store::Sample;

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

/// Groups samples into tables, in the scenario's order of workloads, kernels and variants.
pub fn tables(s: &Scenario, samples: &[Sample]) -> Vec<MetricTable> {
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
                    });
                }
            }
            let bases: Vec<(String, f64)> = rows
                .iter()
                .filter(|r| r.kernel == s.baseline)
                .map(|r| (r.variant.clone(), r.summary.mean))
                .collect();
            for r in rows.iter_mut().filter(|r| r.kernel != s.baseline) {
                if let Some((_, base)) = bases.iter().find(|(v, _)| *v == r.variant) {
                    r.change_pct = change_pct(*base, r.summary.mean);
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

fn fmt_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The text report for a terminal.
pub fn render_text(run_id: i64, s: &Scenario, tables: &[MetricTable]) -> String {
    let mut out = format!("run {run_id}: scenario {}, baseline kernel {}\n", s.name, s.baseline);
    if tables.is_empty() {
        out.push_str("no results stored yet\n");
    }
    for t in tables {
        let better = if t.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        };
        let unit = if t.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.unit)
        };
        out.push_str(&format!("\n{} / {}{unit}, {better}\n", t.workload, t.metric));
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED);
        table.set_header([
            "kernel", "variant", "release", "policy", "n", "mean", "stddev%", "change%",
        ]);
        for r in &t.rows {
            let change = match r.change_pct {
                Some(c) => format!("{c:+.2}%"),
                None if r.kernel == s.baseline => "(base)".into(),
                None => "-".into(),
            };
            table.add_row(vec![
                Cell::new(&r.kernel),
                Cell::new(&r.variant),
                Cell::new(r.releases.join(",")),
                Cell::new(r.policies.join(",")),
                Cell::new(r.summary.n).set_alignment(CellAlignment::Right),
                Cell::new(fmt_value(r.summary.mean)).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}%", r.summary.stddev_pct())).set_alignment(CellAlignment::Right),
                Cell::new(change).set_alignment(CellAlignment::Right),
            ]);
        }
        out.push_str(&table.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn change_is_against_baseline_with_same_variant() {
        let text = "name: r\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running}, {name: b, source: running} ]\nbaseline: a\nvariants: [ {name: other}, {name: batch, policy: batch} ]\nworkloads: [ {name: hb, kind: hackbench} ]\n";
        let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
        let samples = vec![
            sample("a", "other", 10.0),
            sample("a", "other", 12.0),
            sample("a", "batch", 20.0),
            sample("b", "other", 16.5),
            sample("b", "batch", 10.0),
        ];
        let t = tables(&s, &samples);
        assert_eq!(t.len(), 1);
        let rows = &t[0].rows;
        assert_eq!(rows.len(), 4);
        assert_eq!(
            (rows[0].summary.n, rows[0].summary.mean, rows[0].change_pct),
            (2, 11.0, None)
        );
        assert_eq!(rows[2].change_pct, Some(50.0));
        assert_eq!(rows[3].change_pct, Some(-50.0));
        let out = render_text(1, &s, &t);
        assert!(
            out.contains("+50.00%") && out.contains("-50.00%") && out.contains("(base)"),
            "{out}"
        );
    }
}
