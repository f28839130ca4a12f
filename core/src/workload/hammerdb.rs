//! HammerDB TPROC-C (hammerdbcli) output: NOPM and TPM from the `TEST RESULT` line, and,
//! with the time profile on (xtprof), per-transaction latencies from the summary over all
//! virtual users. Lines may carry a `Vuser N:` prefix.
//!
//! Layouts read:
//! - v4+: `TEST RESULT : System achieved N NOPM from M <DB> TPM`; v3: `… achieved M <DB> TPM at N NOPM`.
//! - time profile v4: `>>>>> SUMMARY OF K ACTIVE VIRTUAL USERS …`, then per transaction
//!   `>>>>> PROC: NEWORD` / `CALLS: …  MIN: …ms  AVG: …ms  MAX: …ms  TOTAL: …ms` /
//!   `P99: …ms  P95: …ms  P50: …ms  SD: …  RATIO: …%`; v5/v6 add `P75` and `P25`.

use super::common::uints;
use super::common::Count;
use super::db::DbServer;
use super::HostRefs;
use crate::parse::{number, perr, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::Error;

/// The keys of a hammerdb workload, besides the common ones.
pub const KEYS: &[&str] = &["warehouses", "virtual_users", "rampup", "duration", "server"];

/// HammerDB TPROC-C against MySQL/MariaDB; kreg writes the hammerdbcli script.
#[derive(Debug, Clone, PartialEq)]
pub struct Hammerdb {
    pub warehouses: u32,
    pub virtual_users: Count,
    pub rampup_min: u32,
    pub duration_min: u32,
    pub server: DbServer,
}

impl Hammerdb {
    /// The hammerdbcli script for a TPROC-C run against MySQL/MariaDB: time profile on,
    /// `vus` virtual users, rampup and duration in minutes. The schema is built first when
    /// the database has none (`build`), in a script of its own.
    pub fn script(&self, password: &str, vus: u32, build: bool) -> String {
        let s = &self.server;
        // Tcl braces keep the password literal; a password with braces or a backslash is
        // refused before this point.
        let mut out = format!(
            "dbset db mysql\ndbset bm TPC-C\n\
             diset connection mysql_host {}\ndiset connection mysql_port {}\n\
             diset connection mysql_socket null\n\
             diset tpcc mysql_user {}\ndiset tpcc mysql_pass {{{password}}}\ndiset tpcc mysql_dbase {}\n\
             diset tpcc mysql_count_ware {}\ndiset tpcc mysql_storage_engine innodb\n",
            s.address, s.port, s.user, s.database, self.warehouses
        );
        if build {
            out.push_str(&format!(
                "diset tpcc mysql_num_vu {}\nbuildschema\nwaittocomplete\n",
                vus.min(self.warehouses)
            ));
            return out;
        }
        out.push_str(&format!(
            "diset tpcc mysql_driver timed\ndiset tpcc mysql_rampup {}\ndiset tpcc mysql_duration {}\n\
             diset tpcc mysql_timeprofile true\ndiset tpcc mysql_allwarehouse false\n\
             loadscript\nvuset logtotemp 0\nvuset unique 1\nvuset vu {vus}\nvucreate\nvurun\nwaittocomplete\n",
            self.rampup_min, self.duration_min
        ));
        out
    }

    /// Asks the server whether the TPROC-C schema exists (prints 1 when it does).
    pub fn schema_probe_argv(&self) -> Vec<String> {
        let mut argv = self.server.admin_argv();
        argv.extend([
            "--skip-column-names".into(),
            format!(
                "--execute=SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{}' AND table_name = 'warehouse'",
                self.server.database
            ),
        ]);
        argv
    }

    pub(crate) fn load(cx: &mut Cx, f: &Fields, what: &str, refs: &mut HostRefs) -> Option<Hammerdb> {
        let [warehouses, rampup, duration] = uints(
            cx,
            f,
            [
                ("warehouses", "warehouses", 1, 100_000, 10),
                ("rampup", "rampup (minutes)", 0, 600, 2),
                ("duration", "duration (minutes)", 1, 1440, 5),
            ],
        );
        let vu = match f.get("virtual_users") {
            Some(n) => Count::load(cx, n, "virtual_users", true),
            None => Some(Count::PerCpu(1.0)),
        };
        let server = DbServer::required(cx, f, what, refs);
        Some(Hammerdb {
            warehouses: warehouses?,
            virtual_users: vu?,
            rampup_min: rampup?,
            duration_min: duration?,
            server: server?,
        })
    }
}

const TOOL: &str = "hammerdb";

fn field_re() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"([A-Z][A-Z0-9]*):\s*([^\s%]+?)(?:ms|%)?(?:\s|$)").expect("valid regex"))
}

fn strip_vuser(line: &str) -> &str {
    let l = line.trim();
    if let Some(rest) = l.strip_prefix("Vuser ") {
        if let Some((n, tail)) = rest.split_once(':') {
            if n.chars().all(|c| c.is_ascii_digit()) {
                return tail.trim();
            }
        }
    }
    l
}

/// NOPM and TPM from one `TEST RESULT` line.
fn test_result(line: &str) -> Option<(Result<f64, ()>, Result<f64, ()>)> {
    let rest = line.split_once("TEST RESULT : System achieved ")?.1;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let num = |w: Option<&&str>| w.and_then(|w| number(TOOL, 0, "", w).ok()).ok_or(());
    if words.get(1) == Some(&"NOPM") {
        // N NOPM from M <DB words> TPM
        Some((num(words.first()), num(words.get(3))))
    } else {
        // M <DB words> TPM at N NOPM
        let at = words.iter().position(|w| *w == "at")?;
        Some((num(words.get(at + 1)), num(words.first())))
    }
}

/// HammerDB's own line saying that a virtual user failed, when one did: `Error in Virtual
/// User N: …` (the reason), else `Vuser N:FINISHED FAILED`. HammerDB exits 0 either way.
pub fn failure(text: &str) -> Option<String> {
    let lines = || text.lines().map(str::trim);
    lines()
        .find(|l| l.contains("Error in Virtual User"))
        .or_else(|| lines().find(|l| strip_vuser(l) == "FINISHED FAILED"))
        .map(|l| match l.char_indices().nth(400) {
            Some((at, _)) => format!("{}…", &l[..at]),
            None => l.to_string(),
        })
}

/// `text` with every occurrence of the database password masked (HammerDB echoes each
/// `diset`, the password's included), for anything kreg stores or shows.
pub fn redact(text: &str, password: &str) -> String {
    if password.is_empty() {
        return text.to_string();
    }
    text.replace(password, "********")
}

/// The run's NOPM and TPM and, when the time profile was on, the response times of each
/// stored procedure (p50/p95/p99/avg, and p25/p75 where printed). A run in which a virtual
/// user failed is an error with HammerDB's own line, not a result.
pub fn parse(text: &str) -> Result<Vec<Metric>, ParseError> {
    if let Some(line) = failure(text) {
        return Err(perr(TOOL, format!("a virtual user failed: {line}")));
    }
    let lines: Vec<&str> = text.lines().map(strip_vuser).collect();
    let summary = lines
        .iter()
        .rposition(|l| l.contains("SUMMARY OF") && l.contains("ACTIVE VIRTUAL USERS"));
    let profiled = lines
        .iter()
        .any(|l| l.starts_with(">>>>> VIRTUAL USER") || l.starts_with(">>>>> PROC:"));
    let mut out = Vec::new();
    // stdout, the time profile alone, or both one after the other.
    match (totals(&lines), summary) {
        (Ok((nopm, tpm)), _) => {
            out.push(Metric::new("nopm", nopm, "NOPM", true, MetricKind::Throughput));
            out.push(Metric::new("tpm", tpm, "TPM", true, MetricKind::Throughput));
        }
        (Err(_), None) if profiled => {
            return Err(perr(
                TOOL,
                "the time profile has no `SUMMARY OF N ACTIVE VIRTUAL USERS` (truncated)",
            ))
        }
        (Err(e), None) => return Err(e),
        (Err(e), Some(_)) if lines.iter().any(|l| l.contains("TEST RESULT")) => return Err(e),
        (Err(_), Some(_)) => {}
    }
    let Some(start) = summary else {
        if profiled {
            return Err(perr(
                TOOL,
                "the time profile has no `SUMMARY OF N ACTIVE VIRTUAL USERS` (truncated)",
            ));
        }
        return unique(TOOL, out);
    };
    for (name, line, fields) in profile(&lines, start)? {
        out.extend(proc_metrics(&name, line, &fields)?);
    }
    if out.is_empty() {
        return Err(perr(
            TOOL,
            "no `TEST RESULT` line and no procedure in the time profile's summary (truncated)",
        ));
    }
    unique(TOOL, out)
}

/// NOPM and TPM from the one `TEST RESULT` line.
fn totals(lines: &[&str]) -> Result<(f64, f64), ParseError> {
    let mut result = None;
    for (n, l) in lines.iter().enumerate() {
        if let Some((nopm, tpm)) = test_result(l) {
            if result.is_some() {
                return Err(perr(
                    TOOL,
                    format!(
                        "line {}: a second `TEST RESULT`: the output holds more than one run; give one run per file",
                        n + 1
                    ),
                ));
            }
            match (nopm, tpm) {
                (Ok(a), Ok(b)) => result = Some((a, b)),
                _ => {
                    return Err(perr(
                        TOOL,
                        format!(
                            "line {}: cannot read NOPM and TPM from {:?}",
                            n + 1,
                            crate::parse::clip(l)
                        ),
                    ))
                }
            }
        }
    }
    result.ok_or_else(|| {
        perr(
            TOOL,
            "no `TEST RESULT : System achieved …` line (truncated, or the run failed)",
        )
    })
}

/// A procedure of the time profile: its name, its line, its (counter, value) pairs.
type Proc = (String, usize, Vec<(String, f64)>);

/// The procedures of the last time profile summary, which starts at line `start`.
fn profile(lines: &[&str], start: usize) -> Result<Vec<Proc>, ParseError> {
    let mut proc: Option<Proc> = None;
    let mut blocks = Vec::new();
    for (n, l) in lines.iter().enumerate().skip(start + 1) {
        if let Some(name) = l.strip_prefix(">>>>> PROC:") {
            blocks.extend(proc.take());
            proc = Some((name.trim().to_ascii_lowercase(), n + 1, Vec::new()));
        } else if l.starts_with(">>>>>") || l.starts_with("+-") {
            blocks.extend(proc.take());
            if l.starts_with("+-") {
                break;
            }
        } else if let Some((_, _, fields)) = proc.as_mut() {
            let mut any = false;
            for c in field_re().captures_iter(l) {
                any = true;
                fields.push((c[1].to_string(), number(TOOL, n + 1, &c[1], &c[2])?));
            }
            if !any && !l.is_empty() {
                return Err(perr(
                    TOOL,
                    format!(
                        "line {}: expected `KEY: VALUE` pairs in the time profile, found {:?}",
                        n + 1,
                        crate::parse::clip(l)
                    ),
                ));
            }
        }
    }
    blocks.extend(proc.take());
    Ok(blocks)
}

/// One procedure's response times, in milliseconds.
fn proc_metrics(name: &str, line: usize, fields: &[(String, f64)]) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| *v);
    for key in ["P50", "P95", "P99", "AVG"] {
        let v = get(key).ok_or_else(|| {
            perr(
                TOOL,
                format!(
                    "line {line}: PROC {} has no {key} (truncated time profile)",
                    name.to_uppercase()
                ),
            )
        })?;
        out.push(Metric::new(
            format!("{name}_{}_ms", key.to_ascii_lowercase()),
            v,
            "ms",
            false,
            if key == "AVG" {
                MetricKind::Mean
            } else {
                MetricKind::Latency
            },
        ));
    }
    for key in ["P25", "P75"] {
        if let Some(v) = get(key) {
            out.push(Metric::new(
                format!("{name}_{}_ms", key.to_ascii_lowercase()),
                v,
                "ms",
                false,
                MetricKind::Latency,
            ));
        }
    }
    Ok(out)
}

/// HammerDB 4.x runs on Tcl 8.6; 5.0 and later need tclsh9.0.
pub fn check_version(version: &str) -> Result<(), Error> {
    let major = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| Error::unreadable(format!("hammerdbcli says no version kreg can read ({version:?})")))?;
    if major >= 5 {
        return Err(Error::unreadable(format!(
            "HammerDB {version} needs Tcl 9 (tclsh9.0), which kreg does not drive: use HammerDB 4.4 to 4.12"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::db::{tests::db, DbKind};

    #[test]
    fn hammerdb_scripts() {
        let h = Hammerdb {
            warehouses: 24,
            virtual_users: Count::PerCpu(1.0),
            rampup_min: 2,
            duration_min: 5,
            server: db(DbKind::Mysql),
        };
        let run = h.script("pw", 16, false);
        for line in [
            "dbset db mysql",
            "dbset bm TPC-C",
            "diset connection mysql_host 192.0.2.1",
            "diset connection mysql_port 3307",
            "diset connection mysql_socket null",
            "diset tpcc mysql_user bench",
            "diset tpcc mysql_pass {pw}",
            "diset tpcc mysql_count_ware 24",
            "diset tpcc mysql_driver timed",
            "diset tpcc mysql_rampup 2",
            "diset tpcc mysql_duration 5",
            "diset tpcc mysql_timeprofile true",
            "vuset vu 16",
            "vurun",
        ] {
            assert!(run.lines().any(|l| l == line), "missing {line:?} in:\n{run}");
        }
        let build = h.script("pw", 64, true);
        assert!(build.contains("diset tpcc mysql_num_vu 24\nbuildschema\n"), "{build}");
        assert!(build.contains("diset connection mysql_socket null\n"), "{build}");
        assert!(!build.contains("vurun"));
    }

    /// A schema build against a server that is not there, as HammerDB 4.12 prints it: the
    /// error line is the reason, whatever else the output says.
    #[test]
    fn failed_virtual_users_are_errors() {
        let out = "HammerDB CLI v4.12\nVuser 1:RUNNING\nVuser 1:Monitor Thread\n\
                   Error in Virtual User 1: mysqlconnect/db server: Can't connect to server on '127.0.0.2' (111)\n\
                   Vuser 1:FINISHED FAILED\nALL VIRTUAL USERS COMPLETE\n";
        assert_eq!(
            failure(out).as_deref(),
            Some("Error in Virtual User 1: mysqlconnect/db server: Can't connect to server on '127.0.0.2' (111)")
        );
        let only_status = "Vuser 1:RUNNING\nVuser 2:FINISHED SUCCESS\nVuser 1:FINISHED FAILED\n";
        assert_eq!(failure(only_status).as_deref(), Some("Vuser 1:FINISHED FAILED"));
        assert_eq!(failure("Vuser 1:FINISHED SUCCESS\nALL VIRTUAL USERS COMPLETE\n"), None);
        // A result line does not make a failed run good.
        let mixed = format!("{only_status}Vuser 2:TEST RESULT : System achieved 10 NOPM from 23 MariaDB TPM\n");
        let e = parse(&mixed).unwrap_err().to_string();
        assert!(e.contains("a virtual user failed: Vuser 1:FINISHED FAILED"), "{e}");
    }

    /// A real run (HammerDB 4.12, MariaDB 10.11, 2 virtual users, 1 minute): its stdout,
    /// its time profile, and both concatenated.
    #[test]
    fn a_real_run_stdout_and_profile() {
        let stdout = include_str!("fixtures/hammerdb-4.12.stdout.txt");
        let profile = include_str!("fixtures/hammerdb-4.12.profile.txt");
        let get = |ms: &[Metric], n: &str| ms.iter().find(|m| m.name == n).map(|m| m.value);
        let alone = parse(stdout).unwrap();
        assert_eq!(get(&alone, "nopm"), Some(6227.0));
        assert_eq!(get(&alone, "tpm"), Some(14309.0));
        assert_eq!(get(&alone, "neword_p50_ms"), None);
        let prof = parse(profile).unwrap();
        assert_eq!(get(&prof, "nopm"), None);
        assert_eq!(get(&prof, "neword_p50_ms"), Some(8.452));
        assert_eq!(get(&prof, "neword_p95_ms"), Some(19.556));
        assert_eq!(get(&prof, "neword_p99_ms"), Some(31.551));
        assert_eq!(get(&prof, "neword_avg_ms"), Some(9.640));
        for p in ["payment", "delivery", "slev", "ostat"] {
            assert!(get(&prof, &format!("{p}_p99_ms")).is_some(), "{p}");
        }
        let both = parse(&format!("{stdout}\n{profile}")).unwrap();
        assert_eq!(both.len(), 2 + 5 * 4);
        // Cut inside the per-user blocks, before the summary: an error, not a partial result.
        let cut: String = profile.lines().take(20).map(|l| format!("{l}\n")).collect();
        let e = parse(&cut).unwrap_err().to_string();
        assert!(e.contains("no `SUMMARY"), "{e}");
        // stdout with its result line cut off, and no profile: an error.
        let head: String = stdout.lines().take(30).map(|l| format!("{l}\n")).collect();
        assert!(parse(&head).is_err());
    }

    /// A real schema build against a port nobody listens on (HammerDB 4.12, exit status 0).
    #[test]
    fn a_real_unreachable_server() {
        let out = include_str!("fixtures/hammerdb-4.12.unreachable.txt");
        assert_eq!(
            failure(out).as_deref(),
            Some("Error in Virtual User 1: mysqlconnect/db server: Can't connect to server on '127.0.0.2' (115)")
        );
        let e = parse(out).unwrap_err().to_string();
        assert!(e.contains("Can't connect to server on '127.0.0.2'"), "{e}");
    }

    #[test]
    fn the_password_echo_is_masked() {
        let out = "Changed tpcc:mysql_pass from mysql to s3cret-Pw\nValue s3cret-Pw for tpcc:mysql_pass is the same\n";
        let r = redact(out, "s3cret-Pw");
        assert!(!r.contains("s3cret-Pw"), "{r}");
        assert!(r.contains("Changed tpcc:mysql_pass from mysql to ********"), "{r}");
        assert_eq!(redact("nothing", ""), "nothing");
    }

    #[test]
    fn versions_kreg_drives() {
        assert!(check_version("v4.12").is_ok());
        assert!(check_version("v4.4").is_ok());
        let e = check_version("v5.0").unwrap_err();
        assert!(e.to_string().contains("needs Tcl 9"), "{e}");
        assert!(check_version("").is_err());
    }
}
