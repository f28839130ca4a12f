//! A tested commit's position between the references: 0 where good is, 1 where bad is,
//! with Fieller's interval for the ratio (step − good) / (bad − good). Each boot's value is
//! one unit; the boot-to-boot variance is pooled over the three commits (one machine, one
//! workload), and the two differences share good's mean, which the interval accounts for.

use crate::stats::t_quantile;

/// A position with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn squares(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m).powi(2)).sum()
}

/// `step`'s position between `good` and `bad` with its two-sided (1 − `alpha`) interval;
/// `None` while a side has too few boots or while good and bad are not told apart at that
/// level (the interval would be unbounded).
pub fn position(good: &[f64], bad: &[f64], step: &[f64], alpha: f64) -> Option<Position> {
    let (ng, nb, ns) = (good.len(), bad.len(), step.len());
    if ng < 2 || nb < 2 || ns == 0 {
        return None;
    }
    let df = (ng + nb + ns - 3) as f64;
    let s2 = (squares(good) + squares(bad) + squares(step)) / df;
    let (mg, mb, ms) = (mean(good), mean(bad), mean(step));
    let (a, b) = (ms - mg, mb - mg);
    let (ng, nb, ns) = (ng as f64, nb as f64, ns as f64);
    let va = s2 * (1.0 / ns + 1.0 / ng);
    let vb = s2 * (1.0 / nb + 1.0 / ng);
    let cab = s2 / ng;
    let t2 = t_quantile(alpha, df).powi(2);
    // The positions p for which a − p·b is within t of zero: qa·p² − 2·qb·p + qc ≤ 0.
    let qa = b * b - t2 * vb;
    if qa.is_nan() || qa <= 0.0 {
        return None;
    }
    let qb = a * b - t2 * cab;
    let qc = a * a - t2 * va;
    let r = (qb * qb - qa * qc).max(0.0).sqrt();
    Some(Position {
        estimate: a / b,
        lo: (qb - r) / qa,
        hi: (qb + r) / qa,
    })
}
