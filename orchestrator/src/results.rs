//! What a run produced, in the shape the store returns it and reports, comparisons and the
//! dashboard read it. Plain data: no I/O here.

/// One stored sample with the matrix point it belongs to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Sample {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub iteration: i32,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
    pub kernel_release: String,
    pub observed_policy: String,
}

/// Provenance of one kernel of a run: the boots it ran on and what its jobs ran with.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KernelProvenance {
    pub kernel: String,
    /// "host: release, N CPUs, cpu model, cmdline", one per distinct boot setting.
    pub boots: Vec<String>,
    pub cpu_models: Vec<String>,
    pub cmdlines: Vec<String>,
    /// "tool@host version", distinct.
    pub tools: Vec<String>,
    /// kreg's builds: "key (config hash …)".
    pub builds: Vec<String>,
    /// Settings kreg changed for the run: "sut: kernel.sched_schedstats 0 → 1, restored".
    #[serde(default)]
    pub settings: Vec<String>,
    /// The SUT had no /proc/schedstat on this kernel: no scheduler statistics.
    #[serde(default)]
    pub no_schedstat: bool,
}
