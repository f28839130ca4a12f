//! The documentation as a reader meets it: the README a short tour, every relative link
//! leading somewhere (a page, and a heading of it when it names one), every YAML example a
//! scenario (or a pool file) the loader accepts, and every `kreg` command line shown one
//! that `kreg … --help` knows, with each option it shows.

use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every page under docs/, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out.into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The fenced blocks of `text` whose info string is `lang`, with the line each starts on.
pub(super) fn blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String, bool)> = None;
    for (i, l) in text.lines().enumerate() {
        match (&mut cur, l.starts_with("```")) {
            (None, true) => cur = Some((i + 1, String::new(), l.trim_start_matches('`').trim() == lang)),
            (Some((start, body, wanted)), true) => {
                if *wanted {
                    out.push((*start, std::mem::take(body)));
                }
                cur = None;
            }
            (Some((_, body, _)), false) => {
                body.push_str(l);
                body.push('\n');
            }
            (None, false) => {}
        }
    }
    out
}

/// The text outside fenced blocks and inline code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut inline = false;
            for part in l.split('`') {
                if !inline {
                    out.push_str(part);
                }
                inline = !inline;
            }
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, spaces to dashes, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn the_readme_is_a_tour_and_every_page_has_a_place_in_the_index() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines");
    assert!(readme.contains("bash scripts/demo.sh") && readme.contains("bash scripts/test.sh"));
    let index = std::fs::read_to_string(root().join("docs/index.md")).unwrap();
    for (p, _) in pages().iter().skip(1) {
        let name = p.file_name().unwrap().to_str().unwrap();
        if name != "index.md" {
            assert!(
                index.contains(&format!("]({name})")),
                "docs/index.md does not list {name}"
            );
        }
    }
}

#[test]
fn every_relative_link_leads_to_a_page_and_its_heading() {
    let mut broken = Vec::new();
    for (page, text) in pages() {
        let prose = prose(&text);
        for (i, _) in prose.match_indices("](") {
            let rest = &prose[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let Ok(linked) = std::fs::read_to_string(&path) else {
                if !path.is_dir() {
                    broken.push(format!("{}: {target}: no such file", page.display()));
                }
                continue;
            };
            if !anchor.is_empty() {
                let headings: Vec<String> = prose_headings(&linked);
                if !headings.iter().any(|h| slug(h) == anchor) {
                    broken.push(format!("{}: {target}: no heading #{anchor}", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// The headings outside fenced blocks, their `code` kept as text (as the forge's anchors
/// keep it).
fn prose_headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.starts_with("```") {
                fenced = !fenced;
            }
            !fenced && l.starts_with('#')
        })
        .map(|l| l.trim_start_matches('#').replace('`', ""))
        .collect()
}

/// What a fragment is put into: two hosts, a kernel from git, two variants, a workload.
const BASE: &str = "name: docs-example
hosts:
  sut: { role: sut, transport: { kind: ssh, address: sut1 } }
  ldg: { role: loadgen, transport: { kind: ssh, address: ldg1 } }
kernels:
  - { name: tree, source: { git: /src/linux, ref: v6.9 }, config: { base: running } }
variants:
  - { name: default }
  - { name: batch, policy: batch }
workloads:
  - { name: hb, kind: hackbench }
";

/// The top-level keys a YAML text sets (lines that start a key at column 0).
fn top_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with([' ', '#', '-']) && l.contains(':'))
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect()
}

/// `fragment` with the base's other top-level keys: the fragment's replace the base's.
fn completed(fragment: &str) -> String {
    let mine = top_keys(fragment);
    let mut out = String::new();
    let mut keep = true;
    for l in BASE.lines() {
        if !l.starts_with(' ') {
            keep = !top_keys(l).iter().any(|k| mine.contains(k));
        }
        if keep {
            out.push_str(l);
            out.push('\n');
        }
    }
    out + fragment
}

#[test]
fn every_yaml_example_is_accepted_by_the_loader() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for (page, text) in pages() {
        for (line, block) in blocks(&text, "yaml") {
            seen += 1;
            let keys = top_keys(&block);
            let at = format!("{}:{line}", page.display());
            let diags = if keys == ["machines"] {
                kreg::scenario::pool_from_str(&block, Path::new("/")).err()
            } else {
                let whole = keys.contains(&"name".to_string());
                let text = if whole { block.clone() } else { completed(&block) };
                kreg::scenario::from_str(&text, Path::new("/")).err()
            };
            if let Some(d) = diags {
                let said: Vec<String> = d.iter().map(|d| d.render("example")).collect();
                bad.push(format!("{at}:\n{}\n{}", said.join("\n"), block));
            }
        }
    }
    assert!(seen >= 8, "only {seen} YAML examples found");
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// `kreg` followed by `args`, its stdout when it succeeds.
fn kreg(args: &[&str]) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_kreg")).args(args).output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_command_line_shown_is_one_kreg_knows() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for (page, text) in pages() {
        for (line, block) in blocks(&text, "sh") {
            for (j, l) in block.lines().enumerate() {
                let l = l.split(" # ").next().unwrap().trim();
                let Some(rest) = l
                    .strip_prefix("kreg ")
                    .or_else(|| l.strip_prefix("./target/debug/kreg "))
                else {
                    continue;
                };
                seen += 1;
                let at = format!("{}:{}: {l}", page.display(), line + 1 + j);
                // The subcommand path: words while they name a subcommand.
                let mut path: Vec<&str> = Vec::new();
                // A subcommand shown as optional (`[list --state …]`) is one too.
                for w in rest.split_whitespace().map(|w| w.trim_start_matches('[')) {
                    let mut p = path.clone();
                    p.extend([w, "--help"]);
                    if w.starts_with('-') || w.contains(['|', '[', ']', '.', '/']) || kreg(&p).is_none() {
                        break;
                    }
                    path.push(w);
                }
                let mut p = path.clone();
                p.push("--help");
                let Some(help) = kreg(&p) else {
                    bad.push(format!("{at}: `kreg {} --help` fails", path.join(" ")));
                    continue;
                };
                if path.is_empty() {
                    bad.push(format!("{at}: no subcommand"));
                    continue;
                }
                for w in rest.split(|c: char| c.is_whitespace() || "[]|=".contains(c)) {
                    let opt = w.trim_end_matches([',', ')']);
                    if opt.starts_with("--") && opt.len() > 2 && !help.contains(opt) {
                        bad.push(format!("{at}: `kreg {}` has no {opt}", path.join(" ")));
                    }
                }
            }
        }
    }
    assert!(seen >= 30, "only {seen} command lines found");
    assert!(bad.is_empty(), "{bad:#?}");
}
