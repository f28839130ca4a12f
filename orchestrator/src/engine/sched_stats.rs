//! The `perf_sched_stats` collector on the SUT: `perf sched stats record`, system-wide,
//! over the measured phase. perf takes its first snapshot of /proc/schedstat before it
//! starts the command it is given, so the command here (a shell that says it started, then
//! sleeps) tells kreg the snapshot is taken; SIGINT to both ends the recording with the
//! second snapshot. `perf sched stats report` then reads the file on the SUT, and the file
//! itself comes back to be kept (xz, base64).
//!
//! perf switches `kernel.sched_schedstats` on for the recording when it is off and back at
//! its end; kreg has it on for the whole boot anyway (and puts it back after).

use super::error::HostError;
use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::ExecRequest;

/// What the recording's command prints once perf has taken its first snapshot.
pub const READY: &str = "kreg: perf sched stats record has its first snapshot";

/// The command perf starts after its first snapshot (a fixed script: no input in it).
fn marker_command() -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo '{READY}'; exec sleep 2147483647"),
    ]
}

/// `perf sched stats record -o PATH -- sh -c …`.
pub fn record_argv(path: &str) -> Vec<String> {
    let mut v: Vec<String> = ["perf", "sched", "stats", "record", "-o", path, "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(marker_command());
    v
}

/// Where the recording goes on the SUT: a name of its own per job.
pub fn data_path(tag: &str) -> String {
    format!("/tmp/kreg-perf-sched-stats-{tag}.data")
}

/// A recording under way.
#[derive(Debug, Clone)]
pub struct Recording {
    pub id: u64,
    pub path: String,
}

/// Starts the recording and waits for its first snapshot.
pub async fn start(sut: &AgentClient, path: &str) -> Result<Recording, HostError> {
    let req = ExecRequest {
        argv: record_argv(path),
        timeout_secs: 0,
        ..Default::default()
    };
    let ready = |st: &kreg_protocol::wire::ProcessState| st.stdout.contains(READY);
    let what = super::Readiness {
        what: "perf sched stats record",
        until_what: "before its first snapshot",
        secs: 30,
        late: "perf sched stats record took no first snapshot within 30 s",
    };
    match super::spawn_until_ready(sut, req, what, ready).await {
        Ok(id) => Ok(Recording {
            id,
            path: path.to_string(),
        }),
        Err(super::NotReady::Agent(e)) => Err(format!("starting perf sched stats record: {e}").into()),
        Err(super::NotReady::Said(why)) => Err(why.into()),
    }
}

/// What a recording left: perf's report, its file (xz, base64), and what it said.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub report: String,
    pub data_xz_base64: String,
    /// What perf said while recording (its last line names the file).
    pub record_stderr: String,
}

/// Ends the recording: its second snapshot. Returns what perf said.
pub async fn end(sut: &AgentClient, rec: &Recording) -> Result<String, HostError> {
    let st = sut
        .interrupt(rec.id, 10)
        .await
        .map_err(|e| format!("stopping perf sched stats record: {e}"))?;
    if !st.stderr.contains("Wrote samples") {
        let _ = sut.exec(super::command(["rm", "-f", rec.path.as_str()], 30)).await;
        return Err(format!(
            "perf sched stats record did not write its samples: {}",
            crate::failure::tail(&st.stderr, 5)
        )
        .into());
    }
    Ok(st.stderr)
}

/// After [`end`]: the report made on the SUT and the file, which is then removed there.
pub async fn fetch(sut: &AgentClient, rec: &Recording, stderr: String) -> Result<Recorded, HostError> {
    let out = finish(sut, rec, stderr).await;
    let _ = sut.exec(super::command(["rm", "-f", rec.path.as_str()], 30)).await;
    out
}

async fn finish(sut: &AgentClient, rec: &Recording, stderr: String) -> Result<Recorded, HostError> {
    let report = sut
        .exec(super::command(
            ["perf", "sched", "stats", "report", "-i", rec.path.as_str()],
            120,
        ))
        .await
        .map_err(|e| format!("perf sched stats report: {e}"))?;
    if !report.success() {
        return Err(format!(
            "perf sched stats report failed: {}",
            crate::failure::tail(&report.stderr, 5)
        )
        .into());
    }
    let data = sut
        .exec(super::command(["base64", rec.path.as_str()], 120))
        .await
        .map_err(|e| format!("reading {}: {e}", rec.path))?;
    if !data.success() {
        return Err(format!(
            "reading {} with base64 failed: {}",
            rec.path,
            crate::failure::tail(&data.stderr, 5)
        )
        .into());
    }
    let bytes = base64_decode(&data.stdout).map_err(|e| format!("{} as base64: {e}", rec.path))?;
    Ok(Recorded {
        report: report.stdout,
        data_xz_base64: compress(&bytes)?,
        record_stderr: stderr,
    })
}

/// base64 as `base64` prints it (lines of 76).
fn base64_decode(text: &str) -> Result<Vec<u8>, HostError> {
    use base64ct::Encoding;
    let joined: String = text.split_whitespace().collect();
    base64ct::Base64::decode_vec(&joined).map_err(|e| e.to_string().into())
}

/// The file, xz-compressed on the controller, as base64 text (raw outputs are text).
fn compress(bytes: &[u8]) -> Result<String, HostError> {
    use base64ct::Encoding;
    use std::io::Write;
    let mut child = std::process::Command::new("xz")
        .args(["-9", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run xz on the controller: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().map_err(|e| format!("xz: {e}"))?;
    writer
        .join()
        .map_err(|_| "xz's input writer panicked".to_string())?
        .map_err(|e| format!("xz: {e}"))?;
    if !out.status.success() {
        return Err(format!("xz failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(base64ct::Base64::encode_string(&out.stdout))
}

/// Whether the perf on the SUT has `perf sched stats` (perf 6.19 and later): its usage
/// names the subcommand. The answer says which perf, for the reason when it has not.
pub async fn supported(sut: &AgentClient) -> Result<(), HostError> {
    let perf = sut.program_path("perf");
    let r = match sut.exec(super::command([perf.as_str(), "sched", "stats", "--help"], 30)).await {
        Ok(r) => r,
        Err(e) if e.is_unreachable() => return Err(format!("{perf} sched stats --help: {e}").into()),
        Err(e) => {
            return Err(format!(
                "the collector perf_sched_stats needs `perf sched stats` (perf 6.19 or later); the SUT has no perf to run ({e}): give the kernels a perf of their own (`perf: {{ debian: linux-source-7.2 }}`)"
            ).into())
        }
    };
    let text = format!("{}{}", r.stdout, r.stderr);
    if text.contains("perf sched stats") {
        return Ok(());
    }
    let version = sut
        .exec(super::command([perf.as_str(), "version"], 30))
        .await
        .map(|v| v.stdout.trim().to_string())
        .unwrap_or_default();
    Err(format!(
        "the collector perf_sched_stats needs `perf sched stats` (perf 6.19 or later); the SUT's perf ({perf}, {}) has none: give the kernels a newer perf (`perf: {{ debian: linux-source-7.2 }}`)",
        if version.is_empty() { "version unknown" } else { &version }
    ).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_command_is_fixed_and_the_path_one_argument() {
        let argv = record_argv("/tmp/kreg-perf-sched-stats-7.data");
        assert_eq!(
            &argv[..7],
            [
                "perf",
                "sched",
                "stats",
                "record",
                "-o",
                "/tmp/kreg-perf-sched-stats-7.data",
                "--"
            ]
        );
        assert_eq!(argv[7..9], ["sh", "-c"]);
        assert!(argv[9].starts_with("echo 'kreg: perf sched stats record has its first snapshot'; exec sleep"));
    }

    #[test]
    fn base64_lines_decode_and_xz_round_trips() {
        let text = "aGVsbG8g\nd29ybGQ=\n";
        assert_eq!(base64_decode(text).unwrap(), b"hello world");
        assert!(base64_decode("not base64!").is_err());
        let packed = compress(b"hello world, hello world").unwrap();
        use base64ct::Encoding;
        let xz = base64ct::Base64::decode_vec(&packed).unwrap();
        assert_eq!(&xz[..6], b"\xfd7zXZ\x00", "an xz stream");
    }
}
