//! A MySQL or MariaDB server that kreg starts on a host for a client workload (sysbench,
//! HammerDB): its options and every command line and SQL text that runs it.

use std::path::PathBuf;

use super::common::ip_address;
use super::HostRefs;
use crate::yaml::cx::{Cx, Fields};
use crate::yaml::{Node, Section};

/// The database server of a hammerdb or sysbench workload.
pub const SERVER: Section = Section::new(
    "workloads[].server (hammerdb, sysbench)",
    "scenario",
    &[
        "on",
        "kind",
        "address",
        "port",
        "datadir",
        "database",
        "user",
        "password_file",
    ],
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Mariadb,
    Mysql,
}

/// A database server that kreg starts on a host (normally the SUT) for a client workload.
#[derive(Debug, Clone, PartialEq)]
pub struct DbServer {
    pub on: String,
    pub kind: DbKind,
    /// The address it listens on and clients connect to.
    pub address: String,
    pub port: u16,
    /// Created with mariadb-install-db / mysqld --initialize-insecure when empty.
    pub datadir: String,
    pub database: String,
    pub user: String,
    /// File on the controller holding the client user's password (never logged or stored).
    pub password_file: PathBuf,
}

/// Whether a server's `--version` line is MariaDB's (`mysqld  Ver 10.11.19-MariaDB-0+deb12u1 …`).
pub fn is_mariadb(version: &str) -> bool {
    version.contains("MariaDB")
}

/// Quotes a string for a single-quoted SQL literal (MySQL/MariaDB, default SQL mode).
pub fn sql_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

impl DbServer {
    /// The server program and client program of this database kind.
    pub fn programs(&self) -> (&'static str, &'static str) {
        match self.kind {
            DbKind::Mariadb => ("mariadbd", "mariadb"),
            DbKind::Mysql => ("mysqld", "mysql"),
        }
    }

    pub fn socket(&self) -> String {
        format!("{}/kreg.sock", self.datadir)
    }

    /// The server, started without any option file so that nothing but these flags counts.
    pub fn server_argv(&self) -> Vec<String> {
        let (server, _) = self.programs();
        vec![
            server.into(),
            "--no-defaults".into(),
            "--user=mysql".into(),
            format!("--datadir={}", self.datadir),
            format!("--bind-address={}", self.address),
            format!("--port={}", self.port),
            format!("--socket={}", self.socket()),
            format!("--pid-file={}/kreg.pid", self.datadir),
            "--skip-name-resolve".into(),
        ]
    }

    /// Creates the system tables in an empty datadir.
    /// `SERVER --version`: the server's own version line, run before anything else.
    pub fn version_argv(&self) -> Vec<String> {
        vec![self.programs().0.into(), "--version".into()]
    }

    /// The datadir's initialisation for the server whose `--version` said `version`: MariaDB's
    /// tool wherever the binary is MariaDB's (Debian's `mysqld` is MariaDB's under
    /// `kind: mysql`), MySQL's `--initialize-insecure` otherwise.
    pub fn init_argv_for(&self, version: &str) -> Vec<String> {
        if is_mariadb(version) && self.kind == DbKind::Mysql {
            return DbServer {
                kind: DbKind::Mariadb,
                ..self.clone()
            }
            .init_argv();
        }
        self.init_argv()
    }

    pub fn init_argv(&self) -> Vec<String> {
        match self.kind {
            DbKind::Mariadb => vec![
                "mariadb-install-db".into(),
                "--no-defaults".into(),
                "--user=mysql".into(),
                format!("--datadir={}", self.datadir),
            ],
            DbKind::Mysql => vec![
                "mysqld".into(),
                "--no-defaults".into(),
                "--initialize-insecure".into(),
                "--user=mysql".into(),
                format!("--datadir={}", self.datadir),
            ],
        }
    }

    /// Root's client over the server's Unix socket (root authenticates as the OS user).
    pub fn admin_argv(&self) -> Vec<String> {
        let (_, client) = self.programs();
        vec![
            client.into(),
            "--no-defaults".into(),
            format!("--socket={}", self.socket()),
            "--user=root".into(),
        ]
    }

    /// SQL that creates the benchmark database and user (fed on stdin, never in argv).
    pub fn setup_sql(&self, password: &str) -> String {
        let (db, user, pw) = (&self.database, sql_quote(&self.user), sql_quote(password));
        format!(
            "CREATE DATABASE IF NOT EXISTS `{db}`;\n\
             CREATE USER IF NOT EXISTS {user}@'%' IDENTIFIED BY {pw};\n\
             ALTER USER {user}@'%' IDENTIFIED BY {pw};\n\
             GRANT ALL PRIVILEGES ON `{db}`.* TO {user}@'%';\n\
             FLUSH PRIVILEGES;\n"
        )
    }

    /// A real query from a client host over the network; the password goes in MYSQL_PWD.
    pub fn probe_argv(&self) -> Vec<String> {
        let (_, client) = self.programs();
        vec![
            client.into(),
            "--no-defaults".into(),
            format!("--host={}", self.address),
            format!("--port={}", self.port),
            format!("--user={}", self.user),
            format!("--database={}", self.database),
            "--execute=SELECT 1".into(),
        ]
    }
}

impl DbServer {
    /// The `server` a workload requires.
    pub(crate) fn required(cx: &mut Cx, f: &Fields, what: &str, refs: &mut HostRefs) -> Option<DbServer> {
        let node = cx.required(f, "server", what)?;
        DbServer::load(cx, node, what, refs)
    }

    pub(crate) fn load(cx: &mut Cx, node: &Node, what: &str, refs: &mut HostRefs) -> Option<DbServer> {
        let what = format!("the server of {what}");
        let f = cx.map(node, &what, &SERVER)?;
        let on_node = cx.required(&f, "on", &what)?;
        let on = cx.name(on_node, "on")?;
        refs.push((on.clone(), on_node.line, on_node.col));
        let kind = match f.get("kind") {
            None => Some(DbKind::Mariadb),
            Some(n) => match cx.string(n, "kind")?.as_str() {
                "mariadb" => Some(DbKind::Mariadb),
                "mysql" => Some(DbKind::Mysql),
                other => {
                    cx.error(
                        n,
                        format!("kind: unknown database `{other}`; expected mariadb or mysql"),
                    );
                    None
                }
            },
        };
        let address = cx
            .required(&f, "address", &what)
            .and_then(|n| ip_address(cx, n, "address"));
        let port = cx.uint_or(&f, "port", "port", (1, 65535), 3306);
        let datadir = cx.required(&f, "datadir", &what).and_then(|n| {
            let s = cx.string(n, "datadir")?;
            if !s.starts_with('/') || s.contains("..") {
                cx.error(n, format!("datadir: {s:?} must be an absolute path without `..`"));
                return None;
            }
            Some(s)
        });
        let plain = |cx: &mut Cx, key: &str, default: &str| -> Option<String> {
            match f.get(key) {
                None => Some(default.to_string()),
                Some(n) => {
                    let s = cx.string(n, key)?;
                    if s.is_empty() || s.len() > 32 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        cx.error(n, format!("{key}: {s:?} must be 1 to 32 letters, digits or '_'"));
                        return None;
                    }
                    Some(s)
                }
            }
        };
        let database = plain(cx, "database", "kreg");
        let user = plain(cx, "user", "kreg");
        let password_file = cx
            .required(&f, "password_file", &what)
            .and_then(|n| cx.secret(n, "password_file"));
        Some(DbServer {
            on,
            kind: kind?,
            address: address?,
            port: port? as u16,
            datadir: datadir?,
            database: database?,
            user: user?,
            password_file: password_file?,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn db(kind: DbKind) -> DbServer {
        DbServer {
            on: "sut".into(),
            kind,
            address: "192.0.2.1".into(),
            port: 3307,
            datadir: "/var/lib/kreg/db".into(),
            database: "tpcc".into(),
            user: "bench".into(),
            password_file: "pw".into(),
        }
    }

    #[test]
    fn database_commands() {
        let d = db(DbKind::Mariadb);
        assert_eq!(
            d.server_argv().join(" "),
            "mariadbd --no-defaults --user=mysql --datadir=/var/lib/kreg/db --bind-address=192.0.2.1 --port=3307 --socket=/var/lib/kreg/db/kreg.sock --pid-file=/var/lib/kreg/db/kreg.pid --skip-name-resolve"
        );
        assert_eq!(
            db(DbKind::Mysql).init_argv()[..3],
            ["mysqld", "--no-defaults", "--initialize-insecure"]
        );
        assert_eq!(db(DbKind::Mysql).probe_argv()[0], "mysql");
        let sql = d.setup_sql("it's\\x");
        assert!(sql.contains("IDENTIFIED BY 'it''s\\\\x'"), "{sql}");
        assert!(sql.contains("GRANT ALL PRIVILEGES ON `tpcc`.* TO 'bench'@'%'"), "{sql}");
        assert!(
            !d.probe_argv().iter().any(|a| a.contains("it's")),
            "the password travels in MYSQL_PWD only"
        );
    }
}
