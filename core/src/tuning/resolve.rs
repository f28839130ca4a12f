//! From a [`Tuning`] to the knob writes one machine needs, read from its sysfs and procfs:
//! which CPUs stay online (SMT siblings, an offline list, other nodes or sockets), then the
//! per-CPU knobs of those CPUs and the machine-wide ones. What the machine does not have is
//! unavailable: an error for a required setting, a note for an optional one.

use crate::Error;
use std::future::Future;

use super::{cpu_list, Knob, Offline, Setting, Tuning};

const CPU: &str = "/sys/devices/system/cpu";

/// Reads a machine's files under /sys and /proc/sys: `None` when there is no such file.
pub trait Machine {
    /// Why a file could not be read (not its absence).
    type Error: std::fmt::Display;
    fn read(&self, path: &str) -> impl Future<Output = Result<Option<String>, Self::Error>>;
}

/// One knob to set: the setting it belongs to, the file, the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub key: String,
    pub path: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolved {
    /// In the order to apply them: the CPUs taken offline first, then the rest.
    pub writes: Vec<Write>,
    /// Optional settings this machine lacks: (key, why).
    pub unavailable: Vec<(String, String)>,
    /// The CPUs the workload is confined to (`llc: one`).
    pub workload_cpus: Option<Vec<u32>>,
    /// The CPUs online once the writes are done.
    pub online: Vec<u32>,
}

/// A value as a knob reads back, for comparison: the bracketed choice of a choice list
/// ("always madvise [never]" → "never"), else the words separated by single spaces.
pub fn normal(value: &str) -> String {
    if let (Some(a), Some(b)) = (value.find('['), value.find(']')) {
        if a < b {
            return value[a + 1..b].trim().to_string();
        }
    }
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// "0-3,8" as sysfs writes CPU lists (an empty file: none).
pub fn parse_cpus(text: &str) -> Option<Vec<u32>> {
    if text.trim().is_empty() {
        return Some(Vec::new());
    }
    super::parse_cpu_list(text.trim())
}

struct Cx<'m, M: Machine> {
    m: &'m M,
    out: Resolved,
    /// Required settings the machine lacks.
    missing: Vec<String>,
}

impl<M: Machine> Cx<'_, M> {
    async fn read(&self, path: &str) -> Result<Option<String>, Error> {
        self.m.read(path).await.map_err(|e| Error::machine(e.to_string()))
    }

    fn lack(&mut self, s: &Setting, why: String) {
        if s.optional {
            self.out.unavailable.push((s.knob.key(), why));
        } else {
            self.missing.push(format!("{}: {why}", s.knob.key()));
        }
    }

    fn write(&mut self, s: &Setting, path: String, value: impl Into<String>) {
        self.out.writes.push(Write {
            key: s.knob.key(),
            path,
            value: value.into(),
        });
    }

    /// The CPUs that stay online under an SMT or offline setting.
    async fn topology(&mut self, s: &Setting, online: &mut Vec<u32>) -> Result<(), Error> {
        match &s.knob {
            Knob::Smt(on) => {
                let path = format!("{CPU}/smt/control");
                match self.read(&path).await?.map(|v| normal(&v)) {
                    None => self.lack(s, format!("no {path}")),
                    Some(v) if v == "notsupported" || v == "notimplemented" => {
                        self.lack(s, format!("SMT control is {v} on this machine"))
                    }
                    Some(_) => {
                        if !on {
                            let mut keep = Vec::new();
                            for &c in online.iter() {
                                let sib = self
                                    .read(&format!("{CPU}/cpu{c}/topology/thread_siblings_list"))
                                    .await?
                                    .and_then(|t| parse_cpus(&t))
                                    .unwrap_or_default();
                                if sib.iter().all(|x| *x >= c) {
                                    keep.push(c);
                                }
                            }
                            *online = keep;
                        }
                        self.write(s, path, if *on { "on" } else { "off" });
                    }
                }
            }
            Knob::CpusOffline(how) => {
                let Some(off) = self.offline_set(s, how, online).await? else {
                    return Ok(());
                };
                if off.len() >= online.len() && !off.is_empty() {
                    self.missing.push(format!(
                        "cpus_offline: would take every online CPU ({}) offline",
                        cpu_list(online)
                    ));
                    return Ok(());
                }
                for c in &off {
                    self.write(s, format!("{CPU}/cpu{c}/online"), "0");
                }
                online.retain(|c| !off.contains(c));
            }
            _ => {}
        }
        Ok(())
    }

    /// The online CPUs an offline setting takes down (`None`: unavailable, said).
    async fn offline_set(&mut self, s: &Setting, how: &Offline, online: &[u32]) -> Result<Option<Vec<u32>>, Error> {
        let off: Vec<u32> = match how {
            Offline::Cpus(list) => {
                for c in list {
                    if !online.contains(c) {
                        self.missing.push(format!(
                            "cpus_offline: CPU {c} is not online here (online: {})",
                            cpu_list(online)
                        ));
                        return Ok(None);
                    }
                    if self.read(&format!("{CPU}/cpu{c}/online")).await?.is_none() {
                        self.lack(s, format!("CPU {c} cannot be taken offline (no {CPU}/cpu{c}/online)"));
                        return Ok(None);
                    }
                }
                list.clone()
            }
            Offline::OtherNodes => {
                let nodes = self
                    .read("/sys/devices/system/node/online")
                    .await?
                    .and_then(|t| parse_cpus(&t));
                let Some(first) = nodes.as_ref().and_then(|n| n.first().copied()) else {
                    self.lack(s, "no NUMA node list (/sys/devices/system/node/online)".into());
                    return Ok(None);
                };
                let keep = self
                    .read(&format!("/sys/devices/system/node/node{first}/cpulist"))
                    .await?
                    .and_then(|t| parse_cpus(&t))
                    .unwrap_or_default();
                online.iter().copied().filter(|c| !keep.contains(c)).collect()
            }
            Offline::OtherSockets => {
                let package = |c: u32| format!("{CPU}/cpu{c}/topology/physical_package_id");
                let Some(first) = self.read(&package(online[0])).await? else {
                    self.lack(s, format!("no socket numbers ({})", package(online[0])));
                    return Ok(None);
                };
                let mut off = Vec::new();
                for &c in online {
                    if self.read(&package(c)).await?.map(|p| normal(&p)) != Some(normal(&first)) {
                        off.push(c);
                    }
                }
                off
            }
        };
        Ok(Some(off))
    }

    /// The writes of a setting that does not change which CPUs are online.
    async fn knob(&mut self, s: &Setting, online: &[u32]) -> Result<(), Error> {
        match &s.knob {
            Knob::Governor(_) | Knob::Turbo(_) | Knob::DeepIdle(_) => self.cpu_knob(s, online).await?,
            Knob::OneLlc => self.one_llc(s, online).await?,
            Knob::DmaLatency(us) => self.plain(s, "/dev/cpu_dma_latency", &us.to_string()).await?,
            Knob::NumaBalancing(on) => {
                self.plain(s, "/proc/sys/kernel/numa_balancing", if *on { "1" } else { "0" })
                    .await?
            }
            Knob::Thp(v) => {
                let path = "/sys/kernel/mm/transparent_hugepage/enabled";
                match self.read(path).await? {
                    None => self.lack(s, format!("no {path}")),
                    Some(choices) if !choices.replace(['[', ']'], " ").split_whitespace().any(|x| x == v) => {
                        self.lack(s, format!("{path} offers {}", choices.trim()))
                    }
                    Some(_) => self.write(s, path.into(), v.clone()),
                }
            }
            Knob::Sched { name, value } => {
                let debugfs = format!("/sys/kernel/debug/sched/{name}");
                let sysctl = format!("/proc/sys/kernel/sched_{name}");
                if self.read(&debugfs).await?.is_some() {
                    self.write(s, debugfs, value.clone());
                } else if self.read(&sysctl).await?.is_some() {
                    self.write(s, sysctl, value.clone());
                } else {
                    self.lack(s, format!("no scheduler knob {name} (neither {debugfs} nor {sysctl})"));
                }
            }
            Knob::Sysctl { name, value } => {
                let path = format!("/proc/sys/{}", name.replace('.', "/"));
                self.plain(s, &path, value).await?
            }
            Knob::Smt(_) | Knob::CpusOffline(_) => {}
        }
        Ok(())
    }

    /// The cpufreq and cpuidle settings, written per online CPU (turbo machine-wide).
    async fn cpu_knob(&mut self, s: &Setting, online: &[u32]) -> Result<(), Error> {
        let first = online[0];
        match &s.knob {
            Knob::Governor(g) => {
                let base = format!("{CPU}/cpu{first}/cpufreq");
                match self.read(&format!("{base}/scaling_available_governors")).await? {
                    None => self.lack(s, format!("no cpufreq on this machine (no {base})")),
                    Some(list) if !list.split_whitespace().any(|x| x == g) => {
                        self.lack(s, format!("governor {g} is not offered (available: {})", list.trim()))
                    }
                    Some(_) => {
                        for c in online {
                            self.write(s, format!("{CPU}/cpu{c}/cpufreq/scaling_governor"), g.clone());
                        }
                    }
                }
            }
            Knob::Turbo(on) => {
                let no_turbo = format!("{CPU}/intel_pstate/no_turbo");
                let boost = format!("{CPU}/cpufreq/boost");
                if self.read(&no_turbo).await?.is_some() {
                    self.write(s, no_turbo, if *on { "0" } else { "1" });
                } else if self.read(&boost).await?.is_some() {
                    self.write(s, boost, if *on { "1" } else { "0" });
                } else {
                    self.lack(s, format!("neither {no_turbo} nor {boost}"));
                }
            }
            Knob::DeepIdle(on) => {
                let state = |c: u32, i: u32| format!("{CPU}/cpu{c}/cpuidle/state{i}/disable");
                if self.read(&state(first, 1)).await?.is_none() {
                    self.lack(
                        s,
                        format!("no cpuidle state but the first ({} missing)", state(first, 1)),
                    );
                    return Ok(());
                }
                for &c in online {
                    for i in 1..32 {
                        if self.read(&state(c, i)).await?.is_none() {
                            break;
                        }
                        self.write(s, state(c, i), if *on { "0" } else { "1" });
                    }
                }
            }
            _ => unreachable!("only cpufreq and cpuidle settings come here"),
        }
        Ok(())
    }

    /// A single file that must exist.
    async fn plain(&mut self, s: &Setting, path: &str, value: &str) -> Result<(), Error> {
        if self.read(path).await?.is_some() {
            self.write(s, path.into(), value);
        } else {
            self.lack(s, format!("no {path}"));
        }
        Ok(())
    }

    /// The CPUs sharing the highest cache level with the first online CPU.
    async fn one_llc(&mut self, s: &Setting, online: &[u32]) -> Result<(), Error> {
        let first = online[0];
        let mut best: Option<(u32, Vec<u32>)> = None;
        for i in 0..16 {
            let dir = format!("{CPU}/cpu{first}/cache/index{i}");
            let Some(level) = self.read(&format!("{dir}/level")).await? else {
                break;
            };
            let level: u32 = level.trim().parse().unwrap_or(0);
            if best.as_ref().is_some_and(|(l, _)| *l >= level) {
                continue;
            }
            if let Some(list) = self.read(&format!("{dir}/shared_cpu_list")).await? {
                best = Some((level, parse_cpus(&list).unwrap_or_default()));
            }
        }
        match best {
            None => self.lack(s, format!("no cache topology ({CPU}/cpu{first}/cache)")),
            Some((_, shared)) => {
                let cpus: Vec<u32> = online.iter().copied().filter(|c| shared.contains(c)).collect();
                self.out.workload_cpus = Some(cpus);
            }
        }
        Ok(())
    }
}

/// The writes `tuning` needs on `m`, whose online CPUs (before kreg changed any) are
/// `online`. `Err`: the machine could not be read, or lacks a required setting.
pub async fn resolve<M: Machine>(m: &M, tuning: &Tuning, online: &[u32]) -> Result<Resolved, Error> {
    if online.is_empty() {
        return Err(Error::machine("no online CPU listed in /sys/devices/system/cpu/online"));
    }
    let mut cx = Cx {
        m,
        out: Resolved::default(),
        missing: Vec::new(),
    };
    let mut left = online.to_vec();
    // SMT first: an offline list names CPUs of the machine as SMT leaves it.
    let mut topo: Vec<&Setting> = tuning.settings.iter().filter(|s| s.knob.topology()).collect();
    topo.sort_by_key(|s| !matches!(s.knob, Knob::Smt(_)));
    for s in topo {
        cx.topology(s, &mut left).await?;
    }
    if left.is_empty() {
        cx.missing.push("no CPU would stay online".into());
    } else {
        for s in tuning.settings.iter().filter(|s| !s.knob.topology()) {
            cx.knob(s, &left).await?;
        }
    }
    if !cx.missing.is_empty() {
        return Err(Error::machine(format!("this machine lacks: {}", cx.missing.join("; "))));
    }
    cx.out.online = left;
    Ok(cx.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A machine's files, as a map: the resolution logic without a machine (the lab run
    /// tests it against a real kernel's sysfs).
    struct Files(HashMap<String, String>);

    impl Machine for Files {
        type Error = String;
        async fn read(&self, path: &str) -> Result<Option<String>, String> {
            Ok(self.0.get(path).cloned())
        }
    }

    fn two_socket_smt() -> Files {
        // 4 CPUs: 0 and 2 are siblings on socket 0, 1 and 3 on socket 1.
        let mut f = HashMap::new();
        for c in 0..4u32 {
            let sib = if c % 2 == 0 { "0,2" } else { "1,3" };
            f.insert(format!("{CPU}/cpu{c}/topology/thread_siblings_list"), sib.to_string());
            f.insert(
                format!("{CPU}/cpu{c}/topology/physical_package_id"),
                (c % 2).to_string(),
            );
            f.insert(format!("{CPU}/cpu{c}/cpufreq/scaling_governor"), "schedutil".into());
            f.insert(
                format!("{CPU}/cpu{c}/cpufreq/scaling_available_governors"),
                "performance schedutil".into(),
            );
            for i in 0..3 {
                f.insert(format!("{CPU}/cpu{c}/cpuidle/state{i}/disable"), "0".into());
            }
            if c > 0 {
                f.insert(format!("{CPU}/cpu{c}/online"), "1".into());
            }
        }
        f.insert(format!("{CPU}/smt/control"), "on".into());
        // L1d, L1i and L2 per core (siblings 0 and 2), the L3 shared by all four.
        for (i, level, shared) in [(0, "1", "0,2"), (1, "1", "0,2"), (2, "2", "0,2"), (3, "3", "0-3")] {
            f.insert(format!("{CPU}/cpu0/cache/index{i}/level"), level.into());
            f.insert(format!("{CPU}/cpu0/cache/index{i}/shared_cpu_list"), shared.into());
        }
        f.insert(
            "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            "always [madvise] never".into(),
        );
        Files(f)
    }

    /// Runs a future whose every await is ready at once (the files above are in memory).
    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("an in-memory read waited"),
        }
    }

    fn req(knob: Knob) -> Setting {
        Setting { knob, optional: false }
    }

    async fn paths(t: &Tuning) -> Result<Resolved, Error> {
        resolve(&two_socket_smt(), t, &[0, 1, 2, 3]).await
    }

    #[test]
    fn offline_cpus_come_first_and_per_cpu_knobs_follow_the_cpus_left() {
        block_on(async {
            let t = Tuning {
                settings: vec![
                    req(Knob::Governor("performance".into())),
                    req(Knob::DeepIdle(false)),
                    req(Knob::CpusOffline(Offline::OtherSockets)),
                    req(Knob::Thp("never".into())),
                    req(Knob::DmaLatency(0)),
                ],
            };
            let mut m = two_socket_smt();
            m.0.insert("/dev/cpu_dma_latency".into(), "2000000000".into());
            let r = resolve(&m, &t, &[0, 1, 2, 3]).await.unwrap();
            let got: Vec<String> = r.writes.iter().map(|w| format!("{}={}", w.path, w.value)).collect();
            assert_eq!(
                got,
                [
                    format!("{CPU}/cpu1/online=0"),
                    format!("{CPU}/cpu3/online=0"),
                    format!("{CPU}/cpu0/cpufreq/scaling_governor=performance"),
                    format!("{CPU}/cpu2/cpufreq/scaling_governor=performance"),
                    format!("{CPU}/cpu0/cpuidle/state1/disable=1"),
                    format!("{CPU}/cpu0/cpuidle/state2/disable=1"),
                    format!("{CPU}/cpu2/cpuidle/state1/disable=1"),
                    format!("{CPU}/cpu2/cpuidle/state2/disable=1"),
                    "/sys/kernel/mm/transparent_hugepage/enabled=never".to_string(),
                    "/dev/cpu_dma_latency=0".to_string(),
                ]
            );
            assert_eq!(r.online, [0, 2]);
        })
    }

    #[test]
    fn smt_off_keeps_the_first_sibling_and_llc_confines_to_the_largest_cache() {
        block_on(async {
            let t = Tuning {
                settings: vec![req(Knob::Smt(false)), req(Knob::OneLlc)],
            };
            let r = paths(&t).await.unwrap();
            assert_eq!(r.online, [0, 1]);
            assert_eq!(
                r.workload_cpus,
                Some(vec![0, 1]),
                "the L3 spans 0-3, of which 0 and 1 stay online"
            );
            assert_eq!(r.writes.len(), 1);
        })
    }

    #[test]
    fn what_the_machine_lacks_fails_a_required_setting_and_is_noted_for_an_optional_one() {
        block_on(async {
            let mut t = Tuning {
                settings: vec![
                    req(Knob::Turbo(false)),
                    req(Knob::Governor("ondemand".into())),
                    req(Knob::CpusOffline(Offline::Cpus(vec![0]))),
                    req(Knob::DmaLatency(0)),
                ],
            };
            let e = paths(&t).await.unwrap_err();
            assert!(e.to_string().contains("dma_latency: no /dev/cpu_dma_latency"), "{e}");
            assert!(e.to_string().contains("turbo: neither"), "{e}");
            assert!(
                e.to_string()
                    .contains("governor ondemand is not offered (available: performance schedutil)"),
                "{e}"
            );
            assert!(e.to_string().contains("CPU 0 cannot be taken offline"), "{e}");
            for s in &mut t.settings {
                s.optional = true;
            }
            let r = paths(&t).await.unwrap();
            assert!(r.writes.is_empty());
            let keys: Vec<&str> = r.unavailable.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, ["cpus_offline", "turbo", "governor", "dma_latency"]);
            // Every CPU offline is never a machine's lack: always an error.
            let all = Tuning {
                settings: vec![Setting {
                    knob: Knob::CpusOffline(Offline::Cpus(vec![1, 2, 3])),
                    optional: true,
                }],
            };
            let e = resolve(&two_socket_smt(), &all, &[1, 2, 3]).await.unwrap_err();
            assert!(
                e.to_string().contains("would take every online CPU (1-3) offline"),
                "{e}"
            );
        })
    }

    #[test]
    fn read_backs_compare_by_their_choice() {
        assert_eq!(normal("always madvise [never]\n"), "never");
        assert_eq!(normal("4096\t16384  4194304"), "4096 16384 4194304");
        assert_eq!(parse_cpus("0-2,5\n"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpus("\n"), Some(vec![]));
    }
}
