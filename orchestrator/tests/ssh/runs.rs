//! Runs over SSH: the agent installed, reused and upgraded; sshd killed mid-run.

use super::*;

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
    // Once a few jobs are done, while a job's workload runs (each sleeps 0.4 s), sshd and
    // every connection it serves die; sshd comes back 3 s later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await < 4
        || m.process(&["sleep", "0.4"]).is_none()
    {
        assert!(std::time::Instant::now() < deadline, "jobs did not get done");
        assert!(
            child.try_wait().unwrap().is_none(),
            "kreg ended early: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
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
    let again = count(
        &db,
        &format!("SELECT count(*) FROM jobs WHERE run_id = {run} AND attempts > 1"),
    )
    .await;
    assert!(
        again >= 1 && said.contains("runs again"),
        "a job's workload was running when sshd died; it must have run again: {said}"
    );

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
