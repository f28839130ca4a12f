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

/// Yuen's test of two 20%-trimmed means, in Welch's form for unequal spreads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trimmed {
    /// Each side's trimmed mean: [a, b].
    pub means: [f64; 2],
    /// Each side's squared standard error of its trimmed mean (from the winsorized
    /// variance).
    pub se2: [f64; 2],
    pub df: f64,
    pub t: f64,
    /// Two-sided.
    pub p: f64,
}

/// The share trimmed from each end.
pub const TRIM: f64 = 0.2;

/// A side's trimmed mean and the squared standard error of it: g = ⌊0.2·n⌋ values cut
/// from each end, h = n − 2g kept, the winsorized variance s²w (the cut values replaced by
/// the nearest kept one) giving (n − 1)·s²w / (h·(h − 1)). `None` with fewer than two kept.
fn trimmed_side(x: &[f64]) -> Option<(f64, f64, usize)> {
    let n = x.len();
    let g = (TRIM * n as f64).floor() as usize;
    let h = n.checked_sub(2 * g).filter(|h| *h >= 2)?;
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let tmean = mean(&v[g..n - g]);
    let (lo, hi) = (v[g], v[n - g - 1]);
    let w: Vec<f64> = v.iter().map(|x| x.clamp(lo, hi)).collect();
    let d = (n as f64 - 1.0) * var(&w) / (h as f64 * (h as f64 - 1.0));
    Some((tmean, d, h))
}

/// Yuen's test. Needs at least two kept values a side.
pub fn yuen(a: &[f64], b: &[f64]) -> Option<Trimmed> {
    let (ta, da, ha) = trimmed_side(a)?;
    let (tb, db, hb) = trimmed_side(b)?;
    let se2 = da + db;
    let df = if se2 == 0.0 {
        (ha + hb - 2) as f64
    } else {
        se2.powi(2) / (da.powi(2) / (ha as f64 - 1.0) + db.powi(2) / (hb as f64 - 1.0))
    };
    let (t, p) = if se2 == 0.0 {
        if ta == tb {
            (0.0, 1.0)
        } else {
            (f64::INFINITY, 0.0)
        }
    } else {
        let t = (tb - ta) / se2.sqrt();
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (t, (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
    };
    Some(Trimmed {
        means: [ta, tb],
        se2: [da, db],
        df,
        t,
        p,
    })
}

/// Pearson's kurtosis (3 for a normal distribution) of both sides' values about their own
/// side's mean: how heavy the tails of the noise are, whatever the difference between the
/// sides. NaN when nothing varies.
pub fn pooled_kurtosis(a: &[f64], b: &[f64]) -> f64 {
    let resid: Vec<f64> = [a, b]
        .iter()
        .flat_map(|x| {
            let m = mean(x);
            x.iter().map(move |v| v - m)
        })
        .collect();
    let n = resid.len() as f64;
    let m2 = resid.iter().map(|r| r * r).sum::<f64>() / n;
    let m4 = resid.iter().map(|r| r.powi(4)).sum::<f64>() / n;
    m4 / (m2 * m2)
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
    fn yuen_against_known_values() {
        // scipy.stats.ttest_ind(a, b, equal_var=False, trim=0.2):
        // t = 4.6823004 (b against a), df = 10.0000, p = 0.00086449; a's trimmed mean
        // 10.066667 (9.9 to 10.2 kept).
        let a = [10.1, 9.8, 10.3, 10.0, 9.9, 10.2, 14.0, 10.05, 9.7, 10.15];
        let b = [10.6, 10.4, 10.9, 10.5, 3.0, 10.7, 10.45, 10.8, 10.55, 10.35];
        let y = yuen(&a, &b).unwrap();
        assert!((y.t - 4.6823004).abs() < 1e-6, "{y:?}");
        assert!((y.df - 10.0).abs() < 1e-6, "{y:?}");
        assert!((y.p - 0.00086449).abs() < 1e-7, "{y:?}");
        assert!((y.means[0] - 10.0666667).abs() < 1e-6, "{y:?}");
        assert!(yuen(&[1.0], &[1.0, 2.0]).is_none());
        assert!((pooled_kurtosis(&[1.0, -1.0], &[5.0, 3.0]) - 1.0).abs() < 1e-12);
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
