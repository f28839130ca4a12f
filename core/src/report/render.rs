//! Reports as CSV and JSON: every statistic of every row, one line (or object) each.

use super::Report;

/// A text cell: quoted when it holds a separator, a quote or a line end; a cell a
/// spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a carriage return
/// first) gets a `'` first, so that it stays text.
fn csv_field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
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
    let reason = CSV_HEADER.iter().position(|h| *h == "reason").expect("a CSV column");
    for t in tables {
        for r in &t.rows {
            let mut fields = csv_row(t, r);
            if let Some(p) = rep.provisional {
                // The row's mark before its reason, as the other formats' top line says.
                let note = p.row_note(&t.workload, &r.kernel, &r.variant, r.summary.n);
                let was = r.comparison.as_ref().map(|c| c.reason.as_str()).unwrap_or("");
                fields[reason] = csv_field(&if was.is_empty() { note } else { format!("{note}; {was}") });
            }
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    if let Some(sec) = rep.sched_stats {
        out.push_str(&sched_stats_csv(sec));
    }
    for c in &rep.failed {
        let mut fields = vec![String::new(); CSV_HEADER.len()];
        let at = |name: &str| CSV_HEADER.iter().position(|h| *h == name).expect("a CSV column");
        fields[at("workload")] = csv_field(&c.workload);
        fields[at("kernel")] = csv_field(&c.kernel);
        fields[at("variant")] = csv_field(&c.variant);
        fields[at("n")] = "0".into();
        // A cell only the lab failed is missing, not failed.
        fields[at("verdict")] = if c.failed > 0 { "failed" } else { "missing" }.into();
        let line = c.line();
        let cell = format!("kernel {}, variant {}, workload {}: ", c.kernel, c.variant, c.workload);
        fields[at("reason")] = csv_field(line.strip_prefix(&cell).unwrap_or(&line));
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The `perf sched stats` fields, one line each: the compared side's figures, the change
/// against the base side, `moved` or `noise` as the verdict.
fn sched_stats_csv(sec: &super::sched_stats::SchedStats) -> String {
    let at = |name: &str| CSV_HEADER.iter().position(|h| *h == name).expect("a CSV column");
    let mut out = String::new();
    for p in &sec.pairs {
        for f in &p.fields {
            let mut c = vec![String::new(); CSV_HEADER.len()];
            c[at("workload")] = csv_field(&p.workload);
            c[at("metric")] = csv_field(&super::sched_stats::metric_of(f));
            c[at("kind")] = "sched_stats".into();
            c[at("kernel")] = csv_field(&p.new.0);
            c[at("variant")] = csv_field(&p.new.1);
            c[at("n")] = f.new.n.to_string();
            c[at("mean")] = f.new.mean.to_string();
            c[at("stddev")] = f.new.stddev.to_string();
            c[at("cov_pct")] = f.new.pct().to_string();
            c[at("n_base")] = f.base.n.to_string();
            c[at("n_new")] = f.new.n.to_string();
            c[at("change")] = num(f.change);
            c[at("ci_low")] = num(f.ci.map(|x| x.0));
            c[at("ci_high")] = num(f.ci.map(|x| x.1));
            c[at("ci_level")] = (1.0 - sec.alpha).to_string();
            c[at("test")] = if f.p.is_some() { "welch".into() } else { String::new() };
            c[at("p")] = num(f.p);
            c[at("p_adjusted")] = num(f.p_adjusted);
            c[at("alpha")] = sec.alpha.to_string();
            c[at("verdict")] = csv_field(f.call());
            c[at("reason")] = csv_field(&format!(
                "perf sched stats against {} (mean {} ± {:.1}%)",
                p.base_label(),
                f.base.mean,
                f.base.pct()
            ));
            out.push_str(&c.join(","));
            out.push('\n');
        }
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
                    "machines": super::blocks::machines_of(&r.machines),
                    "comparison": r.comparison,
                    "provisional": rep.provisional.map(|p| serde_json::json!({
                        "observations": r.summary.n,
                        "may_add": p.left_in(&t.workload, &r.kernel, &r.variant),
                    })),
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
        "provisional": rep.provisional,
        "rows": rows,
        "sched_stats": rep.sched_stats,
    });
    serde_json::to_string_pretty(&doc).expect("serialisable")
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn text_cells_never_run_as_formulas() {
        assert_eq!(
            csv_field("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(csv_field("+1"), "'+1");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-cmd"), "'-cmd");
        assert_eq!(csv_field("ops/s"), "ops/s");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
    }
}
