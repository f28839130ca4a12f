//! kreg's private PostgreSQL cluster: created under the data dir, reused, stopped.

use kreg_testkit as common;

#[test]
fn private_cluster_is_created_once_and_reused() {
    let dir = common::Scratch::new("cluster");
    let data = dir.0.join("data");
    let url = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
            .args(["db", "url"])
            .env("KREG_DATA_DIR", &data)
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (first, said) = url();
    assert!(said.contains("creating a private PostgreSQL cluster"), "{said}");
    assert!(first.starts_with("postgres://kreg@localhost/kreg?host="), "{first}");
    assert!(data.join("postgres/PG_VERSION").exists());
    // Only a Unix socket: no TCP listener configured.
    let conf = std::fs::read_to_string(data.join("postgres/postgresql.conf")).unwrap();
    assert!(conf.contains("listen_addresses = ''"));
    let (second, said) = url();
    assert_eq!(first, second);
    assert!(!said.contains("creating"), "the cluster was created twice: {said}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["db", "stop"])
        .env("KREG_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Stopped, then started again on demand with its data intact.
    let (third, _) = url();
    assert_eq!(first, third);
    let _ = std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["db", "stop"])
        .env("KREG_DATA_DIR", &data)
        .output();
}
