//! kreg: reproduce Linux kernel performance regressions. See ARCHITECTURE.md for the map.
//!
//! This crate is the part that touches the world: configuration, the database, the engine
//! that drives hosts, ssh, the lab, kernel builds, boots, the dashboard and the command
//! line. What it decides with (scenarios, plans, statistics, reports) is `kreg-core`,
//! re-exported here under the same names.

pub use kreg_core::{
    bisect, cgroup, collect, kconfig, parse, plan, record, rehearse, report, results, scenario, schedstat, stats, text,
    tuning, workload, yaml, Error,
};

pub mod boot;
pub mod config;
pub mod engine;
pub mod failure;
pub mod kernel;
pub mod lab;
pub mod poll;
pub mod preflight;
pub mod rehearsal;
pub mod scenario_file;
pub mod secrets;
pub mod ssh;
pub mod store;
pub mod token;
pub mod view;
pub mod web;

#[cfg(test)]
mod boundaries;
