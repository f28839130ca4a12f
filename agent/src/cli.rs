//! The agent's command line (`kreg-agent --listen ADDR --token-file FILE …`): in the
//! library so that its manual page, `kreg-agent.8` (a daemon's section), is made from the same definition (a test
//! keeps the shipped page current; `kreg man` and `kreg agent install` install it).

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(name = "kreg-agent", version, about = "Runs kreg's typed steps on this machine")]
pub struct Args {
    /// Address to listen on, e.g. 0.0.0.0:7878.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: String,
    /// File whose first line is the bearer token (at least 16 printable characters; the
    /// rest of the file is ignored).
    #[arg(long, required_unless_present = "tls_fingerprint")]
    pub token_file: Option<PathBuf>,
    /// Serve HTTPS with a self-signed certificate kept in DATA_DIR/tls (made on first
    /// start); the controller pins its fingerprint.
    #[arg(long)]
    pub tls: bool,
    /// Print the fingerprint of the certificate in DATA_DIR/tls (made when missing) and exit.
    #[arg(long)]
    pub tls_fingerprint: bool,
    /// Where uploaded files (kernels, initrds) are kept.
    #[arg(long, default_value = "/var/lib/kreg-agent")]
    pub data_dir: PathBuf,
    /// Where kernels are installed (vmlinuz-RELEASE, System.map, config, initramfs).
    #[arg(long, default_value = "/boot")]
    pub boot_dir: PathBuf,
    /// Where kernel modules are installed (RELEASE/ under it).
    #[arg(long, default_value = "/lib/modules")]
    pub modules_dir: PathBuf,
    /// Connections open at once (lowered to half the open-file limit); at the cap the
    /// oldest idle one is closed.
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// Seconds a client has to send a request's headers (idle connections close after it).
    #[arg(long, default_value_t = 30)]
    pub header_timeout: u64,
}

#[cfg(test)]
mod tests {
    /// `kreg-agent.8`, shipped beside the crate (and embedded by `kreg` to install it), is
    /// the page of these arguments: `UPDATE_EXPECT=1 cargo test -p kreg-agent` rewrites it.
    #[test]
    fn the_shipped_manual_page_is_made_from_these_arguments() {
        let mut page = Vec::new();
        clap_mangen::Man::new(<super::Args as clap::CommandFactory>::command())
            .section("8")
            .render(&mut page)
            .unwrap();
        expect_test::expect_file!["../kreg-agent.8"].assert_eq(&String::from_utf8(page).unwrap());
    }
}
