//! A machine's console watched while it boots, through its `console:` command: a kernel
//! panic printed since the boot began ends the wait for its agent at once (a kernel booted
//! with `panic=0` would otherwise hold the run for the whole boot timeout).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::http::{console_lines, controller_command};
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
