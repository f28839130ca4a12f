//! A run in one file another site can read and reproduce: what `kreg export` writes and the
//! dashboard's "bundle" link serves. The bundle is a tar (compress it as you like):
//! `manifest.json`, the scenario's text, every file the run carries under `files/SHA-256`,
//! one JSON-lines file per table the run owns (`tables/NAME.jsonl`: its jobs with their
//! exact command lines, results, raw outputs, hosts, settings, kernel builds with their
//! configs, a bisection's commits and measurements), and its report as `report.txt` and
//! `results.csv`. Written a member at a time; a carried file goes from the database to a
//! file of `blob_dir` and from there into the tar, never whole in memory.

use std::path::Path;

use sqlx::PgPool;

use super::{Result, ViewError};
use crate::report::Format;
use crate::store::{self, blobs, bundle};

/// What a bundle is, first in it.
pub const MANIFEST: &str = "manifest.json";

fn io(what: &str, e: std::io::Error) -> ViewError {
    ViewError::Other(anyhow::anyhow!("writing the bundle's {what}: {e}"))
}

/// A member of `size` bytes read from `data`, its header the same wherever and whenever
/// it is written (mode 0644, time 0): one run gives one bundle, byte for byte.
fn append_from(tar: &mut tar::Builder<std::fs::File>, name: &str, size: u64, data: impl std::io::Read) -> Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_cksum();
    tar.append_data(&mut h, name, data).map_err(|e| io(name, e))
}

fn append(tar: &mut tar::Builder<std::fs::File>, name: &str, bytes: &[u8]) -> Result<()> {
    append_from(tar, name, bytes.len() as u64, bytes)
}

/// Run `run`'s bundle written into `file` (synced), the carried files fetched into
/// `blob_dir` on the way (a cache the caller keeps, or a folder of its own it removes).
pub async fn write(db: &PgPool, run: i64, blob_dir: &Path, file: std::fs::File) -> Result<()> {
    let tables = bundle::export(db, run).await?;
    let mut tar = tar::Builder::new(file);
    let manifest = serde_json::json!({
        "kreg": env!("CARGO_PKG_VERSION"),
        "run": run,
        "tables": tables.iter().map(|(t, rows)| serde_json::json!({ "name": t, "rows": rows.len() })).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&manifest).map_err(anyhow::Error::from)?;
    append(&mut tar, MANIFEST, text.as_bytes())?;
    let row = store::run(db, run).await?;
    append(&mut tar, "scenario.yaml", row.yaml.as_bytes())?;
    for (table, rows) in &tables {
        let mut text = String::new();
        for r in rows {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        append(&mut tar, &format!("tables/{table}.jsonl"), text.as_bytes())?;
    }
    for f in blobs::run_files(db, run).await? {
        let local = blobs::fetch(db, &f.sha256, blob_dir).await?;
        let file = std::fs::File::open(&local).map_err(|e| io(&f.path, e))?;
        let size = file.metadata().map_err(|e| io(&f.path, e))?.len();
        append_from(&mut tar, &format!("files/{}", f.sha256), size, file)?;
    }
    let settings = crate::stats::Settings::default();
    let text = super::report_text(db, run, None, &settings, Format::Text, false).await?;
    append(&mut tar, "report.txt", text.as_bytes())?;
    if row.kind != crate::plan::RunKind::Bisection {
        let csv = super::report_text(db, run, None, &settings, Format::Csv, false).await?;
        append(&mut tar, "results.csv", csv.as_bytes())?;
    }
    let file = tar.into_inner().map_err(|e| io("end", e))?;
    file.sync_all().map_err(|e| io("end", e))
}
