//! The controller's client for the agent's HTTP API. It checks the protocol version of every
//! answer and turns the agent's errors into [`ClientError`]s that name the host and the step.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::wire::{
    CgroupTree, CgroupsMade, Envelope, ErrorKind, ExecRequest, ExecResult, Identity, InstallRequest, Installed,
    InstalledKernel, KexecRequest, PlaceRequest, ProcessState, Reply, Step, StepError, StepOutput, ThreadInfo,
    Uploaded, VersionInfo,
};

/// An error with its causes, outermost first: "error sending request …: client error
/// (Connect): tcp connect error: Connection refused (os error 111)".
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// How long a short control step (knobs, schedstat, threads, spawn, poll) may take: a
/// machine busy with a heavy workload, or a guest the host starves, answers slowly.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(90);

/// How long `identity` may take (it is also how boots are awaited, call after call).
pub const IDENTITY_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times an upload is sent when its connection is lost on the way.
pub const UPLOAD_TRIES: u32 = 3;

/// How long an agent whose upload was cut has to answer again before it is sent again.
pub const UPLOAD_REJOIN: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The cause is said in the message (with its own causes), not chained as a source.
    #[error("agent at {url} is unreachable: {}", with_causes(cause))]
    Unreachable { url: String, cause: reqwest::Error },
    #[error("agent at {url} speaks protocol {got}, this kreg speaks {want}: install a matching kreg-agent")]
    Protocol { url: String, got: u32, want: u32 },
    #[error("agent at {url} refused the token (HTTP 401): check the host's token file")]
    Unauthorized { url: String },
    #[error("agent at {url}: step {step} failed ({:?}): {}", error.kind, error.message)]
    Step {
        url: String,
        step: &'static str,
        error: StepError,
    },
    #[error("agent at {url}: unexpected answer to {step}: {detail}")]
    Unexpected {
        url: String,
        step: &'static str,
        detail: String,
    },
}

impl ClientError {
    /// Whether the agent could not be reached at all (as while its host reboots).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ClientError::Unreachable { .. })
    }
}

#[derive(Clone)]
pub struct AgentClient {
    base: String,
    token: String,
    http: reqwest::Client,
    /// Programs installed where PATH may not reach (a tool's `install_dir`): a bare
    /// `argv[0]` of an exec or spawn step that names one runs from its installed path.
    /// Shared by every clone of this client.
    programs: std::sync::Arc<std::sync::RwLock<std::collections::HashMap<String, String>>>,
    /// Whom exec and spawn steps work for (see `ExecRequest::owner`); shared by clones.
    owner: std::sync::Arc<std::sync::RwLock<Option<String>>>,
    /// The lease epoch every request carries once set (see [`AgentClient::fence`]); shared
    /// by clones.
    epoch: std::sync::Arc<std::sync::RwLock<Option<u64>>>,
}

impl std::fmt::Debug for AgentClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl AgentClient {
    pub fn new(base_url: &str, token: &str) -> AgentClient {
        // Never through a proxy from the environment: it would get the token.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .expect("reqwest client");
        Self::with_http(base_url, token, http)
    }

    /// A client of an agent serving HTTPS whose certificate has `fingerprint` (see
    /// [`crate::pin`]): no other certificate is accepted, and no CA is consulted.
    pub fn pinned(base_url: &str, token: &str, fingerprint: &str) -> Result<AgentClient, crate::Error> {
        let tls = crate::pin::pinned_client(fingerprint)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .use_preconfigured_tls(tls)
            .build()
            .map_err(|e| crate::Error::Tls(format!("TLS client: {e}")))?;
        Ok(Self::with_http(base_url, token, http))
    }

    fn with_http(base_url: &str, token: &str, http: reqwest::Client) -> AgentClient {
        AgentClient {
            base: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            http,
            programs: Default::default(),
            owner: Default::default(),
            epoch: Default::default(),
        }
    }

    /// Sends `epoch` (the epoch of the lease this controller holds on the machine) with
    /// every request from now on: the agent refuses requests of an older epoch than the
    /// highest it has seen (HTTP 409, `ErrorKind::Fenced`), so that a controller that lost
    /// its lease cannot act on the machine.
    pub fn fence(&self, epoch: u64) {
        *self.epoch.write().expect("epoch lock") = Some(epoch);
    }

    /// A request to `url` with the token and, once set, the epoch.
    fn request(&self, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
        let req = self.http.request(method, url).bearer_auth(&self.token);
        match *self.epoch.read().expect("epoch lock") {
            Some(e) => req.header(crate::EPOCH_HEADER, e.to_string()),
            None => req,
        }
    }

    /// Marks every exec and spawn step from now on as working for `owner` (e.g. `run-7`).
    pub fn set_owner(&self, owner: &str) {
        *self.owner.write().expect("owner lock") = Some(owner.to_string());
    }

    /// Kills what earlier attempts left running for this client's owner (see
    /// [`Step::Sweep`]); returns what was killed. Without an owner, nothing is swept.
    pub async fn sweep(&self, keep_spawned: bool) -> Result<Vec<crate::wire::SweptProcess>, ClientError> {
        self.sweep_as(keep_spawned, false).await
    }

    /// Kills what this agent started for any owner but this client's (what an earlier
    /// holder of the machine left running); this owner's own processes stay.
    pub async fn sweep_others(&self) -> Result<Vec<crate::wire::SweptProcess>, ClientError> {
        self.sweep_as(true, true).await
    }

    async fn sweep_as(&self, keep_spawned: bool, others: bool) -> Result<Vec<crate::wire::SweptProcess>, ClientError> {
        let Some(owner) = self.owner.read().expect("owner lock").clone() else {
            return Ok(Vec::new());
        };
        match self
            .step(
                Step::Sweep {
                    owner,
                    keep_spawned,
                    others,
                },
                Duration::from_secs(60),
            )
            .await?
        {
            StepOutput::Swept { killed } => Ok(killed),
            other => Err(self.unexpected("sweep", &other)),
        }
    }

    /// Runs `name` (a bare `argv[0]`) from `path` on this host from now on.
    pub fn set_program(&self, name: &str, path: &str) {
        self.programs
            .write()
            .expect("programs lock")
            .insert(name.to_string(), path.to_string());
    }

    /// Where `program` runs from on this host: its installed path when a tool put it
    /// there, else the name itself (looked up in the host's PATH).
    pub fn program_path(&self, program: &str) -> String {
        if program.contains('/') {
            return program.to_string();
        }
        self.programs
            .read()
            .expect("programs lock")
            .get(program)
            .cloned()
            .unwrap_or_else(|| program.to_string())
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    fn unreachable(&self, cause: reqwest::Error) -> ClientError {
        ClientError::Unreachable {
            url: self.base.clone(),
            cause,
        }
    }

    pub async fn version(&self) -> Result<VersionInfo, ClientError> {
        let v: VersionInfo = self
            .http
            .get(format!("{}/v1/version", self.base))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| self.unreachable(e))?
            .json()
            .await
            .map_err(|e| self.unreachable(e))?;
        if v.protocol != crate::PROTOCOL_VERSION {
            return Err(ClientError::Protocol {
                url: self.base.clone(),
                got: v.protocol,
                want: crate::PROTOCOL_VERSION,
            });
        }
        Ok(v)
    }

    async fn decode<T: DeserializeOwned>(&self, step: &'static str, resp: reqwest::Response) -> Result<T, ClientError> {
        if resp.status() == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Unauthorized { url: self.base.clone() });
        }
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| self.unreachable(e))?;
        let env: Envelope<T> = serde_json::from_slice(&bytes).map_err(|e| ClientError::Unexpected {
            url: self.base.clone(),
            step,
            detail: format!(
                "HTTP {status}, {e}: {:?}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
        })?;
        if env.protocol != crate::PROTOCOL_VERSION {
            return Err(ClientError::Protocol {
                url: self.base.clone(),
                got: env.protocol,
                want: crate::PROTOCOL_VERSION,
            });
        }
        match env.body {
            Reply::Ok(v) => Ok(v),
            Reply::Error(error) => Err(ClientError::Step {
                url: self.base.clone(),
                step,
                error,
            }),
        }
    }

    /// Runs one step. `timeout` bounds the whole HTTP exchange.
    pub async fn step(&self, mut step: Step, timeout: Duration) -> Result<StepOutput, ClientError> {
        let name = step.name();
        if let Step::Exec(req) | Step::Spawn(req) = &mut step {
            if let Some(first) = req.argv.first_mut() {
                *first = self.program_path(first);
            }
            if req.owner.is_none() {
                req.owner = self.owner.read().expect("owner lock").clone();
            }
        }
        // A kept-alive connection outlives a reboot of the machine on some paths (qemu's
        // user network, NAT): the first request on it is cut off unanswered. A step that
        // only reads is sent again on a new connection; any other is reported, since the
        // agent may have acted on it.
        let mut attempt = 0;
        let resp = loop {
            attempt += 1;
            let sent = self
                .request(reqwest::Method::POST, format!("{}/v1/step", self.base))
                .timeout(timeout)
                .json(&step)
                .send()
                .await;
            match sent {
                Ok(resp) => break resp,
                Err(e) if attempt < 3 && step.reads_only() && e.is_request() && !e.is_timeout() => continue,
                Err(e) => return Err(self.unreachable(e)),
            }
        };
        self.decode(name, resp).await
    }

    pub async fn identity(&self) -> Result<Identity, ClientError> {
        match self.step(Step::Identity, IDENTITY_TIMEOUT).await? {
            StepOutput::Identity(i) => Ok(i),
            other => Err(self.unexpected("identity", &other)),
        }
    }

    pub async fn exec(&self, req: ExecRequest) -> Result<ExecResult, ClientError> {
        let timeout = Duration::from_secs(req.timeout_secs + 30);
        match self.step(Step::Exec(req), timeout).await? {
            StepOutput::Exec(r) => Ok(r),
            other => Err(self.unexpected("exec", &other)),
        }
    }

    pub async fn spawn(&self, req: ExecRequest) -> Result<ProcessState, ClientError> {
        match self.step(Step::Spawn(req), CONTROL_TIMEOUT).await? {
            StepOutput::Process(p) => Ok(p),
            other => Err(self.unexpected("spawn", &other)),
        }
    }

    pub async fn poll(&self, id: u64) -> Result<ProcessState, ClientError> {
        match self.step(Step::Poll { id, since: None }, CONTROL_TIMEOUT).await? {
            StepOutput::Process(p) => Ok(p),
            other => Err(self.unexpected("poll", &other)),
        }
    }

    /// Like [`poll`](Self::poll), with only the output past `since` (stdout, stderr).
    pub async fn poll_since(&self, id: u64, since: [u64; 2]) -> Result<ProcessState, ClientError> {
        match self
            .step(Step::Poll { id, since: Some(since) }, CONTROL_TIMEOUT)
            .await?
        {
            StepOutput::Process(p) => Ok(p),
            other => Err(self.unexpected("poll", &other)),
        }
    }

    pub async fn stop(&self, id: u64, grace_secs: u64) -> Result<ProcessState, ClientError> {
        self.stop_with(id, grace_secs, false).await
    }

    /// Stops a spawned process with SIGINT first (see [`Step::Stop`]).
    pub async fn interrupt(&self, id: u64, grace_secs: u64) -> Result<ProcessState, ClientError> {
        self.stop_with(id, grace_secs, true).await
    }

    async fn stop_with(&self, id: u64, grace_secs: u64, interrupt: bool) -> Result<ProcessState, ClientError> {
        let step = Step::Stop {
            id,
            grace_secs,
            interrupt,
        };
        match self.step(step, Duration::from_secs(grace_secs + 30)).await? {
            StepOutput::Process(p) => Ok(p),
            other => Err(self.unexpected("stop", &other)),
        }
    }

    /// A file under /proc/sys or /sys as the agent read it (untrimmed); `None` when there
    /// is no such file.
    pub async fn read_knob(&self, path: &str) -> Result<Option<String>, ClientError> {
        match self.step(Step::ReadKnob { path: path.into() }, CONTROL_TIMEOUT).await {
            Ok(StepOutput::Knob(k)) => Ok(Some(k.value)),
            Ok(other) => Err(self.unexpected("read_knob", &other)),
            Err(ClientError::Step { error, .. }) if error.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes a knob; its value read back after.
    pub async fn write_knob(&self, path: &str, value: &str) -> Result<String, ClientError> {
        let step = Step::WriteKnob {
            path: path.into(),
            value: value.into(),
        };
        match self.step(step, CONTROL_TIMEOUT).await? {
            StepOutput::Knob(k) => Ok(k.value),
            other => Err(self.unexpected("write_knob", &other)),
        }
    }

    /// /proc/schedstat as the agent read it.
    pub async fn schedstat(&self) -> Result<crate::wire::SchedstatSnapshot, ClientError> {
        match self.step(Step::Schedstat, CONTROL_TIMEOUT).await? {
            StepOutput::Schedstat(s) => Ok(s),
            other => Err(self.unexpected("schedstat", &other)),
        }
    }

    /// /proc/interrupts as the agent read it.
    pub async fn interrupts(&self) -> Result<String, ClientError> {
        match self.step(Step::Interrupts, CONTROL_TIMEOUT).await? {
            StepOutput::Interrupts { raw } => Ok(raw),
            other => Err(self.unexpected("interrupts", &other)),
        }
    }

    /// Makes a cgroup tree (see [`Step::MakeCgroups`]).
    pub async fn make_cgroups(&self, tree: CgroupTree) -> Result<CgroupsMade, ClientError> {
        match self.step(Step::MakeCgroups(tree), CONTROL_TIMEOUT * 4).await? {
            StepOutput::Cgroups(m) => Ok(m),
            other => Err(self.unexpected("make_cgroups", &other)),
        }
    }

    /// Removes the trees under `name`; how many groups went.
    pub async fn remove_cgroups(&self, name: &str) -> Result<u64, ClientError> {
        match self
            .step(Step::RemoveCgroups { name: name.into() }, CONTROL_TIMEOUT * 4)
            .await?
        {
            StepOutput::CgroupsRemoved { removed } => Ok(removed),
            other => Err(self.unexpected("remove_cgroups", &other)),
        }
    }

    /// Puts a file in place with a mode (see [`Step::PlaceFile`]).
    pub async fn place_file(&self, req: PlaceRequest) -> Result<(), ClientError> {
        match self.step(Step::PlaceFile(req), Duration::from_secs(120)).await? {
            StepOutput::Placed(_) => Ok(()),
            other => Err(self.unexpected("place_file", &other)),
        }
    }

    /// Loads a kernel and reboots into it (an answer lost with the reboot is the caller's
    /// to judge, by the next boot id).
    pub async fn kexec(&self, req: KexecRequest) -> Result<(), ClientError> {
        match self.step(Step::Kexec(req), Duration::from_secs(60)).await? {
            StepOutput::KexecStarted { .. } => Ok(()),
            other => Err(self.unexpected("kexec", &other)),
        }
    }

    /// Boots an installed kernel by `step` (kexec_installed or grub_reboot).
    pub async fn boot_installed(&self, step: Step) -> Result<(), ClientError> {
        let name = step.name();
        match self.step(step, Duration::from_secs(600)).await? {
            StepOutput::KexecStarted { .. } | StepOutput::Rebooting { .. } => Ok(()),
            other => Err(self.unexpected(name, &other)),
        }
    }

    /// kreg's installed kernels (oldest first) and the running kernel's release.
    pub async fn installed_kernels(&self) -> Result<(String, Vec<InstalledKernel>), ClientError> {
        match self.step(Step::InstalledKernels, Duration::from_secs(60)).await? {
            StepOutput::Kernels { running, kernels } => Ok((running, kernels)),
            other => Err(self.unexpected("installed_kernels", &other)),
        }
    }

    /// Installs a kernel (see [`Step::InstallKernel`]).
    pub async fn install_kernel(&self, req: InstallRequest) -> Result<Installed, ClientError> {
        match self.step(Step::InstallKernel(req), Duration::from_secs(1800)).await? {
            StepOutput::Installed(i) => Ok(i),
            other => Err(self.unexpected("install_kernel", &other)),
        }
    }

    pub async fn threads(&self, pid: u32) -> Result<Vec<ThreadInfo>, ClientError> {
        match self.step(Step::Threads { pid }, CONTROL_TIMEOUT).await? {
            StepOutput::Threads { threads, .. } => Ok(threads),
            other => Err(self.unexpected("threads", &other)),
        }
    }

    /// The TCP sockets listening on `port` on the agent's machine, with their holders.
    pub async fn listeners(&self, port: u16) -> Result<Vec<crate::wire::Listener>, ClientError> {
        match self.step(Step::Listeners { port }, CONTROL_TIMEOUT).await? {
            StepOutput::Listeners { sockets, .. } => Ok(sockets),
            other => Err(self.unexpected("listeners", &other)),
        }
    }

    /// Uploads `bytes` as `name` into the agent's data folder. An upload cut by a lost
    /// connection (the agent restarted, the network or an SSH tunnel dropped) is sent again
    /// whole once the agent answers, at most [`UPLOAD_TRIES`] times in all: the agent keeps
    /// nothing of a cut upload, and a finished one replaces the file whole.
    pub async fn upload(&self, name: &str, bytes: Vec<u8>) -> Result<Uploaded, ClientError> {
        let bytes = axum::body::Bytes::from(bytes);
        let mut tries = 1;
        loop {
            let err = match self.upload_once(name, bytes.clone()).await {
                Err(ClientError::Unreachable { url, cause }) if !cause.is_timeout() => {
                    ClientError::Unreachable { url, cause }
                }
                other => return other,
            };
            if tries >= UPLOAD_TRIES || !self.answers_within(UPLOAD_REJOIN).await {
                return Err(err);
            }
            tries += 1;
            tracing::warn!(
                "the upload of {name} ({} bytes) to {} was cut ({err}); the agent answers again: sent again (try {tries} of {UPLOAD_TRIES})",
                bytes.len(),
                self.base
            );
        }
    }

    async fn upload_once(&self, name: &str, bytes: axum::body::Bytes) -> Result<Uploaded, ClientError> {
        let resp = self
            .request(reqwest::Method::PUT, format!("{}/v1/files/{name}", self.base))
            .timeout(Duration::from_secs(600))
            .body(bytes)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        self.decode("upload", resp).await
    }

    /// Whether the agent answers `identity` within `wait` (asked every half second).
    async fn answers_within(&self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.identity().await.is_ok() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Fetches a file from the agent's data folder into `dest`, chunk by chunk.
    pub async fn download(&self, name: &str, dest: &std::path::Path) -> Result<u64, ClientError> {
        use tokio::io::AsyncWriteExt;
        let mut resp = self
            .request(reqwest::Method::GET, format!("{}/v1/files/{name}", self.base))
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        if !resp.status().is_success() {
            return Err(self
                .decode::<Uploaded>("download", resp)
                .await
                .err()
                .unwrap_or_else(|| ClientError::Unexpected {
                    url: self.base.clone(),
                    step: "download",
                    detail: "an error status with a success body".into(),
                }));
        }
        let io = |e: std::io::Error| ClientError::Unexpected {
            url: self.base.clone(),
            step: "download",
            detail: format!("{}: {e}", dest.display()),
        };
        let mut file = tokio::fs::File::create(dest).await.map_err(io)?;
        let mut n = 0u64;
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.unreachable(e))? {
            n += chunk.len() as u64;
            file.write_all(&chunk).await.map_err(io)?;
        }
        file.flush().await.map_err(io)?;
        Ok(n)
    }

    fn unexpected(&self, step: &'static str, got: &StepOutput) -> ClientError {
        ClientError::Unexpected {
            url: self.base.clone(),
            step,
            detail: format!("{got:?}"),
        }
    }
}
