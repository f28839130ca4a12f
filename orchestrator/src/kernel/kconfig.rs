//! Kernel `.config` text: requested assignments, applying them, checking which survived
//! `make olddefconfig`, and finding what a dropped option depends on in the Kconfig files.
//! Pure: text in, text out.

/// `CONFIG_NAME=VALUE` → (`CONFIG_NAME`, `VALUE`). Values: y, m, n, a number, 0x-hex, or a
/// double-quoted string.
pub fn parse_assignment(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not CONFIG_NAME=VALUE"))?;
    let name = name.trim();
    let value = value.trim();
    let ok_name = name.strip_prefix("CONFIG_").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    });
    if !ok_name {
        return Err(format!(
            "{name:?} is not a config symbol (CONFIG_ followed by A-Z, 0-9, _)"
        ));
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
        return Err(format!(
            "{value:?} is not a config value (y, m, n, a number, 0x…, or \"text\")"
        ));
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

/// What `config SYMBOL` (SYMBOL without CONFIG_) depends on, from Kconfig file texts:
/// its `depends on` lines, and the `if` blocks around it. `None` when no Kconfig defines it.
pub fn depends_on(kconfigs: &[(String, String)], symbol: &str) -> Option<String> {
    let mut found = false;
    let mut deps: Vec<String> = Vec::new();
    for (_, text) in kconfigs {
        let mut ifs: Vec<String> = Vec::new();
        let mut inside = false;
        for raw in text.lines() {
            let line = raw.trim();
            let word = line.split_whitespace().next().unwrap_or("");
            match word {
                "if" => ifs.push(line[2..].trim().to_string()),
                "endif" => {
                    ifs.pop();
                }
                "config" | "menuconfig" | "choice" | "endchoice" | "menu" | "endmenu" | "source" | "comment" => {
                    inside = matches!(word, "config" | "menuconfig") && line.split_whitespace().nth(1) == Some(symbol);
                    if inside {
                        found = true;
                        deps.extend(ifs.iter().cloned());
                    }
                }
                // Dependencies come before the help text; what follows `help` is prose.
                "help" | "---help---" => inside = false,
                "depends" if inside => {
                    if let Some(expr) = line.strip_prefix("depends on") {
                        deps.push(expr.trim().to_string());
                    }
                }
                _ => {}
            }
        }
    }
    if !found {
        return None;
    }
    deps.dedup();
    Some(if deps.is_empty() {
        "nothing (check `select`s and choices)".into()
    } else {
        deps.join(" && ")
    })
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
        assert!(parse_assignment("HZ=250").unwrap_err().contains("not a config symbol"));
        assert!(parse_assignment("CONFIG_X=yes")
            .unwrap_err()
            .contains("not a config value"));
        assert!(parse_assignment("CONFIG_X")
            .unwrap_err()
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
        assert_eq!(
            depends_on(&k, "BAZ").as_deref(),
            Some("nothing (check `select`s and choices)")
        );
        assert_eq!(depends_on(&k, "NOPE"), None);
    }
}
