//! Workload tools on hosts: installed after each boot from a distribution package, built
//! from a git tree, or uploaded; and the version of every program a job runs, recorded
//! with its results.

use std::collections::BTreeMap;

use kreg_agent::client::AgentClient;
use kreg_agent::wire::{ExecRequest, FileSource, PlaceRequest, Step, StepOutput};
use sha2::Digest;

use crate::failure::CommandFailed;
use crate::scenario::{Tool, ToolSource};

/// Where git-built tools keep their trees on a host.
const TREES: &str = "/var/lib/kreg/tools";

fn req(argv: Vec<String>, timeout_secs: u64) -> ExecRequest {
    ExecRequest {
        argv,
        timeout_secs,
        ..Default::default()
    }
}

async fn run(client: &AgentClient, r: ExecRequest, what: &str) -> Result<String, String> {
    let r_timeout = r.timeout_secs;
    let res = client.exec(r).await.map_err(|e| format!("{what}: {e}"))?;
    if !res.success() {
        return Err(CommandFailed::of_exec(what, &res, r_timeout).to_string());
    }
    Ok(res.stdout.trim().to_string())
}

/// Installs `tool` on one host and returns its version.
pub async fn install(client: &AgentClient, tool: &Tool) -> Result<String, String> {
    let target = format!("{}/{}", tool.install_dir, tool.name);
    match &tool.source {
        ToolSource::Apt { package } => {
            let mut r = req(
                vec![
                    "apt-get".into(),
                    "install".into(),
                    "-y".into(),
                    "-q".into(),
                    package.clone(),
                ],
                1800,
            );
            r.env.push(("DEBIAN_FRONTEND".into(), "noninteractive".into()));
            run(client, r, &format!("apt-get install {package}")).await?;
            let v = run(
                client,
                req(
                    vec![
                        "dpkg-query".into(),
                        "-W".into(),
                        "-f=${Version}".into(),
                        package.clone(),
                    ],
                    30,
                ),
                "dpkg-query",
            )
            .await?;
            Ok(format!("{package} {v}"))
        }
        ToolSource::Git {
            url,
            git_ref,
            build,
            binary,
        } => {
            // One tree per tool and URL, reused across boots and runs.
            let url_hash = hex::encode(&sha2::Sha256::digest(url.as_bytes())[..6]);
            let tree = format!("{TREES}/{}-{url_hash}", tool.name);
            let have = client
                .exec(req(vec!["test".into(), "-d".into(), format!("{tree}/.git")], 10))
                .await
                .map_err(|e| e.to_string())?;
            let fetched = have.success()
                && run(
                    client,
                    req(
                        vec![
                            "git".into(),
                            "-C".into(),
                            tree.clone(),
                            "fetch".into(),
                            "--quiet".into(),
                            "--tags".into(),
                            "origin".into(),
                        ],
                        1800,
                    ),
                    "git fetch",
                )
                .await
                .is_ok();
            if !fetched {
                run(client, req(vec!["rm".into(), "-rf".into(), tree.clone()], 60), "rm").await?;
                run(
                    client,
                    req(vec!["mkdir".into(), "-p".into(), TREES.into()], 10),
                    "mkdir",
                )
                .await?;
                run(
                    client,
                    req(
                        vec![
                            "git".into(),
                            "clone".into(),
                            "--quiet".into(),
                            "--".into(),
                            url.clone(),
                            tree.clone(),
                        ],
                        1800,
                    ),
                    "git clone",
                )
                .await?;
            }
            run(
                client,
                req(
                    vec![
                        "git".into(),
                        "-C".into(),
                        tree.clone(),
                        "checkout".into(),
                        "--quiet".into(),
                        "--force".into(),
                        git_ref.clone(),
                        "--".into(),
                    ],
                    60,
                ),
                "git checkout",
            )
            .await?;
            let commit = run(
                client,
                req(
                    vec![
                        "git".into(),
                        "-C".into(),
                        tree.clone(),
                        "rev-parse".into(),
                        "HEAD".into(),
                    ],
                    30,
                ),
                "git rev-parse",
            )
            .await?;
            let mut b = req(build.clone(), 3600);
            b.cwd = Some(tree.clone());
            run(client, b, &format!("building {}", tool.name)).await?;
            place(client, FileSource::Path(format!("{tree}/{binary}")), &target).await?;
            client.set_program(&tool.name, &target);
            Ok(format!("git {commit}"))
        }
        ToolSource::Upload { path } => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let hash = hex::encode(sha2::Sha256::digest(&bytes));
            let up = client
                .upload(&format!("tool-{}", tool.name), bytes)
                .await
                .map_err(|e| e.to_string())?;
            place(client, FileSource::Upload(up.name), &target).await?;
            client.set_program(&tool.name, &target);
            Ok(format!("sha256 {hash}"))
        }
    }
}

/// The agent copies the file into place with mode 0755 itself: the host needs no
/// `install` (busybox has none).
async fn place(client: &AgentClient, from: FileSource, target: &str) -> Result<(), String> {
    let step = Step::PlaceFile(PlaceRequest {
        from,
        to: target.to_string(),
        mode: 0o755,
    });
    match client.step(step, std::time::Duration::from_secs(120)).await {
        Ok(StepOutput::Placed(_)) => Ok(()),
        Ok(other) => Err(format!("placing {target}: unexpected answer {other:?}")),
        Err(e) => Err(format!("placing {target}: {e}")),
    }
}

/// The version of a program found on a host that no `tools:` entry declares: its Debian
/// package's version when dpkg knows the file, else the SHA-256 of the file.
pub async fn identify(client: &AgentClient, program: &str) -> String {
    let program = client.program_path(program);
    let program = program.as_str();
    let path = if program.contains('/') {
        program.to_string()
    } else {
        match run(client, req(vec!["which".into(), program.into()], 10), "which").await {
            Ok(p) if !p.is_empty() => p,
            _ => return "not found".into(),
        }
    };
    if let Ok(owner) = run(
        client,
        req(vec!["dpkg-query".into(), "-S".into(), path.clone()], 10),
        "dpkg-query",
    )
    .await
    {
        // `dpkg-query -S` also lists diversions ("diversion by PKG from: PATH"): skip them.
        let owning = owner.lines().find(|l| !l.starts_with("diversion by"));
        if let Some((pkg, _)) = owning.and_then(|l| l.split_once(':')) {
            let pkg = pkg.trim().to_string();
            if let Ok(v) = run(
                client,
                req(
                    vec!["dpkg-query".into(), "-W".into(), "-f=${Version}".into(), pkg.clone()],
                    10,
                ),
                "dpkg-query",
            )
            .await
            {
                return format!("{pkg} {v}");
            }
        }
    }
    match run(client, req(vec!["sha256sum".into(), path.clone()], 30), "sha256sum").await {
        Ok(out) => format!("sha256 {}", out.split_whitespace().next().unwrap_or("")),
        Err(_) => "unknown".into(),
    }
}

/// Versions gathered during one boot, keyed "tool@host".
pub type Versions = BTreeMap<String, String>;
