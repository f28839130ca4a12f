//! `schedstat`: a raw snapshot of /proc/schedstat with the monotonic time it was taken.

use crate::wire::{ErrorKind, SchedstatSnapshot, StepError};

pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub async fn run() -> Result<SchedstatSnapshot, StepError> {
    let monotonic_ns = monotonic_ns();
    let raw = tokio::fs::read_to_string("/proc/schedstat")
        .await
        .map_err(|e| super::common::err(ErrorKind::Io, format!("reading /proc/schedstat: {e}")))?;
    Ok(SchedstatSnapshot { raw, monotonic_ns })
}
