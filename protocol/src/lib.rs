//! kreg-protocol: what the controller and the agent share, and all the controller knows of
//! the agent. The wire types ([`wire`], the bearer token among them), the limits both sides
//! check ([`limits`]), the bzImage header reader ([`bzimage`]) and certificate pinning
//! ([`pin`]) are plain data and code; the controller's HTTP client ([`client`], feature
//! `client`) and the accept loop both the agent and the dashboard serve from ([`listen`],
//! feature `listen`) bring their runtimes only where asked for.

pub mod bzimage;
pub mod error;
pub mod limits;
pub mod pin;
pub mod wire;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "listen")]
pub mod listen;

pub use error::Error;
pub use wire::{EPOCH_HEADER, PROTOCOL_VERSION};
