//! Faults in the middle of real work, each checked for exact results: no job lost, none
//! stored twice, none stored from a contaminated attempt (an attempt that overlapped an
//! earlier one's processes, or measured under another variant's settings), the run
//! finishing (or failing a job with its reason), the setting a variant changed put back and
//! no process of the run left. The faults:
//!
//! - the controller SIGKILLed at seeded random points of runs and resumed each time
//!   (`KREG_FAULT_SEED` picks the seed; 20 kills, `KREG_SOAK=1` 200), and at the one point
//!   they reach only now and then, set up exactly: after a run's last job was stored;
//! - the agent SIGKILLed mid-step and started again on its port, as systemd would;
//! - the network to the agent cut mid-job (its link down in the test's network
//!   namespace) for 30 s, and for longer than the job's timeout;
//! - PostgreSQL stopped mid-job and started again, under `kreg run`, under a fleet worker
//!   driving a slot, and under `kreg bisect` measuring a boot (in the lab, on the stand-in
//!   tree).
//!
//! Every job is a shell script on a real kreg-agent: it notes its pid and start time, checks
//! that no earlier attempt's shell still lives (same pid, same start time, not a zombie: a
//! reused pid is another process, a zombie is dead), reads the variant's sysctl, sleeps, and prints its
//! pid as its result. The table of faults and outcomes is printed before anything is
//! asserted. One test: the faults run one after another, sharing the sysctl
//! (`vm.dirty_expire_centisecs`), which no other test touches.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kreg_testkit as common;
#[path = "faults/bisection.rs"]
mod bisection;
#[path = "faults/database.rs"]
mod database;
#[path = "faults/kexec.rs"]
mod kexec;
#[path = "faults/last_job.rs"]
mod last_job;
#[path = "faults/upload.rs"]
mod upload;
use common::netns::{agent_in, Net};
use common::{agent_bin, fresh_db, gone_within, Scratch, TOKEN};

const KNOB: &str = "/proc/sys/vm/dirty_expire_centisecs";

fn knob() -> String {
    std::fs::read_to_string(KNOB).unwrap().trim().to_string()
}

/// A seeded xorshift64* generator: the kill points of a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A kreg-agent on loopback that can be killed and started again on the same port and data
/// folder.
struct LoopAgent {
    child: Option<Child>,
    addr: String,
    token_file: PathBuf,
    dir: Scratch,
    /// Whether its data folder is a tmpfs of the test's (unmounted when dropped).
    tmpfs: bool,
}

impl LoopAgent {
    fn start() -> LoopAgent {
        Self::start_with(None)
    }

    /// An agent whose data folder is a tmpfs of `mib` MiB, when given.
    fn start_with(tmpfs_mib: Option<u32>) -> LoopAgent {
        let dir = Scratch::new("fault-agent");
        let token_file = dir.0.join("token");
        std::fs::write(&token_file, TOKEN).unwrap();
        let mut a = LoopAgent {
            child: None,
            addr: String::new(),
            token_file,
            dir,
            tmpfs: false,
        };
        if let Some(mib) = tmpfs_mib {
            std::fs::create_dir_all(a.data()).unwrap();
            let out = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0700"), "kreg-fault"])
                .arg(a.data())
                .output()
                .unwrap();
            assert!(out.status.success(), "mount: {}", String::from_utf8_lossy(&out.stderr));
            a.tmpfs = true;
        }
        a.addr = a.spawn("127.0.0.1:0").expect("the agent starts");
        a
    }

    fn data(&self) -> PathBuf {
        self.dir.0.join("data")
    }

    /// Starts the agent on `listen`: the address it bound, or None when it could not.
    fn spawn(&mut self, listen: &str) -> Option<String> {
        let mut child = Command::new(agent_bin())
            .args(["--listen", listen, "--token-file"])
            .arg(&self.token_file)
            .arg("--data-dir")
            .arg(self.data())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        match line.trim().strip_prefix("kreg-agent listening on ") {
            Some(addr) => {
                let addr = addr.to_string();
                self.child = Some(child);
                Some(addr)
            }
            None => {
                let _ = child.kill();
                let _ = child.wait();
                None
            }
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Started again on its port, as a service manager would (tries for 10 s while the
    /// port is still held).
    fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = self.addr.clone();
        while self.spawn(&addr).is_none() {
            assert!(Instant::now() < deadline, "the agent does not start again on {addr}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn hosts_yaml(&self) -> String {
        format!(
            "hosts:\n  here: {{ role: sut, transport: {{ kind: http, url: \"http://{}\", token_file: \"{}\" }} }}\n",
            self.addr,
            self.token_file.display()
        )
    }
}

impl Drop for LoopAgent {
    fn drop(&mut self) {
        self.kill();
        if self.tmpfs {
            let _ = Command::new("umount").arg(self.data()).output();
        }
    }
}

/// One fault's scenario folder: the job script, its logs, the scenario file.
struct Case {
    dir: Scratch,
    /// Digits in every process of the case's jobs (the shell's `$0`, the sleep's argv).
    tag: String,
    set: String,
}

impl Case {
    /// `hosts`: the scenario's `hosts:` section; each job sleeps `secs` within `timeout`.
    fn new(name: &str, n: u32, hosts: &str, secs: &str, timeout: u32, iterations: u32) -> Case {
        let dir = Scratch::new(name);
        let tag = format!("{}{:03}", std::process::id(), n);
        let set = (knob().parse::<u64>().unwrap() + 7).to_string();
        let d = dir.0.display();
        let script = format!(
            "d={d}\n\
             st() {{ read -r l < /proc/$1/stat 2>/dev/null || return 1; set -- $l; [ \"$3\" = Z ] && return 1; shift 21; echo $1; }}\n\
             touch $d/attempts.log\n\
             while read -r p s; do\n\
               if [ \"$(st $p)\" = \"$s\" ]; then echo \"$p\" >> $d/overlaps.log; fi\n\
             done < $d/attempts.log\n\
             echo \"$$ $(st $$)\" >> $d/attempts.log\n\
             echo \"begin $$\"\n\
             echo \"knob: $(cat {KNOB})\"\n\
             sleep {secs} 0.000000{tag}\n\
             echo \"value: $$\"\n\
             echo \"end $$\"\n"
        );
        std::fs::write(dir.0.join("job.sh"), script).unwrap();
        let scenario = format!(
            r#"
name: fault-{name}
{hosts}kernels: [ {{ name: current, source: running }} ]
variants:
  - {{ name: plain }}
  - {{ name: tuned, tuning: {{ sysctl: {{ vm.dirty_expire_centisecs: {set} }} }} }}
workloads:
  - name: probe
    kind: command
    argv: [sh, "{d}/job.sh", "fault-{tag}"]
    timeout: {timeout}
    metrics:
      value: {{ regex: "value: ([0-9]+)", unit: "", higher_is_better: true, kind: count }}
iterations: {iterations}
"#
        );
        std::fs::write(dir.0.join("s.yaml"), scenario).unwrap();
        Case { dir, tag, set }
    }

    fn file(&self) -> PathBuf {
        self.dir.0.join("s.yaml")
    }

    fn attempts(&self) -> usize {
        std::fs::read_to_string(self.dir.0.join("attempts.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// Waits until at least `n` attempts started; panics after two minutes.
    fn wait_attempts(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.attempts() < n {
            assert!(Instant::now() < deadline, "{n} attempts did not start in time");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `kreg` against `url`, with a data folder of its own.
fn kreg(url: &str, data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kreg"));
    c.env("DATABASE_URL", url)
        .env("KREG_DATA_DIR", data)
        .env("KREG_AGENT_BIN", agent_bin())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// What one fault left, from the database, the case's logs and the machine.
#[derive(Default)]
struct Row {
    fault: String,
    count: u32,
    jobs: usize,
    lost: usize,
    duplicated: usize,
    contaminated: Vec<String>,
    failed: Vec<String>,
    settings_back: bool,
    left: Vec<String>,
    /// What a fault of its kind must also leave (no temp file of a cut upload, …), where
    /// it did not.
    checks: Vec<String>,
    /// Whether the run (the last one, after a fault that fails jobs) ended done.
    done: bool,
    outcome: String,
}

impl Row {
    fn clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.contaminated.is_empty()
            && self.settings_back
            && self.left.is_empty()
            && self.checks.is_empty()
            && self.done
            && self.failed.iter().all(|f| !f.trim().is_empty())
    }
}

type JobLine = (i64, i64, String, String, Option<String>, i64, Option<String>);

/// Checks every job of every run in `pool` against the case's logs. `orig`: the sysctl
/// before the fault.
async fn account(pool: &sqlx::PgPool, case: &Case, orig: &str, row: &mut Row) {
    let jobs: Vec<JobLine> = sqlx::query_as(
        "SELECT j.run_id, j.id, j.variant, j.state, j.error,
                (SELECT count(*) FROM results r WHERE r.job_id = j.id AND r.metric = 'value'),
                (SELECT o.content FROM raw_outputs o WHERE o.job_id = j.id AND o.kind = 'stdout')
         FROM jobs j ORDER BY j.id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    row.jobs = jobs.len();
    for (run, id, variant, state, error, results, stdout) in jobs {
        let job = format!("run {run} job {id} ({variant})");
        match (state.as_str(), results) {
            ("done", 1) => {}
            ("done", 0) | ("pending", _) | ("running", _) => row.lost += 1,
            ("failed", 0) => row.failed.push(format!("{job}: {}", error.unwrap_or_default())),
            (_, n) if n > 1 => row.duplicated += 1,
            (s, n) => row.contaminated.push(format!("{job}: state {s} with {n} results")),
        }
        if state != "done" {
            continue;
        }
        let out = stdout.unwrap_or_default();
        let field = |key: &str| -> Vec<&str> { out.lines().filter_map(|l| l.strip_prefix(key)).collect() };
        let (begin, end, value, seen) = (field("begin "), field("end "), field("value: "), field("knob: "));
        let want = if variant == "tuned" { case.set.as_str() } else { orig };
        let whole = begin.len() == 1 && begin == end && begin == value;
        if !whole || seen != [want] {
            row.contaminated
                .push(format!("{job}: stdout {out:?}, the sysctl should read {want}"));
        }
    }
    if let Ok(o) = std::fs::read_to_string(case.dir.0.join("overlaps.log")) {
        row.contaminated.push(format!(
            "an attempt ran while an earlier one's shell lived: {}",
            o.trim()
        ));
    }
    let unrestored: i64 = sqlx::query_scalar("SELECT count(*) FROM host_settings WHERE restored_at IS NULL")
        .fetch_one(pool)
        .await
        .unwrap();
    row.settings_back = unrestored == 0 && knob() == orig;
    row.left = gone_within(&case.tag, Duration::from_secs(5));
}

/// Waits for `child` to end (at most `limit`): its status and stderr.
fn finish(child: Child, limit: Duration) -> (bool, String) {
    let deadline = Instant::now() + limit;
    let mut child = child;
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return (out.status.success(), text);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            return (
                false,
                format!(
                    "still running after {limit:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The controller SIGKILLed `kills` times at random points (0–2.5 s into each attempt),
/// each run resumed until it ends.
async fn controller_kills(kills: u32, seed: u64) -> Row {
    let db = fresh_db("faultkill").await;
    let agent = LoopAgent::start();
    let case = Case::new("kill", 1, &agent.hosts_yaml(), "0.3", 60, 4);
    let orig = knob();
    let data = case.dir.0.join("data");
    let mut rng = Rng(seed | 1);
    let mut row = Row {
        fault: format!("controller SIGKILL (seed {seed})"),
        ..Row::default()
    };
    let mut current: Option<i64> = None;
    let mut finished = 0;
    let mut failures = Vec::new();
    while row.count < kills {
        let mut cmd = kreg(&db.url, &data);
        match current {
            None => cmd.arg("run").arg(case.file()),
            Some(id) => cmd.args(["resume", &id.to_string()]),
        };
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let at = Instant::now() + Duration::from_millis(rng.below(2500));
        while Instant::now() < at && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(status) = child.try_wait().unwrap() {
            if status.success() {
                current = None;
                finished += 1;
            } else {
                failures.push(format!(
                    "kreg {} ended by itself with {status}",
                    if current.is_some() { "resume" } else { "run" }
                ));
            }
            continue;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        row.count += 1;
        current = sqlx::query_scalar("SELECT max(id) FROM runs WHERE state <> 'done'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    }
    let open: Vec<i64> = sqlx::query_scalar("SELECT id FROM runs WHERE state <> 'done' ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    for id in &open {
        let (ok, text) = finish(
            kreg(&db.url, &data).args(["resume", &id.to_string()]).spawn().unwrap(),
            Duration::from_secs(120),
        );
        if !ok {
            failures.push(format!("resume {id}: {text}"));
        }
    }
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    account(&db.pool, &case, &orig, &mut row).await;
    let unended: Vec<(i64, String)> = sqlx::query_as("SELECT id, state FROM runs WHERE state <> 'done' ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    if !unended.is_empty() {
        row.checks
            .push(format!("runs not ended done after their resume: {unended:?}"));
    }
    row.done = failures.is_empty();
    row.outcome = if failures.is_empty() {
        format!("{runs} runs done ({finished} ended between kills)")
    } else {
        failures.join("; ")
    };
    row
}

/// The agent SIGKILLed twice mid-job and started again on its port.
async fn agent_kills() -> Row {
    let db = fresh_db("faultagent").await;
    let mut agent = LoopAgent::start();
    let case = Case::new("agent", 2, &agent.hosts_yaml(), "1.5", 60, 2);
    let orig = knob();
    let data = case.dir.0.join("data");
    let child = kreg(&db.url, &data).arg("run").arg(case.file()).spawn().unwrap();
    let mut row = Row {
        fault: "agent SIGKILL mid-job, restarted".into(),
        ..Row::default()
    };
    for n in [1, 3] {
        case.wait_attempts(n);
        std::thread::sleep(Duration::from_millis(300));
        agent.kill();
        std::thread::sleep(Duration::from_millis(500));
        agent.restart();
        row.count += 1;
    }
    let (ok, text) = finish(child, Duration::from_secs(300));
    account(&db.pool, &case, &orig, &mut row).await;
    row.done = ok;
    row.outcome = outcome(ok, &text, "runs again");
    row
}

/// What the run said: done, and whether the line that shows the fault was handled is there.
fn outcome(ok: bool, text: &str, handled: &str) -> String {
    if ok && handled.is_empty() {
        return "run done".into();
    }
    let said = text.lines().find(|l| l.contains(handled)).unwrap_or("").trim();
    match (ok, said.is_empty()) {
        (true, false) => format!("run done; said: {}", shorten(said)),
        (true, true) => format!("run done, but nothing said \"{handled}\""),
        (false, _) => format!("run not done: {}", shorten(text)),
    }
}

fn shorten(s: &str) -> String {
    let s: String = s.chars().take(160).collect();
    s.replace('|', "/").replace('\n', " ")
}

/// The link to the agent's namespace down for `cut` mid-job; the job's timeout `timeout`.
async fn network_cut(n: u32, cut: Duration, timeout: u32, handled: &str) -> Row {
    let db = fresh_db(&format!("faultnet{n}")).await;
    let tag = format!("f{}{n}", std::process::id() % 10000);
    let net = Net::new(&tag, "10.237");
    let scratch = Scratch::new("fault-ns");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let agent = agent_in(&net.names[0], "10.237.1.2", &scratch.0, &token_file);
    let hosts = format!(
        "hosts:\n  here: {{ role: sut, transport: {{ kind: http, url: \"{}\", tls_fingerprint: \"{}\", token_file: \"{}\" }} }}\n",
        agent.url,
        agent.fingerprint,
        token_file.display()
    );
    let case = Case::new("net", 2 + n, &hosts, "1.5", timeout, 1);
    let orig = knob();
    let data = case.dir.0.join("data");
    let child = kreg(&db.url, &data).arg("run").arg(case.file()).spawn().unwrap();
    case.wait_attempts(1);
    let link = format!("kc{tag}s");
    let ip = |state: &str| {
        let out = Command::new("ip").args(["link", "set", &link, state]).output().unwrap();
        assert!(out.status.success(), "ip link set {link} {state}");
    };
    ip("down");
    std::thread::sleep(cut);
    ip("up");
    let (ok, text) = finish(child, Duration::from_secs(400));
    let mut row = Row {
        fault: format!("network cut {} s, job timeout {timeout} s", cut.as_secs()),
        count: 1,
        ..Row::default()
    };
    account(&db.pool, &case, &orig, &mut row).await;
    let attempts = case.attempts();
    row.done = ok;
    row.outcome = format!(
        "{}; {attempts} attempts for {} jobs",
        outcome(ok, &text, handled),
        row.jobs
    );
    drop(agent);
    drop(net);
    row
}

/// PostgreSQL stopped (fast) while the case's first and third attempts run, started again
/// 3 s later each time.
fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| fault | count | jobs | lost | duplicated | contaminated | failed (with reason) | settings back | processes left | fault's own checks | outcome |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.fault,
            r.count,
            r.jobs,
            r.lost,
            r.duplicated,
            r.contaminated.len(),
            r.failed.len(),
            if r.settings_back { "yes" } else { "NO" },
            r.left.len(),
            if r.checks.is_empty() {
                "ok".to_string()
            } else {
                format!("{} FAILED", r.checks.len())
            },
            r.outcome
        );
    }
    t
}

/// Which faults run: all by default; `KREG_FAULTS=a,b` picks some by name (to work on one).
fn wanted(name: &str) -> bool {
    match std::env::var("KREG_FAULTS") {
        Ok(list) if !list.is_empty() => list.split(',').any(|n| n.trim() == name),
        _ => true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_in_the_middle_of_real_work_lose_double_and_taint_nothing() {
    let soak = std::env::var("KREG_SOAK").is_ok_and(|v| v == "1");
    let seed = std::env::var("KREG_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6b72_6567);
    let started = Instant::now();
    let mut rows = Vec::new();
    if wanted("controller") {
        rows.push(controller_kills(if soak { 200 } else { 20 }, seed).await);
        rows.push(last_job::killed_after_the_last_job().await);
    }
    if wanted("agent") {
        rows.push(agent_kills().await);
    }
    if wanted("upload") {
        rows.push(upload::agent_killed_mid_upload().await);
    }
    if wanted("ssh") {
        rows.push(upload::ssh_dropped_mid_upload().await);
    }
    if wanted("full") {
        rows.push(upload::data_full_during_upload().await);
        rows.push(upload::data_full_during_job().await);
    }
    if wanted("kexec") {
        rows.push(kexec::agent_killed_mid_kexec().await);
    }
    if wanted("network") {
        rows.push(network_cut(1, Duration::from_secs(30), 120, "").await);
        rows.push(network_cut(2, Duration::from_secs(40), 3, "runs again").await);
    }
    if wanted("database") {
        rows.push(database::database_restart().await);
        rows.push(database::fleet_database_restart().await);
        rows.push(bisection::database_restart_mid_measurement().await);
    }
    // Straight to the test's stderr, past the harness's capture: the table is the suite's
    // report, seen in every log, passed or failed.
    let mut report = table(&rows);
    for r in rows.iter().filter(|r| !r.clean()) {
        let _ = writeln!(
            report,
            "{}: contaminated {:?}; failed {:?}; left {:?}; checks {:?}",
            r.fault, r.contaminated, r.failed, r.left, r.checks
        );
    }
    let _ = writeln!(report, "fault suite: {:.0} s", started.elapsed().as_secs_f64());
    let _ = std::io::Write::write_all(&mut std::io::stderr(), report.as_bytes());
    assert!(!rows.is_empty(), "KREG_FAULTS picked no fault");
    for r in &rows {
        assert!(
            r.clean(),
            "{}: lost {}, duplicated {}, contaminated {:?}, failed {:?}, settings back {}, left {:?}, checks {:?}, outcome {}",
            r.fault,
            r.lost,
            r.duplicated,
            r.contaminated,
            r.failed,
            r.settings_back,
            r.left,
            r.checks,
            r.outcome
        );
    }
}
