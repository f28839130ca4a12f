//! Workload tools on hosts: installed after each boot from a distribution package, built
//! from a git tree, or uploaded; and the version of every program a job runs, recorded
//! with its results.

use std::collections::BTreeMap;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{ExecRequest, FileSource, PlaceRequest};
use sha2::Digest;

use super::error::HostError;
use super::{command, must};
use crate::scenario::{Tool, ToolSource};

/// Where git-built tools keep their trees on a host.
const TREES: &str = "/var/lib/kreg/tools";

/// `must`, its stdout trimmed.
async fn run(client: &AgentClient, r: ExecRequest, what: &str) -> Result<String, HostError> {
    Ok(must(client, r, what).await?.trim().to_string())
}

/// Installs `tool` on one host and returns its version.
pub async fn install(client: &AgentClient, tool: &Tool) -> Result<String, HostError> {
    let target = format!("{}/{}", tool.install_dir, tool.name);
    match &tool.source {
        ToolSource::Apt { package } => install_apt(client, package).await,
        ToolSource::Git {
            url,
            git_ref,
            build,
            binary,
        } => {
            let (tree, commit) = checkout(client, &tool.name, url, git_ref).await?;
            let b = ExecRequest {
                argv: build.clone(),
                cwd: Some(tree.clone()),
                ..command(Vec::<String>::new(), 3600)
            };
            run(client, b, &format!("building {}", tool.name)).await?;
            place(client, FileSource::Path(format!("{tree}/{binary}")), &target).await?;
            client.set_program(&tool.name, &target);
            Ok(format!("git {commit}"))
        }
        ToolSource::Tarball { path, binary } => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let hash = hex::encode(sha2::Sha256::digest(&bytes));
            let tree = unpack(client, &tool.name, &hash, bytes).await?;
            let program = format!("{tree}/{binary}");
            let found = client.exec(command(["test", "-f", &program], 10)).await?;
            if !found.success() {
                return Err(format!(
                    "tool {}: {} has no {binary} (its tree is unpacked in {tree})",
                    tool.name,
                    path.display()
                )
                .into());
            }
            client.set_program(&tool.name, &program);
            Ok(format!("tarball sha256 {hash}"))
        }
        ToolSource::Upload { path } => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let hash = hex::encode(sha2::Sha256::digest(&bytes));
            let up = client.upload(&format!("tool-{}", tool.name), bytes).await?;
            place(client, FileSource::Upload(up.name), &target).await?;
            client.set_program(&tool.name, &target);
            Ok(format!("sha256 {hash}"))
        }
    }
}

/// The tree of a tarball on the host, unpacked once per content (`TREES/NAME-HASH`): a
/// tarball holding one top folder has that folder as its tree. Returns the tree.
async fn unpack(client: &AgentClient, name: &str, hash: &str, bytes: Vec<u8>) -> Result<String, HostError> {
    let tree = format!("{TREES}/{name}-{}", &hash[..16]);
    let done = format!("{tree}/.kreg-unpacked");
    if client.exec(command(["test", "-f", &done], 10)).await?.success() {
        return Ok(tree);
    }
    let up = client.upload(&format!("tool-{name}.tar.gz"), bytes).await?;
    let staging = format!("{tree}.unpacking");
    run(client, command(["rm", "-rf", &tree, &staging], 120), "rm").await?;
    run(client, command(["mkdir", "-p", &staging], 10), "mkdir").await?;
    let untar = command(["tar", "-xzf", &up.path, "-C", &staging, "--no-same-owner"], 600);
    let untarred = run(client, untar, &format!("unpacking {name}'s tarball")).await;
    let _ = client.exec(command(["rm", "-f", &up.path], 30)).await;
    untarred?;
    let top = run(
        client,
        command(["find", &staging, "-mindepth", "1", "-maxdepth", "1"], 30),
        "find",
    )
    .await?;
    let entries: Vec<&str> = top.lines().filter(|l| !l.is_empty()).collect();
    let single_dir = match entries.as_slice() {
        [one] => client.exec(command(["test", "-d", one], 10)).await?.success(),
        _ => false,
    };
    let from = if single_dir {
        entries[0].to_string()
    } else {
        staging.clone()
    };
    run(client, command(["mv", "-T", &from, &tree], 60), "mv").await?;
    run(client, command(["rm", "-rf", &staging], 60), "rm").await?;
    run(client, command(["touch", &done], 10), "touch").await?;
    Ok(tree)
}

/// `apt-get install` of a package; its version as dpkg has it.
async fn install_apt(client: &AgentClient, package: &str) -> Result<String, HostError> {
    let mut r = command(["apt-get", "install", "-y", "-q", package], 1800);
    r.env.push(("DEBIAN_FRONTEND".into(), "noninteractive".into()));
    run(client, r, &format!("apt-get install {package}")).await?;
    let v = run(
        client,
        command(["dpkg-query", "-W", "-f=${Version}", package], 30),
        "dpkg-query",
    )
    .await?;
    Ok(format!("{package} {v}"))
}

/// The tool's tree on the host at `git_ref`: one tree per tool and URL, fetched when it
/// is there, cloned afresh when it is not (or cannot be fetched). Returns the tree and
/// the commit checked out.
async fn checkout(client: &AgentClient, name: &str, url: &str, git_ref: &str) -> Result<(String, String), HostError> {
    let url_hash = hex::encode(&sha2::Sha256::digest(url.as_bytes())[..6]);
    let tree = format!("{TREES}/{name}-{url_hash}");
    let have = client
        .exec(command(["test", "-d", &format!("{tree}/.git")], 10))
        .await?;
    let fetch = command(["git", "-C", &tree, "fetch", "--quiet", "--tags", "origin"], 1800);
    let fetched = have.success() && run(client, fetch, "git fetch").await.is_ok();
    if !fetched {
        run(client, command(["rm", "-rf", &tree], 60), "rm").await?;
        run(client, command(["mkdir", "-p", TREES], 10), "mkdir").await?;
        let clone = command(["git", "clone", "--quiet", "--", url, &tree], 1800);
        run(client, clone, "git clone").await?;
    }
    let co = command(
        ["git", "-C", &tree, "checkout", "--quiet", "--force", git_ref, "--"],
        60,
    );
    run(client, co, "git checkout").await?;
    let commit = run(
        client,
        command(["git", "-C", &tree, "rev-parse", "HEAD"], 30),
        "git rev-parse",
    )
    .await?;
    Ok((tree, commit))
}

/// The agent copies the file into place with mode 0755 itself: the host needs no
/// `install` (busybox has none).
pub(super) async fn place(client: &AgentClient, from: FileSource, target: &str) -> Result<(), HostError> {
    place_mode(client, from, target, 0o755).await
}

/// [`place`] with the file's mode given.
pub(super) async fn place_mode(
    client: &AgentClient,
    from: FileSource,
    target: &str,
    mode: u32,
) -> Result<(), HostError> {
    let req = PlaceRequest {
        from,
        to: target.to_string(),
        mode,
    };
    client
        .place_file(req)
        .await
        .map_err(HostError::agent(format!("placing {target}")))
}

/// The version of a program found on a host that no `tools:` entry declares: its Debian
/// package's version when dpkg knows the file, else the SHA-256 of the file.
pub async fn identify(client: &AgentClient, program: &str) -> String {
    let program = client.program_path(program);
    let program = program.as_str();
    let path = if program.contains('/') {
        program.to_string()
    } else {
        match run(client, command(["which", program], 10), "which").await {
            Ok(p) if !p.is_empty() => p,
            _ => return "not found".into(),
        }
    };
    if let Ok(owner) = run(client, command(["dpkg-query", "-S", &path], 10), "dpkg-query").await {
        // `dpkg-query -S` also lists diversions ("diversion by PKG from: PATH"): skip them.
        let owning = owner.lines().find(|l| !l.starts_with("diversion by"));
        if let Some((pkg, _)) = owning.and_then(|l| l.split_once(':')) {
            let pkg = pkg.trim();
            if let Ok(v) = run(
                client,
                command(["dpkg-query", "-W", "-f=${Version}", pkg], 10),
                "dpkg-query",
            )
            .await
            {
                return format!("{pkg} {v}");
            }
        }
    }
    match run(client, command(["sha256sum", &path], 30), "sha256sum").await {
        Ok(out) => format!("sha256 {}", out.split_whitespace().next().unwrap_or("")),
        Err(_) => "unknown".into(),
    }
}

/// Versions gathered during one boot, keyed "tool@host".
pub type Versions = BTreeMap<String, String>;
