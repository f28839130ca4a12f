//! Verdicts for a set of rows under a sequential plan: at each look, the rows not yet
//! settled are measured on their first runs, adjusted together (Benjamini–Hochberg) and
//! judged with the alpha that look may spend; a verdict, once given, stands. Replaying the
//! stored samples gives the same verdicts, at the same looks, every time.

use super::hypothesis::benjamini_hochberg;
use super::kind::MetricKind;
use super::looks::Looks;
use super::measure::measure;
use super::units::{observations, Side};
use super::verdict::Unit;
use super::verdict::{decide, Comparison, Settings, Verdict};

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
        let mut todo = Vec::new();
        for (i, (unit, a, b)) in obs.iter().enumerate() {
            let reached = a.len() >= at && b.len() >= at;
            if settled[i] || !(reached || (last && complete)) {
                continue;
            }
            todo.push((i, *unit, &a[..a.len().min(at)], &b[..b.len().min(at)]));
        }
        let here: Vec<(usize, Comparison)> = measure_all(&todo, rows, tail)
            .into_iter()
            .map(|(i, mut c)| {
                c.look = k;
                c.looks = looks.len();
                (i, c)
            })
            .collect();
        let adjusted = benjamini_hochberg(&here.iter().map(|(_, c)| c.p).collect::<Vec<_>>());
        for ((i, mut c), p) in here.into_iter().zip(adjusted) {
            c.p_adjusted = p;
            decide(&mut c, rows[i].higher_is_better, alpha, s);
            if c.verdict.is_change() && c.unit == Unit::Run && boots_differ(&rows[i].base, &rows[i].new) {
                c.verdict = c.verdict.unconfirmed();
                c.reason.push_str(UNCONFIRMED);
            }
            test_interval(&mut c, todo_of(&todo, i), rows[i].kind, alpha);
            settled[i] = c.verdict != Verdict::Inconclusive;
            if !last && !settled[i] {
                c.reason.push_str(&format!("; {}", looks.describe(k, c.unit.plural())));
            }
            out[i] = Some(c);
        }
    }
    out
}

/// Why a significant change within one boot of each side is not called a regression.
const UNCONFIRMED: &str = "; unconfirmed: each side's runs share boots of their own, and two boots of one kernel can differ as much (`boots: 2` or more measures that and confirms or clears it)";

/// Whether the two sides were measured on different boots: a difference between them then
/// carries the difference between their boots. Sides without boot labels (numbers given
/// by hand) and sides measured on the same boots (two variants of one kernel) do not.
fn boots_differ(base: &Side, new: &Side) -> bool {
    use std::collections::BTreeSet;
    fn set(s: &Side) -> BTreeSet<&str> {
        s.boots.iter().map(|b| &**b).collect()
    }
    set(base) != set(new)
}

type Task<'a> = (usize, super::verdict::Unit, &'a [f64], &'a [f64]);

fn todo_of<'t, 'a>(todo: &'t [Task<'a>], i: usize) -> &'t Task<'a> {
    todo.iter().find(|t| t.0 == i).expect("measured rows are in todo")
}

/// Where a change is at stake — the verdict is one, or the interval shown clears 0 without
/// the test reaching alpha — the interval at the test's own level (1 − `alpha`) is added, so
/// that a row whose 90% interval lies beyond the band says why it is not a change.
fn test_interval(c: &mut Comparison, task: &Task, kind: MetricKind, alpha: f64) {
    let clears = c.ci.is_some_and(|(l, h)| l > 0.0 || h < 0.0);
    if !(c.verdict.is_change() || (c.verdict == Verdict::Inconclusive && clears)) || c.n[0] < 2 || c.n[1] < 2 {
        return;
    }
    let (_, unit, a, b) = *task;
    let wide = measure(a, b, kind, unit, alpha / 2.0).ci;
    c.ci_test = Some(wide);
    c.ci_test_level = Some(1.0 - alpha);
    if c.verdict == Verdict::Inconclusive {
        c.reason.push_str(&format!(
            "; the {}% interval clears 0, but a change is called only when the test reaches alpha {alpha:.2e} (after the adjustment over the rows): at the test's level the interval of the change is {} ({}%)",
            super::verdict::level_text(c.ci_level),
            super::verdict::interval_text(wide),
            super::verdict::level_text(1.0 - alpha),
        ));
    }
}

/// Measures each row; on several cores when two rows or more call for the rank test's
/// Monte Carlo (each measurement is a pure function of its samples: the order of the work
/// changes nothing).
fn measure_all(todo: &[Task], rows: &[RowInput], tail: f64) -> Vec<(usize, Comparison)> {
    let one = |&(i, unit, a, b): &Task| (i, measure(a, b, rows[i].kind, unit, tail));
    let heavy = todo
        .iter()
        .filter(|(i, _, a, b)| rows[*i].kind.by_ranks() && a.len() + b.len() > super::rank::EXACT_UP_TO)
        .count();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo.len());
    if heavy < 2 || threads < 2 {
        return todo.iter().map(one).collect();
    }
    // Thread t takes rows t, t + threads, …: heavy rows spread over the threads.
    let mut out: Vec<(usize, Comparison)> = std::thread::scope(|scope| {
        let parts: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || todo.iter().skip(t).step_by(threads).map(one).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().expect("a measurement does not panic"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
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
