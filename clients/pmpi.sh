# The profiling interface: a library defining MPI_Allreduce (counting, forwarding to
# PMPI_Allreduce) is LD_PRELOADed into an unchanged program through mpiexec -genv, for
# a program built by shmpi's mpicc and one built by MPICH's. Without the preload the
# same program must notice that nothing is interposed.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
out=$P/clients/pmpi
mkdir -p "$out"
"$P/bin/mpicc" -Wall -Werror -O2 -shared -fPIC -o "$out/libcount.so" clients/pmpi/count_allreduce.c
"$P/bin/mpicc" -Wall -Werror -O2 -o "$out/prog" clients/pmpi/prog.c -ldl
mpicc.mpich -Wall -O2 -o "$out/prog-mpich" clients/pmpi/prog.c -ldl
for prog in prog prog-mpich; do
  for np in 1 3; do
    echo "== $prog np=$np with LD_PRELOAD"
    timeout 120 "$P/bin/mpiexec" -n $np --timeout 60 -genv LD_PRELOAD "$out/libcount.so" \
      "$out/$prog" | tee "$out/log"
    n=$(grep -c '^pmpi: rank [0-9]*: 5 MPI_Allreduce calls$' "$out/log" || true)
    [ "$n" = "$np" ] || { echo "FAIL: expected $np lines from the profiling library's MPI_Finalize, got $n"; exit 1; }
  done
  echo "== $prog np=2 without LD_PRELOAD (must exit 2)"
  set +e
  timeout 120 "$P/bin/mpiexec" -n 2 --timeout 60 "$out/$prog"
  rc=$?
  set -e
  [ $rc != 0 ] || { echo "FAIL: the program claims interposition without the library"; exit 1; }
done
echo "pmpi: ok"
