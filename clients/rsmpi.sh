# rsmpi (the `mpi` crate from crates.io) built as its users build it, with
# MPICC=build/bin/mpicc: its build probes `mpicc -show`, compiles a C shim with the
# wrapper and runs bindgen over the whole mpi.h (libclang from Debian). The checked
# program then runs at np 1..4 under shmpi's mpiexec. The target directory under
# build/ keeps re-runs fast; no network or a failed build fails this case.
set -euo pipefail
P=${SHMPI_PREFIX:-$PWD/build}
export MPICC=$P/bin/mpicc
export CARGO_TARGET_DIR=$P/clients/rsmpi-target
# rsmpi's build (build-probe-mpi) takes the -I/-L/-l flags from `$MPICC -show` alone,
# which for MPICH prints the full compile-and-link line.
show=$("$MPICC" -show)
case " $show " in
  *" -lmpi "*) ;;
  *) echo "FAIL: \`$MPICC -show\` prints no link flags (-L.../-lmpi): '$show';" \
       "rsmpi would link without the MPI library (MPICH's prints them)"; exit 1 ;;
esac
# mpi-sys's build script does not rerun when the wrapper or mpi.h changes: clean it
# (cargo then rebuilds it and rsmpi, not the other dependencies) when they did.
stamp=$(printf '%s\n' "$show" | cat - "$P/include/mpi.h" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$CARGO_TARGET_DIR/.shmpi-stamp" 2>/dev/null)" != "$stamp" ]; then
  cargo clean --release -q -p mpi-sys --manifest-path clients/rsmpi/Cargo.toml || true
fi
timeout 1500 cargo build --release --locked --manifest-path clients/rsmpi/Cargo.toml
echo "$stamp" > "$CARGO_TARGET_DIR/.shmpi-stamp"
# Every MPI function rsmpi's code calls must be exported (the program above links only
# what it uses; a user of any other part of rsmpi must link too).
src=$(cargo metadata --format-version 1 --locked --manifest-path clients/rsmpi/Cargo.toml \
  | python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="mpi").rsplit("/",1)[0])')
wanted=$(grep -rhoE "ffi::P?MPI_[A-Z][a-z][A-Za-z_0-9]*[[:space:]]*\(" "$src/src" | sed -E 's/ffi:://; s/[[:space:]]*\($//' | sort -u)
[ "$(echo "$wanted" | wc -l)" -gt 100 ] || { echo "FAIL: found too few MPI calls in $src/src"; exit 1; }
exported=$(nm -D --defined-only "$P/lib/libmpi.so.12" | awk '$2=="T"{print $3}' | sort -u)
missing=$(comm -23 <(echo "$wanted") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "FAIL: rsmpi calls functions libmpi.so.12 does not export:" $missing; exit 1
fi
echo "rsmpi: all $(echo "$wanted" | wc -l) MPI functions its code calls are exported"
for np in 1 2 3 4; do
  timeout 120 "$P/bin/mpiexec" -n $np --timeout 60 "$CARGO_TARGET_DIR/release/shmpi-rsmpi-client"
done
echo "rsmpi: ok"
