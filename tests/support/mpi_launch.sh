# Sourced: the launcher line of an MPI for a program with the adapter
# preloaded, shared by the adapter tests and the MPI benchmark.
# mpi_launch_line IMPL NP FABRIC PROGRAM [ARGS...]
#   uses the array `envs` (NAME=VALUE, passed to every rank); FABRIC=1 also
#   passes IBBCAST_NETNS_PREFIX (one namespace per rank).
mpi_launch_line() {
  local impl=$1 np=$2 fabric=$3 args=() e
  shift 3
  case $impl in
    openmpi)
      for e in "${envs[@]}"; do args+=(-x "$e"); done
      ((fabric)) && args+=(-x IBBCAST_NETNS_PREFIX)
      echo "mpirun --allow-run-as-root --oversubscribe -np $np ${args[*]} $*" ;;
    mpich)
      for e in "${envs[@]}"; do args+=(-genv "${e%%=*}" "${e#*=}"); done
      ((fabric)) && args+=(-genv IBBCAST_NETNS_PREFIX '$IBBCAST_NETNS_PREFIX')
      echo "mpiexec.mpich -n $np ${args[*]} $*" ;;
    *) echo "false unknown-impl-$impl" ;;
  esac
}

# mpi_launcher_present IMPL: fails with a message when the launcher is missing.
mpi_launcher_present() {
  case $1 in
    openmpi) command -v mpirun >/dev/null || { echo "FAIL: Open MPI's mpirun not installed"; return 1; } ;;
    mpich) command -v mpiexec.mpich >/dev/null || { echo "FAIL: mpiexec.mpich not installed"; return 1; } ;;
    *) echo "FAIL: unknown MPI $1"; return 1 ;;
  esac
}

# mpi_preload LIB: sets `preload` (sanitizer runtimes first when the adapter
# was built with them: the MPI program itself is not instrumented) and
# `asan` (extra environment for that case).
mpi_preload() {
  local sanitizers
  preload=$1 asan=()
  sanitizers=$(ldd "$1" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
  if [[ -n $sanitizers ]]; then
    preload="${sanitizers}$1"
    asan=(ASAN_OPTIONS=detect_leaks=0)
  fi
}
