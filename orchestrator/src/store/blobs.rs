//! Files by content: stored once per SHA-256 in chunks of [`CHUNK`] bytes, read and written
//! a chunk at a time (a 1 GiB file never needs 1 GiB of memory on either side), and the files
//! each run carries. A file is hashed before it is stored (a blob already there is not read
//! twice) and again while it is stored: one that changed in between is refused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};

use super::{Result, StoreError};

/// Bytes a chunk holds.
pub const CHUNK: usize = 1 << 20;

/// The largest file a run may carry.
pub const MAX_FILE: u64 = 4 << 30;

/// A stored file: its content's SHA-256 (hex) and its size.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Blob {
    pub sha256: String,
    pub size: i64,
}

fn io(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::File(format!("{}: {e}", path.display()))
}

/// The SHA-256 and size of the file at `path`, read a chunk at a time.
pub fn digest(path: &Path) -> Result<Blob> {
    let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| io(path, e))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        size += n as u64;
        if size > MAX_FILE {
            return Err(StoreError::File(format!(
                "{}: larger than the {} GiB a run may carry",
                path.display(),
                MAX_FILE >> 30
            )));
        }
    }
    Ok(Blob {
        sha256: hex::encode(hash.finalize()),
        size: size as i64,
    })
}

/// Stores the file at `path` unless a blob of its content is stored already; its blob.
pub async fn put(db: &PgPool, path: &Path) -> Result<Blob> {
    let want = digest(path)?;
    let known: Option<i64> = sqlx::query_scalar("SELECT size FROM blobs WHERE sha256 = $1")
        .bind(&want.sha256)
        .fetch_optional(db)
        .await?;
    if known.is_some() {
        return Ok(want);
    }
    let mut tx = db.begin().await?;
    let fresh = sqlx::query("INSERT INTO blobs (sha256, size) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(&want.sha256)
        .bind(want.size)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if fresh {
        let got = put_chunks(&mut tx, path, &want.sha256).await?;
        if got != want {
            return Err(StoreError::File(format!(
                "{}: it changed while it was stored (read as {} bytes with SHA-256 {}, then {} bytes with {}); nothing stored",
                path.display(),
                want.size,
                want.sha256,
                got.size,
                got.sha256
            )));
        }
    }
    tx.commit().await?;
    Ok(want)
}

/// The file's chunks stored under `sha256`: what was read, hashed on the way.
async fn put_chunks(tx: &mut Transaction<'_, Postgres>, path: &Path, sha256: &str) -> Result<Blob> {
    let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let (mut n, mut size) = (0i32, 0u64);
    loop {
        // A whole chunk (a short read is not the end of the file).
        let mut filled = 0;
        while filled < CHUNK {
            let got = f.read(&mut buf[filled..]).map_err(|e| io(path, e))?;
            if got == 0 {
                break;
            }
            filled += got;
        }
        if filled == 0 {
            break;
        }
        hash.update(&buf[..filled]);
        size += filled as u64;
        sqlx::query("INSERT INTO blob_chunks (sha256, n, data) VALUES ($1, $2, $3)")
            .bind(sha256)
            .bind(n)
            .bind(&buf[..filled])
            .execute(&mut **tx)
            .await?;
        n += 1;
        if filled < CHUNK {
            break;
        }
    }
    Ok(Blob {
        sha256: hex::encode(hash.finalize()),
        size: size as i64,
    })
}

/// The blob `sha256` as a file in `dir` (named by its SHA-256), fetched a chunk at a time
/// when it is not there yet, and checked against its SHA-256 before it is put in place.
pub async fn fetch(db: impl PgExecutor<'_>, sha256: &str, dir: &Path) -> Result<PathBuf> {
    let path = dir.join(sha256);
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let tmp = dir.join(format!(".{sha256}.{}.tmp", std::process::id()));
    let mut out = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    let mut hash = Sha256::new();
    let mut chunks = sqlx::query_scalar::<_, Vec<u8>>("SELECT data FROM blob_chunks WHERE sha256 = $1 ORDER BY n")
        .bind(sha256)
        .fetch(db);
    while let Some(data) = chunks.try_next().await? {
        hash.update(&data);
        out.write_all(&data).map_err(|e| io(&tmp, e))?;
    }
    drop(chunks);
    out.sync_all().map_err(|e| io(&tmp, e))?;
    let got = hex::encode(hash.finalize());
    if got != sha256 {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::Malformed(format!(
            "blob {sha256}: its stored chunks hash to {got} (missing or damaged)"
        )));
    }
    std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
    Ok(path)
}

/// The fetched blob `local` under the file name `path` had (`DIR/named/SHA/NAME`, a hard
/// link beside it), so that whatever reads it — a patch that does not apply, a build log,
/// a tool's error — names the file the scenario named.
pub fn named(local: &Path, path: &str) -> Result<PathBuf> {
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "file".into());
    let (Some(dir), Some(sha)) = (local.parent(), local.file_name()) else {
        return Ok(local.to_path_buf());
    };
    let dir = dir.join("named").join(sha);
    let to = dir.join(name);
    if to.is_file() {
        return Ok(to);
    }
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    match std::fs::hard_link(local, &to) {
        Ok(()) => Ok(to),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(to),
        Err(_) => {
            // Another file system under the cache: a copy, put in place whole.
            let tmp = dir.join(format!(".{}.tmp", std::process::id()));
            std::fs::copy(local, &tmp).map_err(|e| io(&tmp, e))?;
            std::fs::rename(&tmp, &to).map_err(|e| io(&to, e))?;
            Ok(to)
        }
    }
}

/// A file a run carries: the path its scenario named, what it is, its content.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunFile {
    pub path: String,
    pub what: String,
    pub sha256: String,
}

/// Stores every file `scenario` carries (see `Scenario::carried`), read from its path now;
/// what a run records of them.
pub async fn carry(db: &PgPool, scenario: &crate::scenario::Scenario) -> Result<Vec<RunFile>> {
    let mut out: Vec<RunFile> = Vec::new();
    for f in scenario.carried() {
        let path = f.path.display().to_string();
        if out.iter().any(|o| o.path == path) {
            continue;
        }
        let blob = put(db, &f.path).await?;
        out.push(RunFile {
            path,
            what: f.what.clone(),
            sha256: blob.sha256,
        });
    }
    Ok(out)
}

/// Notes the files `run_id` carries (stored already with [`put`]), in the caller's
/// transaction.
pub async fn record_run_files(tx: &mut Transaction<'_, Postgres>, run_id: i64, files: &[RunFile]) -> Result<()> {
    for f in files {
        sqlx::query(
            "INSERT INTO run_files (run_id, path, what, sha256) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(run_id)
        .bind(&f.path)
        .bind(&f.what)
        .bind(&f.sha256)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The files `run_id` carries.
pub async fn run_files(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<RunFile>> {
    Ok(
        sqlx::query_as("SELECT path, what, sha256 FROM run_files WHERE run_id = $1 ORDER BY path")
            .bind(run_id)
            .fetch_all(db)
            .await?,
    )
}

/// Removes blob `sha256` when no run carries it; whether it was removed.
pub async fn remove_unused(db: impl PgExecutor<'_>, sha256: &str) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM blobs WHERE sha256 = $1 AND NOT EXISTS (SELECT 1 FROM run_files WHERE sha256 = $1)")
            .bind(sha256)
            .execute(db)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes every blob no run carries; how many, and their bytes.
pub async fn gc(db: impl PgExecutor<'_>) -> Result<(i64, i64)> {
    let (n, bytes): (i64, Option<i64>) = sqlx::query_as(
        "WITH gone AS (DELETE FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM run_files f WHERE f.sha256 = b.sha256) RETURNING size)
         SELECT count(*), sum(size)::bigint FROM gone",
    )
    .fetch_one(db)
    .await?;
    Ok((n, bytes.unwrap_or(0)))
}
