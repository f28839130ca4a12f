//! `kreg man`: a manual page for kreg, for each subcommand its `--help` lists (and theirs),
//! and the agent's, each naming its command.

use std::process::Command;

fn kreg(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kreg")).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "kreg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `kreg PATH --help` lists under "Commands:" (clap's `help` left out).
fn listed(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    kreg(&args)
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn every_command(path: Vec<String>, out: &mut Vec<Vec<String>>) {
    for sub in listed(&path) {
        let mut p = path.clone();
        p.push(sub);
        every_command(p.clone(), out);
        out.push(p);
    }
}

#[test]
fn every_subcommand_has_a_manual_page_that_names_it() {
    let dir = kreg_testkit::Scratch::new("man");
    let said = kreg(&["man", dir.0.to_str().unwrap()]);
    let mut commands = Vec::new();
    every_command(Vec::new(), &mut commands);
    assert!(commands.len() > 40, "{commands:?}");
    assert!(commands.contains(&vec!["machines".to_string(), "add".to_string()]));
    commands.push(Vec::new());
    for c in &commands {
        let name = std::iter::once("kreg")
            .chain(c.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-");
        let page = std::fs::read_to_string(dir.0.join("man1").join(format!("{name}.1")))
            .unwrap_or_else(|e| panic!("no page for {name}: {e}"));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
        // NAME: the command, a dash, its one-line purpose.
        let roff_name = name.replace('-', "\\-");
        assert!(page.contains(&format!(".SH NAME\n{roff_name} \\- ")), "{name}: {page}");
    }
    let pages = std::fs::read_dir(dir.0.join("man1")).unwrap().count();
    assert_eq!(pages, commands.len(), "one page per command, no more");
    assert!(said.starts_with(&format!("{} manual pages", pages + 1)), "{said}");
    // The agent's: section 8, its options.
    let agent = std::fs::read_to_string(dir.0.join("man8").join("kreg-agent.8")).unwrap();
    assert!(
        agent.contains(".TH kreg-agent 8") && agent.contains("\\-\\-token\\-file"),
        "{agent}"
    );
}
