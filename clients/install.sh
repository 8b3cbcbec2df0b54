# `make install PREFIX=...` into a temporary directory; the tree is then moved and used
# from its new place only. C and Fortran programs built by its wrappers and by
# pkg-config (shmpi.pc, mpi-fort.pc) run under its mpiexec and as singletons (no
# mpiexec, an empty LD_LIBRARY_PATH, another working directory); the F77 program of
# fortran_tests/boz_mismatch_f77.f (BOZ constants, mismatched buffers) builds with the
# moved mpif77 and its output is checked at np 2.
set -euo pipefail
unset SHMPI_PREFIX   # the wrappers would take it over their own place
root=$PWD
V=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shmpi-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 600 make -s --no-print-directory install PREFIX="$tmp/staged" >/dev/null
for f in bin/mpicc bin/mpicxx bin/mpif77 bin/mpif90 bin/mpifort bin/mpiexec bin/mpirun \
    include/mpi.h include/mpif.h include/mpi.mod lib/libmpi.so.12 lib/libmpi.so \
    lib/libmpifort.so.12 lib/libmpifort.so lib/pkgconfig/shmpi.pc \
    lib/pkgconfig/shmpi-fort.pc lib/pkgconfig/mpi.pc lib/pkgconfig/mpi-c.pc \
    lib/pkgconfig/mpi-cxx.pc lib/pkgconfig/mpi-fort.pc; do
  [ -e "$tmp/staged/$f" ] || fail "make install did not install $f"
done
mkdir -p "$tmp/moved/deeper" "$tmp/work" "$tmp/cwd"
mv "$tmp/staged" "$tmp/moved/deeper/shmpi"
T=$(cd "$tmp/moved/deeper/shmpi" && pwd -P)
echo "== installed, then moved to $T"

# The Fortran library finds the C library next to it, wherever that is.
readelf -d "$T/lib/libmpifort.so.12" | grep -q 'RUNPATH.*\[\$ORIGIN\]' \
  || fail "libmpifort.so.12 has no RUNPATH \$ORIGIN: $(readelf -d "$T/lib/libmpifort.so.12" | grep PATH)"
# The wrappers answer for their new place, with shmpi's version.
for w in mpicc mpif90; do
  show=$("$T/bin/$w" -show)
  case "$show" in *"-I$T/include "*"-L$T/lib "*) ;; *) fail "$w -show: $show";; esac
  case "$show" in *staged*) fail "$w -show names the old place: $show";; esac
done
[ "$("$T/bin/mpicc" -showme:version)" = "mpicc: shmpi $V (MPI 3.1, Language: C)" ] \
  || fail "mpicc -showme:version: $("$T/bin/mpicc" -showme:version)"
export PKG_CONFIG_PATH=$T/lib/pkgconfig
[ "$(pkg-config --modversion shmpi)" = "$V" ] || fail "pkg-config --modversion shmpi"
[ "$(pkg-config --variable=mpi_version mpi-fort)" = 3.1 ] || fail "mpi_version of mpi-fort.pc"
[ "$(cd "$(pkg-config --variable=prefix mpi-c)" && pwd -P)" = "$T" ] \
  || fail "mpi-c.pc's prefix is not the moved tree: $(pkg-config --variable=prefix mpi-c)"

echo "== building in $tmp/work"
cd "$tmp/work"
"$T/bin/mpicc" -Wall -Wextra -Werror -O2 -o hello_c "$root/clients/install/hello.c"
"$T/bin/mpif90" -Wall -O2 -o hello_f "$root/clients/install/hello.f90"
"$T/bin/mpif77" -O2 -o boz "$root/fortran_tests/boz_mismatch_f77.f" 2>/dev/null
# shellcheck disable=SC2046
cc -Wall -Werror $(pkg-config --cflags shmpi) -o hello_c_pc "$root/clients/install/hello.c" \
  $(pkg-config --libs shmpi)
# shellcheck disable=SC2046
gfortran $(pkg-config --cflags mpi-fort) -o hello_f_pc "$root/clients/install/hello.f90" \
  $(pkg-config --libs mpi-fort)

echo "== singletons from $tmp/cwd, LD_LIBRARY_PATH empty"
cd "$tmp/cwd"
for p in hello_c hello_f hello_c_pc hello_f_pc; do
  for lib in libmpi.so.12 libmpifort.so.12; do
    where=$(LD_LIBRARY_PATH= ldd "$tmp/work/$p" | awk -v l=$lib '$1 == l {print $3}')
    [ -z "$where" ] || [ "$(readlink -f "$where")" = "$T/lib/$lib" ] \
      || fail "$p loads $lib from $where"
  done
  out=$(LD_LIBRARY_PATH= timeout 60 "$tmp/work/$p") || fail "$p without mpiexec: $out"
  echo "$out"
  case "$out" in *"np=1 MPI 3.1"*": ok"*) ;; *) fail "$p without mpiexec: $out";; esac
done

echo "== under the moved mpiexec"
for np in 1 2 4; do
  for p in hello_c hello_f hello_c_pc hello_f_pc; do
    out=$(timeout 60 "$T/bin/mpiexec" -n $np --timeout 30 "$tmp/work/$p") || fail "$p np=$np: $out"
    case "$out" in *"np=$np MPI 3.1"*": ok"*) ;; *) fail "$p np=$np: $out";; esac
  done
done
out=$(timeout 60 "$T/bin/mpiexec" -n 2 --timeout 30 "$tmp/work/boz")
echo "$out"
[ "$out" = "BOZ constants: K=16 MASK=255 L=127
REAL, INTEGER and DOUBLE PRECISION buffers through one MPI_SEND: pairs=1 failures=0" ] \
  || fail "boz_mismatch_f77 at np 2"
echo "install: ok"
