# mpi4py built from source against shmpi, with numpy (clients/mpi4py_venv.sh);
# clients/mpi4py_test.py runs at np 1..4 under shmpi's mpiexec. No network or a failed
# build fails this case.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
. clients/mpi4py_venv.sh
for np in 1 2 3 4; do
  timeout 120 "$P/bin/mpiexec" -n $np --timeout 60 "$venv/bin/python" clients/mpi4py_test.py
done
echo "mpi4py: ok"
