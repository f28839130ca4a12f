//! `read_knob` / `write_knob`: one value under /proc/sys, /sys or /sys/kernel/debug, read
//! back after every write; and `/dev/cpu_dma_latency`, held open by the agent (see
//! [`super::latency`]).

use std::path::{Component, Path};

use crate::wire::{ErrorKind, KnobValue, StepError};

const ALLOWED: &[&str] = &["/proc/sys/", "/sys/"];

fn check(path: &str) -> Result<(), StepError> {
    let p = Path::new(path);
    let plain = p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain || !ALLOWED.iter().any(|a| path.starts_with(a)) {
        return Err(super::common::err(
            ErrorKind::Forbidden,
            format!("knob {path:?} refused: only absolute paths under /proc/sys/ or /sys/, without '..', and /dev/cpu_dma_latency"),
        ));
    }
    Ok(())
}

pub async fn read(path: &str) -> Result<KnobValue, StepError> {
    if path == super::latency::DEVICE {
        return super::latency::read();
    }
    check(path)?;
    let value = tokio::fs::read_to_string(path).await.map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Io
        };
        super::common::err(kind, format!("reading knob {path}: {e}"))
    })?;
    Ok(KnobValue {
        path: path.to_string(),
        value: value.trim_end().to_string(),
    })
}

pub async fn write(path: &str, value: &str) -> Result<KnobValue, StepError> {
    if path == super::latency::DEVICE {
        return super::latency::write(value);
    }
    check(path)?;
    tokio::fs::write(path, value.as_bytes()).await.map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Io
        };
        super::common::err(kind, format!("writing {value:?} to knob {path}: {e}"))
    })?;
    read(path).await
}
