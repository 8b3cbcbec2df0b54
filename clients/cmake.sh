# CMake's FindMPI, pointed at shmpi's wrappers, configures, builds and the programs
# run under shmpi's mpiexec. Then again against an installed and moved tree that
# FindMPI finds on PATH alone (its mpiexec, then the wrappers next to it), plus the
# programs built from pkg-config's shmpi and mpi-fort; they also run without mpiexec.
# Always configures afresh (it takes seconds).
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
out=$P/clients/cmake
command -v cmake >/dev/null || { echo "FAIL: cmake is not installed (make deps)"; exit 1; }
rm -rf "$out"
mkdir -p "$P/clients"
timeout 300 cmake -S clients/cmake -B "$out" -DMPI_C_COMPILER="$P/bin/mpicc" \
  -DMPI_Fortran_COMPILER="$P/bin/mpif90" -DMPIEXEC_EXECUTABLE="$P/bin/mpiexec" | tee "$out.log"
grep -q "MPI_C_LIBRARIES=$P/lib/libmpi.so" "$out.log" || { echo "FAIL: FindMPI did not pick shmpi's library"; exit 1; }
timeout 300 cmake --build "$out"
for np in 1 2 4; do
  timeout 60 "$P/bin/mpiexec" -n $np --timeout 30 "$out/hello_c"
  timeout 60 "$P/bin/mpiexec" -n $np --timeout 30 "$out/hello_f"
  timeout 60 "$P/bin/mpiexec" -n $np --timeout 30 "$out/boz_mismatch_f77"
done

echo "== against an installed, moved tree on PATH"
root=$PWD
. clients/installed_tree.bash
PATH=$T/bin:$PATH PKG_CONFIG_PATH=$T/lib/pkgconfig timeout 300 cmake -S clients/cmake \
  -B "$tmp/build" -DSHMPI_PKGCONFIG=ON | tee "$tmp/cmake.log"
grep -q "MPI_C_LIBRARIES=$T/lib/libmpi.so" "$tmp/cmake.log" || fail "FindMPI did not pick the moved tree's library"
grep -q "MPI_Fortran_LIBRARIES=.*$T/lib/libmpifort.so" "$tmp/cmake.log" || fail "FindMPI did not pick the moved libmpifort"
grep -q "MPI_C_VERSION=3.1 " "$tmp/cmake.log" || fail "FindMPI did not read MPI 3.1"
grep -q "pkg-config shmpi=$V mpi-fort=$V" "$tmp/cmake.log" || fail "pkg_check_modules did not find shmpi $V"
timeout 300 cmake --build "$tmp/build"
cd "$tmp"
for p in hello_c hello_f hello_c_pc hello_f_pc; do
  LD_LIBRARY_PATH= timeout 60 "$tmp/build/$p" | grep -Eq "np=1: (ok|T)$" || fail "$p without mpiexec"
  timeout 60 "$T/bin/mpiexec" -n 2 --timeout 30 "$tmp/build/$p" | grep -E "np=2: (ok|T)$" || fail "$p np=2"
done
cd "$root"
echo "cmake: ok"
