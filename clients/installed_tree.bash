# Sourced by the build-system clients (meson.sh, autoconf.sh, cmake.sh): installs the
# tree built under target/ with the Makefile's install-tree (the step `make install
# PREFIX=...` ends with) into a temporary directory, moves it, and sets T to its new
# place and tmp to the temporary directory (removed on exit). SHMPI_PREFIX is unset:
# the wrappers must find the tree from their own path.
unset SHMPI_PREFIX
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shmpi-client.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
make -s --no-print-directory install-tree PREFIX="$tmp/staged" >/dev/null
mkdir -p "$tmp/moved"
mv "$tmp/staged" "$tmp/moved/shmpi"
T=$(cd "$tmp/moved/shmpi" && pwd -P)
V=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
fail() { echo "FAIL: $*"; exit 1; }
