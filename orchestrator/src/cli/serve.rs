//! `kreg serve`: the dashboard on the run database (`kreg::web`).

use std::process::ExitCode;

use anyhow::{Context, Result};

use kreg::config::Config;

pub async fn serve(
    cfg: &Config,
    listen: std::net::SocketAddr,
    allow_hosts: &[String],
    header_timeout: u64,
) -> Result<ExitCode> {
    let guard = kreg::web::guard::Guard::new(listen, allow_hosts);
    if !listen.ip().is_loopback() {
        eprintln!(
            "kreg: WARNING: the dashboard listens on {listen}, beyond this machine: it has no login, so anyone who can reach that address and names one of its hosts ({}) reads every run, its outputs and its kernels' configs",
            guard.hosts().join(", ")
        );
    }
    let options = super::db::options(cfg).await?;
    // The schema is brought up to date once, here; the server itself only reads.
    kreg::store::open(options.clone())
        .await
        .context("opening the database")?
        .close()
        .await;
    kreg::web::serve(
        options,
        listen,
        guard,
        std::time::Duration::from_secs(header_timeout.max(1)),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
