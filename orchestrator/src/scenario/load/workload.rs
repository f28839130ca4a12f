//! Workloads: each kind's options, typed after the tool's own flags and checked with the
//! valid range in the message.

use super::super::yaml::{Kind, Node};
use super::super::*;
use super::{Cx, Fields, PendingWorkload};

/// Keys every workload may have.
const COMMON: &[&str] = &["name", "kind", "on", "timeout"];

/// A numeric flag: (YAML key, tool flag, min, max).
type NumFlag = (&'static str, &'static str, u64, u64);

const SCHBENCH_NUM: &[NumFlag] = &[
    ("message_threads", "-m", 1, 4096),
    ("threads", "-t", 1, 65536),
    ("runtime", "-r", 1, 86400),
    ("operations", "-n", 0, 1_000_000),
    ("cache_footprint_kb", "-F", 0, 1 << 30),
    ("requests_per_sec", "-R", 1, 100_000_000),
    ("auto_rps", "-A", 1, 100),
    ("pipe", "-p", 1, 1 << 20),
    ("intervaltime", "-i", 1, 86400),
    ("warmuptime", "-w", 0, 86400),
    ("sleep_usec", "-s", 0, 100_000_000),
    ("zerotime", "-z", 1, 86400),
];
const SCHBENCH_BOOL: &[(&str, &str)] = &[("no_locking", "-L"), ("calibrate", "-C")];
const SCHBENCH_CPUS: &[(&str, &str)] = &[("message_cpus", "-M"), ("worker_cpus", "-W")];

const PERF_NUM: &[NumFlag] = &[("groups", "-g", 1, 10_000), ("loops", "-l", 1, 100_000_000)];
const PERF_BOOL: &[(&str, &str)] = &[("pipe", "-p"), ("threads", "-t")];

/// A CPU list as schbench and taskset take it ("0-3,8,10-11"), or `auto`.
fn is_cpu_list(s: &str) -> bool {
    s == "auto"
        || (!s.is_empty()
            && s.split(',').all(|part| {
                let mut ends = part.splitn(2, '-').map(|n| n.parse::<u32>());
                match (ends.next(), ends.next()) {
                    (Some(Ok(a)), Some(Ok(b))) => a <= b,
                    (Some(Ok(_)), None) => true,
                    _ => false,
                }
            }))
}

impl<'a> Cx<'a> {
    fn num_flags(&mut self, f: &Fields, table: &[NumFlag], out: &mut Flags) -> bool {
        let mut ok = true;
        for (key, flag, min, max) in table {
            if let Some(n) = f.get(key) {
                match self.uint(n, &format!("{key} ({flag})"), *min, *max) {
                    Some(v) => out.push((flag.to_string(), Some(v.to_string()))),
                    None => ok = false,
                }
            }
        }
        ok
    }

    fn bool_flags(&mut self, f: &Fields, table: &[(&str, &str)], out: &mut Flags) -> bool {
        let mut ok = true;
        for (key, flag) in table {
            if let Some(n) = f.get(key) {
                match self.boolean(n, &format!("{key} ({flag})")) {
                    Some(true) => out.push((flag.to_string(), None)),
                    Some(false) => {}
                    None => ok = false,
                }
            }
        }
        ok
    }

    fn only(&mut self, f: &Fields, kind: &str, allowed: &[&str]) {
        for (k, v) in &f.entries {
            if !COMMON.contains(k) && !allowed.contains(k) {
                self.error(
                    v,
                    format!(
                        "`{k}` does not apply to workload kind `{kind}`; it takes: {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
    }

    pub(super) fn workload(&mut self, node: &Node) -> Option<PendingWorkload> {
        const KEYS: &[&str] = &[
            "name",
            "kind",
            "on",
            "timeout",
            "groups",
            "loops",
            "pipe",
            "threads",
            "fds",
            "datasize",
            "process",
            "argv",
            "metrics",
            "message_threads",
            "runtime",
            "operations",
            "cache_footprint_kb",
            "requests_per_sec",
            "auto_rps",
            "intervaltime",
            "warmuptime",
            "sleep_usec",
            "zerotime",
            "no_locking",
            "calibrate",
            "message_cpus",
            "worker_cpus",
            "json",
            "bench",
            "test",
            "time",
            "tables",
            "table_size",
            "percentile",
            "server",
            "clients",
            "duration",
            "warehouses",
            "virtual_users",
            "rampup",
        ];
        let f = self.map(node, "a workload", KEYS)?;
        let name = self
            .required(&f, "name", "a workload")
            .and_then(|n| self.name(n, "workload name"));
        let what = format!("workload `{}`", name.as_deref().unwrap_or("?"));
        let on = match f.get("on") {
            Some(n) => Some(self.name(n, "on")?),
            None => None,
        };
        let timeout_secs = match f.get("timeout") {
            Some(n) => self.duration(n, "timeout")?,
            None => 600,
        };
        let kind_node = self.required(&f, "kind", &what)?;
        let kind_name = self.string(kind_node, "kind")?;
        let mut host_refs = Vec::new();
        let kind = match kind_name.as_str() {
            "hackbench" => WorkloadKind::Hackbench(self.hackbench(&f)?),
            "schbench" => WorkloadKind::Schbench(self.schbench(&f)?),
            "perf-bench" => WorkloadKind::PerfBench(self.perf_bench(&f, &what)?),
            "sysbench" => WorkloadKind::Sysbench(self.sysbench(&f, &what, &mut host_refs)?),
            "netperf" => WorkloadKind::Netperf(self.netperf(&f, &what, &mut host_refs)?),
            "hammerdb" => WorkloadKind::Hammerdb(self.hammerdb(&f, &what, &mut host_refs)?),
            "command" => WorkloadKind::Command(self.command(&f, &what)?),
            other => {
                self.error(
                    kind_node,
                    format!("kind: unknown workload kind `{other}`; expected hackbench, schbench, perf-bench, sysbench, netperf, hammerdb or command"),
                );
                return None;
            }
        };
        Some(PendingWorkload {
            name: name?,
            on,
            timeout_secs,
            kind,
            host_refs,
        })
    }

    fn hackbench(&mut self, f: &Fields) -> Option<Hackbench> {
        self.only(
            f,
            "hackbench",
            &["groups", "loops", "pipe", "threads", "process", "fds", "datasize"],
        );
        let groups = f
            .get("groups")
            .map(|n| self.uint(n, "groups (-g)", 1, 10_000))
            .unwrap_or(Some(10));
        let loops = f
            .get("loops")
            .map(|n| self.uint(n, "loops (-l)", 1, 100_000_000))
            .unwrap_or(Some(100));
        let pipe = f
            .get("pipe")
            .map(|n| self.boolean(n, "pipe (-p)"))
            .unwrap_or(Some(false));
        let threads = f
            .get("threads")
            .map(|n| self.boolean(n, "threads (-T)"))
            .unwrap_or(Some(false));
        if let (Some(t), Some(p)) = (f.get("threads"), f.get("process")) {
            if matches!((&t.kind, &p.kind), (Kind::Scalar(a, _), Kind::Scalar(b, _)) if a == "true" && b == "true") {
                self.error(p, "process (-P) and threads (-T) exclude each other");
            }
        }
        let _process = f.get("process").map(|n| self.boolean(n, "process (-P)"));
        let fds = match f.get("fds") {
            None => Some(None),
            Some(n) => self.uint(n, "fds (-f)", 1, 1000).map(Some),
        };
        let datasize = match f.get("datasize") {
            None => Some(None),
            Some(n) => self.uint(n, "datasize (-s)", 1, 1 << 20).map(Some),
        };
        Some(Hackbench {
            groups: groups? as u32,
            loops: loops? as u32,
            pipe: pipe?,
            threads: threads?,
            fds: fds?.map(|n| n as u32),
            datasize: datasize?.map(|n| n as u32),
        })
    }

    fn schbench(&mut self, f: &Fields) -> Option<Schbench> {
        let mut allowed: Vec<&str> = SCHBENCH_NUM.iter().map(|x| x.0).collect();
        allowed.extend(SCHBENCH_BOOL.iter().map(|x| x.0));
        allowed.extend(SCHBENCH_CPUS.iter().map(|x| x.0));
        allowed.push("json");
        self.only(f, "schbench", &allowed);
        let mut flags = Flags::new();
        let mut ok = self.num_flags(f, SCHBENCH_NUM, &mut flags);
        ok &= self.bool_flags(f, SCHBENCH_BOOL, &mut flags);
        for (key, flag) in SCHBENCH_CPUS {
            if let Some(n) = f.get(key) {
                match self.string(n, key) {
                    Some(s) if is_cpu_list(&s) => flags.push((flag.to_string(), Some(s))),
                    Some(s) => {
                        self.error(
                            n,
                            format!("{key} ({flag}): {s:?} is not a CPU list like 0-3,8 or `auto`"),
                        );
                        ok = false;
                    }
                    None => ok = false,
                }
            }
        }
        let json = f
            .get("json")
            .map(|n| self.boolean(n, "json (-j)"))
            .unwrap_or(Some(false));
        ok.then_some(Schbench { flags, json: json? })
    }

    fn perf_bench(&mut self, f: &Fields, what: &str) -> Option<PerfBench> {
        self.only(f, "perf-bench", &["bench", "groups", "loops", "pipe", "threads"]);
        let node = self.required(f, "bench", what)?;
        let bench = match self.string(node, "bench")?.as_str() {
            "messaging" => PerfBenchKind::Messaging,
            "pipe" => PerfBenchKind::Pipe,
            other => {
                self.error(
                    node,
                    format!("bench: `{other}` is not a perf sched benchmark; expected messaging or pipe"),
                );
                return None;
            }
        };
        let mut flags = Flags::new();
        let (num, bools): (&[NumFlag], &[(&str, &str)]) = match bench {
            PerfBenchKind::Messaging => (PERF_NUM, PERF_BOOL),
            // sched pipe takes -l (loops) and -T (threads).
            PerfBenchKind::Pipe => (&PERF_NUM[1..], &[("threads", "-T")]),
        };
        for key in ["groups", "pipe"] {
            if bench == PerfBenchKind::Pipe {
                if let Some(n) = f.get(key) {
                    self.error(n, format!("`{key}` does not apply to perf bench sched pipe"));
                    return None;
                }
            }
        }
        let mut ok = self.num_flags(f, num, &mut flags);
        ok &= self.bool_flags(f, bools, &mut flags);
        ok.then_some(PerfBench { bench, flags })
    }

    fn db_server(&mut self, node: &Node, what: &str, refs: &mut Vec<(String, usize, usize)>) -> Option<DbServer> {
        let what = format!("the server of {what}");
        const KEYS: &[&str] = &[
            "on",
            "kind",
            "address",
            "port",
            "datadir",
            "database",
            "user",
            "password_file",
        ];
        let f = self.map(node, &what, KEYS)?;
        let on_node = self.required(&f, "on", &what)?;
        let on = self.name(on_node, "on")?;
        refs.push((on.clone(), on_node.line, on_node.col));
        let kind = match f.get("kind") {
            None => Some(DbKind::Mariadb),
            Some(n) => match self.string(n, "kind")?.as_str() {
                "mariadb" => Some(DbKind::Mariadb),
                "mysql" => Some(DbKind::Mysql),
                other => {
                    self.error(
                        n,
                        format!("kind: unknown database `{other}`; expected mariadb or mysql"),
                    );
                    None
                }
            },
        };
        let address = self.required(&f, "address", &what).and_then(|n| {
            let s = self.string(n, "address")?;
            if s.parse::<std::net::IpAddr>().is_err() {
                self.error(n, format!("address: {s:?} is not an IP address"));
                return None;
            }
            Some(s)
        });
        let port = f
            .get("port")
            .map(|n| self.uint(n, "port", 1, 65535))
            .unwrap_or(Some(3306));
        let datadir = self.required(&f, "datadir", &what).and_then(|n| {
            let s = self.string(n, "datadir")?;
            if !s.starts_with('/') || s.contains("..") {
                self.error(n, format!("datadir: {s:?} must be an absolute path without `..`"));
                return None;
            }
            Some(s)
        });
        let plain = |cx: &mut Self, key: &str, default: &str| -> Option<String> {
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
        let database = plain(self, "database", "kreg");
        let user = plain(self, "user", "kreg");
        let password_file = self
            .required(&f, "password_file", &what)
            .and_then(|n| self.file(n, "password_file"));
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

    fn sysbench(&mut self, f: &Fields, what: &str, refs: &mut Vec<(String, usize, usize)>) -> Option<Sysbench> {
        self.only(
            f,
            "sysbench",
            &[
                "test",
                "threads",
                "time",
                "tables",
                "table_size",
                "percentile",
                "server",
            ],
        );
        let test = self.required(f, "test", what).and_then(|n| {
            let t = self.string(n, "test")?;
            if !t.starts_with("oltp_") || !t.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                self.error(n, format!("test: {t:?} is not a sysbench OLTP test (oltp_read_write, oltp_read_only, oltp_point_select, …)"));
                return None;
            }
            Some(t)
        });
        let threads = f
            .get("threads")
            .map(|n| self.uint(n, "threads", 1, 4096))
            .unwrap_or(Some(1));
        let time = f
            .get("time")
            .map(|n| self.uint(n, "time", 1, 86400))
            .unwrap_or(Some(60));
        let tables = f
            .get("tables")
            .map(|n| self.uint(n, "tables", 1, 1000))
            .unwrap_or(Some(1));
        let table_size = f
            .get("table_size")
            .map(|n| self.uint(n, "table_size", 1, 1_000_000_000))
            .unwrap_or(Some(10_000));
        let percentile = f
            .get("percentile")
            .map(|n| self.uint(n, "percentile", 1, 100))
            .unwrap_or(Some(95));
        let server = self
            .required(f, "server", what)
            .and_then(|n| self.db_server(n, what, refs));
        Some(Sysbench {
            test: test?,
            threads: threads? as u32,
            time_secs: time? as u32,
            tables: tables? as u32,
            table_size: table_size? as u32,
            percentile: percentile? as u32,
            server: server?,
        })
    }

    /// `8`, `50%` (of the SUT's CPUs) or `2/cpu` (per SUT CPU).
    fn count(&mut self, node: &Node, what: &str, allow_per_cpu: bool) -> Option<Count> {
        let text = match &node.kind {
            Kind::Scalar(s, _) => s.trim().to_string(),
            _ => String::new(),
        };
        let parsed = if let Some(p) = text.strip_suffix('%') {
            p.trim()
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=1000).contains(p))
                .map(Count::PercentOfCpus)
        } else if let Some(f) = text.strip_suffix("/cpu").filter(|_| allow_per_cpu) {
            f.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| *f > 0.0 && *f <= 100.0)
                .map(Count::PerCpu)
        } else {
            text.parse::<u32>()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .map(Count::Fixed)
        };
        if parsed.is_none() {
            let forms = if allow_per_cpu {
                "a count (8), a % of the SUT's CPUs (50%) or a number per CPU (2/cpu)"
            } else {
                "a count (8) or a % of the SUT's CPUs (50%)"
            };
            self.expected(node, what, forms);
        }
        parsed
    }

    fn netperf(&mut self, f: &Fields, what: &str, refs: &mut Vec<(String, usize, usize)>) -> Option<Netperf> {
        self.only(f, "netperf", &["test", "clients", "duration", "server"]);
        let test = self
            .required(f, "test", what)
            .and_then(|n| match self.string(n, "test")?.as_str() {
                "UDP_RR" => Some(NetTest::UdpRr),
                "TCP_RR" => Some(NetTest::TcpRr),
                other => {
                    self.error(
                        n,
                        format!("test: `{other}` is not supported; expected UDP_RR or TCP_RR"),
                    );
                    None
                }
            });
        let clients = match f.get("clients") {
            Some(n) => self.count(n, "clients", false),
            None => Some(Count::Fixed(1)),
        };
        let duration = f
            .get("duration")
            .map(|n| self.uint(n, "duration (-l)", 1, 86400))
            .unwrap_or(Some(30));
        let server = self.required(f, "server", what).and_then(|n| {
            let sf = self.map(n, "the netperf server", &["on", "address", "port"])?;
            let on_node = self.required(&sf, "on", "the netperf server")?;
            let on = self.name(on_node, "on")?;
            refs.push((on.clone(), on_node.line, on_node.col));
            let address = self.required(&sf, "address", "the netperf server").and_then(|a| {
                let s = self.string(a, "address")?;
                if s.parse::<std::net::IpAddr>().is_err() {
                    self.error(a, format!("address: {s:?} is not an IP address"));
                    return None;
                }
                Some(s)
            });
            let port = sf
                .get("port")
                .map(|p| self.uint(p, "port", 1, 65535))
                .unwrap_or(Some(12865));
            Some((on, address?, port? as u16))
        });
        let (server_on, server_address, server_port) = server?;
        Some(Netperf {
            test: test?,
            clients: clients?,
            duration_secs: duration? as u32,
            server_on,
            server_address,
            server_port,
        })
    }

    fn hammerdb(&mut self, f: &Fields, what: &str, refs: &mut Vec<(String, usize, usize)>) -> Option<Hammerdb> {
        self.only(
            f,
            "hammerdb",
            &["warehouses", "virtual_users", "rampup", "duration", "server"],
        );
        let warehouses = f
            .get("warehouses")
            .map(|n| self.uint(n, "warehouses", 1, 100_000))
            .unwrap_or(Some(10));
        let vu = match f.get("virtual_users") {
            Some(n) => self.count(n, "virtual_users", true),
            None => Some(Count::PerCpu(1.0)),
        };
        let rampup = f
            .get("rampup")
            .map(|n| self.uint(n, "rampup (minutes)", 0, 600))
            .unwrap_or(Some(2));
        let duration = f
            .get("duration")
            .map(|n| self.uint(n, "duration (minutes)", 1, 1440))
            .unwrap_or(Some(5));
        let server = self
            .required(f, "server", what)
            .and_then(|n| self.db_server(n, what, refs));
        Some(Hammerdb {
            warehouses: warehouses? as u32,
            virtual_users: vu?,
            rampup_min: rampup? as u32,
            duration_min: duration? as u32,
            server: server?,
        })
    }

    fn command(&mut self, f: &Fields, what: &str) -> Option<CommandWorkload> {
        self.only(f, "command", &["argv", "metrics"]);
        let argv = self.required(f, "argv", what).and_then(|n| {
            let items = self.seq(n, "argv")?;
            if items.is_empty() {
                self.error(n, "argv: give at least the program");
                return None;
            }
            items
                .iter()
                .map(|i| self.string(i, "an argv element"))
                .collect::<Option<Vec<_>>>()
        });
        let metrics = self.required(f, "metrics", what).and_then(|n| self.metrics(n));
        Some(CommandWorkload {
            argv: argv?,
            metrics: metrics?,
        })
    }

    fn metrics(&mut self, node: &Node) -> Option<Vec<MetricPattern>> {
        let Kind::Map(entries) = &node.kind else {
            self.expected(
                node,
                "metrics",
                "a mapping of metric name to { regex, unit, higher_is_better }",
            );
            return None;
        };
        if entries.is_empty() {
            self.error(node, "metrics: declare at least one metric");
            return None;
        }
        let mut out = Vec::new();
        for (k, v) in entries {
            let name = self.name(k, "metric name");
            let what = format!("metric `{}`", name.as_deref().unwrap_or("?"));
            let Some(f) = self.map(v, &what, &["regex", "unit", "higher_is_better"]) else {
                continue;
            };
            let regex = self.required(&f, "regex", &what).and_then(|n| {
                let r = self.string(n, "regex")?;
                match regex::Regex::new(&r) {
                    Ok(re) if re.captures_len() >= 2 => Some(r),
                    Ok(_) => {
                        self.error(
                            n,
                            "regex: needs one capture group around the number, e.g. `Time: ([0-9.]+)`",
                        );
                        None
                    }
                    Err(e) => {
                        self.error(n, format!("regex: {e}"));
                        None
                    }
                }
            });
            let unit = match f.get("unit") {
                Some(n) => self.string(n, "unit"),
                None => Some(String::new()),
            };
            let hib = self
                .required(&f, "higher_is_better", &what)
                .and_then(|n| self.boolean(n, "higher_is_better"));
            if let (Some(name), Some(regex), Some(unit), Some(higher_is_better)) = (name, regex, unit, hib) {
                out.push(MetricPattern {
                    name,
                    regex,
                    unit,
                    higher_is_better,
                });
            }
        }
        Some(out)
    }
}
