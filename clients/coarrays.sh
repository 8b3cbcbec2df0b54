# Coarray Fortran, unchanged: clients/coarrays/coarrays.f90 compiled by gfortran
# -fcoarray=lib and linked against Debian's OpenCoarrays for MPICH (libcaf_mpich.so.3,
# which records MPICH's libmpich.so.12 and does all its work with MPI one-sided
# communication) runs under MPICH's mpiexec for the reference output, then under shmpi's
# mpiexec, which puts build/lib (shmpi's libmpich.so.12) first on the library path. Both
# runs must exit 0 with one line per image, and the sorted lines must be equal.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
out=$P/clients/coarrays
caflib=/usr/lib/x86_64-linux-gnu/open-coarrays/mpich/lib
np=4
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.out "$out"/*.raw "$out"/*.err

echo "== build"
gfortran -fcoarray=lib -O2 -Wall -J "$out" -o "$out/prog" clients/coarrays/coarrays.f90 \
  -L"$caflib" -lcaf_mpich
readelf -d "$out/prog" | grep -q 'NEEDED.*\[libcaf_mpich\.so\.3\]' ||
  fail "the program does not record libcaf_mpich.so.3"
sys=$(LD_LIBRARY_PATH= ldd "$out/prog" | awk '$1 == "libmpich.so.12" {print $3}')
case "$sys" in
  /usr/lib/*|/lib/*) ;;
  *) fail "libcaf_mpich.so.3 does not find MPICH's libmpich.so.12 (got '$sys')" ;;
esac
ours=$(LD_LIBRARY_PATH=$P/lib ldd "$out/prog" | awk '$1 == "libmpich.so.12" {print $3}')
[ -n "$ours" ] && [ "$ours" -ef "$P/lib/libmpich.so.12" ] ||
  fail "with $P/lib first, libmpich.so.12 resolves to '$ours'"

# MPICH 4.0.2 (ch4, shared memory) computes the remote address of a window from
# MPI_Win_allocate wrongly when its size is not a multiple of 16 bytes: gets and puts
# reach the neighbouring process's memory. MPIR_CVAR_NOLOCAL=1 makes it go through its
# network path instead, where the results are right.
# UCX (under MPICH) logs warnings to standard output: UCX_LOG_LEVEL=error, and the
# reference keeps only the lines that are not UCX's.
echo "== MPICH, np=$np (reference)"
if ! LD_LIBRARY_PATH= MPIR_CVAR_NOLOCAL=1 UCX_LOG_LEVEL=error timeout 300 \
    mpiexec.mpich -n $np "$out/prog" >"$out/mpich.raw" 2>"$out/mpich.err"; then
  cat "$out/mpich.raw"; tail -20 "$out/mpich.err"
  fail "the reference run under MPICH failed"
fi
grep -Ev '^\[[0-9.]+\] +\[[^]]*\] .* UCX ' "$out/mpich.raw" >"$out/mpich.out" || true
cat "$out/mpich.out"
n=$(grep -c '^image [0-9]* of '$np': [0-9]* checks passed$' "$out/mpich.out" || true)
[ "$n" = $np ] || fail "MPICH: expected $np lines 'image I of $np: K checks passed', got $n"

echo "== shmpi, np=$np"
set +e
timeout 300 "$P/bin/mpiexec" -n $np --timeout 240 "$out/prog" >"$out/shmpi.out"
rc=$?
set -e
cat "$out/shmpi.out"
[ $rc = 0 ] || fail "under shmpi the program exited with status $rc"
if ! diff <(sort "$out/mpich.out") <(sort "$out/shmpi.out"); then
  fail "the output under shmpi differs from MPICH's (sorted; < MPICH, > shmpi)"
fi
echo "coarrays: ok"
