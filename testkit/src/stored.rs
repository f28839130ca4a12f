//! Runs stood in through kreg's own store functions, as the engine stores them, for the
//! dashboard's tests that decide when each job finishes: a scenario of `command` jobs with
//! one metric `m` (µs, lower is better) on kernels k0, k1 … (k0 the baseline).

use crate::TestDb;

/// Stores job `j`'s outcome (one sample of `m`) as the engine does, in one transaction,
/// which notifies the dashboard.
pub async fn finish(db: &TestDb, run: i64, j: &kreg::store::JobRow, value: f64) {
    let mut raw = kreg::record::Outputs::default();
    raw.push(kreg::record::RawKind::Stdout, format!("m={value}\n"));
    let outcome = kreg::store::JobOutcome {
        kernel_release: format!("6.1.0-{}", j.kernel),
        boot_id: format!("boot-{}-{}", j.kernel, j.boot),
        observed_policy: "SCHED_OTHER".into(),
        metrics: vec![kreg::parse::Metric {
            name: "m".into(),
            value,
            unit: "us".into(),
            higher_is_better: false,
            kind: kreg::stats::MetricKind::Mean,
        }],
        raw,
        tool_versions: Default::default(),
    };
    let mut tx = db.pool.begin().await.unwrap();
    kreg::store::start_job(&mut *tx, j.id).await.unwrap();
    kreg::store::finish_job(&mut tx, run, j.id, &outcome).await.unwrap();
    tx.commit().await.unwrap();
}

/// Records a run of `kernels` kernels with the scenario's `iterations:` as given (e.g. "2"
/// or "{ min: 2, max: 6 }") under scenario `name`; returns it and its jobs, all pending.
pub async fn record(db: &TestDb, name: &str, kernels: usize, iterations: &str) -> (i64, Vec<kreg::store::JobRow>) {
    let list: String = (0..kernels)
        .map(|k| format!("  - {{ name: k{k}, source: {{ deb: linux-image-amd64 }} }}\n"))
        .collect();
    let yaml = format!(
        "name: {name}\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab, cpus: 2, memory_mib: 1024 }} }}\n\
kernels:\n{list}baseline: k0\nworkloads:\n  - name: probe\n    kind: command\n    argv: [true]\n    timeout: 60\n    \
metrics:\n      m: {{ regex: \"m=([0-9.]+)\", unit: us, higher_is_better: false }}\niterations: {iterations}\n"
    );
    let s =
        kreg::scenario::from_str(&yaml, std::path::Path::new(".")).unwrap_or_else(|d| panic!("{}", d[0].render(name)));
    let source = format!("{name}.yaml");
    let text = kreg::store::ScenarioText {
        name: &s.name,
        yaml: &yaml,
        source_path: &source,
        files: &[],
    };
    let run = kreg::store::record_run(&db.pool, &text, kreg::plan::RunKind::of(&s), &kreg::plan::expand(&s))
        .await
        .unwrap();
    (run, kreg::store::jobs(&db.pool, run).await.unwrap())
}

/// A finished run of `kernels` kernels, every job done (job n's sample 100 + n).
pub async fn finished(db: &TestDb, kernels: usize, iterations: &str) -> i64 {
    let (run, jobs) = record(db, &format!("queries-{kernels}"), kernels, iterations).await;
    for (n, j) in jobs.iter().enumerate() {
        finish(db, run, j, 100.0 + n as f64).await;
    }
    kreg::store::set_run_state(&db.pool, run, kreg::plan::RunState::Done)
        .await
        .unwrap();
    run
}
