//! The agent under hostile or careless clients: idle and half-sent connections, too many
//! sockets for its file limit, huge bodies, uploads racing or planted with links, exec
//! steps that out-live their request, archives with links. Each test talks to a real agent
//! on a loopback port.

use std::time::{Duration, Instant};

use kreg_agent::server::Limits;
use kreg_agent::wire::{ExecRequest, Step, StepOutput};
use kreg_protocol::client::AgentClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{fake_bzimage, start, start_with, tar_of, TOKEN};

/// Whether the peer closed `s` within `limit` (a read gives EOF or an error).
async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // An error answer (408) may come first; the close follows.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_connections_do_not_lock_others_out() {
    kreg_agent::server::listen::raise_nofile_limit();
    let limits = Limits {
        header_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let agent = start_with("idle", limits).await;
    let mut socks = Vec::new();
    for i in 0..500 {
        let mut s = TcpStream::connect(agent.addr).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"POST /v1/step HTTP/1.1\r\nHost: x\r\nAuthor")
                .await
                .unwrap();
        }
        socks.push(s);
    }
    // Another client is served while the 500 are open.
    let client = AgentClient::new(&agent.url, TOKEN);
    let t0 = Instant::now();
    let id = tokio::time::timeout(Duration::from_secs(10), client.identity())
        .await
        .expect("served while 500 idle connections are open")
        .unwrap();
    assert!(!id.boot_id.is_empty());
    eprintln!("identity answered in {:?} with 500 idle connections open", t0.elapsed());
    // Every idle or half-sent one is closed within the header timeout (2 s; 3 s of slack
    // for a loaded machine), counted from when it was opened.
    let opened = Instant::now();
    let mut still_open = 0;
    for s in &mut socks {
        let left = Duration::from_secs(5).saturating_sub(opened.elapsed());
        if !closed_within(s, left.max(Duration::from_millis(10))).await {
            still_open += 1;
        }
    }
    assert_eq!(still_open, 0, "connections still open after the header timeout");
}

/// Starts the agent binary with an open-file limit of `nofile` and a token file of two
/// lines; returns the child and its URL.
async fn agent_binary(dir: &std::path::Path, nofile: u64) -> (tokio::process::Child, String) {
    std::fs::create_dir_all(dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\nsecond line, ignored\n")).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_kreg-agent"));
    cmd.args(["--listen", "127.0.0.1:0", "--header-timeout", "3", "--token-file"])
        .arg(&token_file)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: setrlimit between fork and exec, on a struct on the stack.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: nofile,
                rlim_max: nofile,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).await.unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8(line).unwrap();
    let addr = line.rsplit(' ').next().unwrap().to_string();
    (child, format!("http://{addr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_sockets_than_file_descriptors_leave_the_agent_reachable() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-test-nofile-{}", std::process::id()));
    let (_child, url) = agent_binary(&dir, 256).await;
    let addr = url.trim_start_matches("http://").to_string();
    let mut socks = Vec::new();
    for _ in 0..300 {
        match TcpStream::connect(&addr).await {
            Ok(mut s) => {
                let _ = s.write_all(b"P").await;
                socks.push(s);
            }
            Err(_) => break,
        }
    }
    assert!(socks.len() >= 250, "only {} connections made", socks.len());
    // The token file's first line is the token; the scheme's case does not matter.
    let client = AgentClient::new(&url, TOKEN);
    let id = tokio::time::timeout(Duration::from_secs(10), client.identity())
        .await
        .expect("answered with 300 sockets open on a limit of 256")
        .unwrap();
    assert!(!id.kernel_release.is_empty());
    let resp = reqwest::Client::new()
        .post(format!("{url}/v1/step"))
        .header("authorization", format!("bearer {TOKEN}"))
        .json(&Step::Identity)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "lowercase scheme refused");
    let resp = reqwest::Client::new()
        .post(format!("{url}/v1/step"))
        .header("authorization", format!("BEARER {TOKEN}x"))
        .json(&Step::Identity)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    drop(socks);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends raw request bytes and returns the status code and the body of the answer.
async fn raw_request(addr: std::net::SocketAddr, head: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = s.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if String::from_utf8_lossy(&buf).contains("\"protocol\"") && buf.ends_with(b"}") {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[tokio::test]
async fn oversized_bodies_are_refused_up_front_with_the_json_envelope() {
    let agent = start("bodies").await;
    let t0 = Instant::now();
    let (status, body) = raw_request(
        agent.addr,
        &format!(
            "POST /v1/step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("\"too_large\"") && body.contains("\"protocol\":3"),
        "{body}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "not refused up front");
    let (status, body) = raw_request(
        agent.addr,
        &format!("PUT /v1/files/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 5000000000\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("\"too_large\""), "{body}");

    // A chunked body (no declared length) is cut off once it passes the limit.
    let mut s = TcpStream::connect(agent.addr).await.unwrap();
    s.write_all(
        format!(
            "POST /v1/step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let chunk = vec![b' '; 1 << 20];
    let mut answer = Vec::new();
    for _ in 0..20 {
        if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await.is_err()
            || s.write_all(&chunk).await.is_err()
            || s.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"too_large\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_race_and_links_do_not_mix_files() {
    let agent = start("upload-race").await;
    let client = AgentClient::new(&agent.url, TOKEN);
    let data = agent.dir.join("data");
    // Two uploads whose names differ only after the last dot, at once.
    let a = vec![b'a'; 8 << 20];
    let b = vec![b'b'; 8 << 20];
    let (ra, rb) = tokio::join!(
        client.upload("vmlinuz-6.1.0-kreg-a", a.clone()),
        client.upload("vmlinuz-6.1.0-kreg-b", b.clone())
    );
    ra.unwrap();
    rb.unwrap();
    assert!(std::fs::read(data.join("vmlinuz-6.1.0-kreg-a")).unwrap() == a);
    assert!(std::fs::read(data.join("vmlinuz-6.1.0-kreg-b")).unwrap() == b);

    // A link planted at the final name is replaced, never written through.
    let outside = agent.dir.join("outside");
    std::fs::write(&outside, "precious").unwrap();
    std::os::unix::fs::symlink(&outside, data.join("planted")).unwrap();
    client.upload("planted", b"new".to_vec()).await.unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(data.join("planted")).unwrap().is_file());
    // A link is never served.
    std::os::unix::fs::symlink(&outside, data.join("served")).unwrap();
    let dest = agent.dir.join("fetched");
    let err = client.download("served", &dest).await.unwrap_err();
    assert!(err.to_string().contains("is a link"), "{err}");
    // `.partial` is an ordinary name.
    client.upload("x.partial", b"p".to_vec()).await.unwrap();
    client.upload("x", b"q".to_vec()).await.unwrap();
    assert_eq!(std::fs::read(data.join("x.partial")).unwrap(), b"p");
    assert_eq!(std::fs::read(data.join("x")).unwrap(), b"q");

    // An upload cut off half-way leaves nothing behind.
    let mut s = TcpStream::connect(agent.addr).await.unwrap();
    s.write_all(
        format!("PUT /v1/files/cut HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 10000000\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    s.write_all(&vec![b'c'; 1 << 20]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(s);
    let deadline = Instant::now() + Duration::from_secs(5);
    let leftovers = loop {
        let left: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.') || n == "cut")
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// Pids whose command line is exactly `argv`.
fn running(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c == want)
                .unwrap_or(false)
        })
        .collect()
}

async fn gone_within(argv: &[&str], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if running(argv).is_empty() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_checks_cpus_caps_output_and_leaves_no_process_behind() {
    let agent = start("exec-hostile").await;
    let client = AgentClient::new(&agent.url, TOKEN);
    // A CPU the machine cannot have is a 400 before anything forks.
    let err = client
        .exec(ExecRequest {
            argv: vec!["true".into()],
            timeout_secs: 5,
            cpus: Some(vec![1024]),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("BadRequest") && err.to_string().contains("CPU 1024"),
        "{err}"
    );

    // 64 MiB of output comes back capped, its size told.
    let r = client
        .exec(ExecRequest {
            argv: vec![
                "head".into(),
                "-c".into(),
                (64u64 << 20).to_string(),
                "/dev/zero".into(),
            ],
            timeout_secs: 60,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.success());
    let cap = kreg_agent::wire::EXEC_OUTPUT_CAP;
    assert!(r.stdout.len() < cap + 200, "{} bytes returned", r.stdout.len());
    assert_eq!(r.stdout_dropped, (64u64 << 20) - cap as u64);

    // A daemon started with setsid (its own session and group) ends with the step.
    let tag = format!("{}.{}", 300, std::process::id());
    let daemon = ["sleep", tag.as_str()];
    let r = client
        .exec(ExecRequest {
            argv: vec!["setsid".into(), "-f".into(), "sleep".into(), tag.clone()],
            timeout_secs: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.success(), "{r:?}");
    assert!(
        gone_within(&daemon, Duration::from_secs(2)).await,
        "daemon outlived its step"
    );

    // The same at a timeout, with the step's own process still running.
    let script = format!("setsid -f sleep {tag}; sleep 60");
    let r = client
        .exec(ExecRequest {
            argv: vec!["sh".into(), "-c".into(), script],
            timeout_secs: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.timed_out);
    assert!(
        gone_within(&daemon, Duration::from_secs(2)).await,
        "daemon outlived the timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_ends_when_its_request_goes_away() {
    let agent = start("exec-dropped").await;
    let tag = format!("{}.{}", 301, std::process::id());
    let argv = ["sleep", tag.as_str()];
    let step = Step::Exec(ExecRequest {
        argv: vec!["setsid".into(), "-w".into(), "sleep".into(), tag.clone()],
        timeout_secs: 600,
        ..Default::default()
    });
    let http = reqwest::Client::new();
    let sent = http
        .post(format!("{}/v1/step", agent.url))
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(2))
        .json(&step)
        .send()
        .await;
    assert!(sent.is_err(), "the step should still be running: {sent:?}");
    assert!(
        gone_within(&argv, Duration::from_secs(5)).await,
        "the step's processes outlived its request"
    );
}

#[tokio::test]
async fn module_archives_with_links_and_option_like_releases_are_refused_leaving_nothing() {
    let agent = start("install-hostile").await;
    let client = AgentClient::new(&agent.url, TOKEN);
    let rel = "6.1.77-kreg-hostile";
    let src = agent.dir.join("src");
    let outside = agent.dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&src).unwrap();
    std::os::unix::fs::symlink(&outside, src.join(rel)).unwrap();
    let install = |modules: &str, release: &str| {
        Step::InstallKernel(kreg_agent::wire::InstallRequest {
            release: release.into(),
            image: "img".into(),
            system_map: None,
            config: Some("cfg".into()),
            modules: Some(modules.into()),
        })
    };
    client.upload("img", fake_bzimage(rel)).await.unwrap();
    client.upload("cfg", b"CONFIG_HZ=250\n".to_vec()).await.unwrap();
    client.upload("link.tar", tar_of(&src, rel)).await.unwrap();
    let err = client
        .step(install("link.tar", rel), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("where the folder"), "{err}");
    let root = agent.dir.join("root");
    assert!(std::fs::symlink_metadata(root.join("lib/modules").join(rel)).is_err());
    assert!(
        !root.join("boot/kreg").join(rel).exists(),
        "a failed install left its folder"
    );
    assert!(!root.join(format!("boot/config-{rel}")).exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);

    // A modules.* link, where depmod writes, is refused too.
    std::fs::remove_file(src.join(rel)).unwrap();
    std::fs::create_dir_all(src.join(rel)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join(rel).join("modules.dep")).unwrap();
    client.upload("dep.tar", tar_of(&src, rel)).await.unwrap();
    let err = client
        .step(install("dep.tar", rel), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("depmod writes there"), "{err}");

    for bad in ["-v", "--help", "-b/tmp"] {
        let err = client
            .step(install("dep.tar", bad), Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("bad kernel release"), "{bad}: {err}");
    }
    match client
        .step(Step::InstalledKernels, Duration::from_secs(10))
        .await
        .unwrap()
    {
        StepOutput::Kernels { kernels, .. } => assert!(kernels.is_empty(), "{kernels:?}"),
        other => panic!("{other:?}"),
    }
}

/// The agent started on a token file that is no file of secrets: a device, a FIFO nobody
/// writes, one line of a megabyte. Each ends it at once (no read of a gigabyte, no hang)
/// with the reason.
#[tokio::test]
async fn token_files_that_are_no_secret_files_are_refused_at_once() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let long = dir.join("long");
    std::fs::write(&long, "x".repeat(1 << 20)).unwrap();
    for (file, why) in [
        (std::path::PathBuf::from("/dev/zero"), "not a regular file"),
        (fifo.clone(), "not a regular file"),
        (dir.clone(), "not a regular file"),
        (long.clone(), "its first line is longer than 4096 bytes"),
    ] {
        let started = Instant::now();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_kreg-agent"));
        cmd.args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(&file)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(20), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{}: the agent hung", file.display()))
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", file.display());
        assert!(
            err.contains(why) && err.contains("token file"),
            "{}: {err}",
            file.display()
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{}", file.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The agent's peak resident memory (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Eight clients at once, each with a 15 MiB step (an exec's stdin): the agent holds no
/// more step memory than its budget (four bodies of the largest size, 64 MiB), each body
/// counted with the step parsed from it; the steps all run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_steps_at_once_stay_within_the_memory_budget() {
    let dir = std::env::temp_dir().join(format!("kreg-agent-budget-{}", std::process::id()));
    let (child, url) = agent_binary(&dir, 1024).await;
    let pid = child.id().unwrap();
    let client = AgentClient::new(&url, TOKEN);
    client.identity().await.unwrap();
    let before = peak_kib(pid);
    let body = "x".repeat(15 << 20);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, body) = (client.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            client
                .exec(ExecRequest {
                    argv: vec!["sh".into(), "-c".into(), "wc -c".into()],
                    stdin: Some(body),
                    timeout_secs: 120,
                    ..Default::default()
                })
                .await
        }));
    }
    for t in tasks {
        let r = t.await.unwrap().expect("every step runs, in turn");
        assert_eq!(r.stdout.trim(), (15u64 << 20).to_string());
    }
    let grew_mib = (peak_kib(pid) - before) / 1024;
    println!("agent peak memory: +{grew_mib} MiB for 8 concurrent 15 MiB steps (budget 64 MiB)");
    assert!(grew_mib <= 64 + 16, "the agent's peak grew by {grew_mib} MiB");
    let _ = std::fs::remove_dir_all(&dir);
}
