//! Compiling on a host of the scenario (`build_on: sut`): the configured tree goes to the
//! host's agent as a tarball, `make` runs there (its output streamed back line by line
//! while it runs), and the image, System.map and modules come back to the controller's
//! cache, from where they are installed like any kernel kreg built. Runs on a blocking
//! thread; each agent call is driven by the runtime's handle.

use crate::failure::CommandFailed;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{ExecRequest, ExecResult};

use super::build::{build_id_of, run, uts_version_of, BuildHost, Compiled, Tree};
use super::{msg, KernelError};

pub struct Remote {
    pub name: String,
    pub client: AgentClient,
    pub handle: tokio::runtime::Handle,
    pub cpus: u32,
}

impl Remote {
    fn exec(&self, argv: &[&str], timeout_secs: u64) -> Result<ExecResult, KernelError> {
        let req = ExecRequest {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            timeout_secs,
            ..Default::default()
        };
        self.handle
            .block_on(self.client.exec(req))
            .map_err(|e| msg(format!("on {}: {e}", self.name)))
    }

    /// Runs a program there; a failure carries the end of its output.
    fn must(&self, argv: &[&str], timeout_secs: u64) -> Result<String, KernelError> {
        let r = self.exec(argv, timeout_secs)?;
        if r.success() {
            return Ok(r.stdout);
        }
        let what = format!("`{}` on {}", argv.join(" "), self.name);
        Err(msg(CommandFailed::of_exec(what, &r, timeout_secs).to_string()))
    }
}

impl BuildHost for Remote {
    fn place(&self) -> String {
        self.name.clone()
    }

    fn compiler(&mut self) -> Result<String, KernelError> {
        match self.exec(&["gcc", "--version"], 30) {
            Ok(r) if r.success() => Ok(r.stdout.lines().next().unwrap_or("").to_string()),
            _ => Err(msg(format!(
                "there is no gcc on {}: install the kernel's build tools there (gcc, make, flex, bison, bc, libelf-dev, libssl-dev) or build on the controller",
                self.name
            ))),
        }
    }

    fn jobs(&self) -> u32 {
        self.cpus.max(1)
    }

    fn compile(&mut self, tree: Tree<'_>, log: &mut dyn FnMut(&str)) -> Result<Compiled, KernelError> {
        let Tree { work, out, has_modules } = tree;
        let key = out
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| msg("bad build folder"))?
            .to_string();
        // The configured tree, packed on the controller.
        let src = out.join("src.tar.gz");
        run(
            Command::new("tar")
                .arg("-C")
                .arg(work)
                .args(["--use-compress-program=gzip -1", "-cf"])
                .arg(&src)
                .arg("."),
            "tar of the configured tree",
        )?;
        let bytes = std::fs::read(&src).map_err(|e| msg(format!("{}: {e}", src.display())))?;
        let _ = std::fs::remove_file(&src);
        log(&format!("sending the tree to {} ({} MB)", self.name, bytes.len() >> 20));
        let up = self
            .handle
            .block_on(self.client.upload(&format!("kreg-src-{key}.tar.gz"), bytes))
            .map_err(|e| msg(format!("upload to {}: {e}", self.name)))?;
        let data_dir = Path::new(&up.path)
            .parent()
            .ok_or_else(|| msg("upload has no folder"))?
            .to_path_buf();
        let dir = data_dir.join(format!("kreg-build-{key}"));
        let d = dir.display().to_string();
        self.must(&["rm", "-rf", &d], 600)?;
        self.must(&["mkdir", "-p", &d], 30)?;
        self.must(&["tar", "-xf", &up.path, "-C", &d], 1800)?;
        self.must(&["rm", "-f", &up.path], 30)?;

        let result = self.make_and_fetch(&dir, &data_dir, &key, out, has_modules, log);
        let _ = self.exec(&["rm", "-rf", &d], 600);
        result
    }
}

impl Remote {
    fn make_and_fetch(
        &self,
        dir: &Path,
        data_dir: &Path,
        key: &str,
        out: &Path,
        has_modules: bool,
        log: &mut dyn FnMut(&str),
    ) -> Result<Compiled, KernelError> {
        let d = dir.display().to_string();
        let mut argv = vec!["make".to_string(), "-C".into(), d.clone(), format!("-j{}", self.jobs())];
        argv.push("bzImage".into());
        if has_modules {
            argv.push("modules".into());
        }
        self.stream(argv, &out.join("build.log"), log)?;
        let release = self
            .must(&["make", "-C", &d, "-s", "kernelrelease"], 300)?
            .trim()
            .to_string();
        let mut pack: Vec<String> = vec!["arch/x86/boot/bzImage".into()];
        if self.exec(&["test", "-e", &format!("{d}/System.map")], 30)?.success() {
            pack.push("System.map".into());
        }
        if has_modules {
            self.must(
                &[
                    "make",
                    "-C",
                    &d,
                    &format!("INSTALL_MOD_PATH={d}/modroot"),
                    "modules_install",
                ],
                3600,
            )?;
            pack.push("modroot".into());
        }
        let build_id = self
            .exec(&["readelf", "-n", &format!("{d}/vmlinux")], 60)
            .ok()
            .and_then(|r| build_id_of(&r.stdout));
        let uts_version = ["include/generated/utsversion.h", "include/generated/compile.h"]
            .iter()
            .find_map(|f| {
                let r = self.exec(&["cat", &format!("{d}/{f}")], 30).ok()?;
                uts_version_of(&r.stdout)
            });
        // Back to the controller: one tarball out of the data folder.
        let name = format!("kreg-out-{key}.tar.gz");
        let packed = data_dir.join(&name).display().to_string();
        let mut argv: Vec<&str> = vec!["tar", "-C", &d, "--use-compress-program=gzip -1", "-cf", &packed];
        argv.extend(pack.iter().map(String::as_str));
        self.must(&argv, 1800)?;
        let local_tar = out.join(&name);
        let fetched = self.handle.block_on(self.client.download(&name, &local_tar));
        let _ = self.exec(&["rm", "-f", &packed], 30);
        let n = fetched.map_err(|e| msg(format!("fetching the build from {}: {e}", self.name)))?;
        log(&format!("fetched the build from {} ({} MB)", self.name, n >> 20));
        run(
            Command::new("tar").arg("-xf").arg(&local_tar).arg("-C").arg(out),
            "tar -x of the build",
        )?;
        let _ = std::fs::remove_file(&local_tar);
        let image = out.join("arch/x86/boot/bzImage");
        std::fs::rename(&image, out.join("bzImage")).map_err(|e| msg(format!("no bzImage: {e}")))?;
        let _ = std::fs::remove_dir_all(out.join("arch"));
        Ok(Compiled {
            release,
            build_id,
            uts_version,
        })
    }

    /// Runs `argv` there as a spawned process, passing its output on line by line as it
    /// comes (and into `log_path`) until it ends.
    fn stream(&self, argv: Vec<String>, log_path: &Path, log: &mut dyn FnMut(&str)) -> Result<(), KernelError> {
        use std::io::Write;
        let mut file = std::fs::File::create(log_path).map_err(|e| msg(e.to_string()))?;
        let shown = argv.join(" ");
        let req = ExecRequest {
            argv,
            ..Default::default()
        };
        let first = self
            .handle
            .block_on(self.client.spawn(req))
            .map_err(|e| msg(format!("on {}: {e}", self.name)))?;
        let id = first.id;
        let mut since = [0u64, 0u64];
        let mut partial = [String::new(), String::new()];
        let mut tail: Vec<String> = Vec::new();
        loop {
            let st = self
                .handle
                .block_on(self.client.poll_since(id, since))
                .map_err(|e| msg(format!("on {}: {e}", self.name)))?;
            since = [st.stdout_end, st.stderr_end];
            for (i, chunk) in [st.stdout.as_str(), st.stderr.as_str()].into_iter().enumerate() {
                partial[i].push_str(chunk);
                while let Some(nl) = partial[i].find('\n') {
                    let line: String = partial[i].drain(..=nl).collect();
                    let line = line.trim_end_matches('\n');
                    let _ = writeln!(file, "{line}");
                    log(line);
                    tail.push(line.to_string());
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
            }
            if !st.running {
                for rest in partial.iter().filter(|p| !p.is_empty()) {
                    let _ = writeln!(file, "{rest}");
                    log(rest);
                }
                let _ = self.handle.block_on(self.client.stop(id, 1));
                if st.exit_code == Some(0) {
                    return Ok(());
                }
                return Err(msg(format!(
                    "`{shown}` on {} failed ({}); log {}:\n{}",
                    self.name,
                    st.exit_code
                        .map(|c| format!("exit {c}"))
                        .unwrap_or_else(|| format!("signal {}", st.signal.unwrap_or(0))),
                    log_path.display(),
                    tail.join("\n")
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}
