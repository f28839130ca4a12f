//! Kernel `.config` text: requested assignments, applying them, checking which survived
//! `make olddefconfig`, and finding what a dropped option depends on in the Kconfig files.
//! Pure: text in, text out.

use crate::Error;
/// `CONFIG_NAME=VALUE` → (`CONFIG_NAME`, `VALUE`). Values: y, m, n, a number, 0x-hex, or a
/// double-quoted string.
pub fn parse_assignment(s: &str) -> Result<(String, String), Error> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| Error::invalid(format!("{s:?} is not CONFIG_NAME=VALUE")))?;
    let name = name.trim();
    let value = value.trim();
    let ok_name = name.strip_prefix("CONFIG_").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    });
    if !ok_name {
        return Err(Error::invalid(format!(
            "{name:?} is not a config symbol (CONFIG_ followed by A-Z, 0-9, _)"
        )));
    }
    let ok_value = matches!(value, "y" | "m" | "n")
        || value.parse::<i64>().is_ok()
        || value
            .strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        || (value.len() >= 2
            && value.starts_with('"')
            && value.ends_with('"')
            && !value[1..value.len() - 1].contains('"'));
    if !ok_value {
        return Err(Error::invalid(format!(
            "{value:?} is not a config value (y, m, n, a number, 0x…, or \"text\")"
        )));
    }
    Ok((name.to_string(), value.to_string()))
}

/// The value of `name` in a .config, `None` when unset or absent.
pub fn value_of<'t>(config: &'t str, name: &str) -> Option<&'t str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

fn mentions(line: &str, name: &str) -> bool {
    line.strip_prefix(name).is_some_and(|r| r.starts_with('='))
        || line
            .strip_prefix("# ")
            .and_then(|r| r.strip_prefix(name))
            .is_some_and(|r| r == " is not set")
}

/// The config with each assignment applied (earlier mentions removed, the new one appended).
pub fn apply(config: &str, set: &[(String, String)]) -> String {
    let mut lines: Vec<String> = config.lines().map(str::to_string).collect();
    for (name, value) in set {
        lines.retain(|l| !mentions(l, name));
        if value == "n" {
            lines.push(format!("# {name} is not set"));
        } else {
            lines.push(format!("{name}={value}"));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The assignments that did not survive: (name, wanted, what the config says now).
pub fn dropped(config: &str, set: &[(String, String)]) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    for (name, wanted) in set {
        let now = value_of(config, name);
        let survived = match wanted.as_str() {
            "n" => now.is_none() || now == Some("n"),
            w => now == Some(w),
        };
        if !survived {
            out.push((name.clone(), wanted.clone(), now.map(str::to_string)));
        }
    }
    out
}

/// The lines that define a configuration (assignments and "is not set"), without the
/// LOCALVERSION ones kreg sets itself: what the build's config hash is taken over.
pub fn canonical(config: &str) -> String {
    config
        .lines()
        .filter(|l| l.starts_with("CONFIG_") || (l.starts_with("# CONFIG_") && l.ends_with(" is not set")))
        .filter(|l| !mentions(l, "CONFIG_LOCALVERSION") && !mentions(l, "CONFIG_LOCALVERSION_AUTO"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A line's indentation in columns, tabs to the next multiple of 8 (as Kconfig counts it).
fn indent(line: &str) -> usize {
    let mut col = 0;
    for c in line.chars() {
        match c {
            ' ' => col += 1,
            '\t' => col = (col / 8 + 1) * 8,
            _ => break,
        }
    }
    col
}

/// The text before a `#` comment (one outside double quotes).
fn without_comment(s: &str) -> &str {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &s[..i],
            _ => {}
        }
    }
    s
}

/// An open `if`, `menu` or `choice` block and the dependencies it gives what it holds.
struct Block {
    kind: &'static str,
    deps: Vec<String>,
}

/// Whose `depends on` lines are being read.
enum Owner {
    /// The symbol asked about.
    Target,
    /// A menu or choice (index into the open blocks): its dependencies apply to all inside.
    Block(usize),
    Other,
}

/// Where a help text stands: its first line's indentation, once seen.
struct Help {
    first: Option<usize>,
}

/// The `depends on` expressions of each definition of `symbol` in one Kconfig text, the
/// enclosing `if`s, menus and choices included.
fn definitions(text: &str, symbol: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut owner = Owner::Other;
    let mut help: Option<Help> = None;
    for raw in text.lines() {
        if let Some(h) = &mut help {
            // Help text runs while lines are blank or indented at least as far as its
            // first line (Kconfig's own rule).
            if raw.trim().is_empty() {
                continue;
            }
            let ind = indent(raw);
            match h.first {
                // A line at column 0 ends it even as its first line.
                None if ind > 0 => {
                    h.first = Some(ind);
                    continue;
                }
                Some(first) if ind >= first => continue,
                _ => help = None,
            }
        }
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or("");
        let rest = line[word.len()..].trim();
        let pop = |blocks: &mut Vec<Block>, kind: &str| {
            if let Some(i) = blocks.iter().rposition(|b| b.kind == kind) {
                blocks.truncate(i);
            }
        };
        match word {
            "if" => {
                blocks.push(Block {
                    kind: "if",
                    deps: vec![rest.to_string()],
                });
                owner = Owner::Other;
            }
            "menu" | "choice" => {
                blocks.push(Block {
                    kind: if word == "menu" { "menu" } else { "choice" },
                    deps: Vec::new(),
                });
                owner = Owner::Block(blocks.len() - 1);
            }
            "endif" => pop(&mut blocks, "if"),
            "endmenu" => pop(&mut blocks, "menu"),
            "endchoice" => pop(&mut blocks, "choice"),
            "config" | "menuconfig" => {
                if rest.split_whitespace().next() == Some(symbol) {
                    out.push(blocks.iter().flat_map(|b| b.deps.iter().cloned()).collect());
                    owner = Owner::Target;
                } else {
                    owner = Owner::Other;
                }
            }
            "comment" | "source" | "mainmenu" => owner = Owner::Other,
            "help" | "---help---" => help = Some(Help { first: None }),
            "depends" => {
                if let Some(expr) = rest.strip_prefix("on") {
                    let expr = without_comment(expr).trim().to_string();
                    match owner {
                        Owner::Target => out.last_mut().expect("a definition is open").push(expr),
                        Owner::Block(i) if i < blocks.len() => blocks[i].deps.push(expr),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// What `config SYMBOL` (SYMBOL without CONFIG_) depends on, from Kconfig file texts: its
/// `depends on` lines and those of the `if`s, menus and choices around it; definitions in
/// several places are alternatives (`||`). `None` when no Kconfig defines it.
pub fn depends_on(kconfigs: &[(String, String)], symbol: &str) -> Option<String> {
    let mut defs: Vec<String> = Vec::new();
    for (_, text) in kconfigs {
        for mut deps in definitions(text, symbol) {
            deps.dedup();
            let expr = match deps.len() {
                0 => "nothing (check `select`s and choices)".to_string(),
                1 => deps.remove(0),
                // `&&` binds tighter than `||`: each alternative keeps its parentheses.
                _ => deps
                    .iter()
                    .map(|d| if d.contains("||") { format!("({d})") } else { d.clone() })
                    .collect::<Vec<_>>()
                    .join(" && "),
            };
            if !defs.contains(&expr) {
                defs.push(expr);
            }
        }
    }
    match defs.len() {
        0 => None,
        1 => defs.pop(),
        _ => Some(defs.iter().map(|d| format!("({d})")).collect::<Vec<_>>().join(" || ")),
    }
}

/// A dependency expression with each symbol's value in `config`, as menuconfig shows it:
/// `DEBUG_KERNEL [=n] && PROC_FS [=y]`.
pub fn annotate(expr: &str, config: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        out.push_str(word);
        let symbol = word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if symbol {
            let value = value_of(config, &format!("CONFIG_{word}")).unwrap_or("n");
            out.push_str(&format!(" [={value}]"));
        }
        word.clear();
    };
    for c in expr.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments() {
        assert_eq!(
            parse_assignment("CONFIG_HZ_250=y"),
            Ok(("CONFIG_HZ_250".into(), "y".into()))
        );
        assert_eq!(parse_assignment("CONFIG_NR_CPUS=8").unwrap().1, "8");
        assert_eq!(parse_assignment(r#"CONFIG_CMDLINE="quiet""#).unwrap().1, "\"quiet\"");
        assert_eq!(parse_assignment("CONFIG_X=0x1f").unwrap().1, "0x1f");
        assert!(parse_assignment("HZ=250")
            .unwrap_err()
            .to_string()
            .contains("not a config symbol"));
        assert!(parse_assignment("CONFIG_X=yes")
            .unwrap_err()
            .to_string()
            .contains("not a config value"));
        assert!(parse_assignment("CONFIG_X")
            .unwrap_err()
            .to_string()
            .contains("not CONFIG_NAME=VALUE"));
    }

    const CONFIG: &str = "#\n# Linux/x86 6.1 Kernel Configuration\n#\nCONFIG_64BIT=y\n# CONFIG_SCHEDSTATS is not set\nCONFIG_HZ=1000\nCONFIG_LOCALVERSION=\"\"\n";

    #[test]
    fn apply_and_check() {
        let set = vec![
            ("CONFIG_SCHEDSTATS".to_string(), "y".to_string()),
            ("CONFIG_64BIT".into(), "n".into()),
            ("CONFIG_HZ".into(), "250".into()),
        ];
        let out = apply(CONFIG, &set);
        assert!(out.contains("CONFIG_SCHEDSTATS=y\n") && !out.contains("# CONFIG_SCHEDSTATS is not set"));
        assert!(out.contains("# CONFIG_64BIT is not set\n") && !out.contains("CONFIG_64BIT=y"));
        assert_eq!(value_of(&out, "CONFIG_HZ"), Some("250"));
        assert!(dropped(&out, &set).is_empty());
        // olddefconfig put HZ back and dropped SCHEDSTATS:
        let after = out
            .replace("CONFIG_HZ=250", "CONFIG_HZ=1000")
            .replace("CONFIG_SCHEDSTATS=y\n", "");
        assert_eq!(
            dropped(&after, &set),
            vec![
                ("CONFIG_SCHEDSTATS".to_string(), "y".to_string(), None),
                ("CONFIG_HZ".into(), "250".into(), Some("1000".into()))
            ]
        );
        assert_eq!(
            canonical(CONFIG),
            "CONFIG_64BIT=y\n# CONFIG_SCHEDSTATS is not set\nCONFIG_HZ=1000\n"
        );
    }

    #[test]
    fn dependencies_from_kconfig() {
        let k = vec![(
            "kernel/Kconfig".to_string(),
            "menu \"x\"\nif NET\nconfig FOO\n\tbool \"foo\"\n\tdepends on PCI && !BAR\n\thelp\n\t  It depends on your machine.\n\t  depends on nothing in prose\nendif\nconfig BAZ\n\tbool\n".to_string(),
        )];
        assert_eq!(depends_on(&k, "FOO").as_deref(), Some("NET && PCI && !BAR"));
        let k2 = vec![(
            "kernel/trace/Kconfig".to_string(),
            "if X\nconfig USER_EVENTS\n\tdepends on FTRACE && BROKEN || COMPILE_TEST # API needs work\n".to_string(),
        )];
        assert_eq!(
            depends_on(&k2, "USER_EVENTS").as_deref(),
            Some("X && (FTRACE && BROKEN || COMPILE_TEST)")
        );
        assert_eq!(
            depends_on(&k, "BAZ").as_deref(),
            Some("nothing (check `select`s and choices)")
        );
        assert_eq!(depends_on(&k, "NOPE"), None);
    }

    /// Help text ends where the indentation drops below its first line; Kconfig keywords
    /// at the start of a prose line (`if`, `depends on`, `menu`) are prose.
    #[test]
    fn help_text_is_not_read_as_keywords() {
        let text = "menu \"Scheduler Debugging\"\n\nconfig SCHED_INFO\n\tbool\n\tdefault n\n\nconfig SCHEDSTATS\n\tbool \"Collect scheduler statistics\"\n\tdepends on DEBUG_KERNEL && PROC_FS\n\tselect SCHED_INFO\n\thelp\n\t  If you say Y here, additional code will be inserted into the\n\t  scheduler and related routines to collect statistics.\n\t  if using clang without clang's integrated assembler, and gdb 7.0+.\n\n\t    menu entries are indented further\n\t  depends on nothing: this line is help, too.\n\t  config FOO is prose.\n\nendmenu\n\nmenu \"Tracing\"\n\tdepends on TRACING_SUPPORT\n\nif FTRACE\nconfig SCHED_TRACER\n\tbool \"Scheduling Latency Tracer\"\n\tdepends on DEBUG_KERNEL\n\thelp\n\t  help text a tab and two spaces in\n\tdepends on PROC_FS\nendif\nendmenu\n";
        let k = vec![("lib/Kconfig.debug".to_string(), text.to_string())];
        assert_eq!(depends_on(&k, "SCHEDSTATS").as_deref(), Some("DEBUG_KERNEL && PROC_FS"));
        assert_eq!(
            depends_on(&k, "SCHED_TRACER").as_deref(),
            Some("TRACING_SUPPORT && FTRACE && DEBUG_KERNEL && PROC_FS")
        );
        assert_eq!(depends_on(&k, "FOO"), None);
        let config = "CONFIG_PROC_FS=y\n# CONFIG_DEBUG_KERNEL is not set\n";
        assert_eq!(
            annotate("DEBUG_KERNEL && PROC_FS", config),
            "DEBUG_KERNEL [=n] && PROC_FS [=y]"
        );
        assert_eq!(
            annotate("!X86_32 || (A=m)", "CONFIG_A=m\n"),
            "!X86_32 [=n] || (A [=m]=m)"
        );
    }

    #[test]
    fn a_symbol_defined_twice_depends_on_either_definition() {
        let k = vec![
            (
                "arch/x86/Kconfig".to_string(),
                "config HZ_X\n\tbool\n\tdepends on X86\n".to_string(),
            ),
            (
                "arch/arm/Kconfig".to_string(),
                "config HZ_X\n\tbool\n\tdepends on ARM\n".to_string(),
            ),
        ];
        assert_eq!(depends_on(&k, "HZ_X").as_deref(), Some("(X86) || (ARM)"));
    }
}
