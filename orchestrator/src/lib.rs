//! kreg: reproduce Linux kernel performance regressions. See ARCHITECTURE.md for the map.

pub mod scenario;
