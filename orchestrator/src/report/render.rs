//! Reports as markdown (to paste into a mail), CSV and JSON (every statistic).

use super::{change_text, fmt_value, method_line, unit_and_direction, Report};
use crate::stats::Verdict;

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown: a heading and a table per metric, value ± stddev%, change, verdict; a
/// significant change is marked in bold with its adjusted p.
pub(super) fn render_markdown(rep: &Report) -> String {
    let (baseline, tables) = (rep.baseline, rep.tables);
    let mut out = format!(
        "## kreg run {}: {}\n\nCompared with the {}. {}.\n\n",
        rep.run_id,
        md_escape(&rep.scenario.name),
        baseline.describe(),
        method_line(tables, rep.settings)
    );
    for line in rep.warning_lines().into_iter().chain(rep.info_lines()) {
        out.push_str(&format!("- {}\n", md_escape(&line)));
    }
    for t in tables {
        out.push_str(&format!(
            "\n### {} / {} ({})\n\n",
            md_escape(&t.workload),
            md_escape(&t.metric),
            unit_and_direction(t)
        ));
        out.push_str("| kernel | variant | n | mean ± stddev% | change | verdict | flags |\n");
        out.push_str("|:--|:--|--:|--:|--:|:--|:--|\n");
        for r in &t.rows {
            let (change, verdict) = match &r.comparison {
                Some(c) => {
                    let significant = matches!(c.verdict, Verdict::Regression | Verdict::Improvement);
                    let change = change_text(r, baseline);
                    if significant {
                        (
                            format!("**{change}**"),
                            format!("**{}** (p={:.3})", c.verdict.as_str(), c.p_adjusted),
                        )
                    } else {
                        (change, c.verdict.as_str().to_string())
                    }
                }
                None => (change_text(r, baseline), String::new()),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} ± {:.2}% | {} | {} | {} |\n",
                md_escape(&r.kernel),
                md_escape(&r.variant),
                r.summary.n,
                fmt_value(r.summary.mean),
                r.summary.stddev_pct(),
                change,
                verdict,
                md_escape(&super::flags(r))
            ));
        }
    }
    if !rep.failed.is_empty() {
        out.push_str("\n### Failed jobs\n\n");
        for c in &rep.failed {
            out.push_str(&format!("- {}\n", md_escape(&c.line())));
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV with every statistic, one line per workload × metric × kernel × variant; then one
/// line per cell whose jobs failed (metric empty, verdict `failed`, the reasons).
pub(super) fn render_csv(rep: &Report) -> String {
    let tables = rep.tables;
    let mut out = String::from(
        "workload,metric,unit,higher_is_better,kernel,variant,releases,policies,n,mean,median,stddev,cov_pct,min,max,outliers,bimodal,ci95_low,ci95_high,change_pct,change_ci_low_pct,change_ci_high_pct,median_ratio_ci_low,median_ratio_ci_high,test,p,p_adjusted,verdict,reason\n",
    );
    for t in tables {
        for r in &t.rows {
            let sm = &r.summary;
            let ci = sm.ci95();
            let c = r.comparison.as_ref();
            let num = |v: Option<f64>| v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default();
            let fields = [
                csv_field(&t.workload),
                csv_field(&t.metric),
                csv_field(&t.unit),
                t.higher_is_better.to_string(),
                csv_field(&r.kernel),
                csv_field(&r.variant),
                csv_field(&r.releases.join(" ")),
                csv_field(&r.policies.join(" ")),
                sm.n.to_string(),
                sm.mean.to_string(),
                sm.median.to_string(),
                sm.stddev.to_string(),
                sm.stddev_pct().to_string(),
                sm.min.to_string(),
                sm.max.to_string(),
                r.outliers.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "),
                r.bimodal.to_string(),
                num(ci.map(|c| c.0)),
                num(ci.map(|c| c.1)),
                num(c.map(|c| c.change_pct)),
                num(c.map(|c| c.change_ci_pct.0)),
                num(c.map(|c| c.change_ci_pct.1)),
                num(c.map(|c| c.median_ratio_ci.0)),
                num(c.map(|c| c.median_ratio_ci.1)),
                c.map(|c| format!("{:?}", c.test).to_lowercase()).unwrap_or_default(),
                num(c.map(|c| c.p)),
                num(c.map(|c| c.p_adjusted)),
                c.map(|c| c.verdict.as_str().to_string()).unwrap_or_default(),
                csv_field(c.map(|c| c.reason.as_str()).unwrap_or("")),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    for c in &rep.failed {
        let mut fields = vec![String::new(); 29];
        fields[0] = csv_field(&c.workload);
        fields[4] = csv_field(&c.kernel);
        fields[5] = csv_field(&c.variant);
        fields[8] = "0".into();
        fields[27] = "failed".into();
        fields[28] = csv_field(&format!(
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
                    "direction": if t.higher_is_better { "higher" } else { "lower" },
                    "kernel": r.kernel, "variant": r.variant, "releases": r.releases, "policies": r.policies,
                    "summary": r.summary, "ci95": r.summary.ci95(), "samples": r.samples,
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
                      "bootstrap_resamples": settings.bootstrap_resamples,
                      "multiple_comparisons": "benjamini-hochberg", "comparisons": super::comparisons(tables) },
        "rows": rows,
    });
    serde_json::to_string_pretty(&doc).expect("serialisable")
}
