#!/usr/bin/env bash
# The front door, as a new user meets it: install the build into a scratch
# prefix, then with nothing but `pkg-config ibbcast` compile every installed
# header on its own (ibbcast.h also as C), build and run the examples (the C
# one as a job of three processes), and start the installed tool from that
# prefix (no LD_LIBRARY_PATH).
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(realpath "$1") src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

DESTDIR=$tmp/root meson install -C "$build" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "meson install"; }
pc=$(find "$tmp/root" -name ibbcast.pc | head -1)
[[ -n $pc ]] || fail "no ibbcast.pc installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
root=$tmp/root$prefix
export PKG_CONFIG_PATH=$(dirname "$pc")
pcx() { pkg-config --define-variable=prefix="$root" "$@" ibbcast; }
cflags=$(pcx --cflags) || fail "pkg-config --cflags ibbcast"
libs=$(pcx --libs) || fail "pkg-config --libs ibbcast"
echo "cflags: $cflags"
echo "libs:   $libs"
# Nothing of the backends reaches a consumer.
for bad in rte_config -march dpdk libnl dbus pmix ucx; do
  [[ $cflags$libs != *$bad* ]] || fail "pkg-config hands consumers '$bad'"
done

# Every installed C++ header compiles on its own; the C API header as C.
inc=$root/include
n=0
while IFS= read -r h; do
  rel=${h#"$inc"/}
  if [[ $rel == ibbcast/ibbcast.h ]]; then
    echo "#include <$rel>" | cc -std=c99 -fsyntax-only -Wall -Wextra -Werror -x c $cflags - ||
      fail "$rel does not compile as C"
    echo "#include <$rel>" | c++ -std=c++20 -fsyntax-only -Wall -Werror -x c++ $cflags - ||
      fail "$rel does not compile as C++"
  elif [[ $rel == ibbcast/ibbcast_mpi.h ]]; then
    echo "#include <$rel>" | mpicc.mpich -fsyntax-only -x c $cflags - ||
      fail "$rel does not compile as C"
  else
    echo "#include <$rel>" | c++ -std=c++20 -fsyntax-only -Wall -Werror -x c++ $cflags - ||
      fail "$rel does not compile on its own"
  fi
  n=$((n + 1))
done < <(find "$inc/ibbcast" -name '*.h' -o -name '*.hpp' | sort)
echo "$n installed headers compile on their own"
# The API is the whole of what installs: the C and C++ headers (status.hpp
# is part of the C++ one) and the MPI adapter's.
want="ibbcast/ibbcast.h ibbcast/ibbcast.hpp ibbcast/ibbcast_mpi.h ibbcast/status.hpp"
got=$(cd "$inc" && find . -type f | sed 's#^\./##' | sort | tr '\n' ' ' | sed 's/ $//')
[[ $got == "$want" ]] ||
  fail "installed headers are '$got', not the API's '$want'"

# The shared library exports the API and nothing of its insides: every
# symbol it defines in text is ibbcast_* (C) or the C++ API's (Group,
# Status, errc_name, Release, make_*).
lib=$(find "$root" -name 'libibbcast.so.*.*' | head -1)
[[ -n $lib ]] || fail "no libibbcast.so installed"
extra=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | c++filt |
  grep -vE '^ibbcast_[a-z_]+$|^ibbcast::(Group::[a-z_~A-Z]+|Status::to_string|errc_name|Release::operator\(\)|make_bootstrap|make_transport|make_local_ranks)(\[abi:cxx11\])?\(' || true)
[[ -z $extra ]] || fail "libibbcast.so exports more than the API: $(echo "$extra" | head -5)"
echo "libibbcast.so exports $(nm -D --defined-only "$lib" | awk '$2 == "T"' | wc -l) functions, all of the API"

# The example, built outside the tree, runs.
libdir=$(pcx --variable=libdir)
c++ -std=c++20 -o "$tmp/bcast_threads" "$src/examples/bcast_threads.cc" $cflags $libs -pthread \
  -Wl,-rpath,"$libdir" || fail "examples/bcast_threads.cc does not build against the installation"
"$tmp/bcast_threads" || fail "the example failed"
if "$root/bin/ibbcast" run 2>&1 | grep -q "this build has no"; then
  echo "this build has no UCX: the C example needs a reliable channel, not run"
else
  cc -std=c11 -Wall -Wextra -Werror -o "$tmp/bcast_c" "$src/examples/bcast_c.c" $cflags $libs \
    -Wl,-rpath,"$libdir" || fail "examples/bcast_c.c does not build against the installation"
  "$src/examples/run_job.sh" 3 "$tmp/bcast_c" || fail "the C example failed"
  # And as a user starts a job: mpirun, one rank per host of the namespace fabric.
  if command -v mpirun >/dev/null; then
    "$src/examples/run_job.sh" --mpirun 3 "$tmp/bcast_c" || fail "the C example failed under mpirun"
  fi
fi

# The installed tool starts from this prefix.
env -u LD_LIBRARY_PATH "$root/bin/ibbcast" info >"$tmp/info.log" 2>&1 ||
  { cat "$tmp/info.log"; fail "the installed ibbcast does not start from $prefix"; }
[[ -f $root/share/doc/ibbcast/LICENSE ]] || fail "no LICENSE installed"
man=$(find "$root" -path '*man1/ibbcast.1' | head -1)
[[ -n $man ]] || fail "no man page installed"
MANWIDTH=80 man -l "$man" 2>/dev/null | grep "ibbcast stage" >/dev/null || fail "the man page does not read"
[[ -f $root/share/bash-completion/completions/ibbcast.bash ]] || fail "no bash completion installed"
echo "install: headers, pkg-config, example and tool work from a scratch prefix"
