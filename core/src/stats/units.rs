//! What one observation is: each run, or, when both sides were measured over two boots or
//! more, each boot (its runs' mean, whatever the kind), so that a difference between boots
//! is not read as the kernel's effect. Also the share of the variance that
//! lies between boots.

use super::kind::MetricKind;
use super::verdict::Unit;

/// Text a report holds many times over (a job's kernel, variant, workload, boot …, in each
/// of its samples): shared, not copied.
pub type Shared = std::sync::Arc<str>;

/// One side's samples in the order they were taken, each with the boot it ran in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Side {
    pub values: Vec<f64>,
    /// The boot of each value (any label; equal labels are one boot).
    pub boots: Vec<Shared>,
}

impl Side {
    /// Samples with no boot information: one boot.
    pub fn of_runs(values: &[f64]) -> Side {
        Side {
            values: values.to_vec(),
            boots: vec![Shared::from(""); values.len()],
        }
    }

    /// The values grouped by boot, in the order the boots first appear.
    pub fn by_boot(&self) -> Vec<Vec<f64>> {
        let mut order: Vec<&str> = Vec::new();
        let mut groups: Vec<Vec<f64>> = Vec::new();
        for (v, b) in self.values.iter().zip(&self.boots) {
            match order.iter().position(|x| *x == &**b) {
                Some(i) => groups[i].push(*v),
                None => {
                    order.push(b);
                    groups.push(vec![*v]);
                }
            }
        }
        groups
    }

    pub fn boot_count(&self) -> usize {
        self.by_boot().len()
    }
}

/// The observations of both sides and what they are: boots when the run takes boots as
/// its unit and both sides have two or more, runs otherwise.
pub fn observations(base: &Side, new: &Side, kind: MetricKind, by_boot: bool) -> (Unit, Vec<f64>, Vec<f64>) {
    if by_boot && base.boot_count() >= 2 && new.boot_count() >= 2 {
        // The mean of the boot's runs, for rank kinds too: a percentile printed in whole
        // microseconds has a median of three runs on the same few values, ties that cost
        // the rank test its power (+10% on a p99 of 20 µs, 5% a run, 1% a boot, 4..8 boots:
        // caught in 82% of trials with medians, 97% with means; false alarms 0.2% both).
        let _ = kind;
        let centre = |g: &Vec<f64>| g.iter().sum::<f64>() / g.len() as f64;
        let a = base.by_boot().iter().map(centre).collect();
        let b = new.by_boot().iter().map(centre).collect();
        (Unit::Boot, a, b)
    } else {
        (Unit::Run, base.values.clone(), new.values.clone())
    }
}

/// The share of the variance between boots (one-way random effects, the ANOVA estimate):
/// `None` with fewer than two boots or no boot with two runs.
pub fn between_boot_share(side: &Side) -> Option<f64> {
    let groups = side.by_boot();
    let g = groups.len();
    let n: usize = groups.iter().map(|x| x.len()).sum();
    if g < 2 || n <= g {
        return None;
    }
    let grand = side.values.iter().sum::<f64>() / n as f64;
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let ssb: f64 = groups.iter().map(|x| x.len() as f64 * (mean(x) - grand).powi(2)).sum();
    let ssw: f64 = groups
        .iter()
        .map(|x| {
            let m = mean(x);
            x.iter().map(|v| (v - m).powi(2)).sum::<f64>()
        })
        .sum();
    let (msb, msw) = (ssb / (g - 1) as f64, ssw / (n - g) as f64);
    let n0 = (n as f64 - groups.iter().map(|x| (x.len() as f64).powi(2)).sum::<f64>() / n as f64) / (g - 1) as f64;
    let between = ((msb - msw) / n0).max(0.0);
    let total = between + msw;
    Some(if total == 0.0 { 0.0 } else { between / total })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(v: &[(f64, &str)]) -> Side {
        Side {
            values: v.iter().map(|x| x.0).collect(),
            boots: v.iter().map(|x| x.1.into()).collect(),
        }
    }

    #[test]
    fn boots_become_the_unit_only_when_both_sides_have_two() {
        let a = side(&[(1.0, "x"), (3.0, "y"), (2.0, "x"), (5.0, "y")]);
        let b = side(&[(2.0, "p"), (2.0, "q"), (4.0, "p")]);
        let (u, oa, ob) = observations(&a, &b, MetricKind::Mean, true);
        assert_eq!((u, oa, ob), (Unit::Boot, vec![1.5, 4.0], vec![3.0, 2.0]));
        let one = side(&[(2.0, "p"), (4.0, "p")]);
        let (u, oa, _) = observations(&a, &one, MetricKind::Latency, true);
        assert_eq!((u, oa.len()), (Unit::Run, 4));
        // A run without `boots` takes runs as observations even if they span boots.
        assert_eq!(observations(&a, &b, MetricKind::Mean, false).0, Unit::Run);
    }

    #[test]
    fn variance_share_between_boots() {
        // Two boots 10 apart, small spread within: nearly all the variance is between.
        let a = side(&[
            (100.0, "1"),
            (101.0, "1"),
            (99.0, "1"),
            (110.0, "2"),
            (111.0, "2"),
            (109.0, "2"),
        ]);
        assert!(between_boot_share(&a).unwrap() > 0.95);
        // Same means per boot: none between.
        let b = side(&[(100.0, "1"), (102.0, "1"), (101.0, "2"), (101.0, "2")]);
        assert_eq!(between_boot_share(&b), Some(0.0));
        assert_eq!(between_boot_share(&Side::of_runs(&[1.0, 2.0])), None);
    }
}
