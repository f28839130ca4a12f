//! `kreg parse`: a tool's output read by hand, its metrics printed as JSON.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

pub fn parse(kind: &str, file: &Path) -> Result<ExitCode> {
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
