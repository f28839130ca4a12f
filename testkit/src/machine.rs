//! The lab machine's golden disk (Debian bookworm with GRUB, made by scripts/lab-machine.sh)
//! and the cache folder it lives in.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `$KREG_CACHE_DIR`, or `~/.cache/kreg`.
pub fn cache_dir() -> PathBuf {
    std::env::var("KREG_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or("/root".into())).join(".cache/kreg"))
}

/// The golden disk image, made (or found up to date) by scripts/lab-machine.sh.
pub fn golden_image() -> PathBuf {
    let out = cache_dir().join("machine");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lab-machine.sh");
    let status = Command::new("bash").arg(script).arg(&out).status().unwrap();
    assert!(status.success(), "scripts/lab-machine.sh failed");
    out.join("disk.raw")
}
