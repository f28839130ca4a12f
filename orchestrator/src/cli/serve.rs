//! `kreg serve`: the dashboard on the run database (`kreg::web`).

use std::process::ExitCode;

use anyhow::{Context, Result};

use kreg::config::Config;

pub async fn serve(cfg: &Config, listen: std::net::SocketAddr) -> Result<ExitCode> {
    let options = super::db::options(cfg).await?;
    // The schema is brought up to date once, here; the server itself only reads.
    kreg::store::open(options.clone())
        .await
        .context("opening the database")?
        .close()
        .await;
    kreg::web::serve(options, listen).await?;
    Ok(ExitCode::SUCCESS)
}
