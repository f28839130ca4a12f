//! What kind of figure a metric is, as its parser knows it, and the test that follows: a
//! mean or a throughput is compared by its mean (Welch), a percentile or a count by ranks.

use crate::Error;

/// The kind of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A mean over the run (a mean latency, a time per operation, a run time).
    Mean,
    /// Work per unit of time (requests/s, transactions/min).
    Throughput,
    /// A percentile, a minimum or a maximum of a distribution (latency p99, rps p50).
    Latency,
    /// A count of events (errors, retransmissions).
    Count,
}

impl MetricKind {
    pub const ALL: [MetricKind; 4] = [
        MetricKind::Mean,
        MetricKind::Throughput,
        MetricKind::Latency,
        MetricKind::Count,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Mean => "mean",
            MetricKind::Throughput => "throughput",
            MetricKind::Latency => "latency",
            MetricKind::Count => "count",
        }
    }

    /// The kind from its name (`percentile` is another name for `latency`).
    pub fn from_name(s: &str) -> Option<MetricKind> {
        match s {
            "percentile" => Some(MetricKind::Latency),
            _ => MetricKind::ALL.into_iter().find(|k| k.as_str() == s),
        }
    }

    /// Whether rows of this kind are compared by ranks (and summarised by median and IQR).
    pub fn by_ranks(self) -> bool {
        matches!(self, MetricKind::Latency | MetricKind::Count)
    }
}

impl std::fmt::Display for MetricKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl TryFrom<String> for MetricKind {
    type Error = crate::Error;
    fn try_from(s: String) -> Result<Self, Error> {
        MetricKind::from_name(&s).ok_or_else(|| Error::invalid(format!("unknown metric kind {s:?}")))
    }
}
