#!/usr/bin/env bash
# Builds the disk image of kreg's lab *machine*: a qemu guest that behaves like a real SUT.
# Debian bookworm on an MBR-partitioned disk, GRUB in the MBR booting Debian's kernel with
# the initramfs that initramfs-tools made, and an init that starts kreg-agent. kreg reaches
# it over http like any other machine (or over SSH: it runs Debian's sshd, with the host
# keys made when the image was), installs kernels into its /boot and /lib/modules and
# boots them by kexec or by a one-shot GRUB entry.
#
#   bash scripts/lab-machine.sh OUT_DIR
#
# writes OUT_DIR/disk.raw (the golden image; guests run on qcow2 overlays of it) and
# OUT_DIR/ssh_host_ed25519_key.pub (its sshd's host key). The agent, its token and root's
# authorized_keys are not in the image: the guest copies them at every boot from a second,
# small disk (/dev/vdb) that whoever starts the VM writes. Re-running with an image in place
# does nothing unless this script changed.
set -euo pipefail

out=${1:?usage: lab-machine.sh OUT_DIR}
mirror=${KREG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
here=$(cd "$(dirname "$0")" && pwd)
stamp=$(sha256sum "$here/lab-machine.sh" | cut -c1-16)

mkdir -p "$out"
# One build at a time: a second caller (the test, while scripts/test.sh builds the image in
# the background) waits here for the first, then finds the image up to date.
exec 9>"$out/.lock"
flock 9
if [ -f "$out/disk.raw" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "lab machine: $out/disk.raw is up to date" >&2
  exit 0
fi
rm -f "$out/disk.raw" "$out/stamp"

. "$here/deps.sh"
kreg_group "the lab machine's disk image (debootstrap, partitions, ext4, qemu)" \
  /usr/sbin/debootstrap:debootstrap /sbin/sfdisk:fdisk /sbin/mke2fs:e2fsprogs qemu-system-x86_64:qemu-system-x86 >&2

root="$out/root"
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  umount "$root/sys" 2>/dev/null || true
  umount "$root/dev" 2>/dev/null || true
}
trap cleanup EXIT

if [ ! -f "$root/.kreg-bootstrapped" ]; then
  rm -rf "$root"
  echo "lab machine: debootstrap $suite from $mirror (a few minutes)" >&2
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$out/debootstrap.log" 2>&1 || {
    tail -30 "$out/debootstrap.log" >&2
    exit 1
  }
  touch "$root/.kreg-bootstrapped"
fi

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
echo "lab machine: installing the kernel, GRUB and tools into the image" >&2
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main non-free
deb $mirror $suite-updates main non-free
EOF
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$out/apt.log" 2>&1
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  linux-image-amd64 initramfs-tools grub-pc-bin grub2-common kexec-tools iproute2 kmod udev procps \
  rt-tests e2fsprogs zstd make gcc libc6-dev binutils openssh-server >>"$out/apt.log" 2>&1 || {
  tail -30 "$out/apt.log" >&2
  exit 1
}
chroot "$root" apt-get clean

# GRUB on the serial console, one second of menu; GRUB_DEFAULT stays "0" (the newest
# Debian kernel), which is what a one-shot entry falls back to.
cat >"$root/etc/default/grub" <<'EOF'
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="console=ttyS0 panic=5 init=/sbin/kreg-machine-init"
GRUB_CMDLINE_LINUX=""
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_DISABLE_OS_PROBER=true
EOF
echo "/dev/vda1 / ext4 defaults 0 1" >"$root/etc/fstab"
# Initramfs images with what this machine's root needs only: smaller and quicker to make.
sed -i 's/^MODULES=.*/MODULES=dep/' "$root/etc/initramfs-tools/initramfs.conf"
echo kreg-machine >"$root/etc/hostname"
# sshd: root by key only; the host keys (made by the package) go out with the image.
chroot "$root" ssh-keygen -A >/dev/null
printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n' \
  >"$root/etc/ssh/sshd_config.d/kreg.conf"

cat >"$root/sbin/kreg-machine-init" <<'EOF'
#!/bin/sh
# PID 1 of kreg's lab machine: mounts, network, the agent from /dev/vdb, and on a
# provisioning boot GRUB into the MBR.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -o remount,rw /
hostname kreg-machine
modprobe virtio_net 2>/dev/null
ip link set lo up
# The NIC to the controller (qemu's user network) has qemu's default MAC; a second one,
# when the machine has it, is its lab LAN to the other machines of a rehearsal.
nic() { for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "$1" ] && basename "$d"; done; }
dev=$(nic 52:54:00:12:34:56)
[ -n "$dev" ] || dev=$(ls /sys/class/net | grep -v '^lo$' | head -n1)
ip link set "$dev" up
ip addr add 10.0.2.15/24 dev "$dev"
ip route add default via 10.0.2.2
if grep -q kreg.provision /proc/cmdline; then
  echo "kreg-machine: installing GRUB"
  grub-install --target=i386-pc /dev/vda && update-grub && echo "kreg-machine: provisioned"
  sync
  mount -o remount,ro /
  echo o >/proc/sysrq-trigger
  sleep 60
fi
mkdir -p /mnt/kreg /etc/kreg /var/lib/kreg-agent /root/.ssh /run/sshd
agent=
if mount -o ro /dev/vdb /mnt/kreg; then
  if [ -f /mnt/kreg/kreg-agent ]; then
    cp /mnt/kreg/kreg-agent /usr/local/sbin/kreg-agent
    cp /mnt/kreg/token /etc/kreg/token
    chmod 600 /etc/kreg/token
    agent=yes
  fi
  # lan: the LAN NIC's MAC on the first line, then one ADDRESS/PREFIX per line.
  if [ -f /mnt/kreg/lan ]; then
    lan=$(nic "$(head -n1 /mnt/kreg/lan)")
    if [ -n "$lan" ]; then
      ip link set "$lan" up
      tail -n +2 /mnt/kreg/lan | while read -r a; do ip addr add "$a" dev "$lan"; done
      echo "kreg-machine: lan $lan: $(tail -n +2 /mnt/kreg/lan | tr '\n' ' ')"
    else
      echo "kreg-machine: no NIC with the lan's MAC"
    fi
  fi
  if [ -f /mnt/kreg/authorized_keys ]; then
    cp /mnt/kreg/authorized_keys /root/.ssh/authorized_keys
    chmod 700 /root/.ssh; chmod 600 /root/.ssh/authorized_keys
  fi
  umount /mnt/kreg
else
  echo "kreg-machine: no agent disk on /dev/vdb"
fi
/usr/sbin/sshd && echo "kreg-machine: sshd started"
if [ -z "$agent" ]; then
  echo "kreg-machine: kernel $(uname -r) up, no agent of its own"
  while true; do sleep 3600; done
fi
echo "kreg-machine: kernel $(uname -r) up, starting kreg-agent"
while true; do
  kreg-agent --listen 0.0.0.0:7878 --token-file /etc/kreg/token --data-dir /var/lib/kreg-agent
  echo "kreg-machine: kreg-agent exited with $?, restarting"
  sleep 1
done
EOF
chmod 755 "$root/sbin/kreg-machine-init"
cleanup
trap - EXIT

release=$(ls "$root/lib/modules" | sort -V | tail -n1)
echo "lab machine: kernel $release; writing the disk image" >&2
disk="$out/disk.tmp"
rm -f "$disk"
truncate -s 4G "$disk"
printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$disk"
mke2fs -F -q -t ext4 -L kreg-root -d "$root" -E offset=$((2048 * 512)) "$disk" $((4 * 1024 * 1024 - 1024))k

echo "lab machine: provisioning boot (GRUB into the MBR)" >&2
timeout 900 qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 2 -nodefaults -display none -no-reboot \
  -kernel "$root/boot/vmlinuz-$release" -initrd "$root/boot/initrd.img-$release" \
  -append "root=/dev/vda1 rw console=ttyS0 init=/sbin/kreg-machine-init kreg.provision" \
  -drive "file=$disk,format=raw,if=virtio" -serial "file:$out/provision.log" \
  -netdev user,id=n0 -device virtio-net-pci,netdev=n0 || true
if ! grep -q "kreg-machine: provisioned" "$out/provision.log"; then
  echo "lab machine: provisioning failed; console:" >&2
  tail -40 "$out/provision.log" >&2
  exit 1
fi
mv "$disk" "$out/disk.raw"
cp "$root/etc/ssh/ssh_host_ed25519_key.pub" "$out/ssh_host_ed25519_key.pub"
echo "$stamp" >"$out/stamp"
echo "lab machine: $out/disk.raw ready" >&2
