//! The core's one error type: what its functions refuse or cannot read, said as the user
//! reads it. Each kind says whose the mistake is: a value given (a scenario's, an option's),
//! text a machine or a tool printed, or a machine that refused what was asked.

/// An error of the core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A value given that is not one (a scenario's key, an option, a stored name): why.
    #[error("{0}")]
    Invalid(String),
    /// Text read from a machine or a tool (a /proc file, a report, a version) that does not
    /// read as it must: what is wrong with it.
    #[error("{0}")]
    Unreadable(String),
    /// A machine that could not be read, or lacks what is required of it.
    #[error("{0}")]
    Machine(String),
}

impl Error {
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid(message.into())
    }

    pub fn unreadable(message: impl Into<String>) -> Error {
        Error::Unreadable(message.into())
    }

    pub fn machine(message: impl Into<String>) -> Error {
        Error::Machine(message.into())
    }
}

/// A result of the core.
pub type Result<T> = std::result::Result<T, Error>;
