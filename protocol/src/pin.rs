//! Certificate pinning, the controller's side of TLS to an agent: the agent makes itself a
//! self-signed certificate and the controller accepts exactly the certificate whose SHA-256
//! fingerprint it was given, instead of trusting a CA.
//!
//! A fingerprint is written `sha256:` and 64 lowercase hex digits; OpenSSL's form
//! (`AB:CD:…`, from `openssl x509 -noout -fingerprint -sha256`) is read as well.

#[cfg(feature = "client")]
use rustls::pki_types::CertificateDer;
use sha2::{Digest, Sha256};
#[cfg(feature = "client")]
use std::sync::Arc;

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

/// The crypto provider both sides use.
#[cfg(any(feature = "client", feature = "listen"))]
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}

/// A client TLS config that accepts exactly the certificate with this fingerprint (the
/// handshake's signature is checked against it as usual).
#[cfg(feature = "client")]
pub fn pinned_client(fingerprint: &str) -> Result<rustls::ClientConfig, crate::Error> {
    let want = normalize(fingerprint)
        .ok_or_else(|| crate::Error::Tls(format!("{fingerprint:?} is not a SHA-256 fingerprint")))?;
    let p = provider();
    let verifier = Arc::new(Pinned {
        want,
        provider: p.clone(),
    });
    Ok(rustls::ClientConfig::builder_with_provider(p)
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::Error::Tls(e.to_string()))?
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
}
