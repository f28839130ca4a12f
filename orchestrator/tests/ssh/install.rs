//! `kreg agent install` and `kreg agent status` over SSH.

use super::*;

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
    // The agent's manual page, as its crate ships it, on the machine.
    assert!(
        said.contains("its manual page in /usr/local/share/man/man8/kreg-agent.8"),
        "{said}"
    );
    let page = std::fs::read_to_string(m.path("/usr/local/share/man/man8/kreg-agent.8")).unwrap();
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../agent/kreg-agent.8")).unwrap();
    assert_eq!(page, shipped);
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
