//! A report's numbers: per workload metric, one row per kernel × variant with its summary,
//! and against its baseline row the comparison, judged with every other comparison of the
//! report under the run's sequential plan (`stats::judge`). Pure: samples in, tables out.

use crate::results::{Sample, Shared};
use crate::scenario::Scenario;
use crate::stats::{self, judge, Comparison, Looks, MetricKind, RowInput, Settings, Side, Summary};

/// One row of a metric's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kernel: String,
    pub variant: String,
    pub releases: Vec<String>,
    pub policies: Vec<String>,
    pub summary: Summary,
    /// First and third quartiles.
    pub quartiles: (f64, f64),
    /// The test and verdict against the baseline row, when there is one.
    pub comparison: Option<Comparison>,
    /// The samples in the order taken, with their boots.
    pub side: Side,
    /// Samples the robust outlier rule flags.
    pub outliers: Vec<f64>,
    /// Whether the samples look like two modes.
    pub bimodal: bool,
    /// The share of the variance between boots (two boots or more).
    pub boot_share: Option<f64>,
    /// The machine of each sample (empty on one machine set).
    pub machines: Vec<Shared>,
}

impl Row {
    /// What a report says of the row besides its verdict: the share of its variance between
    /// boots, its outliers, two modes, and the look of a sequential plan that judged it.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(share) = self.boot_share {
            out.push(format!("{:.0}% of its variance between boots", 100.0 * share));
        }
        let flags = self.flags();
        if !flags.is_empty() {
            out.push(flags);
        }
        if let Some(c) = self.comparison.as_ref().filter(|c| c.looks > 1) {
            out.push(format!("judged at look {} of {}", c.look + 1, c.looks));
        }
        out
    }

    /// "outliers: 31.0; bimodal" or empty.
    pub fn flags(&self) -> String {
        let mut f = Vec::new();
        if !self.outliers.is_empty() {
            let v: Vec<String> = self.outliers.iter().map(|v| super::fmt_value(*v)).collect();
            f.push(format!("outliers: {}", v.join(" ")));
        }
        if self.bimodal {
            f.push("bimodal".to_string());
        }
        f.join("; ")
    }

    pub fn boots(&self) -> usize {
        self.side.boot_count()
    }

    /// The centre a reader should see: the mean, or the median for rank kinds.
    pub fn centre(&self, kind: MetricKind) -> f64 {
        if kind.by_ranks() {
            self.summary.median
        } else {
            self.summary.mean
        }
    }

    /// The spread beside it, in percent of the centre: the stddev, or the IQR.
    pub fn spread_pct(&self, kind: MetricKind) -> f64 {
        let c = self.centre(kind);
        if c == 0.0 {
            return 0.0;
        }
        if kind.by_ranks() {
            100.0 * (self.quartiles.1 - self.quartiles.0) / c.abs()
        } else {
            self.summary.stddev_pct()
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricTable {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub kind: MetricKind,
    pub rows: Vec<Row>,
}

/// What each row is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The row of this kernel with the same variant (kernels compared).
    Kernel(String),
    /// The row of this variant on the same kernel (variants compared).
    Variant(String),
    /// The same kernel, variant and workload in another run (`kreg compare`).
    Run(i64),
}

impl Baseline {
    pub fn is_base(&self, r: &Row) -> bool {
        match self {
            Baseline::Kernel(k) => &r.kernel == k,
            Baseline::Variant(v) => &r.variant == v,
            Baseline::Run(_) => false,
        }
    }

    /// Whether `b` is the baseline row of `r` (in the same run).
    fn base_of(&self, b: &Row, r: &Row) -> bool {
        match self {
            Baseline::Kernel(k) => &b.kernel == k && b.variant == r.variant,
            Baseline::Variant(v) => &b.variant == v && b.kernel == r.kernel,
            Baseline::Run(_) => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Baseline::Kernel(k) => format!("baseline kernel {k} (same variant)"),
            Baseline::Variant(v) => format!("baseline variant {v} (same kernel)"),
            Baseline::Run(id) => format!("baseline run {id} (same kernel, variant and workload)"),
        }
    }
}

/// The baseline a report uses unless told: the scenario's baseline kernel, or, with a
/// single kernel, the first variant.
pub fn default_baseline(s: &Scenario) -> Baseline {
    if s.kernels.len() == 1 && s.variants.len() > 1 {
        Baseline::Variant(s.variants[0].name.clone())
    } else {
        Baseline::Kernel(s.baseline.clone())
    }
}

/// Groups samples into tables, in the scenario's order of workloads, kernels and variants,
/// and judges every row against its baseline row across the whole report.
pub fn tables(s: &Scenario, samples: &[Sample], baseline: &Baseline, settings: &Settings) -> Vec<MetricTable> {
    let mut out = group(s, samples);
    let pairs = within_pairs(&out, baseline);
    let mut sides = base_sides(&out, &pairs);
    let raw = by_machine(&mut out, &mut sides, &pairs);
    judge_into(&mut out, sides, &s.looks(), settings, s.by_boot(), true);
    put_back(&mut out, raw);
    out
}

/// Each compared row with its baseline row's samples, as `judge_into` takes them.
fn base_sides(tables: &[MetricTable], pairs: &[(usize, usize, usize)]) -> Vec<((usize, usize), Side)> {
    pairs
        .iter()
        .map(|&(ti, ri, bi)| ((ti, ri), tables[ti].rows[bi].side.clone()))
        .collect()
}

/// Each compared row of the tables, as (table, row, its baseline's row).
fn within_pairs(tables: &[MetricTable], baseline: &Baseline) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for (ri, r) in t.rows.iter().enumerate().filter(|(_, r)| !baseline.is_base(r)) {
            if let Some(bi) = t.rows.iter().position(|b| baseline.base_of(b, r)) {
                out.push((ti, ri, bi));
            }
        }
    }
    out
}

/// Run B's rows, each compared with the row of run A that has the same workload, metric,
/// kernel and variant; judged together once, on every sample (the two runs were not taken
/// under one plan, so neither's looks are replayed), boots as the unit when both runs had
/// them.
pub fn compare_runs(sa: &Scenario, a: &[Sample], sb: &Scenario, b: &[Sample], settings: &Settings) -> Vec<MetricTable> {
    let ta = group(sa, a);
    let mut tb = group(sb, b);
    let mut pairs = Vec::new();
    for (ti, t) in tb.iter().enumerate() {
        let Some(base) = ta.iter().find(|x| x.workload == t.workload && x.metric == t.metric) else {
            continue;
        };
        for (ri, r) in t.rows.iter().enumerate() {
            if let Some(br) = base
                .rows
                .iter()
                .find(|x| x.kernel == r.kernel && x.variant == r.variant)
            {
                pairs.push(((ti, ri), br.side.clone()));
            }
        }
    }
    judge_into(
        &mut tb,
        pairs,
        &Looks::fixed(),
        settings,
        sa.by_boot() && sb.by_boot(),
        true,
    );
    tb
}

/// Judges the rows at `pairs` (table, row) against the baseline sides given.
fn judge_into(
    tables: &mut [MetricTable],
    pairs: Vec<((usize, usize), Side)>,
    looks: &Looks,
    settings: &Settings,
    by_boot: bool,
    complete: bool,
) {
    // Each compared row's samples lent to the judging and put back after (a report may hold
    // 100,000: no copies).
    let at: Vec<(usize, usize)> = pairs.iter().map(|(at, _)| *at).collect();
    let inputs: Vec<RowInput> = pairs
        .into_iter()
        .map(|((ti, ri), base)| {
            let t = &mut tables[ti];
            RowInput {
                base,
                new: std::mem::take(&mut t.rows[ri].side),
                kind: t.kind,
                higher_is_better: t.higher_is_better,
                by_boot,
            }
        })
        .collect();
    let judged = judge(&inputs, looks, settings, complete);
    for (((ti, ri), input), c) in at.into_iter().zip(inputs).zip(judged) {
        let row = &mut tables[ti].rows[ri];
        row.side = input.new;
        row.comparison = c;
    }
}

/// The cells an adaptive run measures again: every row still inconclusive at the last look
/// it reached, before the plan's last, wants one more observation of its cell and of its
/// baseline's cell. Judged exactly as the report judges (same looks, same alpha spent), so
/// a resume decides the same.
pub fn next_round(s: &Scenario, samples: &[Sample], plan: &Settings) -> Vec<crate::plan::Cell> {
    let looks = s.looks();
    let baseline = default_baseline(s);
    let mut out = group(s, samples);
    let pairs = within_pairs(&out, &baseline);
    let sides = base_sides(&out, &pairs);
    judge_into(&mut out, sides, &looks, plan, s.by_boot(), false);
    let mut cells = Vec::new();
    let mut want = |kernel: &str, variant: &str, workload: &str| {
        let c = crate::plan::Cell {
            kernel: kernel.into(),
            variant: variant.into(),
            workload: workload.into(),
        };
        if !cells.contains(&c) {
            cells.push(c);
        }
    };
    for &(ti, ri, bi) in &pairs {
        let t = &out[ti];
        let (r, b) = (&t.rows[ri], &t.rows[bi]);
        // Judged with `complete` off, a row's last look is one its sides reached.
        let open = r
            .comparison
            .as_ref()
            .is_some_and(|c| c.verdict == stats::Verdict::Inconclusive && c.look + 1 < looks.len());
        if open {
            want(&r.kernel, &r.variant, &t.workload);
            want(&b.kernel, &b.variant, &t.workload);
        }
    }
    cells.sort();
    cells
}

/// How many comparisons a report makes.
pub fn comparisons(tables: &[MetricTable]) -> usize {
    tables
        .iter()
        .map(|t| t.rows.iter().filter(|r| r.comparison.is_some()).count())
        .sum()
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

fn row_of(kernel: &str, variant: &str, mine: &[&Sample]) -> Option<Row> {
    let values: Vec<f64> = mine.iter().map(|x| x.value).collect();
    let summary = Summary::of(&values)?;
    let (mut releases, mut policies) = (Vec::new(), Vec::new());
    for x in mine {
        push_unique(&mut releases, &x.kernel_release);
        push_unique(&mut policies, &x.observed_policy);
    }
    let side = Side {
        values: values.clone(),
        boots: mine.iter().map(|x| x.boot_id.clone()).collect(),
    };
    Some(Row {
        kernel: kernel.to_string(),
        variant: variant.to_string(),
        releases,
        policies,
        summary,
        quartiles: stats::quartiles(&values),
        comparison: None,
        outliers: stats::outliers(&values),
        bimodal: stats::bimodal(&values),
        boot_share: stats::units::between_boot_share(&side),
        machines: mine.iter().map(|x| x.machine.clone()).collect(),
        side,
    })
}

/// The samples of one cell and metric, in the order stored: (workload, metric, kernel,
/// variant) → samples.
type Cells<'a> = std::collections::HashMap<(&'a str, &'a str, &'a str, &'a str), Vec<&'a Sample>>;

fn group(s: &Scenario, samples: &[Sample]) -> Vec<MetricTable> {
    // One pass over the samples (a report may hold 100,000): each to its cell, and each
    // workload's metrics in the order they first appear.
    let mut cells: Cells = std::collections::HashMap::new();
    let mut metrics: std::collections::HashMap<&str, Vec<&Sample>> = std::collections::HashMap::new();
    for x in samples {
        // perf sched stats' figures are compared field by field in their own section
        // (`sched_stats`), not judged among the workload's metrics.
        if crate::collect::perf_sched_stats::is_metric(&x.metric) {
            continue;
        }
        let cell = cells
            .entry((&*x.workload, &*x.metric, &*x.kernel, &*x.variant))
            .or_default();
        if cell.is_empty() {
            let seen = metrics.entry(&*x.workload).or_default();
            if !seen.iter().any(|m| m.metric == x.metric) {
                seen.push(x);
            }
        }
        cell.push(x);
    }
    let mut out = Vec::new();
    for w in &s.workloads {
        for m in metrics.remove(w.name.as_str()).unwrap_or_default() {
            let mut rows = Vec::new();
            for k in &s.kernels {
                for v in &s.variants {
                    let key = (w.name.as_str(), &*m.metric, k.name.as_str(), v.name.as_str());
                    let mut mine = cells.remove(&key).unwrap_or_default();
                    mine.sort_by_key(|x| x.iteration);
                    rows.extend(row_of(&k.name, &v.name, &mine));
                }
            }
            out.push(MetricTable {
                workload: w.name.clone(),
                metric: m.metric.to_string(),
                unit: m.unit.to_string(),
                higher_is_better: m.higher_is_better,
                kind: m.kind,
                rows,
            });
        }
    }
    out
}

/// The raw sides of the rows whose samples were shifted for judging, to put back after.
type Raw = Vec<((usize, usize), Side)>;

/// For each compared row (`pairs`: table, row, its baseline row) measured on more than one
/// machine: its side and its baseline's side (in `sides`) shifted machine by machine, for
/// the judging. Returns the rows' raw sides.
fn by_machine(
    tables: &mut [MetricTable],
    sides: &mut [((usize, usize), Side)],
    pairs: &[(usize, usize, usize)],
) -> Raw {
    let mut raw = Vec::new();
    for (k, &(ti, ri, bi)) in pairs.iter().enumerate() {
        let (base, row) = (&tables[ti].rows[bi], &tables[ti].rows[ri]);
        if super::blocks::machines_of(base.machines.iter().chain(&row.machines)).len() < 2 {
            continue;
        }
        let levels = super::blocks::levels(&base.side.values, &base.machines);
        let all = base.side.values.iter().sum::<f64>() / base.side.values.len() as f64;
        let shifted_base = super::blocks::shift(&base.side, &base.machines, &levels, all);
        let shifted_row = super::blocks::shift(&row.side, &row.machines, &levels, all);
        raw.push(((ti, ri), std::mem::replace(&mut tables[ti].rows[ri].side, shifted_row)));
        sides[k].1 = shifted_base;
    }
    raw
}

/// Puts the rows' raw sides back after the judging.
fn put_back(tables: &mut [MetricTable], raw: Raw) {
    for ((ti, ri), side) in raw {
        tables[ti].rows[ri].side = side;
    }
}
