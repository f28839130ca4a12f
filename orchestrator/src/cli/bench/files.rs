//! `kreg bench files`: a run's carried file stored in PostgreSQL and fetched back, as a run
//! records and a driver takes it: the time each way (with the database's CPU beside it) and
//! how much this process's memory grew (its peak RSS against before): a file is read and
//! written a chunk at a time, never held whole.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use kreg::config::Config;
use kreg::store::blobs;

#[derive(clap::Args)]
pub struct FilesArgs {
    /// The file's size, MiB.
    #[arg(long, default_value_t = 256)]
    mib: u64,
}

/// This process's resident set and its peak so far, KiB.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub async fn run(cfg: &Config, a: FilesArgs) -> Result<ExitCode> {
    let db = super::super::db::connect(cfg).await?;
    let dir = tempfile_dir()?;
    let file = dir.join("tool.bin");
    // Bytes that do not repeat within a chunk, written a chunk at a time.
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file)?);
        let mut x: u64 = 0x6b72_6567 ^ a.mib;
        let mut chunk = vec![0u8; blobs::CHUNK];
        for _ in 0..a.mib {
            for b in chunk.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            f.write_all(&chunk)?;
        }
    }
    let (before, _) = rss();
    let (cpu0, t0) = (super::fleet::postgres_cpu(), Instant::now());
    let blob = blobs::put(&db, &file).await?;
    let (put_secs, put_cpu) = (t0.elapsed().as_secs_f64(), super::fleet::postgres_cpu() - cpu0);
    let (_, peak_put) = rss();
    let (cpu1, t1) = (super::fleet::postgres_cpu(), Instant::now());
    let got = blobs::fetch(&db, &blob.sha256, &dir.join("cache")).await?;
    let (fetch_secs, fetch_cpu) = (t1.elapsed().as_secs_f64(), super::fleet::postgres_cpu() - cpu1);
    let (_, peak) = rss();
    anyhow::ensure!(blobs::digest(&got)?.sha256 == blob.sha256, "the fetched file differs");
    let mib = a.mib as f64;
    println!(
        "files: {} MiB, chunks of {} KiB; stored in {put_secs:.1} s ({:.0} MiB/s, hashed twice; postgres CPU {put_cpu:.1} s), fetched in {fetch_secs:.1} s ({:.0} MiB/s, hashed once; postgres CPU {fetch_cpu:.1} s)",
        a.mib,
        blobs::CHUNK >> 10,
        mib / put_secs,
        mib / fetch_secs
    );
    println!(
        "memory: resident {:.1} MiB before, peak {:.1} MiB after storing, {:.1} MiB after fetching: grew {:.1} MiB (goal < 32 MiB for 256 MiB)",
        before as f64 / 1024.0,
        peak_put as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(before) as f64 / 1024.0
    );
    blobs::remove_unused(&db, &blob.sha256)
        .await
        .context("removing the bench's blob")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitCode::SUCCESS)
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = kreg::config::temp_dir().join(format!("kreg-bench-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    Ok(dir)
}
