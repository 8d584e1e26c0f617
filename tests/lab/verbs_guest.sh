#!/usr/bin/env bash
# Runs in each Soft-RoCE guest of tests/lab/rxe_lab.sh (one rank per guest):
# the steps of one verbs scenario, each with its own TCP bootstrap port on
# guest 0. Every step asserts what this rank received (the conformance
# checks and `ibbcast run` compare bytes); any failure makes the guest fail.
# Usage: verbs_guest.sh BUILD_DIR STEP...
#   STEP: conformance (every check over verbs + UCX), conformance-ud (stage 2
#   over the UD channel instead; no event-fd check: that channel has no fd
#   yet, a waiting rank naps), algorithms, algorithms-ud (the
#   every-algorithm check only), run (ibbcast run, 1 MiB x 5, every rank
#   checks its bytes), udp (the conformance checks over IP multicast on the
#   same link), kill (rank 1 dies mid-broadcast: every survivor returns within
#   30 s, ok or with peer_failed/timed_out, and rank 2, which depends on it
#   under loss, must not complete), bench-verbs / bench-verbs-ud /
#   bench-udp (ibbcast bench CSV to IBBCAST_LAB_OUT), cycles-N (the leak
#   check alone over N group create/free cycles: issue 9's long runs),
#   run-ef (ibbcast run with verbs_traffic_class 184, for rxe_lab.sh --expect-ef)
set -uo pipefail
build=$1
shift
: "${IBBCAST_LAB_RANK:?run me through rxe_lab.sh}"
export IBBCAST_BOOTSTRAP_RANK=$IBBCAST_LAB_RANK IBBCAST_BOOTSTRAP_SIZE=$IBBCAST_LAB_SIZE IBBCAST_BOOTSTRAP=tcp
export IBBCAST_VERBS_NETDEV=$IBBCAST_LAB_NETDEV IBBCAST_UDP_INTERFACE=$IBBCAST_LAB_NETDEV
export IBBCAST_TIMEOUT=${IBBCAST_TIMEOUT:-30s}
# The conformance checks' large broadcasts at 4 MiB and the leak check over
# 10 group cycles instead of 16 MiB and 40: under TCG, 4 x 16 MiB over the UD
# channel took 195 s and 40 cycles over UCX 99 s of a scenario's 600. The
# leak check compares a snapshot after the cycles with one before them, so a
# per-cycle leak shows after one; the namespace fabric runs the full sizes.
export IBBCAST_TEST_LARGE_MIB=${IBBCAST_TEST_LARGE_MIB:-4} IBBCAST_TEST_CYCLES=${IBBCAST_TEST_CYCLES:-10}
port=29500
rc=0
step_ok() { echo "STEP $1: ok"; }
step_fail() { echo "STEP $1: FAIL ($2)"; rc=1; }

conformance() {  # name transport filter
  local out expect
  # As many passed checks as the runner's registry lists for the filter.
  expect=$("$build/tests/conformance_procs" --gtest_list_tests --gtest_filter="$3" | grep -c '^  ')
  # Also to a file as it runs: a step killed at the lab's timeout still shows
  # how far each rank got.
  out=$("$build/tests/conformance_procs" --gtest_color=no --gtest_filter="$3" 2>&1 |
    tee "$IBBCAST_LAB_OUT/step-$1.log")
  echo "$out"
  if [[ $expect -gt 0 ]] && grep -qF "[  PASSED  ] $expect test" <<<"$out" &&
    ! grep -qE "SKIPPED|FAILED" <<<"$out"; then
    step_ok "$1"
  else
    step_fail "$1" "expected $expect passed checks"
  fi
}

# Zero-copy receives (rank 0's report names every rank). run-inplace (no
# loss): each receiver opened landing zones, fragments landed in place
# somewhere, and a receiver none of whose zones closed used every landed
# datagram in place (mc_landed = zero_copy). run-closed (30 % multicast loss):
# a receiver that entered after every datagram it will get had arrived has
# nothing to land, so only some receiver must have opened a zone; every
# receiver that opened one saw loss close a zone early (the flush path), and
# bytes stayed exact.
receivers_landed() {  # step output
  local r line recv zc landed in_place=0 opened=0
  for ((r = 1; r < IBBCAST_LAB_SIZE; r++)); do
    line=$(grep "^rank $r verbs:" <<<"$2")
    recv=$(grep "^rank $r receives:" <<<"$2")
    if [[ $line != *mc_landings=[1-9]* ]]; then
      [[ $1 == run-closed ]] && continue
      echo "rank $r opened no landing zone: $line"
      return 1
    fi
    opened=$((opened + 1))
    zc=$(sed -n 's/.*zero_copy=\([0-9]*\).*/\1/p' <<<"$recv")
    landed=$(sed -n 's/.*mc_landed=\([0-9]*\).*/\1/p' <<<"$line")
    in_place=$((in_place + ${zc:-0}))
    if [[ $1 == run-inplace && $line != *mc_landings_closed=* ]] && ((${landed:-0} != ${zc:-0})); then
      echo "rank $r: no zone closed, yet ${landed:-0} landed and ${zc:-0} used in place: $recv"
      return 1
    fi
    if [[ $1 == run-closed && $line != *mc_landings_closed=[1-9]* ]]; then
      echo "rank $r: no zone closed under loss: $line"
      return 1
    fi
  done
  ((opened > 0)) || { echo "no receiver opened a landing zone"; return 1; }
  [[ $1 != run-inplace ]] || ((in_place > 0)) || { echo "no fragment landed in place"; return 1; }
}

for step in "$@"; do
  export IBBCAST_BOOTSTRAP_ROOT=$IBBCAST_LAB_ROOT_ADDR:$port
  port=$((port + 1))
  echo "=== step $step (rank $IBBCAST_LAB_RANK of $IBBCAST_LAB_SIZE)"
  case $step in
    conformance) IBBCAST_TRANSPORT=verbs conformance "$step" verbs '*' ;;
    conformance-ud)
      IBBCAST_TRANSPORT=verbs IBBCAST_VERBS_RELIABLE=ud conformance "$step" verbs '*:-*EventFd*' ;;
    algorithms) IBBCAST_TRANSPORT=verbs conformance "$step" verbs '*EveryAlgorithm*:*Authenticated*' ;;
    algorithms-ud)
      IBBCAST_TRANSPORT=verbs IBBCAST_VERBS_RELIABLE=ud conformance "$step" verbs '*EveryAlgorithm*:*Authenticated*' ;;
    udp) IBBCAST_TRANSPORT=udp conformance "$step" udp '*' ;;
    cycles-*)
      IBBCAST_TRANSPORT=verbs IBBCAST_TEST_CYCLES=${step#cycles-} conformance "$step" verbs \
        '*GroupCycles*' ;;
    run-ef)
      # The datagrams marked EF (rxe_lab.sh --expect-ef checks the wire).
      out=$(IBBCAST_VERBS_TRAFFIC_CLASS=184 "$build/tools/ibbcast" run --transport verbs \
        --algorithm two_stage --size 1m --iterations 3 2>&1)
      st=$?
      echo "$out"
      [[ $st -eq 0 ]] && step_ok "$step" || step_fail "$step" "ibbcast run exit $st" ;;
    run | run-ud | run-inplace | run-closed)
      [[ $step == run-ud ]] && export IBBCAST_VERBS_RELIABLE=ud
      out=$("$build/tools/ibbcast" run --transport verbs --algorithm two_stage --size 1m \
        --iterations 5 2>&1)
      st=$?
      echo "$out"
      # The root sends 1 MiB from the registered buffer (verbs_zero_copy):
      # zero-copy sends counted, no fragment copied into a slot.
      root=$(grep "^rank 0 verbs:" <<<"$out")
      if [[ $st -ne 0 ]]; then
        step_fail "$step" "ibbcast run exit $st"
      elif [[ $IBBCAST_LAB_RANK == 0 && ($root != *mc_zero_copy_sends=[1-9]* || $root == *mc_send_copies=*) ]]; then
        step_fail "$step" "the root copied its fragments: $root"
      elif [[ $IBBCAST_LAB_RANK == 0 ]] && ! why=$(receivers_landed "$step" "$out"); then
        step_fail "$step" "$why"
      else
        step_ok "$step"
      fi
      unset IBBCAST_VERBS_RELIABLE ;;
    kill)
      out=$("$build/tools/ibbcast" run --transport verbs --algorithm two_stage --size 1m \
        --iterations 3 --kill-rank 1 2>&1)
      st=$?
      echo "$out"
      me=$IBBCAST_LAB_RANK
      line=$(grep "^rank $me result:" <<<"$out")
      ms=$(sed -n 's/.* after \([0-9]*\).*/\1/p' <<<"$line")
      if [[ $me == 1 ]]; then
        [[ $st -ne 0 ]] && step_ok "$step" || step_fail "$step" "rank 1 should have died"
      elif [[ -z $line ]]; then
        step_fail "$step" "no result line (hang?)"
      elif ((${ms:-99999} >= 30000)); then
        step_fail "$step" "took $ms ms"
      elif [[ $me -gt 1 ]] && grep -q "result: ok" <<<"$line"; then
        step_fail "$step" "completed without its predecessor"
      elif grep -qE "result: (ok|peer_failed|timed_out)" <<<"$line"; then
        step_ok "$step"
      else
        step_fail "$step" "$line"
      fi ;;
    bench-verbs | bench-verbs-ud | bench-udp)
      # Two-stage (multicast + stage 2) and binomial (stage 2 alone: the
      # reliable channel's own speed) per size; CSV from rank 0.
      t=${step#bench-}
      [[ $t == verbs-ud ]] && export IBBCAST_VERBS_RELIABLE=ud
      if "$build/tools/ibbcast" bench --transport "${t%-ud}" --max-only --iterations 10 \
        --algorithms two_stage,binomial --sizes 1k,64k,1m >"$IBBCAST_LAB_OUT/bench-$t.csv"; then
        cat "$IBBCAST_LAB_OUT/bench-$t.csv"
        step_ok "$step"
      else
        step_fail "$step" "ibbcast bench exit $?"
      fi
      unset IBBCAST_VERBS_RELIABLE ;;
    *) step_fail "$step" "unknown step"; exit 2 ;;
  esac
done
exit $rc
