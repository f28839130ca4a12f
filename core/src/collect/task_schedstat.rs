//! Per-task scheduler statistics of the workload's processes and threads, each taken at
//! its exit (taskstats, by the agent): per thread as a table, summed as metrics.

use crate::Error;
use kreg_protocol::wire::TaskStat;

use crate::parse::{Metric, MetricKind};

/// Most threads listed one by one in the table (all are summed).
pub const TABLE_ROWS: usize = 2000;

/// The table kept with the job and the metrics: time on a CPU and waiting on a run queue
/// (ms, summed over the tasks), timeslices, and the mean wait per timeslice (µs).
pub fn summarize(tasks: &[TaskStat]) -> Result<(String, Vec<Metric>), Error> {
    if tasks.is_empty() {
        return Err(Error::unreadable(
            "no task of the workload was seen exiting (taskstats)",
        ));
    }
    let mut sorted: Vec<&TaskStat> = tasks.iter().collect();
    sorted.sort_by_key(|t| (t.tgid, t.tid));
    let mut table = format!(
        "{:>8} {:>8} {:<16} {:>12} {:>12} {:>9}\n",
        "tid", "pid", "comm", "run_ms", "delay_ms", "slices"
    );
    for t in sorted.iter().take(TABLE_ROWS) {
        table.push_str(&format!(
            "{:>8} {:>8} {:<16} {:>12.3} {:>12.3} {:>9}\n",
            t.tid,
            t.tgid,
            t.comm,
            t.run_ns as f64 / 1e6,
            t.delay_ns as f64 / 1e6,
            t.slices
        ));
    }
    if sorted.len() > TABLE_ROWS {
        table.push_str(&format!("… {} more tasks, in the sums\n", sorted.len() - TABLE_ROWS));
    }
    let run: u64 = tasks.iter().map(|t| t.run_ns).sum();
    let delay: u64 = tasks.iter().map(|t| t.delay_ns).sum();
    let slices: u64 = tasks.iter().map(|t| t.slices).sum();
    table.push_str(&format!(
        "{:>8} {:>8} {:<16} {:>12.3} {:>12.3} {:>9}\n",
        "all",
        tasks.len(),
        "",
        run as f64 / 1e6,
        delay as f64 / 1e6,
        slices
    ));
    let mut metrics = vec![
        Metric::new("task_run_ms", run as f64 / 1e6, "ms", false, MetricKind::Mean),
        Metric::new("task_delay_ms", delay as f64 / 1e6, "ms", false, MetricKind::Mean),
        Metric::new("task_slices", slices as f64, "", false, MetricKind::Count),
        Metric::new("tasks", tasks.len() as f64, "", false, MetricKind::Count),
    ];
    if slices > 0 {
        metrics.push(Metric::new(
            "task_delay_per_slice_us",
            delay as f64 / slices as f64 / 1e3,
            "us",
            false,
            MetricKind::Mean,
        ));
    }
    Ok((table, metrics))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(tid: u32, tgid: u32, run: u64, delay: u64, slices: u64) -> TaskStat {
        TaskStat {
            tid,
            tgid,
            comm: "hackbench".into(),
            run_ns: run,
            delay_ns: delay,
            slices,
        }
    }

    #[test]
    fn tasks_are_listed_and_summed() {
        let (table, m) = summarize(&[t(12, 10, 2_000_000, 500_000, 4), t(10, 10, 1_000_000, 1_500_000, 6)]).unwrap();
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(get("task_run_ms"), 3.0);
        assert_eq!(get("task_delay_ms"), 2.0);
        assert_eq!(get("task_slices"), 10.0);
        assert_eq!(get("tasks"), 2.0);
        assert_eq!(get("task_delay_per_slice_us"), 200.0);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].trim_start().starts_with("10 "), "{table}");
        assert!(lines[3].trim_start().starts_with("all"), "{table}");
        assert!(summarize(&[]).is_err());
    }
}
