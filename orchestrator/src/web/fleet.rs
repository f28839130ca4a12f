//! The fleet: the queue (slots of runs not finished), each machine (free, or leased by
//! which worker, since when, its last heartbeat) and each worker.

use axum::extract::State;
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::{json, ApiResult, AppState, PageResult};
use crate::store::fleet;
use crate::view::ViewError;

/// A machine as the page and the API show it (not its pool file).
#[derive(Serialize)]
struct Machine {
    name: String,
    role: crate::scenario::Role,
    labels: fleet::Labels,
    /// Labels that only describe it (never matched nor compared).
    about: fleet::Labels,
    loadgen: Option<String>,
    /// Whether a lease holds it now.
    leased: bool,
    worker: Option<i64>,
    epoch: Option<i64>,
    since: Option<chrono::DateTime<chrono::Utc>>,
    heartbeat: Option<chrono::DateTime<chrono::Utc>>,
    expires: Option<chrono::DateTime<chrono::Utc>>,
    /// good, bad, maintenance or retired, with why, and the machine's record.
    health: crate::plan::MachineHealth,
    health_reason: Option<String>,
    health_since: Option<chrono::DateTime<chrono::Utc>>,
    failing: i32,
    slots_done: i32,
    slots_lab_failed: i32,
    last_good: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Serialize)]
struct Fleet {
    queue: Vec<fleet::SlotRow>,
    machines: Vec<Machine>,
    workers: Vec<fleet::WorkerRow>,
}

async fn load(st: &AppState) -> Result<Fleet, ViewError> {
    let queue = fleet::open_slots(&st.db).await?;
    let workers = fleet::workers(&st.db, 24.0).await?;
    let machines = fleet::machines(&st.db)
        .await?
        .into_iter()
        .map(|m| Machine {
            leased: m.leased,
            worker: m.leased.then_some(m.lease_worker).flatten(),
            epoch: m.leased.then_some(m.lease_epoch).flatten(),
            since: m.leased.then_some(m.lease_since).flatten(),
            heartbeat: m.leased.then_some(m.lease_heartbeat).flatten(),
            expires: m.leased.then_some(m.lease_expires).flatten(),
            name: m.name,
            role: m.role,
            labels: m.labels.0,
            about: m.about.0,
            loadgen: m.loadgen,
            health: m.health,
            health_reason: m.health_reason,
            health_since: m.health_since,
            failing: m.failing,
            slots_done: m.slots_done,
            slots_lab_failed: m.slots_lab_failed,
            last_good: m.last_good,
        })
        .collect();
    Ok(Fleet {
        queue,
        machines,
        workers,
    })
}

pub async fn api(State(st): State<AppState>) -> ApiResult {
    json(&load(&st).await?)
}

fn when(t: &Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.as_ref().map(html::time).unwrap_or_else(|| "–".into())
}

fn labels(l: &fleet::Labels) -> String {
    let v: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v}")).collect();
    esc(&v.join(", "))
}

pub async fn page(State(st): State<AppState>) -> PageResult {
    let f = load(&st).await?;
    let mut body = String::from(
        "<p class=\"note\">Machine pairs leased by <code>kreg worker</code> processes for the slots of submitted runs (<code>kreg submit</code>); a lease lives while its worker's heartbeat renews it. Reload for the latest.</p>",
    );
    body += &queue(&f.queue);
    body += &machines(&f.machines);
    body += &workers(&f.workers);
    Ok(Html(html::layout("Fleet", &body, &Live::No)))
}

fn queue(queue: &[fleet::SlotRow]) -> String {
    let mut body = String::from("<h2>Queue</h2>");
    if queue.is_empty() {
        body += "<p>Empty: no submitted run is waiting or running.</p>";
    } else {
        let rows: Vec<Vec<String>> = queue
            .iter()
            .map(|s| {
                vec![
                    html::link(&format!("/runs/{}", s.run_id), &format!("run {}", s.run_id)),
                    esc(&s.scenario),
                    s.slot.to_string(),
                    s.state.to_string(),
                    s.sut.as_deref().map(esc).unwrap_or_default(),
                    s.worker
                        .filter(|_| s.state == crate::plan::SlotState::Leased)
                        .map(|w| format!("worker {w}"))
                        .unwrap_or_default(),
                    s.epoch.map(|e| e.to_string()).unwrap_or_default(),
                    s.takeovers.to_string(),
                    format!("{}/{}", s.done, s.jobs),
                    s.error.as_deref().map(esc).unwrap_or_default(),
                ]
            })
            .collect();
        body += &html::table(
            "queue",
            &[
                "run",
                "scenario",
                "slot",
                "state",
                "machine",
                "worker",
                "epoch",
                "taken over",
                "jobs done",
                "error",
            ],
            &rows,
        );
    }
    body
}

fn machines(machines: &[Machine]) -> String {
    let mut body = String::from("<h2>Machines</h2>");
    if machines.is_empty() {
        body += "<p>No machines: add a pool file with <code>kreg machines add POOL.yaml</code>.</p>";
    } else {
        let rows: Vec<Vec<String>> = machines
            .iter()
            .map(|m| {
                vec![
                    esc(&m.name),
                    m.role.to_string(),
                    match m.about.is_empty() {
                        true => labels(&m.labels),
                        false => format!(
                            "{}<br><span class=\"note\">about: {}</span>",
                            labels(&m.labels),
                            labels(&m.about)
                        ),
                    },
                    m.loadgen.as_deref().map(esc).unwrap_or_default(),
                    match (m.leased, m.worker) {
                        (true, Some(w)) => format!("leased by worker {w}"),
                        _ => "free".into(),
                    },
                    m.epoch.map(|e| e.to_string()).unwrap_or_default(),
                    when(&m.since),
                    when(&m.heartbeat),
                    when(&m.expires),
                    match m.health {
                        crate::plan::MachineHealth::Good => "good".to_string(),
                        h => format!(
                            "<strong>{h}</strong> since {}: {}",
                            when(&m.health_since),
                            esc(m.health_reason.as_deref().unwrap_or(""))
                        ),
                    },
                    format!(
                        "{} done, {} failed by the lab ({} in a row), last good {}",
                        m.slots_done,
                        m.slots_lab_failed,
                        m.failing,
                        when(&m.last_good)
                    ),
                ]
            })
            .collect();
        body += &html::table(
            "machines",
            &[
                "machine",
                "role",
                "labels",
                "load generator",
                "state",
                "epoch",
                "since",
                "last heartbeat",
                "expires",
                "health",
                "record",
            ],
            &rows,
        );
    }
    body
}

fn workers(workers: &[fleet::WorkerRow]) -> String {
    let mut body = String::from("<h2>Workers</h2>");
    if workers.is_empty() {
        body += "<p>No worker seen in the last 24 hours: start one with <code>kreg worker</code>.</p>";
    } else {
        let rows: Vec<Vec<String>> = workers
            .iter()
            .map(|w| {
                vec![
                    w.id.to_string(),
                    esc(&w.name),
                    html::time(&w.started_at),
                    match &w.stopped_at {
                        Some(t) => format!("stopped {}", html::time(t)),
                        None if w.gone => format!("gone: silent {:.0} s without stopping", w.silent_secs),
                        None => format!("{:.0} s ago", w.silent_secs),
                    },
                    w.holding.to_string(),
                ]
            })
            .collect();
        body += &html::table(
            "workers",
            &["worker", "name", "started", "last heartbeat", "slots held"],
            &rows,
        );
    }
    body
}
