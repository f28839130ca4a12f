//! `kreg bisect` refusing what it cannot bisect, before anything is built, booted or
//! recorded: each with a message that says what to give instead.

use common::{fresh_db, git, kreg, Scratch};
use kreg_testkit as common;

fn scenario(kernel_source: &str, section: &str) -> String {
    format!(
        "name: b\nhosts:\n  sut: {{ role: sut, transport: {{ kind: lab }} }}\nkernels:\n  - name: k\n    source: {kernel_source}\n    config: {{ base: tinyconfig }}\nworkloads:\n  - {{ name: hb, kind: hackbench }}\nvariants: [ {{ name: default }}, {{ name: batch, policy: batch }} ]\n{section}"
    )
}

#[tokio::test]
async fn what_cannot_be_bisected_is_refused_and_nothing_recorded() {
    let db = fresh_db("bisectcli").await;
    let dir = Scratch::new("bisectcli");
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    for i in 0..3 {
        std::fs::write(repo.join("f"), format!("{i}\n")).unwrap();
        git(&repo, &["add", "f"]);
        git(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        git(&repo, &["tag", &format!("t{i}")]);
    }
    let git_src = format!("{{ git: \"{}\", ref: t2 }}", repo.display());
    // A range one commit longer than a bisection takes (made in one go by git fast-import).
    let long = dir.0.join("long");
    std::fs::create_dir_all(&long).unwrap();
    git(&long, &["init", "-q"]);
    let n = kreg::kernel::range::MAX_RANGE;
    let mut stream = String::new();
    for i in 0..n + 1 {
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{}\ncommitter A <a@example.org> {i} +0000\ndata {}\nc{i}\nM 644 inline f\ndata {}\n{i}\n\n",
            i + 1,
            format!("c{i}\n").len(),
            format!("{i}\n").len()
        ));
    }
    stream.push_str(&format!(
        "reset refs/tags/first\nfrom :1\n\nreset refs/tags/last\nfrom :{}\n\n",
        n + 1
    ));
    let mut fi = std::process::Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(&long)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    fi.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
    assert!(fi.wait().unwrap().success());
    let long_src = format!("{{ git: \"{}\", ref: last }}", long.display());
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            scenario(&git_src, ""),
            vec!["--good", "t0", "--bad", "t2", "--metric", "hb/time"],
            "several variants (default, batch): say which with --variant",
        ),
        (
            scenario(&git_src, ""),
            vec!["--bad", "t2", "--metric", "hb/time", "--variant", "default"],
            "missing --good",
        ),
        (
            scenario(&git_src, ""),
            vec![
                "--good",
                "t0",
                "--bad",
                "t2",
                "--metric",
                "time",
                "--variant",
                "default",
            ],
            "expected WORKLOAD/METRIC",
        ),
        (
            scenario(&git_src, ""),
            vec![
                "--good",
                "t0",
                "--bad",
                "t2",
                "--metric",
                "nope/time",
                "--variant",
                "default",
            ],
            "the scenario has no workload \"nope\"",
        ),
        (
            scenario("{ tarball: /usr/src/linux-source-6.1.tar.xz }", ""),
            vec![
                "--good",
                "t0",
                "--bad",
                "t2",
                "--metric",
                "hb/time",
                "--variant",
                "default",
            ],
            "the scenario has no kernel built from a git tree",
        ),
        (
            scenario(
                &git_src,
                "bisect: { good: t2, bad: t0, metric: hb/time, variant: batch }\n",
            ),
            vec![],
            "is not an ancestor of bad t0",
        ),
        (
            scenario(
                &git_src,
                "bisect: { good: t0, bad: nosuchref, metric: hb/time, variant: batch }\n",
            ),
            vec![],
            "ref \"nosuchref\" does not exist",
        ),
        (
            scenario(
                &long_src,
                "bisect: { good: first, bad: last, metric: hb/time, variant: batch }\n",
            ),
            vec![],
            "is 16385 commits on bad's first-parent line, more than the 16384 a bisection takes: narrow the range",
        ),
    ];
    for (i, (text, args, said)) in cases.iter().enumerate() {
        let file = dir.0.join(format!("b{i}.yaml"));
        std::fs::write(&file, text).unwrap();
        let out = kreg(&db, &dir.0)
            .env("KREG_CACHE_DIR", dir.0.join("cache"))
            .arg("bisect")
            .arg(&file)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "case {i}: {stderr}");
        assert!(stderr.contains(said), "case {i}: {stderr}");
    }
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap_or(0);
    assert_eq!(runs, 0, "nothing recorded");
    let out = kreg(&db, &dir.0).args(["bisect", "--show", "99"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run 99 does not exist"));
}

/// A finished bisection that ended on boots the lab failed (three `infrastructure`
/// failures of the bad end, as a lab whose machine never answered leaves them) is opened
/// again by `kreg resume`: those boots are set aside, kept, and the same boot is asked
/// again; one that ended on the build's failure stays finished. The lab's failures are
/// written as the engine stores them (a machine that fails its boots on demand is not
/// at hand here); the resume, the build it tries and the outcome it stores are real.
#[tokio::test]
async fn a_bisection_the_lab_ended_is_tried_again_on_resume_and_one_the_build_ended_is_not() {
    use kreg::bisect::report::Commit;
    use kreg::bisect::{Ask, Bisection, Outcome, Role, Rules};
    use kreg::failure::{Failed, FailureClass};
    use kreg::store::bisect as sb;

    let db = fresh_db("bisectlab").await;
    let dir = Scratch::new("bisectlab");
    let agent = common::Agent::start();
    // A tree with no Makefile: whatever is built of it fails to build.
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let mut commits = Vec::new();
    for i in 0..4 {
        std::fs::write(repo.join("f"), format!("{i}\n")).unwrap();
        git(&repo, &["add", "f"]);
        git(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        commits.push(Commit {
            hash: git(&repo, &["rev-parse", "HEAD"]).trim().to_string(),
            subject: format!("c{i}"),
            author: "A U Thor <a@example.org>".into(),
        });
    }
    let yaml = format!(
        "name: lab-ended\n{}kernels: [ {{ name: k, source: {{ git: \"{}\", ref: {} }}, config: {{ base: tinyconfig }} }} ]\nworkloads: [ {{ name: hb, kind: hackbench }} ]\n",
        agent.hosts_yaml(),
        repo.display(),
        commits[3].hash
    );
    let rules = Rules::default();
    let row = sb::BisectionRow {
        run_id: 0,
        kernel: "k".into(),
        workload: "hb".into(),
        metric: "time".into(),
        variant: "default".into(),
        good: commits[0].hash.clone(),
        bad: commits[3].hash.clone(),
        commit_count: 4,
        rules: sqlx::types::Json(serde_json::to_value(rules).unwrap()),
        outcome: None,
    };
    let source = dir.0.join("s.yaml");
    std::fs::write(&source, &yaml).unwrap();
    let text = kreg::store::ScenarioText {
        name: "lab-ended",
        yaml: &yaml,
        source_path: source.to_str().unwrap(),
        files: &[],
    };
    let run = sb::record_bisection(&db.pool, &text, &row, &commits).await.unwrap();
    // Good measured once, then the bad end's boot failed three times for the lab.
    let mut b = Bisection::new(4, rules);
    for seq in 1..=4 {
        let Ask::Measure { commit, role } = b.ask() else {
            panic!("asked nothing")
        };
        assert_eq!(role, Role::Endpoint);
        let m = sb::Measurement {
            seq,
            commit_index: commit as i32,
            role,
            reverted: None,
            kernel: format!("c{commit}-{}", &commits[commit].hash[..12]),
            boot: seq,
            value: None,
            error: None,
            failure_class: None,
            compiled: false,
            phases: None,
        };
        sb::ask_measurement(&db.pool, run, &m, &[]).await.unwrap();
        let value = match seq {
            1 => Ok(1.0),
            _ => Err(Failed::new(
                FailureClass::Infrastructure,
                "the machine did not answer within 300 s",
            )),
        };
        sb::measured(&db.pool, run, seq, value.as_ref().map(|v| *v), false)
            .await
            .unwrap();
        b.record(commit, role, value);
    }
    let Ask::Done(outcome) = b.ask() else {
        panic!("not ended")
    };
    assert!(
        matches!(outcome, Outcome::EndpointFailed { commit: 3, .. }),
        "{outcome:?}"
    );
    sb::set_outcome(&db.pool, run, &serde_json::to_value(&outcome).unwrap())
        .await
        .unwrap();

    let out = kreg(&db, &dir.0).args(["resume", &run.to_string()]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("ended on 3 boot(s) of c3-") && said.contains("that the lab failed (the machine did not answer"),
        "{said}"
    );
    // Set aside, kept; the same boot asked again (seq 5), which now fails to build: the
    // build's failure, not the lab's, ends it.
    let rows: Vec<(i32, bool, Option<String>)> =
        sqlx::query_as("SELECT seq, superseded, failure_class FROM bisect_measurements WHERE run_id = $1 ORDER BY seq")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let set_aside: Vec<i32> = rows.iter().filter(|r| r.1).map(|r| r.0).collect();
    assert_eq!(set_aside, [2, 3, 4], "{rows:?}\n{said}");
    assert_eq!(rows.len(), 5, "{rows:?}\n{said}");
    assert_eq!(rows[4].2.as_deref(), Some("build"), "{rows:?}\n{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    let outcome: serde_json::Value = sqlx::query_scalar("SELECT outcome FROM bisections WHERE run_id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(outcome["kind"], "endpoint_failed", "{outcome}");
    // Ended by the build: nothing to try again.
    let out = kreg(&db, &dir.0).args(["resume", &run.to_string()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a finished bisection; nothing to resume"), "{stdout}");
}
