//! `kreg db`, and the one way every command opens the database: `DATABASE_URL`, or kreg's
//! private cluster started when needed.

use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{Context, Result};
use clap::Subcommand;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use kreg::config::Config;
use kreg::store;

#[derive(Subcommand)]
pub enum DbCmd {
    /// Start the private cluster if needed and print its URL (for psql or DATABASE_URL).
    Url,
    /// Stop the private cluster.
    Stop,
    /// Remove the stored files no run carries any more (a run's files are kept as long as
    /// the run is; nothing is removed otherwise).
    Gc,
}

pub async fn dispatch(cmd: DbCmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        DbCmd::Url => {
            store::cluster::ensure(&cfg.data_dir)
                .await
                .context("starting kreg's private PostgreSQL")?;
            let dir = store::cluster::cluster_dir(&cfg.data_dir.canonicalize()?)?;
            println!("postgres://kreg@localhost/kreg?host={}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        DbCmd::Stop => {
            store::cluster::stop(&cfg.data_dir.canonicalize()?)?;
            Ok(ExitCode::SUCCESS)
        }
        DbCmd::Gc => {
            let db = connect(cfg).await?;
            let (n, bytes) = store::blobs::gc(&db).await?;
            println!(
                "removed {n} stored file(s) no run carries ({:.1} MiB)",
                bytes as f64 / (1u64 << 20) as f64
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub async fn connect(cfg: &Config) -> Result<PgPool> {
    store::open(options(cfg).await?).await.context("opening the database")
}

/// Where the database is: `DATABASE_URL`, or the private cluster, started if needed.
pub async fn options(cfg: &Config) -> Result<PgConnectOptions> {
    Ok(match &cfg.database_url {
        Some(url) => PgConnectOptions::from_str(url.expose()).context("DATABASE_URL is not a valid PostgreSQL URL")?,
        None => store::cluster::ensure(&cfg.data_dir)
            .await
            .context("starting kreg's private PostgreSQL")?,
    })
}
