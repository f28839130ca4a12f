//! Server sessions for two-host workloads: a database (or netserver) started on the server
//! host under the variant's policy, checked ready with a real query from the client host,
//! and stopped after the variant's jobs of that workload.

use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{ExecRequest, FileSource, Policy};

use super::error::HostError;
use super::{command, must};
use crate::failure::{tail, TAIL_LINES};
use crate::poll::{until, Look, Waited};
use crate::workload::db::{is_mariadb, DbKind};
use crate::workload::{hammerdb, DbServer, Netperf, Plan, Sysbench, WorkloadKind};

/// Where a server runs: the CPUs it may use, the leaf cgroups it goes into.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub cpus: Option<Vec<u32>>,
    pub cgroups: Option<Vec<String>>,
}

/// A running server and what the jobs need to reach it.
pub struct Session {
    pub server: AgentClient,
    pub id: u64,
    pub pid: u32,
    /// The database user's password (never logged, never stored).
    pub password: String,
    pub what: String,
    /// The cgroup the server runs in, removed when it stops.
    pub cgroup: Option<super::cgroup::Placed>,
    /// The server program's own version line (`mariadbd --version`), stored with each job.
    pub version: Option<String>,
    /// A private folder of the session's on the client's host (sysbench's options file
    /// with the password), removed when the session stops.
    pub private: Option<(AgentClient, String)>,
}

impl Session {
    /// sysbench's options file on the client's host (see [`Session::private`]).
    pub fn sysbench_config(&self) -> Option<String> {
        self.private.as_ref().map(|(_, dir)| format!("{dir}/sysbench.conf"))
    }
}

impl Session {
    /// Starts a server in the background under the variant's policy and CPUs.
    async fn spawn(
        server: &AgentClient,
        argv: Vec<String>,
        policy: Policy,
        at: Placement,
        what: &str,
        password: String,
    ) -> Result<Session, HostError> {
        let spawn = ExecRequest {
            argv,
            timeout_secs: 0,
            policy: Some(policy),
            cpus: at.cpus,
            cgroups: at.cgroups,
            ..Default::default()
        };
        let p = server
            .spawn(spawn)
            .await
            .map_err(HostError::agent(format!("starting {what}")))?;
        Ok(Session {
            server: server.clone(),
            id: p.id,
            pid: p.pid,
            password,
            what: what.to_string(),
            cgroup: None,
            version: None,
            private: None,
        })
    }
}

/// Repeats `probe` on `client` until it succeeds, the server dies, or `limit` passes.
async fn wait_ready(
    session: &Session,
    client: &AgentClient,
    probe: ExecRequest,
    limit: Duration,
) -> Result<(), HostError> {
    let waited = until(limit, Duration::from_millis(250), async || {
        let st = match session.server.poll(session.id).await {
            Ok(st) => st,
            Err(e) => return Look::Failed(HostError::from(e)),
        };
        if !st.running {
            return Look::Failed(HostError::Other(format!(
                "{} exited ({:?}) before it was ready: {}",
                session.what,
                st.exit_code.or(st.signal),
                tail(&st.stderr, TAIL_LINES)
            )));
        }
        match client.exec(probe.clone()).await {
            Ok(r) if r.success() => Look::Ready(()),
            Ok(r) => Look::NotYet(r.stderr.lines().last().unwrap_or("").to_string()),
            Err(e) => Look::NotYet(e.to_string()),
        }
    })
    .await;
    waited.map_err(|w| match w {
        Waited::Failed(e) => e,
        Waited::TimedOut { limit, last } => HostError::Other(format!(
            "{} not ready within {}s: {last}",
            session.what,
            limit.as_secs()
        )),
    })
}

/// The server program's `--version` line on the server host: provenance, and which
/// database it is whatever `kind` says (Debian's `mysqld` is MariaDB's).
async fn server_version(server: &AgentClient, db: &DbServer) -> Result<String, HostError> {
    let r = server
        .exec(command(db.version_argv(), 30))
        .await
        .map_err(HostError::agent(format!("{} --version", db.programs().0)))?;
    if !r.success() {
        return Err(HostError::Other(format!(
            "{} --version failed ({:?}): {}; is the database server installed on this host?",
            db.programs().0,
            r.exit_code,
            tail(&format!("{}{}", r.stdout, r.stderr), TAIL_LINES)
        )));
    }
    Ok(r.stdout.trim().to_string())
}

fn read_password(db: &DbServer) -> Result<String, HostError> {
    let text = std::fs::read_to_string(&db.password_file)
        .map_err(|e| format!("cannot read password file {}: {e}", db.password_file.display()))?;
    let pw = text.lines().next().unwrap_or("").to_string();
    if pw.is_empty() {
        return Err(format!("password file {} is empty", db.password_file.display()).into());
    }
    crate::secrets::remember(&pw);
    Ok(pw)
}

/// Starts a database server on `server` under `policy` and readies it for `client`.
pub async fn start_db(
    server: &AgentClient,
    client: &AgentClient,
    db: &DbServer,
    policy: Policy,
    at: Placement,
) -> Result<Session, HostError> {
    let password = read_password(db)?;
    let dir = &db.datadir;
    must(
        server,
        command(
            vec![
                "install".into(),
                "-d".into(),
                "-m".into(),
                "0750".into(),
                "-o".into(),
                "mysql".into(),
                "-g".into(),
                "mysql".into(),
                dir.clone(),
            ],
            30,
        ),
        "creating the datadir",
    )
    .await?;
    let version = server_version(server, db).await?;
    let initialised = server
        .exec(command(["test".to_string(), "-d".into(), format!("{dir}/mysql")], 10))
        .await
        .map_err(|e| e.to_string())?;
    if !initialised.success() {
        if db.kind == DbKind::Mysql && is_mariadb(&version) {
            tracing::info!(
                "server kind mysql: {} is MariaDB's ({version}); its datadir is initialised with mariadb-install-db",
                db.programs().0
            );
        }
        must(
            server,
            command(db.init_argv_for(&version), 600),
            "initialising the datadir",
        )
        .await?;
    }
    let mut session = Session::spawn(server, db.server_argv(), policy, at, db.programs().0, password).await?;
    session.version = Some(version);
    let result = async {
        let mut admin = command(db.admin_argv(), 30);
        admin.argv.push("--execute=SELECT 1".into());
        wait_ready(&session, server, admin, Duration::from_secs(120)).await?;
        let setup = ExecRequest {
            stdin: Some(db.setup_sql(&session.password)),
            ..command(db.admin_argv(), 60)
        };
        must(server, setup, "creating the benchmark database and user").await?;
        // A real query over the network, from the client host.
        let probe = ExecRequest {
            env: vec![("MYSQL_PWD".into(), session.password.clone())],
            ..command(db.probe_argv(), 30)
        };
        wait_ready(&session, client, probe, Duration::from_secs(60)).await
    }
    .await;
    match result {
        Ok(()) => Ok(session),
        Err(e) => {
            let _ = session.stop().await;
            Err(e)
        }
    }
}

/// Starts netserver on `server` under `policy`; ready once a one-second test passes. The
/// port must be free before, and held by the netserver kreg started after: a netserver
/// someone else left running would otherwise answer kreg's clients.
pub async fn start_netserver(
    server: &AgentClient,
    client: &AgentClient,
    n: &Netperf,
    policy: Policy,
    at: Placement,
) -> Result<Session, HostError> {
    let taken = listening(server, n).await?;
    if !taken.is_empty() {
        return Err(HostError::Other(format!(
            "port {} for {} is already taken: {}; kreg measures only a netserver it started: stop that process or give the workload another server port",
            n.server_port,
            n.server_address,
            describe_listeners(&taken)
        )));
    }
    let session = Session::spawn(server, n.server_argv(), policy, at, "netserver", String::new()).await?;
    let mut probe = n.clone();
    probe.duration_secs = 1;
    let ready = async {
        wait_ready(
            &session,
            client,
            command(probe.client_argv(), 30),
            Duration::from_secs(60),
        )
        .await?;
        let now = listening(server, n).await?;
        let ours = |h: &kreg_protocol::wire::Holder| h.pid == session.pid || h.ppid == session.pid;
        let held = now.iter().any(|l| l.holders.iter().any(|h| h.pid == session.pid));
        let foreign: Vec<_> = now
            .iter()
            .filter(|l| l.holders.is_empty() || !l.holders.iter().all(ours))
            .cloned()
            .collect();
        if !held || !foreign.is_empty() {
            return Err(HostError::Other(format!(
                "the netserver kreg started (pid {}) is not the one answering on port {} for {}: {}",
                session.pid,
                n.server_port,
                n.server_address,
                if now.is_empty() {
                    "nothing listens there".to_string()
                } else {
                    describe_listeners(&now)
                }
            )));
        }
        Ok(())
    };
    match ready.await {
        Ok(()) => Ok(session),
        Err(e) => {
            let _ = session.stop().await;
            Err(e)
        }
    }
}

/// The sockets listening where the netperf clients connect (the server's address or every
/// address, on its port).
async fn listening(server: &AgentClient, n: &Netperf) -> Result<Vec<kreg_protocol::wire::Listener>, HostError> {
    let all = server
        .listeners(n.server_port)
        .await
        .map_err(HostError::agent("listing the listening sockets"))?;
    Ok(all.into_iter().filter(|l| l.receives(&n.server_address)).collect())
}

/// `pid 1234 (netserver) listens on 0.0.0.0:12865`, for each socket.
fn describe_listeners(ls: &[kreg_protocol::wire::Listener]) -> String {
    ls.iter()
        .map(|l| {
            let who = if l.holders.is_empty() {
                "a socket no process holds".to_string()
            } else {
                l.holders
                    .iter()
                    .map(|h| format!("pid {} ({})", h.pid, h.comm))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let addr = if l.address.contains(':') {
                format!("[{}]", l.address)
            } else {
                l.address.clone()
            };
            format!("{who} listens on {addr}:{}", l.port)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Session {
    /// The policies on every thread of the server; an error if any differs from `want`.
    /// Every thread of the server under `want`, and in a leaf of `cgroup` when there is
    /// one; their listing.
    pub async fn check_threads(
        &self,
        want: Policy,
        cgroup: Option<&super::cgroup::Placed>,
    ) -> Result<(String, String), HostError> {
        let threads = self
            .server
            .threads(self.pid)
            .await
            .map_err(HostError::agent(self.what.clone()))?;
        let listing: String = threads
            .iter()
            .map(|t| match cgroup {
                // With a cgroup, each thread's too (after the policy, which ends the line
                // otherwise).
                Some(_) => format!(
                    "{} {} {} {}\n",
                    t.tid,
                    t.comm,
                    t.policy,
                    t.cgroup.as_deref().unwrap_or("-")
                ),
                None => format!("{} {} {}\n", t.tid, t.comm, t.policy),
            })
            .collect();
        if let Some(cg) = cgroup {
            let outside: Vec<_> = threads
                .iter()
                .filter(|t| !t.cgroup.as_deref().is_some_and(|c| cg.holds(c)))
                .collect();
            if let Some(t) = outside.first() {
                return Err(HostError::Other(format!(
                    "{} has {} of {} threads outside its cgroup's leaves: e.g. {} ({}) in {}",
                    self.what,
                    outside.len(),
                    threads.len(),
                    t.tid,
                    t.comm,
                    t.cgroup.as_deref().unwrap_or("no cgroup")
                )));
            }
        }
        let wrong: Vec<_> = threads.iter().filter(|t| t.policy != want.name()).collect();
        if !wrong.is_empty() {
            return Err(HostError::Other(format!(
                "{} has {} of {} threads not under {}: e.g. {} ({}) under {}",
                self.what,
                wrong.len(),
                threads.len(),
                want.name(),
                wrong[0].tid,
                wrong[0].comm,
                wrong[0].policy
            )));
        }
        Ok((want.name().to_string(), listing))
    }

    /// Stops the server, then removes its cgroup.
    pub async fn stop(self) -> Result<(), HostError> {
        if let Some((runner, dir)) = &self.private {
            let _ = runner.exec(command(["rm", "-rf", dir.as_str()], 30)).await;
        }
        let stopped = self.server.stop(self.id, 60).await.map(|_| ()).map_err(HostError::from);
        if let Some(cg) = &self.cgroup {
            cg.remove().await?;
        }
        stopped
    }
}

/// hammerdbcli building the TPROC-C schema on the load generator. HammerDB exits 0 when its
/// virtual users failed: its own line says so, and is the reason.
pub async fn build_schema(runner: &AgentClient, on: &str, script: &str, password: &str) -> Result<(), HostError> {
    let what = format!("hammerdbcli on {on}, building the TPROC-C schema,");
    let what = what.as_str();
    let run = super::hammerdb::Run::prepare(runner, script).await?;
    let res = runner.exec(run.request(7200)).await;
    run.finish().await;
    let res = res.map_err(HostError::agent(what))?;
    let stdout = hammerdb::redact(&res.stdout, password);
    if let Some(line) = hammerdb::failure(&stdout) {
        return Err(HostError::Other(format!("{what} failed: {line}")));
    }
    if !res.success() {
        let mut res = res;
        res.stdout = stdout;
        res.stderr = hammerdb::redact(&res.stderr, password);
        return Err(crate::failure::CommandFailed::of_exec(what, &res, 7200).into());
    }
    Ok(())
}

/// A folder of its own on `client`'s host (`/tmp/kreg-WHAT.XXXXXX`, mode 0700) holding
/// `name` (mode 0600) with `text`; the folder's path.
async fn private_file(
    client: &AgentClient,
    what: &str,
    name: &str,
    text: Result<String, HostError>,
) -> Result<String, HostError> {
    let text = text?;
    let dir = must(
        client,
        command(["mktemp", "-d", &format!("/tmp/kreg-{what}.XXXXXX")], 10),
        "mktemp",
    )
    .await?
    .trim()
    .to_string();
    let up = client.upload(&format!("{what}-private"), text.into_bytes()).await?;
    let placed = super::tools::place_mode(client, FileSource::Upload(up.name), &format!("{dir}/{name}"), 0o600).await;
    let _ = client.exec(command(["rm", "-f", &up.path], 10)).await;
    if let Err(e) = placed {
        let _ = client.exec(command(["rm", "-rf", &dir], 10)).await;
        return Err(e);
    }
    Ok(dir)
}

/// Opens the session a two-host workload needs (and readies its data: sysbench tables,
/// the HammerDB schema). `None` for single-host kinds.
pub async fn open(
    kind: &WorkloadKind,
    server: &AgentClient,
    runner: &AgentClient,
    runner_host: &str,
    policy: Policy,
    at: Placement,
    sut_cpus: u32,
) -> Result<Option<Session>, HostError> {
    let session = match kind.plan() {
        Plan::Sysbench(sb) => {
            let mut s = start_db(server, runner, &sb.server, policy, at.clone()).await?;
            // The password in a file of root's on the client's host, never on its argv.
            match private_file(
                runner,
                "sysbench",
                "sysbench.conf",
                Sysbench::config_text(&s.password).map_err(HostError::from),
            )
            .await
            {
                Ok(dir) => s.private = Some((runner.clone(), dir)),
                Err(e) => {
                    let _ = s.stop().await;
                    return Err(e);
                }
            }
            let config = s.sysbench_config().expect("just made");
            // Fresh tables for each session: cleanup (which tolerates none), then prepare.
            let _ = runner.exec(command(sb.argv(&config, "cleanup"), 600)).await;
            if let Err(e) = must(runner, command(sb.argv(&config, "prepare"), 3600), "sysbench prepare").await {
                let _ = s.stop().await;
                return Err(e);
            }
            s
        }
        Plan::Hammerdb(h) => {
            if h.server.password_file.exists() {
                let pw = read_password(&h.server)?;
                if pw.contains(['{', '}', '\\']) {
                    return Err(HostError::Other(
                        "a HammerDB password may not contain braces or backslashes".into(),
                    ));
                }
            }
            let s = start_db(server, runner, &h.server, policy, at.clone()).await?;
            let count = command(h.schema_probe_argv(), 30);
            let built = must(server, count, "looking for the TPROC-C schema").await?.trim() == "1";
            if !built {
                let vus = h.virtual_users.resolve(sut_cpus);
                let script = h.script(&s.password, vus, true);
                if let Err(e) = build_schema(runner, runner_host, &script, &s.password).await {
                    let _ = s.stop().await;
                    return Err(e);
                }
                // The build said it succeeded: the schema must be there now.
                let count = command(h.schema_probe_argv(), 30);
                if must(server, count, "looking for the TPROC-C schema").await?.trim() != "1" {
                    let _ = s.stop().await;
                    return Err(HostError::Other(
                        "HammerDB's schema build on the load generator ended without a TPROC-C schema on the server"
                            .into(),
                    ));
                }
            }
            s
        }
        Plan::Netperf(n) => start_netserver(server, runner, n, policy, at).await?,
        Plan::Single(_) => return Ok(None),
    };
    Ok(Some(session))
}
