//! A history with one step in it, made by real runs: thirteen `kreg run`s of one scenario
//! against a real agent, a `command` workload printing a latency that steps up 5 % (with
//! about 1 % of noise, the same on every test run) from the eighth run on.

use std::path::Path;

use crate::Agent;

/// The runs' noise, in percent.
const NOISE: [f64; 13] = [0.4, -1.1, 0.7, -0.2, 1.3, -0.8, 0.1, -1.2, 0.9, -0.5, 0.3, 1.0, -0.6];

/// The first run of the new level.
pub const STEP_RUN: usize = 8;

/// Runs the thirteen runs through `kreg` (given the arguments, it returns the exit code,
/// stdout and stderr), with the scenario (`name: steps`, workload `probe`, metric `latency`
/// in ms, lower is better, kernel `current`) and its value's file in `dir`. Returns each
/// `kreg: alert …` line a run printed, with the run's number.
pub fn step_runs(
    dir: &Path,
    agent: &Agent,
    mut kreg: impl FnMut(&[&str]) -> (Option<i32>, String, String),
) -> Vec<(usize, String)> {
    let level = dir.join("level");
    let scenario = dir.join("steps.yaml");
    std::fs::write(
        &scenario,
        format!(
            r#"
name: steps
{hosts}kernels: [ {{ name: current, source: running }} ]
workloads:
  - name: probe
    kind: command
    argv: [cat, "{level}"]
    metrics: {{ latency: {{ regex: "value: ([0-9.]+)", unit: ms, higher_is_better: false }} }}
iterations: 2
"#,
            hosts = agent.hosts_yaml(),
            level = level.display()
        ),
    )
    .unwrap();
    let mut raised = Vec::new();
    for (i, n) in NOISE.iter().enumerate() {
        let run = i + 1;
        let base = if run >= STEP_RUN { 105.0 } else { 100.0 };
        std::fs::write(&level, format!("value: {:.2}\n", base * (1.0 + n / 100.0))).unwrap();
        let (code, out, err) = kreg(&["run", scenario.to_str().unwrap()]);
        assert_eq!(code, Some(0), "run {run}: {out}\n{err}");
        for line in err.lines().filter(|l| l.starts_with("kreg: alert ")) {
            raised.push((run, line.to_string()));
        }
    }
    raised
}
