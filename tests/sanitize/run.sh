#!/bin/sh
# Runs C test programs under valgrind memcheck (np 2) and built with AddressSanitizer.
# Usage: tests/sanitize/run.sh [quick]   (quick: 3 programs under valgrind only)
# Every run must exit 0; valgrind errors exit 9, ASan reports exit non-zero.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/build/bin
OUT=$ROOT/target/sanitize
mkdir -p "$OUT"
if [ "${1:-}" = quick ]; then
  VG="p2p_basic coll_reduce nbcoll"
  ASAN=""
else
  VG="p2p_basic coll_reduce coll_reduce_chain bcast_ring dtype_coll nbcoll comm_groups intercomm hostile posted alloc_mem"
  ASAN="p2p_basic coll_reduce coll_reduce_chain bcast_ring dtype_coll nbcoll comm_groups intercomm hostile stress posted alloc_mem"
fi
pass=0; fail=0
# The *_chain programs run the chain of large reductions on tiny slots, bcast_ring the
# ring broadcast on small ones (c_tests/LIST).
chain_env() {
  case $1 in
    *_chain) echo "SHMPI_CHAIN=1 SHMPI_SEGMENT=256" ;;
    bcast_ring) echo "SHMPI_BCAST_RING=1 SHMPI_SEGMENT=2048" ;;
  esac
}
run() { # name log command...
  name=$1; log=$2; shift 2
  t0=$(date +%s)
  if "$@" >"$log" 2>&1; then
    pass=$((pass + 1)); echo "PASS $name ($(( $(date +%s) - t0 ))s)"
  else
    fail=$((fail + 1)); echo "FAIL $name: exit $? ($(( $(date +%s) - t0 ))s), log $log"; tail -n 30 "$log" | sed 's/^/    /'
  fi
}
for p in $VG; do
  "$BIN/mpicc" -O1 -g -o "$OUT/$p" "$ROOT/c_tests/$p.c" || { fail=$((fail + 1)); continue; }
  args=""; [ "$p" = intercomm ] && args=""
  run "valgrind $p np=2" "$OUT/$p.valgrind.log" env SHMPI_TEST_QUICK=1 $(chain_env "$p") \
    "$BIN/mpiexec" -n 2 --timeout 600 valgrind -q --error-exitcode=9 --leak-check=no "$OUT/$p" $args
done
for p in $ASAN; do
  "$BIN/mpicc" -O1 -g -fsanitize=address -fno-omit-frame-pointer -o "$OUT/$p.asan" "$ROOT/c_tests/$p.c" || { fail=$((fail + 1)); continue; }
  for np in 2 3; do
    a=""; [ "$p" = stress ] && a=1000
    run "asan $p np=$np" "$OUT/$p.asan.$np.log" env SHMPI_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=0 $(chain_env "$p") \
      "$BIN/mpiexec" -n $np --timeout 300 "$OUT/$p.asan" $a
  done
done
echo "sanitize: $pass passed, $fail failed"
[ $fail -eq 0 ]
