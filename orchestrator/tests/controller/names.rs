//! Names that reach a terminal from the database (a worker's, a scenario's) are printed with
//! their control characters written out, and `kreg worker` refuses a name that holds any.

use common::{fresh_db, kreg, Scratch};
use kreg_testkit as common;

#[tokio::test]
async fn hostile_worker_names_are_refused_and_never_printed_raw() {
    let db = fresh_db("names").await;
    let dir = Scratch::new("names");
    let hostile = "w\x1b[2J\x1b]0;owned\x07\u{202e}x";
    // A name already in the database (an older kreg, or written by hand).
    kreg::store::fleet::register_worker(&db.pool, hostile, 2.0)
        .await
        .unwrap();
    let out = kreg(&db, &dir.0).arg("status").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("w\\x1b[2J\\x1b]0;owned\\x07\\u{202e}x"), "{stdout}");
    assert!(!stdout.contains('\x1b') && !stdout.contains('\u{202e}'), "{stdout:?}");
    // A new worker with such a name is refused before it registers.
    let out = kreg(&db, &dir.0).args(["worker", "--name", hostile]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("without control characters"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM workers")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
}
