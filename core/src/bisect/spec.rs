//! What a scenario's `bisect:` section (or `kreg bisect`'s options) says to bisect.

use super::Rules;
use crate::Error;

/// A bisection as declared: each part may also come from the command line, which wins.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spec {
    /// The scenario's kernel built from git whose tree, config and patches each step uses
    /// (when the scenario has one such kernel, that one).
    pub kernel: Option<String>,
    pub good: Option<String>,
    pub bad: Option<String>,
    /// The workload and the metric the bisection follows.
    pub metric: Option<(String, String)>,
    /// The variant the workload runs under (when the scenario has one, that one).
    pub variant: Option<String>,
    /// How it decides: the section's settings over kreg's defaults.
    pub rules: Rules,
}

/// `WORKLOAD/METRIC` split in two, or why it is not that.
pub fn metric_of(text: &str) -> Result<(String, String), Error> {
    match text.split_once('/') {
        Some((w, m)) if !w.is_empty() && !m.is_empty() => Ok((w.to_string(), m.to_string())),
        _ => Err(Error::invalid(format!(
            "metric {text:?}: expected WORKLOAD/METRIC (e.g. hb/time)"
        ))),
    }
}
