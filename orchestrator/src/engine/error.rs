//! What can go wrong while the engine works a host, typed: the agent (unreachable, refusing,
//! a step that failed), a command that did not succeed, or something kreg checked; and why a
//! job stopped (`Stopped`), before its record is attached.

use kreg_protocol::client::ClientError;

use crate::failure::CommandFailed;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The agent could not be reached, refused, or failed a step; `what` was being done.
    #[error("{}{cause}", what.as_deref().map(|w| format!("{w}: ")).unwrap_or_default())]
    Agent { what: Option<String>, cause: ClientError },
    #[error(transparent)]
    Command(#[from] CommandFailed),
    /// What the core refused or could not read (a tool's version, a tuning the machine
    /// lacks).
    #[error(transparent)]
    Core(#[from] crate::Error),
    /// A token or certificate pin that cannot be used.
    #[error(transparent)]
    Protocol(#[from] kreg_protocol::Error),
    /// The machine's SSH: its host key, the login, the tunnel, the agent installed there.
    #[error(transparent)]
    Ssh(#[from] crate::ssh::SshError),
    /// Anything else kreg found wrong, said in full.
    #[error("{0}")]
    Other(String),
}

impl HostError {
    /// An agent's error while doing `what`.
    pub fn agent(what: impl Into<String>) -> impl FnOnce(ClientError) -> HostError {
        let what = what.into();
        move |cause| HostError::Agent {
            what: Some(what),
            cause,
        }
    }

    /// Whether the host stopped answering (crashed, rebooting, or off the network).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, HostError::Agent { cause, .. } if cause.is_unreachable())
    }
}

impl From<ClientError> for HostError {
    fn from(cause: ClientError) -> HostError {
        HostError::Agent { what: None, cause }
    }
}

/// A reason in a job's or host's record, which are text.
impl From<HostError> for String {
    fn from(e: HostError) -> String {
        e.to_string()
    }
}

impl From<&str> for HostError {
    fn from(s: &str) -> HostError {
        HostError::Other(s.to_string())
    }
}

impl From<String> for HostError {
    fn from(s: String) -> HostError {
        HostError::Other(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kreg_protocol::client::AgentClient;

    #[tokio::test]
    async fn an_agent_nobody_answers_for_is_unreachable_and_says_what_was_done() {
        // Port 1 on loopback: nothing listens there.
        let e = AgentClient::new("http://127.0.0.1:1", "t0ken-t0ken-t0ken")
            .identity()
            .await
            .unwrap_err();
        let plain = e.to_string();
        let typed = HostError::agent("reading the schedstat switch")(e);
        assert!(typed.is_unreachable());
        assert_eq!(typed.to_string(), format!("reading the schedstat switch: {plain}"));
        assert!(!HostError::Other("x".into()).is_unreachable());
    }
}

/// Why a job stopped, before its record is attached: the record moves into the job's
/// failure once, where the job ends.
#[derive(Debug)]
pub struct Stopped {
    pub reason: String,
    pub unreachable: bool,
}

pub fn fail(reason: impl Into<String>) -> Stopped {
    Stopped {
        reason: reason.into(),
        unreachable: false,
    }
}

/// An agent's error as a job's failure, `context` before it when not empty.
pub fn agent_fail(context: &str, e: &ClientError) -> Stopped {
    Stopped {
        reason: if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        },
        unreachable: e.is_unreachable(),
    }
}
