//! TLS for an agent reached over a network: the agent makes itself a self-signed
//! certificate on first start (kept in its data folder, the key mode 0600) and the
//! controller pins the certificate's SHA-256 fingerprint instead of trusting a CA.
//!
//! A fingerprint is written `sha256:` and 64 lowercase hex digits; OpenSSL's form
//! (`AB:CD:…`, from `openssl x509 -noout -fingerprint -sha256`) is read as well.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

/// The fingerprint of a DER certificate.
pub fn fingerprint(der: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(der)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fingerprint in either accepted form, as 64 lowercase hex digits; None when it is not one.
pub fn normalize(fp: &str) -> Option<String> {
    let t = fp.trim();
    let body = match t.split_once(':') {
        Some((alg, rest)) if alg.eq_ignore_ascii_case("sha256") => rest,
        _ => t,
    };
    let digits: String = body
        .chars()
        .filter(|c| *c != ':')
        .collect::<String>()
        .to_ascii_lowercase();
    (digits.len() == 64 && digits.chars().all(|c| c.is_ascii_hexdigit())).then_some(digits)
}

/// Where the agent keeps its certificate and key.
pub fn paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// The agent's certificate (made when missing) and its fingerprint.
pub fn load_or_make(data_dir: &Path) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>, String), String> {
    let (cert_path, key_path) = paths(data_dir);
    if !cert_path.exists() || !key_path.exists() {
        make(&cert_path, &key_path)?;
    }
    let cert = CertificateDer::from_pem_file(&cert_path).map_err(|e| format!("{}: {e}", cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| format!("{}: {e}", key_path.display()))?;
    let fp = fingerprint(&cert);
    Ok((cert, key, fp))
}

fn make(cert_path: &Path, key_path: &Path) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = cert_path.parent().expect("a folder");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names = vec!["kreg-agent".to_string()];
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            names.push(h.to_string());
        }
    }
    let made = rcgen::generate_simple_self_signed(names).map_err(|e| format!("cannot make a certificate: {e}"))?;
    let tmp_key = key_path.with_extension("pem.new");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp_key)
        .map_err(|e| format!("{}: {e}", tmp_key.display()))?;
    f.write_all(made.key_pair.serialize_pem().as_bytes())
        .map_err(|e| format!("{}: {e}", tmp_key.display()))?;
    drop(f);
    std::fs::rename(&tmp_key, key_path).map_err(|e| format!("{}: {e}", key_path.display()))?;
    std::fs::write(cert_path, made.cert.pem()).map_err(|e| format!("{}: {e}", cert_path.display()))?;
    Ok(())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The agent's TLS side of a connection.
#[derive(Clone)]
pub struct Acceptor(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Acceptor")
    }
}

/// The agent's TLS acceptor, and its certificate's fingerprint.
pub fn acceptor(data_dir: &Path) -> Result<(Acceptor, String), String> {
    let (cert, key, fp) = load_or_make(data_dir)?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("the agent's certificate: {e}"))?;
    Ok((Acceptor(tokio_rustls::TlsAcceptor::from(Arc::new(config))), fp))
}

/// A client TLS config that accepts exactly the certificate with this fingerprint (the
/// handshake's signature is checked against it as usual).
#[cfg(feature = "client")]
pub fn pinned_client(fingerprint: &str) -> Result<rustls::ClientConfig, String> {
    let want = normalize(fingerprint).ok_or_else(|| format!("{fingerprint:?} is not a SHA-256 fingerprint"))?;
    let p = provider();
    let verifier = Arc::new(Pinned {
        want,
        provider: p.clone(),
    });
    Ok(rustls::ClientConfig::builder_with_provider(p)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

#[cfg(feature = "client")]
#[derive(Debug)]
struct Pinned {
    want: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

#[cfg(feature = "client")]
impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let got = fingerprint(end_entity);
        if got.strip_prefix("sha256:") == Some(self.want.as_str()) {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the agent's certificate is {got}, not the pinned sha256:{}",
                self.want
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_in_both_forms() {
        let fp = fingerprint(b"x");
        assert!(fp.starts_with("sha256:") && fp.len() == 71);
        let hex = fp.strip_prefix("sha256:").unwrap();
        assert_eq!(normalize(&fp).as_deref(), Some(hex));
        let openssl: Vec<String> = hex
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap().to_ascii_uppercase())
            .collect();
        assert_eq!(normalize(&openssl.join(":")).as_deref(), Some(hex));
        assert_eq!(
            normalize(&format!("SHA256:{}", openssl.join(":"))).as_deref(),
            Some(hex)
        );
        assert_eq!(normalize("sha256:abc"), None);
        assert_eq!(normalize(&format!("md5:{hex}")), None);
    }

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
