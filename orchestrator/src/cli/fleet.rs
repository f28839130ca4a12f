//! `kreg machines` (the fleet's pool) and `kreg submit` (a scenario queued for workers).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use kreg::config::Config;
use kreg::plan::MachineHealth;
use kreg::scenario::{PoolMachine, Role};
use kreg::store::fleet;

#[derive(clap::Subcommand)]
pub enum MachinesCmd {
    /// Register the machines of a pool file (or update them: their leases stay).
    Add { pool: PathBuf },
    /// The machines: role, labels, load generator, lease (worker, epoch, since, heartbeat).
    List,
    /// Take a machine out of the pool (not while leased, nor while a slot not finished is
    /// pinned to it).
    Remove { name: String },
    /// Put a machine in maintenance: the slot it runs ends there, it takes nothing new
    /// until released.
    Drain {
        name: String,
        /// Why (shown in `kreg machines list` and on the fleet page).
        #[arg(long, default_value = "drained by hand")]
        reason: String,
    },
    /// Put a machine (bad, drained or retired) back in the pool, its failures forgotten.
    Release { name: String },
    /// Retire a machine: it takes nothing again (its history stays).
    Retire {
        name: String,
        #[arg(long, default_value = "retired by hand")]
        reason: String,
    },
    /// Run a health check on a machine out of the pool (bad or drained): the scenario (the
    /// operator's: its known kernel booted, the agent's identity, a short workload) on the
    /// machine and its load generator; every job done puts it back in the pool, anything
    /// else leaves it bad, saying why.
    Check { name: String, scenario: PathBuf },
}

/// `kreg submit`'s arguments.
#[derive(clap::Args)]
pub struct SubmitArgs {
    pub file: PathBuf,
    /// Machine pairs to spread the run over (each measures every kernel and variant).
    #[arg(long, default_value_t = 1)]
    pub pairs: u32,
    /// Only machines with this label (KEY=VALUE; repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Allow pairs whose machines' labels differ (the report then says so); without it,
    /// every pair of the run has the same labels.
    #[arg(long)]
    pub mix_labels: bool,
}

pub async fn machines(cmd: MachinesCmd, cfg: &Config) -> Result<ExitCode> {
    let db = super::db::connect(cfg).await?;
    match cmd {
        MachinesCmd::Add { pool } => add(&db, &pool, cfg).await,
        MachinesCmd::List => {
            print!("{}", list(&db).await?);
            Ok(ExitCode::SUCCESS)
        }
        MachinesCmd::Remove { name } => match fleet::remove_machine(&db, &name).await? {
            Ok(()) => {
                println!("{name} removed from the pool");
                Ok(ExitCode::SUCCESS)
            }
            Err(why) => bail!("{name} not removed: {why}"),
        },
        MachinesCmd::Drain { name, reason } => {
            super::health_check::set_health(&db, &name, MachineHealth::Maintenance, &reason).await
        }
        MachinesCmd::Release { name } => super::health_check::set_health(&db, &name, MachineHealth::Good, "").await,
        MachinesCmd::Retire { name, reason } => {
            super::health_check::set_health(&db, &name, MachineHealth::Retired, &reason).await
        }
        MachinesCmd::Check { name, scenario } => super::health_check::check(&db, &name, &scenario, cfg).await,
    }
}

/// Reads and checks a pool file, printing every problem as FILE:LINE:COL: message.
pub fn load_pool(file: &Path) -> Result<(String, PathBuf, Vec<PoolMachine>)> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let dir = std::fs::canonicalize(file)
        .with_context(|| format!("cannot resolve {}", file.display()))?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    match kreg::scenario::pool_from_str(&text, &dir) {
        Ok(m) => Ok((text, dir, m)),
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render(&file.display().to_string()));
            }
            bail!("{} has {} problem(s); no machine added", file.display(), diags.len())
        }
    }
}

async fn add(db: &sqlx::PgPool, file: &Path, cfg: &Config) -> Result<ExitCode> {
    let (text, dir, machines) = load_pool(file)?;
    let asked = futures_util::future::join_all(
        machines
            .iter()
            .map(|m| kreg::engine::reach::agent_id(m, cfg, std::time::Duration::from_secs(20))),
    )
    .await;
    let mut ids = Vec::new();
    for (m, id) in machines.iter().zip(asked) {
        match id {
            Ok(id) => ids.push(id),
            Err(why) => {
                eprintln!(
                    "{}: machine `{}`: its agent was not reached ({}): whether another entry reaches the same agent is not checked",
                    file.display(),
                    m.name,
                    kreg::text::printable(&why.to_string())
                );
                ids.push(None);
            }
        }
    }
    let problems = same_agents(&machines, &ids, &fleet::machines(db).await?);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("{}: {p}", file.display());
        }
        bail!("{} has {} problem(s); no machine added", file.display(), problems.len());
    }
    let rows: Vec<fleet::NewMachine> = machines
        .iter()
        .zip(&ids)
        .map(|(m, id)| fleet::NewMachine {
            name: &m.name,
            role: m.role,
            loadgen: m.loadgen.as_deref(),
            labels: &m.labels,
            about: &m.about,
            agent_id: id.as_deref(),
        })
        .collect();
    fleet::add_machines(db, &text, &dir.display().to_string(), &rows).await?;
    for m in &machines {
        println!(
            "{}: {} {}{}",
            m.name,
            m.role,
            labels_text(&m.labels),
            about_text(&m.about)
        );
    }
    println!("{} machine(s) in the pool from {}", machines.len(), file.display());
    Ok(ExitCode::SUCCESS)
}

/// Entries whose agents reported one id: the second of two in the file, or one that reaches
/// the agent of a machine already in the pool under another name. Leased to two slots at
/// once, one agent fences one of them, whose jobs then fail.
fn same_agents(machines: &[PoolMachine], ids: &[Option<String>], stored: &[fleet::MachineRow]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (m, id) in machines.iter().zip(ids) {
        let Some(id) = id.as_deref() else { continue };
        let short = &id[..id.len().min(12)];
        if let Some((_, first)) = seen.iter().find(|(i, _)| *i == id) {
            out.push(format!(
                "machine `{}` reaches the same agent as machine `{first}` (agent id {short}…): one machine leased to two slots fences one of them; list it once",
                m.name
            ));
            continue;
        }
        seen.push((id, &m.name));
        let other = stored
            .iter()
            .find(|r| r.agent_id.as_deref() == Some(id) && !machines.iter().any(|n| n.name == r.name));
        if let Some(r) = other {
            out.push(format!(
                "machine `{}` reaches the same agent as machine `{}`, already in the pool (agent id {short}…): list it once (`kreg machines remove {}` first to rename it)",
                m.name, r.name, r.name
            ));
        }
    }
    out
}

/// What only describes a machine, after its labels: " (about serial=J1, rack=r3)".
fn about_text(a: &BTreeMap<String, String>) -> String {
    match a.is_empty() {
        true => String::new(),
        false => format!(
            " (about {})",
            a.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn labels_text(l: &BTreeMap<String, String>) -> String {
    if l.is_empty() {
        return "(no labels)".into();
    }
    l.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The pool as `kreg machines list` and `kreg status` print it.
pub async fn list(db: &sqlx::PgPool) -> Result<String> {
    use std::fmt::Write;
    let mut out = String::new();
    let rows = fleet::machines(db).await?;
    if rows.is_empty() {
        out.push_str("no machines: add a pool file with `kreg machines add POOL.yaml`\n");
    }
    for m in rows {
        let lease = match (m.leased, m.lease_worker, m.lease_epoch) {
            (true, Some(w), Some(e)) => format!(
                "leased by worker {w} at epoch {e} since {}, heartbeat {}, expires {}",
                time(m.lease_since),
                time(m.lease_heartbeat),
                time(m.lease_expires)
            ),
            (false, Some(w), Some(e)) => format!(
                "free (the lease of worker {w}, epoch {e}, expired {})",
                time(m.lease_expires)
            ),
            _ => "free".into(),
        };
        let ldg = m.loadgen.as_ref().map(|l| format!(" loadgen={l}")).unwrap_or_default();
        writeln!(
            out,
            "{:<20} {:<8} {}{}{ldg}  {}  {lease}",
            m.name,
            m.role,
            labels_text(&m.labels.0),
            about_text(&m.about.0),
            health_text(&m)
        )?;
    }
    Ok(out)
}

/// "good (12 slots, 1 failed by the lab, last good 10:02:11)", or "BAD since …: why".
pub fn health_text(m: &fleet::MachineRow) -> String {
    let counts = format!(
        "{} slot(s) done, {} failed by the lab, last good {}",
        m.slots_done,
        m.slots_lab_failed,
        time(m.last_good)
    );
    match m.health {
        MachineHealth::Good => format!("good ({counts})"),
        h => format!(
            "{} since {}: {} ({counts})",
            h.as_str().to_uppercase(),
            time(m.health_since),
            kreg::text::one_line(m.health_reason.as_deref().unwrap_or("no reason given"))
        ),
    }
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.format("%H:%M:%S").to_string())
        .unwrap_or_else(|| "-".into())
}

/// `KEY=VALUE` pairs.
fn parse_labels(given: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for l in given {
        let Some((k, v)) = l.split_once('=') else {
            bail!("--label {l:?}: expected KEY=VALUE");
        };
        if k.is_empty() {
            bail!("--label {l:?}: the key is empty");
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// Whether the pool can ever give the run its pairs: SUTs with the labels asked for (and a
/// load generator when the scenario has one), all of one set of labels unless mixing is
/// allowed. Why not, otherwise.
fn pool_fits(
    rows: &[fleet::MachineRow],
    want: &BTreeMap<String, String>,
    a: &SubmitArgs,
    needs_loadgen: bool,
) -> Result<()> {
    let fit: Vec<&fleet::MachineRow> = rows
        .iter()
        .filter(|m| m.role == Role::Sut)
        .filter(|m| want.iter().all(|(k, v)| m.labels.0.get(k) == Some(v)))
        .filter(|m| !needs_loadgen || m.loadgen.is_some())
        .collect();
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for m in &fit {
        *groups.entry(labels_text(&m.labels.0)).or_default() += 1;
    }
    let most = groups.values().copied().max().unwrap_or(0);
    let pairs = a.pairs as usize;
    let what = if needs_loadgen {
        "SUTs with a load generator"
    } else {
        "SUTs"
    };
    if fit.len() < pairs {
        bail!(
            "the pool has {} {what} with labels {} (want {pairs})",
            fit.len(),
            labels_text(want)
        );
    }
    if !a.mix_labels && most < pairs {
        let seen: Vec<String> = groups.iter().map(|(l, n)| format!("{n} with {l}")).collect();
        bail!(
            "no {pairs} of the pool's {what} have the same labels ({}): a comparison never mixes machines of different labels unless --mix-labels says so (the report then says it did)",
            seen.join("; ")
        );
    }
    Ok(())
}

pub async fn submit(a: &SubmitArgs, cfg: &Config) -> Result<ExitCode> {
    let (text, s) = super::validate::load(&a.file)?;
    if a.pairs == 0 {
        bail!("--pairs 0: give at least one pair");
    }
    kreg::engine::part::fleet_fit(&s).map_err(|e| anyhow::anyhow!("{}: {e}; nothing queued", a.file.display()))?;
    let jobs = kreg::plan::expand(&s);
    let slots = kreg::plan::slots(&s, &jobs, a.pairs)
        .map_err(|e| anyhow::anyhow!("{}: {e}; nothing queued", a.file.display()))?;
    let want = parse_labels(&a.labels)?;
    let needs_loadgen = s.hosts.iter().any(|h| h.role == Role::Loadgen);
    let db = super::db::connect(cfg).await?;
    let rows = fleet::machines(&db).await?;
    pool_fits(&rows, &want, a, needs_loadgen).map_err(|e| anyhow::anyhow!("{e}; nothing queued"))?;
    let source = std::fs::canonicalize(&a.file).unwrap_or(a.file.clone());
    let with_slots: Vec<(kreg::plan::Job, i32)> = jobs.into_iter().zip(slots.into_iter().map(|s| s as i32)).collect();
    let source = source.display().to_string();
    // The files it carries, stored from the submitter's paths now: no worker reads them.
    let files = kreg::store::blobs::carry(&db, &s).await?;
    let run_id = fleet::submit(
        &db,
        &kreg::store::ScenarioText {
            name: &s.name,
            yaml: &text,
            source_path: &source,
            files: &files,
        },
        &with_slots,
        &fleet::Submission {
            pairs: a.pairs as i32,
            labels: &want,
            mix_labels: a.mix_labels,
            needs_loadgen,
        },
    )
    .await?;
    println!(
        "run {run_id}: {} jobs ({}) queued on {} pair(s){}; workers take it (`kreg worker`), `kreg status` shows it",
        with_slots.len(),
        s.name,
        a.pairs,
        if want.is_empty() {
            String::new()
        } else {
            format!(" with {}", labels_text(&want))
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The queue, the machines and the workers, as `kreg status` prints them after the runs
/// (nothing when the fleet is not used).
pub async fn status(db: &sqlx::PgPool) -> Result<String> {
    use std::fmt::Write;
    let slots = fleet::open_slots(db).await?;
    let workers = fleet::workers(db, 24.0).await?;
    let machines = fleet::machines(db).await?;
    let mut out = String::new();
    if slots.is_empty() && workers.is_empty() && machines.is_empty() {
        return Ok(out);
    }
    writeln!(out, "\nqueue (slots of runs not finished):")?;
    if slots.is_empty() {
        writeln!(out, "  empty")?;
    }
    for s in &slots {
        let on = match (&s.sut, s.worker, s.epoch) {
            (Some(m), Some(w), Some(e)) if s.state == kreg::plan::SlotState::Leased => {
                format!(" on {m} by worker {w} (epoch {e})")
            }
            (Some(m), _, _) => format!(" on {m}"),
            _ => String::new(),
        };
        let over = if s.takeovers > 0 {
            format!(", taken over {} time(s)", s.takeovers)
        } else {
            String::new()
        };
        let err = s
            .error
            .as_deref()
            .map(|e| format!("  {}", kreg::text::one_line(e)))
            .unwrap_or_default();
        writeln!(
            out,
            "  run {} slot {}  {:<7} {}/{} done{on}{over}{err}",
            s.run_id, s.slot, s.state, s.done, s.jobs
        )?;
    }
    writeln!(out, "machines:")?;
    for line in list(db).await?.lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "workers (seen in the last 24 h):")?;
    if workers.is_empty() {
        writeln!(out, "  none")?;
    }
    for w in &workers {
        let state = match w.stopped_at {
            Some(t) => format!("stopped {}", t.format("%H:%M:%S")),
            None if w.gone => format!(
                "GONE: silent for {:.0} s without stopping (killed, or its host is down)",
                w.silent_secs
            ),
            None => format!("last heartbeat {:.0} s ago", w.silent_secs),
        };
        writeln!(
            out,
            "  worker {} {}  {state}, holding {} slot(s)",
            w.id,
            kreg::text::one_line(&w.name),
            w.holding
        )?;
    }
    Ok(out)
}
