//! ARCHITECTURE.md's boundaries that the crate graph alone does not hold, checked on the
//! sources and manifests themselves.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The crate names of a manifest's `[dependencies]` table (not dev- or build-).
fn dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).expect("a manifest");
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            out.push(name.trim().to_string());
        }
    }
    out
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("a source folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).expect("a source file");
                out.push((p, text));
            }
        }
    }
    out
}

#[test]
fn the_core_has_no_runtime_database_or_http_crate_and_the_controller_no_agent() {
    let core = dependencies(&root().join("core/Cargo.toml"));
    assert!(core.contains(&"kreg-protocol".to_string()), "{core:?}");
    for banned in ["tokio", "sqlx", "reqwest", "axum", "hyper", "russh", "kreg-agent"] {
        assert!(
            !core.iter().any(|d| d == banned),
            "kreg-core depends on {banned}: {core:?}"
        );
    }
    let kreg = dependencies(&root().join("orchestrator/Cargo.toml"));
    assert!(kreg.contains(&"kreg-core".to_string()) && kreg.contains(&"kreg-protocol".to_string()));
    assert!(
        !kreg.iter().any(|d| d == "kreg-agent"),
        "kreg depends on the agent: {kreg:?}"
    );
    let protocol = dependencies(&root().join("protocol/Cargo.toml"));
    let text = std::fs::read_to_string(root().join("protocol/Cargo.toml")).unwrap();
    for runtime in ["tokio", "reqwest", "axum", "hyper"] {
        let line = text.lines().find(|l| l.starts_with(&format!("{runtime} ")));
        assert!(
            line.is_some_and(|l| l.contains("optional = true")),
            "kreg-protocol's {runtime} must be behind a feature: {protocol:?}"
        );
    }
}

#[test]
fn only_config_reads_the_environment() {
    let mut found = Vec::new();
    for dir in ["core/src", "orchestrator/src"] {
        for (path, text) in sources(&root().join(dir)) {
            if path.ends_with("config.rs") || path.ends_with("boundaries.rs") {
                continue;
            }
            // Test modules make their own temporary folders; production code asks config.
            let production = text.split("#[cfg(test)]").next().unwrap_or_default();
            for needle in ["env::var", "env::temp_dir", "env::home_dir", "env::split_paths"] {
                if production.contains(needle) {
                    found.push(format!("{}: {needle}", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "environment read outside config: {found:#?}");
}

/// The database is written and read in `store/` only: no query, no SQL text elsewhere in the
/// controller (the benches' included). The dashboard's and the reports' views (`view/`,
/// `web/`) read the store and core, never the driver (`engine`).
#[test]
fn sql_only_in_the_store_and_the_views_do_not_import_the_engine() {
    let src = root().join("orchestrator/src");
    let mut found = Vec::new();
    for (path, text) in sources(&src) {
        let rel = path.strip_prefix(&src).unwrap().to_path_buf();
        if rel.starts_with("store") || rel.ends_with("boundaries.rs") {
            continue;
        }
        let sql = [
            "sqlx::query",
            "query_as(",
            "query_scalar(",
            "\"SELECT ",
            "\"INSERT INTO ",
            "\"UPDATE ",
            "\"DELETE FROM ",
            "DATABASE {",
            "\"WITH ",
        ];
        for needle in sql {
            if text.contains(needle) {
                found.push(format!("{}: {needle}", rel.display()));
            }
        }
        let view = rel.starts_with("view") || rel.starts_with("web");
        if view && (text.contains("crate::engine") || text.contains("kreg::engine")) {
            found.push(format!("{}: imports the engine", rel.display()));
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
