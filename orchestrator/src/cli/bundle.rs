//! `kreg export RUN` and `kreg import FILE`: a run in one file another site can read and
//! reproduce (what the bundle holds: `kreg::view::bundle`), read a member at a time.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use kreg::config::Config;
use kreg::store::{blobs, bundle};
use kreg::view::bundle::MANIFEST;

#[derive(clap::Args)]
pub struct ExportArgs {
    pub run: i64,
    /// The bundle to write (default: run-RUN.tar in this folder).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// A bundle `kreg export` wrote.
    pub file: PathBuf,
}

pub async fn export(cfg: &Config, a: &ExportArgs) -> Result<ExitCode> {
    let db = super::db::connect(cfg).await?;
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("run-{}.tar", a.run)));
    let tmp = out.with_extension("tar.part");
    let file = std::fs::File::create(&tmp).with_context(|| format!("{}", tmp.display()))?;
    let written = kreg::view::bundle::write(&db, a.run, &cfg.cache_dir.join("blobs"), file).await;
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::Error::from(e).context(format!("run {}: no bundle written", a.run)));
    }
    std::fs::rename(&tmp, &out)?;
    println!("run {}: written to {}", a.run, out.display());
    Ok(ExitCode::SUCCESS)
}

pub async fn import(cfg: &Config, a: &ImportArgs) -> Result<ExitCode> {
    let dir = kreg::config::temp_dir().join(format!("kreg-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let unpacked = unpack(&a.file, &dir);
    let result = match unpacked {
        Ok(()) => put_back(cfg, &dir).await,
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let run = result.with_context(|| format!("{}: nothing imported", a.file.display()))?;
    println!("run {run} imported from {} (`kreg report {run}`)", a.file.display());
    Ok(ExitCode::SUCCESS)
}

/// The bundle's members into `dir`, each a plain file under its own name (no link, no path
/// leaving `dir`).
fn unpack(file: &Path, dir: &Path) -> Result<()> {
    let mut tar = tar::Archive::new(std::fs::File::open(file).with_context(|| format!("{}", file.display()))?);
    for entry in tar.entries()? {
        let mut e = entry?;
        let name = e.path()?.to_string_lossy().into_owned();
        let plain = name.split('/').all(|p| !p.is_empty() && p != "." && p != "..");
        if e.header().entry_type() != tar::EntryType::Regular || !plain {
            bail!("{name:?} is not a member a bundle holds");
        }
        let path = dir.join(&name);
        std::fs::create_dir_all(path.parent().expect("in dir"))?;
        e.unpack(&path)?;
    }
    if !dir.join(MANIFEST).is_file() {
        bail!("no {MANIFEST}: not a bundle of kreg's");
    }
    Ok(())
}

/// The unpacked bundle in `dir` put into the database: its files first, then its rows.
async fn put_back(cfg: &Config, dir: &Path) -> Result<i64> {
    let db = super::db::connect(cfg).await?;
    if let Ok(files) = std::fs::read_dir(dir.join("files")) {
        for f in files {
            let path = f?.path();
            let blob = blobs::put(&db, &path).await?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if blob.sha256 != name {
                bail!("files/{name} holds content of SHA-256 {}", blob.sha256);
            }
        }
    }
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(MANIFEST))?)?;
    let mut tables = Vec::new();
    for t in manifest["tables"].as_array().context("the manifest lists no tables")? {
        let name = t["name"].as_str().context("a table without its name")?.to_string();
        let file = std::fs::File::open(dir.join(format!("tables/{name}.jsonl")))
            .with_context(|| format!("tables/{name}.jsonl"))?;
        let mut rows = Vec::new();
        for line in std::io::BufReader::new(file).lines() {
            rows.push(serde_json::from_str(&line?).with_context(|| format!("tables/{name}.jsonl"))?);
        }
        tables.push((name, rows));
    }
    let run = bundle::import(&db, &tables).await?;
    let _ = std::io::stdout().flush();
    Ok(run)
}

/// A bundle unpacked for `kreg run --from`: the scenario's text, the path it was read from
/// at the first site (its relative paths resolve as they did there), and the run's files.
pub struct Unpacked {
    dir: PathBuf,
    pub text: String,
    pub source: String,
    files: Vec<serde_json::Value>,
}

impl Unpacked {
    pub fn read(bundle: &Path) -> Result<Unpacked> {
        let dir = kreg::config::temp_dir().join(format!("kreg-from-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        unpack(bundle, &dir).with_context(|| format!("{}", bundle.display()))?;
        let text = std::fs::read_to_string(dir.join("scenario.yaml")).context("the bundle's scenario.yaml")?;
        let lines = |name: &str| -> Result<Vec<serde_json::Value>> {
            let text = std::fs::read_to_string(dir.join(format!("tables/{name}.jsonl"))).unwrap_or_default();
            text.lines()
                .map(|l| serde_json::from_str(l).with_context(|| format!("tables/{name}.jsonl")))
                .collect()
        };
        let run = lines("runs")?.into_iter().next().context("the bundle holds no run")?;
        let source = run["source_path"].as_str().unwrap_or_default().to_string();
        let files = lines("run_files")?;
        Ok(Unpacked {
            dir,
            text,
            source,
            files,
        })
    }

    /// The bundle's files stored in this database; what a new run records of them.
    pub async fn put_files(&self, db: &sqlx::PgPool) -> Result<Vec<blobs::RunFile>> {
        let mut out = Vec::new();
        for f in &self.files {
            let sha = f["sha256"].as_str().unwrap_or_default();
            let blob = blobs::put(db, &self.dir.join("files").join(sha)).await?;
            if blob.sha256 != sha {
                bail!("files/{sha} holds content of SHA-256 {}", blob.sha256);
            }
            out.push(blobs::RunFile {
                path: f["path"].as_str().unwrap_or_default().to_string(),
                what: f["what"].as_str().unwrap_or_default().to_string(),
                sha256: blob.sha256,
            });
        }
        Ok(out)
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
