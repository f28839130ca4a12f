//! Faults around the agent's data folder: the agent killed and the SSH connection dropped
//! while a large tool is being uploaded, and the data folder (a small tmpfs) full during
//! an upload and during a job.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::common::sshd::SshMachine;
use super::common::{fresh_db, Scratch, TOKEN};
use super::{account, finish, knob, kreg, outcome, shorten, Case, LoopAgent, Row};

/// The size of the tool uploaded while a fault strikes.
const BIG_MIB: u64 = 256;
/// How far an upload has come when it is cut.
const CUT_AT: u64 = 16 << 20;

/// A tool of `mib` MiB (sparse here: its zeros take no disk on the controller) and the
/// `tools:` section that uploads it to `host` and installs it into `dir/installed`.
fn big_tool(dir: &Path, mib: u64, host: &str) -> String {
    let f = dir.join("big.bin");
    std::fs::File::create(&f).unwrap().set_len(mib << 20).unwrap();
    let into = dir.join("installed");
    std::fs::create_dir_all(&into).unwrap();
    format!(
        "tools:\n  - {{ name: big, on: [{host}], from: {{ upload: \"{}\" }}, install_dir: \"{}\" }}\n",
        f.display(),
        into.display()
    )
}

/// The size of the installed tool, when it is there.
fn installed(dir: &Path) -> Option<u64> {
    std::fs::metadata(dir.join("installed/big")).ok().map(|m| m.len())
}

/// The upload temp files in `data`.
fn temps(data: &Path) -> Vec<String> {
    std::fs::read_dir(data)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".upload-"))
        .collect()
}

/// The bytes of all files directly in `data`, the agent's own (its id, its fence) aside.
fn used(data: &Path) -> u64 {
    std::fs::read_dir(data)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !matches!(e.file_name().to_str(), Some("agent-id" | "epoch")))
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Waits (at most `limit`) until an upload's temp file in `data` holds `at` bytes or more.
fn upload_reaches(data: &Path, at: u64, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for e in std::fs::read_dir(data).into_iter().flatten().flatten() {
            let temp = e.file_name().to_string_lossy().starts_with(".upload-");
            if temp && e.metadata().is_ok_and(|m| m.len() >= at) {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// What a cut upload must leave: no temp file, the tool installed whole.
fn check_upload(row: &mut Row, hit: bool, data: &Path, tool: &Path) {
    if !hit {
        row.checks
            .push("the fault missed the upload (no temp file grew)".into());
    }
    let left = temps(data);
    if !left.is_empty() {
        row.checks.push(format!("temp files left: {left:?}"));
    }
    let size = installed(tool);
    if size != Some(BIG_MIB << 20) {
        row.checks.push(format!(
            "the tool is installed with {size:?} bytes, not {}",
            BIG_MIB << 20
        ));
    }
}

/// The agent SIGKILLed while a 256 MiB tool is uploaded to it, and started again.
pub(super) async fn agent_killed_mid_upload() -> Row {
    let db = fresh_db("faultupload").await;
    let mut agent = LoopAgent::start();
    let tool = Scratch::new("fault-tool");
    let hosts = format!("{}{}", agent.hosts_yaml(), big_tool(&tool.0, BIG_MIB, "here"));
    let case = Case::new("upload", 11, &hosts, "0.2", 60, 1);
    let orig = knob();
    let child = kreg(&db.url, &case.dir.0.join("data"))
        .arg("run")
        .arg(case.file())
        .spawn()
        .unwrap();
    let hit = upload_reaches(&agent.data(), CUT_AT, Duration::from_secs(120));
    agent.kill();
    std::thread::sleep(Duration::from_millis(300));
    agent.restart();
    let (ok, text) = finish(child, Duration::from_secs(300));
    let mut row = Row {
        fault: format!("agent SIGKILL mid-upload ({BIG_MIB} MiB), restarted"),
        count: 1,
        ..Row::default()
    };
    account(&db.pool, &case, &orig, &mut row).await;
    check_upload(&mut row, hit, &agent.data(), &tool.0);
    row.done = ok;
    row.outcome = outcome(ok, &text, "sent again");
    row
}

/// The SSH connection killed (sshd's process for it) while a 256 MiB tool is uploaded
/// through it; sshd itself stays.
pub(super) async fn ssh_dropped_mid_upload() -> Row {
    let db = fresh_db("faultsshup").await;
    let m = SshMachine::new("fup", 6);
    let tool = Scratch::new("fault-sshtool");
    let hosts = format!(
        "hosts:\n  here: {{ role: sut, transport: {} }}\n{}",
        m.transport(""),
        big_tool(&tool.0, BIG_MIB, "here")
    );
    let case = Case::new("sshup", 12, &hosts, "0.2", 60, 1);
    let orig = knob();
    let child = kreg(&db.url, &case.dir.0.join("data"))
        .arg("run")
        .arg(case.file())
        .spawn()
        .unwrap();
    let data = m.path("/var/lib/kreg-agent-ssh");
    let hit = upload_reaches(&data, CUT_AT, Duration::from_secs(180));
    let dropped = m.drop_connections();
    let (ok, text) = finish(child, Duration::from_secs(300));
    let mut row = Row {
        fault: format!("SSH connection dropped mid-upload ({BIG_MIB} MiB)"),
        count: dropped as u32,
        ..Row::default()
    };
    account(&db.pool, &case, &orig, &mut row).await;
    check_upload(&mut row, hit, &data, &tool.0);
    if dropped == 0 {
        row.checks.push("no SSH connection to drop".into());
    }
    row.done = ok;
    row.outcome = outcome(ok, &text, "sent again");
    row
}

/// A 64 MiB tool uploaded into a 32 MiB data folder: the jobs fail saying why, nothing of
/// the upload stays, the agent still answers; with room made, the same scenario runs.
pub(super) async fn data_full_during_upload() -> Row {
    let db = fresh_db("faultfull").await;
    let agent = LoopAgent::start_with(Some(32));
    let tool = Scratch::new("fault-fulltool");
    let hosts = format!("{}{}", agent.hosts_yaml(), big_tool(&tool.0, 64, "here"));
    let case = Case::new("full", 13, &hosts, "0.2", 60, 1);
    let orig = knob();
    let data = case.dir.0.join("data");
    let spawn = || kreg(&db.url, &data).arg("run").arg(case.file()).spawn().unwrap();
    let (first_ok, first) = finish(spawn(), Duration::from_secs(300));
    let mut row = Row {
        fault: "data folder full (tmpfs 32 MiB) during a 64 MiB upload".into(),
        count: 1,
        ..Row::default()
    };
    if first_ok {
        row.checks
            .push("the first run succeeded with its data folder full".into());
    }
    let failed_for_space = first.lines().filter(|l| l.contains("No space left on device")).count();
    if failed_for_space == 0 {
        row.checks.push(format!(
            "the first run did not say the folder is full: {}",
            shorten(&first)
        ));
    }
    // An upload the lab could not take is the lab's failure: the report lists the run's
    // jobs as missing measurements, not as failed jobs or results.
    let report = kreg(&db.url, &data).args(["report", "1"]).output().unwrap();
    let said = String::from_utf8_lossy(&report.stdout);
    let missing = said.contains("missing measurements (the lab failed")
        && said.contains("jobs missing, the lab failed: ")
        && said.contains("No space left on device");
    if !report.status.success() || !missing || said.contains("jobs failed") {
        row.checks.push(format!(
            "the report does not list the lab's failures as missing: {}",
            shorten(&format!("{said}{}", String::from_utf8_lossy(&report.stderr)))
        ));
    }
    let left = temps(&agent.data());
    let bytes = used(&agent.data());
    if !left.is_empty() || bytes > 0 {
        row.checks.push(format!("the cut upload left {bytes} bytes: {left:?}"));
    }
    let client = kreg_protocol::client::AgentClient::new(&format!("http://{}", agent.addr), TOKEN);
    if let Err(e) = client.identity().await {
        row.checks.push(format!("the agent does not answer: {e}"));
    }
    let grown = Command::new("mount")
        .args(["-o", "remount,size=128m"])
        .arg(agent.data())
        .output()
        .unwrap();
    assert!(grown.status.success());
    let (ok, text) = finish(spawn(), Duration::from_secs(300));
    account(&db.pool, &case, &orig, &mut row).await;
    let reasons_say_why = row.failed.iter().all(|f| f.contains("No space left on device"));
    if !reasons_say_why {
        row.checks.push(format!("failed without the reason: {:?}", row.failed));
    }
    if installed(&tool.0) != Some(64 << 20) {
        row.checks
            .push("the tool is not installed whole after room was made".into());
    }
    row.done = ok;
    row.outcome = match ok {
        true => format!(
            "{} jobs failed ({}); with room made the run done",
            row.failed.len(),
            shorten(row.failed.first().map_or("", |f| f.as_str()))
        ),
        false => format!("with room made: run not done: {}", shorten(&text)),
    };
    row
}

/// Writes zeros into `dir` until it is full: the bytes written.
fn fill(dir: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("ballast")).unwrap();
    let block = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) | Err(_) => return n,
            Ok(k) => n += k as u64,
        }
    }
}

/// The agent's data folder (a 16 MiB tmpfs) filled to the last byte while a job runs.
pub(super) async fn data_full_during_job() -> Row {
    let db = fresh_db("faultfulljob").await;
    let agent = LoopAgent::start_with(Some(16));
    let case = Case::new("fulljob", 14, &agent.hosts_yaml(), "1.5", 60, 2);
    let orig = knob();
    let child = kreg(&db.url, &case.dir.0.join("data"))
        .arg("run")
        .arg(case.file())
        .spawn()
        .unwrap();
    case.wait_attempts(1);
    let filled = fill(&agent.data());
    let (ok, text) = finish(child, Duration::from_secs(300));
    let mut row = Row {
        fault: "data folder full (tmpfs 16 MiB) during a job".into(),
        count: 1,
        ..Row::default()
    };
    if filled < 15 << 20 {
        row.checks.push(format!("only {filled} bytes filled the folder"));
    }
    account(&db.pool, &case, &orig, &mut row).await;
    row.done = ok;
    row.outcome = outcome(ok, &text, "");
    row
}
