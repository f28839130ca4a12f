//! What can be told before a run about the perf each kernel's jobs run: the pure part is
//! `kreg_core::perf_support`; here, the controller's own perf is asked.

pub use kreg_core::perf_support::*;

/// The controller's own perf at `path` (what a lab guest runs): `PATH (its version)`,
/// and whether its usage names `perf sched stats`; `None` when it cannot be run.
pub fn controller_perf(path: &str) -> Option<(String, bool)> {
    let run = |args: &[&str]| {
        std::process::Command::new(path)
            .args(args)
            .env("PAGER", "cat")
            .stdin(std::process::Stdio::null())
            .output()
            .ok()
    };
    let version = run(&["version"]).filter(|o| o.status.success())?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let usage = run(&["sched", "stats", "--help"])?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&usage.stdout),
        String::from_utf8_lossy(&usage.stderr)
    );
    Some((format!("{path} ({version})"), text.contains("perf sched stats")))
}
