//! A tested commit's position between the references: 0 where good is, 1 where bad is,
//! with Fieller's interval for the ratio (step − good) / (bad − good).
//!
//! Each boot's value is one unit, and each boot belongs to a block: the boots asked
//! together, minutes apart (a pair of endpoints, a round of a step, a round of the
//! confirmation). A block's level is a random effect of its own (a two-way model, commit +
//! block, fitted by generalised least squares): when the blocks' levels vary beyond what
//! the boots' own spread explains — a machine that drifts, a host whose load changes
//! between the endpoints' boots and a step's an hour later — the commits are compared
//! mostly within blocks, and such a shift moves no position; when they do not, every boot
//! counts as in one block, and nothing is lost to blocks that were not needed. The values
//! are compared as logarithms when all are positive (a drift that scales every value, as a
//! loaded host does, is then a shift too), as they are otherwise. The two differences'
//! covariance (they share good) enters the interval.

use crate::stats::t_quantile;

/// A position with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Which of the three a boot measured: the reference at 0, the one at 1, or the commit
/// placed between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Zero,
    One,
    Step,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Zero => 0,
            Side::One => 1,
            Side::Step => 2,
        }
    }
}

/// One boot: its block, when it was measured (its place in the bisection's order), what it
/// measured, its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boot {
    pub block: usize,
    pub at: f64,
    pub side: Side,
    pub value: f64,
}

/// `step`'s position between `good` and `bad` with its two-sided (1 − `alpha`) interval,
/// every boot in one block at one time (boots measured side by side); see
/// [`position_in_blocks`].
pub fn position(good: &[f64], bad: &[f64], step: &[f64], alpha: f64) -> Option<Position> {
    let side = |s: Side, v: &[f64]| {
        v.iter()
            .map(move |&value| Boot {
                block: 0,
                at: 0.0,
                side: s,
                value,
            })
            .collect::<Vec<_>>()
    };
    let mut boots = side(Side::Zero, good);
    boots.extend(side(Side::One, bad));
    boots.extend(side(Side::Step, step));
    position_in_blocks(&boots, alpha)
}

/// The differences One − Zero and Step − Zero, their covariance matrix per unit of
/// variance, the variance and its degrees of freedom.
struct Fit {
    one: f64,
    step: f64,
    /// (One, One), (Step, Step), (One, Step).
    v: [f64; 3],
    s2: f64,
    df: f64,
}

type Matrix = Vec<Vec<f64>>;

/// The inverse of a small symmetric matrix (Gauss–Jordan with pivoting), if it is not
/// singular.
fn inverse(m: &Matrix) -> Option<Matrix> {
    let n = m.len();
    let scale = m.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
    let mut a: Matrix = m.clone();
    let mut inv: Matrix = (0..n)
        .map(|i| (0..n).map(|j| (i == j) as u8 as f64).collect())
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs().partial_cmp(&(1e-10 * scale)) != Some(std::cmp::Ordering::Greater) {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..n {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for row in 0..n {
            if row != col {
                let f = a[row][col];
                for j in 0..n {
                    a[row][j] -= f * a[col][j];
                    inv[row][j] -= f * inv[col][j];
                }
            }
        }
    }
    Some(inv)
}

fn times(m: &Matrix, v: &[f64]) -> Vec<f64> {
    m.iter()
        .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The boots as a linear model: per block, each boot's row (the three sides' indicators,
/// then its time when times vary) and value.
struct Model {
    blocks: Vec<Vec<(Vec<f64>, f64)>>,
    columns: usize,
    n: usize,
}

impl Model {
    fn new(boots: &[Boot], trend: bool) -> Model {
        let t0 = boots.iter().map(|b| b.at).sum::<f64>() / boots.len().max(1) as f64;
        let trend = trend && boots.iter().any(|b| b.at != boots[0].at);
        let mut blocks: std::collections::BTreeMap<usize, Vec<(Vec<f64>, f64)>> = Default::default();
        for b in boots {
            let mut x = vec![0.0; 3];
            x[b.side.index()] = 1.0;
            if trend {
                x.push(b.at - t0);
            }
            blocks.entry(b.block).or_default().push((x, b.value));
        }
        Model {
            blocks: blocks.into_values().collect(),
            columns: 3 + trend as usize,
            n: boots.len(),
        }
    }

    /// Least squares with the blocks' levels as random effects of variance `gamma` × the
    /// boots' (`gamma` 0: ordinary least squares over every boot), leaving out the `skip`
    /// first columns and, when `within`, measuring each boot from its block's mean (the
    /// blocks as fixed levels). The inverse information, the coefficients and the residual
    /// sum of squares.
    fn solve(&self, gamma: f64, skip: usize, within: bool) -> Option<(Matrix, Vec<f64>, f64)> {
        let p = self.columns - skip;
        let (mut m, mut r, mut yy) = (vec![vec![0.0; p]; p], vec![0.0; p], 0.0);
        for rows in &self.blocks {
            let k = rows.len() as f64;
            let w = if within { 1.0 / k } else { gamma / (1.0 + k * gamma) };
            let sx: Vec<f64> = (0..p).map(|i| rows.iter().map(|(x, _)| x[skip + i]).sum()).collect();
            let sy: f64 = rows.iter().map(|(_, y)| y).sum();
            for (x, y) in rows {
                yy += y * y;
                for i in 0..p {
                    r[i] += x[skip + i] * y;
                    for j in 0..p {
                        m[i][j] += x[skip + i] * x[skip + j];
                    }
                }
            }
            yy -= w * sy * sy;
            for i in 0..p {
                r[i] -= w * sx[i] * sy;
                for j in 0..p {
                    m[i][j] -= w * sx[i] * sx[j];
                }
            }
        }
        let inv = inverse(&m)?;
        let beta = times(&inv, &r);
        let ss = (yy - dot(&beta, &r)).max(0.0);
        Some((inv, beta, ss))
    }

    /// tr(Zᵀ(I − H)Z): what the blocks' variance adds to the pooled residual's expectation.
    fn trace(&self, pooled: &Matrix) -> f64 {
        let ones: f64 = self
            .blocks
            .iter()
            .map(|rows| {
                let s: Vec<f64> = (0..self.columns)
                    .map(|i| rows.iter().map(|(x, _)| x[i]).sum())
                    .collect();
                dot(&s, &times(pooled, &s))
            })
            .sum();
        self.n as f64 - ones
    }
}

/// The blocks' variance as a multiple of the boots' (Henderson's method: what the blocks
/// explain beyond the sides, against the boots' own variance within blocks), the boots'
/// variance and its degrees of freedom: from within blocks when the blocks' levels vary,
/// from every boot otherwise.
fn levels(model: &Model) -> Option<(f64, f64, f64)> {
    let (n, p, b) = (model.n as f64, model.columns as f64, model.blocks.len() as f64);
    let (pooled_inv, _, pooled) = model.solve(0.0, 0, false)?;
    let pooled_df = n - p;
    if pooled_df < 1.0 {
        return None;
    }
    // Within blocks the sides' indicators sum to nothing: Zero is left out.
    if let Some((_, _, within)) = model.solve(0.0, 1, true) {
        let within_df = n - b - (p - 1.0);
        let trace = model.trace(&pooled_inv);
        if within_df >= 1.0 && trace > 0.0 && within > 0.0 {
            let s2 = within / within_df;
            let between = (pooled - within - (b - 1.0) * s2) / trace;
            if between > 0.0 {
                return Some(((between / s2).min(1e6), s2, within_df));
            }
        }
    }
    Some((0.0, pooled / pooled_df, pooled_df))
}

/// The three sides' differences, with the blocks' levels as random effects whose variance
/// is measured without a trend (all that moves between blocks, steps or slopes), and a
/// trend in the means when the boots show one (its t beyond 2 over every boot; otherwise it
/// would cost every comparison across time for nothing); `None` when a side has no boot or
/// the sides cannot be told apart.
fn fit(boots: &[Boot]) -> Option<Fit> {
    let plain = Model::new(boots, false);
    let (gamma, s2, df) = levels(&plain)?;
    let trend = Model::new(boots, true);
    let shows = trend.columns == 4
        && trend.solve(0.0, 0, false).is_some_and(|(inv, beta, ss)| {
            let s2 = ss / (trend.n as f64 - 4.0);
            beta[3].abs() > 2.0 * (s2 * inv[3][3]).sqrt()
        });
    let model = if shows { trend } else { plain };
    let (inv, mu, _) = model.solve(gamma, 0, false)?;
    // The contrasts One − Zero and Step − Zero: var(x − z) = Vxx + Vzz − 2Vxz.
    let var = |x: usize, y: usize| inv[x][y] - inv[x][0] - inv[0][y] + inv[0][0];
    Some(Fit {
        one: mu[1] - mu[0],
        step: mu[2] - mu[0],
        v: [var(1, 1), var(2, 2), var(1, 2)],
        s2,
        df,
    })
}

/// The Step side's position between Zero (0) and One (1) with its two-sided (1 − `alpha`)
/// interval; `None` while a side has too few boots within blocks, or while Zero and One are
/// not told apart at that level (the interval would be unbounded).
pub fn position_in_blocks(boots: &[Boot], alpha: f64) -> Option<Position> {
    let positive = boots.iter().all(|b| b.value > 0.0);
    let scaled: Vec<Boot> = boots
        .iter()
        .map(|b| Boot {
            value: if positive { b.value.ln() } else { b.value },
            ..*b
        })
        .collect();
    let f = fit(&scaled)?;
    let s2 = f.s2;
    let (a, b) = (f.step, f.one);
    let (va, vb, cab) = (s2 * f.v[1], s2 * f.v[0], s2 * f.v[2]);
    let t2 = t_quantile(alpha, f.df).powi(2);
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
