//! HammerDB on its host as it must run there: `./hammerdbcli auto SCRIPT` started in its
//! own folder (its launcher runs `./bin/tclsh8.6`, linked to the system's Tcl where the
//! tree has none), the script in a file, and a `TMP` of the job's own (HammerDB 4.12 keeps
//! its settings there between runs, and writes the time profile there). HammerDB 4.8 and
//! later want the chart package `ticklecharts` at start: a stub stands in when the tree
//! lacks it. Versions kreg cannot drive (5.x needs Tcl 9) are refused with that reason.

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{ExecRequest, FileSource};

use super::error::HostError;
use super::{command, must};

/// The Tcl HammerDB 4.x runs on (Debian's tcl8.6).
const TCLSH: &str = "/usr/bin/tclsh8.6";

/// A stub of the chart package: the CLI only asks for it.
const TICKLECHARTS_STUB: &str = "package ifneeded ticklecharts 3.1 {package provide ticklecharts 3.1}\n";

/// One hammerdbcli run being readied or done on `client`'s host.
pub struct Run<'a> {
    client: &'a AgentClient,
    /// HammerDB's folder (where hammerdbcli is).
    dir: String,
    /// The run's own TMP, removed by [`Run::finish`].
    tmp: String,
    /// `v4.12`, from the launcher.
    pub version: String,
    tcllibpath: Option<String>,
}

impl<'a> Run<'a> {
    /// Finds HammerDB on the host, checks it can run, and writes `script` into a TMP of
    /// the run's own (mode 0600: it holds the password).
    pub async fn prepare(client: &'a AgentClient, script: &str) -> Result<Run<'a>, HostError> {
        let dir = folder(client).await?;
        let version = version(client, &dir).await?;
        tcl(client, &dir).await?;
        let tmp = must(
            client,
            command(["mktemp", "-d", "/tmp/kreg-hammerdb.XXXXXX"], 10),
            "mktemp",
        )
        .await?
        .trim()
        .to_string();
        let mut run = Run {
            client,
            dir,
            tmp,
            version,
            tcllibpath: None,
        };
        if let Err(e) = run.write(script).await {
            run.finish().await;
            return Err(e);
        }
        Ok(run)
    }

    async fn write(&mut self, script: &str) -> Result<(), HostError> {
        let charts = command(
            [
                "find",
                &self.dir,
                "-maxdepth",
                "3",
                "-type",
                "d",
                "-name",
                "ticklecharts*",
            ],
            30,
        );
        if must(self.client, charts, "looking for ticklecharts")
            .await?
            .trim()
            .is_empty()
        {
            let lib = format!("{}/tcl/ticklecharts", self.tmp);
            must(self.client, command(["mkdir", "-p", &lib], 10), "mkdir").await?;
            place(self.client, TICKLECHARTS_STUB, &format!("{lib}/pkgIndex.tcl"), 0o644).await?;
            self.tcllibpath = Some(format!("{}/tcl", self.tmp));
        }
        place(self.client, script, &self.script_path(), 0o600).await
    }

    fn script_path(&self) -> String {
        format!("{}/script.tcl", self.tmp)
    }

    /// The request that runs the script (the caller adds policy, owner, cgroup …).
    pub fn request(&self, timeout_secs: u64) -> ExecRequest {
        let mut env = vec![("TMP".to_string(), self.tmp.clone())];
        if let Some(p) = &self.tcllibpath {
            env.push(("TCLLIBPATH".into(), p.clone()));
        }
        ExecRequest {
            argv: vec!["./hammerdbcli".into(), "auto".into(), self.script_path()],
            cwd: Some(self.dir.clone()),
            env,
            timeout_secs,
            ..Default::default()
        }
    }

    /// The time profile HammerDB wrote (`mysql_timeprofile true`), when it wrote one.
    pub async fn profile(&self) -> Result<Option<String>, HostError> {
        let path = format!("{}/hdbxtprofile.log", self.tmp);
        let r = self.client.exec(command(["cat", &path], 30)).await?;
        Ok(r.success().then_some(r.stdout))
    }

    /// Removes the run's TMP (its script and HammerDB's files).
    pub async fn finish(self) {
        let _ = self.client.exec(command(["rm", "-rf", &self.tmp], 60)).await;
    }
}

/// HammerDB's folder: hammerdbcli's (a tool kreg installed, or the one on PATH), links
/// followed.
async fn folder(client: &AgentClient) -> Result<String, HostError> {
    let program = client.program_path("hammerdbcli");
    let path = if program.contains('/') {
        program
    } else {
        let found = client.exec(command(["which", "hammerdbcli"], 10)).await?;
        if !found.success() || found.stdout.trim().is_empty() {
            return Err(HostError::Other(
                "hammerdbcli is not on this host: give it as a tool (`from: { tarball: HammerDB-4.12.tar.gz, binary: hammerdbcli }`) or put HammerDB's folder on PATH".into(),
            ));
        }
        found.stdout.trim().to_string()
    };
    let real = must(client, command(["readlink", "-f", &path], 10), "readlink").await?;
    let real = real.trim();
    match real.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => Ok(dir.to_string()),
        _ => Err(HostError::Other(format!("hammerdbcli at {real:?}: no folder"))),
    }
}

/// The version the launcher sets (`set hdb_version "v4.12"`); 5.x and later refused.
async fn version(client: &AgentClient, dir: &str) -> Result<String, HostError> {
    let launcher = format!("{dir}/hammerdbcli");
    let line = must(
        client,
        command(["grep", "-m1", "set hdb_version", &launcher], 10),
        "reading hammerdbcli's version",
    )
    .await?;
    let version = line.split('"').nth(1).unwrap_or("").to_string();
    crate::workload::hammerdb::check_version(&version)?;
    Ok(version)
}

/// `bin/tclsh8.6` in HammerDB's folder, linked to the system's where the tree has none.
async fn tcl(client: &AgentClient, dir: &str) -> Result<(), HostError> {
    let own = format!("{dir}/bin/tclsh8.6");
    if client.exec(command(["test", "-x", &own], 10)).await?.success() {
        return Ok(());
    }
    if !client.exec(command(["test", "-x", TCLSH], 10)).await?.success() {
        return Err(HostError::Other(format!(
            "{TCLSH} is missing: install tcl8.6 tcl-thread mysqltcl (and libsqlite3-tcl for HammerDB 4.6 and later) on this host"
        )));
    }
    must(client, command(["mkdir", "-p", &format!("{dir}/bin")], 10), "mkdir").await?;
    must(client, command(["ln", "-sf", TCLSH, &own], 10), "linking bin/tclsh8.6").await?;
    Ok(())
}

/// Writes `text` to `to` on the host with `mode`.
async fn place(client: &AgentClient, text: &str, to: &str, mode: u32) -> Result<(), HostError> {
    let up = client.upload("hammerdb-file", text.as_bytes().to_vec()).await?;
    let placed = super::tools::place_mode(client, FileSource::Upload(up.name), to, mode).await;
    // The upload holds what the file does (the script, its password): not left behind.
    let _ = client.exec(command(["rm", "-f", &up.path], 10)).await;
    placed
}
