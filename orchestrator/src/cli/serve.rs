//! `kreg serve`: the dashboard on the run database (`kreg::web`).

use std::process::ExitCode;

use anyhow::{Context, Result};

use kreg::config::Config;

/// `kreg serve`'s arguments.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Also answer requests that name this host (a DNS name or address of this
    /// machine); loopback names and the --listen address always. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// Seconds a client has to send a request's headers (also how long an idle
    /// connection stays open).
    #[arg(long, default_value_t = 15, value_name = "SECS")]
    header_timeout: u64,
}

pub async fn serve(cfg: &Config, a: &ServeArgs) -> Result<ExitCode> {
    let (listen, allow_hosts, header_timeout) = (a.listen, &a.allow_host, a.header_timeout);
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
