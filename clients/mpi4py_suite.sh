# mpi4py's own test suite (test/ of the source release of the mpi4py version in the
# venv of clients/mpi4py_venv.sh, about 2000 tests of nearly every MPI function) at
# np 1, 2 and 4 under shmpi's mpiexec. Every test must pass or be skipped by mpi4py
# itself (it skips what the library does not export), except these, left out:
# - test_dynproc: its module probes MPI_Open_port at import time without catching
#   NotImplementedError (shmpi has no ports);
# - test_ulfm: without ULFM, mpi4py's Iagree is an MPI_Iallreduce, and the test then
#   calls it and MPI_Barrier in different orders on different ranks, which the
#   standard forbids; shmpi reports it (MPI_ERR_NOT_SAME) instead of matching them;
# - testContiguousBigMPI: expects an MPI-3.1 library to lack MPI_Type_contiguous_c
#   (shmpi reports MPI 3.1 and has the large-count functions).
# The universe is raised for the spawn tests: at np 4 each rank spawns 8 processes at
# once. Then its one-sided tests (test_rma, test_rma_nb, test_win, test_util_sync) once
# more at np 2 under SHMPI_DIRECT=0, where the members of MPI_Win_create and dynamic
# windows serve each other's accesses. No network or a failed download fails this case.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
. clients/mpi4py_venv.sh
ver=$("$venv/bin/python" -c 'import mpi4py; print(mpi4py.__version__)')
src=$P/clients/mpi4py-$ver
if [ ! -f "$src/test/main.py" ]; then
  rm -rf "$src" "$P/clients/sdist"
  timeout 600 "$venv/bin/pip" download --no-cache-dir -q --no-deps --no-binary :all: \
    "mpi4py==$ver" -d "$P/clients/sdist"
  tar -xzf "$P/clients/sdist/mpi4py-$ver.tar.gz" -C "$P/clients"
fi
for np in 1 2 4; do
  out=$P/clients/mpi4py-suite-np$np.log
  if ! timeout 900 "$P/bin/mpiexec" -n $np -usize 40 --timeout 800 "$venv/bin/python" \
      "$src/test/main.py" -q -e dynproc -e ulfm -x testContiguousBigMPI \
      > "$out" 2>&1; then
    echo "FAIL: mpi4py's test suite at np $np (log: $out):"
    tail -60 "$out"
    exit 1
  fi
  grep -E '^Ran |^OK' "$out" | sort -u
done
out=$P/clients/mpi4py-suite-served.log
if ! SHMPI_DIRECT=0 timeout 600 "$P/bin/mpiexec" -n 2 --timeout 500 "$venv/bin/python" \
    "$src/test/main.py" -q -i rma -i win -i util_sync > "$out" 2>&1; then
  echo "FAIL: mpi4py's one-sided tests at np 2 with SHMPI_DIRECT=0 (log: $out):"
  tail -60 "$out"
  exit 1
fi
grep -E '^Ran |^OK' "$out" | sort -u
echo "mpi4py suite: ok"
