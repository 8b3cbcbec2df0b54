# What an autoconf configure run with CC=mpicc (and F77=mpif77) checks, done by hand
# against an installed and moved tree: the compiler works and is GNU, its executables
# run, AC_SEARCH_LIBS(MPI_Init, [mpi mpich]) finds MPI_Init with no library added
# ("none required", the wrapper links it), AC_CHECK_HEADERS(mpi.h), the MPI version
# from the preprocessor, and Fortran's MPI_INIT link check with mpif77. Then the
# program builds with $CC and runs as a singleton and under the tree's mpiexec.
set -euo pipefail
root=$PWD
. clients/installed_tree.bash
export PATH=$T/bin:$PATH
CC=mpicc F77=mpif77 CFLAGS="-g -O2" FFLAGS="-g -O2"
cd "$tmp"
log=$tmp/config.log
check() { printf 'checking %s... ' "$1"; }

# AC_PROG_CC: the compiler's version in the log, a first program, and the GNU test.
{ $CC --version; $CC -v; } >>"$log" 2>&1 || fail "$CC --version / -v"
$CC --version | tail -n 1 | grep -q "^mpicc for shmpi version $V (MPI 3.1)$" \
  || fail "mpicc --version does not end with shmpi's version"
check "whether the C compiler works"
printf 'int main(void) { return 0; }\n' >conftest.c
$CC $CFLAGS conftest.c >>"$log" 2>&1 && [ -x a.out ] || fail "the C compiler cannot make a.out"
echo yes
check "whether we are cross compiling"
./a.out || fail "a.out does not run"
echo no
rm -f a.out
check "whether the compiler supports GNU C"
printf '#ifndef __GNUC__\nchoke me\n#endif\nint main(void) { return 0; }\n' >conftest.c
$CC -c $CFLAGS conftest.c >>"$log" 2>&1 || fail "not GNU C"
echo yes

# AC_SEARCH_LIBS(MPI_Init, [mpi mpich]): the prototype-free call autoconf generates,
# linked with no library first, then with each candidate.
check "for library containing MPI_Init"
cat >conftest.c <<'C'
/* Override any GCC internal prototype to avoid an error. */
char MPI_Init ();
int main (void) { return MPI_Init (); }
C
found=
for lib in "" -lmpi -lmpich; do
  if $CC -o conftest $CFLAGS conftest.c $lib >>"$log" 2>&1; then found=${lib:-"none required"}; break; fi
done
[ -n "$found" ] || fail "no library contains MPI_Init"
echo "$found"
[ "$found" = "none required" ] || fail "mpicc did not link the MPI library itself"
# The library names an explicit -l may ask for are there too.
$CC -o conftest $CFLAGS conftest.c -lmpich >>"$log" 2>&1 || fail "-lmpich does not link"

check "for mpi.h"
printf '#include <mpi.h>\nint main(void) { MPI_Comm c = MPI_COMM_WORLD; return c == MPI_COMM_NULL; }\n' >conftest.c
$CC -c $CFLAGS conftest.c >>"$log" 2>&1 || fail "mpi.h does not compile"
echo yes
check "the MPI version"
printf '#include <mpi.h>\nshmpi_mpi_version MPI_VERSION.MPI_SUBVERSION\n' >conftest.c
ver=$($CC -E conftest.c 2>>"$log" | sed -n 's/^shmpi_mpi_version \([0-9]*\) *\. *\([0-9]*\)$/\1.\2/p')
echo "$ver"
[ "$ver" = 3.1 ] || fail "MPI_VERSION.MPI_SUBVERSION is '$ver'"

# AC_PROG_F77 and the Fortran form of the MPI_Init search (AC_LANG_CALL).
check "for library containing MPI_INIT (Fortran 77)"
printf '      program main\n      call MPI_INIT\n      end\n' >conftest.f
$F77 -o conftest $FFLAGS conftest.f >>"$log" 2>&1 || fail "mpif77 does not link MPI_INIT"
echo "none required"

# The program itself, as `make` would build it.
$CC $CFLAGS -o hello_c "$root/clients/install/hello.c"
$F77 $FFLAGS -o boz "$root/fortran_tests/boz_mismatch_f77.f" 2>>"$log"
out=$(LD_LIBRARY_PATH= timeout 60 ./hello_c) || fail "hello_c without mpiexec: $out"
case "$out" in *"np=1 MPI 3.1"*": ok"*) ;; *) fail "hello_c without mpiexec: $out";; esac
out=$(timeout 60 mpiexec -n 2 --timeout 30 ./hello_c) || fail "hello_c np=2: $out"
echo "$out"
case "$out" in *"np=2 MPI 3.1"*": ok"*) ;; *) fail "hello_c np=2: $out";; esac
out=$(timeout 60 mpiexec -n 2 --timeout 30 ./boz) || fail "boz np=2: $out"
echo "$out" | grep -qx "REAL, INTEGER and DOUBLE PRECISION buffers through one MPI_SEND: pairs=1 failures=0" \
  || fail "boz np=2: $out"
cd "$root"
echo "autoconf: ok"
