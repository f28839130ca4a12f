//! The Kconfig reader on the real Kconfig files of Debian's linux-source-6.1, and the
//! message a dropped option gets from the real config step (tinyconfig, then
//! olddefconfig; nothing is compiled).

use std::path::{Path, PathBuf};
use std::process::Command;

use kreg::kconfig;

use common::{fresh_db, kreg, Agent, Scratch};
use kreg_testkit as common;

const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

fn tarball() -> &'static Path {
    let p = Path::new(TARBALL);
    assert!(p.exists(), "{TARBALL} is missing: apt-get install linux-source-6.1");
    p
}

/// Every Kconfig file under `dir`, as (path, text).
fn kconfig_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap().to_string_lossy().starts_with("Kconfig") {
                out.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out
}

/// An expression has symbols, operators, parentheses, quoted strings and `$(…)` macros,
/// never two words side by side (prose).
fn looks_like_expression(e: &str) -> bool {
    let mut plain = String::new();
    let (mut depth, mut quoted) = (0, false);
    let chars: Vec<char> = e.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        match c {
            '"' if depth == 0 => quoted = !quoted,
            '$' if chars.get(i + 1) == Some(&'(') => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth > 0 || quoted => {}
            c => plain.push(*c),
        }
    }
    plain
        .split(|c| "&|!()=<>".contains(c))
        .all(|piece| piece.split_whitespace().count() <= 1)
}

#[test]
fn every_dependency_read_from_the_6_1_tree_is_an_expression() {
    let dir = Scratch::new("kconfig61");
    let status = Command::new("tar")
        .arg("-xf")
        .arg(tarball())
        .arg("-C")
        .arg(&dir.0)
        .args(["--strip-components=1", "--wildcards", "*Kconfig*"])
        .status()
        .unwrap();
    assert!(status.success());
    let files = kconfig_files(&dir.0);
    assert!(files.len() > 1000, "only {} Kconfig files", files.len());
    assert_eq!(
        kconfig::depends_on(&files, "SCHEDSTATS").as_deref(),
        Some("DEBUG_KERNEL && PROC_FS")
    );
    // Each symbol defined in the core folders, read from its own file: no prose.
    let mut checked = 0;
    let mut prose = Vec::new();
    for (path, text) in &files {
        let core = [
            "/kernel/",
            "/lib/",
            "/init/",
            "/mm/",
            "/arch/x86/",
            "/drivers/cpufreq/",
            "/net/core/",
        ];
        if !core.iter().any(|c| path.contains(c)) {
            continue;
        }
        let symbols: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                matches!(w.next(), Some("config" | "menuconfig"))
                    .then(|| w.next())
                    .flatten()
            })
            .collect();
        let one = vec![(path.clone(), text.clone())];
        for s in symbols {
            if let Some(d) = kconfig::depends_on(&one, s).filter(|d| !d.starts_with("nothing (")) {
                checked += 1;
                if !looks_like_expression(&d) {
                    prose.push(format!("{path}: {s}: {d}"));
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} symbols checked");
    assert!(
        prose.is_empty(),
        "{} of {checked} read as prose:\n{}",
        prose.len(),
        prose.join("\n")
    );
}

#[tokio::test]
async fn a_dropped_option_names_only_what_it_depends_on() {
    let db = fresh_db("kconfig61").await;
    let agent = Agent::start();
    let dir = Scratch::new("kconfig61run");
    let scenario = format!(
        r#"
name: dropped-option
{hosts}kernels:
  - name: tiny61
    source: {{ tarball: {TARBALL} }}
    config: {{ base: tinyconfig, set: [CONFIG_SCHEDSTATS=y] }}
workloads:
  - {{ name: w, kind: command, argv: [true], metrics: {{ v: {{ regex: "(1)", higher_is_better: true }} }} }}
"#,
        hosts = agent.hosts_yaml(),
    );
    tarball();
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, scenario).unwrap();
    let out = kreg(&db, &dir.0)
        .env("KREG_CACHE_DIR", dir.0.join("cache"))
        .arg("run")
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let error: String = sqlx::query_scalar("SELECT error FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let at = error
        .find("CONFIG_SCHEDSTATS=y did not survive olddefconfig (now not set); it depends on: ")
        .unwrap_or_else(|| panic!("{error}"));
    let deps = error[at..].split("it depends on: ").nth(1).unwrap().trim_end();
    let re = regex::Regex::new(r"^DEBUG_KERNEL \[=[ymn]\] && PROC_FS \[=[ymn]\]$").unwrap();
    assert!(re.is_match(deps), "{error}");
}
