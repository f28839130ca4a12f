//! The controller's integration tests that need no lab VM, one binary: each module talks to
//! a real PostgreSQL (a database of its own per test), real `kreg-agent`s on loopback ports
//! and the real `kreg` binary. The lab's, the browser's, the network namespaces' and the
//! machine's tests are binaries of their own (scripts/test.sh runs them in lanes).

mod adaptive;
mod alerts;
mod bench_bisect;
mod bench_changepoints;
mod bisect_cli;
mod carried;
mod cluster;
mod dashboard_http;
mod dashboard_pages;
mod database_errors;
mod docs;
mod interrupt;
mod keys;
mod kinds;
mod man;
mod names;
mod report_notes;
mod run_only;
mod run_resume;
mod stats_cli;
mod tools;
mod tuning;
mod validate;
mod validate_hostile;
mod workloads;
