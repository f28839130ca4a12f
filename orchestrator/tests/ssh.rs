//! Machines reached over SSH: Debian's sshd in a network and mount namespace of its own
//! (kreg-testkit's `sshd`), kreg's SSH client (russh) checking its host key, logging in,
//! installing the agent and speaking to it through the connection.

use std::path::Path;
use std::process::Command;

use kreg::scenario::SshSpec;
use kreg::ssh::{self, hostkey::HostKeyError, SshError};

use common::sshd::{keygen, SshMachine};
use common::{agent_bin, Scratch};
use kreg_testkit as common;

fn spec(m: &SshMachine) -> SshSpec {
    SshSpec {
        address: m.addr.clone(),
        port: 22,
        user: "root".into(),
        identity: Some(m.identity.clone()),
        passphrase_file: None,
        known_hosts: Some(m.known_hosts.clone()),
        host_key: None,
        agent_port: 7878,
    }
}

fn nothing_installed(m: &SshMachine) -> bool {
    common::sshd::MOUNTED
        .iter()
        .all(|p| std::fs::read_dir(m.path(p)).unwrap().next().is_none())
}

#[tokio::test]
async fn host_keys_and_identities_are_checked_before_anything_is_sent() {
    let m = SshMachine::new("keys", 1);
    let scratch = Scratch::new("ssh-keys");
    let token = "ssh-test-token-0123456789abcdef";

    // Known: logs in, and says how the key was trusted.
    let s = ssh::Session::connect(&spec(&m)).await.expect("a known host key");
    assert_eq!(s.host_key, m.fingerprint);
    assert!(matches!(s.trust, ssh::hostkey::Trust::Known { line: 1, .. }));
    let out = s
        .run(&["uname", "-r"], None, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(out.success() && !out.stdout.is_empty());
    s.close().await;

    // Unknown: refused with the fingerprint and the line to add; nothing is uploaded.
    let empty = scratch.0.join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let mut unknown = spec(&m);
    unknown.known_hosts = Some(empty.clone());
    let e = ssh::reach(&unknown, &agent_bin(), token)
        .await
        .err()
        .expect("unknown host refused");
    assert!(e.contains("is not known") && e.contains(&m.fingerprint), "{e}");
    let host_pub = std::fs::read_to_string(m.dir.0.join("ssh_host_ed25519_key.pub")).unwrap();
    let key_b64 = host_pub.split_whitespace().nth(1).unwrap();
    let line = format!("{} ssh-ed25519 {key_b64}", m.addr);
    assert!(e.contains(&line), "the line to add: {e}");
    assert!(nothing_installed(&m), "nothing may reach an unknown host");
    // The line it printed, added, makes the host known.
    std::fs::write(&empty, format!("{line}\n")).unwrap();
    ssh::Session::connect(&unknown)
        .await
        .expect("the printed line works")
        .close()
        .await;

    // Changed: another ed25519 key listed for the address, hashed as ssh-keygen -H writes it.
    let other = keygen(&scratch.0, "other_host_key", "ed25519", "");
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let changed = scratch.0.join("changed_known_hosts");
    let w: Vec<&str> = other_pub.split_whitespace().collect();
    std::fs::write(&changed, format!("# old\n{} {} {}\n", m.addr, w[0], w[1])).unwrap();
    let hashed = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&changed)
        .output()
        .unwrap();
    assert!(hashed.status.success());
    assert!(std::fs::read_to_string(&changed).unwrap().contains("|1|"));
    let mut ch = spec(&m);
    ch.known_hosts = Some(changed);
    match ssh::Session::connect(&ch).await {
        Err(SshError::HostKey { cause, .. }) => match *cause {
            HostKeyError::Changed { line_no, .. } => assert_eq!(line_no, 2),
            other => panic!("a changed key must be refused as changed: {other}"),
        },
        Err(e) => panic!("a changed key must be refused as changed: {e}"),
        Ok(_) => panic!("a changed key must be refused"),
    }
    let e = ssh::reach(&ch, &agent_bin(), token).await.err().unwrap();
    assert!(e.contains("HAS CHANGED"), "{e}");
    assert!(nothing_installed(&m));

    // Pinned: the pin alone decides, whatever known_hosts says.
    let mut pinned = ch.clone();
    pinned.host_key = Some(m.fingerprint.clone());
    ssh::Session::connect(&pinned)
        .await
        .expect("a pinned key that matches")
        .close()
        .await;
    pinned.host_key = Some(format!("SHA256:{}", "A".repeat(43)));
    match ssh::Session::connect(&pinned).await {
        Err(SshError::HostKey { cause, .. }) if matches!(*cause, HostKeyError::PinMismatch { .. }) => {}
        other => panic!("a pin that does not match must be refused: {:?}", other.err()),
    }

    // A wrong identity: a clear authentication error.
    let stranger = keygen(&scratch.0, "stranger", "ed25519", "");
    let mut wrong = spec(&m);
    wrong.identity = Some(stranger.clone());
    let e = ssh::Session::connect(&wrong).await.err().expect("a key not authorized");
    assert!(matches!(e, SshError::Auth { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("authentication failed") && msg.contains(&stranger.display().to_string()),
        "{msg}"
    );

    // An encrypted identity: without its passphrase, said so; with it, logs in; the
    // passphrase never appears in what kreg says.
    let secret = "pass-phrase-sEcReT-4711";
    let locked = keygen(&scratch.0, "locked", "ed25519", secret);
    let mut auth = std::fs::read_to_string(m.dir.0.join("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(locked.with_extension("pub")).unwrap());
    std::fs::write(m.dir.0.join("authorized_keys"), auth).unwrap();
    let mut enc = spec(&m);
    enc.identity = Some(locked);
    let e = ssh::Session::connect(&enc)
        .await
        .err()
        .expect("no passphrase")
        .to_string();
    assert!(e.contains("encrypted") && e.contains("passphrase_file"), "{e}");
    let bad = scratch.0.join("bad.pass");
    std::fs::write(&bad, "not-it\n").unwrap();
    enc.passphrase_file = Some(bad);
    let e = ssh::Session::connect(&enc)
        .await
        .err()
        .expect("a wrong passphrase")
        .to_string();
    assert!(e.contains("passphrase_file") && !e.contains("not-it"), "{e}");
    let good = scratch.0.join("good.pass");
    std::fs::write(&good, format!("{secret}\n")).unwrap();
    enc.passphrase_file = Some(good);
    let s = ssh::Session::connect(&enc).await.expect("the right passphrase");
    s.close().await;
    assert!(nothing_installed(&m));
    assert!(!Path::new(&m.path("/etc/kreg/ssh/agent.token")).exists());
}

/// A scenario whose one host is `m`, over ssh; a command workload of `iterations` jobs
/// per variant, each taking about `secs` seconds.
fn scenario(m: &SshMachine, name: &str, iterations: u32, secs: &str) -> String {
    format!(
        r#"
name: {name}
hosts:
  box: {{ role: sut, transport: {transport} }}
kernels: [ {{ name: current, source: running }} ]
variants: [ {{ name: default, policy: normal }}, {{ name: batch, policy: batch }} ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "sleep {secs}; echo value: 100"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: {iterations}
"#,
        transport = m.transport("")
    )
}

async fn count(db: &common::TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn a_run_over_ssh_installs_the_agent_then_reuses_and_upgrades_it() {
    let db = common::fresh_db("sshrun").await;
    let m = SshMachine::new("run", 2);
    let data = Scratch::new("ssh-run-data");
    let file = data.0.join("s.yaml");
    std::fs::write(&file, scenario(&m, "over-ssh", 2, "0")).unwrap();
    // A stale temporary token of an earlier install, readable by everyone: the token
    // written now is a file of its own, private whatever was there.
    use std::os::unix::fs::PermissionsExt;
    let stale = m.path("/etc/kreg/ssh/agent.token.new");
    std::fs::create_dir_all(m.path("/etc/kreg/ssh")).unwrap();
    std::fs::write(&stale, "stale\n").unwrap();
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = common::kreg(&db, &data.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "first run over ssh");
    let said = stderr(&out);
    assert!(
        said.contains(&format!("ssh root@{}:22", m.addr)) && said.contains("installed"),
        "{said}"
    );
    assert!(
        said.contains("no systemd: started detached; after a reboot kreg starts it again"),
        "{said}"
    );
    // The agent is the controller's, checked by SHA-256; its token is private.
    let remote_bin = m.path("/usr/local/lib/kreg/ssh/kreg-agent");
    let local_sha = ssh::install::sha256_of(&agent_bin()).unwrap();
    assert_eq!(ssh::install::sha256_of(&remote_bin).unwrap(), local_sha);
    let token_path = m.path("/etc/kreg/ssh/agent.token");
    assert_eq!(
        std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let managed = std::fs::read_dir(data.0.join("ssh"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(std::fs::metadata(&managed).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(&token_path).unwrap(),
        std::fs::read_to_string(&managed).unwrap()
    );
    // The agent listens on the machine's loopback only: not reachable from here.
    assert!(std::net::TcpStream::connect_timeout(
        &format!("{}:{}", m.addr, kreg::scenario::SSH_AGENT_PORT)
            .parse()
            .unwrap(),
        std::time::Duration::from_millis(500)
    )
    .is_err());
    let run1: i64 = count(&db, "SELECT max(id) FROM runs").await;
    let done: i64 = count(
        &db,
        &format!("SELECT count(*) FROM jobs WHERE run_id = {run1} AND state = 'done'"),
    )
    .await;
    let results: i64 = count(&db, &format!("SELECT count(*) FROM results WHERE run_id = {run1}")).await;
    assert_eq!((done, results), (4, 4));
    let reached: String = sqlx::query_scalar("SELECT reached FROM hosts WHERE run_id = $1")
        .bind(run1)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(reached, format!("ssh root@{}:22 (host key {})", m.addr, m.fingerprint));
    let pid1 = m.agent_pid().expect("the agent runs");

    // The second run reuses it: the same process, and one login for the whole run (the
    // preflight's connection is the engine's).
    let logins = |log: &str| log.matches("Accepted publickey").count();
    let before = logins(&m.sshd_log());
    let out = common::kreg(&db, &data.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "second run over ssh");
    let said = stderr(&out);
    assert!(said.contains("already installed and running"), "{said}");
    assert_eq!(m.agent_pid(), Some(pid1));
    assert_eq!(logins(&m.sshd_log()) - before, 1, "one SSH login per host per run");

    // A controller with another agent build upgrades it.
    let newer = data.0.join("kreg-agent-newer");
    let mut bytes = std::fs::read(agent_bin()).unwrap();
    bytes.extend_from_slice(b"\0another build\0");
    std::fs::write(&newer, &bytes).unwrap();
    std::fs::set_permissions(&newer, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = common::kreg(&db, &data.0)
        .env("KREG_AGENT_BIN", &newer)
        .arg("run")
        .arg(&file)
        .output()
        .unwrap();
    common::assert_ok(&out, "run with another agent build");
    let said = stderr(&out);
    assert!(said.contains("upgraded from another build (sha256 "), "{said}");
    assert_eq!(
        ssh::install::sha256_of(&remote_bin).unwrap(),
        ssh::install::sha256_of(&newer).unwrap()
    );
    let pid3 = m.agent_pid().expect("the new agent runs");
    assert_ne!(pid3, pid1);
    assert!(
        !Path::new(&format!("/proc/{pid1}")).exists(),
        "the old agent was stopped"
    );
    let results: i64 = count(&db, "SELECT count(*) FROM results").await;
    assert_eq!(results, 12);
}

/// Every row of every table of the database, as text.
async fn database_text(db: &common::TestDb) -> String {
    let tables: Vec<String> = sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    let mut all = String::new();
    for t in tables {
        let rows: Vec<String> = sqlx::query_scalar(&format!("SELECT t::text FROM \"{t}\" t"))
            .fetch_all(&db.pool)
            .await
            .unwrap();
        for r in rows {
            all.push_str(&r);
            all.push('\n');
        }
    }
    all
}

/// Every file under `dir`, as text (binary files included, lossily).
fn files_text(dir: &Path) -> String {
    let mut all = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return all;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            all.push_str(&files_text(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            all.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    all
}

#[tokio::test]
async fn sshd_killed_and_restarted_mid_run_loses_and_repeats_nothing_and_no_secret_leaks() {
    let db = common::fresh_db("sshkill").await;
    let mut m = SshMachine::new("kill", 3);
    let data = Scratch::new("ssh-kill-data");
    // The identity has a passphrase, and the database URL a password: neither, nor the
    // agent's token, may appear in what kreg says, keeps or stores.
    let passphrase = "pp-Secret-Phrase-93172";
    let locked = keygen(&m.dir.0, "id_locked", "ed25519", passphrase);
    std::fs::write(
        m.dir.0.join("authorized_keys"),
        std::fs::read_to_string(locked.with_extension("pub")).unwrap(),
    )
    .unwrap();
    let pass_file = data.0.join("passphrase");
    std::fs::write(&pass_file, format!("{passphrase}\n")).unwrap();
    let db_password = "db-Pass-Word-55821";
    let url_with_password = db.url.replacen("://kreg@", &format!("://kreg:{db_password}@"), 1);
    assert_ne!(url_with_password, db.url, "the test URL names user kreg: {}", db.url);
    let text = scenario(&m, "ssh-kill", 8, "0.4").replace(
        &format!("identity: \"{}\"", m.identity.display()),
        &format!(
            "identity: \"{}\", passphrase_file: \"{}\"",
            locked.display(),
            pass_file.display()
        ),
    );
    assert!(text.contains("passphrase_file"));
    let file = data.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();

    let log = data.0.join("kreg.log");
    let mut child = common::kreg(&db, &data.0)
        .env("DATABASE_URL", &url_with_password)
        .env("KREG_LOG", "debug")
        .arg("run")
        .arg(&file)
        .stdout(std::fs::File::create(data.0.join("kreg.out")).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Once a few jobs are done, sshd and every connection it serves die (a job is in
    // flight then: each takes 0.4 s); sshd comes back 3 s later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await < 4 {
        assert!(std::time::Instant::now() < deadline, "jobs did not get done");
        assert!(
            child.try_wait().unwrap().is_none(),
            "kreg ended early: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let running = count(&db, "SELECT count(*) FROM jobs WHERE state = 'running'").await;
    m.kill_sshd();
    // The agent dies too, as in a reboot of a machine without systemd: kreg starts it
    // again when it reconnects.
    let agent_before = m.agent_pid().expect("the agent runs");
    // SAFETY: kill takes no pointers.
    unsafe { libc::kill(agent_before as i32, libc::SIGKILL) };
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    m.start_sshd();
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "kreg run: {status}\n{said}");

    // Exactly the expected results: one per job, none twice, none missing.
    let run: i64 = count(&db, "SELECT max(id) FROM runs").await;
    let jobs = count(
        &db,
        &format!("SELECT count(*) FROM jobs WHERE run_id = {run} AND state = 'done'"),
    )
    .await;
    let results = count(&db, &format!("SELECT count(*) FROM results WHERE run_id = {run}")).await;
    let distinct = count(
        &db,
        &format!("SELECT count(DISTINCT (job_id, metric)) FROM results WHERE run_id = {run}"),
    )
    .await;
    assert_eq!((jobs, results, distinct), (16, 16, 16), "{said}");
    // The connection was lost and opened again, the agent started again; a job in flight
    // ran again.
    assert!(said.contains("connected again"), "{said}");
    assert!(said.contains("started it again"), "{said}");
    let agent_after = m.agent_pid().expect("the agent runs again");
    assert_ne!(agent_after, agent_before);
    if running > 0 {
        let again = count(
            &db,
            &format!("SELECT count(*) FROM jobs WHERE run_id = {run} AND attempts > 1"),
        )
        .await;
        assert!(
            again >= 1 && said.contains("runs again"),
            "a job was in flight when sshd died; it must have run again: {said}"
        );
    }

    // No secret anywhere: kreg's output and logs, its data folder, the machine's agent
    // folder, the database.
    let token = std::fs::read_to_string(m.path("/etc/kreg/ssh/agent.token"))
        .unwrap()
        .trim()
        .to_string();
    assert!(token.len() >= 16);
    let mut everything = said.clone();
    everything.push_str(&std::fs::read_to_string(data.0.join("kreg.out")).unwrap());
    everything.push_str(&files_text(&data.0.join("runs")));
    everything.push_str(&files_text(&m.path("/var/lib/kreg-agent-ssh")));
    everything.push_str(&database_text(&db).await);
    assert!(everything.len() > 1000, "there is something to search");
    for (what, secret) in [
        ("token", token.as_str()),
        ("passphrase", passphrase),
        ("database password", db_password),
    ] {
        assert!(!everything.contains(secret), "the {what} leaked");
    }
    // It is there where it should be (the check can find it).
    assert!(files_text(&data.0.join("ssh")).contains(&token));
}

#[tokio::test]
async fn agent_install_prints_an_https_entry_that_runs_and_status_shows_the_agents() {
    let db = common::fresh_db("sshinst").await;
    let m = SshMachine::new("inst", 4);
    let data = Scratch::new("ssh-inst-data");
    let target = format!("root@{}", m.addr);
    let ssh_args = |c: &mut Command| {
        c.arg("--identity")
            .arg(&m.identity)
            .arg("--known-hosts")
            .arg(&m.known_hosts);
    };
    let mut install = common::kreg(&db, &data.0);
    install.args(["agent", "install", &target, "--name", "box"]);
    ssh_args(&mut install);
    let out = install.output().unwrap();
    common::assert_ok(&out, "kreg agent install");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("installed") && said.contains("with TLS"), "{said}");
    let entry = said
        .lines()
        .find(|l| l.trim_start().starts_with("box: "))
        .unwrap_or_else(|| panic!("no host entry in {said}"))
        .trim()
        .to_string();
    assert!(entry.contains(&format!("url: \"https://{}:7878\"", m.addr)), "{entry}");
    assert!(entry.contains("tls_fingerprint: \"sha256:"), "{entry}");
    let token_file = data.0.join("agents").join(format!("{}.token", m.addr));
    assert!(entry.contains(&token_file.display().to_string()), "{entry}");

    // The entry, pasted into a scenario, runs over HTTPS straight to the machine.
    let scenario = format!(
        "name: via-install\nhosts:\n  {entry}\nkernels: [ {{ name: current, source: running }} ]\n\
         workloads:\n  - {{ name: w, kind: command, argv: [sh, -c, \"echo value: 7\"], metrics: {{ value: {{ regex: \"value: ([0-9]+)\", higher_is_better: true }} }} }}\n\
         iterations: 2\n"
    );
    let file = data.0.join("s.yaml");
    std::fs::write(&file, scenario).unwrap();
    let out = common::kreg(&db, &data.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "run over the installed agent");
    let reached: String = sqlx::query_scalar("SELECT reached FROM hosts LIMIT 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(reached, format!("http https://{}:7878", m.addr));
    assert_eq!(count(&db, "SELECT count(*) FROM results").await, 2);

    // Installing again changes nothing; plain HTTP is only on request, and said.
    let mut again = common::kreg(&db, &data.0);
    again.args(["agent", "install", &target]);
    ssh_args(&mut again);
    let out = again.output().unwrap();
    common::assert_ok(&out, "install again");
    assert!(String::from_utf8_lossy(&out.stdout).contains("already installed and running"));

    // Status, by target and by scenario: the build, its uptime, the machine's release
    // and boot id (as the machine itself says them).
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_string();
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string();
    let mut status = common::kreg(&db, &data.0);
    status.args(["agent", "status", &target, "--scenario"]).arg(&file);
    ssh_args(&mut status);
    let out = status.output().unwrap();
    common::assert_ok(&out, "kreg agent status");
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        table.contains("this kreg's") && table.contains("running, HTTPS on port 7878"),
        "{table}"
    );
    assert!(table.contains(&release) && table.contains(&boot_id), "{table}");
    assert!(table.contains(&format!("http https://{}:7878", m.addr)), "{table}");
    assert!(!table.contains("no token"), "{table}");

    // The ssh transport on the same machine runs its own agent beside this one: neither
    // replaces the other's binary, token, port or process.
    let service_pid = m.pid_in("/var/lib/kreg-agent").expect("the installed agent runs");
    let service_token = std::fs::read_to_string(m.path("/etc/kreg/agent.token")).unwrap();
    let ssh_file = data.0.join("ssh.yaml");
    std::fs::write(&ssh_file, self::scenario(&m, "beside", 1, "0")).unwrap();
    let out = common::kreg(&db, &data.0).arg("run").arg(&ssh_file).output().unwrap();
    common::assert_ok(&out, "a run over the ssh transport beside the installed agent");
    assert_eq!(
        m.pid_in("/var/lib/kreg-agent"),
        Some(service_pid),
        "the installed agent was replaced"
    );
    assert!(
        m.agent_pid().is_some_and(|p| p != service_pid),
        "the ssh transport's agent runs"
    );
    assert_eq!(
        std::fs::read_to_string(m.path("/etc/kreg/agent.token")).unwrap(),
        service_token
    );
    assert_ne!(
        std::fs::read_to_string(m.path("/etc/kreg/ssh/agent.token")).unwrap(),
        service_token
    );
    let out = common::kreg(&db, &data.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "the installed agent still answers with its token");
    let mut status = common::kreg(&db, &data.0);
    status.args(["agent", "status", &target]);
    ssh_args(&mut status);
    let out = status.output().unwrap();
    common::assert_ok(&out, "kreg agent status, both slots");
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        table.contains("service: ") && table.contains("ssh transport: "),
        "{table}"
    );
    // A machine without an agent says so.
    let bare = SshMachine::new("bare", 5);
    let mut status = common::kreg(&db, &data.0);
    status
        .args(["agent", "status", &format!("root@{}", bare.addr), "--identity"])
        .arg(&bare.identity);
    status.arg("--known-hosts").arg(&bare.known_hosts);
    let out = status.output().unwrap();
    common::assert_ok(&out, "status of a bare machine");
    assert!(String::from_utf8_lossy(&out.stdout).contains("not installed"));
    // A file at the agent's path that is not a build kreg knows: looked at (its SHA-256),
    // never run.
    use std::os::unix::fs::PermissionsExt;
    let planted = bare.path("/usr/local/lib/kreg/kreg-agent");
    std::fs::write(
        &planted,
        "#!/bin/sh\ntouch /usr/local/lib/kreg/it-ran\necho kreg-agent 9.9\n",
    )
    .unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut status = common::kreg(&db, &data.0);
    status
        .args(["agent", "status", &format!("root@{}", bare.addr), "--identity"])
        .arg(&bare.identity)
        .arg("--known-hosts")
        .arg(&bare.known_hosts);
    let out = status.output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("another build"), "{table}");
    assert!(
        !bare.path("/usr/local/lib/kreg/it-ran").exists(),
        "kreg ran an unknown binary: {table}"
    );
    std::fs::remove_file(&planted).unwrap();
    // A host key refused (another machine's known_hosts), or a passphrase file that is no
    // file: the machine could not be asked, and the exit status says so.
    for (flag, value) in [
        ("--known-hosts", m.known_hosts.clone()),
        ("--passphrase-file", std::path::PathBuf::from("/dev/zero")),
    ] {
        let mut status = common::kreg(&db, &data.0);
        status
            .args(["agent", "status", &format!("root@{}", bare.addr), "--identity"])
            .arg(&bare.identity);
        if flag == "--known-hosts" {
            status.arg(flag).arg(&value);
        } else {
            status.arg("--known-hosts").arg(&bare.known_hosts).arg(flag).arg(&value);
        }
        let out = status.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{flag}: {table}{err}");
        assert!(err.contains("1 of 1 host(s) not reached"), "{flag}: {err}");
        let why = if flag == "--known-hosts" {
            "host key"
        } else {
            "not a regular file"
        };
        assert!(table.contains(why) || err.contains(why), "{flag}: {table}{err}");
    }
}
