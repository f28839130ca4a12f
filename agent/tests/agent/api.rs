//! The agent's HTTP API, served for real on a loopback port.

use std::time::Duration;

use kreg_agent::wire::{Envelope, ErrorKind, ExecRequest, Policy, Reply, Step, StepOutput};

use crate::common::{fake_bzimage, start, tar_of, Agent, TOKEN};

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn post_step(agent: &Agent, token: Option<&str>, step: &Step) -> (u16, Envelope<StepOutput>) {
    let mut req = http().post(format!("{}/v1/step", agent.url)).json(step);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn requests_without_the_right_token_get_401_and_run_nothing() {
    let agent = start("auth").await;
    std::fs::create_dir_all(&agent.dir).unwrap();
    let marker = agent.dir.join("ran");
    let step = Step::Exec(ExecRequest {
        argv: vec!["touch".into(), marker.display().to_string()],
        timeout_secs: 10,
        ..Default::default()
    });
    for token in [
        None,
        Some("wrong-token-0123456789abcdef"),
        Some(""),
        Some("test-token-0123456789abcdeX"),
    ] {
        let (status, env) = post_step(&agent, token, &step).await;
        assert_eq!(status, 401, "token {token:?}");
        assert!(
            matches!(env.body, Reply::Error(ref e) if e.kind == ErrorKind::Unauthorized),
            "{env:?}"
        );
        assert_eq!(env.protocol, kreg_agent::PROTOCOL_VERSION);
    }
    // Uploads are guarded the same way.
    let resp = http()
        .put(format!("{}/v1/files/x", agent.url))
        .body("data")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert!(!agent.dir.join("data/x").exists());
    assert!(!marker.exists(), "a refused request ran its step");

    // The right token runs it: the refusals above were about the token, not the step.
    let (status, _) = post_step(&agent, Some(TOKEN), &step).await;
    assert_eq!(status, 200);
    assert!(marker.exists());
}

#[tokio::test]
async fn version_probe_needs_no_token() {
    let agent = start("version").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, "not-the-token-at-all");
    let v = client.version().await.unwrap();
    assert_eq!(v.protocol, kreg_agent::PROTOCOL_VERSION);
    let err = client.identity().await.unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
}

#[tokio::test]
async fn exec_applies_the_policy_and_reports_it() {
    let agent = start("exec").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    for (policy, want) in [
        (Policy::Batch, "batch"),
        (Policy::Idle, "idle"),
        (Policy::Other, "other"),
    ] {
        let r = client
            .exec(ExecRequest {
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "grep '^policy' /proc/self/sched; sleep 0.5".into(),
                ],
                timeout_secs: 10,
                policy: Some(policy),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(r.success(), "{r:?}");
        assert_eq!(r.observed_policies, vec![want.to_string()]);
        // The kernel's own view from inside the child agrees.
        let raw: i32 = r.stdout.split(':').nth(1).unwrap().trim().parse().unwrap();
        assert_eq!(raw, policy.as_raw(), "{}", r.stdout);
    }
}

#[tokio::test]
async fn exec_timeout_kills_the_process_group() {
    let agent = start("timeout").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let r = client
        .exec(ExecRequest {
            argv: vec!["sleep".into(), "30".into()],
            timeout_secs: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.timed_out);
    assert_eq!(r.signal, Some(9));
    assert!(!r.success());
    let err = client
        .exec(ExecRequest {
            argv: vec!["/nonexistent/tool".into()],
            timeout_secs: 1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot start"), "{err}");
}

#[tokio::test]
async fn knobs_are_confined_and_read_back() {
    let agent = start("knob").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let read = |path: &str| Step::ReadKnob { path: path.into() };
    match client
        .step(read("/proc/sys/kernel/ostype"), Duration::from_secs(5))
        .await
        .unwrap()
    {
        StepOutput::Knob(k) => assert_eq!(k.value, "Linux"),
        other => panic!("{other:?}"),
    }
    for bad in [
        "/etc/shadow",
        "/proc/sys/../../etc/passwd",
        "relative/path",
        "/sys/../etc/passwd",
    ] {
        let err = client.step(read(bad), Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().contains("Forbidden"), "{bad}: {err}");
    }
    let err = client
        .step(
            Step::WriteKnob {
                path: "/etc/hostname".into(),
                value: "x".into(),
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Forbidden"), "{err}");
}

#[tokio::test]
async fn identity_and_schedstat() {
    let agent = start("identity").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let id = client.identity().await.unwrap();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(id.kernel_release, release.trim());
    assert_eq!(id.boot_id.len(), 36);
    assert!(id.nr_cpus >= 1);
    // Some kernels (and sandboxes) have no /proc/schedstat: then the step must say so.
    let here = std::fs::read_to_string("/proc/schedstat").ok();
    match (client.step(Step::Schedstat, Duration::from_secs(5)).await, here) {
        (Ok(StepOutput::Schedstat(s)), Some(_)) => {
            assert!(s.raw.starts_with("version "), "{}", &s.raw[..40.min(s.raw.len())]);
            assert!(s.monotonic_ns > 0);
            assert_eq!(
                id.schedstat_version,
                s.raw[8..].split_whitespace().next().unwrap().parse().ok()
            );
        }
        (Err(e), None) => {
            assert!(e.to_string().contains("reading /proc/schedstat"), "{e}");
            assert_eq!(id.schedstat_version, None);
        }
        (got, here) => panic!("step answered {got:?} while the file reads {here:?}"),
    }
}

#[tokio::test]
async fn uploads_land_under_plain_names_only() {
    let agent = start("upload").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let up = client
        .upload("vmlinuz-6.12.1+deb12-amd64", b"abc".to_vec())
        .await
        .unwrap();
    assert_eq!(up.bytes, 3);
    assert_eq!(
        std::fs::read(agent.dir.join("data/vmlinuz-6.12.1+deb12-amd64")).unwrap(),
        b"abc"
    );
    let err = client.upload("..", b"x".to_vec()).await.unwrap_err();
    assert!(
        err.to_string().contains("bad file name") || err.to_string().contains("404"),
        "{err}"
    );
    let err = client.upload(".hidden", b"x".to_vec()).await.unwrap_err();
    assert!(err.to_string().contains("bad file name"), "{err}");
    // kexec of a file that was never uploaded is refused before any syscall.
    let step = Step::Kexec(kreg_agent::wire::KexecRequest {
        kernel: "missing".into(),
        initrd: None,
        cmdline: String::new(),
    });
    let err = client.step(step, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("was not uploaded"), "{err}");
}

#[tokio::test]
async fn spawned_servers_run_under_the_policy_until_stopped() {
    let agent = start("spawn").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    // A multi-threaded stand-in server: python3 with two extra threads that sleep.
    let script = "import threading,time,sys\nfor _ in range(2): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\nprint('ready', flush=True)\nsys.stdin.read()\ntime.sleep(60)\n";
    let p = client
        .spawn(ExecRequest {
            argv: vec!["python3".into(), "-c".into(), script.into()],
            timeout_secs: 0,
            policy: Some(Policy::Batch),
            stdin: Some("hello\n".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(p.running);
    // Wait for its own word that the threads exist.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let st = client.poll(p.id).await.unwrap();
        if st.stdout.contains("ready") {
            break;
        }
        assert!(st.running, "{st:?}");
        assert!(std::time::Instant::now() < deadline, "no ready line");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let threads = client.threads(p.pid).await.unwrap();
    assert_eq!(threads.len(), 3, "{threads:?}");
    assert!(threads.iter().all(|t| t.policy == "batch"), "{threads:?}");
    let stopped = client.stop(p.id, 5).await.unwrap();
    assert!(!stopped.running);
    assert_eq!(stopped.signal, Some(libc::SIGTERM));
    assert!(client
        .poll(p.id)
        .await
        .unwrap_err()
        .to_string()
        .contains("no spawned process"));
    assert!(client.threads(p.pid).await.is_err(), "the process is gone");
}

#[tokio::test]
async fn exec_feeds_stdin() {
    let agent = start("stdin").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let r = client
        .exec(ExecRequest {
            argv: vec!["wc".into(), "-l".into()],
            timeout_secs: 5,
            stdin: Some("a\nb\nc\n".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "3");
}

#[tokio::test]
async fn install_kernel_puts_files_in_boot_and_modules_and_runs_depmod() {
    let agent = start("install").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let rel = "6.1.99-kreg-test1234";
    let src = agent.dir.join("src");
    let inst = install_one(&client, &src, rel).await;
    let req = |modules: &str| install_req(rel, modules);
    let boot = agent.dir.join("root/boot");
    // kreg's kernels stay out of the distribution's menu: /boot/kreg/RELEASE/vmlinuz.
    assert_eq!(
        inst.kernel,
        boot.join("kreg").join(rel).join("vmlinuz").display().to_string()
    );
    assert!(!boot.join(format!("vmlinuz-{rel}")).exists());
    assert_eq!(std::fs::read(&inst.kernel).unwrap(), fake_bzimage(rel));
    assert!(std::fs::read_to_string(boot.join(format!("config-{rel}")))
        .unwrap()
        .contains("CONFIG_HZ=250"));
    assert!(boot.join(format!("System.map-{rel}")).is_file());
    let mods = agent.dir.join("root/lib/modules").join(rel);
    assert!(mods.join("kernel/m.ko").is_file());
    // depmod ran on the installed tree (it writes modules.dep).
    assert!(mods.join("modules.dep").is_file(), "{}", inst.log);
    // Outside /lib/modules no initramfs tool is run, and the answer says so.
    assert_eq!(inst.initrd, None);
    assert!(inst.log.contains("no initramfs"), "{}", inst.log);

    // The uploads were copied into place and are gone from the agent's folder.
    for name in ["img", "map", "cfg", "mods.tar"] {
        assert!(!agent.dir.join("data").join(name).exists(), "{name} left behind");
    }

    // An archive with a member outside RELEASE/ is refused before anything is extracted.
    client.upload("img", fake_bzimage(rel)).await.unwrap();
    client.upload("map", b"x\n".to_vec()).await.unwrap();
    client.upload("cfg", b"x\n".to_vec()).await.unwrap();
    std::fs::create_dir_all(src.join("evil")).unwrap();
    std::fs::write(src.join("evil/x"), "x").unwrap();
    client.upload("evil.tar", tar_of(&src, "evil")).await.unwrap();
    let err = client.step(req("evil.tar"), Duration::from_secs(60)).await.unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
    assert!(!agent.dir.join("root/lib/modules/evil").exists());

    // An image announcing another release is refused.
    client.upload("img", fake_bzimage("6.1.98")).await.unwrap();
    let err = client.step(req("mods.tar"), Duration::from_secs(60)).await.unwrap_err();
    assert!(err.to_string().contains("announces release 6.1.98"), "{err}");

    // The running kernel is never installed over.
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let step = Step::InstallKernel(kreg_agent::wire::InstallRequest {
        release: running.trim().into(),
        image: "img".into(),
        system_map: None,
        config: None,
        modules: None,
    });
    let err = client.step(step, Duration::from_secs(60)).await.unwrap_err();
    assert!(err.to_string().contains("running kernel"), "{err}");

    // A release that is not a plain name never becomes a path.
    let step = Step::KexecInstalled {
        release: "../../etc".into(),
        cmdline: String::new(),
    };
    let err = client.step(step, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("bad kernel release"), "{err}");
    // kexec of a release that is not installed names the missing file.
    let step = Step::KexecInstalled {
        release: "6.0.0-nothere".into(),
        cmdline: String::new(),
    };
    let err = client.step(step, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("is not installed"), "{err}");
    // A command line GRUB would interpret is refused before anything is written.
    let step = Step::GrubReboot {
        release: rel.into(),
        cmdline: "ro; reboot".into(),
    };
    let err = client.step(step, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("command line holds ';'"), "{err}");
}

fn install_req(rel: &str, modules: &str) -> Step {
    Step::InstallKernel(kreg_agent::wire::InstallRequest {
        release: rel.into(),
        image: "img".into(),
        system_map: Some("map".into()),
        config: Some("cfg".into()),
        modules: Some(modules.into()),
    })
}

/// Installs a kernel with a config, a System.map and a modules tree, through the agent.
async fn install_one(
    client: &kreg_protocol::client::AgentClient,
    src: &std::path::Path,
    rel: &str,
) -> kreg_agent::wire::Installed {
    client.upload("img", fake_bzimage(rel)).await.unwrap();
    client
        .upload("map", b"ffffffff81000000 T _text\n".to_vec())
        .await
        .unwrap();
    client.upload("cfg", b"CONFIG_HZ=250\n".to_vec()).await.unwrap();
    std::fs::create_dir_all(src.join(rel).join("kernel")).unwrap();
    std::fs::write(src.join(rel).join("kernel/m.ko"), vec![7u8; 5000]).unwrap();
    std::fs::write(src.join(rel).join("modules.order"), "").unwrap();
    std::fs::write(src.join(rel).join("modules.builtin"), "").unwrap();
    client.upload("mods.tar", tar_of(src, rel)).await.unwrap();
    let out = client
        .step(install_req(rel, "mods.tar"), Duration::from_secs(60))
        .await
        .unwrap();
    match out {
        StepOutput::Installed(inst) => inst,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn installed_kernels_are_listed_oldest_first_and_removed_with_what_they_own() {
    let agent = start("prune").await;
    let client = kreg_protocol::client::AgentClient::new(&agent.url, TOKEN);
    let src = agent.dir.join("src");
    let (old, new) = ("6.1.90-kreg-aaaa1111", "6.1.91-kreg-bbbb2222");
    install_one(&client, &src, old).await;
    // Install times are in seconds: the second kernel is installed a second later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    install_one(&client, &src, new).await;
    let boot = agent.dir.join("root/boot");
    let mods = agent.dir.join("root/lib/modules");

    let list = |out: StepOutput| match out {
        StepOutput::Kernels { running, kernels } => (running, kernels),
        other => panic!("{other:?}"),
    };
    let (running, kernels) = list(
        client
            .step(Step::InstalledKernels, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    assert_eq!(
        running,
        std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap().trim()
    );
    let names: Vec<&str> = kernels.iter().map(|k| k.release.as_str()).collect();
    assert_eq!(names, [old, new], "{kernels:?}");
    assert!(kernels[0].installed_unix < kernels[1].installed_unix, "{kernels:?}");
    // Image (4 KiB) and the 5000-byte module, at least.
    assert!(
        kernels
            .iter()
            .all(|k| k.bytes >= 4096 + 5000 && !k.shares_with_distribution),
        "{kernels:?}"
    );

    // Removing the older one takes its folder, config, System.map and modules, nothing else.
    let out = client
        .step(Step::RemoveKernel { release: old.into() }, Duration::from_secs(10))
        .await
        .unwrap();
    let StepOutput::KernelRemoved { removed, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(removed.len(), 4, "{removed:?}");
    assert!(!boot.join("kreg").join(old).exists());
    assert!(!boot.join(format!("config-{old}")).exists());
    assert!(!boot.join(format!("System.map-{old}")).exists());
    assert!(!mods.join(old).exists());
    assert!(boot.join("kreg").join(new).join("vmlinuz").is_file());
    assert!(mods.join(new).join("kernel/m.ko").is_file());
    let (_, kernels) = list(
        client
            .step(Step::InstalledKernels, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    assert_eq!(kernels.len(), 1);

    // A distribution kernel of the same release owns the shared files: they stay.
    std::fs::write(boot.join(format!("vmlinuz-{new}")), b"distro").unwrap();
    let (_, kernels) = list(
        client
            .step(Step::InstalledKernels, Duration::from_secs(10))
            .await
            .unwrap(),
    );
    assert!(kernels[0].shares_with_distribution);
    client
        .step(Step::RemoveKernel { release: new.into() }, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(!boot.join("kreg").join(new).exists());
    assert!(boot.join(format!("config-{new}")).is_file());
    assert!(mods.join(new).is_dir());
    assert!(boot.join(format!("vmlinuz-{new}")).is_file());

    // Not kreg's, the running kernel, or not a plain name: refused with the reason.
    let refuse = |release: &str| Step::RemoveKernel {
        release: release.into(),
    };
    let err = client.step(refuse(new), Duration::from_secs(10)).await.unwrap_err();
    assert!(err.to_string().contains("kreg did not install"), "{err}");
    let err = client
        .step(refuse(&running), Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("running kernel"), "{err}");
    let err = client
        .step(refuse("../../etc"), Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad kernel release"), "{err}");
}
