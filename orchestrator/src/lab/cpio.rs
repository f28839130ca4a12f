//! A writer for the "newc" cpio format, which the kernel unpacks as an initramfs
//! (uncompressed, so no compressor is needed on either side).

/// One member of the archive. Paths are relative ("bin/busybox"), without a leading slash.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Dir {
        path: String,
        mode: u32,
    },
    File {
        path: String,
        mode: u32,
        data: Vec<u8>,
    },
    Symlink {
        path: String,
        target: String,
    },
    CharDev {
        path: String,
        mode: u32,
        major: u32,
        minor: u32,
    },
}

fn header(out: &mut Vec<u8>, ino: u32, mode: u32, size: usize, rdev: (u32, u32), name: &str) {
    let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
    let fields = [
        ino,
        mode,
        0,
        0,
        nlink,
        0,
        size as u32,
        0,
        0,
        rdev.0,
        rdev.1,
        name.len() as u32 + 1,
        0,
    ];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08X}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad(out);
}

fn pad(out: &mut Vec<u8>) {
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// The whole archive, trailer included.
pub fn archive(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let ino = i as u32 + 1;
        match e {
            Entry::Dir { path, mode } => header(&mut out, ino, 0o040000 | mode, 0, (0, 0), path),
            Entry::File { path, mode, data } => {
                header(&mut out, ino, 0o100000 | mode, data.len(), (0, 0), path);
                out.extend_from_slice(data);
                pad(&mut out);
            }
            Entry::Symlink { path, target } => {
                header(&mut out, ino, 0o120777, target.len(), (0, 0), path);
                out.extend_from_slice(target.as_bytes());
                pad(&mut out);
            }
            Entry::CharDev {
                path,
                mode,
                major,
                minor,
            } => header(&mut out, ino, 0o020000 | mode, 0, (*major, *minor), path),
        }
    }
    header(&mut out, 0, 0, 0, (0, 0), "TRAILER!!!");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpio_tool_lists_and_extracts_it() {
        let bytes = archive(&[
            Entry::Dir {
                path: "etc".into(),
                mode: 0o755,
            },
            Entry::File {
                path: "etc/hello".into(),
                mode: 0o644,
                data: b"hello, kernel\n".to_vec(),
            },
            Entry::Symlink {
                path: "etc/link".into(),
                target: "hello".into(),
            },
        ]);
        assert_eq!(bytes.len() % 4, 0);
        let dir = std::env::temp_dir().join(format!("kreg-cpio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = std::process::Command::new("cpio")
            .args(["-idm", "--quiet"])
            .current_dir(&dir)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("cpio is installed (Debian package cpio)");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(
            std::fs::read_to_string(dir.join("etc/hello")).unwrap(),
            "hello, kernel\n"
        );
        assert_eq!(
            std::fs::read_link(dir.join("etc/link")).unwrap().to_str(),
            Some("hello")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
