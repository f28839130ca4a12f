//! `kreg alerts`: the change points of every history (E-Divisive means over each kernel and
//! variant's finished runs), raised as alerts and kept in the database; people triage them
//! here (new, acknowledged, invalid, fixed), the dashboard shows them read-only.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use sqlx::PgPool;

use kreg::store::alerts::{self, Alert, AlertState, NewAlert};
use kreg::store::pages;
use kreg::view::history;

#[derive(clap::Subcommand)]
pub enum AlertsCmd {
    /// Alerts, newest first (by default the new ones).
    List {
        /// new, acknowledged, invalid, fixed, or all.
        #[arg(long, default_value = "new")]
        state: String,
        /// Only this scenario's.
        #[arg(long)]
        scenario: Option<String>,
        /// Print the alerts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One alert: the change with its interval, the runs on each side, its state, and the
    /// `kreg bisect` command for its range.
    Show { id: i64 },
    /// Set an alert's triage state.
    Set {
        id: i64,
        /// new, acknowledged (or ack), invalid, or fixed.
        state: String,
        /// Why, kept with the alert (replaces its note).
        #[arg(long)]
        note: Option<String>,
    },
    /// Search every history (or one scenario's) for change points and raise an alert for
    /// each one not raised yet. `kreg run` does this for its scenario when a run finishes.
    Scan {
        #[arg(long)]
        scenario: Option<String>,
    },
}

pub async fn dispatch(cmd: Option<AlertsCmd>, db: &PgPool) -> Result<ExitCode> {
    match cmd.unwrap_or(AlertsCmd::List {
        state: "new".into(),
        scenario: None,
        json: false,
    }) {
        AlertsCmd::List { state, scenario, json } => list(db, &state, scenario.as_deref(), json).await,
        AlertsCmd::Show { id } => show(db, id).await,
        AlertsCmd::Set { id, state, note } => set(db, id, &state, note.as_deref()).await,
        AlertsCmd::Scan { scenario } => {
            let raised = scan(db, scenario.as_deref()).await?;
            if raised.is_empty() {
                println!("no new change point");
            }
            for a in &raised {
                println!("{}", one_line(a));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Raises an alert for every change point of the finished runs' histories (of `scenario`
/// only, when given) not raised yet; returns the new alerts.
pub async fn scan(db: &PgPool, scenario: Option<&str>) -> Result<Vec<Alert>> {
    let mut raised = Vec::new();
    for s in pages::series(db).await? {
        if scenario.is_some_and(|name| name != s.scenario) {
            continue;
        }
        let points = pages::history(db, &s.scenario, &s.workload, &s.metric).await?;
        let Some(first) = points.first() else { continue };
        let unit = first.unit.clone();
        let kind = first.kind;
        let (_, lines) = history::lines(points, kind);
        // A change point smaller than the reports' minimum effect is shown on the history
        // but raises no alert: a report would call that change too small to matter.
        for l in &lines {
            for c in l.changes.iter().filter(|c| c.alertable) {
                let new = NewAlert {
                    scenario: &s.scenario,
                    workload: &s.workload,
                    metric: &s.metric,
                    kernel: &l.kernel,
                    variant: &l.variant,
                    run_id: c.run,
                    previous_run_id: c.previous_run,
                    direction: c.direction,
                    unit: &unit,
                    centres: c.centres,
                    runs: c.runs,
                    change: Some(c.change),
                    interval: c.interval,
                    p: c.p,
                };
                if let Some(id) = alerts::raise(db, &new).await? {
                    raised.extend(alerts::get(db, id).await?);
                }
            }
        }
    }
    Ok(raised)
}

/// After a run finished: its scenario's histories scanned, each new alert said on stderr.
/// A failure to scan is said too and changes nothing of the run.
pub async fn after_run(db: &PgPool, scenario: &str) {
    match scan(db, Some(scenario)).await {
        Ok(raised) => {
            for a in raised {
                eprintln!(
                    "kreg: alert {}; see `kreg alerts show {}`",
                    kreg::text::printable(&one_line(&a)),
                    a.id
                );
            }
        }
        Err(e) => eprintln!("kreg: warning: the histories were not searched for change points: {e:#}"),
    }
}

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{:+.1}%", 100.0 * v),
        None => "n/a".into(),
    }
}

fn interval(a: &Alert) -> String {
    match (a.change_low, a.change_high) {
        (Some(l), Some(h)) => kreg::stats::interval_text(Some((l, h))),
        _ => "unbounded".into(),
    }
}

fn one_line(a: &Alert) -> String {
    format!(
        "#{} [{}] {}: {}/{} on {}/{}: {} {} {} at run {} (after run {})",
        a.id,
        a.state,
        a.scenario,
        a.workload,
        a.metric,
        a.kernel,
        a.variant,
        a.direction,
        pct(a.change),
        interval(a),
        a.run_id,
        a.previous_run_id
    )
}

async fn list(db: &PgPool, state: &str, scenario: Option<&str>, json: bool) -> Result<ExitCode> {
    let state = match state {
        "all" => None,
        s => Some(parse_state(s)?),
    };
    let found = alerts::list(db, state, scenario).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        println!("no {}alerts", state.map(|s| format!("{s} ")).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "id",
        "state",
        "scenario",
        "workload/metric",
        "kernel/variant",
        "change",
        "90% interval",
        "runs",
        "raised",
    ]);
    for a in &found {
        table.add_row(vec![
            a.id.to_string(),
            a.state.to_string(),
            a.scenario.clone(),
            format!("{}/{}", a.workload, a.metric),
            format!("{}/{}", a.kernel, a.variant),
            format!("{} {}", a.direction, pct(a.change)),
            interval(a),
            format!("{} → {}", a.previous_run_id, a.run_id),
            a.created_at.format("%Y-%m-%d %H:%M").to_string(),
        ]);
    }
    println!("{}", kreg::text::printable(&table.to_string()));
    Ok(ExitCode::SUCCESS)
}

fn parse_state(s: &str) -> Result<AlertState> {
    let s = if s == "ack" { "acknowledged" } else { s };
    match AlertState::parse(s) {
        Some(x) => Ok(x),
        None => bail!("{s:?} is not a state of an alert: use one of {}", AlertState::names()),
    }
}

async fn get(db: &PgPool, id: i64) -> Result<Alert> {
    alerts::get(db, id)
        .await?
        .with_context(|| format!("there is no alert {id} (`kreg alerts list --state all` lists them)"))
}

async fn show(db: &PgPool, id: i64) -> Result<ExitCode> {
    let a = get(db, id).await?;
    let fmt = kreg::report::fmt_value;
    let mut out = format!(
        "alert #{}: {} ({})\n\
         scenario {}, {}/{} on kernel {} variant {}\n\
         change point between run {} and run {}: {} {} {} ({})\n\
         level before: {} {} over {} runs; after: {} {} over {} runs\n\
         raised {}",
        a.id,
        a.state,
        if a.note.is_empty() { "no note" } else { &a.note },
        a.scenario,
        a.workload,
        a.metric,
        a.kernel,
        a.variant,
        a.previous_run_id,
        a.run_id,
        a.direction,
        pct(a.change),
        interval(&a),
        kreg::text::p_value(a.p),
        fmt(a.before_centre),
        a.unit,
        a.before_runs,
        fmt(a.after_centre),
        a.unit,
        a.after_runs,
        a.created_at.format("%Y-%m-%d %H:%M:%S UTC"),
    );
    if let Some(at) = a.state_changed_at {
        out.push_str(&format!(", set {} {}", a.state, at.format("%Y-%m-%d %H:%M:%S UTC")));
    }
    out.push_str(&format!(
        "\ncompare the runs: kreg compare {} {}\n",
        a.previous_run_id, a.run_id
    ));
    match history::bisect_command(db, &a).await? {
        Ok(cmd) => out.push_str(&format!("bisect the kernel's commits between them:\n  {cmd}\n")),
        Err(why) => out.push_str(&format!("no bisection: {why}\n")),
    }
    print!("{}", kreg::text::printable(&out));
    Ok(ExitCode::SUCCESS)
}

async fn set(db: &PgPool, id: i64, state: &str, note: Option<&str>) -> Result<ExitCode> {
    let state = parse_state(state)?;
    get(db, id).await?;
    alerts::set_state(db, id, state, note).await?;
    println!("alert #{id}: {state}");
    Ok(ExitCode::SUCCESS)
}
