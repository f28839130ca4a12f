//! kreg-agent: the small, stateless program that runs on a machine under test (SUT) or a
//! load generator and executes typed steps for the kreg controller.
//!
//! The library holds the HTTP server ([`server`]) with one module per step ([`steps`]) and
//! the agent's certificate ([`tls`]). What the controller shares with it (the wire types,
//! the limits, the bzImage reader, the accept loop) lives in `kreg-protocol`.

pub mod cli;
pub mod error;
pub mod server;
pub mod steps;
pub mod tls;

pub use error::Error;
pub use kreg_protocol::{bzimage, wire, PROTOCOL_VERSION};
