//! kreg-agent: the small, stateless program that runs on a machine under test (SUT) or a
//! load generator and executes typed steps for the kreg controller.
//!
//! The library holds the wire types ([`wire`], the bearer token among them), the HTTP server
//! ([`server`]) with one module per step ([`steps`]), the bzImage header reader both sides
//! use ([`bzimage`]), and, behind the `client` feature, the controller's client.

pub mod bzimage;
pub mod server;
pub mod steps;
pub mod tls;
pub mod wire;

#[cfg(feature = "client")]
pub mod client;

pub use wire::PROTOCOL_VERSION;
