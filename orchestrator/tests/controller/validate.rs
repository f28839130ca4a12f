//! `kreg validate` and `kreg plan` as a user runs them.

use std::process::Command;

use kreg_testkit as common;

#[test]
fn validate_prints_one_positioned_message_per_problem_and_exits_1() {
    let dir = common::Scratch::new("validate");
    let file = dir.0.join("bad.yaml");
    std::fs::write(
        &file,
        "name: bad\nhosts:\n  sut: { role: sut, transport: { kind: lab } }\nkernels:\n  - name: k1\n    source: running\n    flavour: spicy\niterations: three\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let f = file.display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{f}:1:1: missing field `workloads` in the scenario"),
            format!(
                "{f}:7:5: unknown field `flavour` in a kernel; expected one of: name, source, config, patches, cmdline, build_on, perf"
            ),
            format!("{f}:8:13: iterations: expected a whole number from 1 to 1000, found a string"),
        ],
        "{text}"
    );
}

#[test]
fn validate_and_plan_accept_the_shipped_scenarios() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
    let files: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    assert!(!files.is_empty());
    // They name token files and images of machines that are not here: the file alone.
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["validate", "--skip-files"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .arg("plan")
        .arg(format!("{root}/lab-hackbench.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("scenario lab-hackbench: 2 kernels × 4 variants × 1 workloads × 4 iterations = 40 jobs"),
        "{text}"
    );
    assert!(text.contains("adaptive: looks at 4, 6, 8 runs per side"), "{text}");
    assert!(
        text.contains("variant batch × workload hackbench: on sut, policy batch, CPUs all, collectors /proc/schedstat"),
        "{text}"
    );
    // The generated HammerDB scripts, the password hidden, the virtual users resolved for
    // the SUT's CPUs as given.
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["plan", "--skip-files", "--verbose", "--cpus", "8"])
        .arg(format!("{root}/seed004-mysql-hammerdb.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hammer = String::from_utf8(out.stdout).unwrap();
    assert!(
        hammer.contains("client on ldg; server on sut, policy batch"),
        "{hammer}"
    );
    assert!(hammer.contains("        diset tpcc mysql_pass {***}\n"), "{hammer}");
    assert!(hammer.contains("        vuset vu 8\n"), "{hammer}");
    // As its thread did, seed 004 records `perf sched stats` around every run, with a perf
    // of its own that has it, whatever the kernel.
    assert!(
        hammer.contains("collectors /proc/schedstat and `perf sched stats record` on sut, system-wide"),
        "{hammer}"
    );
    assert!(
        hammer.contains(
            "  perf on sut: perf built from Debian's linux-source-7.2 (on the controller); has `perf sched stats`"
        ),
        "{hammer}"
    );
    // One boot per kernel; in it a warm-up of each variant, then the variants side by side
    // round after round (the A/A pair `default`, `again` always next to each other).
    let boots: Vec<&str> = text.lines().filter(|l| l.starts_with("boot kernel")).collect();
    assert_eq!(boots.len(), 2, "{text}");
    assert!(
        boots[0].starts_with("boot kernel deb-6.1 (baseline)") && boots[1].starts_with("boot kernel deb-6.12"),
        "{text}"
    );
    let first: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("boot kernel deb-6.1"))
        .skip(1)
        .take(12)
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect();
    let variants = ["default", "again", "batch", "one-cpu"];
    for (i, l) in first.iter().enumerate() {
        let want = format!("variant={} workload=hackbench", variants[i % 4]);
        let tail = if i < 4 {
            "warm-up (stored, not judged)".to_string()
        } else {
            format!("iteration={}", i / 4)
        };
        assert_eq!(l, &format!("{want} {tail}"), "{text}");
    }
}

/// `kreg plan --rehearsal` on seed 002 as shipped: what the lab would run (every cell once,
/// one boot a kernel), each size cut, what a VM lacks with its FILE:LINE:COL, and the real
/// run's size.
#[test]
fn plan_of_a_rehearsal_says_what_is_cut_what_cannot_be_rehearsed_and_what_the_real_run_takes() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/seed002-hackbench-netperf.yaml"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["plan", "--skip-files", "--rehearsal", file])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let source = std::fs::read_to_string(file).unwrap();
    // Where the file sets turbo, found here by reading it.
    let (line, col) = source
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("turbo: off").map(|c| (i + 1, c + 1)))
        .unwrap();
    assert!(
        text.contains(&format!(
            "  not rehearsable: {file}:{line}:{col}: host sut: turbo: a lab VM has no"
        )),
        "{text}"
    );
    assert!(
        text.contains("  plan: iterations { min: 6, max: 16 } -> 1\n  plan: boots 3 -> 1\n"),
        "{text}"
    );
    assert!(text.contains("  cut: hackbench-g1: loops 150000 -> 100\n"), "{text}");
    // 2 kernels × 1 variant × 10 workloads, 6 runs on 3 boots to start with, up to 16 runs
    // on 8 boots.
    assert!(
        text.contains("  the real run: 120 to 320 jobs on 6 to 16 boots;"),
        "{text}"
    );
    assert!(
        text.contains(
            "scenario seed002-hackbench-netperf: 2 kernels × 1 variants × 10 workloads × 1 iterations = 20 jobs"
        ),
        "{text}"
    );
}
