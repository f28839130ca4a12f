//! Shared by the controller's integration tests (a crate of its own, built once for all of
//! them): a fresh database per test on the PostgreSQL named by DATABASE_URL
//! (scripts/test.sh starts one), real kreg-agent processes on loopback ports, `kreg` with a
//! test's database, and the helpers in the modules below.

pub mod history;
pub mod linux;
pub mod machine;
pub mod netns;
pub mod sshd;
pub mod standin;
pub mod stored;
pub mod web;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, PgPool};

pub const TOKEN: &str = "integration-token-0123456789";

/// A unique scratch folder, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "kreg-it-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A database of its own for one test: its URL (for `kreg` subprocesses) and a pool.
pub struct TestDb {
    pub url: String,
    pub pool: PgPool,
}

pub async fn fresh_db(name: &str) -> TestDb {
    let base = std::env::var("DATABASE_URL").expect(
        "DATABASE_URL must name a PostgreSQL server the tests may create databases on (scripts/test.sh sets it)",
    );
    // Tests of one binary share a process: a counter keeps their databases apart.
    static N: AtomicU32 = AtomicU32::new(0);
    let db = format!(
        "kreg_it_{name}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let mut admin = PgConnectOptions::from_str(&base)
        .unwrap()
        .connect()
        .await
        .expect("connect to DATABASE_URL");
    sqlx::query(&format!("DROP DATABASE IF EXISTS {db}"))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE DATABASE {db}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h.to_string(), format!("?{q}")),
        None => (base.clone(), String::new()),
    };
    let (server, _) = head.rsplit_once('/').expect("DATABASE_URL has a database name");
    let url = format!("{server}/{db}{query}");
    let pool = kreg::store::open(PgConnectOptions::from_str(&url).unwrap())
        .await
        .unwrap();
    TestDb { url, pool }
}

/// The kreg-agent binary built beside the test (target/debug/kreg-agent).
pub fn agent_bin() -> PathBuf {
    built("kreg-agent")
}

/// The `kreg` binary the tests run (cargo builds it for the package's integration tests).
pub fn kreg_bin() -> PathBuf {
    built("kreg")
}

/// `kreg db WHAT` on a private cluster kept in `pgdata` (`url` starts it and prints its
/// URL; `stop` stops it): its stdout. For tests that stop PostgreSQL under a run, which
/// must not disturb the other tests' server.
pub fn private_db(pgdata: &Path, what: &str) -> String {
    let out = Command::new(kreg_bin())
        .args(["db", what])
        .env("KREG_DATA_DIR", pgdata)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kreg db {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A binary of the workspace beside the running test's (`target/debug/deps/..`).
fn built(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --workspace --bins` first",
        p.display()
    );
    p
}

/// Starts a kreg-agent command line (listening on port 0) and reads the address it bound
/// from its first line: the process and its URL.
pub fn spawn_agent(mut cmd: Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("kreg-agent listening on ")
        .unwrap_or_else(|| panic!("agent said {line:?}"));
    let url = format!("http://{addr}");
    (child, url)
}

/// Starts a kreg-agent command line with `--tls` (listening on port 0): the process,
/// its https URL and its certificate's fingerprint, from its first two lines.
pub fn spawn_tls_agent(mut cmd: Command) -> (Child, String, String) {
    let mut child = cmd
        .arg("--tls")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("kreg-agent listening on ")
        .unwrap_or_else(|| panic!("agent said {first:?}"))
        .to_string();
    let second = lines.next().unwrap().unwrap();
    let fp = second
        .strip_prefix("kreg-agent TLS certificate ")
        .unwrap_or_else(|| panic!("agent said {second:?}"))
        .to_string();
    (child, format!("https://{addr}"), fp)
}

/// Panics with the command's output unless it succeeded.
pub fn assert_ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real kreg-agent process on 127.0.0.1 with a fresh port, killed on drop.
pub struct Agent {
    child: Child,
    pub url: String,
    pub token_file: PathBuf,
    _dir: Scratch,
}

impl Agent {
    pub fn start() -> Agent {
        let dir = Scratch::new("agent");
        let token_file = dir.0.join("token");
        std::fs::write(&token_file, TOKEN).unwrap();
        let mut cmd = Command::new(agent_bin());
        cmd.args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .arg("--data-dir")
            .arg(dir.0.join("data"));
        let (child, url) = spawn_agent(cmd);
        Agent {
            child,
            url,
            token_file,
            _dir: dir,
        }
    }
}

impl Agent {
    /// The `hosts:` section of a scenario whose one host, `here`, is this agent (the SUT).
    pub fn hosts_yaml(&self) -> String {
        format!(
            "hosts:\n  here: {{ role: sut, transport: {{ kind: http, url: \"{}\", token_file: \"{}\" }} }}\n",
            self.url,
            self.token_file.display()
        )
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kreg` with the test's database and a private data dir.
pub fn kreg(db: &TestDb, data_dir: &Path) -> Command {
    let mut c = Command::new(kreg_bin());
    c.env("DATABASE_URL", &db.url)
        .env("KREG_DATA_DIR", data_dir)
        .env("KREG_AGENT_BIN", agent_bin());
    c
}

/// `kreg run FILE`: whether it succeeded, and its stdout and stderr together.
pub fn kreg_run(db: &TestDb, data_dir: &Path, file: &Path) -> (bool, String) {
    let out = kreg(db, data_dir).arg("run").arg(file).output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs git in `dir` with a fixed identity; returns its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_env(dir, args, &[])
}

/// [`git`] with `env` added (an identity and dates of the caller's own make a repository's
/// hashes the same on every machine).
pub fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=kreg", "-c", "user.email=kreg@localhost"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Waits until `sql` (a count) reaches `at_least`, then kills `child` (SIGKILL, no
/// warning). Fails if the child ends first or two minutes pass (`what` says waiting for
/// what).
pub async fn kill_when(db: &TestDb, child: &mut Child, sql: &str, at_least: i64, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let n: i64 = sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap_or(0);
        if n >= at_least {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: not in time");
        assert!(
            child.try_wait().unwrap().is_none(),
            "{what}: kreg ended before it could be killed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Pids whose command line holds `tag`.
pub fn tagged(tag: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(tag))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Waits until no process holds `tag` in its command line (at most `limit`): those left.
pub fn gone_within(tag: &str, limit: std::time::Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = tagged(tag);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The HammerDB tarball of `version` ("4.12", "4.4").
pub fn hammerdb_tarball(version: &str) -> PathBuf {
    let name = format!("HammerDB-{version}.tar.gz");
    if let Ok(given) = std::env::var("KREG_TEST_HAMMERDB") {
        let p = PathBuf::from(given);
        if p.file_name().and_then(|n| n.to_str()) == Some(name.as_str()) || p.is_dir() {
            let p = if p.is_dir() { p.join(&name) } else { p };
            assert!(p.exists(), "KREG_TEST_HAMMERDB: {} does not exist", p.display());
            return p;
        }
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../orchestrator");
    let candidates = [
        here.join("../../shared/third_party").join(&name),
        PathBuf::from("/work/shared/third_party").join(&name),
    ];
    candidates.iter().find(|p| p.exists()).cloned().unwrap_or_else(|| {
        panic!(
            "HammerDB {version}: no tarball (set KREG_TEST_HAMMERDB to it or its folder; looked in {:?})",
            candidates
        )
    })
}
