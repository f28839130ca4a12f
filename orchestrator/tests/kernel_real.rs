//! The real thing, behind `scripts/test-kernel.sh` (feature `real-kernel`): Debian's
//! linux-source-6.1 (as the bisection test's repository holds it at `good`) built with
//! tinyconfig plus a fragment that boots in the lab, kexec'd
//! into from Debian's 6.12 kernel, running hackbench counted by the perf built from the
//! same tree (`perf: tree`); its release carries kreg's LOCALVERSION. The default suite drives the same pipeline on a stand-in tree
//! (tests/kernel_build.rs).

use std::time::Instant;

use common::linux::{bisect_repo, fragment_yaml, TARBALL};
use common::{fresh_db, kreg, Scratch};
use kreg_testkit as common;

#[tokio::test]
async fn linux_source_6_1_tinyconfig_builds_kexecs_and_runs() {
    assert!(
        std::path::Path::new(TARBALL).exists(),
        "{TARBALL} is missing: apt-get install linux-source-6.1"
    );
    let db = fresh_db("kreal").await;
    let dir = Scratch::new("kreal");
    // The bisection test's repository at `good` (the tarball as it is) with the same config:
    // the two tests share one work tree and one build.
    let repo = bisect_repo();
    let scenario = format!(
        "name: real-kernel\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab }} }}\nkernels:\n  - {{ name: deb612, source: {{ deb: linux-image-6.12-amd64 }} }}\n  - name: tiny61\n    source: {{ git: \"{}\", ref: good }}\n    perf: tree\n    config:\n      base: tinyconfig\n      set:\n{}baseline: deb612\nboot: {{ timeout: 5m }}\nvariants: [ {{ name: batch, policy: batch }} ]\nworkloads:\n  - {{ name: hb, kind: hackbench, groups: 1, loops: 20, pipe: true, threads: true }}\ncollect: [perf_stat]\n",
        repo.path.display(),
        fragment_yaml()
    );
    let file = dir.0.join("real.yaml");
    std::fs::write(&file, scenario).unwrap();
    let started = Instant::now();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "kreg run took {:.0} s (build included unless cached)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        &stderr[stderr.len().saturating_sub(8000)..]
    );

    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT j.kernel, r.kernel_release, r.observed_policy FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.metric = 'time' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let tiny = &rows[1];
    assert!(
        tiny.1.starts_with("6.1.") && tiny.1.contains("-kreg-"),
        "release {:?} lacks kreg's LOCALVERSION",
        tiny.1
    );
    assert_eq!(tiny.2, "batch");
    let method: String = sqlx::query_scalar("SELECT boot_method FROM hosts WHERE kernel_release = $1")
        .bind(&tiny.1)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(method, "kexec");
    let snap: String = sqlx::query_scalar(
        "SELECT o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id WHERE j.kernel = 'tiny61' AND o.kind = 'schedstat_after'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(snap.starts_with("version 15\n"), "{}", &snap[..40.min(snap.len())]);
    // perf from the tree's tools/perf counted the job on its own kernel.
    let (versions, switches): (serde_json::Value, f64) = sqlx::query_as(
        "SELECT j.tool_versions, r.value FROM results r JOIN jobs j ON j.id = r.job_id WHERE j.kernel = 'tiny61' AND r.metric = 'perf_context_switches'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let perf = versions["perf@sut"].as_str().unwrap_or_default();
    assert!(
        perf.starts_with("built from the tree of kernel tiny61, sha256 "),
        "{versions}"
    );
    assert!(switches > 0.0);
}
