//! `kreg-agent --listen ADDR --token-file FILE [--data-dir DIR] [--tls]`, or
//! `kreg-agent --tls-fingerprint [--data-dir DIR]`

use clap::Parser;
use kreg_agent::cli::Args;
use kreg_agent::server::{self, Config, Token};

// One thread: the agent of a scheduler benchmark keeps no idle worker threads on the
// machine it measures. Work that blocks (copies, archive unpacking) goes to tokio's
// blocking pool, whose threads end when idle.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    // A level (error, warn, info, debug, trace) rather than a filter language: the
    // agent does without a regex engine.
    let level = std::env::var("KREG_AGENT_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing_subscriber::filter::LevelFilter>().ok())
        .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    if let Err(e) = real_main(args).await {
        eprintln!("kreg-agent: {e}");
        std::process::exit(1);
    }
}

async fn real_main(args: Args) -> Result<(), kreg_agent::Error> {
    kreg_agent::steps::identity::started();
    if args.tls_fingerprint {
        let (_, _, fp) = kreg_agent::tls::load_or_make(&args.data_dir)?;
        println!("{fp}");
        return Ok(());
    }
    // Without its id (a data folder full or read-only) the agent still serves; the
    // controller then cannot tell it under two addresses, and says so.
    if let Err(e) = kreg_agent::steps::identity::keep_id(&args.data_dir) {
        tracing::warn!("no agent id: {e}");
    }
    let token_file = args.token_file.clone().expect("required by clap");
    let token = Token::read_file(&token_file)?;
    let tls = match args.tls {
        true => Some(kreg_agent::tls::acceptor(&args.data_dir)?),
        false => None,
    };
    server::listen::raise_nofile_limit();
    let limits = server::Limits {
        max_connections: args.max_connections,
        header_timeout: std::time::Duration::from_secs(args.header_timeout.max(1)),
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| kreg_agent::Error::Serve(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| kreg_agent::Error::Serve(e.to_string()))?;
    // Tests and the lab read this line to learn the bound port.
    println!("kreg-agent listening on {addr}");
    if let Some((_, fp)) = &tls {
        println!("kreg-agent TLS certificate {fp}");
    }
    tracing::info!(%addr, tls = tls.is_some(), "listening");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server::run(
        Config {
            token,
            data_dir: args.data_dir,
            layout: kreg_agent::steps::install::Layout {
                boot_dir: args.boot_dir,
                modules_dir: args.modules_dir,
            },
            limits,
            tls: tls.map(|(a, _)| a),
        },
        listener,
        shutdown,
    )
    .await
    .map_err(|e| kreg_agent::Error::Serve(e.to_string()))
}
