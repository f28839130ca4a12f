//! Mutated tool outputs, from fixed seeds: every parser answers each with an error or with
//! finite, non-negative, plausible figures under names reported once, and never panics.

use super::parse_output as parse;
use super::parse_tests::{fixture, HAMMERDB_V4, HAMMERDB_V6, NETPERF_RR, SCHBENCH_JSON};
use crate::parse::plausible;

use crate::stats::rng::Rng;

const ODD_NUMBERS: &[&str] = &[
    "NaN",
    "nan",
    "inf",
    "-inf",
    "-1",
    "-0",
    "-0.0",
    "1e300",
    "1e16",
    "99999999999999999999999",
    "",
    "0x10",
    "1,5",
    "+3",
    "1e-320",
    "4.",
    ".5",
    "1e",
    "--2",
    "0",
    "Infinity",
    "3.4028236e38",
];

/// Byte ranges of the numbers in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut t = text.to_string();
    for _ in 0..1 + rng.below(3) {
        let lines: Vec<String> = t.lines().map(str::to_string).collect();
        let n = lines.len();
        t = match rng.below(10) {
            0 | 1 => {
                let nums = numbers(&t);
                if nums.is_empty() {
                    t
                } else {
                    let (a, b) = nums[rng.below(nums.len())];
                    let with = if rng.below(4) == 0 {
                        (rng.next_u64() % 1_000_000_000).to_string()
                    } else {
                        ODD_NUMBERS[rng.below(ODD_NUMBERS.len())].to_string()
                    };
                    format!("{}{with}{}", &t[..a], &t[b..])
                }
            }
            2 => {
                let mut l = lines;
                if n > 0 {
                    l.remove(rng.below(n));
                }
                l.join("\n")
            }
            3 => {
                let mut l = lines;
                if n > 0 {
                    let i = rng.below(n);
                    let dup = l[i].clone();
                    l.insert(rng.below(n + 1), dup);
                }
                l.join("\n")
            }
            4 => {
                let mut cut = rng.below(t.len() + 1);
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t[..cut].to_string()
            }
            5 => {
                let mut bytes: Vec<char> = t.chars().collect();
                if !bytes.is_empty() {
                    let i = rng.below(bytes.len());
                    bytes[i] = (32 + rng.below(95) as u8) as char;
                }
                bytes.into_iter().collect()
            }
            6 => format!("{t}\n{t}"),
            7 => {
                let mut l = lines;
                if n > 1 {
                    let (a, b) = (rng.below(n), rng.below(n));
                    l.swap(a, b);
                }
                l.join("\n")
            }
            8 => {
                let mut l = lines;
                let junk = [
                    "Time: ",
                    "min=, max=",
                    "THROUGHPUT=",
                    "TEST RESULT : System achieved",
                    "{",
                    "Latency (ms):",
                    "  avg:",
                ];
                l.insert(rng.below(n + 1), junk[rng.below(junk.len())].to_string());
                l.join("\n")
            }
            _ => {
                let mut l = lines;
                l.insert(rng.below(n + 1), "x".repeat(100_000));
                l.join("\n")
            }
        };
    }
    t
}

/// Runs `cases` mutations of `input` through `kind`; returns (parsed, refused).
fn fuzz(kind: &str, input: &str, seed: u64, cases: usize) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..cases {
        let text = mutate(input, &mut rng);
        let got = std::panic::catch_unwind(|| parse(kind, &text))
            .unwrap_or_else(|_| panic!("{kind} panicked on case {case} (seed {seed}):\n{text}"));
        match got {
            Ok(metrics) => {
                ok += 1;
                assert!(!metrics.is_empty(), "{kind} case {case}: no metrics and no error");
                for m in &metrics {
                    assert!(
                        plausible(m.value),
                        "{kind} case {case}: {} = {} from:\n{text}",
                        m.name,
                        m.value
                    );
                    assert!(!m.name.is_empty());
                    assert_eq!(
                        metrics.iter().filter(|o| o.name == m.name).count(),
                        1,
                        "{kind} case {case}: {} twice",
                        m.name
                    );
                }
            }
            Err(e) => {
                refused += 1;
                let msg = e.to_string();
                assert!(msg.len() < 600, "{kind} case {case}: a {}-byte error", msg.len());
            }
        }
    }
    (ok, refused)
}

#[test]
fn two_thousand_mutations_per_parser() {
    let cases: Vec<(&str, String)> = vec![
        ("hackbench", fixture("hackbench.6.12.txt")),
        ("hackbench", fixture("hackbench-threads-pipe.6.1.txt")),
        ("schbench", fixture("schbench.6.12.txt")),
        ("schbench", fixture("schbench.6.1.txt")),
        ("schbench", SCHBENCH_JSON.to_string()),
        ("schbench-json", SCHBENCH_JSON.to_string()),
        ("sysbench", fixture("sysbench-oltp_read_write.txt")),
        ("netperf", NETPERF_RR.to_string()),
        ("hammerdb", HAMMERDB_V4.to_string()),
        ("hammerdb", HAMMERDB_V6.to_string()),
        ("perf-bench", fixture("perf-bench-messaging.6.1-perf.txt")),
        ("perf-bench", fixture("perf-bench-pipe.6.1-perf.txt")),
    ];
    for (i, (kind, input)) in cases.iter().enumerate() {
        let (ok, refused) = fuzz(kind, input, 0x6b72_6567_0000 + i as u64, 2000);
        eprintln!("{kind} (input {i}): 2000 mutations, {ok} parsed, {refused} refused");
        // Both paths are exercised: the mutations are neither all harmless nor all fatal.
        assert!(ok > 0 && refused > 0, "{kind}: {ok} parsed, {refused} refused");
    }
}
