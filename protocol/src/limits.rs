//! Limits both sides check: the controller when it loads a scenario (so a bad one is refused
//! with its line and column), the agent when a step arrives.

/// Most groups one cgroup tree may hold: a hierarchy is a test fixture, not a fork bomb.
pub const MAX_GROUPS: u64 = 100_000;
