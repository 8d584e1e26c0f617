#!/usr/bin/env bash
# Installs what ibbcast needs to build and test on Debian 12. Idempotent: skips
# apt-get when everything is already there (CI may run on a fresh machine).
set -euo pipefail
pkgs=(meson ninja-build pkg-config g++ clang clang-format libclang-rt-14-dev
      libgtest-dev libgmock-dev libbenchmark-dev iproute2 nftables python3 libssl-dev
      libucx-dev libpmix-dev openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran
      dpdk-dev libdpdk-dev
      libibverbs-dev librdmacm-dev rdma-core ibverbs-utils rdmacm-utils perftest
      qemu-system-x86 linux-image-amd64 busybox-static xz-utils cpio file
      slurm-wlm munge
      iperf3 ucx-utils)  # the benchmark scripts' references (bench_fastpath.sh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  # Wait for another apt-get (a second checkout installing at the same time)
  # rather than fail on its lock.
  lock=(-o DPkg::Lock::Timeout=900)
  $SUDO apt-get "${lock[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${lock[@]}" install -y -qq "${missing[@]}" >/dev/null
fi
