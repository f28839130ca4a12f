//! A table's change bars: how far they reach, and the % axis under them (for a run's
//! comparison and for two runs side by side alike).

use super::svg;
use crate::report::{MetricTable, Row};
use crate::view::Loaded;

/// How far the change bars of a table reach: every change and finite interval bound, and
/// twice the minimum effect, with a margin.
pub(super) fn bar_reach(rows: &[&Row], me: f64) -> f64 {
    rows.iter()
        .filter_map(|r| r.comparison.as_ref())
        .flat_map(|c| {
            let (lo, hi) = c.ci.unwrap_or((c.change, c.change));
            let (tl, th) = c.ci_test.flatten().unwrap_or((c.change, c.change));
            [c.change.abs(), lo.abs(), hi.abs(), tl.abs(), th.abs()]
        })
        .filter(|v| v.is_finite())
        .fold(2.0 * me, f64::max)
        * 1.1
}

/// The footer row of a table's change bars: their % axis in the interval column (`at`, of
/// `width` columns), on the scale the bars of `rows` use. Its id is the table's, so that a
/// live page replaces it with the rows.
pub(super) fn axis_row(l: &Loaded, t: &MetricTable, rows: &[&Row], width: usize, at: usize) -> (String, Vec<String>) {
    use sha2::Digest;
    let me = l.settings.min_effect;
    let mut cells = vec![String::new(); width];
    if rows.iter().any(|r| r.comparison.is_some()) {
        cells[at - 1] = "<small class=\"axis-label\">change, %</small>".into();
        cells[at] = svg::change_axis(me, bar_reach(rows, me));
    }
    let key = format!("{}\0{}", t.workload, t.metric);
    let id = format!("x-{}", hex::encode(&sha2::Sha256::digest(key.as_bytes())[..6]));
    (id, cells)
}
