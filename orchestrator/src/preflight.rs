//! Before a run is created: every machine host is reached and authenticated (protocol,
//! token), the sched features the variants name are checked against the running
//! kernel, and a perf known to lack `perf sched stats` is refused for that collector. A run that cannot start is never recorded. Lab hosts start with the run.

use std::time::Duration;

use crate::config::Config;
use crate::scenario::{KernelSource, Scenario};

/// What the checks found: problems stop the run; warnings are said and it goes on.
#[derive(Default)]
pub struct Findings {
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
    /// What was done to reach the hosts (an agent installed over SSH, say).
    pub notes: Vec<String>,
    /// The agents reached and answering, handed to the engine (one SSH login per host).
    pub agents: crate::engine::reach::Reached,
}

/// The features of the variants that the kernel's features file does not know, as
/// (variant, feature). `NO_X` and `X` both name feature X.
pub fn unknown_features(s: &Scenario, features_file: &str) -> Vec<(String, String)> {
    let known: Vec<&str> = features_file
        .split_whitespace()
        .map(|t| t.strip_prefix("NO_").unwrap_or(t))
        .collect();
    let mut out = Vec::new();
    for v in &s.variants {
        for f in &v.features {
            let base = f.strip_prefix("NO_").unwrap_or(f);
            if !known.contains(&base) {
                out.push((v.name.clone(), f.clone()));
            }
        }
    }
    out
}

/// Reaches every http and ssh host (an ssh host gets kreg's agent installed or upgraded
/// first); checks the variants' features on the SUT's running kernel.
pub async fn check(s: &Scenario, cfg: &Config) -> Findings {
    let mut found = Findings::default();
    // A perf known to lack `perf sched stats`, asked for that collector.
    let perfs = crate::kernel::perf::support::perfs(s, || {
        crate::kernel::perf::support::controller_perf(crate::lab::initramfs::PERF.0)
    });
    found.problems.extend(crate::kernel::perf::support::refusals(s, &perfs));
    let sut = s.sut().name.clone();
    // Features can be checked for certain only when every kernel is the running one.
    let only_running = s.kernels.iter().all(|k| matches!(k.source, KernelSource::Running));
    for h in &s.hosts {
        let agent = match crate::engine::reach::agent(h, cfg, None).await {
            Ok(Some(a)) => a,
            Ok(None) => continue,
            Err(e) => {
                found.problems.push(format!("host {}: {e}", h.name));
                continue;
            }
        };
        let url = agent.reach.describe();
        match &agent.reach {
            crate::engine::reach::Reach::Http { url, insecure: true } => found.warnings.push(format!(
                "host {}: insecure: true: the agent's token crosses the network to {url} in clear text",
                h.name
            )),
            crate::engine::reach::Reach::Ssh { outcome, .. } => {
                found.notes.push(format!("host {}: {url}: agent {outcome}", h.name))
            }
            _ => {}
        }
        let client = &agent.client;
        let reached = match tokio::time::timeout(Duration::from_secs(20), async {
            client.version().await?;
            client.identity().await
        })
        .await
        {
            Err(_) => Err(format!("agent ({url}) did not answer within 20 s")),
            Ok(r) => r.map_err(|e| e.to_string()),
        };
        let id = match reached {
            Ok(id) => id,
            Err(e) => {
                found.problems.push(format!("host {}: {e}", h.name));
                continue;
            }
        };
        found.agents.insert(h.name.clone(), agent);
        if h.name != sut || s.variants.iter().all(|v| v.features.is_empty()) {
            continue;
        }
        let Some(features) = &id.sched_features else {
            found.warnings.push(format!(
                "host {}: its running kernel {} shows no /sys/kernel/debug/sched/features: the variants' sched features are checked when each kernel boots",
                h.name, id.kernel_release
            ));
            continue;
        };
        for (variant, feature) in unknown_features(s, features) {
            let text = format!(
                "variant {variant}: sched feature {feature} is unknown to {} on {}",
                id.kernel_release, h.name
            );
            if only_running {
                found.problems.push(text);
            } else {
                found.warnings.push(format!(
                    "{text} (the kernels under test may have it; it is checked when each boots)"
                ));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_matched_with_or_without_no() {
        let text = "name: f\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running} ]\nvariants: [ {name: v, features: [NO_TTWU_QUEUE, PLACE_LAG, NO_MADE_UP]} ]\nworkloads: [ {name: hb, kind: hackbench} ]\n";
        let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
        let file = "GENTLE_FAIR_SLEEPERS NO_PLACE_LAG TTWU_QUEUE RUN_TO_PARITY";
        assert_eq!(
            unknown_features(&s, file),
            vec![("v".to_string(), "NO_MADE_UP".to_string())]
        );
    }
}
