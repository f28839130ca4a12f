//! The kernel's own perf (`perf: tree`, or a perf of its own source) on the SUT for the
//! boot: in a lab guest it is the initramfs's /usr/bin/perf already; on a machine it is
//! uploaded beside kreg's other files (once: a later boot finds it by its hash), checked to run there, and every
//! `perf` the jobs start (collectors, perf-bench) runs it. A kernel without one runs the
//! machine's own perf again.

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::FileSource;

use super::{Driver, Failure};
use crate::engine::host::Conn;
use crate::engine::{command, tools};
use crate::kernel::perf::TreePerf;
use crate::scenario::Kernel;

/// Where machines keep the perfs of kernel trees, one folder per binary's hash.
const DIR: &str = "/var/lib/kreg/perf";

impl Driver<'_> {
    /// The version to record for `perf@SUT`, when the kernel brings its own perf.
    pub(super) async fn sut_perf(
        &self,
        kernel: &Kernel,
        perf: Option<&TreePerf>,
        client: &AgentClient,
    ) -> Result<Option<String>, Failure> {
        let Some(perf) = perf else {
            if !self.scenario.tools.iter().any(|t| t.name == "perf") {
                client.set_program("perf", "perf");
            }
            return Ok(None);
        };
        let version = match &kernel.perf {
            Some(source) => format!("built from {source}, sha256 {}", perf.sha256),
            None => format!("built from the tree of kernel {}, sha256 {}", kernel.name, perf.sha256),
        };
        if matches!(self.conns[&self.sut], Conn::Lab(_)) {
            return Ok(Some(version));
        }
        let failure = |detail: String| Failure::Tool {
            tool: "perf".into(),
            host: self.sut.clone(),
            detail,
        };
        let target = format!("{DIR}/{}/perf", &perf.sha256[..16]);
        // Uploaded once per machine: a later boot finds it by its hash.
        let there = client.exec(command(["sha256sum", target.as_str()], 60)).await;
        let present = there.is_ok_and(|r| r.success() && r.stdout.starts_with(&perf.sha256));
        if !present {
            let bytes = std::fs::read(&perf.path).map_err(|e| failure(format!("{}: {e}", perf.path.display())))?;
            let up = client
                .upload(&format!("perf-{}", &perf.sha256[..16]), bytes)
                .await
                .map_err(|e| failure(format!("uploading the tree's perf: {e}")))?;
            tools::place(client, FileSource::Upload(up.name), &target)
                .await
                .map_err(|e| failure(e.to_string()))?;
        }
        let ran = client
            .exec(command([target.as_str(), "version"], 30))
            .await
            .map_err(|e| failure(e.to_string()))?;
        if !ran.success() {
            return Err(failure(format!(
                "the tree's perf does not run there (it is built on the controller, against the controller's libraries): {}{}",
                crate::failure::tail(&ran.stderr, 5),
                library_hint(&ran.stderr, &self.sut).unwrap_or_default()
            )));
        }
        client.set_program("perf", &target);
        Ok(Some(format!("{version} ({})", ran.stdout.trim())))
    }
}

/// The library the dynamic loader could not find ("error while loading shared libraries:
/// libdw.so.1: cannot open …"), and the controller's package that holds it, said as the
/// tool that would put it on `host`; `None` when the message names none or the controller
/// has no dpkg.
fn library_hint(stderr: &str, host: &str) -> Option<String> {
    let lib = stderr
        .split("error while loading shared libraries: ")
        .nth(1)?
        .split(':')
        .next()?
        .trim()
        .to_string();
    let out = std::process::Command::new("dpkg")
        .args(["-S", &format!("*/{lib}")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let package = text.lines().next()?.split(':').next()?.trim().to_string();
    (!package.is_empty()).then(|| {
        format!(
            "; the controller takes {lib} from Debian's {package}: install it on {host} (a tool `{{ name: {package}, on: [{host}], from: {{ apt: {package} }} }}`)"
        )
    })
}

#[cfg(test)]
mod tests {
    /// The package is the controller's own answer: dpkg -S of the library that libc's
    /// loader of this machine resolves, read here from ldconfig.
    #[test]
    fn a_missing_library_is_named_with_the_package_that_holds_it() {
        let said = "perf: error while loading shared libraries: libstdc++.so.6: cannot open shared object file: No such file or directory";
        let hint = super::library_hint(said, "sut").expect("dpkg knows libstdc++.so.6");
        let listed = std::process::Command::new("ldconfig").arg("-p").output().unwrap();
        let listed = String::from_utf8_lossy(&listed.stdout).to_string();
        let path = listed
            .lines()
            .find(|l| l.trim_start().starts_with("libstdc++.so.6 "))
            .and_then(|l| l.rsplit(" => ").next())
            .unwrap()
            .to_string();
        let real = std::fs::canonicalize(&path).unwrap();
        let owner = std::process::Command::new("dpkg")
            .arg("-S")
            .arg(&real)
            .output()
            .unwrap();
        let owner = String::from_utf8_lossy(&owner.stdout)
            .split(':')
            .next()
            .unwrap()
            .to_string();
        assert!(
            hint.contains(&format!("from Debian's {owner}: install it on sut")),
            "{hint} (dpkg says {owner})"
        );
        assert_eq!(super::library_hint("perf: Segmentation fault", "sut"), None);
    }
}
