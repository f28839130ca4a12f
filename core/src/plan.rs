//! The job matrix: kernel × variant × workload × iteration, in the order it runs. Jobs
//! are grouped by boot: with `boots: N` each kernel is booted N times, kernels alternating
//! (A B A B …), and its runs spread over the boots; within a boot, by variant, so sched
//! features change as rarely as possible. An adaptive run adds rounds to the cells that
//! need them ([`extend`]).

use crate::scenario::{Order, Scenario};
use crate::Error;

/// One point of the matrix. `ordinal` is its place in the run order, from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub ordinal: u32,
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    /// From 1.
    pub iteration: u32,
    /// The boot of its kernel it runs in, from 1.
    pub boot: u32,
    /// A warm-up run (`warmup:`): run and stored, not judged; its iteration is 0.
    pub warmup: bool,
}

/// One cell of the matrix: what a report row compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
}

/// Cells of a scenario named as `KERNEL/VARIANT/WORKLOAD`, each part a name of the scenario
/// or `*` for all (`kreg run --only`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Only {
    pub kernel: Option<String>,
    pub variant: Option<String>,
    pub workload: Option<String>,
}

impl Only {
    /// Reads `spec` against `s`: an unknown name is an error that lists the known ones.
    pub fn parse(s: &Scenario, spec: &str) -> Result<Only, Error> {
        let parts: Vec<&str> = spec.split('/').collect();
        let [kernel, variant, workload] = parts[..] else {
            return Err(Error::invalid(format!(
                "--only {spec:?}: expected KERNEL/VARIANT/WORKLOAD (each a name or *)"
            )));
        };
        let part = |what: &str, given: &str, names: Vec<&str>| -> Result<Option<String>, Error> {
            if given == "*" {
                return Ok(None);
            }
            if names.contains(&given) {
                Ok(Some(given.to_string()))
            } else {
                Err(Error::invalid(format!(
                    "--only {spec:?}: no {what} {given:?} in scenario {} ({what}s: {})",
                    s.name,
                    names.join(", ")
                )))
            }
        };
        Ok(Only {
            kernel: part("kernel", kernel, s.kernels.iter().map(|k| k.name.as_str()).collect())?,
            variant: part("variant", variant, s.variants.iter().map(|v| v.name.as_str()).collect())?,
            workload: part(
                "workload",
                workload,
                s.workloads.iter().map(|w| w.name.as_str()).collect(),
            )?,
        })
    }

    pub fn matches(&self, c: &Cell) -> bool {
        let one = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        one(&self.kernel, &c.kernel) && one(&self.variant, &c.variant) && one(&self.workload, &c.workload)
    }
}

impl std::fmt::Display for Only {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = |x: &Option<String>| x.clone().unwrap_or_else(|| "*".into());
        write!(f, "{}/{}/{}", p(&self.kernel), p(&self.variant), p(&self.workload))
    }
}

/// The iterations of each boot: `iterations` split into `boots` nearly equal blocks, the
/// larger first (10 over 3 boots: 1–4, 5–7, 8–10).
fn blocks(iterations: u32, boots: u32) -> Vec<std::ops::RangeInclusive<u32>> {
    let boots = boots.clamp(1, iterations.max(1));
    let (base, extra) = (iterations / boots, iterations % boots);
    let mut start = 1;
    (0..boots)
        .map(|b| {
            let len = base + u32::from(b < extra);
            let r = start..=start + len - 1;
            start += len;
            r
        })
        .collect()
}

/// Pushes one kernel's jobs of one boot: `iterations` of each cell wanted, after
/// `warmups` warm-up runs of it (iteration 0).
fn push_boot(
    s: &Scenario,
    jobs: &mut Vec<Job>,
    kernel: &str,
    boot: u32,
    warmups: u32,
    iterations: &[u32],
    wanted: &dyn Fn(&Cell) -> bool,
) {
    let warm: Vec<u32> = vec![0; warmups as usize];
    let mut push = |v: &str, w: &str, i: u32| {
        let cell = Cell {
            kernel: kernel.into(),
            variant: v.into(),
            workload: w.into(),
        };
        if wanted(&cell) {
            jobs.push(Job {
                ordinal: jobs.len() as u32,
                kernel: kernel.into(),
                variant: v.into(),
                workload: w.into(),
                iteration: i,
                boot,
                warmup: i == 0,
            });
        }
    };
    match s.order {
        // Each variant's iterations together: sched features and servers change least.
        Order::Blocked => {
            for v in &s.variants {
                for w in &s.workloads {
                    for &i in warm.iter().chain(iterations) {
                        push(&v.name, &w.name, i);
                    }
                }
            }
        }
        // Iteration by iteration across variants: drift over time hits every variant
        // alike, at the cost of switching variants (and restarting servers) each job.
        Order::Interleaved => {
            for &i in warm.iter().chain(iterations) {
                for v in &s.variants {
                    for w in &s.workloads {
                        push(&v.name, &w.name, i);
                    }
                }
            }
        }
    }
}

/// The jobs of the first look: every boot of every kernel, kernels alternating.
pub fn expand(s: &Scenario) -> Vec<Job> {
    expand_only(s, &[])
}

/// The jobs of the first look of only the cells `only` matches (every cell when it is
/// empty): what `kreg run --only` records. Kernels with no cell left are not booted.
pub fn expand_only(s: &Scenario, only: &[Only]) -> Vec<Job> {
    let wanted = |c: &Cell| only.is_empty() || only.iter().any(|o| o.matches(c));
    let mut jobs = Vec::new();
    for (b, its) in blocks(s.iterations, s.boots).into_iter().enumerate() {
        let its: Vec<u32> = its.collect();
        for k in &s.kernels {
            push_boot(s, &mut jobs, &k.name, b as u32 + 1, s.warmup, &its, &wanted);
        }
    }
    for (i, j) in jobs.iter_mut().enumerate() {
        j.ordinal = i as u32;
    }
    jobs
}

/// The slot (machine pair) of each job when a run is spread over `pairs` pairs: whole
/// boots when the scenario boots each kernel at least `pairs` times (boot b on pair
/// (b-1) mod pairs), else runs within each boot (run i on pair (i-1) mod pairs, each pair
/// booting every kernel itself). Either way every pair measures every kernel and variant,
/// kernels interleaved, so that a comparison can be made within each machine.
pub fn slots(s: &Scenario, jobs: &[Job], pairs: u32) -> Result<Vec<u32>, Error> {
    if pairs <= 1 {
        return Ok(vec![0; jobs.len()]);
    }
    if s.boots >= pairs {
        return Ok(jobs.iter().map(|j| (j.boot - 1) % pairs).collect());
    }
    if s.warmup > 0 {
        return Err(Error::invalid(format!(
            "{pairs} pairs: the scenario boots each kernel {} time(s) and warms each boot up; give `boots: {pairs}` or more (each pair boots and warms up its own), or fewer pairs",
            s.boots
        )));
    }
    if s.iterations < pairs {
        return Err(Error::invalid(format!(
            "{pairs} pairs: the scenario has {} run(s) per boot and {} boot(s): each pair must measure every kernel and variant; give `iterations: {pairs}` or `boots: {pairs}` or more, or fewer pairs",
            s.iterations, s.boots
        )));
    }
    Ok(jobs.iter().map(|j| (j.iteration - 1) % pairs).collect())
}

/// The next round of an adaptive run for `cells`, after the jobs there are: one more run
/// of each cell (in the same boot of its kernel when runs are the unit), or a new boot of
/// each kernel with a boot's runs when boots are; never past `max_iterations`. Ordinals
/// and iterations go on from `after`.
pub fn extend(s: &Scenario, after: &[Job], cells: &[Cell]) -> Vec<Job> {
    let wanted = |c: &Cell| cells.contains(c);
    let mut jobs = Vec::new();
    for k in &s.kernels {
        let mine: Vec<&Job> = after.iter().filter(|j| j.kernel == k.name).collect();
        if !cells.iter().any(|c| c.kernel == k.name) {
            continue;
        }
        let next_iteration = mine.iter().map(|j| j.iteration).max().unwrap_or(0) + 1;
        let last_boot = mine.iter().map(|j| j.boot).max().unwrap_or(1);
        if next_iteration > s.max_iterations {
            continue;
        }
        // A new boot starts with its warm-ups; another run in the same boot needs none.
        let (boot, warmups, its): (u32, u32, Vec<u32>) = if s.by_boot() {
            let n = s.runs_per_boot();
            (last_boot + 1, s.warmup, (next_iteration..next_iteration + n).collect())
        } else {
            (last_boot, 0, vec![next_iteration])
        };
        push_boot(s, &mut jobs, &k.name, boot, warmups, &its, &wanted);
    }
    let first = after.iter().map(|j| j.ordinal + 1).max().unwrap_or(0);
    for (i, j) in jobs.iter_mut().enumerate() {
        j.ordinal = first + i as u32;
    }
    jobs
}

/// What a plan cannot show: rows judged by ranks (counts; latencies that fall on a few
/// buckets) need a number of observations a side before the rank test can reach the alpha
/// of the plan's last look. `None` when the plan's maximum reaches it; otherwise a note
/// saying so and what plan would.
pub fn rank_reach(s: &Scenario) -> Option<String> {
    use crate::stats::rank::runs_to_reach;
    if !has_rank_rows(s) {
        return None;
    }
    let alpha = crate::stats::Settings::default().alpha;
    let unit = if s.by_boot() { "boots" } else { "runs" };
    let looks = s.looks();
    let last_alpha = |l: &crate::stats::Looks| l.alpha_at(l.len() - 1, alpha);
    let (most, needed) = if looks.is_fixed() {
        let most = if s.by_boot() { s.boots } else { s.iterations } as usize;
        (most, runs_to_reach(alpha))
    } else {
        (looks.last(), runs_to_reach(last_alpha(&looks)))
    };
    if most >= needed {
        return None;
    }
    let would = if looks.is_fixed() {
        match s.by_boot() {
            true => format!("`boots: {needed}` (with at least {needed} iterations)"),
            false => format!("`iterations: {needed}`"),
        }
    } else {
        let first = looks.at[0];
        let max = (most..200)
            .find(|&m| runs_to_reach(last_alpha(&crate::stats::Looks::adaptive(first, m))) <= m)
            .unwrap_or(200);
        match s.by_boot() {
            true => format!(
                "up to {max} boots (`iterations: {{ min: {}, max: {} }}`)",
                s.iterations,
                max as u32 * s.runs_per_boot()
            ),
            false => format!("`iterations: {{ min: {}, max: {max} }}`", s.iterations),
        }
    };
    Some(format!(
        "rows judged by ranks (counts such as interrupts or perf stat events, latencies whose values fall on a few buckets) need {needed} {unit} a side to reach alpha at the plan's last look, and this plan has at most {most}: such rows can be `no change` or `inconclusive`, never a change; {would} would reach it"
    ))
}

/// Whether some of the scenario's rows may be judged by ranks: a collector's counts, a
/// cgroup's throttling counts, a command's latency or count metrics, and every workload
/// kind but hackbench and perf bench (whose figures are times and rates).
fn has_rank_rows(s: &Scenario) -> bool {
    use crate::workload::WorkloadKind;
    let collects = |c: &crate::collect::Collect| c.interrupts || c.perf_stat || c.task_schedstat || c.perf_sched_stats;
    collects(&s.collect)
        || s.uses_cgroups()
        || s.workloads.iter().any(|w| {
            collects(&w.collect)
                || match &w.kind {
                    WorkloadKind::Hackbench(_) | WorkloadKind::PerfBench(_) => false,
                    WorkloadKind::Command(c) => c.metrics.iter().any(|m| m.kind.by_ranks()),
                    _ => true,
                }
        })
}

/// Where a job stands. `Running` jobs found by `resume` were interrupted and run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    Done,
    Failed,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Running,
    /// Stopped before its end (a signal, a lost database, a crash): `kreg resume` goes on.
    Interrupted,
    /// Every job done.
    Done,
    /// Ended with failed jobs.
    Failed,
}

use crate::states::state_names;

state_names!(JobState { Pending => "pending", Running => "running", Done => "done", Failed => "failed" });
state_names!(RunState { Running => "running", Interrupted => "interrupted", Done => "done", Failed => "failed" });

/// What a run is, fixed when it is recorded: how it is driven, resumed and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Every cell of the matrix, its iterations fixed (`kreg run`).
    Matrix,
    /// Rounds added while rows stay inconclusive (`iterations: { min, max }`).
    Adaptive,
    /// A metric bisection (`kreg bisect`): its jobs are the boots it asked for.
    Bisection,
    /// Submitted to the fleet's queue (`kreg submit`): its slots driven by workers.
    Fleet,
    /// A rehearsal on lab machines (`kreg rehearse`): rehearsed again, never resumed.
    Rehearsal,
}

state_names!(RunKind { Matrix => "matrix", Adaptive => "adaptive", Bisection => "bisection", Fleet => "fleet", Rehearsal => "rehearsal" });

/// Where a slot of a fleet run stands: queued for a worker, leased by one, or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    Queued,
    Leased,
    Done,
    Failed,
    /// What a slot measured on a pair the lab failed: kept, apart, never in a report; the
    /// slot itself started over on another pair.
    SetAside,
}

state_names!(SlotState { Queued => "queued", Leased => "leased", Done => "done", Failed => "failed", SetAside => "set_aside" });

/// A fleet machine's health: only good machines are claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineHealth {
    Good,
    /// It failed the lab's part of its slots too often in a row; out until released.
    Bad,
    /// Drained by hand: its current slot ends, it takes nothing new until released.
    Maintenance,
    Retired,
}

state_names!(MachineHealth { Good => "good", Bad => "bad", Maintenance => "maintenance", Retired => "retired" });

impl RunKind {
    /// A run of `s` recorded by `kreg run`: adaptive or a plain matrix.
    pub fn of(s: &Scenario) -> RunKind {
        if s.adaptive() {
            RunKind::Adaptive
        } else {
            RunKind::Matrix
        }
    }
}

impl JobState {
    /// Whether a drive of the run takes this job (again): all but the done ones.
    pub fn to_drive(self) -> bool {
        self != JobState::Done
    }
}

/// Renders the plan as `kreg plan` prints it.
/// How much `kreg plan` says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detail {
    /// The generated scripts too.
    pub verbose: bool,
    /// The SUT's CPU count, where the user gave it.
    pub cpus: Option<u32>,
}

pub fn render(s: &Scenario, jobs: &[Job]) -> String {
    render_with(s, jobs, Detail::default())
}

pub fn render_with(s: &Scenario, jobs: &[Job], detail: Detail) -> String {
    render_full(s, jobs, detail, &[])
}

/// The plan's first line: the matrix and its size.
fn headline(s: &Scenario, jobs: &[Job]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {}: {} kernels × {} variants × {} workloads × {} iterations = {} jobs{}",
        s.name,
        s.kernels.len(),
        s.variants.len(),
        s.workloads.len(),
        s.iterations,
        jobs.len(),
        if s.boots > 1 {
            format!(", each kernel booted {} times", s.boots)
        } else {
            String::new()
        }
    );
    if s.warmup > 0 {
        let _ = writeln!(
            out,
            "warm-up: {} run{} of each cell at the start of each boot, stored and shown, not judged (counted in the jobs above)",
            s.warmup,
            if s.warmup == 1 { "" } else { "s" }
        );
    }
    out
}

/// The plan, with the perf each kernel's jobs run on the SUT (`kernel::perf::support`).
pub fn render_full(s: &Scenario, jobs: &[Job], detail: Detail, perfs: &[crate::perf_support::PerfOf]) -> String {
    use std::fmt::Write;
    let mut out = headline(s, jobs);
    if s.adaptive() {
        let looks = s.looks();
        let unit = if s.by_boot() { "boots" } else { "runs" };
        let _ = writeln!(
            out,
            "adaptive: looks at {} {unit} per side; after each, only the cells still inconclusive get more (at most {} iterations)",
            looks.list(),
            s.max_iterations
        );
    }
    for h in s.hosts.iter().filter(|h| !h.tuning.is_empty()) {
        let _ = writeln!(out, "tuning of {} after every boot: {}", h.name, h.tuning.describe());
    }
    for v in s.variants.iter().filter(|v| !v.tuning.is_empty()) {
        let _ = writeln!(
            out,
            "tuning of {} for variant {}, over its own: {}",
            s.sut().name,
            v.name,
            v.tuning.describe()
        );
    }
    let _ = writeln!(out, "what each job runs, per kernel:");
    for v in &s.variants {
        for w in &s.workloads {
            out.push_str(&what_runs(s, v, w, detail));
        }
    }
    let mut kernel = None;
    for j in jobs {
        if kernel != Some((&j.kernel, j.boot)) {
            kernel = Some((&j.kernel, j.boot));
            let k = s.kernel(&j.kernel).expect("validated");
            let baseline = if k.name == s.baseline { " (baseline)" } else { "" };
            let nth = if s.boots > 1 {
                format!(" (boot {})", j.boot)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "boot kernel {}{baseline}{nth}: {}{}",
                k.name,
                describe_source(&k.source),
                k.perf
                    .as_ref()
                    .map(|p| format!("; perf built from {p} (on the controller) runs on the SUT"))
                    .unwrap_or_default()
            );
            if let Some(p) = perfs.iter().find(|p| p.kernel == k.name) {
                out.push_str(&perf_line(s, p));
            }
        }
        let run = match j.warmup {
            true => "warm-up (stored, not judged)".to_string(),
            false => format!("iteration={}", j.iteration),
        };
        let _ = writeln!(
            out,
            "  #{:<4} variant={} workload={} {run}",
            j.ordinal, j.variant, j.workload
        );
    }
    out
}

/// Which perf a kernel's jobs run on the SUT, and, for the collector that needs it,
/// whether it has `perf sched stats`.
fn perf_line(s: &Scenario, p: &crate::perf_support::PerfOf) -> String {
    let wanted = s.collect.perf_sched_stats || s.workloads.iter().any(|w| w.collect.perf_sched_stats);
    let support = if wanted {
        format!("; {}", p.sched_stats_text())
    } else {
        String::new()
    };
    format!("  perf on {}: {}{support}\n", s.sut().name, p.perf)
}

/// What is collected around a workload's measured phase.
fn collectors(s: &Scenario, w: &crate::scenario::Workload) -> Vec<String> {
    let mut out = vec!["/proc/schedstat".to_string()];
    let collect = s.collect.or(w.collect);
    if collect.interrupts {
        out.push("/proc/interrupts".into());
    }
    if collect.perf_stat {
        out.push(format!(
            "`{}` on {}",
            crate::workload::shell_words(&crate::collect::perf_stat::argv()),
            s.sut().name
        ));
    }
    if collect.task_schedstat {
        out.push("each task's schedstat at its exit".into());
    }
    if collect.perf_sched_stats {
        out.push(format!("`perf sched stats record` on {}, system-wide", s.sut().name));
    }
    out
}

/// A variant's job of a workload: where, under which policy, on which CPUs, in which
/// cgroup, with which collectors, and the command lines (passwords as `***`).
fn what_runs(s: &Scenario, v: &crate::scenario::Variant, w: &crate::scenario::Workload, detail: Detail) -> String {
    use crate::workload::Plan;
    let cpus = v.cpus.as_deref().map_or("all".to_string(), crate::tuning::cpu_list);
    let collectors = collectors(s, w);
    let mut head = match w.kind.server_host() {
        None => format!(
            "  variant {} × workload {}: on {}, policy {}, CPUs {cpus}",
            v.name,
            w.name,
            w.on,
            v.policy.name()
        ),
        Some(server) => format!(
            "  variant {} × workload {}: client on {}; server on {server}, policy {}, CPUs {cpus}",
            v.name,
            w.name,
            w.on,
            v.policy.name()
        ),
    };
    if let Some(cg) = w.cgroup.as_ref().or(v.cgroup.as_ref()) {
        let whose = if w.kind.server_host().is_some() {
            "the server "
        } else {
            ""
        };
        head.push_str(&format!(", {whose}in a cgroup: {}", cg.describe(None)));
    }
    head.push_str(&format!(
        ", collectors {}, timeout {} s\n",
        collectors.join(" and "),
        w.timeout_secs
    ));
    let join = |argv: Vec<String>| crate::workload::shell_words(&argv);
    let lines = match w.kind.plan() {
        Plan::Single(single) => vec![format!("run: {}", join(single.argv()))],
        Plan::Sysbench(sb) => vec![
            format!("server on {}: {}", sb.server.on, join(sb.server.server_argv())),
            format!("run: {}", join(sb.argv("PRIVATE-FILE", "run"))),
        ],
        Plan::Netperf(n) => vec![
            format!("server on {}: {}", n.server_on, join(n.server_argv())),
            format!(
                "run, {} at once: {}",
                n.clients.describe("clients"),
                join(n.client_argv())
            ),
        ],
        Plan::Hammerdb(h) => {
            let mut lines = vec![
                format!("server on {}: {}", h.server.on, join(h.server.server_argv())),
                format!("run: {}", w.kind.command_line()),
            ];
            if detail.verbose {
                lines.extend(hammerdb_scripts(s, h, detail));
            }
            lines
        }
    };
    let mut out = head;
    for l in lines {
        out.push_str(&format!("      {l}\n"));
    }
    out
}

/// The SUT's CPU count: the user's, or a lab's own.
fn sut_cpus(s: &Scenario, detail: Detail) -> Option<u32> {
    detail.cpus.or(match &s.sut().transport {
        crate::scenario::Transport::Lab { cpus, .. } => Some(*cpus),
        _ => None,
    })
}

/// hammerdbcli's scripts as kreg feeds them on stdin: the schema build (when the database
/// has none) and the timed run, the password as `***`.
fn hammerdb_scripts(s: &Scenario, h: &crate::workload::Hammerdb, detail: Detail) -> Vec<String> {
    let Some(cpus) = sut_cpus(s, detail).or(match h.virtual_users {
        crate::workload::Count::Fixed(_) => Some(1),
        _ => None,
    }) else {
        return vec![format!(
            "virtual users: {}; give --cpus N (the SUT's) to see the scripts",
            h.virtual_users
                .describe("virtual users")
                .trim_start_matches("virtual users: ")
        )];
    };
    let vus = h.virtual_users.resolve(cpus);
    let mut out = Vec::new();
    for (what, build) in [("schema build, when the database has none", true), ("timed run", false)] {
        out.push(format!("hammerdbcli script, {what} ({vus} virtual users):"));
        out.extend(h.script("***", vus, build).lines().map(|l| format!("  {l}")));
    }
    out
}

fn describe_source(src: &crate::scenario::KernelSource) -> String {
    use crate::scenario::KernelSource::*;
    match src {
        Deb { package } => format!("Debian package {package}"),
        Path { vmlinuz } => format!("image {}", vmlinuz.display()),
        Running => "the running kernel".into(),
        Build(b) => {
            let tree = match &b.tree {
                crate::scenario::TreeSource::Git { url, git_ref } => format!("{url} at {git_ref}"),
                crate::scenario::TreeSource::Tarball { path } => path.display().to_string(),
            };
            format!(
                "built from {tree}, {} option(s) set, {} patch(es){}",
                b.config.set.len(),
                b.patches.len(),
                if b.perf { ", perf from its tools/perf" } else { "" }
            )
        }
    }
}

#[cfg(test)]
mod tests;
