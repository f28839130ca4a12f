//! One job on a booted kernel: the sched features and /proc/schedstat of the SUT around the
//! measured phase, the workload under the variant's policy (on its own host, or as a client
//! against a server session), parsing, and what to store: metrics, raw outputs, and the
//! policy observed on the workload's (or server's) threads.

use std::time::{Duration, Instant};

use kreg_protocol::client::{AgentClient, ClientError};
use kreg_protocol::wire::{ExecRequest, ExecResult, Identity, Policy};

use super::collectors::Collectors;
use super::error::{agent_fail, fail, Stopped};
use super::server::Session;
use crate::failure::CommandFailed;
use crate::parse::{Metric, MetricKind};
use crate::poll::{until, Look, Waited};
use crate::record::{Outputs, RawKind};
use crate::scenario::{Variant, Workload};
use crate::store::JobOutcome;
use crate::workload::{hammerdb, netperf, sysbench, Netperf, Plan, SingleHost};

/// A job's failure, with the raw outputs gathered before it failed.
#[derive(Debug)]
pub struct JobFailure {
    pub reason: String,
    /// An agent stopped answering (its host crashed, rebooted or lost its network).
    pub unreachable: bool,
    pub raw: Outputs,
}

/// Removes a job's own tree after it ran; a tree that will not go fails the job.
pub async fn removed_after(
    cg: &super::cgroup::Placed,
    result: Result<crate::store::JobOutcome, JobFailure>,
    host: &str,
) -> Result<crate::store::JobOutcome, JobFailure> {
    match (cg.remove().await, result) {
        (Ok(_), r) => r,
        (Err(e), Ok(outcome)) => Err(JobFailure {
            reason: format!("the job's cgroup on {host} could not be removed: {e}"),
            unreachable: e.is_unreachable(),
            raw: outcome.raw,
        }),
        (Err(e), Err(mut f)) => {
            f.reason = format!("{}; its cgroup on {host} could not be removed either: {e}", f.reason);
            Err(f)
        }
    }
}

/// The job's failure: why it stopped, with its record as it stood (moved, not copied).
fn failure(stopped: Stopped, raw: Outputs) -> JobFailure {
    JobFailure {
        reason: stopped.reason,
        unreachable: stopped.unreachable,
        raw,
    }
}

/// What the job runs with.
pub struct Ctx<'a> {
    /// The SUT's agent: sched features and schedstat are read there.
    pub sut: &'a AgentClient,
    pub sut_id: &'a Identity,
    /// The agent of the host the workload (or its client side) runs on.
    pub runner: &'a AgentClient,
    /// The server, for two-host workloads.
    pub session: Option<&'a Session>,
    /// Tool versions seen on this boot ("tool@host" → version).
    pub versions: &'a super::tools::Versions,
    /// Whether the SUT's kernel has /proc/schedstat to snapshot around the job.
    pub schedstat: bool,
    /// CPUs the workload may run on: the variant's, within the cache a tuning confined
    /// it to; all when `None`.
    pub cpus: Option<Vec<u32>>,
    /// The collectors around the measured phase.
    pub collect: crate::collect::Collect,
    /// The cgroup the workload (or, with a session, its server) runs in.
    pub cgroup: Option<&'a super::cgroup::Placed>,
    /// A name of the job's own for files on the SUT (run and job ordinal).
    pub tag: String,
    /// The name of the host the workload (or its client side) runs on.
    pub on: &'a str,
}

/// The line a process of the measured phase leaves in the job's `commands`: the host and a
/// command a person can paste there to run it as kreg did — the working folder (`cd`), the
/// environment, the CPUs (`taskset -c`), the policy (`chrt`), the argv (the program where
/// kreg put it) — with what a shell line cannot set (cgroup, standard input) said after it.
fn command_line(ctx: &Ctx<'_>, req: &ExecRequest) -> String {
    let mut argv = req.argv.clone();
    if let Some(first) = argv.first_mut() {
        *first = ctx.runner.program_path(first);
    }
    let mut words: Vec<String> = req.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(c) = &req.cpus {
        let c: Vec<String> = c.iter().map(u32::to_string).collect();
        words.extend(["taskset".into(), "-c".into(), c.join(",")]);
    }
    if let Some(p) = req.policy {
        let flag = match p {
            Policy::Other => "-o",
            Policy::Batch => "-b",
            Policy::Idle => "-i",
        };
        words.extend(["chrt".into(), flag.into(), "0".into()]);
    }
    words.extend(argv);
    let mut line = crate::ssh::session::command_line(&words.iter().map(String::as_str).collect::<Vec<_>>());
    if let Some(d) = &req.cwd {
        line = format!("cd {} && {line}", crate::ssh::session::quote(d));
    }
    let mut with = Vec::new();
    if let Some(g) = &req.cgroups {
        with.push(format!("in cgroup {}", g.join(" ")));
    }
    if let Some(i) = &req.stdin {
        with.push(format!("{} bytes on stdin", i.len()));
    }
    let line = format!("{}$ {line}", ctx.on);
    if with.is_empty() {
        line
    } else {
        format!("{line}    # {}", with.join(", "))
    }
}

/// The programs a workload runs, with the host each runs on and that host's agent.
pub fn programs(
    workload: &Workload,
    runner: &AgentClient,
    conns: &std::collections::HashMap<String, super::host::Conn>,
) -> Vec<(String, String, AgentClient)> {
    let client_of = |host: &str| {
        if host == workload.on {
            Some(runner.clone())
        } else {
            conns.get(host).and_then(|c| c.client()).cloned()
        }
    };
    workload
        .kind
        .programs(&workload.on)
        .into_iter()
        .filter_map(|(program, host)| client_of(&host).map(|c| (program, host, c)))
        .collect()
}

/// Runs one job and returns what to store; a failure carries the record as it stood.
pub async fn run(ctx: &Ctx<'_>, variant: &Variant, workload: &Workload) -> Result<JobOutcome, JobFailure> {
    let mut raw = Outputs::default();
    let mut col = Collectors::of(ctx.sut, ctx.schedstat, ctx.cgroup, ctx.collect, &ctx.tag);
    let taken = take(ctx, variant, workload, &mut col, &mut raw).await;
    col.cleanup().await;
    let (metrics, observed) = match taken {
        Ok(x) => x,
        Err(stopped) => return Err(failure(stopped, raw)),
    };
    Ok(JobOutcome {
        tool_versions: ctx.versions.clone(),
        kernel_release: ctx.sut_id.kernel_release.clone(),
        boot_id: ctx.sut_id.boot_id.clone(),
        observed_policy: observed.unwrap_or_else(|| "unobserved".into()),
        metrics,
        raw,
    })
}

/// The job's provenance, its measured phase, then every metric: the workload's, those the
/// exec brought (task statistics), the collectors'.
async fn take(
    ctx: &Ctx<'_>,
    variant: &Variant,
    workload: &Workload,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<(Vec<Metric>, Option<String>), Stopped> {
    // Provenance: the sched features in effect for this job.
    if let Ok(Some(features)) = super::knobs::read(ctx.sut, super::knobs::FEATURES).await {
        raw.push(RawKind::SchedFeatures, features);
    }
    let mut server_policy = None;
    if let Some(v) = ctx.session.and_then(|s| s.version.clone()) {
        raw.push(RawKind::ServerVersion, v);
    }
    if let Some(s) = ctx.session {
        let (policy, listing) = s.check_threads(variant.policy, ctx.cgroup).await.map_err(|e| Stopped {
            unreachable: e.is_unreachable(),
            ..fail(e.to_string())
        })?;
        raw.push(RawKind::ServerThreads, listing);
        server_policy = Some(policy);
    }
    let (mut metrics, observed) = measure(ctx, variant, workload, server_policy, col, raw).await?;
    metrics.extend(raw.take_collected());
    metrics.extend(col.metrics(raw)?);
    Ok((metrics, observed))
}

/// The workload's measured phase, by kind: its metrics and the policy observed.
async fn measure(
    ctx: &Ctx<'_>,
    variant: &Variant,
    workload: &Workload,
    server_policy: Option<String>,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<(Vec<Metric>, Option<String>), Stopped> {
    let raw = &mut *raw;
    let out = match workload.kind.plan() {
        Plan::Single(single) => single_host(ctx, variant, workload, single, col, raw).await?,
        Plan::Sysbench(sb) => {
            let config = ctx.session.and_then(|s| s.sysbench_config());
            let config = config.ok_or_else(|| fail("sysbench's session has no options file"))?;
            let argv = sb.argv(&config, "run");
            let res = measured_exec(ctx, argv, None, None, workload.timeout_secs, col, raw).await?;
            (
                sysbench::parse(&res.stdout).map_err(|e| fail(e.to_string()))?,
                server_policy.clone(),
            )
        }
        Plan::Netperf(n) => {
            let clients = n.clients.resolve(ctx.sut_id.nr_cpus);
            (
                netperf_clients(ctx, n, clients, workload.timeout_secs, col, raw).await?,
                server_policy.clone(),
            )
        }
        Plan::Hammerdb(h) => {
            let session = ctx.session.expect("hammerdb has a session");
            let vus = h.virtual_users.resolve(ctx.sut_id.nr_cpus);
            let script = h.script(&session.password, vus, false);
            (
                hammerdb_run(
                    ctx,
                    &workload.on,
                    script,
                    &session.password,
                    workload.timeout_secs,
                    col,
                    raw,
                )
                .await?,
                server_policy.clone(),
            )
        }
    };
    Ok(out)
}

/// schedstat (and the collectors) before, one exec, after; stdout and stderr kept.
async fn measured_exec(
    ctx: &Ctx<'_>,
    argv: Vec<String>,
    policy: Option<Policy>,
    cpus: Option<Vec<u32>>,
    timeout_secs: u64,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<ExecResult, Stopped> {
    col.before(raw).await?;
    let program = argv.first().cloned().unwrap_or_default();
    // Without a session the cgroup is on the workload's own host.
    let cgroups = ctx.cgroup.filter(|_| ctx.session.is_none()).map(|c| c.leaves());
    let req = ExecRequest {
        argv,
        timeout_secs,
        policy,
        cpus,
        cgroups,
        task_stats: ctx.collect.task_schedstat,
        ..Default::default()
    };
    raw.append_line(RawKind::Commands, &command_line(ctx, &req));
    let res = ctx.runner.exec(req).await.map_err(|e| agent_fail("", &e))?;
    col.after(raw).await?;
    raw.push(RawKind::Stdout, res.stdout.clone());
    raw.push(RawKind::Stderr, res.stderr.clone());
    if let Some(tasks) = &res.task_stats {
        let tasks = tasks.as_ref().map_err(|e| fail(e.clone()))?;
        let (table, metrics) = crate::collect::task_schedstat::summarize(tasks).map_err(|e| fail(e.to_string()))?;
        raw.push(RawKind::TaskSchedstat, table);
        raw.collect(metrics);
    }
    if !res.success() {
        return Err(fail(CommandFailed::of_exec(program, &res, timeout_secs).to_string()));
    }
    Ok(res)
}

async fn single_host(
    ctx: &Ctx<'_>,
    variant: &Variant,
    workload: &Workload,
    single: &dyn SingleHost,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<(Vec<Metric>, Option<String>), Stopped> {
    let res = measured_exec(
        ctx,
        single.argv(),
        Some(variant.policy),
        ctx.cpus.clone(),
        workload.timeout_secs,
        col,
        raw,
    )
    .await?;
    let metrics = single
        .parse(&res.stdout, &res.stderr)
        .map_err(|e| fail(e.to_string()))?;
    let want = variant.policy.name();
    if res.observed_policies.iter().any(|p| p != want) {
        return Err(fail(format!(
            "variant {} asked for policy {want}, but the workload's threads ran under {}",
            variant.name,
            res.observed_policies.join(", ")
        )));
    }
    if let Some(cg) = ctx.cgroup {
        let placed = cg.check(&res.observed_cgroups).map_err(fail)?;
        raw.push(RawKind::CgroupPlacement, placed);
    }
    let observed = (!res.observed_policies.is_empty()).then(|| res.observed_policies.join(","));
    Ok((metrics, observed))
}

/// Why waiting for a spawned process ended without its result.
#[derive(Debug, thiserror::Error)]
enum WaitError {
    #[error(transparent)]
    Agent(#[from] ClientError),
    #[error("still running after {0}s; stopped")]
    Overran(u64),
}

impl WaitError {
    fn fail(self, context: &str) -> Stopped {
        match self {
            WaitError::Agent(e) => agent_fail(context, &e),
            other => fail(format!("{context}: {other}")),
        }
    }
}

/// Polls a spawned process until it ends or `limit` passes (then it is stopped).
async fn wait_spawned(
    client: &AgentClient,
    id: u64,
    limit: Duration,
) -> Result<kreg_protocol::wire::ProcessState, WaitError> {
    let waited = until(limit, Duration::from_millis(200), async || {
        match client.poll(id).await {
            Ok(st) if !st.running => Look::Ready(()),
            Ok(_) => Look::NotYet(String::new()),
            Err(e) => Look::Failed(e),
        }
    })
    .await;
    match waited {
        Ok(()) => Ok(client.stop(id, 1).await?),
        Err(Waited::Failed(e)) => Err(WaitError::Agent(e)),
        Err(Waited::TimedOut { .. }) => {
            let _ = client.stop(id, 5).await;
            Err(WaitError::Overran(limit.as_secs()))
        }
    }
}

/// `clients` netperf processes at once against one netserver. Throughput is their sum;
/// each latency figure is the mean of the clients' figures.
async fn netperf_clients(
    ctx: &Ctx<'_>,
    n: &Netperf,
    clients: u32,
    timeout_secs: u64,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<Vec<Metric>, Stopped> {
    col.before(raw).await?;
    let mut ids = Vec::new();
    for _ in 0..clients {
        let req = ExecRequest {
            argv: n.client_argv(),
            timeout_secs,
            ..Default::default()
        };
        raw.append_line(RawKind::Commands, &command_line(ctx, &req));
        ids.push(ctx.runner.spawn(req).await.map_err(|e| agent_fail("", &e))?.id);
    }
    let mut per_client = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let st = wait_spawned(ctx.runner, id, Duration::from_secs(timeout_secs))
            .await
            .map_err(|e| e.fail(&format!("netperf client {}", i + 1)))?;
        raw.push(RawKind::ClientStdout(i + 1), st.stdout.clone());
        raw.push(RawKind::ClientStderr(i + 1), st.stderr.clone());
        if st.exit_code != Some(0) {
            return Err(fail(format!(
                "netperf client {} exited with {:?}",
                i + 1,
                st.exit_code.or(st.signal)
            )));
        }
        per_client.push(netperf::parse(&st.stdout).map_err(|e| fail(format!("client {}: {e}", i + 1)))?);
    }
    col.after(raw).await?;
    let mut out: Vec<Metric> = per_client[0].clone();
    // Figures are added or averaged only in one unit (each client's `-f` is the same, so
    // they agree unless an output was misread).
    for (i, c) in per_client.iter().enumerate() {
        for m in &out {
            if let Some(x) = c.iter().find(|x| x.name == m.name && x.unit != m.unit) {
                return Err(fail(format!(
                    "client {} gave {} in {}, client 1 in {}",
                    i + 1,
                    m.name,
                    x.unit,
                    m.unit
                )));
            }
        }
    }
    for m in out.iter_mut() {
        let values: Vec<f64> = per_client
            .iter()
            .filter_map(|c| c.iter().find(|x| x.name == m.name).map(|x| x.value))
            .collect();
        m.value = if m.higher_is_better {
            values.iter().sum()
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        };
    }
    out.push(Metric::new("clients", clients as f64, "", true, MetricKind::Count));
    Ok(out)
}

/// `./hammerdbcli auto SCRIPT` on `on`; SUT schedstat is taken once the rampup is over, so
/// that the snapshots bracket the timed phase only.
async fn hammerdb_run(
    ctx: &Ctx<'_>,
    on: &str,
    script: String,
    password: &str,
    timeout_secs: u64,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<Vec<Metric>, Stopped> {
    let run = super::hammerdb::Run::prepare(ctx.runner, &script)
        .await
        .map_err(|e| fail(e.to_string()))?;
    // The exact script that ran, its password masked.
    raw.push(RawKind::HammerdbScript, hammerdb::redact(&script, password));
    let out = hammerdb_measured(ctx, on, &run, password, timeout_secs, col, raw).await;
    run.finish().await;
    out
}

/// The measured part of [`hammerdb_run`]: the run, its stdout and time profile kept.
async fn hammerdb_measured(
    ctx: &Ctx<'_>,
    on: &str,
    run: &super::hammerdb::Run<'_>,
    password: &str,
    timeout_secs: u64,
    col: &mut Collectors<'_>,
    raw: &mut Outputs,
) -> Result<Vec<Metric>, Stopped> {
    let req = run.request(timeout_secs);
    raw.append_line(RawKind::Commands, &command_line(ctx, &req));
    let p = ctx.runner.spawn(req).await.map_err(|e| agent_fail("", &e))?;
    let limit = Duration::from_secs(timeout_secs);
    let started = Instant::now();
    let rampup = until(limit, Duration::from_millis(500), async || {
        match ctx.runner.poll(p.id).await {
            Ok(st) if st.stdout.contains("Rampup complete") || !st.running => Look::Ready(()),
            Ok(_) => Look::NotYet(String::new()),
            Err(e) => Look::Failed(e),
        }
    })
    .await;
    match rampup {
        Ok(()) => {}
        Err(Waited::Failed(e)) => return Err(agent_fail("", &e)),
        Err(Waited::TimedOut { .. }) => {
            let _ = ctx.runner.stop(p.id, 5).await;
            return Err(fail("hammerdbcli never finished its rampup"));
        }
    }
    col.before(raw).await?;
    let left = limit.saturating_sub(started.elapsed());
    let st = wait_spawned(ctx.runner, p.id, left)
        .await
        .map_err(|e| e.fail("hammerdbcli"))?;
    col.after(raw).await?;
    // HammerDB echoes the password with every `diset`: masked before anything is kept.
    let stdout = hammerdb::redact(&st.stdout, password);
    raw.push(RawKind::Stdout, stdout.clone());
    raw.push(RawKind::Stderr, hammerdb::redact(&st.stderr, password));
    raw.push(RawKind::HammerdbVersion, run.version.clone());
    if let Some(line) = hammerdb::failure(&stdout) {
        return Err(fail(format!("hammerdbcli on {on}: {line}")));
    }
    let profile = run.profile().await.map_err(|e| fail(e.to_string()))?;
    let text = match profile {
        Some(p) => {
            raw.push(RawKind::HammerdbProfile, p.clone());
            format!("{stdout}\n{p}")
        }
        None => stdout,
    };
    hammerdb::parse(&text).map_err(|e| fail(e.to_string()))
}
