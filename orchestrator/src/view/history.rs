//! A history: one metric of one workload across the runs of a scenario, one line per kernel
//! and variant, each run's centre (mean, or median for rank kinds) with its spread, and the
//! change points of each line over its finished runs (E-Divisive means, see
//! [`crate::stats::changepoint`]). The dashboard draws it, `kreg alerts scan` raises an alert
//! for each change point, and both say how to bisect one.

use serde::Serialize;
use sqlx::PgExecutor;

use crate::stats::changepoint::{self, ChangePoint};
use crate::stats::MetricKind;
use crate::store::alerts::Alert;
use crate::store::pages::HistoryPoint;

#[derive(Debug, Serialize)]
pub struct Point {
    pub run: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Whether the run's samples of this line count: the run finished, every job done or
    /// only the lab's failing (those are missing measurements, not results); only these are
    /// searched for change points.
    pub done: bool,
    pub n: usize,
    /// The line's jobs of the run that the lab failed (missing), and that failed otherwise.
    pub missing: i64,
    pub failed: i64,
    pub centre: f64,
    pub low: f64,
    pub high: f64,
}

/// A change point of a line: `run` is the first run of the new level, `previous_run` the
/// last finished run before it.
#[derive(Debug, Serialize)]
pub struct Change {
    pub run: i64,
    pub previous_run: i64,
    /// regression, improvement, or change (when the metric has no better direction).
    pub direction: &'static str,
    pub p: f64,
    pub centres: [f64; 2],
    pub runs: [usize; 2],
    /// As a fraction of the level before, with its 90 % interval (the reports' level).
    pub change: f64,
    pub interval: Option<(f64, f64)>,
    /// Whether the change is at least the reports' minimum effect: a smaller one is shown
    /// but raises no alert (a report would call it too small to matter).
    pub alertable: bool,
}

#[derive(Debug, Serialize)]
pub struct Line {
    /// "kernel/variant".
    pub name: String,
    pub kernel: String,
    pub variant: String,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

/// Centre and spread of one run's samples, as a report states them for the kind.
fn summarise(values: &mut [f64], kind: MetricKind) -> (f64, f64, f64) {
    if kind.by_ranks() {
        let (q1, q3) = crate::stats::quartiles(values);
        (crate::stats::median(values), q1, q3)
    } else {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        (mean, mean - sd, mean + sd)
    }
}

/// The runs in order and the lines of a history's samples (as the store gives them: by
/// run, kernel, variant).
pub fn lines(points: Vec<HistoryPoint>, kind: MetricKind) -> (Vec<i64>, Vec<Line>) {
    let higher_is_better = points.first().map(|p| p.higher_is_better);
    let mut runs: Vec<i64> = Vec::new();
    // Per kernel/variant, per run: (run, its start, whether it counts, the values, the
    // cell's missing and failed jobs).
    type PerRun = Vec<(i64, chrono::DateTime<chrono::Utc>, bool, Vec<f64>, (i64, i64))>;
    let mut groups: Vec<((String, String), PerRun)> = Vec::new();
    for p in points {
        if !runs.contains(&p.run_id) {
            runs.push(p.run_id);
        }
        let counted = counts(&p);
        let key = (p.kernel, p.variant);
        let at = match groups.iter().position(|g| g.0 == key) {
            Some(i) => i,
            None => {
                groups.push((key, Vec::new()));
                groups.len() - 1
            }
        };
        let g = &mut groups[at].1;
        match g.last_mut() {
            Some(last) if last.0 == p.run_id => last.3.push(p.value),
            _ => g.push((
                p.run_id,
                p.created_at,
                counted,
                vec![p.value],
                (p.cell_missing, p.cell_failed),
            )),
        }
    }
    let lines = groups
        .into_iter()
        .map(|((kernel, variant), per_run)| {
            let points: Vec<Point> = per_run
                .into_iter()
                .map(|(run, created_at, done, mut v, (missing, failed))| {
                    let (centre, low, high) = summarise(&mut v, kind);
                    Point {
                        run,
                        created_at,
                        done,
                        n: v.len(),
                        missing,
                        failed,
                        centre,
                        low,
                        high,
                    }
                })
                .collect();
            let changes = changes(&points, kind, higher_is_better);
            Line {
                name: format!("{kernel}/{variant}"),
                kernel,
                variant,
                points,
                changes,
            }
        })
        .collect();
    (runs, lines)
}

/// Whether a sample's run counts for its line's change points: the run is done, or it
/// failed and the sample's cell lost jobs to the lab alone (missing measurements: what was
/// measured stands, and nothing missing is taken for a change).
fn counts(p: &HistoryPoint) -> bool {
    use crate::plan::RunState;
    match p.run_state {
        RunState::Done => true,
        RunState::Failed => p.cell_failed == 0,
        RunState::Running | RunState::Interrupted => false,
    }
}

/// The change points of a line's finished runs.
fn changes(points: &[Point], kind: MetricKind, higher_is_better: Option<bool>) -> Vec<Change> {
    let done: Vec<&Point> = points.iter().filter(|p| p.done).collect();
    let centres: Vec<f64> = done.iter().map(|p| p.centre).collect();
    // The series is of run centres: means compared by their mean, whatever the samples'
    // kind (a median per run is as good an observation as a mean).
    let kind = if kind.by_ranks() { MetricKind::Mean } else { kind };
    changepoint::detect(&centres, kind, &changepoint::Settings::default())
        .into_iter()
        .map(|c: ChangePoint| {
            let cmp = &c.comparison;
            let worse = match higher_is_better {
                Some(true) => cmp.change < 0.0,
                Some(false) => cmp.change > 0.0,
                None => false,
            };
            Change {
                run: done[c.at].run,
                previous_run: done[c.at - 1].run,
                direction: match higher_is_better {
                    None => "change",
                    Some(_) if worse => "regression",
                    Some(_) => "improvement",
                },
                p: c.p,
                centres: cmp.centre,
                runs: [c.before, c.after],
                change: cmp.change,
                interval: cmp.ci,
                alertable: cmp.change.abs() >= crate::stats::Settings::default().min_effect,
            }
        })
        .collect()
}

/// The command that bisects an alert's change, or why there is none: the scenario file
/// the run came from, the commits of its kernel in the last run before and the first run
/// after the change.
pub async fn bisect_command(db: impl PgExecutor<'_> + Copy, a: &Alert) -> crate::store::Result<Result<String, String>> {
    use crate::store::alerts::commit_of;
    let before = commit_of(db, a.previous_run_id, &a.kernel).await?;
    let after = commit_of(db, a.run_id, &a.kernel).await?;
    let (Some(good), Some(bad)) = (before, after) else {
        return Ok(Err(format!(
            "kernel {} of runs {} and {} was not built from git by kreg: there is no commit range to bisect",
            a.kernel, a.previous_run_id, a.run_id
        )));
    };
    if good == bad {
        return Ok(Err(format!(
            "kernel {} is commit {} in runs {} and {}: the change is not in the kernel's source \
             (compare the runs' machines, tools and settings: kreg compare {} {})",
            a.kernel,
            &good[..good.len().min(12)],
            a.previous_run_id,
            a.run_id,
            a.previous_run_id,
            a.run_id
        )));
    }
    let file = crate::store::run(db, a.run_id).await?.source_path;
    let q = crate::ssh::session::quote;
    Ok(Ok(format!(
        "kreg bisect {} --kernel {} --good {good} --bad {bad} --metric {} --variant {}",
        q(&file),
        q(&a.kernel),
        q(&format!("{}/{}", a.workload, a.metric)),
        q(&a.variant)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(step: f64) -> Vec<Point> {
        // 0.05 % of noise: any step of a percent or more is found.
        let noise = [
            0.3, -0.5, 0.2, -0.1, 0.4, -0.3, 0.1, -0.4, 0.5, -0.2, 0.0, 0.3, -0.1, 0.2,
        ];
        noise
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let level = if i >= 7 { 100.0 * (1.0 + step) } else { 100.0 };
                let centre = level * (1.0 + n / 1000.0);
                Point {
                    run: i as i64 + 1,
                    created_at: chrono::Utc::now(),
                    done: true,
                    n: 1,
                    missing: 0,
                    failed: 0,
                    centre,
                    low: centre,
                    high: centre,
                }
            })
            .collect()
    }

    /// A step below the minimum effect is a change point on the history, but no alert; one
    /// above it is both. Its interval is at the reports' level (90%).
    #[test]
    fn a_change_point_below_the_minimum_effect_raises_no_alert() {
        let small = changes(&points(0.015), MetricKind::Mean, Some(false));
        assert_eq!(small.len(), 1, "{small:?}");
        assert_eq!(small[0].run, 8);
        assert!(!small[0].alertable, "{small:?}");
        let big = changes(&points(0.05), MetricKind::Mean, Some(false));
        assert_eq!(big.len(), 1, "{big:?}");
        assert!(big[0].alertable && big[0].direction == "regression", "{big:?}");
        let (l, h) = big[0].interval.unwrap();
        let wide = crate::stats::measure(
            &points(0.05)[..7].iter().map(|p| p.centre).collect::<Vec<_>>(),
            &points(0.05)[7..].iter().map(|p| p.centre).collect::<Vec<_>>(),
            MetricKind::Mean,
            crate::stats::Unit::Run,
            0.025,
        )
        .ci
        .unwrap();
        assert!(
            wide.0 < l && h < wide.1,
            "the 95% interval {wide:?} holds the 90% one ({l}, {h})"
        );
    }

    /// A run the lab failed a job of (its cell's measurement missing, the run `failed`)
    /// still counts with what it measured; one whose kernel or workload failed does not;
    /// a running or interrupted one neither.
    #[test]
    fn a_run_the_lab_failed_counts_with_what_it_measured() {
        use crate::plan::RunState;
        let at = |run: i64, state: RunState, value: f64, missing: i64, failed: i64| HistoryPoint {
            run_id: run,
            created_at: chrono::Utc::now(),
            run_state: state,
            kernel: "k".into(),
            variant: "v".into(),
            value,
            unit: "s".into(),
            kind: MetricKind::Mean,
            higher_is_better: false,
            cell_missing: missing,
            cell_failed: failed,
        };
        let pts = vec![
            at(1, RunState::Done, 1.0, 0, 0),
            at(2, RunState::Failed, 1.1, 2, 0),
            at(3, RunState::Failed, 1.2, 1, 1),
            at(4, RunState::Interrupted, 1.3, 0, 0),
        ];
        let (runs, lines) = lines(pts, MetricKind::Mean);
        assert_eq!(runs, vec![1, 2, 3, 4]);
        let got: Vec<(i64, bool, i64, i64)> = lines[0]
            .points
            .iter()
            .map(|p| (p.run, p.done, p.missing, p.failed))
            .collect();
        assert_eq!(
            got,
            vec![(1, true, 0, 0), (2, true, 2, 0), (3, false, 1, 1), (4, false, 0, 0)]
        );
    }
}
