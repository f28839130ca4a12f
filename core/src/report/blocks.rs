//! A run spread over a fleet's machine pairs measured every kernel and variant on each
//! machine; machines differ (one a few percent slower, say), so their samples are not
//! replicates of one another. A row is compared with its baseline within machines: the
//! machine is a block. Each machine's values, on both sides, are shifted by the difference
//! between the baseline's level on that machine (its mean there) and the baseline's level
//! over all machines, which takes the machines' differences out of both the change and the
//! spread (the additive block model: value = level + machine + kernel/variant + noise).
//! A machine that has no baseline value in the row cannot be placed: its values are left
//! out of the test (they stay in the row's own figures).

use std::collections::HashMap;

use crate::results::Shared;
use crate::stats::Side;

/// The distinct machines of some samples, in the order first seen (empty names left out).
pub fn machines_of<'a>(m: impl IntoIterator<Item = &'a Shared>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for x in m {
        if !x.is_empty() && !out.contains(&&**x) {
            out.push(x);
        }
    }
    out
}

/// The mean of the values of each machine.
pub(super) fn levels(values: &[f64], machines: &[Shared]) -> HashMap<Shared, f64> {
    let mut sums: HashMap<Shared, (f64, usize)> = HashMap::new();
    for (v, m) in values.iter().zip(machines) {
        let e = sums.entry(m.clone()).or_default();
        e.0 += v;
        e.1 += 1;
    }
    sums.into_iter().map(|(m, (s, n))| (m, s / n as f64)).collect()
}

/// `side`'s values each shifted by its machine's baseline level less `all`; values of a
/// machine with no baseline level left out.
pub(super) fn shift(side: &Side, machines: &[Shared], levels: &HashMap<Shared, f64>, all: f64) -> Side {
    let mut out = Side {
        values: Vec::with_capacity(side.values.len()),
        boots: Vec::with_capacity(side.values.len()),
    };
    for ((v, b), m) in side.values.iter().zip(&side.boots).zip(machines) {
        if let Some(level) = levels.get(m) {
            out.values.push(v - (level - all));
            out.boots.push(b.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_s_offset_is_taken_out_of_both_sides() {
        let m = |s: &str| Shared::from(s);
        let side = |v: &[f64]| Side {
            values: v.to_vec(),
            boots: vec![m("b"); v.len()],
        };
        let machines = vec![m("a"), m("a"), m("b"), m("b")];
        let levels = levels(&[10.0, 12.0, 110.0, 112.0], &machines);
        let all = 61.0;
        let base = shift(&side(&[10.0, 12.0, 110.0, 112.0]), &machines, &levels, all);
        assert_eq!(base.values, vec![60.0, 62.0, 60.0, 62.0]);
        let new = shift(&side(&[15.0, 17.0, 115.0, 117.0]), &machines, &levels, all);
        assert_eq!(new.values, vec![65.0, 67.0, 65.0, 67.0]);
        // A machine the baseline was not measured on is left out.
        let other = shift(&side(&[1.0, 2.0]), &[m("a"), m("c")], &levels, all);
        assert_eq!(other.values, vec![51.0]);
        assert_eq!(machines_of(&[m(""), m("x"), m("y"), m("x")]), vec!["x", "y"]);
    }
}
