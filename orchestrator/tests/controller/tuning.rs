//! Tuning through a real kreg-agent on loopback, on this machine's own sysctls and CPU
//! latency request (the only settings a test may change here and put back: the CPUs, cpufreq and cpuidle belong to
//! the lab tests' VM): a host's setting and a variant's on top are in effect for their jobs,
//! read back into each job's record and the report, and put back at the end, also after
//! a controller killed mid-variant and resumed; a setting the machine lacks fails the
//! jobs that need it, or, marked optional, is recorded as unavailable.
//!
//! One test in this binary: it owns vm.swappiness, kernel.sched_autogroup_enabled and the
//! CPU latency requests (/dev/cpu_dma_latency, held by the agent) while it runs.

use common::{assert_ok, fresh_db, kill_when, kreg, Agent, Scratch};
use kreg_testkit as common;

const SWAPPINESS: &str = "/proc/sys/vm/swappiness";
const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";
const LATENCY: &str = "/dev/cpu_dma_latency";

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// The CPU latency the kernel honours now (a native-endian 32-bit value).
fn latency() -> i32 {
    use std::io::Read;
    let mut b = [0u8; 4];
    std::fs::File::open(LATENCY).unwrap().read_exact(&mut b).unwrap();
    i32::from_ne_bytes(b)
}

fn scenario(agent: &Agent, host_tuning: &str, variants: &str, iterations: u32) -> String {
    let hosts = agent
        .hosts_yaml()
        .replace(" } }\n", &format!(" }}, tuning: {host_tuning} }}\n"));
    format!(
        r#"
name: tuned
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: {variants}
workloads:
  - name: probe
    kind: command
    argv: [sh, -c, "sleep 0.3; echo swappiness: $(cat {SWAPPINESS}) autogroup: $(cat {AUTOGROUP}) latency: $(od -An -tu4 -N4 {LATENCY})"]
    timeout: 60
    collect: [interrupts]
    metrics:
      swappiness: {{ regex: "swappiness: ([0-9]+)", unit: "", higher_is_better: true, kind: count }}
      autogroup: {{ regex: "autogroup: ([0-9]+)", unit: "", higher_is_better: true, kind: count }}
      latency: {{ regex: "latency: *([0-9]+)", unit: us, higher_is_better: true, kind: count }}
iterations: {iterations}
"#
    )
}

/// Distinct (variant, metric, value) of the stored results.
async fn seen(db: &common::TestDb) -> Vec<(String, String, f64)> {
    sqlx::query_as(
        "SELECT DISTINCT j.variant, r.metric, r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.metric IN ('swappiness', 'autogroup', 'latency') ORDER BY 1, 2, 3",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn host_and_variant_settings_apply_are_recorded_and_put_back_even_after_a_kill() {
    let (swap0, auto0, lat0) = (read(SWAPPINESS), read(AUTOGROUP), latency());
    assert!(
        lat0 > 0,
        "something on this machine holds a CPU latency request of 0 already"
    );
    // Values no machine is likely to have already.
    let (swap, auto) = (
        if swap0 == "37" { "38" } else { "37" },
        if auto0 == "1" { "0" } else { "1" },
    );
    let db = fresh_db("tuning").await;
    let agent = Agent::start();
    let dir = Scratch::new("tuning");
    let file = dir.0.join("s.yaml");
    let text = scenario(
        &agent,
        &format!("{{ sysctl: {{ vm.swappiness: {swap} }}, governor: performance, optional: [governor] }}"),
        &format!("[ {{ name: plain }}, {{ name: nogroup, tuning: {{ sysctl: {{ kernel.sched_autogroup_enabled: {auto} }}, dma_latency: 0 }} }} ]"),
        3,
    );
    std::fs::write(&file, &text).unwrap();
    let mut child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed in the second variant: both settings are in effect, none put back.
    kill_when(
        &db,
        &mut child,
        "SELECT count(*) FROM jobs WHERE state = 'done' AND variant = 'nogroup'",
        1,
        "a job of the second variant stored",
    )
    .await;
    assert_eq!((read(SWAPPINESS).as_str(), read(AUTOGROUP).as_str()), (swap, auto));
    assert_eq!(
        latency(),
        0,
        "the agent holds its latency request while no one puts it back"
    );
    let pending: i64 =
        sqlx::query_scalar("SELECT count(*) FROM host_settings WHERE restored_at IS NULL AND item IS NOT NULL")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(pending, 3);

    let out = kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    assert_ok(&out, "resume");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{SWAPPINESS} put back to {swap0}")),
        "{stderr}"
    );
    // Put back at the end of the resumed run too.
    assert_eq!((read(SWAPPINESS), read(AUTOGROUP)), (swap0.clone(), auto0.clone()));
    assert_eq!(latency(), lat0, "the latency request withdrawn");
    let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM host_settings WHERE restored_at IS NULL")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(pending, 0);
    // Each job measured under its variant's settings.
    let (s, a): (f64, f64) = (swap.parse().unwrap(), auto.parse().unwrap());
    let a0: f64 = auto0.parse().unwrap();
    assert_eq!(
        seen(&db).await,
        [
            ("nogroup".to_string(), "autogroup".to_string(), a),
            ("nogroup".into(), "latency".into(), 0.0),
            ("nogroup".into(), "swappiness".into(), s),
            ("plain".into(), "autogroup".into(), a0),
            ("plain".into(), "latency".into(), lat0 as f64),
            ("plain".into(), "swappiness".into(), s),
        ]
    );
    // The interrupts collector: this machine's IPIs during each job, and the per-CPU table.
    let ipis: Vec<(String, i64)> = sqlx::query_as(
        "SELECT r.metric, count(*) FROM results r WHERE r.metric IN ('interrupts', 'ipi_resched', 'ipi_call') GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        ipis,
        [
            ("interrupts".to_string(), 6),
            ("ipi_call".into(), 6),
            ("ipi_resched".into(), 6)
        ]
    );
    let table: String = sqlx::query_scalar("SELECT content FROM raw_outputs WHERE kind = 'interrupts_delta' LIMIT 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(table.lines().next().unwrap().contains("CPU0"), "{table}");
    // Each job's record, read back: what was set, and the governor this machine lacks.
    let records: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT o.content FROM raw_outputs o WHERE o.kind = 'tuning' ORDER BY 1")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    let nogroup: serde_json::Value =
        serde_json::from_str(records.iter().find(|r| r.contains("autogroup")).unwrap()).unwrap();
    assert_eq!(
        nogroup["settings"],
        serde_json::json!([
            format!("sysctl.vm.swappiness={swap}"),
            format!("sysctl.kernel.sched_autogroup_enabled={auto}"),
            "dma_latency=0".to_string()
        ])
    );
    let lacks = nogroup["unavailable"][0].as_str().unwrap();
    assert!(lacks.starts_with("governor (no cpufreq on this machine"), "{lacks}");
    let report = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    assert_ok(&report, "report");
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("tuning: applied by kreg"), "{text}");
    assert!(
        text.contains(&format!("variant nogroup, here: sysctl.vm.swappiness={swap}, sysctl.kernel.sched_autogroup_enabled={auto}, dma_latency=0; online CPUs")),
        "{text}"
    );
    assert!(text.contains("unavailable: governor (no cpufreq"), "{text}");
    assert!(
        text.contains(&format!("here: sysctl.vm.swappiness {SWAPPINESS} {swap0} → {swap}")),
        "{text}"
    );

    // A required setting the machine lacks: that variant's jobs fail, saying what is
    // missing, and the other variant's run; nothing stays changed.
    let db2 = fresh_db("tuning_lacks").await;
    let text = scenario(
        &agent,
        &format!("{{ sysctl: {{ vm.swappiness: {swap} }} }}"),
        "[ { name: plain }, { name: turbo-off, tuning: { turbo: off } } ]",
        1,
    );
    std::fs::write(&file, &text).unwrap();
    let out = kreg(&db2, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let jobs: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT variant, state, error FROM jobs ORDER BY ordinal")
            .fetch_all(&db2.pool)
            .await
            .unwrap();
    assert_eq!((jobs[0].0.as_str(), jobs[0].1.as_str()), ("plain", "done"));
    assert_eq!(jobs[1].1, "failed");
    let why = jobs[1].2.as_deref().unwrap();
    assert!(
        why.starts_with("tuning on here: this machine lacks: turbo: neither /sys/devices/system/cpu/intel_pstate/no_turbo nor /sys/devices/system/cpu/cpufreq/boost"),
        "{why}"
    );
    assert_eq!((read(SWAPPINESS), read(AUTOGROUP)), (swap0.clone(), auto0.clone()));

    // The host's own tuning lacking: every job of the kernel fails, nothing changed.
    let db3 = fresh_db("tuning_host_lacks").await;
    let text = scenario(
        &agent,
        &format!("{{ sysctl: {{ vm.swappiness: {swap}, kernel.no_such_knob_here: 1 }} }}"),
        "[ { name: plain } ]",
        2,
    );
    std::fs::write(&file, &text).unwrap();
    let out = kreg(&db3, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let errors: Vec<Option<String>> = sqlx::query_scalar("SELECT error FROM jobs ORDER BY ordinal")
        .fetch_all(&db3.pool)
        .await
        .unwrap();
    assert_eq!(errors.len(), 2);
    for e in errors {
        let e = e.unwrap();
        assert!(
            e.contains("sysctl.kernel.no_such_knob_here: no /proc/sys/kernel/no_such_knob_here"),
            "{e}"
        );
    }
    assert_eq!(read(SWAPPINESS), swap0);
}
