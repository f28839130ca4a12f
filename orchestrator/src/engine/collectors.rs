//! The collectors around a job's measured phase, each a [`Collector`]: /proc/schedstat,
//! the job's cgroup `cpu.stat`, `perf stat -a`, `perf sched stats record` and
//! /proc/interrupts. Each reads (or starts) what it needs just before the measured phase and
//! reads (or stops) it just after, in the reverse order, so that each one's window lies
//! inside the windows of those started before it (perf's recording inside kreg's own
//! /proc/schedstat snapshots: every counter perf saw grow, kreg saw grow as much or more);
//! what is large is fetched once every window is closed. A collector keeps what it read in
//! the job's record and turns it into metrics from there, and whatever it left running on
//! a job that failed midway is stopped.

use kreg_protocol::client::AgentClient;

use super::error::{agent_fail, fail, Stopped};
use crate::parse::Metric;
use crate::record::{Outputs, RawKind, When};

/// One collector around the measured phase.
pub trait Collector {
    /// Just before the measured phase.
    async fn before(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped>;
    /// Just after it (the collectors in the reverse order of `before`).
    async fn after(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped>;
    /// Once every collector's `after` is done: what is large, fetched out of the others'
    /// windows.
    async fn fetch(&mut self, _sut: &AgentClient, _raw: &mut Outputs) -> Result<(), Stopped> {
        Ok(())
    }
    /// Its metrics, from what it kept in the record (the tables it derives added to it).
    fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped>;
    /// After a job that failed midway: whatever it left running on the SUT is stopped.
    async fn cleanup(&mut self, _sut: &AgentClient) {}
}

/// Each collector kreg has (a closed set: the scenario's `collect:` names them).
enum Any<'c> {
    Schedstat(Schedstat),
    CpuStat(CpuStat<'c>),
    PerfStat(PerfStat),
    PerfSchedStats(PerfSchedStats),
    Interrupts(Interrupts),
}

/// `$call` on whichever collector `$any` holds.
macro_rules! each {
    ($any:expr, $c:ident => $call:expr) => {
        match $any {
            Any::Schedstat($c) => $call,
            Any::CpuStat($c) => $call,
            Any::PerfStat($c) => $call,
            Any::PerfSchedStats($c) => $call,
            Any::Interrupts($c) => $call,
        }
    };
}

/// A job's collectors, in the order their windows open.
pub struct Collectors<'a> {
    sut: &'a AgentClient,
    all: Vec<Any<'a>>,
}

impl<'a> Collectors<'a> {
    /// The collectors a job asked for: /proc/schedstat when the kernel has it (`schedstat`),
    /// the cgroup's `cpu.stat` when the job has one, then the scenario's `collect:`; `tag`
    /// names the job's files on the SUT.
    pub fn of(
        sut: &'a AgentClient,
        schedstat: bool,
        cgroup: Option<&'a super::cgroup::Placed>,
        collect: crate::collect::Collect,
        tag: &str,
    ) -> Collectors<'a> {
        let mut all = Vec::new();
        if schedstat {
            all.push(Any::Schedstat(Schedstat));
        }
        if let Some(cg) = cgroup {
            all.push(Any::CpuStat(CpuStat(cg)));
        }
        if collect.perf_stat {
            all.push(Any::PerfStat(PerfStat(None)));
        }
        if collect.perf_sched_stats {
            all.push(Any::PerfSchedStats(PerfSchedStats {
                path: super::sched_stats::data_path(tag),
                running: None,
                ended: None,
            }));
        }
        if collect.interrupts {
            all.push(Any::Interrupts(Interrupts));
        }
        Collectors { sut, all }
    }

    /// Every window opened, or the first failure.
    pub async fn before(&mut self, raw: &mut Outputs) -> Result<(), Stopped> {
        for c in self.all.iter_mut() {
            each!(c, c => c.before(self.sut, raw).await)?;
        }
        Ok(())
    }

    /// Every window closed (the last opened first), then what is large fetched.
    pub async fn after(&mut self, raw: &mut Outputs) -> Result<(), Stopped> {
        for c in self.all.iter_mut().rev() {
            each!(c, c => c.after(self.sut, raw).await)?;
        }
        for c in self.all.iter_mut() {
            each!(c, c => c.fetch(self.sut, raw).await)?;
        }
        Ok(())
    }

    /// Every collector's metrics, in the order of the collectors.
    pub fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        let mut out = Vec::new();
        for c in &self.all {
            out.extend(each!(c, c => c.metrics(raw))?);
        }
        Ok(out)
    }

    /// What a failed job left running is stopped.
    pub async fn cleanup(&mut self) {
        for c in self.all.iter_mut() {
            each!(c, c => c.cleanup(self.sut).await);
        }
    }
}

/// Both snapshots of `kind`, or why not.
fn both(raw: &Outputs, kind: fn(When) -> RawKind, what: &str) -> Result<(String, String), Stopped> {
    match (raw.get(&kind(When::Before)), raw.get(&kind(When::After))) {
        (Some(b), Some(a)) => Ok((b.to_string(), a.to_string())),
        _ => Err(fail(format!("the {what} snapshots are missing"))),
    }
}

/// /proc/schedstat on the SUT; kept raw (the report diffs it). A read that fails leaves
/// the snapshot out, as the counters are provenance, not a metric.
struct Schedstat;

impl Schedstat {
    async fn read(sut: &AgentClient, when: When, raw: &mut Outputs) {
        if let Ok(s) = sut.schedstat().await {
            raw.push(RawKind::Schedstat(when), s.raw);
        }
    }
}

impl Collector for Schedstat {
    async fn before(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        Schedstat::read(sut, When::Before, raw).await;
        Ok(())
    }
    async fn after(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        Schedstat::read(sut, When::After, raw).await;
        Ok(())
    }
    fn metrics(&self, _raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        Ok(Vec::new())
    }
}

/// The job's cgroup `cpu.stat` (on the workload's host, or the server's).
struct CpuStat<'c>(&'c super::cgroup::Placed);

impl CpuStat<'_> {
    async fn read(&self, when: When, raw: &mut Outputs) -> Result<(), Stopped> {
        let stat = self.0.cpu_stat().await.map_err(|e| Stopped {
            unreachable: e.is_unreachable(),
            ..fail(format!("reading the cgroup's cpu.stat: {e}"))
        })?;
        raw.push(RawKind::CgroupStat(when), stat);
        Ok(())
    }
}

impl Collector for CpuStat<'_> {
    async fn before(&mut self, _sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        self.read(When::Before, raw).await
    }
    async fn after(&mut self, _sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        self.read(When::After, raw).await
    }
    fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        let (b, a) = both(raw, RawKind::CgroupStat, "cgroup's cpu.stat")?;
        crate::cgroup::metrics(&b, &a).map_err(|e| fail(e.to_string()))
    }
}

/// `perf stat -a` over the measured phase: started once its counters are open, interrupted
/// after; its totals summed.
struct PerfStat(Option<u64>);

impl Collector for PerfStat {
    async fn before(&mut self, sut: &AgentClient, _raw: &mut Outputs) -> Result<(), Stopped> {
        use crate::collect::perf_stat;
        let req = kreg_protocol::wire::ExecRequest {
            argv: perf_stat::argv(),
            timeout_secs: 0,
            ..Default::default()
        };
        let ready = |st: &kreg_protocol::wire::ProcessState| perf_stat::counting(&st.stderr);
        let what = super::Readiness {
            what: "perf stat",
            until_what: "before counting",
            secs: 30,
            late: "perf stat printed no count within 30 s",
        };
        match super::spawn_until_ready(sut, req, what, ready).await {
            Ok(id) => {
                self.0 = Some(id);
                Ok(())
            }
            Err(super::NotReady::Agent(e)) => Err(agent_fail("starting perf stat", &e)),
            Err(super::NotReady::Said(why)) => Err(fail(why)),
        }
    }
    async fn after(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        let Some(id) = self.0.take() else {
            return Err(fail("perf stat was not started"));
        };
        let st = sut
            .interrupt(id, 10)
            .await
            .map_err(|e| agent_fail("stopping perf stat", &e))?;
        raw.push(RawKind::PerfStat, st.stderr);
        Ok(())
    }
    fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        let Some(text) = raw.get(&RawKind::PerfStat).map(str::to_string) else {
            return Err(fail("the perf stat output is missing"));
        };
        let totals = crate::collect::perf_stat::totals(&text).map_err(|e| fail(e.to_string()))?;
        let summary = crate::collect::perf_stat::summarize(&totals);
        raw.push(RawKind::PerfStatTotals, summary.table);
        if !summary.uncounted.is_empty() {
            raw.push(RawKind::PerfStatUncounted, summary.uncounted.join("\n"));
        }
        Ok(summary.metrics)
    }
    async fn cleanup(&mut self, sut: &AgentClient) {
        if let Some(id) = self.0.take() {
            let _ = sut.stop(id, 5).await;
        }
    }
}

/// `perf sched stats record` over the measured phase; its report and data file fetched
/// once every window is closed.
struct PerfSchedStats {
    path: String,
    running: Option<super::sched_stats::Recording>,
    /// Ended, with what perf said, to fetch.
    ended: Option<(super::sched_stats::Recording, String)>,
}

impl Collector for PerfSchedStats {
    async fn before(&mut self, sut: &AgentClient, _raw: &mut Outputs) -> Result<(), Stopped> {
        let rec = super::sched_stats::start(sut, &self.path)
            .await
            .map_err(|e| fail(e.to_string()))?;
        self.running = Some(rec);
        Ok(())
    }
    async fn after(&mut self, sut: &AgentClient, _raw: &mut Outputs) -> Result<(), Stopped> {
        let Some(rec) = self.running.take() else {
            return Err(fail("perf sched stats record was not started"));
        };
        let said = super::sched_stats::end(sut, &rec).await;
        // Ended or not, the recording is this collector's to clean up.
        let said = said.map_err(|e| {
            self.running = Some(rec.clone());
            fail(e.to_string())
        })?;
        self.ended = Some((rec, said));
        Ok(())
    }
    async fn fetch(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        let Some((rec, said)) = self.ended.take() else {
            return Ok(());
        };
        let done = super::sched_stats::fetch(sut, &rec, said)
            .await
            .map_err(|e| fail(e.to_string()))?;
        raw.push(RawKind::PerfSchedStatsReport, done.report);
        raw.push(RawKind::PerfSchedStatsData, done.data_xz_base64);
        raw.push(RawKind::PerfSchedStatsRecord, done.record_stderr);
        Ok(())
    }
    fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        let Some(text) = raw.get(&RawKind::PerfSchedStatsReport) else {
            return Err(fail("the perf sched stats report is missing"));
        };
        let parsed =
            crate::collect::perf_sched_stats::parse(text).and_then(|r| crate::collect::perf_sched_stats::metrics(&r));
        parsed.map_err(|e| fail(e.to_string()))
    }
    async fn cleanup(&mut self, sut: &AgentClient) {
        if let Some(rec) = self.running.take().or(self.ended.take().map(|(r, _)| r)) {
            let _ = sut.stop(rec.id, 5).await;
            let _ = sut.exec(super::command(["rm", "-f", rec.path.as_str()], 30)).await;
        }
    }
}

/// /proc/interrupts on the SUT, its delta per interrupt kept as a table.
struct Interrupts;

impl Interrupts {
    async fn read(sut: &AgentClient, when: When, raw: &mut Outputs) -> Result<(), Stopped> {
        let text = sut
            .interrupts()
            .await
            .map_err(|e| agent_fail("collecting /proc/interrupts", &e))?;
        raw.push(RawKind::Interrupts(when), text);
        Ok(())
    }
}

impl Collector for Interrupts {
    async fn before(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        Interrupts::read(sut, When::Before, raw).await
    }
    async fn after(&mut self, sut: &AgentClient, raw: &mut Outputs) -> Result<(), Stopped> {
        Interrupts::read(sut, When::After, raw).await
    }
    fn metrics(&self, raw: &mut Outputs) -> Result<Vec<Metric>, Stopped> {
        use crate::collect::interrupts;
        let (b, a) = both(raw, RawKind::Interrupts, "/proc/interrupts")?;
        let parsed = interrupts::parse(&b).and_then(|b| Ok((b, interrupts::parse(&a)?)));
        let (b, a) = parsed.map_err(|e| fail(e.to_string()))?;
        let d = interrupts::delta(&b, &a);
        raw.push(RawKind::InterruptsDelta, d.table);
        Ok(d.metrics)
    }
}
