# mpi4py built from source against shmpi (MPICC=build/bin/mpicc pip install
# --no-binary mpi4py; as mpi.h defines neither MPICH_NAME nor OPEN_MPI, its build probes
# every MPI symbol), with numpy, in a venv under build/clients/venv that is reused while
# mpi.h is unchanged. clients/mpi4py_test.py then runs at np 1..4 under shmpi's mpiexec.
# No network or a failed build fails this case.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
venv=$P/clients/venv
stamp=$(sha256sum "$P/include/mpi.h" | cut -d' ' -f1)
if [ "$(cat "$venv/.shmpi-mpi-h" 2>/dev/null)" != "$stamp" ] ||
   ! "$venv/bin/python" -c 'import mpi4py.MPI, numpy' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  MPICC=$P/bin/mpicc timeout 1500 "$venv/bin/pip" install --no-cache-dir -q \
    --no-binary mpi4py mpi4py numpy
  echo "$stamp" > "$venv/.shmpi-mpi-h"
fi
ext=$("$venv/bin/python" -c 'import mpi4py.MPI as m; print(m.__file__)')
deps=$(ldd "$ext")
case "$deps" in
  *"libmpi.so.12 => $P/lib/libmpi.so.12 "*) ;;
  *) echo "FAIL: $ext does not load shmpi's libmpi.so.12:"; echo "$deps"; exit 1 ;;
esac
for np in 1 2 3 4; do
  timeout 120 "$P/bin/mpiexec" -n $np --timeout 60 "$venv/bin/python" clients/mpi4py_test.py
done
echo "mpi4py: ok"
