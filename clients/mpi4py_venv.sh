# Sourced by mpi4py.sh and mpi4py_suite.sh: sets $venv to a venv under
# build/clients/venv with mpi4py built from source against shmpi (MPICC=build/bin/mpicc
# pip install --no-binary mpi4py; as mpi.h defines neither MPICH_NAME nor OPEN_MPI,
# its build probes every MPI symbol) and numpy, reused while mpi.h is unchanged, and
# checks that mpi4py's extension loads shmpi's libmpi.so.12. Needs $P (the prefix).
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
