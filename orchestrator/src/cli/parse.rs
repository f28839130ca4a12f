//! `kreg parse`: a tool's output read by hand, its metrics printed as JSON.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

/// `kreg parse`'s arguments.
#[derive(clap::Args)]
pub struct ParseArgs {
    /// hackbench, schbench (text or `-j` JSON), schbench-json, sysbench, netperf (`-k`, `-o` or its
    /// default table), hammerdb (stdout, time profile, or both), perf-bench, or
    /// perf-sched-stats (a `perf sched stats report`: the all-CPUs summary per domain level).
    kind: String,
    /// The output file; `-` reads standard input.
    file: std::path::PathBuf,
}

pub fn parse(a: &ParseArgs) -> Result<ExitCode> {
    let (kind, file): (&str, &Path) = (&a.kind, &a.file);
    let text = if file.as_os_str() == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).context("cannot read standard input")?;
        t
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let metrics = kreg::workload::parse_output(kind, &text).with_context(|| format!("{}", file.display()))?;
    let json: Vec<serde_json::Value> = metrics
        .iter()
        .map(|m| serde_json::json!({"name": m.name, "value": m.value, "unit": m.unit, "direction": m.direction(), "kind": m.kind}))
        .collect();
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(ExitCode::SUCCESS)
}
