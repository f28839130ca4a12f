//! kreg-core: everything kreg decides without touching a machine, a database or the
//! network. A scenario read from YAML with every problem's position ([`yaml`],
//! [`scenario`]), the workloads and their parsers ([`workload`], [`parse`], [`collect`],
//! [`schedstat`]), the tuning model ([`tuning`], [`cgroup`]), kernel configs
//! ([`kconfig`]), the plan of a run ([`plan`]), the results as stored ([`results`]), the
//! statistics and their verdicts ([`stats`]) and the reports made of them ([`report`]).
//!
//! The crate graph keeps it so: its manifest has no runtime, database or HTTP crate, and of
//! the agent's protocol it takes only the plain types.

pub mod bisect;
pub mod cgroup;
pub mod collect;
pub mod error;
pub mod failure;
pub mod kconfig;
pub mod parse;
pub mod perf_support;
pub mod plan;
pub mod record;
pub mod rehearse;
pub mod report;
pub mod results;
pub mod scenario;
pub mod schedstat;
mod states;
pub mod stats;
pub mod text;
pub mod tuning;
pub mod workload;
pub mod yaml;

pub use error::Error;
