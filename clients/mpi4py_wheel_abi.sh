# The standard-ABI variant of clients/mpi4py_wheel.sh: mpi4py's wheel with
# MPI4PY_MPIABI=mpiabi bound to libmpi_abi.so.1, the MPI 5.0 standard ABI. An expected
# failure while shmpi has no such library (or the pinned wheel no such module).
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
abi=mpiabi
lib=$P/lib/libmpi_abi.so.1
if [ ! -e "$lib" ]; then
  echo "expected failure: shmpi has no $(basename "$lib") (the MPI 5.0 standard ABI)" \
    "for the wheel's standard-ABI variant to bind to"
  exit 77
fi
. clients/mpi4py_wheel_run.sh
