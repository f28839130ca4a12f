//! A stand-in kernel tree in a small local git repository: its Makefile answers kbuild's
//! targets quickly (the "image" is Debian's 6.12 vmlinuz, the modules a part of that
//! package's: enough to mount an ext4 root on virtio and reach the network), and
//! `olddefconfig` drops CONFIG_NEEDS_PCI unless CONFIG_PCI=y, as kconfig would for
//! `depends on PCI`; its tools/perf "builds" a copy of the host's perf. Everything kreg
//! does around a build runs for real on it; only the compiles are stood in for.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::git;

pub const MAKEFILE: &str = r#"RELEASE := $(shell cat release)
tinyconfig:
	cp base.config .config
defconfig:
	cp debian.config .config
olddefconfig:
	sh olddefconfig.sh
bzImage:
	mkdir -p arch/x86/boot
	cp image arch/x86/boot/bzImage
	echo "ffffffff81000000 T _text" > System.map
	if [ -n "$(KREG_TEST_BUILD_LOG)" ]; then echo compiled >> "$(KREG_TEST_BUILD_LOG)"; fi
	@echo "  LD      vmlinux"
	@echo "  BUILD   arch/x86/boot/bzImage"
modules:
	@echo "  MODPOST modules"
kernelrelease:
	@cat release
modules_install:
	mkdir -p $(INSTALL_MOD_PATH)/lib/modules/$(RELEASE)
	cp -r mods/. $(INSTALL_MOD_PATH)/lib/modules/$(RELEASE)/
"#;

/// tools/perf's Makefile: the "build" is the host's perf with a line of text after its
/// ELF image (so that it runs, and its hash tells it from the host's).
pub const PERF_MAKEFILE: &str = r#"all:
	cp /usr/bin/perf $(O)/perf
	echo "stand-in perf of the kreg test tree" >> $(O)/perf
	if [ -n "$(KREG_TEST_BUILD_LOG)" ]; then echo "perf compiled $(NO_LIBPYTHON)" >> "$(KREG_TEST_BUILD_LOG)"; fi
	@echo "  LINK    $(O)/perf"
"#;

pub const OLDDEFCONFIG: &str = r#"# kconfig's job, reduced to one rule: NEEDS_PCI depends on PCI.
if ! grep -q '^CONFIG_PCI=y' .config; then
  grep -v '^CONFIG_NEEDS_PCI=' .config > .config.new && mv .config.new .config
fi
"#;

/// What a machine needs to mount its root and reach the network (ext4, virtio block and
/// net) with what they depend on, and the module lists modules_install writes: copied from
/// `mods` (a release's /lib/modules folder) to `to`.
fn copy_modules(mods: &Path, to: &Path) {
    let wanted = [
        "kernel/fs/ext4",
        "kernel/fs/jbd2",
        "kernel/fs/mbcache.ko.xz",
        "kernel/lib",
        "kernel/crypto",
        "kernel/arch",
        "kernel/block",
        "kernel/drivers/block/virtio_blk.ko.xz",
        "kernel/drivers/virtio",
        "kernel/drivers/net/virtio_net.ko.xz",
        "kernel/drivers/net/net_failover.ko.xz",
        "kernel/net/core",
        "modules.order",
        "modules.builtin",
        "modules.builtin.modinfo",
    ];
    let present: Vec<&str> = wanted.iter().copied().filter(|w| mods.join(w).exists()).collect();
    let status = Command::new("cp")
        .current_dir(mods)
        .args(["-r", "--parents"])
        .args(&present)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Builds the stand-in repository from Debian's 6.12 kernel package; returns (repo, release).
pub fn standin_repo(dir: &Path) -> (PathBuf, String) {
    let cache = std::env::var("KREG_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or("/root".into())).join(".cache/kreg"));
    let src = kreg::scenario::KernelSource::Deb {
        package: "linux-image-6.12-amd64".into(),
    };
    let p = kreg::kernel::prepare(&src, &cache, None, &mut |l: &str| eprintln!("{l}"))
        .unwrap()
        .unwrap();
    let repo = dir.join("linux");
    std::fs::create_dir_all(repo.join("mods")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("Makefile"), MAKEFILE).unwrap();
    std::fs::write(repo.join("olddefconfig.sh"), OLDDEFCONFIG).unwrap();
    std::fs::create_dir_all(repo.join("tools/perf")).unwrap();
    std::fs::write(repo.join("tools/perf/Makefile"), PERF_MAKEFILE).unwrap();
    std::fs::write(
        repo.join("Kconfig"),
        "config PCI\n\tbool \"PCI\"\n\nconfig NEEDS_PCI\n\tbool \"needs PCI\"\n\tdepends on PCI\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("base.config"),
        "CONFIG_64BIT=y\nCONFIG_MODULES=y\nCONFIG_HZ=250\nCONFIG_LOCALVERSION=\"\"\n",
    )
    .unwrap();
    std::fs::write(repo.join("release"), format!("{}\n", p.release)).unwrap();
    // `defconfig` is the package's own config: the initramfs tool reads it to learn which
    // compressions the kernel takes.
    let unpacked = p
        .modules_dir
        .as_ref()
        .unwrap()
        .ancestors()
        .nth(3)
        .unwrap()
        .to_path_buf();
    std::fs::copy(
        unpacked.join(format!("boot/config-{}", p.release)),
        repo.join("debian.config"),
    )
    .unwrap();
    std::fs::write(repo.join("README"), "stand-in tree\n").unwrap();
    std::fs::copy(&p.vmlinuz, repo.join("image")).unwrap();
    copy_modules(&p.modules_dir.unwrap(), &repo.join("mods"));
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "stand-in v1"]);
    git(&repo, &["tag", "v1"]);
    // A later commit the scenario must not pick up.
    std::fs::write(repo.join("README"), "stand-in tree, later\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "later"]);
    (repo, p.release)
}

pub const PATCH: &str = "--- a/README\n+++ b/README\n@@ -1 +1,2 @@\n stand-in tree\n+patched by kreg's test\n";
