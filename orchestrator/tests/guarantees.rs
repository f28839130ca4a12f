//! The README's security promises, tried as a hostile environment would: a proxy in the
//! environment never sees an agent request (nor its token).

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{assert_ok, fresh_db, kreg, Agent, Scratch};
use kreg_testkit as common;

/// A listener that counts the connections it gets and keeps what they sent first.
struct Trap {
    port: u16,
    hits: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Trap {
    fn start() -> Trap {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (h, s) = (hits.clone(), seen.clone());
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                h.fetch_add(1, Ordering::SeqCst);
                let mut c = c;
                let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(500)));
                let mut buf = vec![0u8; 4096];
                let n = c.read(&mut buf).unwrap_or(0);
                s.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        });
        Trap { port, hits, seen }
    }
}

#[tokio::test]
async fn agent_requests_never_go_through_a_proxy() {
    let db = fresh_db("no_proxy").await;
    let agent = Agent::start();
    let dir = Scratch::new("no-proxy");
    let trap = Trap::start();
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            "name: no-proxy\n{}kernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - {{ name: probe, kind: command, argv: [echo, 'value: 1'], metrics: {{ value: {{ regex: 'value: ([0-9.]+)', unit: '', higher_is_better: true }} }} }}\n",
            agent.hosts_yaml()
        ),
    )
    .unwrap();
    let proxy = format!("http://127.0.0.1:{}", trap.port);
    let mut cmd = kreg(&db, &dir.0);
    for var in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env(var, &proxy);
    }
    cmd.env_remove("no_proxy").env_remove("NO_PROXY");
    let out = cmd.arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg run with a proxy in the environment");
    assert_eq!(
        trap.hits.load(Ordering::SeqCst),
        0,
        "the proxy got: {:?}",
        trap.seen.lock().unwrap()
    );
}

/// A workload whose stderr holds escape sequences (clear the screen, retitle the
/// terminal, ring the bell) fails: what `kreg run`, `kreg status` and `kreg report` show
/// of it holds the sequences written out, never raw.
#[tokio::test]
async fn escape_sequences_from_a_host_never_reach_the_terminal_raw() {
    let db = fresh_db("escapes").await;
    let agent = Agent::start();
    let dir = Scratch::new("escapes");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            "name: escapes\n{}kernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - name: loud\n    kind: command\n    argv: [sh, -c, 'printf \"\\033[2J\\033]0;owned\\007\\233 boom\\n\" >&2; exit 3']\n    metrics: {{ value: {{ regex: 'value: ([0-9.]+)', unit: '', higher_is_better: true }} }}\n",
            agent.hosts_yaml()
        ),
    )
    .unwrap();
    let run = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert!(!run.status.success());
    let status = kreg(&db, &dir.0).args(["status", "1"]).output().unwrap();
    let report = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let md = kreg(&db, &dir.0)
        .args(["report", "1", "--format", "markdown"])
        .output()
        .unwrap();
    for (what, bytes) in [
        ("kreg run's stdout", &run.stdout),
        ("kreg run's stderr", &run.stderr),
        ("kreg status", &status.stdout),
        ("kreg report", &report.stdout),
        ("kreg report --format markdown", &md.stdout),
    ] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
            "{what}: {text:?}"
        );
    }
    let all = format!(
        "{}{}{}",
        String::from_utf8_lossy(&run.stderr),
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&report.stdout)
    );
    assert!(
        all.contains("\\x1b[2J\\x1b]0;owned\\x07"),
        "the sequence is shown, escaped: {all}"
    );
}

/// kreg's own cluster for a data dir under a private folder (a home of mode 0700): the
/// folder stays private. As root (PostgreSQL runs as `postgres`), the cluster lives under
/// /var/lib/kreg/postgres instead, where that user may reach it; `kreg db url` says where.
#[tokio::test]
async fn a_private_cluster_leaves_private_folders_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("private-home");
    let home = dir.0.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let data = home.join(".local/share/kreg");
    let kreg_db = |what: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
            .env_remove("DATABASE_URL")
            .env("KREG_DATA_DIR", &data)
            .args(["db", what])
            .output()
            .unwrap()
    };
    let out = kreg_db("url");
    assert_ok(&out, "kreg db url");
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        std::fs::metadata(&home).unwrap().permissions().mode() & 0o7777,
        0o700,
        "the home folder was opened"
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let host = url.split("host=").nth(1).unwrap().to_string();
    if root {
        assert!(host.starts_with("/var/lib/kreg/postgres/"), "{url}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("creating a private PostgreSQL cluster in {host}")),
            "{said}"
        );
    } else {
        assert!(host.starts_with(&data.display().to_string()), "{url}");
    }
    use sqlx::ConnectOptions;
    let mut conn = <sqlx::postgres::PgConnectOptions as std::str::FromStr>::from_str(&url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1").fetch_one(&mut conn).await.unwrap();
    assert_eq!(one, 1);
    drop(conn);
    assert_ok(&kreg_db("stop"), "kreg db stop");
    if root {
        std::fs::remove_dir_all(&host).unwrap();
    }
}

/// A secret kreg holds (here the agent's token, read from the host's token file) printed by
/// a workload, on stdout by a job that succeeds and on stderr by one that fails: masked in
/// the stored outputs, the failure's reason, what `kreg run` prints and the report.
#[tokio::test]
async fn a_secret_a_workload_prints_is_masked_wherever_kreg_keeps_or_shows_it() {
    let db = fresh_db("secrets").await;
    let agent = Agent::start();
    let dir = Scratch::new("secrets");
    let file = dir.0.join("s.yaml");
    let token = agent.token_file.display().to_string();
    std::fs::write(
        &file,
        format!(
            "name: secrets\n{}kernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - name: tells\n    kind: command\n    argv: [sh, -c, 'echo \"token: $(cat {token})\"; echo value: 1']\n    metrics: {{ value: {{ regex: 'value: ([0-9.]+)', unit: '', higher_is_better: true }} }}\n  - name: fails\n    kind: command\n    argv: [sh, -c, 'echo \"bad token $(cat {token})\" >&2; exit 3']\n    metrics: {{ value: {{ regex: 'value: ([0-9.]+)', unit: '', higher_is_better: true }} }}\n",
            agent.hosts_yaml()
        ),
    )
    .unwrap();
    let run = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert!(!run.status.success(), "the failing job fails the run");
    let report = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let raw: Vec<String> = sqlx::query_scalar("SELECT content FROM raw_outputs ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    let errors: Vec<String> = sqlx::query_scalar("SELECT error FROM jobs WHERE error IS NOT NULL")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    let stored = format!("{raw:?} {errors:?}");
    assert!(
        stored.contains("token: [secret]"),
        "the output is kept, masked: {stored}"
    );
    assert!(errors.iter().any(|e| e.contains("bad token [secret]")), "{errors:?}");
    for (what, text) in [
        ("the database", stored),
        (
            "kreg run",
            String::from_utf8_lossy(&run.stderr).into_owned() + &String::from_utf8_lossy(&run.stdout),
        ),
        ("kreg report", String::from_utf8_lossy(&report.stdout).into_owned()),
    ] {
        assert!(!text.contains(common::TOKEN), "{what} holds the token: {text}");
    }
}
