//! A machine's console watched while it boots, through its `console:` command: a kernel
//! panic printed since the boot began ends the wait for its agent at once (a kernel booted
//! with `panic=0` would otherwise hold the run for the whole boot timeout).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::HostError;
use crate::boot::Watch;

/// What a panicking kernel prints, whatever its version.
const PANIC: &str = "Kernel panic - not syncing";
/// How often the console command runs while a machine boots.
const EVERY: Duration = Duration::from_secs(5);

pub struct ConsoleWatch {
    /// The panic line, once one was printed.
    panic: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ConsoleWatch {
    /// Starts watching: what the console shows now is the old boot's, never taken as new.
    pub async fn start(argv: Vec<String>) -> ConsoleWatch {
        let before = controller_command(&argv, "console", Duration::from_secs(30))
            .await
            .unwrap_or_default();
        let old: HashSet<String> = before.lines().map(str::to_string).collect();
        let panic = Arc::new(Mutex::new(None));
        let p = panic.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(EVERY).await;
                let Ok(text) = controller_command(&argv, "console", Duration::from_secs(30)).await else {
                    continue;
                };
                let hit = text
                    .lines()
                    .find(|line| line.contains(PANIC) && !old.contains(*line))
                    // From the marker on: no printk time stamp or serial noise before it.
                    .map(|line| console_lines(&line[line.find(PANIC).unwrap_or(0)..], 1));
                if hit.is_some() {
                    *p.lock().expect("panic lock") = hit;
                    return;
                }
            }
        });
        ConsoleWatch { panic, task }
    }
}

impl Watch for ConsoleWatch {
    fn died(&mut self) -> Option<String> {
        let line = self.panic.lock().expect("panic lock").clone()?;
        Some(format!("the kernel panicked ({})", line.trim()))
    }

    /// Nothing: the boot's failure quotes the console's last lines itself, once.
    fn console(&self) -> String {
        String::new()
    }
}

impl Drop for ConsoleWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs one of a host's commands on the controller (argv, no shell) within `limit`; its
/// stdout, or why it failed.
pub(super) async fn controller_command(argv: &[String], what: &str, limit: Duration) -> Result<String, HostError> {
    let (prog, args) = argv.split_first().ok_or_else(|| format!("empty {what} command"))?;
    let child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(limit, child).await {
        Ok(Ok(out)) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(Ok(out)) => Err(format!(
            "{what} command {prog} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into()),
        Ok(Err(e)) => Err(format!("{what} command {prog} did not start: {e}").into()),
        Err(_) => Err(format!("{what} command {prog} did not finish within {}s", limit.as_secs()).into()),
    }
}

/// The last `lines` lines of console output, printable: carriage returns and other control
/// characters (a serial line carries them) are dropped, tabs and newlines kept.
pub(super) fn console_lines(text: &str, lines: usize) -> String {
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    let all: Vec<&str> = clean.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn console_lines_are_the_last_printable_ones() {
        let raw = "a\r\n\x1b[0mb\r\n\r\n\tc\u{7}\nd\n";
        assert_eq!(super::console_lines(raw, 3), "[0mb\n\tc\nd");
        assert_eq!(super::console_lines(raw, 10), "a\n[0mb\n\tc\nd");
        assert_eq!(super::console_lines("", 5), "");
    }
}
