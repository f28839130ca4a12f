# Installs, when missing, the Debian packages kreg's demo and tests need. Sourced by
# scripts/demo.sh and scripts/test.sh.
# Installing one package can remove another (a newer qemu-utils conflicts with Debian's
# qemu-system-x86, and apt removes it): the check runs again after an install.
kreg_need_packages() {
  kreg_install_missing
  kreg_install_missing
}

kreg_install_missing() {
  local missing=()
  local cmd pkg
  # command:package pairs
  for pair in initdb-15:postgresql qemu-system-x86_64:qemu-system-x86 busybox-static:busybox-static \
              hackbench:rt-tests kexec:kexec-tools cpio:cpio xz:xz-utils modinfo:kmod ldd:libc-bin \
              dpkg-deb:dpkg sshd:openssh-server mariadbd:mariadb-server sysbench:sysbench ip:iproute2 \
              python3:python3 perf:linux-perf patch:patch make:make git:git readelf:binutils gcc:gcc \
              debootstrap:debootstrap sfdisk:fdisk mke2fs:e2fsprogs qemu-img:qemu-utils \
              flex:flex bison:bison linux-source-6.1:linux-source-6.1; do
    cmd=${pair%%:*}; pkg=${pair#*:}
    case $cmd in
      initdb-15) [ -x /usr/lib/postgresql/15/bin/initdb ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=("$pkg") ;;
      busybox-static) [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || missing+=("$pkg") ;;
      sshd) [ -x /usr/sbin/sshd ] || missing+=("$pkg") ;;
      linux-source-6.1) [ -f /usr/src/linux-source-6.1.tar.xz ] || missing+=("$pkg") ;;
      mariadbd) [ -x /usr/sbin/mariadbd ] || missing+=("$pkg") ;;
      debootstrap|sfdisk|mke2fs) [ -x "/usr/sbin/$cmd" ] || [ -x "/sbin/$cmd" ] || missing+=("$pkg") ;;
      *) command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg") ;;
    esac
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "kreg: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
}

# The dashboard's browser tests: Debian's Chromium and its WebDriver (chromedriver).
kreg_need_browser() {
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "kreg: installing chromium chromium-driver" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends chromium chromium-driver >&2
  fi
}

# The lab fetches kernels with `apt-get download`, which needs current package lists.
kreg_need_apt_lists() {
  if ! find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | grep -q . \
     || ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
    echo "kreg: refreshing the package lists (apt-get update)" >&2
    apt-get update -q >&2
  fi
}
