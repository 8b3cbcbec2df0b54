# CMake's FindMPI, pointed at shmpi's wrappers, configures, builds and the programs
# run under shmpi's mpiexec. Always configures afresh (it takes seconds).
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
out=$P/clients/cmake
command -v cmake >/dev/null || { echo "FAIL: cmake is not installed (make deps)"; exit 1; }
rm -rf "$out"
timeout 300 cmake -S clients/cmake -B "$out" -DMPI_C_COMPILER="$P/bin/mpicc" \
  -DMPI_Fortran_COMPILER="$P/bin/mpif90" -DMPIEXEC_EXECUTABLE="$P/bin/mpiexec" | tee "$out.log"
grep -q "MPI_C_LIBRARIES=$P/lib/libmpi.so" "$out.log" || { echo "FAIL: FindMPI did not pick shmpi's library"; exit 1; }
timeout 300 cmake --build "$out"
for np in 1 2 4; do
  timeout 60 "$P/bin/mpiexec" -n $np --timeout 30 "$out/hello_c"
  timeout 60 "$P/bin/mpiexec" -n $np --timeout 30 "$out/hello_f"
done
echo "cmake: ok"
