//! The rank test for percentiles and counts: a permutation test of the rank sum on midranks
//! (ties share their mean rank), exact by counting arrangements for small samples and by a
//! Monte Carlo of fixed seed beyond; the Hodges–Lehmann shift and its distribution-free
//! interval for the size and direction of a change.

use std::cell::RefCell;
use std::collections::HashMap;

use super::rng::Rng;

/// Pooled sizes up to which the permutation distribution is counted exactly.
pub const EXACT_UP_TO: usize = 80;
/// Permutations drawn beyond [`EXACT_UP_TO`].
pub const MONTE_CARLO_DRAWS: usize = 20_000;

/// Twice the midranks of the pooled samples (whole numbers): ties share their mean rank.
pub fn doubled_midranks(pooled: &[f64]) -> Vec<u64> {
    let mut idx: Vec<usize> = (0..pooled.len()).collect();
    idx.sort_by(|&i, &j| pooled[i].total_cmp(&pooled[j]));
    let mut r = vec![0u64; pooled.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && pooled[idx[j + 1]] == pooled[idx[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share (i+1 + j+1)/2; doubled: i + j + 2.
        for &k in &idx[i..=j] {
            r[k] = (i + j + 2) as u64;
        }
        i = j + 1;
    }
    r
}

/// The result of the rank test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankTest {
    /// Two-sided p: the share of arrangements whose rank sum is at least as far from its
    /// expectation as the one observed.
    pub p: f64,
    /// The smallest p any arrangement of these values could give (with these ties).
    pub min_p: f64,
    /// Whether `p` was counted exactly (or drawn by Monte Carlo).
    pub exact: bool,
    /// Mean rank of `b` minus mean rank of `a`: the direction when the shift is zero.
    pub rank_shift: f64,
}

/// Exact null distributions by (tie pattern, size of `b`).
type Nulls = HashMap<(Vec<u64>, usize), std::rc::Rc<Vec<f64>>>;

thread_local! {
    /// Counted once per shape and thread.
    static NULLS: RefCell<Nulls> = RefCell::new(HashMap::new());
}

/// Counts, for every doubled rank sum `s` of `k` values drawn from `ranks`, the share of
/// the C(N, k) subsets that give it. Index: `s`.
fn null_distribution(sorted_ranks: &[u64], k: usize) -> std::rc::Rc<Vec<f64>> {
    let key = (sorted_ranks.to_vec(), k);
    if let Some(d) = NULLS.with(|m| m.borrow().get(&key).cloned()) {
        return d;
    }
    let max_sum: u64 = sorted_ranks.iter().rev().take(k).sum();
    let width = max_sum as usize + 1;
    // ways[i * width + s]: subsets of size i of the ranks seen so far with sum s.
    let mut ways = vec![0f64; (k + 1) * width];
    ways[0] = 1.0;
    for (seen, &r) in sorted_ranks.iter().enumerate() {
        let r = r as usize;
        for i in (0..k.min(seen + 1)).rev() {
            let (lo, hi) = ways.split_at_mut((i + 1) * width);
            let from = &lo[i * width..];
            for s in (0..width - r).rev() {
                let w = from[s];
                if w != 0.0 {
                    hi[s + r] += w;
                }
            }
        }
    }
    let row = &ways[k * width..];
    let total: f64 = row.iter().sum();
    let d = std::rc::Rc::new(row.iter().map(|w| w / total).collect::<Vec<f64>>());
    NULLS.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() > 4096 {
            m.clear();
        }
        m.insert(key, d.clone());
    });
    d
}

/// A seed from the samples: the same samples always draw the same permutations.
pub fn seed_of(a: &[f64], b: &[f64]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for v in a.iter().chain([f64::NAN].iter()).chain(b) {
        h ^= v.to_bits();
        h = h.wrapping_mul(0x1000_0000_01B3).rotate_left(17);
    }
    h | 1
}

/// The permutation test of the rank sum of `b` against `a`, two-sided. `None` when a side
/// is empty.
pub fn rank_test(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks = doubled_midranks(&pooled);
    let observed: u64 = ranks[n1..].iter().sum();
    let total: u64 = ranks.iter().sum();
    // Expected doubled rank sum of b, times N (kept whole): n2 * total / N.
    let n = (n1 + n2) as u64;
    let dev = |s: u64| (s as i128 * n as i128 - n2 as i128 * total as i128).unsigned_abs();
    let obs_dev = dev(observed);
    let rank_shift = (observed as f64 / n2 as f64 - ranks[..n1].iter().sum::<u64>() as f64 / n1 as f64) / 2.0;
    let mut sorted = ranks.clone();
    sorted.sort_unstable();
    if n1 + n2 <= EXACT_UP_TO {
        let d = null_distribution(&sorted, n2);
        // The rank sums that can happen, each with its distance from the expectation.
        let possible: Vec<(u128, f64)> = d
            .iter()
            .enumerate()
            .filter(|(_, w)| **w > 0.0)
            .map(|(s, w)| (dev(s as u64), *w))
            .collect();
        let at_least = |from: u128| -> f64 { possible.iter().filter(|(x, _)| *x >= from).map(|(_, w)| w).sum() };
        let max_dev = possible.iter().map(|(x, _)| *x).max().unwrap_or(0);
        let (p, min_p) = (at_least(obs_dev), at_least(max_dev));
        return Some(RankTest {
            p: p.min(1.0),
            min_p: min_p.min(1.0),
            exact: true,
            rank_shift,
        });
    }
    let mut rng = Rng::new(seed_of(a, b));
    let mut perm = ranks;
    let mut hits = 0usize;
    for _ in 0..MONTE_CARLO_DRAWS {
        // A partial Fisher–Yates shuffle: the last n2 places get a random subset.
        let len = perm.len();
        for i in 0..n2 {
            let j = i + rng.below(len - i);
            perm.swap(i, j);
        }
        let s: u64 = perm[..n2].iter().sum();
        if dev(s) >= obs_dev {
            hits += 1;
        }
    }
    Some(RankTest {
        // The observed arrangement counts as one of the draws: never p = 0.
        p: (hits + 1) as f64 / (MONTE_CARLO_DRAWS + 1) as f64,
        min_p: 1.0 / (MONTE_CARLO_DRAWS + 1) as f64,
        exact: false,
        rank_shift,
    })
}

/// The smallest two-sided p the rank test can give with `n` untied values per side.
pub fn best_p(n: usize) -> f64 {
    // 2 / C(2n, n)
    let mut c = 1.0f64;
    for i in 0..n {
        c = c * (2 * n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Runs per side the rank test needs before its best p falls below `alpha`.
pub fn runs_to_reach(alpha: f64) -> usize {
    (1..200).find(|&n| best_p(n) < alpha).unwrap_or(200)
}

/// The Hodges–Lehmann shift (median of all differences b − a) and its distribution-free
/// interval at two-sided level 1 − 2·`tail` (Moses): `None` for an interval where even
/// the widest one (the smallest and largest difference) has less coverage.
pub fn hodges_lehmann(a: &[f64], b: &[f64], tail: f64) -> (f64, Option<(f64, f64)>) {
    let mut d: Vec<f64> = a.iter().flat_map(|x| b.iter().map(move |y| y - x)).collect();
    d.sort_by(f64::total_cmp);
    let shift = super::median(&mut d.clone());
    // No special case for constant sides: with too few observations for any interval, even
    // identical numbers bound nothing (two runs a side printing the same value show as
    // little as two that differ).
    let k = moses_rank(a.len(), b.len(), tail);
    let ci = k.map(|k| (d[k - 1], d[d.len() - k]));
    (shift, ci)
}

/// The largest k with P(U ≤ k − 1) ≤ `tail` under no ties; `None` if even k = 1 fails.
fn moses_rank(n1: usize, n2: usize, tail: f64) -> Option<usize> {
    let mn = n1 * n2;
    if n1 + n2 <= EXACT_UP_TO && mn <= 2500 {
        // The null distribution of U: the rank sums of n2 untied ranks, shifted.
        let ranks: Vec<u64> = (1..=(n1 + n2) as u64).map(|r| 2 * r).collect();
        let d = null_distribution(&ranks, n2);
        let offset = n2 * (n2 + 1); // doubled minimum rank sum
        let mut cum = 0.0;
        let mut k = 0;
        for u in 0..=mn {
            cum += d.get(offset + 2 * u).copied().unwrap_or(0.0);
            if cum > tail + 1e-12 {
                break;
            }
            k = u + 1;
        }
        return (k >= 1).then_some(k.min(mn.div_ceil(2)));
    }
    let z = super::normal_quantile(1.0 - tail);
    let sd = (mn as f64 * (n1 + n2 + 1) as f64 / 12.0).sqrt();
    let k = (mn as f64 / 2.0 - z * sd).floor() as i64;
    (k >= 1).then_some(k as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The permutation p by brute force over every subset: the check on the counting.
    fn brute(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let r = doubled_midranks(&pooled);
        let n = pooled.len();
        let total: u64 = r.iter().sum();
        let dev = |s: u64| (s as i128 * n as i128 - b.len() as i128 * total as i128).unsigned_abs();
        let obs = dev(r[a.len()..].iter().sum());
        let (mut hit, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != b.len() {
                continue;
            }
            all += 1;
            let s: u64 = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| r[i]).sum();
            if dev(s) >= obs {
                hit += 1;
            }
        }
        hit as f64 / all as f64
    }

    #[test]
    fn exact_p_matches_enumeration_with_and_without_ties() {
        let cases: &[(&[f64], &[f64])] = &[
            (&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]),
            (&[5.0, 5.0, 5.0], &[6.0, 6.0, 6.0]),
            (&[10.0, 11.0, 11.0, 12.0, 13.0], &[11.0, 12.0, 12.0, 14.0, 15.0, 15.0]),
            (&[3.0, 3.0, 4.0, 4.0], &[3.0, 4.0, 4.0, 5.0]),
            (&[1.0, 2.0, 2.0, 2.0, 9.0, 7.0], &[2.0, 2.0, 8.0, 8.0, 8.0]),
        ];
        for (a, b) in cases {
            let t = rank_test(a, b).unwrap();
            assert!(
                (t.p - brute(a, b)).abs() < 1e-12,
                "{a:?} {b:?}: {} vs {}",
                t.p,
                brute(a, b)
            );
            assert!(t.exact && t.min_p <= t.p);
        }
        // 3 vs 3 all tied within each side: every arrangement counted, p = 2/20.
        let t = rank_test(&[5.0, 5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap();
        assert!((t.p - 0.1).abs() < 1e-12, "{}", t.p);
        // Identical samples: p = 1, and the direction is none.
        let t = rank_test(&[7.0; 4], &[7.0; 4]).unwrap();
        assert_eq!((t.p, t.rank_shift), (1.0, 0.0));
    }

    #[test]
    fn monte_carlo_beyond_the_exact_size_is_close_and_repeatable() {
        let a: Vec<f64> = (0..50).map(|i| (i % 17) as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| (i % 17) as f64 + 1.5).collect();
        let t = rank_test(&a, &b).unwrap();
        assert!(!t.exact);
        assert_eq!(t, rank_test(&a, &b).unwrap(), "fixed seed");
        // The normal approximation of the same test, for scale: z ≈ 1.9, p ≈ 0.06.
        assert!(t.p > 0.02 && t.p < 0.15, "{}", t.p);
        assert!(t.rank_shift > 0.0);
    }

    #[test]
    fn reachability_and_moses_interval() {
        assert!((best_p(3) - 0.1).abs() < 1e-12);
        assert!((best_p(5) - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(runs_to_reach(0.01), 5);
        assert_eq!(runs_to_reach(0.005), 6);
        assert_eq!(runs_to_reach(0.05), 4);
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [3.0, 4.0, 5.0, 6.0, 7.0];
        let (shift, ci) = hodges_lehmann(&a, &b, 0.05);
        assert_eq!(shift, 2.0);
        let (lo, hi) = ci.unwrap();
        // 5 vs 5 at 90%: P(U ≤ 3) = 0.028, P(U ≤ 4) = 0.048, P(U ≤ 5) = 0.075 → k = 5:
        // the 5th smallest and the 5th largest of the 25 differences.
        assert_eq!((lo, hi), (0.0, 4.0));
        assert!(hodges_lehmann(&[1.0, 2.0], &[3.0, 4.0], 0.05).1.is_none());
        // Identical numbers bound nothing at 2 a side; at 4 a side the interval is a point.
        assert!(hodges_lehmann(&[5.0; 2], &[5.0; 2], 0.05).1.is_none());
        assert_eq!(hodges_lehmann(&[5.0; 4], &[5.0; 4], 0.05).1, Some((0.0, 0.0)));
    }
}
