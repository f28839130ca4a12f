//! `kreg schedstat diff` output: counters summed over CPUs with rates per second, the
//! derived figures, each domain level, and per-CPU rows.

use super::{domain_fields, Diff, CPU_FIELDS};

/// Text report of a diff; `hz` turns jiffies into seconds.
pub fn render_diff(d: &Diff, hz: u32) -> String {
    let secs = d.jiffies as f64 / hz as f64;
    let mut out = format!(
        "schedstat version {}, {} jiffies = {:.2} s at HZ={hz}\n\nall CPUs:\n",
        d.version, d.jiffies, secs
    );
    let t = d.cpu_total();
    for (i, name) in CPU_FIELDS.iter().enumerate() {
        if *name == "array_exp" {
            continue;
        }
        let rate = if secs > 0.0 {
            format!("{:>16.1}/s", t[i] as f64 / secs)
        } else {
            String::new()
        };
        out.push_str(&format!("  {name:<28}{:>16}{rate}\n", t[i]));
    }
    out.push_str("\nderived:\n");
    for (name, v, unit) in d.derived() {
        let v = if v.is_finite() { format!("{v:.2}") } else { "-".into() };
        out.push_str(&format!("  {name:<52}{v:>12} {unit}\n"));
    }
    let fields = domain_fields(d.version);
    for (index, name, v) in d.domain_totals() {
        let label = name
            .map(|n| format!("domain{index} ({n})"))
            .unwrap_or_else(|| format!("domain{index}"));
        out.push_str(&format!("\n{label}, all CPUs:\n"));
        for (f, x) in fields.iter().zip(&v) {
            if *x != 0 {
                out.push_str(&format!("  {f:<28}{x:>16}\n"));
            }
        }
    }
    out.push_str("\nper CPU:\n  cpu  sched_count  sched_goidle  ttwu_count  ttwu_local  run_delay(ns)  pcount\n");
    for c in &d.cpus {
        let v = &c.values;
        out.push_str(&format!(
            "  {:<4} {:>11}  {:>12}  {:>10}  {:>10}  {:>13}  {:>6}\n",
            c.cpu, v[2], v[3], v[4], v[5], v[7], v[8]
        ));
    }
    out
}
