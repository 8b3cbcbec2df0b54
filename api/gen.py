#!/usr/bin/env python3
"""Generates shmpi's view of the MPI 5.0 API from the MPI Forum's machine-readable
standard, the PyPI package pympistandard 0.2.0 (its data/apis.json).

Run it with `make api`, which creates build/venv, installs pympistandard==0.2.0 there
and calls

    build/venv/bin/python api/gen.py --lib build/lib/libmpi.so.12

Without --lib the list of exported functions is read from the committed
api/exported.txt, so the same inputs always give the same outputs. The normal build
never runs this script: it uses the files it wrote, which are committed.

Files written (all under api/):

* exported.txt  - every MPI_/PMPI_ function the library defines, one per line, sorted
                  (`nm -D --defined-only` of the library, symbols of type T).
* mpi50.tsv     - one row per C procedure of MPI 5.0 (see "Which procedures count"):
                  NAME, CHAPTER, LARGE_COUNT (yes: the standard also defines NAME_c),
                  C_PROTOTYPE and C_PROTOTYPE_LARGE (the NAME_c binding, or empty), as
                  the standard writes them (MPI_Comm, MPI_Datatype, ... are the typedefs
                  of mpi.h).
* mpi50-other.tsv - NAME and KIND of every other name of the standard: the entries of
                  apis.json that are not among the 531 (callback, predefined_function,
                  fortran_only) and the removed MPI-1 names shmpi still exports
                  (removed); the Fortran check of tests/api_coverage.rs reads it.
* prototypes.h  - the prototypes mpi.h declares: MPI_X and PMPI_X for every exported
                  procedure, MPI_X_c and PMPI_X_c where the standard has the large-count
                  form and the library exports it. build_support/header.rs puts this
                  file in place of the @PROTOTYPES@ line of include/mpi.h.in.

and, outside api/, fortran/functions.tsv: the Fortran binding's table (see "The
Fortran binding" below), from the standard and api/fortran-custom.tsv.

Which procedures count ("the 531 C procedures of MPI 5.0")
----------------------------------------------------------
apis.json has 567 entries. The ones that count are those that are

* not a callback prototype (attributes.callback: MPI_User_function and the other
  function-pointer typedefs, 21 entries),
* not a predefined function (attributes.predefined_function: MPI_COMM_DUP_FN,
  MPI_NULL_COPY_FN, ... 13 entries), and
* expressible in C (attributes.c_expressible: drops MPI_F_sync_reg and MPI_Sizeof,
  which exist in Fortran only),

which leaves 531. The large-count forms NAME_c are not separate entries of apis.json
(a procedure with a POLY* kind among its parameters or as its return kind has one;
159 of the 531 do), so they are not counted separately: the LARGE_COUNT column says
which procedures have one. attributes.deprecated is false for every entry of 0.2.0,
and the procedures removed from the standard (MPI_Address, MPI_Type_struct, ...) are
not in apis.json at all, so neither needs a filter of its own: the deprecated but
still defined procedures (MPI_Attr_get, MPI_Keyval_create, MPI_Info_get,
MPI_Type_size_x, ...) are among the 531, in the chapter "16 Deprecated Interfaces".

apis.json does not say which chapter defines a procedure; CHAPTER comes from the
table CHAPTER_RULES below, which follows the chapters of MPI 5.0.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

EXPECTED_TOTAL = 531

# ---------------------------------------------------------------------------------
# Chapters of MPI 5.0, and which procedure belongs to which (first match wins).
# ---------------------------------------------------------------------------------
P2P = "3 Point-to-Point Communication"
PART = "4 Partitioned Point-to-Point Communication"
DTYPE = "5 Datatypes"
COLL = "6 Collective Communication"
COMM = "7 Groups, Contexts, Communicators, and Caching"
TOPO = "8 Process Topologies"
ENV = "9 MPI Environmental Management"
INFO = "10 The Info Object"
PROC = "11 Process Initialization, Creation, and Management"
RMA = "12 One-Sided Communications"
EXT = "13 External Interfaces"
IO = "14 I/O"
TOOL = "15 Tool Support"
DEPR = "16 Deprecated Interfaces"
REMOVED = "17 Removed Interfaces"
LANG = "19 Language Bindings"
ABI = "20 Application Binary Interface (ABI)"

CHAPTER_ORDER = [P2P, PART, DTYPE, COLL, COMM, TOPO, ENV, INFO, PROC, RMA, EXT, IO,
                 TOOL, DEPR, REMOVED, LANG, ABI]

CHAPTER_RULES = [
    # 20: the ABI chapter: the ABI queries and the integer handle conversions.
    (r"MPI_Abi_.*|MPI_\w+_(toint|fromint)", ABI),
    # 16: deprecated but still defined.
    (r"MPI_(Attr_(delete|get|put)|Keyval_(create|free)|Info_get|Info_get_valuelen"
     r"|Type_size_x|Type_get_extent_x|Type_get_true_extent_x|Get_elements_x"
     r"|Status_set_elements_x)", DEPR),
    # 19: handle and status conversions between the languages, Fortran kinds.
    (r"MPI_\w+_(c2f|f2c)|MPI_Status_(c2f08|f082c|f082f|f2f08)"
     r"|MPI_Type_create_f90_\w+|MPI_Type_match_size", LANG),
    (r"MPI_T_\w+|MPI_Pcontrol", TOOL),
    (r"MPI_File_\w+|MPI_Register_datarep", IO),
    (r"MPI_Grequest_\w+|MPI_Status_set_(elements|cancelled)", EXT),
    (r"MPI_(Comm|Session)_(attach|detach|flush|iflush)_buffer", P2P),
    (r"MPI_(Win_(create_keyval|free_keyval|set_attr|get_attr|delete_attr|set_name"
     r"|get_name))", COMM),
    (r"MPI_Win_(create_errhandler|set_errhandler|get_errhandler|call_errhandler)", ENV),
    (r"MPI_Win_\w+|MPI_(Put|Get|Accumulate|Get_accumulate|Fetch_and_op"
     r"|Compare_and_swap|Rput|Rget|Raccumulate|Rget_accumulate)", RMA),
    (r"MPI_(Psend_init|Precv_init|Pready|Pready_range|Pready_list|Parrived)", PART),
    (r"MPI_(Init|Init_thread|Initialized|Finalize|Finalized|Abort|Query_thread"
     r"|Is_thread_main|Session_(init|finalize|get_num_psets|get_nth_pset|get_info"
     r"|get_pset_info)|Group_from_session_pset|Info_create_env|Comm_spawn"
     r"|Comm_spawn_multiple|Comm_get_parent|Open_port|Close_port|Comm_accept"
     r"|Comm_connect|Publish_name|Unpublish_name|Lookup_name|Comm_disconnect"
     r"|Comm_join)", PROC),
    (r"MPI_Info_\w+", INFO),
    (r"MPI_(Get_version|Get_library_version|Get_processor_name|Get_hw_resource_info"
     r"|Alloc_mem|Free_mem|\w+_create_errhandler|\w+_set_errhandler|\w+_get_errhandler"
     r"|\w+_call_errhandler|Errhandler_free|Error_string|Error_class|Add_error_\w+"
     r"|Remove_error_\w+|Wtime|Wtick)", ENV),
    (r"MPI_(Cart\w*|Dims_create|Graph\w*|Dist_graph_\w+|Topo_test|Neighbor_\w+"
     r"|Ineighbor_\w+)", TOPO),
    (r"MPI_(Group_\w+|Comm_\w+|Intercomm_\w+|Type_(create_keyval|free_keyval|set_attr"
     r"|get_attr|delete_attr|set_name|get_name))", COMM),
    (r"MPI_(Barrier|Bcast|Gather|Gatherv|Scatter|Scatterv|Allgather|Allgatherv"
     r"|Alltoall|Alltoallv|Alltoallw|Reduce|Allreduce|Reduce_local|Reduce_scatter"
     r"|Reduce_scatter_block|Scan|Exscan|Ibarrier|Ibcast|Igather|Igatherv|Iscatter"
     r"|Iscatterv|Iallgather|Iallgatherv|Ialltoall|Ialltoallv|Ialltoallw|Ireduce"
     r"|Iallreduce|Ireduce_scatter|Ireduce_scatter_block|Iscan|Iexscan|Op_\w+"
     r"|Type_get_value_index)(_init)?", COLL),
    (r"MPI_(Type_\w+|Get_address|Aint_add|Aint_diff|Get_elements|Pack\w*|Unpack\w*)",
     DTYPE),
    (r"MPI_(\w*(send|recv|Send|Recv)\w*|Buffer_\w+|Probe|Iprobe|Mprobe|Improbe|Wait\w*|Test\w*"
     r"|Request_\w+|Cancel|Start|Startall|Get_count|Status_\w+)", P2P),
]


def chapter(name):
    for pattern, chap in CHAPTER_RULES:
        if re.fullmatch(pattern, name):
            return chap
    raise SystemExit(f"gen.py: no chapter for {name}: add it to CHAPTER_RULES")


# ---------------------------------------------------------------------------------
# Exported functions that the MPI 5.0 standard does not define: the MPI-1 names
# removed in MPI-3.0, which MPICH still declares and shmpi still exports. Their C
# bindings are those of MPI-2.2 (section "Deprecated Functions"), as MPICH declares
# them. Chapter: "17 Removed Interfaces".
# ---------------------------------------------------------------------------------
REMOVED_PROTOTYPES = {
    "MPI_Address": "int MPI_Address(void *location, MPI_Aint *address)",
    "MPI_Errhandler_create":
        "int MPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)",
    "MPI_Errhandler_get": "int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)",
    "MPI_Errhandler_set": "int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)",
    "MPI_Type_extent": "int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)",
    "MPI_Type_hindexed":
        "int MPI_Type_hindexed(int count, int array_of_blocklengths[], "
        "MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "MPI_Type_hvector":
        "int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, "
        "MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "MPI_Type_lb": "int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)",
    "MPI_Type_struct":
        "int MPI_Type_struct(int count, int array_of_blocklengths[], "
        "MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[], "
        "MPI_Datatype *newtype)",
    "MPI_Type_ub": "int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)",
}

# Corrections of pympistandard 0.2.0's C rendering, applied to mpi50.tsv and
# prototypes.h alike: (procedure, wrong text, right text). Each must still match, so
# a new version of the data that fixes it makes the script stop here.
# MPI_Info_create_env: argv is of kind ARGUMENT_LIST with "pointer": false, which the
# renderer prints without its star; the standard's binding (and MPICH's) is
# `char *argv[]`.
STANDARD_FIXES = [
    ("MPI_Info_create_env", "char argv[]", "char *argv[]"),
]


# ---------------------------------------------------------------------------------
# Reading the standard
# ---------------------------------------------------------------------------------
def tidy(proto):
    """The standard's C binding in mpi.h's spelling: `void *buf`, `...`."""
    proto = proto.replace("\\ldots", "...")
    proto = re.sub(r"(\w)\*+ ", lambda m: m.group(1) + " " + "*" * (len(m.group(0)) - 2),
                   proto)
    proto = re.sub(r"(\w) (\*+) ", r"\1 \2", proto)
    return " ".join(proto.split())


def load_standard():
    try:
        import pympistandard as std
    except ImportError:
        raise SystemExit("gen.py: pympistandard is missing: run `make api-venv` "
                         "and use build/venv/bin/python")
    if std.__version__ != "0.2.0":
        raise SystemExit(f"gen.py: pympistandard {std.__version__}, expected 0.2.0")
    std.use_api_version(1)
    others = [(cb._parseset["name"], "callback") for cb in std.CALLBACKS.values()]
    others += [(pf._parseset["name"], "predefined_function")
               for pf in std.PREDEFINED_FUNCTIONS.values()]
    rows = []
    for proc in std.PROCEDURES.values():
        attrs = proc._parseset["attributes"]
        # PROCEDURES holds neither callbacks nor predefined functions (the loader
        # files them under CALLBACKS and PREDEFINED_FUNCTIONS); checked anyway.
        if attrs["callback"] or attrs["predefined_function"]:
            continue
        if not attrs["c_expressible"]:
            others.append((proc._parseset["name"], "fortran_only"))
            continue
        if attrs["deprecated"]:
            continue
        name = proc._parseset["name"]
        proto = tidy(str(proc.express.iso_c))
        large = tidy(str(proc.express.embiggen.iso_c)) if proc.has_embiggenment() else ""
        for fix_name, wrong, right in STANDARD_FIXES:
            if fix_name == name:
                if wrong not in proto:
                    raise SystemExit(f"gen.py: STANDARD_FIXES: {name} no longer has {wrong!r}")
                proto = proto.replace(wrong, right)
                large = large.replace(wrong, right)
        rows.append((name, chapter(name), proto, large))
    rows.sort()
    if len(rows) != EXPECTED_TOTAL:
        raise SystemExit(f"gen.py: {len(rows)} C procedures, expected {EXPECTED_TOTAL}")
    return rows, sorted(others), std.PROCEDURES


def exported_functions(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "T" and re.match(r"P?MPI_", f[2]):
            names.add(f[2])
    return sorted(names)


# ---------------------------------------------------------------------------------
# The Fortran binding (mpif.h and `use mpi`): fortran/functions.tsv
# ---------------------------------------------------------------------------------
# One row per Fortran routine: its name, the C function the wrapper calls and one
# argument kind per C parameter (fortran/build.rs turns a row into a wrapper). The
# kinds come from the standard's parameter kinds (their Fortran types: pympistandard's
# Kind._f90_small), their directions and whether the C binding takes a pointer; the
# rows that cannot be derived (string arguments, predefined callback functions, the
# removed MPI-1 routines) are kept by hand in api/fortran-custom.tsv.
FORTRAN_LEGEND = """# Generated by api/gen.py from the MPI 5.0 standard (pympistandard 0.2.0),
# api/exported.txt and api/fortran-custom.tsv. Do not edit: run `make api`.
#
# The Fortran (mpif.h / `use mpi`) entry points, one per line. fortran/build.rs turns
# every line into one wrapper exported under MPICH's eight names (mpi_x, mpi_x_,
# mpi_x__, MPI_X, pmpi_x, pmpi_x_, pmpi_x__, PMPI_X).
#
#   NAME  C_FUNCTION  ARG_KIND...        a wrapper generated from the kinds below;
#                                        IERROR is appended and set from the C result
#   NAME  @rust_fn  (args) [-> type]     exports forwarding to fortran/src/custom.rs
#
# Argument kinds (every Fortran argument arrives by reference):
#   i      INTEGER in: C gets the value
#   key    INTEGER attribute key in: predefined keys (Fortran = C + 1) become C's
#   p      INTEGER pointer passed through (outputs, arrays, handles C updates)
#   a      INTEGER(KIND=MPI_ADDRESS_KIND) in: C gets the MPI_Aint value
#   ai     INTEGER in where C wants an MPI_Aint (MPI-1 routines): widened
#   ap     INTEGER(KIND=MPI_ADDRESS_KIND or MPI_COUNT_KIND) pointer passed through
#   aarr@K INTEGER array in where C wants MPI_Aint[], as many as argument K says
#   aout   INTEGER out where C writes an MPI_Aint: MPI_ERR_ARG if it does not fit
#   aoutw  INTEGER out where C writes an address: its low 32 bits (MPI-1 ADDRESS)
#   l      LOGICAL in: C gets 0 or 1 (any non-zero is true)
#   larr@K LOGICAL array in, as many as argument K says: C gets an int array of 0 and 1
#   lout@K LOGICAL array out, at most as many as argument K says: C writes an int array,
#          the entries it wrote come back as LOGICALs
#   w      INTEGER array of edge weights: &MPI_UNWEIGHTED -> MPI_UNWEIGHTED,
#          &MPI_WEIGHTS_EMPTY -> MPI_WEIGHTS_EMPTY, others unchanged
#   buf    choice buffer: &MPI_BOTTOM -> NULL, &MPI_IN_PLACE -> MPI_IN_PLACE
#   st     status: &MPI_STATUS_IGNORE -> MPI_STATUS_IGNORE
#   sts    array of statuses: &MPI_STATUSES_IGNORE -> MPI_STATUSES_IGNORE
#   fn     procedure argument, passed as the C function pointer
#   idx    INTEGER out, a request index: 0-based in C, 1-based in Fortran
#   idxs@K INTEGER array out of indices, as many as argument K says (K: 0-based position)
#   null   no Fortran argument: C gets NULL (argc, argv)"""


def c_params(proto):
    inner = proto[proto.index("(") + 1:proto.rindex(")")]
    return [] if inner.strip() in ("", "void") else [p.strip() for p in inner.split(",")]


def fortran_kinds(proc, proto):
    """The argument kinds of functions.tsv for procedure `proc` (C binding `proto`),
    or None when it needs a hand-written wrapper (a string argument)."""
    from pympistandard import _kinds
    e = proc._parseset
    params = [p for p in e["parameters"]
              if not p["large_only"] and "c_parameter" not in p["suppress"]]
    cps = c_params(proto)
    if len(params) != len(cps):
        raise SystemExit(f"gen.py: {e['name']}: {len(params)} parameters, {len(cps)} in C")
    names = [p["name"] for p in params]
    # The index outputs of the Wait/Test family are request indices (0-based in C,
    # 1-based in Fortran); other INDEX parameters (graph topologies) are plain arrays.
    completes = any(p["kind"] == "REQUEST" and p["length"] for p in params)
    out = []
    for p, cdecl in zip(params, cps):
        kind, direction, length = p["kind"], p["param_direction"], p["length"]
        ftype = getattr(_kinds, kind)._f90_small or ""
        array, pointer = length is not None, "*" in cdecl or "[" in cdecl

        def at():
            # (MPI_Waitsome's indices are as many as outcount says)
            key = length if length in names else "outcount"
            if key not in names:
                raise SystemExit(f"gen.py: {e['name']}: length of {p['name']}")
            return f"@{names.index(key)}"

        if "f90_parameter" in p["suppress"]:
            out.append("null")
        elif kind == "BUFFER":
            out.append("buf")
        elif kind.startswith("C_BUFFER"):
            out.append("ap" if direction == "out" else "p")
        elif kind == "STATUS":
            out.append("sts" if array else "st")
        elif kind == "INDEX" and direction == "out" and completes:
            out.append("idxs" + at() if array else "idx")
        elif "FUNCTION" in kind:
            out.append("fn")
        elif kind == "WEIGHT":
            out.append("w")
        elif kind.startswith("STRING"):
            return None
        elif ftype.startswith("LOGICAL"):
            if direction == "in":
                out.append("larr" + at() if array else "l")
            else:
                out.append("lout" + at() if array else "p")
        elif "KIND=" in ftype:
            out.append("a" if direction == "in" and not array and not pointer else "ap")
        elif kind == "KEYVAL" and direction == "in" and not pointer:
            out.append("key")
        else:
            out.append("i" if direction == "in" and not array and not pointer else "p")
    return out


def fortran_rows(procs, exp):
    """The rows of fortran/functions.tsv, grouped by chapter: every procedure of the
    standard that has a Fortran binding and whose C function the library exports."""
    custom = {}
    for line in (HERE / "fortran-custom.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            custom[line.split()[0]] = line
    rows, used = [], set()
    for proc in procs.values():
        e = proc._parseset
        a = e["attributes"]
        if a["callback"] or a["predefined_function"] or not a["f90_expressible"]:
            continue
        name = e["name"]
        if name not in exp:
            continue
        fname = name[4:].upper()
        if fname in custom:
            rows.append((chapter(name), fname, custom[fname]))
            used.add(fname)
            continue
        kinds = fortran_kinds(proc, tidy(str(proc.express.iso_c)))
        if kinds is None:
            raise SystemExit(f"gen.py: {name} takes a string: give its Fortran wrapper a "
                             "row in api/fortran-custom.tsv")
        cfn = "PMPI_" + name[4:]
        rows.append((chapter(name), fname,
                     " ".join([f"{fname:<23}", f"{cfn:<25}"] + kinds).rstrip()))
    for fname, line in custom.items():
        if fname not in used:
            mpi = "MPI_" + fname.capitalize()
            chap = REMOVED if mpi.lower() in {n.lower() for n in REMOVED_PROTOTYPES} \
                else "Predefined callback functions"
            rows.append((chap, fname, line))
    order = CHAPTER_ORDER + ["Predefined callback functions"]
    rows.sort(key=lambda r: (order.index(r[0]), r[1]))
    out = [FORTRAN_LEGEND]
    last = None
    for chap, _, line in rows:
        if chap != last:
            out += ["", f"# {chap}"]
            last = chap
        out.append(line)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------
def wrap(proto, width=100):
    """One declaration, broken after commas with the parameters aligned."""
    line = proto + ";"
    if len(line) <= width:
        return line
    head, params = proto.split("(", 1)
    indent = len(head) + 1
    if indent > 50:
        indent = 4
    parts = params[:-1].split(", ")
    lines, cur = [], head + "("
    for i, p in enumerate(parts):
        piece = p + (", " if i + 1 < len(parts) else ");")
        if len(cur) + len(piece.rstrip()) > width and cur.strip() and not cur.endswith("("):
            lines.append(cur.rstrip())
            cur = " " * indent
        cur += piece
    lines.append(cur)
    return "\n".join(lines)


def mpi_h_spelling(proto):
    """The one way mpi.h departs from the standard's text, as MPICH's header does: an
    array of statuses is declared as a pointer, `MPI_Status *array_of_statuses`.
    MPI_STATUSES_IGNORE is `(MPI_Status *)1`, and gcc (11 and later) takes an array
    parameter for an access of at least one element, so passing the constant to
    `MPI_Status array_of_statuses[]` draws -Wstringop-overflow. Same type either way."""
    return re.sub(r"\bMPI_Status (\w+)\[\]", r"MPI_Status *\1", proto)


def profiled(proto):
    return re.sub(r"\bMPI_(\w+)\(", r"PMPI_\1(", proto, count=1)


def write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
        print(f"gen.py: wrote {path.relative_to(HERE.parent)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", help="refresh api/exported.txt from this library (nm)")
    args = ap.parse_args()

    rows, others, procs = load_standard()
    if args.lib:
        exported = exported_functions(args.lib)
        write_if_changed(HERE / "exported.txt", "".join(n + "\n" for n in exported))
    else:
        exported = (HERE / "exported.txt").read_text().split()
    exp = set(exported)

    # mpi50.tsv
    tsv = ["# Generated by api/gen.py from pympistandard 0.2.0 (the MPI 5.0 standard's "
           "apis.json). Do not edit.",
           "# The C procedures: not callbacks, not predefined functions, c_expressible "
           f"({len(rows)} rows). LARGE_COUNT: the standard also defines NAME_c.",
           "NAME\tCHAPTER\tLARGE_COUNT\tC_PROTOTYPE\tC_PROTOTYPE_LARGE"]
    for name, chap, proto, large in rows:
        tsv.append("\t".join([name, chap, "yes" if large else "no", proto, large]))
    write_if_changed(HERE / "mpi50.tsv", "\n".join(tsv) + "\n")

    # mpi50-other.tsv
    other = ["# Generated by api/gen.py from pympistandard 0.2.0. Do not edit.",
             "# Names of the standard that are not among the C procedures of mpi50.tsv.",
             "NAME\tKIND"]
    other += [f"{n}\t{k}" for n, k in others]
    other += [f"{n}\tremoved" for n in sorted(REMOVED_PROTOTYPES)]
    write_if_changed(HERE / "mpi50-other.tsv", "\n".join(other) + "\n")

    # prototypes.h: which binding each exported MPI_ name gets.
    binding = {}
    for name, chap, proto, large in rows:
        binding[name] = (chap, proto)
        if large:
            binding[name + "_c"] = (chap, large)
    for name, proto in REMOVED_PROTOTYPES.items():
        binding[name] = (REMOVED, proto)

    problems = []
    for n in exported:
        if n.startswith("MPI_") and n not in binding:
            problems.append(f"{n} is exported but neither the standard nor "
                            "REMOVED_PROTOTYPES gives its C binding")
        twin = n[1:] if n.startswith("PMPI_") else "P" + n
        if twin not in exp:
            problems.append(f"{n} is exported without its twin {twin}")
    if problems:
        raise SystemExit("gen.py:\n  " + "\n  ".join(problems))

    chosen = sorted((CHAPTER_ORDER.index(binding[n][0]), n) for n in exported
                    if n.startswith("MPI_"))
    out = ["/* Generated by api/gen.py from the MPI 5.0 standard (pympistandard 0.2.0) and",
           " * api/exported.txt (the functions libmpi.so.12 exports). Do not edit: run",
           " * `make api`. One MPI_ and one PMPI_ declaration per exported function, in the",
           " * standard's spelling, grouped by the chapter of MPI 5.0 that defines it. */"]
    for prefix, title in (("MPI", "MPI interface"), ("PMPI", "PMPI interface (profiling)")):
        last = None
        for _, n in chosen:
            chap, proto = binding[n]
            if chap != last:
                out.append("")
                out.append(f"/* ---- {title}: {chap} ---- */")
                last = chap
            proto = mpi_h_spelling(proto)
            out.append(wrap(proto if prefix == "MPI" else profiled(proto)))
    write_if_changed(HERE / "prototypes.h", "\n".join(out) + "\n")

    # fortran/functions.tsv
    write_if_changed(HERE.parent / "fortran" / "functions.tsv", fortran_rows(procs, exp))

    have = sum(1 for name, *_ in rows if name in exp)
    print(f"gen.py: the library exports {have} of the {len(rows)} C procedures of MPI 5.0; "
          f"prototypes.h declares {len(chosen)} MPI_ functions and their PMPI_ twins")


if __name__ == "__main__":
    sys.exit(main())
