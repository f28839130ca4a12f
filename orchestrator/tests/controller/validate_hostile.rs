//! `kreg validate` on bad input as a user or a fuzzer writes it: every problem in one pass
//! with FILE:LINE:COL, never a crash, memory bounded (each run is limited to 1 GiB of
//! address space), and 2,000 mutated scenarios from fixed seeds.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kreg_testkit as common;

/// `kreg validate ARGS…` with its address space capped at 1 GiB: a run that tries to
/// allocate more aborts, and the test sees it.
fn validate(args: &[&Path], extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kreg"));
    cmd.arg("validate").args(extra).args(args);
    // SAFETY: setrlimit between fork and exec, on a struct on the stack.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

const LAB: &str = "name: lab\nhosts:\n  sut: { role: sut, transport: { kind: lab, cpus: 2, memory_mib: 1024 } }\nkernels:\n  - { name: deb-6.1, source: { deb: linux-image-amd64 } }\n  - { name: deb-6.12, source: { deb: linux-image-6.12-amd64 } }\nbaseline: deb-6.1\nvariants:\n  - { name: default }\n  - { name: batch, policy: batch, features: [NO_TTWU_QUEUE] }\nworkloads:\n  - { name: hb, kind: hackbench, groups: 1, loops: 100, pipe: true, timeout: 5m }\niterations: 3\n";

#[test]
fn four_mistakes_are_reported_in_one_pass_with_a_suggestion() {
    let dir = common::Scratch::new("v-rounds");
    let file = dir.0.join("four.yaml");
    let text = LAB
        .replace("iterations: 3", "iteration: 3")
        .replace("memory_mib: 1024", "memory_mib: 99999999")
        .replace("baseline: deb-6.1", "baseline: deb-6.2")
        .replace(
            "features: [NO_TTWU_QUEUE]",
            "features: [no-ttwu, NO_TTWU_QUEUE, bad feature]",
        )
        .replace(
            "{ name: deb-6.12, source: { deb: linux-image-6.12-amd64 } }",
            "{ name: deb-6.12, sauce: { deb: x } }",
        );
    std::fs::write(&file, text).unwrap();
    let out = validate(&[&file], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let f = file.display().to_string();
    for want in [
        format!("{f}:3:66: memory_mib: 99999999 is out of range"),
        format!("{f}:6:23: unknown field `sauce` in a kernel; did you mean `source`?"),
        format!("{f}:7:11: baseline `deb-6.2` is not one of the kernels (deb-6.1, deb-6.12); did you mean"),
        format!("{f}:10:46: \"no-ttwu\" is not a sched feature name"),
        format!("{f}:10:70: \"bad feature\" is not a sched feature name"),
        format!("{f}:13:1: unknown field `iteration` in the scenario; did you mean `iterations`?"),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&want)),
            "no line starting {want:?} in:\n{text}"
        );
    }
}

#[test]
fn bombs_bytes_folders_and_second_documents_get_positions() {
    let dir = common::Scratch::new("v-bad");
    // 300 kernels × 300 variants × 1000 iterations, refused before anything expands.
    let mut bomb = String::from("name: bomb\nhosts:\n  sut: { role: sut, transport: { kind: lab } }\nkernels:\n");
    for i in 0..300 {
        bomb.push_str(&format!("  - {{ name: k{i}, source: running }}\n"));
    }
    bomb.push_str("variants:\n");
    for i in 0..300 {
        bomb.push_str(&format!("  - {{ name: v{i} }}\n"));
    }
    bomb.push_str("workloads:\n  - { name: hb, kind: hackbench }\niterations: 1000\n");
    let bomb_file = dir.0.join("bomb.yaml");
    std::fs::write(&bomb_file, &bomb).unwrap();
    let latin1 = dir.0.join("latin1.yaml");
    std::fs::write(&latin1, b"name: caf\xe9\nhosts: {}\n").unwrap();
    let second = dir.0.join("second.yaml");
    std::fs::write(&second, format!("{LAB}---\nname: other\n")).unwrap();
    let huge = dir.0.join("huge.yaml");
    std::fs::write(
        &huge,
        LAB.replace("name: lab", &format!("name: {}", "x".repeat(10 << 20))),
    )
    .unwrap();
    let long_value = dir.0.join("long.yaml");
    std::fs::write(
        &long_value,
        LAB.replace("name: lab", &format!("name: {}", "y".repeat(1 << 20))),
    )
    .unwrap();
    let folder = dir.0.join("folder.yaml");
    std::fs::create_dir_all(&folder).unwrap();
    let out = validate(&[&bomb_file, &latin1, &second, &huge, &long_value, &folder], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line_of = |f: &Path| {
        let f = f.display().to_string();
        text.lines()
            .find(|l| l.starts_with(&format!("{f}:")))
            .unwrap_or_else(|| panic!("nothing about {f} in:\n{text}"))
            .to_string()
    };
    let l = line_of(&bomb_file);
    assert!(
        l.contains(
            ":608:13: the job matrix is 300 kernels × 300 variants × 1 workloads × 1000 iterations = 90000000 jobs"
        ),
        "{l}"
    );
    assert!(
        line_of(&latin1).contains(":1:10: byte 0xe9 is not UTF-8 text"),
        "{text}"
    );
    assert!(
        line_of(&second).contains(":14:1: YAML syntax: a second YAML document"),
        "{text}"
    );
    assert!(line_of(&huge).contains(":1:1: the file is larger than 4 MiB"), "{text}");
    let l = line_of(&long_value);
    assert!(l.len() < 600 && l.contains(":1:7:"), "{}", &l[..l.len().min(600)]);
    assert!(line_of(&folder).contains(":1:1: is a folder"), "{text}");
    for l in text.lines() {
        assert!(l.len() < 600, "a {}-byte line", l.len());
    }
}

#[test]
fn files_a_scenario_names_are_checked() {
    let dir = common::Scratch::new("v-files");
    std::fs::write(dir.0.join("short.token"), "abc\n").unwrap();
    std::fs::write(dir.0.join("ok.token"), "0123456789abcdef0123\nignored\n").unwrap();
    let file = dir.0.join("files.yaml");
    std::fs::write(
        &file,
        "name: files\nhosts:\n  sut: { role: sut, transport: { kind: http, url: \"http://127.0.0.1:1\", token_file: short.token } }\n  ldg: { role: loadgen, transport: { kind: http, url: \"http://127.0.0.1:2\", token_file: missing.token } }\n  ok: { role: loadgen, transport: { kind: http, url: \"http://127.0.0.1:3\", token_file: ok.token } }\nkernels:\n  - { name: mine, source: { path: images/vmlinuz-missing } }\ntools:\n  - { name: t, on: [sut], from: { upload: bin/t } }\nworkloads:\n  - { name: w, kind: command, argv: [t], metrics: { v: { regex: \"(1)\", higher_is_better: true } } }\n",
    )
    .unwrap();
    let out = validate(&[&file], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let f = file.display().to_string();
    for want in [
        format!("{f}:3:85: token_file: "),
        format!("{f}:4:89: token_file: "),
        format!("{f}:7:35: the kernel image: "),
        format!("{f}:9:43: the tool to upload: "),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&want)),
            "no line starting {want:?} in:\n{text}"
        );
    }
    assert!(
        text.contains("shorter than 16 characters") && text.contains("No such file"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 4, "{text}");
    // The file alone is fine.
    let out = validate(&[&file], &["--skip-files"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

use kreg::stats::rng::Rng;

const ODD_VALUES: &[&str] = &[
    "-1",
    "0",
    "99999999999999999999",
    "1e9",
    "''",
    "\"\"",
    "[",
    "{",
    "*a",
    "&a x",
    "!!binary aGk=",
    "~",
    "null",
    "true",
    "[1, [2, [3]]]",
    "{a: {b: {c: d}}}",
    "\"\\u0000\"",
    "é",
    "💥",
    "- x",
    ": :",
    "1000000",
    "5h",
    "0s",
];

fn mutate(text: &str, rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(4) {
        let n = lines.len().max(1);
        match rng.below(9) {
            0 => {
                let i = rng.below(n);
                if i < lines.len() {
                    lines.remove(i);
                }
            }
            1 => {
                let i = rng.below(n);
                if i < lines.len() {
                    let l = lines[i].clone();
                    for _ in 0..1 + rng.below(3) {
                        lines.insert(i, l.clone());
                    }
                }
            }
            2 => {
                let (a, b) = (rng.below(n), rng.below(n));
                if a < lines.len() && b < lines.len() {
                    lines.swap(a, b);
                }
            }
            3 | 4 => {
                // A value replaced: after the first `: ` of a line.
                let i = rng.below(n);
                if let Some(l) = lines.get_mut(i) {
                    if let Some(at) = l.find(": ") {
                        let v = ODD_VALUES[rng.below(ODD_VALUES.len())];
                        let end = l[at + 2..].find([',', '}']).map_or(l.len(), |e| at + 2 + e);
                        l.replace_range(at + 2..end, v);
                    }
                }
            }
            5 => {
                let i = rng.below(n);
                if let Some(l) = lines.get_mut(i) {
                    if rng.below(2) == 0 {
                        l.insert_str(0, "  ");
                    } else if l.starts_with(' ') {
                        l.remove(0);
                    }
                }
            }
            6 => {
                // A key misspelt.
                let i = rng.below(n);
                if let Some(l) = lines.get_mut(i) {
                    if let Some(at) = l.find(':') {
                        if at > 0 {
                            l.insert(at - 1, 'x');
                        }
                    }
                }
            }
            7 => lines
                .push(["---", "iterations: 1000", "variants: [{name: a}, {name: b}]", "\t- tab"][rng.below(4)].into()),
            _ => {
                let i = rng.below(n);
                if let Some(l) = lines.get_mut(i) {
                    let cut = rng.below(l.len() + 1);
                    if l.is_char_boundary(cut) {
                        l.truncate(cut);
                    }
                }
            }
        }
    }
    let mut bytes = lines.join("\n").into_bytes();
    if rng.below(20) == 0 && !bytes.is_empty() {
        let i = rng.below(bytes.len());
        bytes[i] = 0xff;
    }
    bytes
}

#[test]
fn two_thousand_mutated_scenarios_exit_0_or_1_with_positions() {
    let dir = common::Scratch::new("v-fuzz");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
    let mut seeds: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    seeds.sort();
    seeds.push(LAB.to_string());
    let mut rng = Rng::new(0x6b72_6567_7661_6c31);
    let (mut ok, mut refused) = (0, 0);
    for batch in 0..40 {
        let files: Vec<PathBuf> = (0..50)
            .map(|i| {
                let seed = &seeds[rng.below(seeds.len())];
                let p = dir.0.join(format!("m{batch}-{i}.yaml"));
                std::fs::write(&p, mutate(seed, &mut rng)).unwrap();
                p
            })
            .collect();
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let out = validate(&refs, &["--skip-files"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "batch {batch}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        for f in &files {
            let name = f.display().to_string();
            let mine: Vec<&str> = text.lines().filter(|l| l.starts_with(&format!("{name}:"))).collect();
            assert!(!mine.is_empty(), "nothing said about {name}");
            let lines_in_file = std::fs::read(f).unwrap().split(|b| *b == b'\n').count();
            if mine.len() == 1 && mine[0].starts_with(&format!("{name}: ok (")) {
                ok += 1;
                continue;
            }
            refused += 1;
            for l in mine {
                let rest = &l[name.len() + 1..];
                let mut parts = rest.splitn(3, ':');
                let line: usize = parts
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|_| panic!("no position: {l}"));
                let col: usize = parts
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|_| panic!("no column: {l}"));
                assert!(
                    line >= 1 && line <= lines_in_file + 1 && col >= 1,
                    "{l} ({lines_in_file} lines)"
                );
                assert!(l.len() < 600, "a {}-byte message", l.len());
            }
        }
    }
    eprintln!("2000 mutated scenarios: {ok} valid, {refused} refused");
    assert!(ok > 0 && refused > 1000, "{ok} valid, {refused} refused");
}

/// Messages that hold newlines (a regex library's multi-line error; a key quoted with
/// `\n` in it) stay on their `FILE:LINE:COL:` line: every line of the answer is one.
#[test]
fn every_message_stays_on_its_line() {
    let dir = common::Scratch::new("v-oneline");
    let file = dir.0.join("multi.yaml");
    let text = LAB.replace(
        "  - { name: hb, kind: hackbench, groups: 1, loops: 100, pipe: true, timeout: 5m }",
        "  - name: probe\n    kind: command\n    argv: [true]\n    metrics: { value: { regex: 'value: ([0-9.]+', unit: '', higher_is_better: true } }\n    \"two\\nlines\\x1b[2J\": 1",
    );
    std::fs::write(&file, text).unwrap();
    let out = validate(&[&file], &[]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{}:", file.display());
    assert!(said.lines().count() >= 2, "{said}");
    for line in said.lines() {
        assert!(
            line.starts_with(&prefix),
            "a line without its position: {line:?} in\n{said}"
        );
    }
    assert!(said.contains("regex") && said.contains("two\\nlines\\x1b[2J"), "{said}");
    assert!(!said.contains('\u{1b}'), "{said:?}");
}
