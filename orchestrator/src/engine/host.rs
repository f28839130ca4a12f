//! Connections to a run's hosts, and bringing the SUT up on a kernel: the lab boots or
//! kexecs its VM; on an http host the kernel is installed into /boot and /lib/modules and
//! booted by kexec or a one-shot GRUB entry, and a kernel that does not come back right
//! is followed by a return to the machine's known-good kernel (see [`MachineConn`]).

use std::path::PathBuf;
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{Identity, KexecRequest};

use super::error::HostError;
use super::machine::MachineConn;
use crate::boot::{check_booted, wait_for_reboot, BootError, BootMethod, Target, Watch};
use crate::config::Config;
use crate::kernel::{self, Prepared};
use crate::lab::{self, initramfs, Vm, VmSpec};
use crate::scenario::{ConfigBase, Host, Kernel, KernelSource, Transport};

/// How the engine reaches one host.
// One per host of a run: their size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Conn {
    Machine(MachineConn),
    Lab(LabConn),
}

pub struct LabConn {
    cpus: u32,
    memory_mib: u32,
    parallel: bool,
    token: String,
    dir: PathBuf,
    vm: Option<Vm>,
    client: Option<AgentClient>,
    /// What the VM runs now: image and command line. Another kernel entry with the same
    /// release but another build or command line still gets booted.
    current: Option<(PathBuf, String)>,
    /// The kernel that booted last, to start again when a kexec away from it crashes:
    /// (kernel as prepared, its initrd file, its command line).
    last_good: Option<(Prepared, PathBuf, String)>,
    /// Whether the guest needs perf (a perf collector or workload).
    perf: bool,
}

impl Conn {
    /// `perf`: whether a lab guest needs perf in its initramfs.
    /// `reached`: the host's agent when the preflight reached it already.
    /// `lease`: a fleet slot's, whose epoch every request to the agent carries.
    pub async fn open(
        host: &Host,
        run_dir: &std::path::Path,
        cfg: &Config,
        perf: bool,
        lease: Option<&crate::store::fleet::Lease>,
        reached: Option<super::reach::Agent>,
    ) -> Result<Conn, HostError> {
        match &host.transport {
            Transport::Http(_) | Transport::Ssh(_) => {
                let a = match reached {
                    Some(a) => a,
                    None => super::reach::agent(host, cfg, lease).await?.expect("an agent host"),
                };
                Ok(Conn::Machine(MachineConn::new(&host.name, a)))
            }
            Transport::Lab {
                cpus,
                memory_mib,
                parallel,
            } => Ok(Conn::Lab(LabConn {
                cpus: *cpus,
                memory_mib: *memory_mib,
                parallel: *parallel,
                token: crate::token::random()?,
                dir: run_dir.join(format!("lab-{}", host.name)),
                vm: None,
                client: None,
                current: None,
                last_good: None,
                perf,
            })),
        }
    }

    /// The agent client, when the host is up.
    pub fn client(&self) -> Option<&AgentClient> {
        match self {
            Conn::Machine(h) => h.client(),
            Conn::Lab(l) => l.client.as_ref(),
        }
    }

    /// Whether a host whose connection was lost mid-job may be asked again: an agent
    /// over HTTP answers again once the network is back or its service restarted it, and
    /// over SSH kreg opens the tunnel again. A lab VM that stopped answering is not waited
    /// for (its console says why).
    pub fn reconnects(&self) -> bool {
        matches!(self, Conn::Machine(_))
    }

    /// How the engine reaches the host, as the stored rows say.
    pub fn reached(&self) -> String {
        match self {
            Conn::Machine(h) => h.reached().to_string(),
            Conn::Lab(_) => "lab".to_string(),
        }
    }

    /// Console output, for failure reports, where the host has one.
    pub fn console_tail(&self) -> Option<String> {
        match self {
            Conn::Lab(LabConn { vm: Some(vm), .. }) => Some(vm.console_tail(25)),
            _ => None,
        }
    }

    /// The running kernel's config on this host: /proc/config.gz, else /boot/config-RELEASE.
    async fn running_config(&self) -> Option<String> {
        let client = self.client()?;
        let req = |argv: Vec<String>| kreg_protocol::wire::ExecRequest {
            argv,
            timeout_secs: 30,
            ..Default::default()
        };
        if let Ok(r) = client.exec(req(vec!["zcat".into(), "/proc/config.gz".into()])).await {
            if r.success() && r.stdout.contains("CONFIG_") {
                return Some(r.stdout);
            }
        }
        let rel = client.identity().await.ok()?.kernel_release;
        let r = client
            .exec(req(vec!["cat".into(), format!("/boot/config-{rel}")]))
            .await
            .ok()?;
        (r.success() && r.stdout.contains("CONFIG_")).then_some(r.stdout)
    }

    /// Fetches, unpacks or builds `kernel` (a `running` config base is read from this
    /// host). A kernel built from source compiles on `builder` (a host's name and agent)
    /// when given, else on the controller. Build output goes to `log`.
    pub async fn prepare(
        &self,
        kernel: &Kernel,
        cfg: &Config,
        builder: Option<(String, AgentClient)>,
        log: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<(Option<Prepared>, Option<kernel::perf::TreePerf>), HostError> {
        let source = kernel.source.clone();
        let perf_source = kernel.perf.clone();
        let cache = cfg.cache_dir.clone();
        let running_config = match &kernel.source {
            KernelSource::Build(b) if b.config.base == ConfigBase::Running => self.running_config().await,
            _ => None,
        };
        let remote = match builder {
            Some((name, client)) => {
                let id = client
                    .identity()
                    .await
                    .map_err(|e| format!("kernel {}: build host {name}: {e}", kernel.name))?;
                Some(kernel::remote::Remote {
                    name,
                    client,
                    handle: tokio::runtime::Handle::current(),
                    cpus: id.nr_cpus,
                })
            }
            None => None,
        };
        tokio::task::spawn_blocking(move || {
            let mut log = |line: &str| {
                let _ = log.send(line.to_string());
            };
            let prepared = match remote {
                Some(mut r) => kernel::prepare_with(&source, &cache, running_config, &mut r, &mut log),
                None => kernel::prepare(&source, &cache, running_config, &mut log),
            }?;
            // A perf of its own source, built on the controller whatever the kernel.
            let perf = match &perf_source {
                Some(src) => {
                    let jobs = std::thread::available_parallelism()
                        .map(|n| n.get() as u32)
                        .unwrap_or(2);
                    Some(kernel::perf::build_source(src, &cache, jobs, &mut log)?)
                }
                None => None,
            };
            Ok::<_, kernel::KernelError>((prepared, perf))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("kernel {}: {e}", kernel.name).into())
    }

    /// Brings the host up on the prepared `kernel` and checks that it runs it. Returns the
    /// identity seen after the boot and how the host got there.
    pub async fn boot(&mut self, target: Target<'_>, cfg: &Config) -> Result<(Identity, BootMethod), HostError> {
        let Target { kernel, prepared, .. } = target;
        let (id, method) = match self {
            Conn::Machine(http) => return http.boot(target).await,
            Conn::Lab(lab) => lab.boot(target, cfg).await?,
        };
        if let Some(p) = prepared {
            check_booted(p, &id).map_err(|e| format!("kernel {}: {e}", kernel.name))?;
        }
        Ok((id, method))
    }
}

impl LabConn {
    async fn boot(&mut self, target: Target<'_>, cfg: &Config) -> Result<(Identity, BootMethod), HostError> {
        let (kernel, timeout) = (target.kernel, target.timeout);
        let cmdline = match &kernel.cmdline {
            Some(extra) => format!("{} {extra}", lab::CMDLINE),
            None => lab::CMDLINE.to_string(),
        };
        let Some(p) = target.prepared else {
            if let (Some(c), Some(vm)) = (&self.client, self.vm.as_mut()) {
                if vm.exited().is_none() {
                    return c
                        .identity()
                        .await
                        .map(|id| (id, BootMethod::None))
                        .map_err(HostError::from);
                }
            }
            return Err(format!(
                "kernel {}: a lab host has no running kernel to stay on; give the lab a `deb` or `path` kernel first",
                kernel.name
            )
            .into());
        };
        let (initrd, initrd_bytes) = self.initramfs(p, cfg).await?;
        let alive = self.vm.as_mut().is_some_and(|vm| vm.exited().is_none());
        let running = match &self.client {
            Some(c) if alive => c.identity().await.ok(),
            _ => None,
        };
        let wanted = (p.vmlinuz.clone(), cmdline.clone());
        let result = match running {
            Some(id) if id.kernel_release == p.release && self.current.as_ref() == Some(&wanted) && !target.fresh => {
                Ok((id, BootMethod::None))
            }
            Some(id) => {
                self.kexec_or_retry(p, &initrd_bytes, &id, timeout, &cmdline, cfg, target.retry_crash)
                    .await
            }
            // A started VM is kexec'd into the kernel, so that every kernel is measured on a
            // boot reached the same way: by kexec. It starts on the last kernel that came up
            // when that is another (after a failed boot), else on this one.
            None => {
                let start = match &self.last_good {
                    Some(good) if good.0.vmlinuz != p.vmlinuz => good.clone(),
                    _ => (p.clone(), initrd.clone(), cmdline.clone()),
                };
                match self.cold_boot(&start.0, &start.1, cfg, timeout, &start.2).await {
                    Ok(started) => {
                        self.last_good = Some(start);
                        self.kexec_or_retry(p, &initrd_bytes, &started, timeout, &cmdline, cfg, target.retry_crash)
                            .await
                    }
                    Err(e) => Err(e),
                }
            }
        };
        if result.is_err() {
            // The VM is in an unknown state: the next kernel starts a fresh one.
            self.vm = None;
            self.client = None;
            self.current = None;
        } else {
            self.current = Some(wanted);
            self.last_good = Some((p.clone(), initrd.clone(), cmdline.clone()));
        }
        result
    }

    /// Kexec from the running boot `id` into `p`. A guest that crashed on the way (under
    /// TCG, a 6.12 kernel kexec'd from 6.1 has been seen to oops in early boot once in a
    /// while) gets one more try when `retry` says so: the last good kernel is started again
    /// and the kexec repeated.
    #[allow(clippy::too_many_arguments)]
    async fn kexec_or_retry(
        &mut self,
        p: &Prepared,
        initrd_bytes: &[u8],
        id: &Identity,
        timeout: Duration,
        cmdline: &str,
        cfg: &Config,
        retry: bool,
    ) -> Result<(Identity, BootMethod), HostError> {
        let first = match self.kexec(p, initrd_bytes, id, timeout, cmdline).await {
            Ok(id) => return Ok((id, BootMethod::Kexec)),
            Err(e) => e,
        };
        let crashed = retry && self.vm.as_mut().is_some_and(|vm| vm.exited().is_some());
        let Some((good, good_initrd, good_cmdline)) = self.last_good.clone().filter(|_| crashed) else {
            return Err(first);
        };
        eprintln!(
            "kreg: kexec into {} crashed; starting {} again and retrying once",
            p.release, good.release
        );
        let retry = async {
            let old = self.cold_boot(&good, &good_initrd, cfg, timeout, &good_cmdline).await?;
            self.kexec(p, initrd_bytes, &old, timeout, cmdline).await
        }
        .await;
        retry
            .map(|id| (id, BootMethod::Kexec))
            .map_err(|second| format!("{first}\nretried once: {second}").into())
    }

    /// The initramfs for `p` (the agent, this host's token, the kernel's modules), written
    /// beside the VM; its path and bytes.
    async fn initramfs(&self, p: &Prepared, cfg: &Config) -> Result<(PathBuf, Vec<u8>), HostError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let agent_bin = cfg.agent_bin.clone();
        if !agent_bin.exists() {
            return Err(format!(
                "{} does not exist: build it with `cargo build -p kreg-agent`, or set KREG_AGENT_BIN",
                agent_bin.display()
            )
            .into());
        }
        let token = self.token.clone();
        let modules = p.modules_dir.clone();
        // The kernel's own perf when it has one, else the host's when the run needs perf.
        let tree_perf = p.perf.as_ref().map(|t| t.path.clone());
        let host_perf = self.perf;
        let started = std::time::Instant::now();
        let initrd_bytes = tokio::task::spawn_blocking(move || {
            let perf = match &tree_perf {
                Some(path) => initramfs::Perf::Built(path),
                None if host_perf => initramfs::Perf::Host,
                None => initramfs::Perf::None,
            };
            initramfs::build(&agent_bin, &token, modules.as_deref(), perf)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("initramfs for {}: {e}", p.release))?;
        eprintln!(
            "kreg: lab initramfs for {} ({:.1} MiB) built in {:.1} s",
            p.release,
            initrd_bytes.len() as f64 / (1024.0 * 1024.0),
            started.elapsed().as_secs_f64()
        );
        let initrd = self.dir.join(format!("initrd-{}.cpio", p.release));
        std::fs::write(&initrd, &initrd_bytes).map_err(|e| format!("{}: {e}", initrd.display()))?;
        Ok((initrd, initrd_bytes))
    }

    async fn cold_boot(
        &mut self,
        p: &Prepared,
        initrd: &std::path::Path,
        cfg: &Config,
        timeout: Duration,
        cmdline: &str,
    ) -> Result<Identity, HostError> {
        self.vm = None;
        let spec = VmSpec {
            vmlinuz: p.vmlinuz.clone(),
            initrd: initrd.to_path_buf(),
            cpus: self.cpus,
            memory_mib: self.memory_mib,
            parallel: self.parallel,
            accel: cfg.lab_accel.clone(),
            dir: self.dir.clone(),
            cmdline: cmdline.to_string(),
        };
        let (vm, client, id) = lab::boot(&spec, &self.token, timeout)
            .await
            .map_err(|e| format!("kernel {} did not come up in the lab: {e}", p.release))?;
        self.vm = Some(vm);
        self.client = Some(client);
        Ok(id)
    }

    async fn kexec(
        &mut self,
        p: &Prepared,
        initrd: &[u8],
        old: &Identity,
        timeout: Duration,
        cmdline: &str,
    ) -> Result<Identity, HostError> {
        let client = self.client.clone().expect("checked by caller");
        let image = std::fs::read(&p.vmlinuz).map_err(|e| format!("{}: {e}", p.vmlinuz.display()))?;
        let kname = format!("vmlinuz-{}", p.release);
        let iname = format!("initrd-{}", p.release);
        client.upload(&kname, image).await.map_err(|e| e.to_string())?;
        client
            .upload(&iname, initrd.to_vec())
            .await
            .map_err(|e| e.to_string())?;
        let mut again = false;
        loop {
            let req = KexecRequest {
                kernel: kname.clone(),
                initrd: Some(iname.clone()),
                cmdline: cmdline.to_string(),
            };
            let sent = std::time::Instant::now();
            match client.kexec(req).await {
                Ok(()) => {}
                // The answer lost with the agent (killed mid-kexec) or the guest already
                // rebooting: the boot id decides.
                Err(e) if e.is_unreachable() => {}
                Err(e) => return Err(e.into()),
            }
            let watch = self.vm.as_mut().map(|v| v as &mut dyn Watch);
            match wait_for_reboot(&client, &old.boot_id, sent, timeout, watch).await {
                Ok(id) => return Ok(id),
                Err(e @ BootError::AgentRestarted { .. }) if !again => {
                    again = true;
                    eprintln!("kreg: kexec into {}: {e}; kexec again", p.release);
                }
                Err(e) => return Err(format!("kexec from {} into {}: {e}", old.kernel_release, p.release).into()),
            }
        }
    }
}
