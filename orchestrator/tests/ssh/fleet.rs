//! A fleet machine reached over SSH: the worker's lease epoch goes through the tunnel to
//! the agent kreg starts there, which keeps it and checks it; a `kreg run` without a lease
//! is refused by that agent afterwards, saying why.

use super::*;

#[tokio::test]
async fn a_worker_fences_an_ssh_machine_and_a_run_without_a_lease_is_refused_there() {
    let db = common::fresh_db("sshfleet").await;
    let m = SshMachine::new("fleet", 6);
    let data = Scratch::new("ssh-fleet-data");
    std::fs::write(data.0.join("s.yaml"), scenario(&m, "fleet-ssh", 2, "0")).unwrap();
    std::fs::write(
        data.0.join("pool.yaml"),
        format!(
            "machines:\n  box-1: {{ role: sut, labels: {{ via: ssh }}, transport: {} }}\n",
            m.transport("")
        ),
    )
    .unwrap();
    let kreg = |args: &[&str]| common::kreg(&db, &data.0).args(args).output().unwrap();
    common::assert_ok(
        &kreg(&["machines", "add", data.0.join("pool.yaml").to_str().unwrap()]),
        "machines add",
    );
    common::assert_ok(&kreg(&["submit", data.0.join("s.yaml").to_str().unwrap()]), "submit");
    let out = kreg(&["worker", "--until-empty", "--lease", "20", "--poll", "0.3"]);
    common::assert_ok(&out, "worker");
    assert_eq!(count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await, 4);
    let epoch = count(&db, "SELECT max(epoch) FROM run_slots").await;
    // The agent on the machine keeps the lease's epoch.
    let kept = std::fs::read_to_string(m.path("/var/lib/kreg-agent-ssh/epoch")).unwrap();
    assert_eq!(kept.trim(), epoch.to_string());
    // A run without a lease: the agent answers (not restarted in vain) and refuses it.
    let out = kreg(&["run", data.0.join("s.yaml").to_str().unwrap()]);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "this machine is fenced at epoch {epoch}: a request without an epoch is refused"
        )),
        "{said}"
    );
    assert!(!said.contains("did not answer"), "{said}");
}
