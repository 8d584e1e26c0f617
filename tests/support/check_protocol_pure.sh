#!/bin/bash
# core/protocol is the sans-I/O broadcast: it takes events and returns
# actions, so it may not read a clock, log, touch a file, socket or thread,
# nor include the runtime, the models or a backend. Fails naming each line
# that does.
set -u
root=${1:?usage: check_protocol_pure.sh SOURCE_ROOT}
dir=$root/core/protocol
[ -d "$dir" ] || { echo "no $dir" >&2; exit 1; }
forbidden_includes='"core/runtime/|"core/model/|"transports/|"verbs/|"dpdk/|"mpi-adapter/|<thread>|<mutex>|<condition_variable>|<future>|<fstream>|<iostream>|<cstdio>|<stdio.h>|<filesystem>|<poll.h>|<unistd.h>|<fcntl.h>|<sys/|<netinet/|<arpa/|<infiniband/|<rte_|<ucp/|<mpi.h>|<pmix'
forbidden_calls='steady_clock|system_clock|high_resolution_clock|getenv|getrandom|std::cout|std::cerr|printf\(|fopen|::now\('
bad=0
while IFS= read -r hit; do echo "core/protocol may not include this: $hit"; bad=1; done \
  < <(grep -nE "^#include ($forbidden_includes)" "$dir"/*.h "$dir"/*.cc | sed "s#^$root/##")
while IFS= read -r hit; do echo "core/protocol may not call this: $hit"; bad=1; done \
  < <(grep -nE "$forbidden_calls" "$dir"/*.h "$dir"/*.cc | grep -vE '^[^:]+:[0-9]+:\s*//' | sed "s#^$root/##")
n=$(ls "$dir"/*.h "$dir"/*.cc | wc -l)
[ "$n" -ge 20 ] || { echo "expected the protocol's 20+ files in $dir, found $n"; bad=1; }
[ $bad = 0 ] && echo "core/protocol: $n files, no clock, log, I/O or runtime include"
exit $bad
