//! Host keys and identities checked before anything is sent.

use super::*;

#[tokio::test]
async fn host_keys_and_identities_are_checked_before_anything_is_sent() {
    let m = SshMachine::new("keys", 1);
    let scratch = Scratch::new("ssh-keys");
    let token = "ssh-test-token-0123456789abcdef";

    // Known: logs in, and says how the key was trusted.
    let s = ssh::Session::connect(&spec(&m)).await.expect("a known host key");
    assert_eq!(s.host_key, m.fingerprint);
    assert!(matches!(s.trust, ssh::hostkey::Trust::Known { line: 1, .. }));
    let out = s
        .run(&["uname", "-r"], None, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(out.success() && !out.stdout.is_empty());
    s.close().await;

    // Unknown: refused with the fingerprint and the line to add; nothing is uploaded.
    let empty = scratch.0.join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let mut unknown = spec(&m);
    unknown.known_hosts = Some(empty.clone());
    let e = ssh::reach(&unknown, &agent_bin(), token)
        .await
        .err()
        .expect("unknown host refused")
        .to_string();
    assert!(e.contains("is not known") && e.contains(&m.fingerprint), "{e}");
    let host_pub = std::fs::read_to_string(m.dir.0.join("ssh_host_ed25519_key.pub")).unwrap();
    let key_b64 = host_pub.split_whitespace().nth(1).unwrap();
    let line = format!("{} ssh-ed25519 {key_b64}", m.addr);
    assert!(e.contains(&line), "the line to add: {e}");
    assert!(nothing_installed(&m), "nothing may reach an unknown host");
    // The line it printed, added, makes the host known.
    std::fs::write(&empty, format!("{line}\n")).unwrap();
    ssh::Session::connect(&unknown)
        .await
        .expect("the printed line works")
        .close()
        .await;

    // Changed: another ed25519 key listed for the address, hashed as ssh-keygen -H writes it.
    let other = keygen(&scratch.0, "other_host_key", "ed25519", "");
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let changed = scratch.0.join("changed_known_hosts");
    let w: Vec<&str> = other_pub.split_whitespace().collect();
    std::fs::write(&changed, format!("# old\n{} {} {}\n", m.addr, w[0], w[1])).unwrap();
    let hashed = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&changed)
        .output()
        .unwrap();
    assert!(hashed.status.success());
    assert!(std::fs::read_to_string(&changed).unwrap().contains("|1|"));
    let mut ch = spec(&m);
    ch.known_hosts = Some(changed);
    match ssh::Session::connect(&ch).await {
        Err(SshError::HostKey { cause, .. }) => match *cause {
            HostKeyError::Changed { line_no, .. } => assert_eq!(line_no, 2),
            other => panic!("a changed key must be refused as changed: {other}"),
        },
        Err(e) => panic!("a changed key must be refused as changed: {e}"),
        Ok(_) => panic!("a changed key must be refused"),
    }
    let e = ssh::reach(&ch, &agent_bin(), token).await.err().unwrap().to_string();
    assert!(e.contains("HAS CHANGED"), "{e}");
    assert!(nothing_installed(&m));

    // Pinned: the pin alone decides, whatever known_hosts says.
    let mut pinned = ch.clone();
    pinned.host_key = Some(m.fingerprint.clone());
    ssh::Session::connect(&pinned)
        .await
        .expect("a pinned key that matches")
        .close()
        .await;
    pinned.host_key = Some(format!("SHA256:{}", "A".repeat(43)));
    match ssh::Session::connect(&pinned).await {
        Err(SshError::HostKey { cause, .. }) if matches!(*cause, HostKeyError::PinMismatch { .. }) => {}
        other => panic!("a pin that does not match must be refused: {:?}", other.err()),
    }

    // A wrong identity: a clear authentication error.
    let stranger = keygen(&scratch.0, "stranger", "ed25519", "");
    let mut wrong = spec(&m);
    wrong.identity = Some(stranger.clone());
    let e = ssh::Session::connect(&wrong).await.err().expect("a key not authorized");
    assert!(matches!(e, SshError::Auth { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("authentication failed") && msg.contains(&stranger.display().to_string()),
        "{msg}"
    );

    // An encrypted identity: without its passphrase, said so; with it, logs in; the
    // passphrase never appears in what kreg says.
    let secret = "pass-phrase-sEcReT-4711";
    let locked = keygen(&scratch.0, "locked", "ed25519", secret);
    let mut auth = std::fs::read_to_string(m.dir.0.join("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(locked.with_extension("pub")).unwrap());
    std::fs::write(m.dir.0.join("authorized_keys"), auth).unwrap();
    let mut enc = spec(&m);
    enc.identity = Some(locked);
    let e = ssh::Session::connect(&enc)
        .await
        .err()
        .expect("no passphrase")
        .to_string();
    assert!(e.contains("encrypted") && e.contains("passphrase_file"), "{e}");
    let bad = scratch.0.join("bad.pass");
    std::fs::write(&bad, "not-it\n").unwrap();
    enc.passphrase_file = Some(bad);
    let e = ssh::Session::connect(&enc)
        .await
        .err()
        .expect("a wrong passphrase")
        .to_string();
    assert!(e.contains("passphrase_file") && !e.contains("not-it"), "{e}");
    let good = scratch.0.join("good.pass");
    std::fs::write(&good, format!("{secret}\n")).unwrap();
    enc.passphrase_file = Some(good);
    let s = ssh::Session::connect(&enc).await.expect("the right passphrase");
    s.close().await;
    assert!(nothing_installed(&m));
    assert!(!Path::new(&m.path("/etc/kreg/ssh/agent.token")).exists());
}
