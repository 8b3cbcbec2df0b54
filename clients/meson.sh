# Meson builds clients/meson against an installed and moved tree: dependency('mpi')
# through the wrappers (meson must report shmpi's version) and dependency('shmpi') /
# dependency('mpi-fort') through pkg-config. The programs run as singletons and under
# the tree's mpiexec.
set -euo pipefail
command -v meson >/dev/null && command -v ninja >/dev/null \
  || { echo "FAIL: meson or ninja is not installed (make deps)"; exit 1; }
root=$PWD
. clients/installed_tree.bash
export PATH=$T/bin:$PATH MPICC=$T/bin/mpicc MPIFC=$T/bin/mpifort
export PKG_CONFIG_PATH=$T/lib/pkgconfig
timeout 300 meson setup "$tmp/build" clients/meson | tee "$tmp/setup.log"
# meson picks the config tool with the highest version among $MPICC and mpicc on PATH:
# both are shmpi's here, and the version it reads must be shmpi's.
grep -q "config-tool mpi: C $V, Fortran $V" "$tmp/setup.log" || fail "meson did not read shmpi $V from the wrappers"
grep -q "pkg-config shmpi $V (MPI 3.1)" "$tmp/setup.log" || fail "meson's pkg-config shmpi"
grep -E "mpicc|mpifort" "$tmp/build/meson-logs/meson-log.txt" | grep -q "$T/bin/" \
  || fail "meson did not run the moved tree's wrappers"
timeout 300 meson compile -C "$tmp/build"
cd "$tmp"
for p in hello_c hello_f hello_c_pc hello_f_pc; do
  out=$(LD_LIBRARY_PATH= timeout 60 "$tmp/build/$p") || fail "$p without mpiexec: $out"
  case "$out" in *"np=1 MPI 3.1"*": ok"*) ;; *) fail "$p without mpiexec: $out";; esac
  out=$(timeout 60 "$T/bin/mpiexec" -n 3 --timeout 30 "$tmp/build/$p") || fail "$p np=3: $out"
  echo "$out"
  case "$out" in *"np=3 MPI 3.1"*": ok"*) ;; *) fail "$p np=3: $out";; esac
done
for p in boz boz_pc; do
  out=$(timeout 60 "$T/bin/mpiexec" -n 2 --timeout 30 "$tmp/build/$p") || fail "$p np=2: $out"
  echo "$out" | grep -qx "REAL, INTEGER and DOUBLE PRECISION buffers through one MPI_SEND: pairs=1 failures=0" \
    || fail "$p np=2: $out"
done
cd "$root"
echo "meson: ok"
