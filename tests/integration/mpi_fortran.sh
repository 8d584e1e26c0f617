#!/usr/bin/env bash
# Fortran MPI programs (tests/mpi/fortran_check*.f90) built with the MPI's own
# compiler wrapper, as a user builds them, then run like mpi_adapter.sh's
# `fortran` mode: adapter preloaded, every element checked on every rank, and
# the adapter's finalize statistics must show that ibbcast carried the calls.
# Usage: mpi_fortran.sh IMPL ADAPTER_LIB SOURCE
set -euo pipefail
impl=$1 lib=$(realpath "$2") src=$(realpath "$3")
here=$(cd "$(dirname "$0")/.." && pwd)
fc=mpif90.$impl
command -v "$fc" >/dev/null || { echo "FAIL: no $fc (gfortran and the MPI's Fortran wrapper)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && "$fc" -O1 -o prog "$src")
"$here/integration/mpi_adapter.sh" "$impl" "$lib" "$dir/prog" fortran
