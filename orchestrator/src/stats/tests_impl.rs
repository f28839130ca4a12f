//! Two-sample tests: Welch's t-test for means, Mann–Whitney U for distributions and
//! percentiles (exact for small samples without ties, normal approximation otherwise).

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

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

/// Midranks of the pooled samples (ties share their mean rank).
fn ranks(pooled: &[f64]) -> (Vec<f64>, bool) {
    let mut idx: Vec<usize> = (0..pooled.len()).collect();
    idx.sort_by(|&i, &j| pooled[i].partial_cmp(&pooled[j]).expect("finite samples"));
    let mut r = vec![0.0; pooled.len()];
    let mut ties = false;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && pooled[idx[j + 1]] == pooled[idx[i]] {
            j += 1;
        }
        ties |= j > i;
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[idx[k]] = rank;
        }
        i = j + 1;
    }
    (r, ties)
}

/// Mann–Whitney U test, two-sided. Returns (U of `a`, p).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&pooled);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let mu = (n1 * n2) as f64 / 2.0;
    if !ties && n1 + n2 <= 40 {
        // Exact: count rank-sum arrangements with a DP over how many of the first k ranks
        // go to sample a.
        let u_min = u1.min((n1 * n2) as f64 - u1) as usize;
        let max_u = n1 * n2;
        // ways[i][u]: ways to pick i of the ranks seen so far with U contribution u.
        let mut ways = vec![vec![0f64; max_u + 1]; n1 + 1];
        ways[0][0] = 1.0;
        for k in 0..(n1 + n2) {
            for i in (0..n1).rev() {
                // Picking rank k+1 for sample a when i are already picked adds (k - i) to U.
                if i > k {
                    continue;
                }
                let add = k - i;
                if add > n2 {
                    continue;
                }
                for u in (0..=max_u - add).rev() {
                    let w = ways[i][u];
                    if w > 0.0 {
                        ways[i + 1][u + add] += w;
                    }
                }
            }
        }
        let total: f64 = ways[n1].iter().sum();
        let tail: f64 = ways[n1][..=u_min].iter().sum();
        return Some((u1, (2.0 * tail / total).min(1.0)));
    }
    let n = (n1 + n2) as f64;
    let mut tie_term = 0.0;
    let mut sorted = pooled.clone();
    sorted.sort_by(|x, y| x.partial_cmp(y).expect("finite"));
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t.powi(3) - t;
        i = j + 1;
    }
    let sigma2 = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if sigma2 <= 0.0 {
        return Some((u1, 1.0));
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / sigma2.sqrt();
    let p = 2.0 * (1.0 - Normal::new(0.0, 1.0).expect("standard normal").cdf(z));
    Some((u1, p.clamp(0.0, 1.0)))
}

/// Benjamini–Hochberg adjusted p-values (same order as given).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&i, &j| p[i].partial_cmp(&p[j]).expect("finite p"));
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
    fn mann_whitney_exact_and_approximate() {
        // Complete separation of 3 vs 3: the exact two-sided p is 2/20 = 0.1.
        let (u, p) = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(u, 0.0);
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // 5 vs 5 separated: 2/252.
        let (_, p) = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        // Identical samples with ties: nothing to see.
        let (_, p) = mann_whitney(&[1.0, 1.0, 2.0], &[1.0, 1.0, 2.0]).unwrap();
        assert!(p > 0.9, "{p}");
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
