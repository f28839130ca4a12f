//! Tools on hosts: uploaded from the controller, built from a git tree, or installed from
//! the distribution; each tool's version is stored with every job that ran.

use common::{assert_ok, fresh_db, git, kreg, Agent, Scratch};
use kreg_testkit as common;

#[tokio::test]
async fn tools_are_installed_and_their_versions_stored() {
    let db = fresh_db("tools").await;
    let agent = Agent::start();
    let dir = Scratch::new("tools");
    let bin = dir.0.join("bin");
    // An uploaded tool: a script printing a number.
    std::fs::write(dir.0.join("uptool.sh"), "#!/bin/sh\necho 'value: 41'\n").unwrap();
    // A git tree whose "build" makes the tool from a source file.
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("tool.in"), "#!/bin/sh\necho 'value: 1'\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["tag", "v1"]);
    std::fs::write(repo.join("tool.in"), "#!/bin/sh\necho 'value: 2'\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);

    let text = format!(
        r#"
name: tools
{hosts}kernels: [ {{ name: current, source: running }} ]
tools:
  - {{ name: uptool, on: [here], install_dir: "{bin}", from: {{ upload: uptool.sh }} }}
  - {{ name: gittool, on: [here], install_dir: "{bin}", from: {{ git: "{repo}", ref: v1, build: [cp, tool.in, tool.out], binary: tool.out }} }}
  - {{ name: hackbench, on: [here], install_dir: "{bin}/apt", from: {{ apt: rt-tests }} }}
workloads:
  # A bare name runs the tool from its install_dir, which is not on PATH.
  - name: up
    kind: command
    argv: ["uptool"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
  - name: built
    kind: command
    argv: ["{bin}/gittool"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
"#,
        hosts = agent.hosts_yaml(),
        bin = bin.display(),
        repo = repo.display()
    );
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg");

    let values: Vec<(String, f64)> =
        sqlx::query_as("SELECT j.workload, r.value FROM results r JOIN jobs j ON j.id = r.job_id ORDER BY j.ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    // The git tool was built at tag v1 (value 1), not at the branch head (value 2).
    assert_eq!(values, [("up".to_string(), 41.0), ("built".to_string(), 1.0)]);

    let versions: serde_json::Value = sqlx::query_scalar("SELECT tool_versions FROM jobs WHERE ordinal = 0")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let script = std::fs::read(dir.0.join("uptool.sh")).unwrap();
    use sha2::Digest;
    assert_eq!(
        versions["uptool@here"],
        format!("sha256 {}", hex::encode(sha2::Sha256::digest(&script)))
    );
    assert_eq!(versions["gittool@here"], format!("git {first}"));
    let apt = versions["hackbench@here"].as_str().unwrap();
    assert!(apt.starts_with("rt-tests "), "{versions}");
    // A workload's program named by path is identified too (here: a file no package owns),
    // once its workload has run.
    let versions: serde_json::Value = sqlx::query_scalar("SELECT tool_versions FROM jobs WHERE ordinal = 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let own = versions[format!("{}/gittool@here", bin.display())].as_str().unwrap();
    assert!(own.starts_with("sha256 "), "{versions}");
}

#[tokio::test]
async fn a_tool_that_fails_to_build_fails_the_kernels_jobs_with_the_reason() {
    let db = fresh_db("toolfail").await;
    let agent = Agent::start();
    let dir = Scratch::new("toolfail");
    let text = format!(
        r#"
name: toolfail
{hosts}kernels: [ {{ name: current, source: running }} ]
tools:
  - {{ name: nope, on: [here], install_dir: "{d}/bin", from: {{ git: "{d}/no-such-repo", ref: main, build: [make], binary: nope }} }}
workloads:
  - {{ name: w, kind: command, argv: [true], metrics: {{ v: {{ regex: "(1)", higher_is_better: true }} }} }}
"#,
        hosts = agent.hosts_yaml(),
        d = dir.0.display()
    );
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err: String = sqlx::query_scalar("SELECT error FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(
        err.starts_with("tool nope on here: git clone exited with status 128: "),
        "{err}"
    );
}
