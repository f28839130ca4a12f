//! A report of a run that has not finished: every verdict stands on the observations so
//! far, and the plan may still add runs to a cell. Said at the top of every format, per row
//! in JSON and CSV, and on the dashboard's report page.

use serde::Serialize;

use crate::plan::{JobState, RunState};

/// Where an unfinished run stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provisional {
    /// Running, or interrupted (to be resumed).
    pub state: RunState,
    /// Jobs (warm-ups aside) done, failed, and planned so far.
    pub done: usize,
    pub failed: usize,
    pub jobs: usize,
    /// Per cell: runs done and the most the plan may still add.
    pub cells: Vec<CellLeft>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellLeft {
    pub workload: String,
    pub kernel: String,
    pub variant: String,
    pub done: usize,
    pub may_add: usize,
}

/// One job as [`Provisional::of`] counts it: (workload, kernel, variant, state, warm-up).
pub type JobCount<'a> = (&'a str, &'a str, &'a str, JobState, bool);

impl Provisional {
    /// From the run's state and jobs; `None` for a run that ended. `max_runs` is the most
    /// runs a cell may get (the plan's `iterations`, or its `max` when adaptive).
    pub fn of<'a>(state: RunState, jobs: impl IntoIterator<Item = JobCount<'a>>, max_runs: u32) -> Option<Provisional> {
        if !matches!(state, RunState::Running | RunState::Interrupted) {
            return None;
        }
        let mut p = Provisional {
            state,
            done: 0,
            failed: 0,
            jobs: 0,
            cells: Vec::new(),
        };
        // Per cell (workload, kernel, variant): done, failed, planned.
        type Cell<'c> = (&'c str, &'c str, &'c str);
        let mut counts: Vec<(Cell, [usize; 3])> = Vec::new();
        for (workload, kernel, variant, job_state, warmup) in jobs {
            if warmup {
                continue;
            }
            p.jobs += 1;
            let key = (workload, kernel, variant);
            let at = match counts.iter().position(|c| c.0 == key) {
                Some(i) => i,
                None => {
                    counts.push((key, [0; 3]));
                    counts.len() - 1
                }
            };
            let c = &mut counts[at].1;
            c[2] += 1;
            match job_state {
                JobState::Done => {
                    c[0] += 1;
                    p.done += 1;
                }
                JobState::Failed => {
                    c[1] += 1;
                    p.failed += 1;
                }
                _ => {}
            }
        }
        p.cells = counts
            .into_iter()
            .map(|((workload, kernel, variant), [done, failed, planned])| CellLeft {
                workload: workload.into(),
                kernel: kernel.into(),
                variant: variant.into(),
                done,
                may_add: (planned - done - failed).max((max_runs as usize).saturating_sub(done + failed)),
            })
            .collect();
        Some(p)
    }

    /// The most runs the plan may still add to one cell.
    pub fn most_left(&self) -> usize {
        self.cells.iter().map(|c| c.may_add).max().unwrap_or(0)
    }

    /// What the plan may still add to a row's cell.
    pub fn left_in(&self, workload: &str, kernel: &str, variant: &str) -> Option<usize> {
        self.cells
            .iter()
            .find(|c| c.workload == workload && c.kernel == kernel && c.variant == variant)
            .map(|c| c.may_add)
    }

    /// The line every format starts with.
    pub fn line(&self) -> String {
        let how = if self.state == RunState::Interrupted {
            "was interrupted (`kreg resume` continues it)"
        } else {
            "is still running"
        };
        format!(
            "PROVISIONAL: the run {how}: {} of {} jobs done so far{}; every verdict below stands on the runs done \
             so far and may change, as the plan may still add up to {} run(s) to a cell",
            self.done,
            self.jobs,
            if self.failed > 0 {
                format!(", {} failed", self.failed)
            } else {
                String::new()
            },
            self.most_left()
        )
    }

    /// A row's mark: "provisional: 3 runs so far, up to 5 more".
    pub fn row_note(&self, workload: &str, kernel: &str, variant: &str, n: usize) -> String {
        match self.left_in(workload, kernel, variant) {
            Some(0) => format!("provisional: {n} runs, none more planned"),
            Some(k) => format!("provisional: {n} runs so far, up to {k} more"),
            None => format!("provisional: {n} runs so far"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_left_by_the_plan_and_finished_runs_not_provisional() {
        let jobs = [
            ("w", "a", "v", JobState::Done, true),
            ("w", "a", "v", JobState::Done, false),
            ("w", "a", "v", JobState::Done, false),
            ("w", "a", "v", JobState::Pending, false),
            ("w", "b", "v", JobState::Done, false),
            ("w", "b", "v", JobState::Failed, false),
            ("w", "b", "v", JobState::Running, false),
        ];
        let p = Provisional::of(RunState::Running, jobs, 6).unwrap();
        assert_eq!((p.done, p.failed, p.jobs), (3, 1, 6));
        // a: 2 done, 1 pending, up to 6: 4 more; b: 1 done, 1 failed: up to 4 more.
        assert_eq!(p.left_in("w", "a", "v"), Some(4));
        assert_eq!(p.left_in("w", "b", "v"), Some(4));
        assert_eq!(p.most_left(), 4);
        assert!(p
            .line()
            .starts_with("PROVISIONAL: the run is still running: 3 of 6 jobs done so far, 1 failed;"));
        assert_eq!(p.row_note("w", "a", "v", 2), "provisional: 2 runs so far, up to 4 more");
        // A fixed plan with its jobs all done but the run not marked done: none more.
        let fixed = Provisional::of(RunState::Interrupted, [("w", "a", "v", JobState::Done, false)], 1).unwrap();
        assert_eq!(
            fixed.row_note("w", "a", "v", 1),
            "provisional: 1 runs, none more planned"
        );
        assert!(fixed.line().contains("was interrupted (`kreg resume` continues it)"));
        assert_eq!(Provisional::of(RunState::Done, jobs, 6), None);
        assert_eq!(Provisional::of(RunState::Failed, jobs, 6), None);
    }
}
