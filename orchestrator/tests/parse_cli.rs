//! `kreg parse` on outputs its parsers were not written against: a hackbench run made
//! here and now, and schbench and sysbench outputs whose numbers this test reads on its own.

use std::process::Command;

use kreg_testkit as common;

fn kreg_parse(kind: &str, file: &std::path::Path) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .arg("parse")
        .arg(kind)
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.success(),
        json,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn value(json: &serde_json::Value, name: &str) -> f64 {
    json.as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {json}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn hackbench_run_now_is_read_exactly() {
    let dir = common::Scratch::new("parse-hb");
    for args in [&["-g", "1", "-l", "20"][..], &["-T", "-p", "-g", "2", "-l", "10"][..]] {
        let out = Command::new("hackbench")
            .args(args)
            .output()
            .expect("hackbench (rt-tests) is installed");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let printed: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("Time: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let file = dir.0.join("hb.txt");
        std::fs::write(&file, &text).unwrap();
        let (ok, json, err) = kreg_parse("hackbench", &file);
        assert!(ok, "{err}");
        assert_eq!(value(&json, "time"), printed);
        assert_eq!(json[0]["unit"], "s");
        assert_eq!(json[0]["direction"], "lower");
    }
}

#[test]
fn schbench_numbers_match_what_it_printed() {
    let file = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/fixtures/schbench.6.1.txt"
    ));
    let text = std::fs::read_to_string(file).unwrap();
    let (ok, json, err) = kreg_parse("schbench", file);
    assert!(ok, "{err}");
    // Read the printed numbers with plain string handling, independent of the parser.
    let avg: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("average rps: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(value(&json, "avg_rps"), avg);
    let mut section = "";
    for line in text.lines() {
        if line.starts_with("Wakeup") {
            section = "wakeup_lat";
        } else if line.starts_with("Request") {
            section = "request_lat";
        } else if line.starts_with("RPS") {
            section = "rps";
        }
        let l = line.replace('*', " ");
        if let Some(idx) = l.find("th: ") {
            let pct = l[..idx].trim();
            let number: f64 = l[idx + 4..].split_whitespace().next().unwrap().parse().unwrap();
            let name = format!("{section}_p{}", pct.strip_suffix(".0").unwrap_or(pct));
            assert_eq!(value(&json, &name), number, "{name}");
        }
    }
    assert_eq!(
        json.as_array()
            .unwrap()
            .iter()
            .filter(|m| m["direction"] == "higher")
            .count(),
        6
    );
}

#[test]
fn bad_input_is_an_error_naming_tool_and_line() {
    let dir = common::Scratch::new("parse-bad");
    let file = dir.0.join("cut.txt");
    std::fs::write(
        &file,
        "Wakeup Latencies percentiles (usec) runtime 3 (s) (84 total samples)\n\t  50.0th: 79         (25 samples)\n",
    )
    .unwrap();
    let (ok, _, err) = kreg_parse("schbench", &file);
    assert!(!ok);
    assert!(
        err.contains("schbench: line 1: the Wakeup Latencies percentiles section ends before"),
        "{err}"
    );
    let (ok, _, err) = kreg_parse("nosuch", &file);
    assert!(!ok && err.contains("unknown kind"), "{err}");
}

#[test]
fn schedstat_diff_on_real_snapshots() {
    let f = |n: &str| format!("{}/../core/fixtures/{n}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args([
            "schedstat",
            "diff",
            &f("schedstat-before.6.1.txt"),
            &f("schedstat-after.6.1.txt"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // sched_count summed over both CPUs, read here from the files themselves.
    let count = |name: &str| -> u64 {
        std::fs::read_to_string(f(name))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("cpu"))
            .map(|l| l.split_whitespace().nth(3).unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let delta = count("schedstat-after.6.1.txt") - count("schedstat-before.6.1.txt");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("sched_count"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap(),
        delta,
        "{text}"
    );
    assert!(text.starts_with("schedstat version 15,"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args([
            "schedstat",
            "diff",
            &f("schedstat-before.6.1.txt"),
            &f("schedstat-after.6.12.txt"),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("versions differ"));
}

#[test]
fn schbench_json_and_standard_input() {
    use std::io::Write;
    let dir = common::Scratch::new("parse-json");
    let file = dir.0.join("schbench.json");
    std::fs::write(
        &file,
        r#"{"normal": {"version": "6.12.0"}, "int": {"wakeup_latency_pct50.0": 9, "wakeup_latency_pct99.0": 67, "rps_pct50.0": 1320, "rps_min": 1288}}"#,
    )
    .unwrap();
    let (ok, json, err) = kreg_parse("schbench", &file);
    assert!(ok, "{err}");
    assert_eq!(value(&json, "wakeup_lat_p99"), 67.0);
    assert_eq!(value(&json, "rps_p50"), 1320.0);
    // `-` reads standard input.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["parse", "hackbench", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Running in process mode with 1 groups\nTime: 0.125\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value(&json, "time"), 0.125);
}

/// netperf's default tables and `-o` CSV from runs made now against a netserver on
/// loopback: the figure kreg reads is the one in the table's throughput column.
#[test]
fn netperf_tables_run_now_are_read_exactly() {
    let dir = common::Scratch::new("parse-netperf");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = Command::new("netserver")
        .args(["-D", "-L", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("netserver (Debian's netperf) is installed");
    let p = port.to_string();
    let netperf = |extra: &[&str]| -> String {
        for _ in 0..50 {
            let out = Command::new("netperf")
                .args(["-H", "127.0.0.1", "-p", &p, "-l", "1"])
                .args(extra)
                .output()
                .unwrap();
            if out.status.success() {
                return String::from_utf8(out.stdout).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("netperf {extra:?} never ran");
    };
    // The number in the line after the blank line, at the column whose heading's last
    // line ends the throughput's unit; read here by position from the end of the headings.
    let cases: [(&[&str], &str, usize, &str); 4] = [
        (&["-t", "TCP_RR"], "transactions_per_s", 5, "Trans/s"),
        (&["-t", "UDP_RR"], "transactions_per_s", 5, "Trans/s"),
        (&["-t", "TCP_STREAM"], "throughput", 4, "10^6bits/s"),
        (&["-t", "TCP_MAERTS", "-f", "k"], "throughput", 4, "10^3bits/s"),
    ];
    for (args, metric, column, unit) in cases {
        let text = netperf(args);
        let data = text
            .lines()
            .skip_while(|l| !l.trim().is_empty())
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("{text}"));
        let printed: f64 = data.split_whitespace().nth(column).unwrap().parse().unwrap();
        let file = dir.0.join("np.txt");
        std::fs::write(&file, &text).unwrap();
        let (ok, json, err) = kreg_parse("netperf", &file);
        assert!(ok, "{args:?}: {err}\n{text}");
        assert_eq!(value(&json, metric), printed, "{args:?}\n{text}");
        assert_eq!(json[0]["unit"], unit, "{args:?}");
        assert_eq!(json[0]["direction"], "higher");
    }
    // -o with named columns.
    let text = netperf(&["-t", "TCP_RR", "--", "-o", "THROUGHPUT,P99_LATENCY,THROUGHPUT_UNITS"]);
    let values: Vec<&str> = text.lines().last().unwrap().split(',').collect();
    let file = dir.0.join("np.csv");
    std::fs::write(&file, &text).unwrap();
    let (ok, json, err) = kreg_parse("netperf", &file);
    assert!(ok, "{err}\n{text}");
    assert_eq!(value(&json, "transactions_per_s"), values[0].parse::<f64>().unwrap());
    assert_eq!(value(&json, "lat_p99_us"), values[1].parse::<f64>().unwrap());
    // -O (omni's columns): the values line is the last; read here by the order of the
    // selectors the test gave (or, for -O alone, the stream's last two columns).
    let text = netperf(&[
        "-t",
        "UDP_RR",
        "--",
        "-O",
        "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY",
    ]);
    let cells: Vec<&str> = text.lines().last().unwrap().split_whitespace().collect();
    let file = dir.0.join("np-O.txt");
    std::fs::write(&file, &text).unwrap();
    let (ok, json, err) = kreg_parse("netperf", &file);
    assert!(ok, "{err}\n{text}");
    assert_eq!(
        value(&json, "transactions_per_s"),
        cells[0].parse::<f64>().unwrap(),
        "{text}"
    );
    assert_eq!(json[0]["unit"], cells[1], "{text}");
    for (i, m) in ["lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us"]
        .iter()
        .enumerate()
    {
        assert_eq!(value(&json, m), cells[2 + i].parse::<f64>().unwrap(), "{m}\n{text}");
    }
    let text = netperf(&["-t", "TCP_STREAM", "--", "-O"]);
    let cells: Vec<&str> = text.lines().last().unwrap().split_whitespace().collect();
    std::fs::write(&file, &text).unwrap();
    let (ok, json, err) = kreg_parse("netperf", &file);
    assert!(ok, "{err}\n{text}");
    assert_eq!(
        value(&json, "throughput"),
        cells[cells.len() - 2].parse::<f64>().unwrap(),
        "{text}"
    );
    assert_eq!(json[0]["unit"], "10^6bits/s");
    // -O without the unit, and -O under -P 0 (no headings): refused, naming -O.
    for (args, said) in [
        (
            &["-t", "TCP_RR", "--", "-O", "THROUGHPUT,P99_LATENCY"][..],
            "add THROUGHPUT_UNITS to -O's selectors",
        ),
        (
            &["-P", "0", "-t", "TCP_RR", "--", "-O", "THROUGHPUT,THROUGHPUT_UNITS"][..],
            "`-O` columns",
        ),
    ] {
        let text = netperf(args);
        std::fs::write(&file, &text).unwrap();
        let (ok, _, err) = kreg_parse("netperf", &file);
        assert!(!ok && err.contains(said), "{args:?}: {err}\n{text}");
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// A `perf sched stats report` saved by hand: the all-CPUs summary, each figure as the file
/// shows it (read here on its own: the first `NAME : VALUE` line of the summary and of its
/// first domain); a diff is refused, saying what it is.
#[test]
fn perf_sched_stats_report_and_diff() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/fixtures");
    let report = dir.join("perf-7.2-sched-stats-report.6.1.txt");
    let (ok, json, err) = kreg_parse("perf-sched-stats", &report);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&report).unwrap();
    let first = |after: &str, field: &str| -> f64 {
        let start = text.find(after).unwrap();
        let line = text[start..].lines().find(|l| l.starts_with(field)).unwrap();
        line.split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(
        value(&json, "sched_stats_ttwu_count"),
        first("CPU: <ALL CPUS SUMMARY>\n", "ttwu_count ")
    );
    assert_eq!(
        value(&json, "sched_stats_domain0_idle_lb_count"),
        first("CPU: <ALL CPUS SUMMARY> | DOMAIN: 0\n", "idle_lb_count ")
    );
    let per_cpu = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"].as_str().unwrap().contains("cpu1"))
        .count();
    assert_eq!(per_cpu, 0, "the summary only");
    let (ok, _, err) = kreg_parse("perf-sched-stats", &dir.join("perf-7.2-sched-stats-diff.6.1.txt"));
    assert!(
        !ok && err.contains("`perf sched stats diff` output (two recordings)"),
        "{err}"
    );
}

/// An output of 128k percentile lines (about 5 MB, under the agent's output cap) is read
/// in one pass: `kreg parse` gets 20 s of CPU for it (a pairwise check of names took about
/// 60 s). Percentile labels a tool would never print are refused, named and clipped.
#[test]
fn a_huge_output_is_read_in_one_pass_and_labels_are_checked() {
    use std::os::unix::process::CommandExt;
    let dir = common::Scratch::new("parse-huge");
    let file = dir.0.join("huge.txt");
    let mut text = String::from("Wakeup Latencies percentiles (usec) runtime 3 (s) (68 total samples)\n");
    let n = 128 * 1024;
    for i in 0..n {
        text.push_str(&format!(
            "\t  {:.6}th: {}         (1 samples)\n",
            0.0005 + i as f64 * 0.0007,
            i
        ));
    }
    text.push_str("\t  min=1, max=2\naverage rps: 1.00\n");
    assert!(text.len() > 4 << 20, "{}", text.len());
    std::fs::write(&file, &text).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kreg"));
    cmd.arg("parse").arg("schbench").arg(&file);
    // SAFETY: setrlimit between fork and exec, on a struct on the stack.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 20,
                rlim_max: 20,
            };
            if libc::setrlimit(libc::RLIMIT_CPU, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json.as_array().map(|a| a.len()),
        Some(n + 3),
        "every percentile, min, max, rps"
    );

    for (label, why) in [
        ("150.0", "\"150.0\" is no percentile"),
        ("0", "\"0\" is no percentile"),
        ("<b>9</b>", "is no percentile"),
        (&"9".repeat(2 << 20)[..], "… (2097152 bytes)\" is no percentile"),
    ] {
        let bad = format!(
            "Wakeup Latencies percentiles (usec) runtime 3 (s) (68 total samples)\n\t  {label}th: 97         (21 samples)\n\t  min=30, max=8700\n"
        );
        std::fs::write(&file, bad).unwrap();
        let (ok, _, err) = kreg_parse("schbench", &file);
        assert!(!ok, "{label:.20}");
        assert!(err.contains("schbench: line 2: ") && err.contains(why), "{err:.400}");
        assert!(
            err.len() < 1000,
            "the error echoes the label clipped: {} bytes",
            err.len()
        );
    }
}
