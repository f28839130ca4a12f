//! The fleet: machines in a pool, runs submitted to a queue, `kreg worker` processes
//! leasing machine pairs, all against real agents and a real PostgreSQL.

mod blocks;
mod harness;
mod health;
mod isolated;
mod queue;
mod soak;
mod soak_env;
