//! The fleet under faults: workers in network namespaces of their own reach a PostgreSQL of
//! the test's own and agent pairs on a bridge; at seeded random times a worker is SIGKILLed
//! (and started again), SIGSTOPped past its lease (and continued), cut off from the network
//! past its lease (and let back), or PostgreSQL is restarted. At the end every job is done
//! exactly once, none stored under an epoch that had been taken over, and the agents' logs
//! hold the stale requests they refused.
//!
//! CI size by default (5 workers, 24 pairs, 12 faults); `KREG_SOAK=1` runs the full form
//! (8 workers, 40 pairs, 1,000 faults); `KREG_SOAK_FAULTS=N` and `KREG_SOAK_SEED=S` set the
//! count and the seed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kreg_testkit::Scratch;

use super::harness::{kreg_out, pool_entry, LoggedAgent, Worker};
use super::soak_env::{sh, Net, Pg, SOAK};

const LEASE: f64 = 4.0;

/// A small seeded generator (the faults' times, kinds and targets).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KINDS: [Fault; 4] = [Fault::Kill, Fault::Stop, Fault::Cut, Fault::PgRestart];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Kill,
    Stop,
    Cut,
    PgRestart,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "SIGKILL (started again)",
            Fault::Stop => "SIGSTOP past the lease",
            Fault::Cut => "network cut past the lease",
            Fault::PgRestart => "PostgreSQL restart",
        }
    }
}

/// A fault as applied: its kind, its worker and where that worker's log stood.
struct Applied {
    fault: Fault,
    worker: Option<usize>,
    log_from: usize,
    held_lease: bool,
    /// When the worker came back (continued, let back on the network, started again).
    ended: chrono::DateTime<chrono::Utc>,
}

struct Size {
    workers: usize,
    pairs: usize,
    faults: usize,
    lanes: usize,
}

fn size() -> Size {
    let full = std::env::var("KREG_SOAK").is_ok_and(|v| v == "1");
    let mut s = if full {
        Size {
            workers: 8,
            pairs: 40,
            faults: 1000,
            lanes: 6,
        }
    } else {
        Size {
            workers: 6,
            pairs: 24,
            faults: 12,
            lanes: 2,
        }
    };
    if let Some(n) = std::env::var("KREG_SOAK_FAULTS").ok().and_then(|v| v.parse().ok()) {
        s.faults = n;
    }
    s
}

/// A scenario on a pair (a SUT and a load generator; their transports come from the pool)
/// whose jobs each take about a second, with steps on the agent before and after the
/// measured command (/proc/interrupts read around it): a worker stalled in a job and taken
/// over sends the step after the command with its old epoch when it wakes up.
const SCENARIO: &str = r#"name: soak
hosts:
  sut: { role: sut, transport: { kind: lab } }
  ldg: { role: loadgen, transport: { kind: lab } }
kernels: [ { name: current, source: running } ]
variants: [ { name: default }, { name: batch, policy: batch } ]
workloads:
  - { name: w, kind: command, argv: [sh, -c, "sleep 1; echo value: 7"], metrics: { value: { regex: "value: ([0-9]+)", higher_is_better: true } } }
collect: [ interrupts ]
iterations: 8
"#;

/// Each job stored (its epoch noted in its storing transaction), with the epoch its slot
/// held at that moment: what the checks read.
const AUDIT: &str = "
CREATE TABLE soak_audit (job_id BIGINT, epoch BIGINT, slot_epoch BIGINT, at TIMESTAMPTZ DEFAULT clock_timestamp());
CREATE FUNCTION soak_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO soak_audit (job_id, epoch, slot_epoch)
  SELECT NEW.id, NEW.epoch, s.epoch FROM run_slots s WHERE s.run_id = NEW.run_id AND s.slot = NEW.slot;
  RETURN NEW;
END $$;
CREATE TRIGGER soak_audit AFTER UPDATE OF epoch ON jobs FOR EACH ROW EXECUTE FUNCTION soak_audit();
";

/// The shared state of the soak: workers (replaced when killed), which are under a fault.
struct Fleet {
    workers: Vec<Option<Worker>>,
    busy: Vec<bool>,
}

fn start_worker(url: &str, dir: &Path, i: usize, ns: &str) -> Worker {
    Worker::start(
        url,
        dir,
        &format!("w{i}"),
        Some(ns),
        &["--lease", &LEASE.to_string(), "--poll", "0.2"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_under_kills_stops_cuts_and_database_restarts_lose_nothing() {
    let size = size();
    let seed: u64 = std::env::var("KREG_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20261206);
    let started = Instant::now();
    let dir = Scratch::new("fleet-soak");
    let net = Net::new(&SOAK, size.workers);
    let pg = Arc::new(Pg::new(&dir.0.join("pg"), &SOAK));
    let url = pg.url.clone();
    // The agents: a SUT and a load generator per pair, on the bridge.
    let mut agents = Vec::new();
    let mut pool = String::from("machines:\n");
    for p in 0..size.pairs {
        let sut = LoggedAgent::start(&dir.0, &format!("sut{p}"), &format!("{}.1", SOAK.subnet), &[]);
        let ldg = LoggedAgent::start(&dir.0, &format!("ldg{p}"), &format!("{}.1", SOAK.subnet), &[]);
        pool += &pool_entry(
            &format!("sut{p:02}"),
            "sut",
            &sut,
            "cpu: soak",
            Some(&format!("ldg{p:02}")),
        );
        pool += &pool_entry(&format!("ldg{p:02}"), "loadgen", &ldg, "cpu: soak", None);
        agents.push(sut);
        agents.push(ldg);
    }
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    std::fs::write(dir.0.join("soak.yaml"), SCENARIO).unwrap();
    let cli = dir.0.join("cli");
    let (ok, out) = kreg_out(
        &url,
        &cli,
        &["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()],
    );
    assert!(ok, "{out}");
    let db = kreg::store::open(url.parse().unwrap()).await.unwrap();
    sqlx::raw_sql(AUDIT).execute(&db).await.unwrap();
    // Work for every pair: runs of 4 pairs each (6 jobs a slot), more submitted while
    // faults remain.
    // (Tried again while PostgreSQL restarts.)
    let submit = |cli: &Path| {
        let file = dir.0.join("soak.yaml");
        let mut last = String::new();
        for _ in 0..20 {
            let (ok, out) = kreg_out(&url, cli, &["submit", file.to_str().unwrap(), "--pairs", "4"]);
            if ok {
                return;
            }
            last = out;
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("kreg submit: {last}");
    };
    submit(&cli);
    let fleet = Arc::new(Mutex::new(Fleet {
        workers: (0..size.workers)
            .map(|i| Some(start_worker(&url, &dir.0, i, &net.namespaces[i])))
            .collect(),
        busy: vec![false; size.workers],
    }));
    eprintln!(
        "soak: {} workers, {} pairs ({} agents), {} faults, seed {seed}, lease {LEASE} s",
        size.workers,
        size.pairs,
        agents.len(),
        size.faults
    );
    // The faults, in lanes that each pick a worker no other lane is faulting.
    let applied: Arc<Mutex<Vec<Applied>>> = Default::default();
    let left = Arc::new(Mutex::new(size.faults));
    let pg_lock = Arc::new(Mutex::new(()));
    let turn = Arc::new(Mutex::new(0usize));
    let mut lanes = Vec::new();
    for lane in 0..size.lanes {
        let (fleet, applied, left, pg, pg_lock) = (
            fleet.clone(),
            applied.clone(),
            left.clone(),
            pg.clone(),
            pg_lock.clone(),
        );
        let turn = turn.clone();
        let (url, dir, namespaces) = (url.clone(), dir.0.clone(), net.namespaces.clone());
        let mut rng = Rng(seed ^ (lane as u64 + 1).wrapping_mul(0x9e3779b97f4a7c15));
        lanes.push(std::thread::spawn(move || {
            let db_url = url.clone();
            loop {
                {
                    let mut l = left.lock().unwrap();
                    if *l == 0 {
                        return;
                    }
                    *l -= 1;
                    if *l % 50 == 0 {
                        eprintln!("soak: {} faults left", *l);
                    }
                }
                std::thread::sleep(Duration::from_millis(500 + rng.below(2500)));
                // Every kind in turn (a shuffled order each round), so that a short soak
                // has each.
                let fault = {
                    let mut n = turn.lock().unwrap();
                    *n += 1;
                    let round = (*n - 1) / KINDS.len();
                    let mut order = KINDS;
                    let mut r = Rng(seed ^ round as u64);
                    for k in (1..order.len()).rev() {
                        order.swap(k, r.below(k as u64 + 1) as usize);
                    }
                    order[(*n - 1) % KINDS.len()]
                };
                if fault == Fault::PgRestart {
                    let _g = pg_lock.lock().unwrap();
                    pg.restart(Duration::from_millis(1500));
                    applied.lock().unwrap().push(Applied {
                        fault,
                        worker: None,
                        log_from: 0,
                        held_lease: false,
                        ended: chrono::Utc::now(),
                    });
                    continue;
                }
                // A stall hits a worker in the middle of a job's command (its next step
                // on the agent comes after it); the others, a worker holding a lease.
                let holders = match fault {
                    Fault::Stop => mid_job(&db_url),
                    _ => lease_holders(&db_url),
                };
                let (i, log_from, held) = {
                    let mut f = fleet.lock().unwrap();
                    let free: Vec<usize> = (0..f.busy.len()).filter(|i| !f.busy[*i]).collect();
                    if free.is_empty() {
                        continue;
                    }
                    let holding: Vec<usize> = free
                        .iter()
                        .copied()
                        .filter(|i| holders.contains(&format!("w{i}")))
                        .collect();
                    let pick = if holding.is_empty() { &free } else { &holding };
                    let i = pick[rng.below(pick.len() as u64) as usize];
                    f.busy[i] = true;
                    let log_from = f.workers[i].as_ref().map(|w| w.text().len()).unwrap_or(0);
                    (i, log_from, holders.contains(&format!("w{i}")))
                };
                let past_lease = Duration::from_secs_f64(LEASE + 1.5 + rng.below(1000) as f64 / 1000.0);
                match fault {
                    Fault::Kill => {
                        let old = fleet.lock().unwrap().workers[i].take();
                        if let Some(mut w) = old {
                            w.signal("KILL");
                            let _ = w.child.wait();
                        }
                        std::thread::sleep(Duration::from_millis(300));
                        let w = start_worker(&url, &dir, i, &namespaces[i]);
                        fleet.lock().unwrap().workers[i] = Some(w);
                    }
                    Fault::Stop => {
                        let f = fleet.lock().unwrap();
                        f.workers[i].as_ref().unwrap().signal("STOP");
                        drop(f);
                        std::thread::sleep(past_lease);
                        fleet.lock().unwrap().workers[i].as_ref().unwrap().signal("CONT");
                    }
                    Fault::Cut => {
                        sh("ip", &["link", "set", &SOAK.veth(i), "down"]);
                        std::thread::sleep(past_lease);
                        sh("ip", &["link", "set", &SOAK.veth(i), "up"]);
                    }
                    Fault::PgRestart => unreachable!(),
                }
                applied.lock().unwrap().push(Applied {
                    fault,
                    worker: Some(i),
                    log_from,
                    held_lease: held,
                    ended: chrono::Utc::now(),
                });
                fleet.lock().unwrap().busy[i] = false;
            }
        }));
    }
    // More work while the faults go on, so that they hit workers at work.
    while lanes.iter().any(|l| !l.is_finished()) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let open: i64 = sqlx::query_scalar("SELECT count(*) FROM run_slots WHERE state IN ('queued', 'leased')")
            .fetch_one(&db)
            .await
            .unwrap_or(i64::MAX);
        // Fewer slots than workers: a lease that expires is taken over at once.
        if open < size.workers as i64 - 2 {
            submit(&cli);
        }
    }
    for l in lanes {
        l.join().unwrap();
    }
    let faults_done = started.elapsed();
    eprintln!(
        "soak: faults done after {:.0} s; waiting for the queue to drain",
        faults_done.as_secs_f64()
    );
    let drained = super::harness::until_finished(&db, 600).await;
    let (texts, exited): (Vec<String>, Vec<String>) = {
        let mut f = fleet.lock().unwrap();
        let exited = f
            .workers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, w)| {
                let w = w.as_mut()?;
                let status = w.child.try_wait().ok().flatten()?;
                Some(format!("w{i} ({status})"))
            })
            .collect();
        let texts = f
            .workers
            .iter()
            .map(|w| w.as_ref().map(|w| w.text()).unwrap_or_default())
            .collect();
        (texts, exited)
    };
    // A worker never ends on its own (it waits for a database that is away).
    assert!(
        exited.is_empty(),
        "workers exited: {exited:?}\n{}",
        texts.join("\n---\n")
    );
    assert!(
        drained,
        "the queue did not drain; workers said:\n{}",
        texts.join("\n---\n")
    );
    let applied = std::mem::take(&mut *applied.lock().unwrap());
    let report = check(&db, &agents, &applied, &texts).await;
    eprintln!("{report}");
    eprintln!("soak: {:.0} s in all", started.elapsed().as_secs_f64());
    drop(fleet);
    drop(db);
}

/// The name of a worker whose job started within the last 0.3 s (waiting up to 5 s for one).
fn mid_job(url: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let out = Command::new("psql")
            .args([
                url,
                "-Atc",
                "SELECT w.name FROM jobs j JOIN run_slots s ON s.run_id = j.run_id AND s.slot = j.slot
                 JOIN workers w ON w.id = s.worker
                 WHERE j.state = 'running' AND j.started_at > now() - interval '0.3 s' AND s.state = 'leased'",
            ])
            .output();
        if let Ok(o) = out {
            let names: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
            if !names.is_empty() {
                return names;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Vec::new()
}

/// The names of the workers that hold a live lease now.
fn lease_holders(url: &str) -> Vec<String> {
    let out = Command::new("psql")
        .args([
            url,
            "-Atc",
            "SELECT w.name FROM workers w JOIN machines m ON m.lease_worker = w.id WHERE m.lease_expires > now()",
        ])
        .output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect(),
        Err(_) => Vec::new(),
    }
}

/// The checks, and the table of faults × outcomes.
async fn check(db: &sqlx::PgPool, agents: &[LoggedAgent], applied: &[Applied], texts: &[String]) -> String {
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(db)
        .await
        .unwrap();
    let not_done: Vec<(i64, String, Option<String>)> =
        sqlx::query_as("SELECT id, state, error FROM jobs WHERE state <> 'done' ORDER BY id LIMIT 5")
            .fetch_all(db)
            .await
            .unwrap();
    let stores: Vec<(i64, i64)> = sqlx::query_as("SELECT job_id, count(*) FROM soak_audit GROUP BY job_id")
        .fetch_all(db)
        .await
        .unwrap();
    let twice = stores.iter().filter(|(_, n)| *n > 1).count();
    let stale: i64 = sqlx::query_scalar("SELECT count(*) FROM soak_audit WHERE epoch IS DISTINCT FROM slot_epoch")
        .fetch_one(db)
        .await
        .unwrap();
    let results: i64 = sqlx::query_scalar("SELECT count(*) FROM results WHERE metric = 'value'")
        .fetch_one(db)
        .await
        .unwrap();
    let takeovers: i64 = sqlx::query_scalar("SELECT COALESCE(sum(takeovers), 0) FROM run_slots")
        .fetch_one(db)
        .await
        .unwrap();
    let failed_runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE state <> 'done'")
        .fetch_one(db)
        .await
        .unwrap();
    // The agents' refusals: each names an epoch below the one the agent keeps.
    let mut refusals: Vec<(chrono::DateTime<chrono::Utc>, u64)> = Vec::new();
    let mut refusing_agents = 0;
    for a in agents {
        let lines = a.refusals();
        refusing_agents += !lines.is_empty() as usize;
        for l in &lines {
            let stale_epoch: u64 = l
                .split("stale epoch ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|e| e.trim().parse().ok())
                .unwrap_or_else(|| panic!("a refusal without its epoch: {l}"));
            assert!(stale_epoch < a.epoch(), "{l}: the agent keeps epoch {}", a.epoch());
            let at = l.split_whitespace().next().and_then(|t| t.parse().ok());
            refusals.push((
                at.unwrap_or_else(|| panic!("a refusal without its time: {l}")),
                stale_epoch,
            ));
        }
    }
    let refused = refusals.len();
    // Each refusal goes to the worker that held its epoch (workers say each claim's epoch)
    // and to that worker's last fault before it.
    let holder: std::collections::HashMap<u64, usize> = texts
        .iter()
        .enumerate()
        .flat_map(|(w, t)| {
            t.lines().filter_map(move |l| {
                let e = l.split(" at epoch ").nth(1)?.split_whitespace().next()?.parse().ok()?;
                Some((e, w))
            })
        })
        .collect();
    let mut to_fault: BTreeMap<Fault, usize> = BTreeMap::new();
    let mut to_none = 0;
    for (at, epoch) in &refusals {
        let fault = holder.get(epoch).and_then(|w| {
            applied
                .iter()
                .filter(|a| a.worker == Some(*w) && a.ended <= *at + chrono::Duration::seconds(1))
                .max_by_key(|a| a.ended)
        });
        match fault {
            Some(a) => *to_fault.entry(a.fault).or_default() += 1,
            None => to_none += 1,
        }
    }
    // Faults × outcomes: whether the faulted worker said it lost its lease, and the stale
    // requests refused to it after.
    let mut table: BTreeMap<Fault, (usize, usize, usize, usize)> = BTreeMap::new();
    for (k, a) in applied.iter().enumerate() {
        let e = table.entry(a.fault).or_default();
        e.0 += 1;
        e.1 += a.held_lease as usize;
        e.3 = to_fault.get(&a.fault).copied().unwrap_or(0);
        if let Some(w) = a.worker {
            let until = applied[k + 1..]
                .iter()
                .find(|b| b.worker == Some(w))
                .map(|b| b.log_from)
                .unwrap_or(usize::MAX);
            let text = &texts[w];
            let part = &text[a.log_from.min(text.len())..until.min(text.len())];
            e.2 += part.contains("lost (") as usize;
        }
    }
    let mut out = String::from(
        "\nfault                          applied  to a lease holder  worker said it lost its lease  its stale requests refused after\n",
    );
    for (f, (n, held, lost, refused)) in &table {
        let lost = if *f == Fault::Kill || *f == Fault::PgRestart {
            "-".to_string()
        } else {
            lost.to_string()
        };
        out += &format!("{:<30} {n:>7}  {held:>18}  {lost:>29}  {refused:>31}\n", f.name());
    }
    let used: i64 = sqlx::query_scalar("SELECT count(DISTINCT machine) FROM jobs")
        .fetch_one(db)
        .await
        .unwrap();
    out += &format!("stale requests refused after no fault of their worker: {to_none}\npairs used: {used}\n");
    out += &format!(
        "\njobs {jobs}: not done {}, stored more than once {twice}, stored under an epoch taken over {stale}; values stored {results}; runs not done {failed_runs}\nslots taken over {takeovers}; stale requests refused by agents {refused} (on {refusing_agents} of {} agents)\n",
        jobs - stores.len() as i64,
        agents.len()
    );
    assert!(not_done.is_empty(), "jobs not done: {not_done:?}{out}");
    assert_eq!(stores.len() as i64, jobs, "every job stored{out}");
    assert_eq!(twice, 0, "jobs stored twice{out}");
    assert_eq!(stale, 0, "jobs stored under a lost lease{out}");
    assert_eq!(results, jobs, "one value per job{out}");
    assert_eq!(failed_runs, 0, "{out}");
    let stalls = table.get(&Fault::Stop).map_or(0, |t| t.1) + table.get(&Fault::Cut).map_or(0, |t| t.1);
    if stalls > 0 {
        assert!(takeovers > 0, "lease holders stalled and nothing was taken over{out}");
    }
    // Workers stalled in the middle of a job were taken over: their next step was refused.
    if table.get(&Fault::Stop).is_some_and(|t| t.1 > 0) {
        assert!(refused > 0, "no agent refused a stalled worker's step{out}");
    }
    out
}
