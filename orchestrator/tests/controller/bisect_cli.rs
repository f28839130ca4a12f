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
