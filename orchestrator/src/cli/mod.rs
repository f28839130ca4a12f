//! One file per command of `kreg`; `main` parses the arguments and dispatches here.

pub mod agent;
pub mod alerts;
pub mod bench;
pub mod bisect;
pub mod bundle;
pub mod db;
pub mod fleet;
pub mod health_check;
pub mod kernels;
pub mod lab;
pub mod man;
pub mod parse;
pub mod rehearse;
pub mod report;
pub mod resume;
pub mod run;
pub mod schedstat;
pub mod serve;
pub mod stats;
pub mod status;
pub mod validate;
pub mod worker;
