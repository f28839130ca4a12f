//! `/dev/cpu_dma_latency` as a knob. The kernel keeps a CPU latency request only while the
//! file that made it stays open, so the agent holds it: writing N (microseconds) opens the
//! device, writes N and keeps the file until the next write; reading gives the latency the
//! CPUs now honour (the smallest request of every holder, 2000000000 when there is none).
//!
//! Writing the value the machine reads without the agent's request (what kreg noted before
//! it changed anything) drops the request, so putting the knob back needs no other step;
//! an agent that dies or restarts drops it too, with its files.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::Mutex;

use crate::wire::{ErrorKind, KnobValue, StepError};

pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// The request this agent holds open, if any.
static HELD: Mutex<Option<File>> = Mutex::new(None);

fn io_err(what: String, e: std::io::Error) -> StepError {
    let kind = if e.kind() == std::io::ErrorKind::NotFound {
        ErrorKind::NotFound
    } else {
        ErrorKind::Io
    };
    super::common::err(kind, format!("{what}: {e}"))
}

/// The latency in effect: the device answers a read with a native-endian 32-bit value.
fn current() -> Result<i32, StepError> {
    let mut f = File::open(DEVICE).map_err(|e| io_err(format!("opening {DEVICE}"), e))?;
    let mut b = [0u8; 4];
    f.read_exact(&mut b)
        .map_err(|e| io_err(format!("reading {DEVICE}"), e))?;
    Ok(i32::from_ne_bytes(b))
}

pub fn read() -> Result<KnobValue, StepError> {
    Ok(KnobValue {
        path: DEVICE.to_string(),
        value: current()?.to_string(),
    })
}

pub fn write(value: &str) -> Result<KnobValue, StepError> {
    let us: i32 = value.trim().parse().ok().filter(|v| *v >= 0).ok_or_else(|| {
        super::common::err(
            ErrorKind::BadRequest,
            format!("{DEVICE}: {value:?} is not a latency in microseconds (0 to 2147483647)"),
        )
    })?;
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    // Closing the file withdraws the request.
    *held = None;
    if current()? != us {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE)
            .map_err(|e| io_err(format!("opening {DEVICE}"), e))?;
        f.write_all(&us.to_ne_bytes())
            .map_err(|e| io_err(format!("writing {us} to {DEVICE}"), e))?;
        *held = Some(f);
    }
    drop(held);
    read()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine's own device: held at 0, then let go (root only, as the agent runs).
    #[test]
    fn a_request_is_held_until_the_value_before_is_written_back() {
        let before = current().expect("the agent's tests run as root on a kernel with PM QoS");
        assert_eq!(write("0").unwrap().value, "0");
        assert!(HELD.lock().unwrap().is_some());
        assert_eq!(current().unwrap(), 0, "the request stays while the agent holds it");
        assert_eq!(write(&before.to_string()).unwrap().value, before.to_string());
        assert!(
            HELD.lock().unwrap().is_none(),
            "writing the value before drops the request"
        );
        assert!(write("-3").is_err() && write("soon").is_err());
    }
}
