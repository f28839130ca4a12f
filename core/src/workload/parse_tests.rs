//! Parser tests: real outputs from `fixtures/` (captured from the tools themselves), outputs
//! written here after each tool's documented layout where the tool is not in Debian, and
//! truncated or garbled variants of each.

use super::command::MetricPattern;
use super::parse_output as parse;
use super::schbench::{parse_json as schbench_json, parse_text as schbench};
use crate::parse::{pct_name, Metric, ParseError};

fn hackbench(text: &str) -> Result<Vec<Metric>, ParseError> {
    super::hackbench::parse(text)
}

fn perf_bench(text: &str) -> Result<Vec<Metric>, ParseError> {
    super::perf_bench::parse(text)
}

fn command(p: &[MetricPattern], stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
    super::command::parse(p, stdout, stderr)
}

pub(super) fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Metrics as `name=value unit direction` lines, or the error, for compact expectations.
fn render(r: Result<Vec<Metric>, ParseError>) -> String {
    match r {
        Ok(ms) => ms
            .iter()
            .map(|m| format!("{}={} {} {}", m.name, m.value, m.unit, m.direction()))
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("error: {e}"),
    }
}

fn check(kind: &str, input: &str, expected: &str) {
    let got = render(parse(kind, input));
    assert_eq!(got.trim(), expected.trim(), "\n--- got ---\n{got}\n");
}

/// The first `n` lines of `text`: a run cut short.
fn truncated(text: &str, n: usize) -> String {
    text.lines().take(n).collect::<Vec<_>>().join("\n")
}

#[test]
fn hackbench_real_outputs() {
    check("hackbench", &fixture("hackbench.6.12.txt"), "time=11.786 s lower");
    let t61 = fixture("hackbench.6.1.txt");
    let want: f64 = t61
        .lines()
        .find_map(|l| l.strip_prefix("Time: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(hackbench(&t61).unwrap()[0].value, want);
    check(
        "hackbench",
        &fixture("hackbench-threads-pipe.6.1.txt"),
        "time=4.758 s lower",
    );
}

#[test]
fn hackbench_truncated_and_garbled() {
    let full = fixture("hackbench.6.12.txt");
    check(
        "hackbench",
        &truncated(&full, 2),
        "error: hackbench: no `Time:` line in the output (truncated, or the run failed)",
    );
    check(
        "hackbench",
        "Time: 1.2.3\n",
        "error: hackbench: line 1: `Time:` is \"1.2.3\", not a number",
    );
    check(
        "hackbench",
        "Time: -4\n",
        "error: hackbench: line 1: `Time:` is -4, which is impossible",
    );
    check(
        "hackbench",
        "",
        "error: hackbench: no `Time:` line in the output (truncated, or the run failed)",
    );
}

#[test]
fn schbench_real_output() {
    check(
        "schbench",
        &fixture("schbench.6.12.txt"),
        "
wakeup_lat_p50=79 us lower
wakeup_lat_p90=2620 us lower
wakeup_lat_p99=6024 us lower
wakeup_lat_p99.9=6024 us lower
wakeup_lat_min=27 us lower
wakeup_lat_max=6023 us lower
request_lat_p50=62528 us lower
request_lat_p90=91776 us lower
request_lat_p99=132352 us lower
request_lat_p99.9=132352 us lower
request_lat_min=31882 us lower
request_lat_max=132307 us lower
rps_p20=0 req/s higher
rps_p50=23 req/s higher
rps_p90=29 req/s higher
rps_min=23 req/s higher
rps_max=29 req/s higher
avg_rps=28 req/s higher
",
    );
    let m = schbench(&fixture("schbench.6.1.txt")).unwrap();
    assert!(m.iter().any(|m| m.name == "avg_rps") && m.iter().any(|m| m.name == "wakeup_lat_p99"));
}

#[test]
fn schbench_takes_the_last_interval_report() {
    let once = fixture("schbench.6.12.txt");
    let first = once
        .replace("average rps: 28.00", "average rps: 11.00")
        .replace("50.0th: 79 ", "50.0th: 5 ");
    let both = format!("{first}{once}");
    let m = schbench(&both).unwrap();
    let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
    assert_eq!((get("avg_rps"), get("wakeup_lat_p50")), (28.0, 79.0));
    assert_eq!(m.iter().filter(|x| x.name == "wakeup_lat_p50").count(), 1);
}

#[test]
fn schbench_truncated_and_garbled() {
    let full = fixture("schbench.6.12.txt");
    check("schbench", &truncated(&full, 3), "error: schbench: line 1: the Wakeup Latencies percentiles section ends before its `min=…, max=…` line (truncated output)");
    check(
        "schbench",
        "average rps: 28.00\n",
        "error: schbench: no `Wakeup Latencies percentiles` report in the output (truncated, or the run failed)",
    );
    let garbled = full.replace("90.0th: 2620 ", "90.0th: 26x0 ");
    check(
        "schbench",
        &garbled,
        "error: schbench: line 3: the 90.0th percentile is \"26x0\", not a number",
    );
    let garbled = full.replace("min=27, max=6023", "min=27 max=6023");
    check(
        "schbench",
        &garbled,
        "error: schbench: line 6: expected `min=A, max=B`, found \"min=27 max=6023\"",
    );
}

pub(super) const SCHBENCH_JSON: &str = r#"{"normal": {"version": "6.12.0","hostname": "sut1","sched_ext": "disabled","cmdline": "schbench -m 2 -t 4 -r 10 -j out.json"},"int": {"time": 1764500000, "wakeup_latency_pct20.0": 4, "wakeup_latency_pct50.0": 9, "wakeup_latency_pct90.0": 21, "wakeup_latency_pct99.0": 67, "wakeup_latency_pct99.9": 310, "wakeup_latency_min": 1,"wakeup_latency_max": 1204, "request_latency_pct20.0": 5800, "request_latency_pct50.0": 6100, "request_latency_pct90.0": 7200, "request_latency_pct99.0": 9900, "request_latency_pct99.9": 14000, "request_latency_min": 5012,"request_latency_max": 15220, "rps_pct20.0": 1300, "rps_pct50.0": 1320, "rps_pct90.0": 1336, "rps_pct99.0": 1340, "rps_pct99.9": 1340, "rps_min": 1288,"rps_max": 1340, "runtime": 10}}"#;

#[test]
fn schbench_json_layout() {
    let m = schbench_json(SCHBENCH_JSON).unwrap();
    let get = |n: &str| {
        m.iter()
            .find(|x| x.name == n)
            .map(|x| (x.value, x.unit.as_str(), x.higher_is_better))
    };
    assert_eq!(get("wakeup_lat_p99"), Some((67.0, "us", false)));
    assert_eq!(get("wakeup_lat_p99.9"), Some((310.0, "us", false)));
    assert_eq!(get("request_lat_p50"), Some((6100.0, "us", false)));
    assert_eq!(get("rps_p50"), Some((1320.0, "req/s", true)));
    assert_eq!(get("rps_min"), Some((1288.0, "req/s", true)));
    assert_eq!(m.len(), 21);
    check(
        "schbench-json",
        &SCHBENCH_JSON[..200],
        "error: schbench-json: line 1, column 200: EOF while parsing a string at line 1 column 200",
    );
    check(
        "schbench-json",
        r#"{"normal": {}}"#,
        "error: schbench-json: no `int` object: not schbench's JSON output",
    );
    check(
        "schbench-json",
        r#"{"int": {"wakeup_latency_pct50.0": "x"}}"#,
        "error: schbench-json: `wakeup_latency_pct50.0` is \"x\", not a number",
    );
}

#[test]
fn sysbench_real_output() {
    check(
        "sysbench",
        &fixture("sysbench-oltp_read_write.txt"),
        "
tps=273.44 tx/s higher
qps=5468.8 queries/s higher
errors_per_s=0 errors/s lower
lat_min_ms=2.25 ms lower
lat_avg_ms=7.3 ms lower
lat_max_ms=52.26 ms lower
lat_p95_ms=15.27 ms lower
",
    );
}

#[test]
fn sysbench_failed_truncated_and_garbled() {
    check(
        "sysbench",
        &fixture("sysbench-access-denied.txt"),
        "error: sysbench: line 10: the run failed: FATAL: unable to connect to MySQL server on host '127.0.0.1', port 33306, aborting...",
    );
    let full = fixture("sysbench-oltp_read_write.txt");
    check(
        "sysbench",
        &truncated(&full, 20),
        "error: sysbench: no throughput or no `Latency (ms):` section in the output (truncated, or the run failed)",
    );
    let garbled = full.replace("(273.44 per sec.)", "(273.44 per s)");
    check(
        "sysbench",
        &garbled,
        "error: sysbench: line 18: transactions has no `(N per sec.)`",
    );
    let garbled = full.replace(
        "avg:                                    7.30",
        "avg:                                    7,30",
    );
    check(
        "sysbench",
        &garbled,
        "error: sysbench: line 29: avg is \"7,30\", not a number",
    );
}

#[test]
fn perf_bench_real_outputs() {
    let pipe = fixture("perf-bench-pipe.6.1-perf.txt");
    let m = perf_bench(&pipe).unwrap();
    assert_eq!(
        m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["total_time", "usecs_per_op", "ops_per_s"]
    );
    let msg = perf_bench(&fixture("perf-bench-messaging.6.1-perf.txt")).unwrap();
    assert_eq!(msg.len(), 1);
    assert!(msg[0].value > 0.0);
    check(
        "perf-bench",
        &truncated(&pipe, 3),
        "error: perf-bench: no `Total time:` line (truncated, or the benchmark failed)",
    );
    check(
        "perf-bench",
        "     Total time: 0.0x4 [sec]\n",
        "error: perf-bench: line 1: Total time is \"0.0x4\", not a number",
    );
    check(
        "perf-bench",
        "     Total time: 0.054\n",
        "error: perf-bench: line 1: `Total time:` without `[sec]`",
    );
}

/// netperf's keyval output (`-k` with kreg's selectors), as its manual documents it.
pub(super) const NETPERF_RR: &str = "MIGRATED UDP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.9.0.1 () port 0 AF_INET : demo\nTHROUGHPUT=31254.87\nTHROUGHPUT_UNITS=Trans/s\nMEAN_LATENCY=31.77\nP50_LATENCY=30\nP90_LATENCY=36\nP99_LATENCY=58\n";

#[test]
fn netperf_keyval() {
    check(
        "netperf",
        NETPERF_RR,
        "
transactions_per_s=31254.87 Trans/s higher
lat_mean_us=31.77 us lower
lat_p50_us=30 us lower
lat_p90_us=36 us lower
lat_p99_us=58 us lower
",
    );
    check(
        "netperf",
        &truncated(NETPERF_RR, 1),
        "error: netperf: the table has no numbers after its headings (truncated)",
    );
    check(
        "netperf",
        &NETPERF_RR.replace("P99_LATENCY=58", "P99_LATENCY=n/a"),
        "error: netperf: line 7: P99_LATENCY is \"n/a\", not a number",
    );
}

/// netperf 2.7.0's own outputs (fixtures/README.md): the default table of each test kind,
/// with CPU columns, `-o` CSV named and bare, `-k` for a stream test.
#[test]
fn netperf_real_outputs() {
    let cases = [
        ("tcp_rr", "transactions_per_s=34596.58 Trans/s higher"),
        ("udp_rr", "transactions_per_s=37897.86 Trans/s higher"),
        ("tcp_rr_cpu", "transactions_per_s=24558.24 Trans/s higher"),
        ("tcp_stream", "throughput=12322.61 10^6bits/s higher"),
        ("tcp_maerts", "throughput=11187.77 10^6bits/s higher"),
        ("tcp_stream_cpu_g", "throughput=11.58 10^9bits/s higher"),
        (
            "udp_stream",
            "throughput=13739.84 10^6bits/s higher\nsend_throughput=55173.69 10^6bits/s higher",
        ),
        (
            "tcp_rr_o",
            "transactions_per_s=29046.96 Trans/s higher\nlat_mean_us=34.36 us lower\nlat_p50_us=33 us lower\nlat_p90_us=39 us lower\nlat_p99_us=63 us lower",
        ),
        ("tcp_stream_o", "throughput=11962.39 10^6bits/s higher"),
        ("tcp_stream_o_bare", "throughput=12114.66 10^6bits/s higher"),
        ("tcp_stream_k", "throughput=14740.28 10^6bits/s higher"),
    ];
    for (name, want) in cases {
        let text = fixture(&format!("netperf-2.7.0.{name}.txt"));
        check("netperf", &text, want);
        // Cut anywhere before its numbers, each is an error, never a partial result.
        let numbers = text
            .lines()
            .position(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()));
        for n in 0..numbers.unwrap_or(0) {
            let r = parse("netperf", &truncated(&text, n));
            assert!(r.is_err(), "{name} cut to {n} lines: {r:?}");
        }
    }
    // The UDP_STREAM table without its receive line: no throughput to give.
    let udp = fixture("netperf-2.7.0.udp_stream.txt");
    let lines = udp
        .lines()
        .collect::<Vec<_>>()
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap();
    check(
        "netperf",
        &truncated(&udp, lines),
        "error: netperf: the table lacks its line 2 of numbers (truncated)",
    );
    // Two runs pasted together.
    let two = format!(
        "{}{}",
        fixture("netperf-2.7.0.tcp_rr.txt"),
        fixture("netperf-2.7.0.tcp_rr.txt")
    );
    check(
        "netperf",
        &two,
        "error: netperf: 2 test banners: the output holds more than one run; give one run per file",
    );
    // A table whose throughput column is not a number.
    let bad = fixture("netperf-2.7.0.tcp_stream.txt").replace("12322.61", "12322.61x");
    assert!(parse("netperf", &bad).is_err());
}

/// hammerdbcli output with the time profile on, HammerDB v4 layout (P99/P95/P50 only).
pub(super) const HAMMERDB_V4: &str = "\
Vuser 1:Rampup 1 minutes complete ...
Vuser 1:Rampup complete, Taking start Transaction Count.
Vuser 1:Timing test period of 2 in minutes
Vuser 1:Test complete, Taking end Transaction Count.
Vuser 1:4 Active Virtual Users configured
Vuser 1:TEST RESULT : System achieved 21034 NOPM from 48811 MariaDB TPM
Vuser 1:>>>>> VIRTUAL USER 2 : ELAPSED TIME : 180215ms
Vuser 1:>>>>> PROC: NEWORD
Vuser 1:CALLS: 9120\tMIN: 2.100ms\tAVG: 9.900ms\tMAX: 210.000ms\tTOTAL: 90288.000ms
Vuser 1:P99: 40.000ms\tP95: 22.000ms\tP50: 8.000ms\tSD: 700.500\tRATIO: 48.000%
Vuser 1:+-----------------+--------------+------+--------+--------------+
Vuser 1:>>>>> SUMMARY OF 4 ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : 180330ms
Vuser 1:>>>>> PROC: NEWORD
Vuser 1:CALLS: 36501\tMIN: 1.980ms\tAVG: 10.112ms\tMAX: 260.118ms\tTOTAL: 369098.000ms
Vuser 1:P99: 41.250ms\tP95: 23.500ms\tP50: 8.125ms\tSD: 712.300\tRATIO: 47.900%
Vuser 1:>>>>> PROC: PAYMENT
Vuser 1:CALLS: 36622\tMIN: 1.010ms\tAVG: 7.750ms\tMAX: 199.400ms\tTOTAL: 283820.500ms
Vuser 1:P99: 30.000ms\tP95: 17.250ms\tP50: 6.000ms\tSD: 512.100\tRATIO: 36.800%
Vuser 1:+-----------------+--------------+------+--------+--------------+
";

/// The v6 layout: P75 and P25 too, SD in ms; old-style result line (v3 word order) mixed in
/// to check both orders are read.
pub(super) const HAMMERDB_V6: &str = "\
Vuser 1:TEST RESULT : System achieved 50123 MySQL TPM at 21500 NOPM
>>>>> SUMMARY OF 2 ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : 127146ms
>>>>> PROC: NEWORD
CALLS: 3427\tMIN: 1.730ms\tAVG: 36.332ms\tMAX: 1220.165ms\tTOTAL: 124508.229ms
P99: 210.118ms\tP95: 104.921ms\tP75: 50.942ms\tP50: 19.126ms\tP25: 9.919ms\tSD: 49.663ms\tRATIO: 48.963%
+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
";

#[test]
fn hammerdb_v4_and_v6() {
    check(
        "hammerdb",
        HAMMERDB_V4,
        "
nopm=21034 NOPM higher
tpm=48811 TPM higher
neword_p50_ms=8.125 ms lower
neword_p95_ms=23.5 ms lower
neword_p99_ms=41.25 ms lower
neword_avg_ms=10.112 ms lower
payment_p50_ms=6 ms lower
payment_p95_ms=17.25 ms lower
payment_p99_ms=30 ms lower
payment_avg_ms=7.75 ms lower
",
    );
    check(
        "hammerdb",
        HAMMERDB_V6,
        "
nopm=21500 NOPM higher
tpm=50123 TPM higher
neword_p50_ms=19.126 ms lower
neword_p95_ms=104.921 ms lower
neword_p99_ms=210.118 ms lower
neword_avg_ms=36.332 ms lower
neword_p25_ms=9.919 ms lower
neword_p75_ms=50.942 ms lower
",
    );
}

#[test]
fn hammerdb_truncated_and_garbled() {
    check(
        "hammerdb",
        &truncated(HAMMERDB_V4, 5),
        "error: hammerdb: no `TEST RESULT : System achieved …` line (truncated, or the run failed)",
    );
    check(
        "hammerdb",
        &truncated(HAMMERDB_V4, 14),
        "error: hammerdb: line 13: PROC NEWORD has no P50 (truncated time profile)",
    );
    check(
        "hammerdb",
        &HAMMERDB_V4.replace("21034 NOPM", "21O34 NOPM"),
        "error: hammerdb: line 6: cannot read NOPM and TPM from \"TEST RESULT : System achieved 21O34 NOPM from 48811 MariaDB TPM\"",
    );
    check(
        "hammerdb",
        &HAMMERDB_V6.replace("P50: 19.126ms", "P50: 19.1.26ms"),
        "error: hammerdb: line 5: P50 is \"19.1.26\", not a number",
    );
}

#[test]
fn command_metrics() {
    let p = vec![MetricPattern {
        name: "rps".into(),
        regex: r"rps: ([0-9.]+)".into(),
        unit: "req/s".into(),
        higher_is_better: true,
        kind: crate::stats::MetricKind::Throughput,
    }];
    assert_eq!(command(&p, "x\nrps: 12.5\n", "").unwrap()[0].value, 12.5);
    assert_eq!(command(&p, "", "rps: 3\n").unwrap()[0].value, 3.0);
    assert!(command(&p, "nothing", "")
        .unwrap_err()
        .to_string()
        .contains("matched nothing"));
}

#[test]
fn unknown_kind_lists_the_known_ones() {
    check("netperf2", "", "error: netperf2: unknown kind; expected one of: hackbench, schbench, schbench-json, sysbench, netperf, hammerdb, perf-bench, perf-sched-stats");
}

#[test]
fn schbench_reads_its_json_form_under_its_own_kind() {
    assert_eq!(
        parse("schbench", SCHBENCH_JSON).unwrap(),
        schbench_json(SCHBENCH_JSON).unwrap()
    );
    let text = render(parse("schbench", &fixture("schbench.6.12.txt")));
    assert!(text.contains("wakeup_lat_p99="), "{text}");
}

#[test]
fn impossible_figures_are_refused_everywhere() {
    for bad in ["NaN", "inf", "-5", "-0", "1e300"] {
        let line = format!("TEST RESULT : System achieved {bad} NOPM from 48811 MariaDB TPM");
        let r = parse(
            "hammerdb",
            &HAMMERDB_V4.replace("TEST RESULT : System achieved 21034 NOPM from 48811 MariaDB TPM", &line),
        );
        assert!(r.is_err(), "hammerdb took NOPM {bad}: {r:?}");
        let r = parse("hackbench", &format!("Running\nTime: {bad}\n"));
        assert!(r.is_err(), "hackbench took {bad}: {r:?}");
        let r = parse(
            "netperf",
            &NETPERF_RR.replace("MEAN_LATENCY=31.77", &format!("MEAN_LATENCY={bad}")),
        );
        assert!(r.is_err(), "netperf took {bad}: {r:?}");
    }
    for bad in ["-4", "-0.0", "1e300"] {
        let json = SCHBENCH_JSON.replace(
            "\"wakeup_latency_pct99.0\": 67",
            &format!("\"wakeup_latency_pct99.0\": {bad}"),
        );
        let r = parse("schbench-json", &json);
        assert!(r.is_err(), "schbench JSON took a latency of {bad}: {r:?}");
    }
    // A 10 MB garbled value is quoted short, not echoed whole.
    let long = format!("Time: {}\n", "9x".repeat(5_000_000));
    let e = parse("hackbench", &long).unwrap_err().to_string();
    assert!(
        e.len() < 300 && e.contains("10000000 bytes"),
        "{}",
        &e[..e.len().min(300)]
    );
}

#[test]
fn percentile_labels_keep_their_integer_zeros() {
    assert_eq!(pct_name("50"), "p50");
    assert_eq!(pct_name("50.0"), "p50");
    assert_eq!(pct_name("99.9000"), "p99.9");
    assert_eq!(pct_name("100"), "p100");
    let json = r#"{"int": {"wakeup_latency_pct50": 9, "wakeup_latency_pct90": 20}}"#;
    check(
        "schbench-json",
        json,
        "wakeup_lat_p50=9 us lower\nwakeup_lat_p90=20 us lower",
    );
}

#[test]
fn a_metric_reported_twice_is_an_error_in_every_parser() {
    let json = r#"{"int": {"wakeup_latency_pct50": 9, "wakeup_latency_pct50.0": 10}}"#;
    check(
        "schbench-json",
        json,
        "error: schbench-json: `wakeup_lat_p50` is reported 2 times: the output holds more than one run; give one run per file",
    );
    let two = format!("{}{}", fixture("hackbench.6.12.txt"), fixture("hackbench.6.12.txt"));
    let e = parse("hackbench", &two).unwrap_err().to_string();
    assert!(e.contains("2 `Time:` lines") && e.contains("one run per file"), "{e}");
    for (kind, text) in [
        ("netperf", format!("{NETPERF_RR}{NETPERF_RR}")),
        ("hammerdb", format!("{HAMMERDB_V6}\n{HAMMERDB_V6}")),
        ("sysbench", format!("{0}\n{0}", fixture("sysbench-oltp_read_write.txt"))),
        (
            "perf-bench",
            format!("{0}\n{0}", fixture("perf-bench-pipe.6.1-perf.txt")),
        ),
    ] {
        let e = parse(kind, &text).unwrap_err().to_string();
        assert!(e.contains("more than one run"), "{kind}: {e}");
    }
}
