//! The agent's integration tests, one binary: its HTTP API served for real on a loopback
//! port (`api`), the agent under hostile or careless clients (`hostile`), and the binary
//! serving HTTPS with the certificate it makes itself (`tls`), and the client across a
//! connection cut by a reboot (`reconnect`).

mod api;
mod common;
mod fence;
mod hostile;
mod reconnect;
mod tls;
