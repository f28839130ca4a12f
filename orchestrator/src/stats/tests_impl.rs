//! Welch's t-test for means, the Student t quantile, and the Benjamini–Hochberg
//! adjustment. The rank test lives in `rank`.

use statrs::distribution::{ContinuousCDF, StudentsT};

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn var(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Welch's t-test. Returns (t, degrees of freedom, two-sided p). Needs n ≥ 2 on each side.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (va, vb) = (var(a) / a.len() as f64, var(b) / b.len() as f64);
    let se2 = va + vb;
    if se2 == 0.0 {
        // Two constant samples: equal means say nothing differs, different ones say it all.
        let p = if mean(a) == mean(b) { 1.0 } else { 0.0 };
        return Some((
            if p == 1.0 { 0.0 } else { f64::INFINITY },
            (a.len() + b.len() - 2) as f64,
            p,
        ));
    }
    let t = (mean(b) - mean(a)) / se2.sqrt();
    let df = se2.powi(2) / (va.powi(2) / (a.len() as f64 - 1.0) + vb.powi(2) / (b.len() as f64 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    Some((t, df, p.clamp(0.0, 1.0)))
}

/// The two-sided Student t quantile for a (1 − alpha) interval with `df` degrees of freedom.
pub fn t_quantile(alpha: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1.0))
        .map(|d| d.inverse_cdf(1.0 - alpha / 2.0))
        .unwrap_or(f64::NAN)
}

/// Benjamini–Hochberg adjusted p-values (same order as given).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adj = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in idx.iter().enumerate().rev() {
        let v = (p[i] * m as f64 / (rank + 1) as f64).min(1.0);
        running = running.min(v);
        adj[i] = running;
    }
    adj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_against_known_values() {
        // Computed by hand (and with R's t.test(var.equal = FALSE)):
        // a = 1..5, b = 3..7: t = 2, df = 8, p = 0.08052.
        let (t, df, p) = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
        assert!((t - 2.0).abs() < 1e-12 && (df - 8.0).abs() < 1e-9, "{t} {df}");
        assert!((p - 0.080516).abs() < 1e-5, "{p}");
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
        assert_eq!(welch(&[2.0, 2.0], &[2.0, 2.0]).unwrap().2, 1.0);
    }

    #[test]
    fn bh_adjustment() {
        let adj = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.5]);
        let want = [0.04, 0.0533333, 0.0533333, 0.5];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-6, "{adj:?}");
        }
    }
}
