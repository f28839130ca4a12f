//! The lab end to end: a qemu VM (TCG) boots Debian's 6.1 kernel, runs hackbench (with a
//! sched feature off, then under SCHED_BATCH), skips a broken kernel, kexecs
//! into Debian's 6.12 kernel, runs it again; the rows stored in PostgreSQL are checked.
//! Needs qemu-system-x86, busybox-static, rt-tests, kmod, xz-utils and the Debian package
//! archive (scripts/test.sh installs the tools; kernel packages are cached after the first
//! download).

use common::{fresh_db, kreg, Scratch};
use kreg_testkit as common;

const SCENARIO: &str = r#"
name: lab-kexec
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 2, memory_mib: 1024 } }
kernels:
  - { name: old, source: { deb: linux-image-amd64 } }
  - { name: broken, source: { path: not-a-kernel.img } }
  - { name: new, source: { deb: linux-image-6.12-amd64 } }
baseline: old
boot: { timeout: 5m }
variants:
  - { name: noqueue, features: [NO_TTWU_QUEUE] }
  - { name: batch, policy: batch }
workloads:
  - { name: hb, kind: hackbench, groups: 1, loops: 20, pipe: true, timeout: 5m }
iterations: 1
"#;

#[tokio::test]
async fn two_debian_kernels_through_kexec_into_postgres() {
    let db = fresh_db("lab").await;
    let dir = Scratch::new("lab");
    let file = dir.0.join("lab.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    std::fs::write(dir.0.join("not-a-kernel.img"), b"this is no bzImage").unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The broken kernel's jobs fail with the reason; the run goes on to the next kernel.
    assert_eq!(out.status.code(), Some(3), "kreg run\n{stdout}\n{stderr}");
    let failed: Vec<(String, String)> =
        sqlx::query_as("SELECT kernel, error FROM jobs WHERE state = 'failed' ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(failed.len(), 2, "{failed:?}");
    for (kernel, error) in &failed {
        assert_eq!(kernel, "broken");
        assert!(error.starts_with("boot failed: kernel broken: "), "{error}");
        assert!(error.contains("not-a-kernel.img is not a bzImage"), "{error}");
    }

    let rows: Vec<(String, String, String, String, f64)> = sqlx::query_as(
        "SELECT j.kernel, j.variant, r.kernel_release, r.observed_policy, r.value
         FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.metric = 'time' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (i, (kernel, variant, release, policy, time)) in rows.iter().enumerate() {
        let (want_kernel, want_prefix) = if i < 2 { ("old", "6.1.0-") } else { ("new", "6.12.") };
        assert_eq!(kernel, want_kernel);
        assert!(release.starts_with(want_prefix), "{rows:?}");
        let want_policy = if variant == "batch" { "batch" } else { "other" };
        assert_eq!(policy, want_policy, "hackbench of variant {variant} ran under {policy}");
        assert!(*time > 0.0 && *time < 300.0, "implausible hackbench time {time}");
    }

    // The VM started on 6.1 and was kexec'd into 6.1 again, so that both kernels are
    // measured on a boot reached by kexec; 6.12 came by kexec, on a new boot.
    let hosts: Vec<(String, String, String)> =
        sqlx::query_as("SELECT kernel_release, boot_method, boot_id FROM hosts WHERE name = 'sut' ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    assert_eq!(
        (hosts[0].0.as_str(), hosts[0].1.as_str()),
        (rows[0].2.as_str(), "kexec")
    );
    assert_eq!(
        (hosts[1].0.as_str(), hosts[1].1.as_str()),
        (rows[2].2.as_str(), "kexec")
    );
    assert_ne!(hosts[0].2, hosts[1].2);

    // Sched features: NO_TTWU_QUEUE during the noqueue job, TTWU_QUEUE back for the next variant.
    let features: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT j.kernel, j.variant, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id
         WHERE o.kind = 'sched_features' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(features.len(), 4);
    for (kernel, variant, text) in &features {
        let want = if variant == "noqueue" {
            "NO_TTWU_QUEUE"
        } else {
            "TTWU_QUEUE"
        };
        assert!(text.split_whitespace().any(|t| t == want), "{kernel}/{variant}: {text}");
    }

    // /proc/schedstat was captured around each job: v15 on 6.1, v16 on 6.12.
    let snaps: Vec<(String, String)> = sqlx::query_as(
        "SELECT j.kernel, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id
         WHERE o.kind = 'schedstat_after' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(snaps.len(), 4);
    for (kernel, snap) in &snaps {
        let want = if kernel == "old" {
            "version 15\n"
        } else {
            "version 16\n"
        };
        assert!(snap.starts_with(want), "{kernel}: {}", &snap[..40]);
    }

    // Scheduler statistics between the two kernels, from the stored snapshots.
    let out = kreg(&db, &dir.0)
        .args(["schedstat", "compare", "1", "old", "new/batch"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("old (2 jobs) vs new/batch (1 jobs)") && text.contains("avg wait per timeslice"),
        "{text}"
    );
    // The markdown report: a table per workload and variant, paste-ready.
    let out = kreg(&db, &dir.0)
        .args(["report", "1", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("### hb (variant noqueue)")
            && md.contains("| metric | old (base) | new | new change | new 90% CI | new verdict |")
            && md.contains("| time (s, mean, lower better) |")
            && md.contains("`hackbench -p -g 1 -l 20`")
            && md.contains("- kernel old: sut: 6.1.0-")
            && md.contains("tuning: none applied by kreg")
            && md.contains("sut: kernel.sched_schedstats 0 → 1, restored"),
        "{md}"
    );
    // The schedstat switch kreg turned on was put back on each kernel's boot.
    let restored: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM host_settings WHERE setting = 'kernel.sched_schedstats' AND before = '0' AND restored_at IS NOT NULL",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(restored, 2);
}
