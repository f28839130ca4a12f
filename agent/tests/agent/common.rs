//! Starting a real agent on a loopback port, shared by the agent's test files.

use kreg_agent::server::{self, Config, Limits, Token};

pub const TOKEN: &str = "test-token-0123456789abcdef";

pub struct Agent {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub dir: std::path::PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub async fn start(name: &str) -> Agent {
    start_with(name, Limits::default()).await
}

pub async fn start_with(name: &str, limits: Limits) -> Agent {
    let dir = std::env::temp_dir().join(format!("kreg-agent-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}");
    let (tx, rx) = tokio::sync::oneshot::channel();
    let config = Config {
        token: Token::from_file_text(TOKEN).unwrap(),
        data_dir: dir.join("data"),
        layout: kreg_agent::steps::install::Layout {
            boot_dir: dir.join("root/boot"),
            modules_dir: dir.join("root/lib/modules"),
        },
        limits,
        tls: None,
    };
    tokio::spawn(server::run(config, listener, async {
        let _ = rx.await;
    }));
    Agent {
        url,
        addr,
        dir,
        stop: Some(tx),
    }
}

/// A file with a bzImage setup header announcing `release` (enough for the install step,
/// which copies the image and checks the release it announces).
pub fn fake_bzimage(release: &str) -> Vec<u8> {
    let mut img = vec![0u8; 0x1000];
    img[0x202..0x206].copy_from_slice(b"HdrS");
    let at = 0x400usize;
    img[0x20e..0x210].copy_from_slice(&((at - 0x200) as u16).to_le_bytes());
    img[at..at + release.len()].copy_from_slice(release.as_bytes());
    img
}

pub fn tar_of(dir: &std::path::Path, member: &str) -> Vec<u8> {
    let out = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir)
        .args(["-cf", "-", member])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}
