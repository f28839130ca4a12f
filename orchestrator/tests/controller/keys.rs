//! docs/keys.md against the loaders' own key lists, both ways: every mapping the scenario
//! and pool loaders read (`kreg::scenario::keys::SECTIONS`, the lists `Cx::map` reads with) has its
//! part, headed by its path, whose table lists exactly its keys; the replay file's keys are
//! asked of `kreg bench bisect --replay` itself (serde names what it takes when it refuses a
//! key). Every key of a part appears in one of the part's examples, and each example is
//! loaded (the YAML ones by `docs::every_yaml_example_is_accepted_by_the_loader`, the JSON
//! ones here, by `kreg bench bisect`).

use std::collections::BTreeSet;
use std::process::Command;

use super::docs::{blocks, root};

/// One part of the page: its heading's path and kind (`workloads[]` kind `hackbench`), the
/// keys of its table, and its examples' text by language.
struct Part {
    path: String,
    kind: Option<String>,
    keys: Vec<String>,
    line: usize,
    yaml: String,
    json: Vec<String>,
}

/// The `code` spans of a line, in order.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn parts() -> Vec<Part> {
    let text = std::fs::read_to_string(root().join("docs/keys.md")).unwrap();
    let mut out: Vec<Part> = Vec::new();
    let mut fenced = false;
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = l.strip_prefix("### ") {
            let s = spans(h);
            assert!(
                !s.is_empty(),
                "docs/keys.md:{}: a part's heading names its path in `code`",
                i + 1
            );
            out.push(Part {
                path: s[0].to_string(),
                kind: s.get(1).map(|k| k.to_string()),
                keys: Vec::new(),
                line: i + 1,
                yaml: String::new(),
                json: Vec::new(),
            });
        } else if l.starts_with("## ") {
            continue;
        } else if let (Some(p), Some(row)) = (out.last_mut(), l.strip_prefix("| `")) {
            p.keys.push(row.split('`').next().unwrap().to_string());
        }
    }
    // Each part's examples: the fenced blocks between its heading and the next one.
    let starts: Vec<usize> = out.iter().map(|p| p.line).collect();
    for lang in ["yaml", "json"] {
        for (line, block) in blocks(&text, lang) {
            let Some(i) = starts.iter().rposition(|&s| s < line) else {
                continue;
            };
            match lang {
                "yaml" => out[i].yaml.push_str(&block),
                _ => out[i].json.push(block),
            }
        }
    }
    out
}

/// What the page says a section holds against what the loader takes: both differences.
fn compare(what: &str, documented: &[String], accepted: &[&str], bad: &mut Vec<String>) {
    let doc: BTreeSet<&str> = documented.iter().map(String::as_str).collect();
    let acc: BTreeSet<&str> = accepted.iter().copied().collect();
    let missing: Vec<&&str> = acc.difference(&doc).collect();
    let extra: Vec<&&str> = doc.difference(&acc).collect();
    if !missing.is_empty() {
        bad.push(format!(
            "{what}: the loader takes {missing:?}, which docs/keys.md does not list"
        ));
    }
    if !extra.is_empty() {
        bad.push(format!(
            "{what}: docs/keys.md lists {extra:?}, which the loader refuses"
        ));
    }
    if doc.len() != documented.len() {
        bad.push(format!("{what}: a key listed twice in docs/keys.md"));
    }
}

/// Every key of `p` in one of its examples (`key:` in YAML, `"key"` in JSON).
fn exemplified(p: &Part, bad: &mut Vec<String>) {
    let json = p.json.join("\n");
    for k in &p.keys {
        let in_yaml = p.yaml.match_indices(&format!("{k}:")).any(|(i, _)| {
            i == 0 || !(p.yaml.as_bytes()[i - 1].is_ascii_alphanumeric() || p.yaml.as_bytes()[i - 1] == b'_')
        });
        if !in_yaml && !json.contains(&format!("\"{k}\"")) {
            bad.push(format!("docs/keys.md:{}: no example of `{k}` in `{}`", p.line, p.path));
        }
    }
}

#[test]
fn every_key_the_loaders_take_is_documented_and_every_documented_key_is_taken() {
    let parts = parts();
    let mut bad = Vec::new();
    for s in kreg::scenario::keys::SECTIONS {
        let Some(p) = parts.iter().find(|p| p.path == s.path && p.kind.is_none()) else {
            bad.push(format!("docs/keys.md has no part `{}` ({} file)", s.path, s.file));
            continue;
        };
        compare(s.path, &p.keys, s.keys, &mut bad);
        for (kind, keys) in s.kinds {
            match parts
                .iter()
                .find(|p| p.path == s.path && p.kind.as_deref() == Some(*kind))
            {
                Some(p) => compare(&format!("{} kind {kind}", s.path), &p.keys, keys, &mut bad),
                None => bad.push(format!("docs/keys.md has no part `{}` kind `{kind}`", s.path)),
            }
        }
        let documented_kinds = parts.iter().filter(|p| p.path == s.path && p.kind.is_some());
        for p in documented_kinds {
            let kind = p.kind.as_deref().unwrap();
            if !s.kinds.iter().any(|(k, _)| *k == kind) {
                bad.push(format!("docs/keys.md:{}: `{}` has no kind `{kind}`", p.line, s.path));
            }
        }
    }
    let replay = replay_sections();
    for p in &parts {
        let known = kreg::scenario::keys::SECTIONS.iter().any(|s| s.path == p.path)
            || replay
                .iter()
                .any(|(path, kind, _)| *path == p.path && *kind == p.kind.as_deref());
        if !known {
            bad.push(format!(
                "docs/keys.md:{}: `{}` is no mapping a loader reads",
                p.line, p.path
            ));
        }
        exemplified(p, &mut bad);
    }
    for (path, kind, accepted) in &replay {
        match parts.iter().find(|p| p.path == *path && p.kind.as_deref() == *kind) {
            Some(p) => {
                let acc: Vec<&str> = accepted.iter().map(String::as_str).collect();
                compare(&format!("replay {path} {kind:?}"), &p.keys, &acc, &mut bad);
            }
            None => bad.push(format!("docs/keys.md has no part `{path}` {kind:?}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `kreg bench bisect --replay` of `json`: whether it was taken, and what it said.
fn replay(json: &str) -> (bool, String) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("kreg-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{n}.json"));
    std::fs::write(&file, json).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["bench", "bisect", "--trials", "1", "--replay"])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The names serde lists after "expected" when `json` is refused for its key or variant
/// `zz_probe` (`expected one of `a`, `b``, `expected `a` or `b``, `expected `a``).
fn refused_for_probe(json: &str) -> Vec<String> {
    let (ok, said) = replay(json);
    assert!(!ok, "a replay file with zz_probe was taken: {json}");
    let at = said
        .find("`zz_probe`, expected")
        .unwrap_or_else(|| panic!("kreg bench bisect did not refuse zz_probe by name: {said}"));
    let rest = &said[at + "`zz_probe`, expected".len()..];
    let list = rest.split(" at line").next().unwrap().lines().next().unwrap();
    spans(list).into_iter().map(str::to_string).collect()
}

/// The replay file's mappings, as `kreg bench bisect --replay` takes them: (path, kind,
/// keys). A commit needs `mean` and `sd`, so those two are given beside the probe.
fn replay_sections() -> Vec<(&'static str, Option<&'static str>, Vec<String>)> {
    let commit = r#"{ "mean": 100, "sd": 1 }"#;
    let range = |c: &str| format!(r#"{{ "commits": [ {c}, {commit} ] }}"#);
    let probe = |json: String| refused_for_probe(&json);
    let kinds = probe(range(r#"{ "mean": 100, "sd": 1, "dist": { "kind": "zz_probe" } }"#));
    assert_eq!(kinds, ["normal", "lognormal", "bimodal"], "the kinds of dist");
    // Every kind refuses a key none takes (serde alone would let `normal` take any).
    for kind in &kinds {
        let (ok, said) = replay(&range(&format!(
            r#"{{ "mean": 100, "sd": 1, "dist": {{ "kind": "{kind}", "zz_probe": 1 }} }}"#
        )));
        assert!(
            !ok && said.contains("`zz_probe`"),
            "dist kind {kind} took zz_probe: {said}"
        );
    }
    vec![
        (
            "replay",
            None,
            probe(format!(r#"{{ "commits": [ {commit}, {commit} ], "zz_probe": 1 }}"#)),
        ),
        (
            "commits[]",
            None,
            probe(range(r#"{ "mean": 100, "sd": 1, "zz_probe": 1 }"#)),
        ),
        (
            "commits[].dist",
            None,
            probe(range(
                r#"{ "mean": 100, "sd": 1, "dist": { "kind": "bimodal", "share": 0.2, "gap": 0.1, "zz_probe": 1 } }"#,
            )),
        ),
    ]
}

#[test]
fn every_json_example_of_the_keys_page_is_a_replay_file_kreg_takes() {
    let mut seen = 0;
    for p in parts() {
        for json in &p.json {
            seen += 1;
            let (ok, said) = replay(json);
            assert!(
                ok,
                "docs/keys.md:{} ({}): kreg bench bisect --replay refused\n{json}\n{said}",
                p.line, p.path
            );
        }
    }
    assert!(seen >= 3, "only {seen} JSON examples");
}
