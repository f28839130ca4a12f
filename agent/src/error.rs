//! The agent's one error type for what is not a step's answer (those are the wire's
//! `ErrorKind` and text): its own files (the id, the fence, the certificate), the kernel
//! refusing a socket, serving, and the token read at start.

/// An error of the agent's own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file of the agent's data folder that cannot be read, made or written: the file and
    /// why.
    #[error("{0}")]
    Own(String),
    /// The kernel refused what the agent asked of it (the taskstats socket).
    #[error("{0}")]
    Kernel(String),
    /// The socket or the TLS the agent serves on.
    #[error("{0}")]
    Serve(String),
    /// The token file read at start.
    #[error(transparent)]
    Protocol(#[from] kreg_protocol::Error),
}
