#!/usr/bin/env bash
# Builds (once per kernel, cached) what the Soft-RoCE guests boot: the
# uncompressed kernel ELF of Debian's 6.1 image (qemu boots it through its PVH
# entry, about twice as fast as the bzImage under TCG) and a busybox
# initramfs that mounts the host's root read-only over 9p with a tmpfs
# overlay and switch_roots into it, so a guest runs the host's userspace and
# build at the same paths. Prints "KERNEL INITRD" on success.
# Usage: rxe_images.sh [CACHE_DIR]
set -euo pipefail
cache_root=${1:-/var/cache/ibbcast-rxe-lab}
fail() { echo "FAIL: $*" >&2; exit 1; }

# The newest installed Debian amd64 kernel whose modules have rdma_rxe.
kver=""
for v in $(ls /lib/modules 2>/dev/null | sort -V); do
  [[ -f /boot/vmlinuz-$v ]] && modinfo -k "$v" -n rdma_rxe >/dev/null 2>&1 && kver=$v
done
[[ -n $kver ]] || fail "no kernel with rdma_rxe in /boot and /lib/modules (apt-get install linux-image-amd64)"
command -v busybox >/dev/null || fail "busybox missing (apt-get install busybox-static)"
file -L "$(command -v busybox)" 2>/dev/null | grep -q "statically linked" ||
  fail "busybox is not static (apt-get install busybox-static)"

cache=$cache_root/$kver
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9  # concurrent labs build once
kernel=$cache/vmlinux initrd=$cache/initramfs.cpio.gz
stamp="$(stat -c %Y "/boot/vmlinuz-$kver") $(md5sum "$0" "$(dirname "$0")/rxe_initramfs_init" | md5sum)"
if [[ -s $kernel && -s $initrd && "$(cat "$cache/stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "$kernel $initrd"
  exit 0
fi

# The ELF is xz-compressed inside the bzImage: find the xz magic and unpack
# the first stream (what follows it is padding and trailers).
off=$(grep -aob $'\xfd7zXZ\x00' "/boot/vmlinuz-$kver" | head -1 | cut -d: -f1)
[[ -n $off ]] || fail "no xz stream in /boot/vmlinuz-$kver"
tail -c +$((off + 1)) "/boot/vmlinuz-$kver" | xz -dc --single-stream >"$kernel.tmp" 2>/dev/null || true
head -c 4 "$kernel.tmp" | grep -q ELF || fail "could not extract the kernel ELF from /boot/vmlinuz-$kver"
mv "$kernel.tmp" "$kernel"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,newroot,lib/mod}
cp "$(command -v busybox)" "$work/bin/busybox"
# Dependency order (modules.dep): virtio net and 9p to reach the host root,
# overlay for a writable view of it. Built-in ones have no file: skipped.
order=""
for m in virtio_pci_legacy_dev virtio_pci_modern_dev virtio_ring virtio virtio_pci failover \
  net_failover virtio_net 9pnet 9pnet_virtio netfs fscache 9p overlay; do
  f=$(modinfo -k "$kver" -n "$m" 2>/dev/null) || continue
  [[ -f $f ]] || continue
  case $f in
    *.xz) xz -dc "$f" >"$work/lib/mod/$m.ko" ;;
    *.zst) zstd -qdc "$f" >"$work/lib/mod/$m.ko" ;;
    *) cp "$f" "$work/lib/mod/$m.ko" ;;
  esac
  order+="$m "
done
echo "$order" >"$work/modules.order"
cp "$(dirname "$0")/rxe_initramfs_init" "$work/init"
chmod +x "$work/init"
(cd "$work" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd.tmp"
mv "$initrd.tmp" "$initrd"
echo "$stamp" >"$cache/stamp"
echo "$kernel $initrd"
