//! kreg's private PostgreSQL cluster, used when no `DATABASE_URL` is given: created once under
//! the data dir with the system's `initdb`, started with `pg_ctl`, listening on a Unix socket
//! only, and reused afterwards. PostgreSQL refuses to run as root, so as root the cluster
//! belongs to the `postgres` user, and lives where that user may reach it without a folder
//! of root's being opened (see [`cluster_dir`]).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sqlx::postgres::PgConnectOptions;
use sqlx::ConnectOptions;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("PostgreSQL's initdb and pg_ctl were not found (looked in /usr/lib/postgresql/*/bin and PATH): install the `postgresql` package, or set DATABASE_URL")]
    NoBinaries,
    #[error("running as root, but there is no `postgres` user to own the cluster: install the `postgresql` package, or set DATABASE_URL")]
    NoPostgresUser,
    #[error("{what} failed ({status}); see {log}")]
    Tool { what: String, status: String, log: String },
    #[error("{0}")]
    Io(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

fn io(what: &str, path: &Path, e: std::io::Error) -> ClusterError {
    ClusterError::Io(format!("{what} {}: {e}", path.display()))
}

/// The directory holding `initdb` and `pg_ctl`: the newest /usr/lib/postgresql/N/bin, else PATH.
fn bin_dir() -> Result<Option<PathBuf>, ClusterError> {
    let mut best: Option<(u32, PathBuf)> = None;
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        for e in entries.flatten() {
            let Some(v) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let bin = e.path().join("bin");
            if bin.join("initdb").exists() && best.as_ref().is_none_or(|(b, _)| v > *b) {
                best = Some((v, bin));
            }
        }
    }
    if let Some((_, bin)) = best {
        return Ok(Some(bin));
    }
    let in_path = crate::config::path_dirs()
        .iter()
        .any(|d| d.join("initdb").exists() && d.join("pg_ctl").exists());
    if in_path {
        Ok(None)
    } else {
        Err(ClusterError::NoBinaries)
    }
}

struct Owner {
    uid: u32,
    gid: u32,
}

fn postgres_owner() -> Result<Option<Owner>, ClusterError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam returns NULL or a pointer to static storage, read at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(ClusterError::NoPostgresUser);
    }
    // SAFETY: checked non-null above.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some(Owner { uid, gid }))
}

fn tool(bin: &Option<PathBuf>, name: &str, owner: &Option<Owner>) -> Command {
    let program = match bin {
        Some(b) => b.join(name),
        None => PathBuf::from(name),
    };
    let mut c = Command::new(program);
    c.current_dir("/");
    if let Some(o) = owner {
        use std::os::unix::process::CommandExt;
        c.uid(o.uid).gid(o.gid);
    }
    c
}

fn run(mut cmd: Command, what: &str, log: &Path) -> Result<(), ClusterError> {
    let out = cmd
        .output()
        .map_err(|e| ClusterError::Io(format!("cannot start {what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::write(log, &text);
    Err(ClusterError::Tool {
        what: what.into(),
        status: out.status.to_string(),
        log: log.display().to_string(),
    })
}

/// An exclusive lock on a file, held until dropped, so that two kreg processes starting at
/// once do not both run initdb.
/// The file is kept open only to hold the lock.
struct Lock(#[allow(dead_code)] std::fs::File);

impl Lock {
    fn take(path: &Path) -> Result<Lock, ClusterError> {
        use std::os::fd::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| io("cannot open lock file", path, e))?;
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io("cannot lock", path, std::io::Error::last_os_error()));
        }
        Ok(Lock(f))
    }
}

/// Where root's clusters live when the data dir is not reachable by the `postgres` user.
const ROOT_CLUSTERS: &str = "/var/lib/kreg/postgres";

/// Whether every folder above `dir` lets others through (x), so that the `postgres` user
/// reaches it.
fn reachable(dir: &Path) -> bool {
    dir.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .all(|a| std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// The cluster's folder for `data_dir` (canonical): `data_dir/postgres` when its owner may
/// reach it (not root, or every folder above it lets others through, or a cluster already
/// there); as root otherwise under `/var/lib/kreg/postgres/<hash of data_dir>`, owned by
/// `postgres`: the folders of root's home are never opened to others.
pub fn cluster_dir(data_dir: &Path) -> Result<PathBuf, ClusterError> {
    let own = data_dir.join("postgres");
    // A data dir whose `postgres` folder holds (or is held by) root's clusters is never one.
    let roots = Path::new(ROOT_CLUSTERS);
    let among_roots = own.starts_with(roots) || roots.starts_with(&own);
    if !among_roots && (postgres_owner()?.is_none() || own.join("PG_VERSION").exists() || reachable(&own)) {
        return Ok(own);
    }
    use sha2::Digest;
    let key = hex::encode(&sha2::Sha256::digest(data_dir.as_os_str().as_encoded_bytes())[..8]);
    Ok(Path::new(ROOT_CLUSTERS).join(key))
}

/// The folders above a root cluster, made as root and left readable (0755): only the
/// cluster's own folder is the postgres user's, private (0700).
fn make_parents(dir: &Path) -> Result<(), ClusterError> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(|e| io("cannot create", parent, e))?;
    if !reachable(dir) {
        return Err(ClusterError::Io(format!(
            "the postgres user cannot reach {}: a folder above it does not let others through (x)",
            dir.display()
        )));
    }
    Ok(())
}

/// Creates (first time) and starts (when stopped) the cluster under `data_dir/postgres`,
/// creates the `kreg` database, and returns how to connect to it.
pub async fn ensure(data_dir: &Path) -> Result<PgConnectOptions, ClusterError> {
    let data_dir = data_dir.to_path_buf();
    let dir = tokio::task::spawn_blocking(move || ensure_running(&data_dir))
        .await
        .map_err(|e| ClusterError::Io(e.to_string()))??;
    let admin = PgConnectOptions::new()
        .socket(&dir)
        .username("kreg")
        .database("postgres");
    let mut conn = admin.connect().await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = 'kreg'")
        .fetch_optional(&mut conn)
        .await?;
    if exists.is_none() {
        sqlx::query("CREATE DATABASE kreg").execute(&mut conn).await?;
    }
    Ok(PgConnectOptions::new().socket(&dir).username("kreg").database("kreg"))
}

fn ensure_running(data_dir: &Path) -> Result<PathBuf, ClusterError> {
    std::fs::create_dir_all(data_dir).map_err(|e| io("cannot create", data_dir, e))?;
    let data_dir = data_dir.canonicalize().map_err(|e| io("cannot resolve", data_dir, e))?;
    let _lock = Lock::take(&data_dir.join("postgres.lock"))?;
    let dir = cluster_dir(&data_dir)?;
    let bin = bin_dir()?;
    let owner = postgres_owner()?;
    if owner.is_some() {
        make_parents(&dir)?;
    }
    if !dir.join("PG_VERSION").exists() {
        eprintln!("kreg: creating a private PostgreSQL cluster in {}", dir.display());
        if !dir.starts_with(&data_dir) {
            eprintln!(
                "kreg: (as root, the postgres user runs it; {} is not open to others, so the cluster of {} lives there)",
                data_dir.display(),
                data_dir.display()
            );
        }
        // Nothing kreg did not make is removed: a folder there that holds anything is left
        // as it is, and said.
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(ClusterError::Io(format!(
                "{} is not empty and holds no PostgreSQL cluster (no PG_VERSION): kreg removes nothing it did not make; move it away, or give another KREG_DATA_DIR",
                dir.display()
            )));
        }
        std::fs::create_dir_all(&dir).map_err(|e| io("cannot create", &dir, e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io("cannot chmod", &dir, e))?;
        if let Some(o) = &owner {
            std::os::unix::fs::chown(&dir, Some(o.uid), Some(o.gid)).map_err(|e| io("cannot chown", &dir, e))?;
        }
        let mut cmd = tool(&bin, "initdb", &owner);
        cmd.arg("-D")
            .arg(&dir)
            .args(["-U", "kreg", "--auth=trust", "--encoding=UTF8", "--no-instructions"]);
        run(cmd, "initdb", &data_dir.join("initdb.log"))?;
        let conf = format!(
            "\n# kreg: a private cluster, reachable through a Unix socket only\nlisten_addresses = ''\nunix_socket_directories = '{}'\n",
            dir.display().to_string().replace('\'', "''")
        );
        let conf_path = dir.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path).map_err(|e| io("cannot read", &conf_path, e))?;
        text.push_str(&conf);
        std::fs::write(&conf_path, text).map_err(|e| io("cannot write", &conf_path, e))?;
    }
    let mut status = tool(&bin, "pg_ctl", &owner);
    status.arg("-D").arg(&dir).arg("status");
    let running = status.output().map(|o| o.status.success()).unwrap_or(false);
    if !running {
        let mut start = tool(&bin, "pg_ctl", &owner);
        start
            .arg("-D")
            .arg(&dir)
            .arg("-l")
            .arg(dir.join("server.log"))
            .args(["-w", "-t", "60", "start"]);
        run(start, "pg_ctl start", &data_dir.join("pg_ctl.log"))?;
    }
    Ok(dir)
}

/// Stops the cluster (used by tests that create their own).
pub fn stop(data_dir: &Path) -> Result<(), ClusterError> {
    let dir = cluster_dir(data_dir)?;
    let bin = bin_dir()?;
    let owner = postgres_owner()?;
    let mut stop = tool(&bin, "pg_ctl", &owner);
    stop.arg("-D").arg(&dir).args(["-m", "fast", "-w", "stop"]);
    run(stop, "pg_ctl stop", &data_dir.join("pg_ctl.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder where the cluster would go that holds something else is left whole, and the
    /// error says why; a data dir whose `postgres` folder is root's clusters' folder is
    /// never taken for one cluster.
    #[test]
    fn a_folder_kreg_did_not_make_is_never_removed() {
        let data = std::env::temp_dir().join(format!("kreg-cluster-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let data = data.canonicalize().unwrap();
        let dir = cluster_dir(&data).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let keep = dir.join("somebody-else's");
        std::fs::write(&keep, "kept").unwrap();
        let e = ensure_running(&data).unwrap_err().to_string();
        assert!(e.contains("kreg removes nothing it did not make"), "{e}");
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), "kept");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&data);
        if postgres_owner().unwrap().is_some() {
            let var_lib = cluster_dir(Path::new("/var/lib/kreg")).unwrap();
            assert_ne!(var_lib, Path::new(ROOT_CLUSTERS));
            assert!(var_lib.starts_with(ROOT_CLUSTERS), "{}", var_lib.display());
        }
    }
}
