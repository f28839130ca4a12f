//! Verdicts for a set of rows under a sequential plan: at each look, the rows not yet
//! settled are measured on their first runs, adjusted together (Benjamini–Hochberg) and
//! judged with the alpha that look may spend; a verdict, once given, stands. Replaying the
//! stored samples gives the same verdicts, at the same looks, every time.

use super::kind::MetricKind;
use super::looks::Looks;
use super::tests_impl::benjamini_hochberg;
use super::units::{observations, Side};
use super::verdict::{decide, measure, Comparison, Settings, Verdict};

/// One row to judge: its baseline's samples and its own.
#[derive(Debug, Clone)]
pub struct RowInput {
    pub base: Side,
    pub new: Side,
    pub kind: MetricKind,
    pub higher_is_better: bool,
    /// Each boot is one observation (the run had `boots: N`, N ≥ 2); otherwise each run.
    pub by_boot: bool,
}

/// Judges every row. `complete`: the plan has run its course, so the last look sees every
/// observation there is; otherwise a look counts only for rows that reached its size.
pub fn judge(rows: &[RowInput], looks: &Looks, s: &Settings, complete: bool) -> Vec<Option<Comparison>> {
    let obs: Vec<_> = rows
        .iter()
        .map(|r| observations(&r.base, &r.new, r.kind, r.by_boot))
        .collect();
    let mut out: Vec<Option<Comparison>> = vec![None; rows.len()];
    let mut settled = vec![false; rows.len()];
    for (k, &at) in looks.at.iter().enumerate() {
        let last = k + 1 == looks.len();
        let (alpha, tail) = (looks.alpha_at(k, s.alpha), looks.alpha_at(k, s.equivalence_alpha));
        let mut here: Vec<(usize, Comparison)> = Vec::new();
        for (i, (unit, a, b)) in obs.iter().enumerate() {
            let reached = a.len() >= at && b.len() >= at;
            if settled[i] || !(reached || (last && complete)) {
                continue;
            }
            let (a, b) = (&a[..a.len().min(at)], &b[..b.len().min(at)]);
            let mut c = measure(a, b, rows[i].kind, *unit, tail);
            c.look = k;
            c.looks = looks.len();
            here.push((i, c));
        }
        let adjusted = benjamini_hochberg(&here.iter().map(|(_, c)| c.p).collect::<Vec<_>>());
        for ((i, mut c), p) in here.into_iter().zip(adjusted) {
            c.p_adjusted = p;
            decide(&mut c, rows[i].higher_is_better, alpha, s);
            settled[i] = c.verdict != Verdict::Inconclusive;
            if !last && !settled[i] {
                c.reason.push_str(&format!("; {}", looks.describe(k, c.unit.plural())));
            }
            out[i] = Some(c);
        }
    }
    out
}

/// One pair of samples under a fixed plan: what `kreg stats` and a single report row do.
pub fn judge_one(
    base: &[f64],
    new: &[f64],
    kind: MetricKind,
    higher_is_better: bool,
    s: &Settings,
) -> Option<Comparison> {
    let row = RowInput {
        base: Side::of_runs(base),
        new: Side::of_runs(new),
        kind,
        higher_is_better,
        by_boot: false,
    };
    judge(&[row], &Looks::fixed(), s, true).pop().flatten()
}
