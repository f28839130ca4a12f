//! kreg: reproduce Linux kernel performance regressions. See ARCHITECTURE.md for the map.

pub mod boot;
pub mod cgroup;
pub mod collect;
pub mod config;
pub mod engine;
pub mod failure;
pub mod kconfig;
pub mod kernel;
pub mod lab;
pub mod parse;
pub mod plan;
pub mod poll;
pub mod preflight;
pub mod report;
pub mod results;
pub mod scenario;
pub mod scenario_file;
pub mod schedstat;
pub mod ssh;
pub mod stats;
pub mod store;
pub mod tuning;
pub mod view;
pub mod web;
pub mod workload;
pub mod yaml;
