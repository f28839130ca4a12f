//! A scenario file from disk (the I/O edge of the pure `scenario` module): read within a
//! size limit, checked to be UTF-8 with the position of the first bad byte, validated, and
//! the files it names checked. Every problem is a `FILE:LINE:COL: message`.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::scenario::{self, Diagnostic, Scenario};

/// The largest scenario file read (a real one is a few KB).
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

fn at(line: usize, col: usize, message: impl Into<String>) -> Diagnostic {
    Diagnostic {
        line,
        col,
        message: message.into(),
    }
}

/// Line and column (1-based, in characters) of byte offset `at` in `bytes`.
fn position(bytes: &[u8], at_byte: usize) -> (usize, usize) {
    let before = &bytes[..at_byte];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, col)
}

/// The text of a scenario file, or the one problem that keeps it from being read.
pub fn read_text(file: &Path) -> Result<String, Diagnostic> {
    let meta = std::fs::metadata(file).map_err(|e| at(1, 1, format!("cannot read the file: {e}")))?;
    if meta.is_dir() {
        return Err(at(1, 1, "is a folder, not a scenario file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| at(1, 1, format!("cannot read the file: {e}")))?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(at(
            1,
            1,
            format!(
                "the file is larger than {} MiB; a scenario is a few KB",
                MAX_SCENARIO_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let (line, col) = position(bytes, bad);
        at(
            line,
            col,
            format!(
                "byte 0x{:02x} is not UTF-8 text: save the scenario as UTF-8",
                bytes[bad]
            ),
        )
    })
}

/// Each file the scenario names must be a readable regular file; a token file must hold a
/// token the agent would take.
pub fn check_files(s: &Scenario) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for f in &s.files {
        let shown = f.path.display();
        let problem = match std::fs::metadata(&f.path) {
            Err(e) => Some(format!("{}: {shown}: {e}", f.what)),
            Ok(m) if !m.is_file() => Some(format!("{}: {shown} is not a regular file", f.what)),
            Ok(_) => match std::fs::File::open(&f.path) {
                Err(e) => Some(format!("{}: {shown}: {e}", f.what)),
                Ok(_) if f.what == "token_file" => std::fs::read_to_string(&f.path)
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        kreg_protocol::wire::Token::from_file_text(&t)
                            .map(drop)
                            .map_err(|e| e.to_string())
                    })
                    .err()
                    .map(|e| format!("token_file: {shown}: {e}")),
                Ok(_) => None,
            },
        };
        if let Some(p) = problem {
            out.push(at(f.line, f.col, p));
        }
    }
    out
}

/// A scenario's text, read from `source` (a file, or the path a run stored): parsed and
/// validated, relative paths taken from the file's folder and `~/` from the user's home.
pub fn parse(text: &str, source: &Path) -> Result<Scenario, Vec<Diagnostic>> {
    tracing::debug!("scenario parsed: {}", source.display());
    let base = source.parent().unwrap_or(Path::new("."));
    let mut s = scenario::from_str(text, base)?;
    s.expand_home(&crate::config::home());
    Ok(s)
}

/// The scenarios of runs this process parsed, by (source path, stored text).
type Parsed = HashMap<(String, String), Result<Scenario, crate::Error>>;
static STORED: Mutex<Option<Parsed>> = Mutex::new(None);
static STORED_PARSES: AtomicUsize = AtomicUsize::new(0);
const STORED_KEPT: usize = 256;

/// The scenario a run was created from (its stored text, not today's file), or why it no
/// longer loads (each problem with its position, on one line). Parsed once per process:
/// the engine, the report and the pages of one process share it.
pub fn of_run(run: &crate::store::RunRow) -> Result<Scenario, crate::Error> {
    let key = (run.source_path.clone(), run.yaml.clone());
    let mut stored = STORED.lock().unwrap_or_else(|p| p.into_inner());
    let cache = stored.get_or_insert_with(HashMap::new);
    if let Some(known) = cache.get(&key) {
        return known.clone();
    }
    // A dashboard serves many runs for long: the memory stays bounded.
    if cache.len() >= STORED_KEPT {
        cache.clear();
    }
    STORED_PARSES.fetch_add(1, Ordering::Relaxed);
    let parsed = parse(&run.yaml, Path::new(&run.source_path)).map_err(|diags| {
        crate::Error::invalid(
            diags
                .iter()
                .map(|d| d.render(&run.source_path))
                .collect::<Vec<_>>()
                .join("; "),
        )
    });
    cache.insert(key, parsed.clone());
    parsed
}

/// Keeps `s` as the scenario of `run` for [`of_run`]: the one `kreg run` parsed from the file
/// it recorded the run from (the same text, its relative paths taken from the same folder),
/// so that the drive does not parse it again.
pub fn remember(run: &crate::store::RunRow, s: &Scenario) {
    let key = (run.source_path.clone(), run.yaml.clone());
    let mut stored = STORED.lock().unwrap_or_else(|p| p.into_inner());
    stored.get_or_insert_with(HashMap::new).insert(key, Ok(s.clone()));
}

/// How many stored scenarios this process has parsed.
pub fn stored_parses() -> usize {
    STORED_PARSES.load(Ordering::Relaxed)
}

/// Reads, validates and (unless `skip_files`) checks the files of a scenario.
pub fn load(file: &Path, skip_files: bool) -> Result<(String, Scenario), Vec<Diagnostic>> {
    let text = read_text(file).map_err(|d| vec![d])?;
    let s = parse(&text, file)?;
    let missing = if skip_files { Vec::new() } else { check_files(&s) };
    if missing.is_empty() {
        Ok((text, s))
    } else {
        Err(missing)
    }
}

/// How many jobs a valid scenario expands to, counted without expanding it.
pub fn job_count(s: &Scenario) -> u64 {
    s.kernels.len() as u64 * s.variants.len() as u64 * s.workloads.len() as u64 * u64::from(s.iterations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_scenario_is_parsed_once_per_process() {
        let yaml = "name: once\nhosts:\n  s: { role: sut, transport: { kind: lab } }\nkernels:\n  - { name: a, source: running }\nworkloads:\n  - { name: w, kind: hackbench }\n";
        let run = |id: i64, yaml: &str| crate::store::RunRow {
            id,
            scenario_name: "once".into(),
            yaml: yaml.into(),
            source_path: "/scn/once-test.yaml".into(),
            state: crate::plan::RunState::Done,
            created_at: chrono::Utc::now(),
            plan_alpha: None,
            plan_min_effect: None,
            kind: crate::plan::RunKind::Matrix,
        };
        let before = stored_parses();
        let a = of_run(&run(1, yaml)).unwrap();
        let b = of_run(&run(1, yaml)).unwrap();
        assert_eq!(a, b);
        assert_eq!(stored_parses() - before, 1, "the second read is the first's");
        let other = yaml.replace("name: once", "name: twice");
        assert_eq!(of_run(&run(2, &other)).unwrap().name, "twice", "another text is parsed");
        assert!(of_run(&run(3, "name: ["))
            .unwrap_err()
            .to_string()
            .contains("/scn/once-test.yaml:"));
    }

    #[test]
    fn bad_bytes_are_placed() {
        assert_eq!(position(b"ab\ncd\xffe", 5), (2, 3));
        assert_eq!(position("é\n\u{e9}x".as_bytes(), 4), (2, 2));
    }
}
