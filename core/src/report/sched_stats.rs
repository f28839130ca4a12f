//! The `perf sched stats` part of a report: per pair of compared cells (a kernel against
//! the baseline kernel with the same variant, or a variant against the baseline variant on
//! the same kernel), per field of perf's summary, both means over the jobs, each side's
//! spread, and the change with its interval, as `perf sched stats diff` shows one pair of
//! recordings, but over every job of the run. A field is said to have moved only where its
//! change stands beyond noise after the Benjamini–Hochberg adjustment over every field of
//! the section; the rest are noise, and no cause. Then the cross-check of perf's counters
//! against kreg's own /proc/schedstat delta of the same jobs. Pure.

use serde::Serialize;

use super::Baseline;
use crate::collect::perf_sched_stats::{self as pss, Report as PerfReport};
use crate::scenario::Scenario;
use crate::stats::benjamini_hochberg;

/// One done job's recording, with kreg's own delta of the same job when it has one.
pub struct Job {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    /// `kernel/variant, iteration N`: how a disagreement names the job.
    pub label: String,
    pub report: PerfReport,
    pub schedstat: Option<crate::schedstat::Diff>,
}

/// A side's figures of one field: how many jobs, their mean and standard deviation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    pub stddev: f64,
}

impl Spread {
    fn of(v: &[f64]) -> Spread {
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n.max(1) as f64;
        let stddev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Spread { n, mean, stddev }
    }

    /// The standard deviation in percent of the mean (0 for a mean of 0).
    pub fn pct(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.stddev / self.mean.abs()
        }
    }
}

/// One field of perf's summary, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    /// `cpu` for the CPUs' own counters, else the domain level (`MC`, `domain1`).
    pub level: String,
    pub field: String,
    /// A figure perf derives from others (its `*` lines).
    pub derived: bool,
    pub base: Spread,
    pub new: Spread,
    /// The change of the mean, relative to the base's (none from a base of 0).
    pub change: Option<f64>,
    /// Its interval at the section's level (none with fewer than two jobs a side).
    pub ci: Option<(f64, f64)>,
    /// The test's two-sided p, and after the adjustment over the section.
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// Whether the test can reach the section's alpha with these jobs at all (an exact
    /// test of two jobs against two never gives p below 1/3).
    pub decidable: bool,
    /// Whether the change stands beyond noise.
    pub moved: bool,
}

impl FieldDiff {
    /// `moved`, `noise`, `same` (one value in every job), or why a field cannot be told.
    pub fn call(&self) -> &'static str {
        if self.base.n == 0 {
            "not in the base's report"
        } else if self.new.n == 0 {
            "not in this report"
        } else if self.moved {
            "moved"
        } else if self.base.stddev == 0.0 && self.new.stddev == 0.0 && self.base.mean == self.new.mean {
            "same"
        } else if self.p.is_none() {
            "one job: no spread"
        } else if !self.decidable {
            "too few jobs"
        } else {
            "noise"
        }
    }
}

/// One compared pair of cells of a workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairDiff {
    pub workload: String,
    /// (kernel, variant) of the base side and of the compared side.
    pub base: (String, String),
    pub new: (String, String),
    pub fields: Vec<FieldDiff>,
    /// Fields zero in every job of both sides, not listed.
    pub zero: usize,
}

impl PairDiff {
    pub fn base_label(&self) -> String {
        format!("{}/{}", self.base.0, self.base.1)
    }

    pub fn new_label(&self) -> String {
        format!("{}/{}", self.new.0, self.new.1)
    }
}

/// perf's counters against kreg's own delta, job by job.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CrossCheck {
    /// Jobs with both a recording and kreg's snapshots.
    pub jobs: usize,
    /// Jobs with a recording but no /proc/schedstat snapshots of kreg's.
    pub without_schedstat: usize,
    /// Counters compared (per CPU and domain, every such job).
    pub counters: usize,
    /// Of them, where perf counted more than kreg (its window lies inside kreg's).
    pub disagree: usize,
    /// The first disagreements, named.
    pub examples: Vec<String>,
    /// Jobs whose two sources do not describe the same CPUs and domains.
    pub unmatched: Vec<String>,
}

/// The whole section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedStats {
    /// The level the changes are judged at, after the adjustment; the intervals are at 1 − alpha.
    pub alpha: f64,
    pub pairs: Vec<PairDiff>,
    pub cross: CrossCheck,
}

impl SchedStats {
    /// Every field with a test, over all pairs.
    pub fn tested(&self) -> usize {
        self.pairs
            .iter()
            .flat_map(|p| &p.fields)
            .filter(|f| f.p.is_some())
            .count()
    }

    /// What the figures are and how a change is called.
    pub fn method(&self) -> String {
        format!(
            "perf sched stats: perf's summary over CPUs (its mean per CPU), the mean of each field over a cell's jobs; \
             ± is the standard deviation over the jobs in % of the mean; the change with its {}% interval on the ratio's scale, \
             judged as the report's rows are (counts by the exact test of ranks and the Hodges–Lehmann shift, constant jobs included; \
             perf's derived means by Welch's test and Fieller's interval); \
             a field has moved only where Benjamini–Hochberg over the {} fields tested keeps p ≤ {}, else it is noise and no cause; \
             \"too few jobs\" where no test of that many jobs can reach p ≤ that; domains are paired by level (and by name where both sides name them)",
            level(self.alpha),
            self.tested(),
            self.alpha
        )
    }

    /// What the cross-check found, and which figures the section uses.
    pub fn cross_lines(&self) -> Vec<super::Line> {
        use super::Line;
        let c = &self.cross;
        let mut out = Vec::new();
        if c.jobs > 0 && c.disagree == 0 && c.unmatched.is_empty() {
            out.push(Line::Note(format!(
                "cross-check: perf's counters and kreg's /proc/schedstat delta agree on all {} counters of {} job(s) (perf records inside kreg's snapshots: never more than kreg)",
                c.counters, c.jobs
            )));
        } else if c.jobs > 0 {
            out.push(Line::Warning(format!(
                "cross-check: perf's counters exceed kreg's /proc/schedstat delta of the same job on {} of {} counters ({} job(s)); the figures above are perf's, kreg's own delta is on the schedstat page: {}",
                c.disagree,
                c.counters,
                c.jobs,
                c.examples.join("; ")
            )));
            for u in &c.unmatched {
                out.push(Line::Warning(format!("cross-check not made: {u}")));
            }
        }
        if c.without_schedstat > 0 {
            out.push(Line::Note(format!(
                "cross-check: {} job(s) have no /proc/schedstat snapshots of kreg's; their figures are perf's alone",
                c.without_schedstat
            )));
        }
        out
    }
}

/// An interval's level in percent, as few digits as it needs: 95, 99.5.
fn level(alpha: f64) -> String {
    let s = format!("{:.2}", 100.0 * (1.0 - alpha));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

type Key = (String, String, bool);

/// The summary's fields of one recording, keyed by (level, field, derived): the level is
/// `cpu`, or `domainN` by the domain's place among the summary's levels (schedstat v15 and
/// v16 number domains, v17 names them: a level pairs with the same level of the other
/// side), with the domain's name after it where the kernel gives one (`domain1 MC`).
fn figures(r: &PerfReport) -> Vec<(Key, f64)> {
    let mut out = Vec::new();
    let mut level_no = 0;
    for s in r.summary() {
        let level = match s.domain.as_deref() {
            None => "cpu".to_string(),
            Some(d) => {
                let l = if d.chars().all(|c| c.is_ascii_digit()) {
                    format!("domain{level_no}")
                } else {
                    format!("domain{level_no} {d}")
                };
                level_no += 1;
                l
            }
        };
        for f in &s.fields {
            if let Some(v) = f.values.first() {
                out.push(((level.clone(), f.name.clone(), f.derived), *v));
            }
        }
    }
    out
}

/// A level as it pairs: `domain1 MC` and `domain1` are the same level, unless the other side
/// names it otherwise.
fn level_number(level: &str) -> &str {
    level.split(' ').next().unwrap_or(level)
}

/// The two sides' keys made to pair by level: a level one side names and the other does not
/// takes the name; a level both sides name differently stays two levels (not the same domain).
fn pair_levels(a: &mut [Vec<(Key, f64)>], b: &mut [Vec<(Key, f64)>]) {
    let named = |side: &[Vec<(Key, f64)>]| -> Vec<String> {
        let mut v: Vec<String> = side
            .iter()
            .flatten()
            .map(|((l, _, _), _)| l.clone())
            .filter(|l| l.contains(' '))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (na, nb) = (named(a), named(b));
    let rename = |side: &mut [Vec<(Key, f64)>], other: &[String]| {
        for ((l, _, _), _) in side.iter_mut().flatten() {
            if l.contains(' ') || l == "cpu" {
                continue;
            }
            if let Some(full) = other.iter().find(|o| level_number(o) == l.as_str()) {
                *l = full.clone();
            }
        }
    };
    rename(a, &nb);
    rename(b, &na);
}

/// A cell: (kernel, variant).
type Cell = (String, String);

/// Each pair of cells the baseline compares: (workload, base, new), in the scenario's order.
fn pairs_of(s: &Scenario, baseline: &Baseline) -> Vec<(String, Cell, Cell)> {
    let mut out = Vec::new();
    for w in &s.workloads {
        for k in &s.kernels {
            for v in &s.variants {
                let base = match baseline {
                    Baseline::Kernel(b) if *b != k.name => (b.clone(), v.name.clone()),
                    Baseline::Variant(b) if *b != v.name => (k.name.clone(), b.clone()),
                    _ => continue,
                };
                out.push((w.name.clone(), base, (k.name.clone(), v.name.clone())));
            }
        }
    }
    out
}

/// The change, its interval, p, and whether the test can decide.
type Compared = (Option<f64>, Option<(f64, f64)>, Option<f64>, bool);

/// A field compared by the report's own rules (see [`SchedStats::method`]): the change with
/// its (1 − alpha) interval on the ratio's scale, the test's p, and whether that test can reach
/// alpha with these jobs. `None` for the interval and p with fewer than two jobs a side.
fn compare(base: &[f64], new: &[f64], derived_mean: bool, alpha: f64) -> Compared {
    use crate::stats::{measure, MetricKind, Unit};
    let kind = if derived_mean {
        MetricKind::Mean
    } else {
        MetricKind::Count
    };
    let c = measure(base, new, kind, Unit::Run, alpha / 2.0);
    let change = c.change.is_finite().then_some(c.change);
    if base.len() < 2 || new.len() < 2 {
        let a = Spread::of(base).mean;
        let plain = (a != 0.0).then(|| (Spread::of(new).mean - a) / a.abs());
        return (plain, None, None, false);
    }
    // A t-test decides nothing below MIN_FOR_CHANGE jobs a side, as for the report's rows.
    let enough = kind.by_ranks() || base.len().min(new.len()) >= crate::stats::verdict::MIN_FOR_CHANGE;
    (change, c.ci, Some(c.p), enough && c.min_p <= alpha)
}

fn pair(
    jobs: &[&Job],
    workload: &str,
    base: &(String, String),
    new: &(String, String),
    alpha: f64,
) -> Option<PairDiff> {
    let side = |c: &(String, String)| -> Vec<Vec<(Key, f64)>> {
        jobs.iter()
            .filter(|j| j.workload == workload && j.kernel == c.0 && j.variant == c.1)
            .map(|j| figures(&j.report))
            .collect()
    };
    let (mut a, mut b) = (side(base), side(new));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    pair_levels(&mut a, &mut b);
    let mut keys: Vec<Key> = Vec::new();
    for (k, _) in a.iter().chain(&b).flatten() {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    let values = |side: &[Vec<(Key, f64)>], k: &Key| -> Vec<f64> {
        side.iter()
            .filter_map(|job| job.iter().find(|(x, _)| x == k).map(|(_, v)| *v))
            .collect()
    };
    let (mut fields, mut zero) = (Vec::new(), 0);
    for k in keys {
        let (va, vb) = (values(&a, &k), values(&b, &k));
        if va.iter().chain(&vb).all(|v| *v == 0.0) {
            zero += 1;
            continue;
        }
        let derived_mean = k.2 && !k.1.ends_with("_count");
        let (change, ci, p, decidable) = compare(&va, &vb, derived_mean, alpha);
        fields.push(FieldDiff {
            level: k.0,
            field: k.1,
            derived: k.2,
            base: Spread::of(&va),
            new: Spread::of(&vb),
            change,
            ci,
            p,
            p_adjusted: None,
            decidable,
            moved: false,
        });
    }
    Some(PairDiff {
        workload: workload.to_string(),
        base: base.clone(),
        new: new.clone(),
        fields,
        zero,
    })
}

fn cross_check(jobs: &[Job]) -> CrossCheck {
    let mut c = CrossCheck::default();
    for j in jobs {
        let Some(d) = &j.schedstat else {
            c.without_schedstat += 1;
            continue;
        };
        match pss::cross_check(&j.report, d) {
            Ok(list) => {
                c.jobs += 1;
                c.counters += list.len();
                for x in list.iter().filter(|x| !x.agrees()) {
                    c.disagree += 1;
                    if c.examples.len() < 5 {
                        let dom = x.domain.map(|d| format!(" domain {d}")).unwrap_or_default();
                        c.examples.push(format!(
                            "{}: CPU {}{dom} {}: perf {} > kreg {}",
                            j.label, x.cpu, x.field, x.perf, x.kreg
                        ));
                    }
                }
            }
            Err(e) => c.unmatched.push(format!("{}: {e}", j.label)),
        }
    }
    c
}

/// The section of a run's jobs with recordings; `None` when no job has one, or when the
/// baseline is another run (its recordings are not loaded).
pub fn section(s: &Scenario, jobs: &[Job], baseline: &Baseline, alpha: f64) -> Option<SchedStats> {
    if jobs.is_empty() || matches!(baseline, Baseline::Run(_)) {
        return None;
    }
    let refs: Vec<&Job> = jobs.iter().collect();
    let mut pairs: Vec<PairDiff> = pairs_of(s, baseline)
        .iter()
        .filter_map(|(w, b, n)| pair(&refs, w, b, n, alpha))
        .collect();
    let ps: Vec<f64> = pairs.iter().flat_map(|p| &p.fields).filter_map(|f| f.p).collect();
    let mut adjusted = benjamini_hochberg(&ps).into_iter();
    for f in pairs.iter_mut().flat_map(|p| &mut p.fields) {
        if f.p.is_some() {
            let q = adjusted.next().expect("one per test");
            f.p_adjusted = Some(q);
            let beyond = f.ci.is_none_or(|(l, h)| l > 0.0 || h < 0.0);
            f.moved = f.decidable && q <= alpha && beyond;
        }
    }
    Some(SchedStats {
        alpha,
        pairs,
        cross: cross_check(jobs),
    })
}

/// A value as the section prints it.
pub fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        super::fmt_value(v)
    }
}

/// The cells of one field's line: level, field, base mean, ±, new mean, ±, change,
/// interval, call.
pub fn cells(f: &FieldDiff) -> Vec<String> {
    let name = if f.derived {
        format!("*{}", f.field)
    } else {
        f.field.clone()
    };
    let mean = |x: &Spread| if x.n == 0 { "-".to_string() } else { value(x.mean) };
    let spread = |x: &Spread| {
        if x.n == 0 {
            "-".to_string()
        } else {
            format!("±{:.1}%", x.pct())
        }
    };
    vec![
        f.level.clone(),
        name,
        mean(&f.base),
        spread(&f.base),
        mean(&f.new),
        spread(&f.new),
        f.change
            .map(|c| format!("{:+.1}%", 100.0 * c))
            .unwrap_or_else(|| "from 0".into()),
        match (f.ci, f.p) {
            (Some(ci), _) => crate::stats::interval_text(Some(ci)),
            // Tested, but too few jobs to bound the change at this level.
            (None, Some(_)) => "unbounded".into(),
            (None, None) => "-".into(),
        },
        f.call().to_string(),
    ]
}

/// The header of a pair's table.
pub fn headers(p: &PairDiff) -> Vec<String> {
    vec![
        "level".into(),
        "field".into(),
        format!("{} ({} jobs)", p.base_label(), p.fields.first().map_or(0, |f| f.base.n)),
        "±".into(),
        format!("{} ({} jobs)", p.new_label(), p.fields.first().map_or(0, |f| f.new.n)),
        "±".into(),
        "change".into(),
        "interval".into(),
        String::new(),
    ]
}

/// The metric name CSV rows give a field (as the job's metrics are stored).
pub fn metric_of(f: &FieldDiff) -> String {
    let domain = match f.level.as_str() {
        "cpu" => None,
        // `domain1 MC`: the name is what the metric was stored under.
        l => Some(match l.split_once(' ') {
            Some((_, name)) => name,
            None => l.strip_prefix("domain").unwrap_or(l),
        }),
    };
    pss::metric_name(domain, &f.field)
}

#[cfg(test)]
mod tests;

/// A pair's title line.
fn title(p: &PairDiff) -> String {
    let mut t = format!("{}: {} against {}", p.workload, p.new_label(), p.base_label());
    if p.zero > 0 {
        t.push_str(&format!(" ({} fields zero in every job, not listed)", p.zero));
    }
    t
}

/// The section as text, after the report's tables.
pub fn render_text(sec: &SchedStats, boxes: bool) -> String {
    use comfy_table::{presets, Cell, CellAlignment, Table};
    let mut out = format!("\n{}\n", sec.method());
    for p in &sec.pairs {
        out.push_str(&format!("\n{}\n", title(p)));
        let mut table = Table::new();
        table.load_preset(if boxes {
            presets::UTF8_FULL_CONDENSED
        } else {
            presets::ASCII_MARKDOWN
        });
        table.set_header(headers(p));
        for f in &p.fields {
            table.add_row(cells(f).into_iter().enumerate().map(|(i, c)| {
                if (2..8).contains(&i) {
                    Cell::new(c).set_alignment(CellAlignment::Right)
                } else {
                    Cell::new(c)
                }
            }));
        }
        out.push_str(&table.to_string());
        out.push('\n');
    }
    for l in sec.cross_lines() {
        out.push_str(&format!("{l}\n"));
    }
    out
}

/// The section as Markdown: the moved fields in bold.
pub fn render_markdown(sec: &SchedStats) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!("\n### perf sched stats\n\n{}.\n", esc(&sec.method()));
    for p in &sec.pairs {
        out.push_str(&format!("\n#### {}\n\n", esc(&title(p))));
        let h = headers(p);
        out.push_str(&format!(
            "| {} |\n",
            h.iter().map(|x| esc(x)).collect::<Vec<_>>().join(" | ")
        ));
        out.push_str(&format!("|:--|:--|{}\n", "--:|".repeat(h.len() - 2)));
        for f in &p.fields {
            let c: Vec<String> = cells(f)
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    if f.moved && i >= 6 {
                        format!("**{}**", esc(&c))
                    } else {
                        esc(&c)
                    }
                })
                .collect();
            out.push_str(&format!("| {} |\n", c.join(" | ")));
        }
    }
    out.push('\n');
    for l in sec.cross_lines() {
        out.push_str(&format!("- {}\n", esc(&l.to_string())));
    }
    out
}
