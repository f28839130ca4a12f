//! TLS for an agent reached over a network: the agent makes itself a self-signed
//! certificate on first start (kept in its data folder, the key mode 0600); the controller
//! pins its fingerprint ([`kreg_protocol::pin`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kreg_protocol::listen::Acceptor;
use kreg_protocol::pin::{fingerprint, provider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Where the agent keeps its certificate and key.
pub fn paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// The agent's certificate (made when missing) and its fingerprint.
pub fn load_or_make(
    data_dir: &Path,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>, String), crate::Error> {
    let (cert_path, key_path) = paths(data_dir);
    if !cert_path.exists() || !key_path.exists() {
        make(&cert_path, &key_path)?;
    }
    let cert = CertificateDer::from_pem_file(&cert_path)
        .map_err(|e| crate::Error::Own(format!("{}: {e}", cert_path.display())))?;
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| crate::Error::Own(format!("{}: {e}", key_path.display())))?;
    let fp = fingerprint(&cert);
    Ok((cert, key, fp))
}

fn make(cert_path: &Path, key_path: &Path) -> Result<(), crate::Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = cert_path.parent().expect("a folder");
    std::fs::create_dir_all(dir).map_err(|e| crate::Error::Own(format!("{}: {e}", dir.display())))?;
    let mut names = vec!["kreg-agent".to_string()];
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            names.push(h.to_string());
        }
    }
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| crate::Error::Own(format!("cannot make a certificate: {e}")))?;
    let tmp_key = key_path.with_extension("pem.new");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp_key)
        .map_err(|e| crate::Error::Own(format!("{}: {e}", tmp_key.display())))?;
    f.write_all(made.key_pair.serialize_pem().as_bytes())
        .map_err(|e| crate::Error::Own(format!("{}: {e}", tmp_key.display())))?;
    drop(f);
    std::fs::rename(&tmp_key, key_path).map_err(|e| crate::Error::Own(format!("{}: {e}", key_path.display())))?;
    std::fs::write(cert_path, made.cert.pem())
        .map_err(|e| crate::Error::Own(format!("{}: {e}", cert_path.display())))?;
    Ok(())
}

/// The agent's TLS acceptor, and its certificate's fingerprint.
pub fn acceptor(data_dir: &Path) -> Result<(Acceptor, String), crate::Error> {
    let (cert, key, fp) = load_or_make(data_dir)?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::Error::Serve(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| crate::Error::Own(format!("the agent's certificate: {e}")))?;
    Ok((Acceptor(tokio_rustls::TlsAcceptor::from(Arc::new(config))), fp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_is_made_once_with_a_private_key() {
        let dir = std::env::temp_dir().join(format!("kreg-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (_, _, a) = load_or_make(&dir).unwrap();
        let (_, _, b) = load_or_make(&dir).unwrap();
        assert_eq!(a, b, "kept, not made again");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(paths(&dir).1).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
