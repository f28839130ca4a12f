//! The protocol's one error type: a secret file that does not hold what it must, or a TLS
//! pin or client that cannot be made. The agent's replies have their own
//! (`client::ClientError`, what the controller sees of a request).

/// An error of the protocol's plain code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A secret or token file that cannot be read, or does not hold one: the file and why.
    #[error("{0}")]
    Secret(String),
    /// A certificate pin that is not one, or a TLS client that cannot be made.
    #[error("{0}")]
    Tls(String),
}
