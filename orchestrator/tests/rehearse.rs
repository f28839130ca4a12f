//! `kreg rehearse`: a scenario file, unchanged, run on the local lab — its hosts lab
//! machines (the disk VM of tests/machine.rs, one per host, on a LAN of their own that
//! carries the scenario's server addresses), reached by the transport the file names, its
//! kernels stood in for by Debian's and booted the way the file says — ending with the
//! rehearsal's sheet. Seed 002 is rehearsed whole from its own file; scenarios with one
//! mistake each (a tool that does not install, a server port the server cannot have, a
//! metric the workload never prints) fail at that step, naming the line.

use std::path::Path;
use std::process::Command;

use common::machine::{cache_dir, golden_image};
use common::{fresh_db, Scratch, TestDb};
use kreg_testkit as common;

fn rehearse(db: &TestDb, dir: &Path, file: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let image = golden_image();
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .env("DATABASE_URL", &db.url)
        .env("KREG_DATA_DIR", dir)
        .env("KREG_CACHE_DIR", cache_dir())
        .env("KREG_AGENT_BIN", common::agent_bin())
        .env("KREG_LOG", "warn,kreg::ssh=info")
        .arg("rehearse")
        .arg(file)
        .arg("--image")
        .arg(image.parent().unwrap())
        .args(extra)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The sheet's line for `step` and `subject`.
fn sheet_line<'a>(text: &'a str, step: &str, subject: &str) -> Vec<&'a str> {
    let sheet = text.split("rehearsal sheet of").nth(1).unwrap_or("");
    sheet
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(step) && w.next() == Some(subject)
        })
        .collect()
}

/// Where `needle` first appears in `text`, as LINE:COL counted from 1.
fn place_of(text: &str, needle: &str) -> String {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not in the scenario"));
    let line = text[..at].matches('\n').count() + 1;
    let col = at - text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    format!("{line}:{col}")
}

#[tokio::test]
async fn seed002_is_rehearsed_whole_from_its_own_file() {
    let db = fresh_db("rehearse_seed002").await;
    let dir = Scratch::new("rehearse-seed002");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/seed002-hackbench-netperf.yaml");
    let scenario = std::fs::read_to_string(&file).unwrap();
    let (code, text) = rehearse(&db, &dir.0, &file, &["--format", "base-head"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("rehearsal passed"), "{text}");
    // Both kernels stood in for and booted by kexec (the ssh host's default), each its own.
    let shown = file.display().to_string();
    for (kernel, release) in [("base", "6.1."), ("head", "6.12.")] {
        let build = sheet_line(&text, "build", kernel);
        assert!(
            build.len() == 1 && build[0].contains("not rehearsable") && build[0].contains("stood in by Debian's"),
            "{build:?}\n{text}"
        );
        let boot = sheet_line(&text, "boot", kernel);
        assert!(
            boot.len() == 1
                && boot[0].contains(" done: ")
                && boot[0].contains(release)
                && boot[0].contains("booted by kexec"),
            "{boot:?}\n{text}"
        );
    }
    for tool in ["hackbench", "netperf", "netserver"] {
        let line = sheet_line(&text, "tools", tool);
        assert!(
            line.len() == 1 && line[0].contains("done: installed: "),
            "{tool}: {line:?}\n{text}"
        );
    }
    // What a VM cannot do, at the key that asks for it.
    let governor = format!("{shown}:{}: ", place_of(&scenario, "governor: performance"));
    assert!(
        text.lines()
            .any(|l| l.contains("not rehearsable") && l.contains(&governor)),
        "{governor}\n{text}"
    );
    for w in ["hackbench-g1", "hackbench-g16-deep", "udp-rr-25", "udp-rr-100-quota50"] {
        let line = sheet_line(&text, "workload", w);
        assert!(
            line.len() == 1 && line[0].contains("done: 2 of 2 job(s) done"),
            "{w}: {line:?}\n{text}"
        );
        assert_eq!(sheet_line(&text, "parse", w).len(), 1, "{w}\n{text}");
    }
    assert_eq!(sheet_line(&text, "server", "udp-rr-50").len(), 1, "{text}");
    assert!(!sheet_line(&text, "report", "base-head").is_empty(), "{text}");

    // The database: every job done, the netperf transactions counted over the LAN, the
    // quota throttling the hackbench under it, the two kernels' releases.
    let done: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE run_id = 1 AND state = 'done'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(done, 20);
    let rr: Vec<(String, f64)> = sqlx::query_as(
        "SELECT j.workload, r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE j.workload LIKE 'udp-rr-%' AND r.metric = 'transactions_per_s'",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rr.len(), 10, "{rr:?}");
    assert!(rr.iter().all(|(_, v)| *v > 0.0), "{rr:?}");
    let throttled: Vec<f64> = sqlx::query_scalar(
        "SELECT r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE j.workload = 'hackbench-g16-quota50' AND r.metric = 'cg_nr_throttled'",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert!(
        throttled.len() == 2 && throttled.iter().all(|t| *t > 0.0),
        "{throttled:?}"
    );
    let releases: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT kernel_release FROM jobs WHERE run_id = 1 ORDER BY 1")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(releases.len(), 2, "{releases:?}");
    // The SUT over SSH, as the file names it: kreg's own agent installed through sshd, each
    // kernel kexec'd into, a new connection after each boot and the agent started again
    // over it (the machine has no systemd), the host key checked every time.
    let boots: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT kernel_release, boot_id, reached FROM hosts WHERE run_id = 1 AND name = 'sut' AND boot_method = 'kexec' ORDER BY id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(boots.len(), 2, "{boots:?}");
    assert!(boots[0].0 != boots[1].0 && boots[0].1 != boots[1].1, "{boots:?}");
    for b in &boots {
        assert!(
            b.2.starts_with("ssh root@127.0.0.1:") && b.2.contains(" (host key SHA256:"),
            "{}",
            b.2
        );
    }
    assert!(
        text.contains("agent kreg-agent") && text.contains("installed"),
        "{text}"
    );
    assert!(text.matches("ssh: connected again").count() >= 2, "{text}");
    assert!(text.matches("started it again").count() >= 2, "{text}");
}

#[tokio::test]
async fn a_mistake_fails_its_rehearsal_at_its_step_naming_the_line() {
    let db = fresh_db("rehearse_mistakes").await;
    let dir = Scratch::new("rehearse-mistakes");

    // A tool that does not install: the rehearsal stops at the tools step.
    let tool = r#"name: tool-mistake
hosts:
  sut: { role: sut, transport: { kind: http, url: "http://sut1:7878", token_file: sut.token, insecure: true } }
kernels:
  - { name: own, source: running }
tools:
  - { name: hb, on: [sut], from: { apt: rt-tests } }
  - { name: nope, on: [sut], from: { apt: kreg-no-such-package } }
workloads:
  - { name: hb, kind: hackbench, groups: 1, loops: 10 }
"#;
    let file = dir.0.join("tool-mistake.yaml");
    std::fs::write(&file, tool).unwrap();
    std::fs::write(dir.0.join("sut.token"), "the-real-machines-token-0123456789").unwrap();
    let (code, text) = rehearse(&db, &dir.0, &file, &[]);
    assert_eq!(code, Some(3), "{text}");
    let line = sheet_line(&text, "tools", "nope");
    let at = format!(
        "{}:{}: tool nope on sut: ",
        file.display(),
        place_of(tool, "{ name: nope")
    );
    assert!(
        line.len() == 1 && line[0].contains("FAILED: ") && line[0].contains(&at),
        "{at}\n{line:?}\n{text}"
    );
    assert!(line[0].contains("kreg-no-such-package"), "{line:?}");
    assert!(text.contains("rehearsal FAILED at 1 step(s)"), "{text}");
    // Its stored scenario names the real hosts: it is never resumed, it is rehearsed again.
    let resumed = common::kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    let said = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        !resumed.status.success() && said.contains("run 1 is a rehearsal"),
        "{said}"
    );
    let (kind, state): (String, String) = sqlx::query_as("SELECT kind, state FROM runs WHERE id = 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(kind == "rehearsal" && state != "running", "{kind} {state}");

    // A server port the server cannot have (sshd holds 22 on the SUT) and a metric the
    // workload never prints: each fails at its own step, the rest of the run goes on.
    let two = r#"name: server-and-metric-mistakes
hosts:
  sut: { role: sut, transport: { kind: ssh, address: sut1 } }
  ldg: { role: loadgen, transport: { kind: http, url: "http://ldg1:7878", token_file: ldg.token, insecure: true } }
kernels:
  - { name: own, source: running }
tools:
  - { name: hackbench, on: [sut], from: { apt: rt-tests } }
  - { name: netperf, on: [ldg], from: { apt: netperf } }
  - { name: netserver, on: [sut], from: { apt: netperf } }
workloads:
  - name: rr-good
    kind: netperf
    on: ldg
    test: TCP_RR
    duration: 3
    server: { on: sut, address: 198.51.100.7 }
  - name: rr-port
    kind: netperf
    on: ldg
    test: TCP_RR
    duration: 3
    server: { on: sut, address: 198.51.100.7, port: 22 }
  - name: ops
    kind: command
    argv: [hackbench, -g, "1", -l, "10"]
    metrics:
      time: { regex: "Time: ([0-9.]+)", higher_is_better: false }
      ops: { regex: "Ops: ([0-9]+)", higher_is_better: true }
"#;
    let file = dir.0.join("two-mistakes.yaml");
    std::fs::write(&file, two).unwrap();
    std::fs::write(dir.0.join("ldg.token"), "the-real-machines-token-0123456789").unwrap();
    let (code, text) = rehearse(&db, &dir.0, &file, &[]);
    assert_eq!(code, Some(3), "{text}");
    let server = sheet_line(&text, "server", "rr-port");
    let at = format!(
        "{}:{}: workload rr-port, its server on sut: ",
        file.display(),
        place_of(two, "{ on: sut, address: 198.51.100.7, port: 22 }")
    );
    assert!(server.len() == 1 && server[0].contains(&at), "{at}\n{server:?}\n{text}");
    let parse = sheet_line(&text, "parse", "ops");
    let at = format!(
        "{}:{}: command: metric ops: ",
        file.display(),
        place_of(two, "{ regex: \"Ops:")
    );
    assert!(parse.len() == 1 && parse[0].contains(&at), "{at}\n{parse:?}\n{text}");
    // The good ones were done, over the LAN's address.
    let line = sheet_line(&text, "workload", "rr-good");
    assert!(line.len() == 1 && line[0].contains("done: 1 of 1"), "{line:?}\n{text}");
    assert!(text.contains("rehearsal FAILED at 2 step(s)"), "{text}");
}
