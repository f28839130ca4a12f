//! Reading a bzImage's setup header: shared by the agent (kexec, install) and the
//! controller (a kernel given as a file), so both name a kernel image's release alike.

/// The kernel release a bzImage announces in its setup header (`kernel_version` field),
/// e.g. "6.12.100+deb12-amd64". `None` when the image has no such header.
pub fn release(image: &[u8]) -> Option<String> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes([*image.get(0x20e)?, *image.get(0x20f)?]) as usize;
    if ptr == 0 {
        return None;
    }
    let start = ptr + 0x200;
    let text = image.get(start..(start + 256).min(image.len()))?;
    let end = text.iter().position(|&b| b == 0 || b == b' ')?;
    let release = std::str::from_utf8(&text[..end]).ok()?;
    (!release.is_empty()).then(|| release.to_string())
}
