//! `kreg schedstat`: the difference between two /proc/schedstat snapshots, or the mean
//! per-job deltas of two kernels or variants of a run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use sqlx::PgPool;

use kreg::config::Config;
use kreg::store;

#[derive(Subcommand)]
pub enum SchedstatCmd {
    /// after − before, per CPU, per domain, summed, with rates and derived figures.
    Diff {
        before: PathBuf,
        after: PathBuf,
        /// The kernel's HZ, to turn jiffies into seconds.
        #[arg(long, default_value_t = 250)]
        hz: u32,
    },
    /// Mean per-job deltas of two sides of a run: KERNEL or KERNEL/VARIANT each.
    Compare { run: i64, a: String, b: String },
}

pub async fn dispatch(cmd: SchedstatCmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        SchedstatCmd::Diff { before, after, hz } => {
            let read = |p: &PathBuf| -> Result<kreg::schedstat::Snapshot> {
                let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
                kreg::schedstat::parse(&text).with_context(|| p.display().to_string())
            };
            let d = kreg::schedstat::diff(&read(&before)?, &read(&after)?).map_err(anyhow::Error::msg)?;
            print!("{}", kreg::schedstat::render_diff(&d, hz));
            Ok(ExitCode::SUCCESS)
        }
        SchedstatCmd::Compare { run, a, b } => compare(&super::db::connect(cfg).await?, run, &a, &b).await,
    }
}

async fn compare(db: &PgPool, run: i64, a: &str, b: &str) -> Result<ExitCode> {
    let pairs = store::schedstat_pairs(db, run).await?;
    let side = |spec: &str| -> Result<Vec<kreg::schedstat::Diff>> {
        let (kernel, variant) = match spec.split_once('/') {
            Some((k, v)) => (k, Some(v)),
            None => (spec, None),
        };
        let mut out = Vec::new();
        for p in &pairs {
            if p.kernel == kernel && variant.is_none_or(|x| x == p.variant) {
                let d = kreg::schedstat::diff(&kreg::schedstat::parse(&p.before)?, &kreg::schedstat::parse(&p.after)?)
                    .map_err(anyhow::Error::msg)?;
                out.push(d);
            }
        }
        if out.is_empty() {
            bail!("run {run} has no done job with schedstat snapshots for {spec:?}");
        }
        Ok(out)
    };
    let (da, db_) = (side(a)?, side(b)?);
    let (ta, xa) = kreg::schedstat::mean_totals(&da).expect("non-empty");
    let (tb, xb) = kreg::schedstat::mean_totals(&db_).expect("non-empty");
    println!(
        "run {run}: /proc/schedstat deltas per job, summed over CPUs; {a} ({} jobs) vs {b} ({} jobs)",
        da.len(),
        db_.len()
    );
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(["counter", a, b, "change%"]);
    let pct = |x: f64, y: f64| {
        if x != 0.0 {
            format!("{:+.2}%", 100.0 * (y - x) / x)
        } else {
            "-".into()
        }
    };
    for (i, name) in kreg::schedstat::CPU_FIELDS.iter().enumerate() {
        if *name != "array_exp" {
            table.add_row(vec![
                name.to_string(),
                format!("{:.1}", ta[i]),
                format!("{:.1}", tb[i]),
                pct(ta[i], tb[i]),
            ]);
        }
    }
    for ((name, va, unit), (_, vb, _)) in xa.iter().zip(&xb) {
        table.add_row(vec![
            format!("{name} ({unit})"),
            format!("{va:.2}"),
            format!("{vb:.2}"),
            pct(*va, *vb),
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}
