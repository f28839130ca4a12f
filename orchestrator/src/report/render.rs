//! Reports as CSV and JSON: every statistic of every row, one line (or object) each.

use super::Report;

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

const CSV_HEADER: [&str; 36] = [
    "workload",
    "metric",
    "unit",
    "higher_is_better",
    "kind",
    "kernel",
    "variant",
    "releases",
    "policies",
    "n",
    "boots",
    "boot_share",
    "mean",
    "median",
    "stddev",
    "cov_pct",
    "q1",
    "q3",
    "min",
    "max",
    "outliers",
    "bimodal",
    "unit_of_analysis",
    "n_base",
    "n_new",
    "change",
    "ci_low",
    "ci_high",
    "ci_level",
    "test",
    "p",
    "p_adjusted",
    "alpha",
    "look",
    "verdict",
    "reason",
];

fn num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default()
}

fn csv_row(t: &super::MetricTable, r: &super::Row) -> Vec<String> {
    let sm = &r.summary;
    let c = r.comparison.as_ref();
    let ci = c.and_then(|c| c.ci);
    vec![
        csv_field(&t.workload),
        csv_field(&t.metric),
        csv_field(&t.unit),
        t.higher_is_better.to_string(),
        t.kind.to_string(),
        csv_field(&r.kernel),
        csv_field(&r.variant),
        csv_field(&r.releases.join(" ")),
        csv_field(&r.policies.join(" ")),
        sm.n.to_string(),
        r.boots().to_string(),
        num(r.boot_share),
        sm.mean.to_string(),
        sm.median.to_string(),
        sm.stddev.to_string(),
        sm.stddev_pct().to_string(),
        r.quartiles.0.to_string(),
        r.quartiles.1.to_string(),
        sm.min.to_string(),
        sm.max.to_string(),
        r.outliers.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "),
        r.bimodal.to_string(),
        c.map(|c| c.unit.plural().trim_end_matches('s').to_string())
            .unwrap_or_default(),
        c.map(|c| c.n[0].to_string()).unwrap_or_default(),
        c.map(|c| c.n[1].to_string()).unwrap_or_default(),
        num(c.map(|c| c.change)),
        num(ci.map(|x| x.0)),
        num(ci.map(|x| x.1)),
        num(c.map(|c| c.ci_level)),
        c.map(|c| {
            serde_json::to_value(c.test)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .unwrap_or_default(),
        num(c.map(|c| c.p)),
        num(c.map(|c| c.p_adjusted)),
        num(c.map(|c| c.alpha)),
        c.map(|c| format!("{}/{}", c.look + 1, c.looks)).unwrap_or_default(),
        c.map(|c| c.verdict.as_str().to_string()).unwrap_or_default(),
        csv_field(c.map(|c| c.reason.as_str()).unwrap_or("")),
    ]
}

/// CSV with every statistic, one line per workload × metric × kernel × variant; then one
/// line per cell whose jobs failed (metric empty, verdict `failed`, the reasons).
pub(super) fn render_csv(rep: &Report) -> String {
    let tables = rep.tables;
    let mut out = format!("{}\n", CSV_HEADER.join(","));
    for t in tables {
        for r in &t.rows {
            out.push_str(&csv_row(t, r).join(","));
            out.push('\n');
        }
    }
    for c in &rep.failed {
        let mut fields = vec![String::new(); CSV_HEADER.len()];
        let at = |name: &str| CSV_HEADER.iter().position(|h| *h == name).expect("a CSV column");
        fields[at("workload")] = csv_field(&c.workload);
        fields[at("kernel")] = csv_field(&c.kernel);
        fields[at("variant")] = csv_field(&c.variant);
        fields[at("n")] = "0".into();
        fields[at("verdict")] = "failed".into();
        fields[at("reason")] = csv_field(&format!(
            "{} of {} jobs failed: {}",
            c.failed,
            c.jobs,
            c.reasons.join(" | ")
        ));
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// JSON with every statistic and the settings behind the verdicts.
pub(super) fn render_json(rep: &Report) -> String {
    let (tables, settings) = (rep.tables, rep.settings);
    let rows: Vec<serde_json::Value> = tables
        .iter()
        .flat_map(|t| {
            t.rows.iter().map(move |r| {
                serde_json::json!({
                    "workload": t.workload, "metric": t.metric, "unit": t.unit,
                    "direction": if t.higher_is_better { "higher" } else { "lower" }, "kind": t.kind,
                    "boots": r.boots(), "boot_share": r.boot_share, "quartiles": [r.quartiles.0, r.quartiles.1],
                    "kernel": r.kernel, "variant": r.variant, "releases": r.releases, "policies": r.policies,
                    "summary": r.summary, "ci95": r.summary.ci95(), "samples": r.side.values, "boot_ids": r.side.boots,
                    "outliers": r.outliers, "bimodal": r.bimodal,
                    "comparison": r.comparison,
                })
            })
        })
        .collect();
    let doc = serde_json::json!({
        "run": rep.run_id,
        "scenario": rep.scenario.name,
        "baseline": rep.baseline.describe(),
        "provenance": rep.prov,
        "warnings": rep.warning_lines(),
        "failed": rep.failed,
        "settings": { "alpha": settings.alpha, "min_effect": settings.min_effect,
                      "equivalence_alpha": settings.equivalence_alpha,
                      "looks": if rep.scenario.looks().is_fixed() { serde_json::Value::Null } else { serde_json::json!(rep.scenario.looks().at) },
                      "multiple_comparisons": "benjamini-hochberg", "comparisons": super::comparisons(tables) },
        "rows": rows,
    });
    serde_json::to_string_pretty(&doc).expect("serialisable")
}
