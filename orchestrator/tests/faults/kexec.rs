//! The agent SIGKILLed mid-kexec, on a lab VM: Debian's 6.12 entered as two kernels (their
//! command lines differ by `nosoftlockup`). The job on kernel `a` leaves a watcher in the guest,
//! outside the run (no owner mark, its own session), that kills the agent the moment a
//! kernel is loaded for kexec (`/sys/kernel/kexec_loaded` turns 1), i.e. inside the kexec
//! step into `b`, before the guest jumps (the job waits until the watcher runs: until it
//! has left the job's environment, the job's end would take it along). The guest's init starts the agent again on the
//! same boot; kreg must see that no reboot happened and kexec again.

use std::path::Path;
use std::time::Duration;

use super::common::fresh_db;
use super::{finish, kreg, shorten, Row};

const SCENARIO: &str = r#"
name: fault-kexec
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 1, memory_mib: 768 } }
kernels:
  - { name: a, source: { deb: linux-image-6.12-amd64 } }
  - { name: b, source: { deb: linux-image-6.12-amd64 }, cmdline: nosoftlockup }
boot: { timeout: 4m }
workloads:
  - name: plant
    kind: command
    argv:
      - sh
      - -c
      - |
        if ! grep -qw nosoftlockup /proc/cmdline; then
          rm -f /tmp/kreg-fault-watching
          setsid env -i /bin/busybox sh -c 'touch /tmp/kreg-fault-watching; v=0; while [ "$v" = 0 ]; do sleep 0.01; read -r v < /sys/kernel/kexec_loaded; done; kill -9 $(pidof kreg-agent)' </dev/null >/dev/null 2>&1 &
          n=0; while [ ! -e /tmp/kreg-fault-watching ] && [ $n -lt 500 ]; do sleep 0.02; n=$((n+1)); done
        fi
        echo "value: 1"
    metrics:
      value: { regex: "value: ([0-9]+)", unit: "", higher_is_better: true, kind: count }
iterations: 1
"#;

/// Every console log under `dir` (the lab keeps one per VM), joined.
fn consoles(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "console.log") {
                out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    out
}

pub(super) async fn agent_killed_mid_kexec() -> Row {
    let db = fresh_db("faultkexec").await;
    let dir = super::common::Scratch::new("fault-kexec");
    let file = dir.0.join("k.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let data = dir.0.join("data");
    let child = kreg(&db.url, &data).arg("run").arg(&file).spawn().unwrap();
    let (ok, text) = finish(child, Duration::from_secs(900));
    let mut row = Row {
        fault: "agent SIGKILL mid-kexec (lab VM), started again by init".into(),
        count: 1,
        settings_back: true,
        ..Row::default()
    };
    let jobs: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(
        "SELECT j.kernel, j.state, j.error, (SELECT count(*) FROM results r WHERE r.job_id = j.id) FROM jobs j ORDER BY j.id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    row.jobs = jobs.len();
    for (kernel, state, error, results) in &jobs {
        match (state.as_str(), results) {
            ("done", 1) => {}
            ("done", n) if *n > 1 => row.duplicated += 1,
            // A kexec that kreg can recover from may not cost the kernel its jobs.
            ("failed", _) => row.checks.push(format!(
                "kernel {kernel}'s job failed: {}",
                shorten(error.as_deref().unwrap_or(""))
            )),
            _ => row.lost += 1,
        }
    }
    let methods: Vec<(String, String)> = sqlx::query_as(
        "SELECT j.kernel, h.boot_method FROM jobs j JOIN hosts h ON h.run_id = j.run_id AND h.boot_id = j.boot_id ORDER BY j.id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    if methods.iter().any(|(_, m)| m != "kexec") || methods.len() != 2 {
        row.checks.push(format!("each kernel is reached by kexec: {methods:?}"));
    }
    let console = consoles(&data);
    let killed = console.contains("kreg-agent exited with 137");
    if !killed {
        row.checks
            .push("the agent was not killed mid-kexec (the console does not say so)".into());
    }
    if !text.contains("kexec again") {
        row.checks
            .push(format!("kreg did not say it kexecs again: {}", shorten(&text)));
    }
    let unrestored: i64 = sqlx::query_scalar("SELECT count(*) FROM host_settings WHERE restored_at IS NULL")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    row.settings_back = unrestored == 0;
    row.done = ok;
    row.outcome = match (ok, text.lines().find(|l| l.contains("kexec again"))) {
        (true, Some(l)) => format!("run done; said: {}", shorten(l.trim())),
        (true, None) => "run done".into(),
        (false, _) => format!("run not done: {}", shorten(&text)),
    };
    row
}
