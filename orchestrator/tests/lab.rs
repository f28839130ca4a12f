//! The lab end to end: a qemu VM (TCG) boots Debian's 6.1 kernel, runs hackbench, kexecs
//! into Debian's 6.12 kernel, runs it again; the rows stored in PostgreSQL are checked.
//! Needs qemu-system-x86, busybox-static, rt-tests, kmod, xz-utils and the Debian package
//! archive (scripts/test.sh installs the tools; kernel packages are cached after the first
//! download).

mod common;
use common::{fresh_db, kreg, Scratch};

const SCENARIO: &str = r#"
name: lab-kexec
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 2, memory_mib: 1024 } }
kernels:
  - { name: old, source: { deb: linux-image-amd64 } }
  - { name: new, source: { deb: linux-image-6.12-amd64 } }
baseline: old
boot: { timeout: 5m }
variants:
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
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kreg run failed\n{stdout}\n{stderr}");

    let rows: Vec<(String, String, String, f64)> = sqlx::query_as(
        "SELECT j.kernel, r.kernel_release, r.observed_policy, r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.metric = 'time' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "old");
    assert!(rows[0].1.starts_with("6.1.0-"), "{rows:?}");
    assert_eq!(rows[1].0, "new");
    assert!(rows[1].1.starts_with("6.12."), "{rows:?}");
    for r in &rows {
        assert_eq!(r.2, "batch", "hackbench ran under {}", r.2);
        assert!(
            r.3 > 0.0 && r.3 < 300.0,
            "implausible hackbench time {}",
            r.3
        );
    }

    // The VM started on 6.1; 6.12 came by kexec, on a new boot.
    let hosts: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT kernel_release, boot_method, boot_id FROM hosts WHERE name = 'sut' ORDER BY id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    assert_eq!(
        (hosts[0].0.as_str(), hosts[0].1.as_str()),
        (rows[0].1.as_str(), "start")
    );
    assert_eq!(
        (hosts[1].0.as_str(), hosts[1].1.as_str()),
        (rows[1].1.as_str(), "kexec")
    );
    assert_ne!(hosts[0].2, hosts[1].2);

    // /proc/schedstat was captured around each job: v15 on 6.1, v16 on 6.12.
    let snaps: Vec<(String, String)> = sqlx::query_as(
        "SELECT j.kernel, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id
         WHERE o.kind = 'schedstat_after' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(snaps.len(), 2);
    assert!(
        snaps[0].1.starts_with("version 15\n"),
        "{}",
        &snaps[0].1[..40]
    );
    assert!(
        snaps[1].1.starts_with("version 16\n"),
        "{}",
        &snaps[1].1[..40]
    );
}
