//! Warm-up runs (`warmup: N`): the first runs of each cell in each boot, stored and shown
//! but never judged. The report says, per cell, how many there were and how far the
//! warm-up that strayed most lies from the judged runs.

use std::collections::BTreeMap;

use crate::results::Sample;

/// One line per cell (kernel, variant, workload) with warm-up runs: their count and the
/// metric whose warm-up value lies farthest from the median of the judged runs (as a
/// ratio), so that a first run after a boot that is 2.4× the rest is seen.
pub fn lines(warmups: &[Sample], judged: &[Sample]) -> Vec<String> {
    type Cell<'a> = (&'a str, &'a str, &'a str);
    let mut runs: std::collections::BTreeSet<Cell> = std::collections::BTreeSet::new();
    let mut values: BTreeMap<(Cell, &str), Vec<f64>> = BTreeMap::new();
    for s in warmups {
        let cell = (&*s.kernel, &*s.variant, &*s.workload);
        runs.insert(cell);
        values.entry((cell, &*s.metric)).or_default().push(s.value);
    }
    let mut medians: BTreeMap<(Cell, &str), Vec<f64>> = BTreeMap::new();
    for s in judged {
        let cell = (&*s.kernel, &*s.variant, &*s.workload);
        if runs.contains(&cell) {
            medians.entry((cell, &*s.metric)).or_default().push(s.value);
        }
    }
    let mut out = Vec::new();
    for cell in &runs {
        // Runs: the values of the metric they gave most of (each run gives each once).
        let n = values
            .iter()
            .filter(|((c, _), _)| c == cell)
            .map(|(_, v)| v.len())
            .max()
            .unwrap_or(0);
        // The warm-up value farthest from its judged median, by the ratio's logarithm.
        let mut worst: Option<(f64, String)> = None;
        for ((c, metric), vals) in values.iter().filter(|((c, _), _)| c == cell) {
            let Some(judged) = medians.get(&(*c, *metric)) else {
                continue;
            };
            let m = crate::stats::median(&mut judged.clone());
            for v in vals {
                if !(m > 0.0 && *v > 0.0) {
                    continue;
                }
                let far = (v / m).ln().abs();
                if worst.as_ref().is_none_or(|(w, _)| far > *w) {
                    worst = Some((
                        far,
                        format!(
                            "{metric} {} against a median of {} in the judged runs ({:.2}×)",
                            super::fmt_value(*v),
                            super::fmt_value(m),
                            v / m
                        ),
                    ));
                }
            }
        }
        let (kernel, variant, workload) = cell;
        let detail = worst.map(|(_, t)| format!("; farthest: {t}")).unwrap_or_default();
        out.push(format!(
            "warm-up (stored, not judged): kernel {kernel}, variant {variant}, {workload}: {n} run{}{detail}",
            if n == 1 { "" } else { "s" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(kernel: &str, iteration: i32, boot: &str, metric: &str, value: f64) -> Sample {
        Sample {
            kernel: kernel.into(),
            variant: "default".into(),
            workload: "hb".into(),
            iteration,
            metric: metric.into(),
            value,
            unit: "s".into(),
            higher_is_better: false,
            kind: crate::stats::MetricKind::Mean,
            kernel_release: "r".into(),
            observed_policy: "normal".into(),
            boot_id: boot.into(),
            machine: "".into(),
        }
    }

    #[test]
    fn each_cell_says_its_warm_ups_and_the_one_farthest_from_the_rest() {
        let warm = [
            s("a", 0, "b1", "time", 24.1),
            s("a", 0, "b2", "time", 10.4),
            s("a", 0, "b1", "wall", 1.0),
        ];
        let judged = [
            s("a", 1, "b1", "time", 10.0),
            s("a", 2, "b1", "time", 9.9),
            s("a", 3, "b2", "time", 10.1),
            s("a", 1, "b1", "wall", 1.0),
        ];
        let l = lines(&warm, &judged);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].contains("kernel a, variant default, hb: 2 runs; farthest: time 24.10 against a median of 10.00 in the judged runs (2.41×)"),
            "{l:?}"
        );
        assert!(lines(&[], &judged).is_empty());
    }
}
