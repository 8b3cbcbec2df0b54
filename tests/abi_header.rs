//! Checks the generated C header `target/generated/mpi.h` against the measured ABI
//! table `abi/mpich-abi-c.tsv`: a C program including the header prints every
//! constant, size and offset the table lists, and each printed value must equal the
//! table's VALUE_DEC. Also checks that the header compiles as C99 with -pedantic
//! and as C++, and that every MPI_ prototype has a PMPI_ twin.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Table rows the header does not copy, on purpose (see build_support/header.rs).
/// MPI_VERSION/MPI_SUBVERSION: the table holds MPICH 4.0.2's level (4.0) but the
/// header declares the MPI-3.1 API, so it must say 3.1.
const EXPECT_OVERRIDE: &[(&str, i64)] = &[("MPI_VERSION", 3), ("MPI_SUBVERSION", 1)];
/// Rows the header may leave undefined: none (every row of the table is defined).
const EXPECT_UNDEFINED: &[&str] = &[];
/// Macros that must not be defined: tools probe features when they are absent.
const MUST_NOT_DEFINE: &[&str] = &["MPICH_NAME", "MPICH_VERSION", "OPEN_MPI"];

const VALUE_KINDS: &[&str] = &[
    "datatype",
    "op",
    "comm",
    "group",
    "errhandler",
    "info",
    "request",
    "win",
    "session",
    "keyval",
    "int",
    "pointer",
];

struct Row {
    name: String,
    dec: String,
    kind: String,
    ctype: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_dir() -> PathBuf {
    root().join("target/generated")
}

fn table() -> Vec<Row> {
    let tsv = fs::read_to_string(root().join("abi/mpich-abi-c.tsv")).expect("abi table");
    tsv.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 5, "bad table line {l:?}");
            Row {
                name: f[0].trim().to_string(),
                dec: f[2].trim().to_string(),
                kind: f[3].trim().to_string(),
                ctype: f[4].trim().to_string(),
            }
        })
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_header");
    fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One C statement printing `key<TAB>value` for an integer-valued C expression.
fn print_line(src: &mut String, key: &str, expr: &str) {
    writeln!(
        src,
        "    printf(\"%s\\t%lld\\n\", \"{key}\", (long long)({expr}));"
    )
    .unwrap();
}

/// The C program and, for every line it prints, the value the table expects.
fn probe_program(rows: &[Row]) -> (String, BTreeMap<String, String>) {
    let mut src = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <wchar.h>\n\
         #include \"mpi.h\"\n\n#define TC(e, t) __builtin_types_compatible_p(__typeof__(e), t)\n\n\
         int main(void)\n{\n",
    );
    let mut want = BTreeMap::new();
    for r in rows {
        let n = r.name.as_str();
        if n.contains('(') {
            // sizeof(...), alignof(...), offsetof(...) rows are C expressions already.
            if !matches!(r.kind.as_str(), "sizeof" | "alignof" | "offsetof") {
                continue;
            }
            let expr = n.replacen("alignof(", "_Alignof(", 1);
            print_line(&mut src, n, &expr);
            want.insert(n.to_string(), r.dec.clone());
            continue;
        }
        if n.contains('.') {
            continue;
        }
        match r.kind.as_str() {
            k if VALUE_KINDS.contains(&k) => {
                let expected = EXPECT_OVERRIDE
                    .iter()
                    .find(|(x, _)| *x == n)
                    .map(|(_, v)| v.to_string());
                if EXPECT_UNDEFINED.contains(&n) {
                    continue; // checked with MUST_NOT_DEFINE below
                }
                let expr = if k == "pointer" {
                    format!("(intptr_t)({n})")
                } else {
                    n.to_string()
                };
                writeln!(src, "#ifdef {n}").unwrap();
                print_line(&mut src, n, &expr);
                writeln!(
                    src,
                    "#else\n    printf(\"%s\\tUNDEFINED\\n\", \"{n}\");\n#endif"
                )
                .unwrap();
                want.insert(n.to_string(), expected.unwrap_or_else(|| r.dec.clone()));
                if k == "pointer" {
                    let key = format!("type({n})");
                    print_line(&mut src, &key, &format!("TC({n}, {})", r.ctype));
                    want.insert(key, "1".into());
                }
            }
            "typedef" => {
                let key = format!("sizeof({n})");
                print_line(&mut src, &key, &format!("sizeof({n})"));
                want.insert(key, r.dec.clone());
                let key = format!("type({n})");
                let expr = format!("__builtin_types_compatible_p({n}, {})", r.ctype);
                print_line(&mut src, &key, &expr);
                want.insert(key, "1".into());
            }
            "extern_data" => {
                let key = format!("type({n})");
                print_line(&mut src, &key, &format!("TC({n}, {})", r.ctype));
                want.insert(key, "1".into());
            }
            "extern_func" => {
                // MPI_DUP_FN names a function of type MPI_Copy_function; the typed
                // variants are casts of it.
                let key = format!("type({n})");
                print_line(&mut src, &key, &format!("TC(&{n}, {})", r.ctype));
                want.insert(key, "1".into());
                for (m, t) in [
                    ("MPI_COMM_DUP_FN", "MPI_Comm_copy_attr_function *"),
                    ("MPI_TYPE_DUP_FN", "MPI_Type_copy_attr_function *"),
                    ("MPI_WIN_DUP_FN", "MPI_Win_copy_attr_function *"),
                ] {
                    let key = format!("type({m})");
                    print_line(&mut src, &key, &format!("TC({m}, {t})"));
                    want.insert(key, "1".into());
                }
            }
            _ => {}
        }
    }
    for m in MUST_NOT_DEFINE {
        writeln!(
            src,
            "#ifdef {m}\n    printf(\"%s\\tDEFINED\\n\", \"defined({m})\");\n#else\n    \
             printf(\"%s\\t0\\n\", \"defined({m})\");\n#endif"
        )
        .unwrap();
        want.insert(format!("defined({m})"), "0".into());
    }
    src.push_str("    return 0;\n}\n");
    (src, want)
}

#[test]
fn constants_sizes_and_offsets_match_the_abi_table() {
    let rows = table();
    let (src, want) = probe_program(&rows);
    let c = scratch("probe.c");
    let exe = scratch("probe");
    fs::write(&c, src).unwrap();
    run(Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(header_dir())
        .arg(&c)
        .arg("-o")
        .arg(&exe));
    let out = run(&mut Command::new(&exe));

    let mut got = BTreeMap::new();
    for line in out.lines() {
        let (k, v) = line.split_once('\t').expect("probe output line");
        got.insert(k.to_string(), v.to_string());
    }
    let mut bad = Vec::new();
    for (k, w) in &want {
        match got.get(k) {
            Some(g) if g == w => {}
            Some(g) => bad.push(format!("{k}: header gives {g}, table says {w}")),
            None => bad.push(format!("{k}: not printed")),
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches between mpi.h and abi/mpich-abi-c.tsv:\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
    // The table has a few hundred value rows; make sure they were all looked at.
    assert!(want.len() > 300, "only {} checks generated", want.len());
}

#[test]
fn header_compiles_as_pedantic_c99_and_as_cpp() {
    let src = "#include \"mpi.h\"\n\
               int main(void)\n{\n    MPI_Status st;\n    int x = 0;\n    st.MPI_SOURCE = 0;\n\
               (void)st;\n    (void)MPI_Send;\n    (void)PMPI_Reduce;\n\
               if (MPI_COMM_WORLD == MPI_COMM_NULL || MPI_IN_PLACE == MPI_BOTTOM)\n        x = 1;\n\
               return x + MPI_SUCCESS;\n}\n";
    let c = scratch("compile.c");
    let cpp = scratch("compile.cpp");
    fs::write(&c, src).unwrap();
    fs::write(&cpp, src).unwrap();
    let flags: &[(&str, &[&str], &Path)] = &[
        (
            "cc",
            &["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"],
            &c,
        ),
        (
            "cc",
            &[
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-Wstrict-prototypes",
            ],
            &c,
        ),
        ("g++", &["-Wall", "-Wextra", "-Werror"], &cpp),
        (
            "g++",
            &["-std=c++11", "-pedantic", "-Wall", "-Wextra", "-Werror"],
            &cpp,
        ),
    ];
    for (compiler, args, file) in flags {
        run(Command::new(compiler)
            .args(*args)
            .arg("-I")
            .arg(header_dir())
            .arg("-c")
            .arg(file)
            .arg("-o")
            .arg(scratch("compile.o")));
    }
}

/// Names of functions declared in the header with the given prefix ("MPI_"/"PMPI_"):
/// the identifier right before the first '(' of a declaration's first line.
fn declared(h: &str, prefix: &str) -> Vec<String> {
    let mut v = Vec::new();
    for line in h.lines() {
        if line.starts_with(['#', ' ', '/', '*']) || line.starts_with("typedef") {
            continue;
        }
        let Some(p) = line.find('(') else { continue };
        let head = &line[..p];
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[start..];
        if name.starts_with(prefix) {
            v.push(name.to_string());
        }
    }
    v
}

#[test]
fn prototypes_cover_the_api_with_pmpi_twins() {
    let h = fs::read_to_string(header_dir().join("mpi.h")).expect("generated mpi.h");
    let mpi = declared(&h, "MPI_");
    let pmpi = declared(&h, "PMPI_");
    let missing: Vec<_> = mpi
        .iter()
        .filter(|n| !pmpi.contains(&format!("P{n}")))
        .collect();
    assert!(missing.is_empty(), "no PMPI_ prototype for {missing:?}");
    assert_eq!(
        mpi.len(),
        pmpi.len(),
        "MPI_ and PMPI_ prototype counts differ"
    );
    // The header declares what the library exports (api/prototypes.h; the exact
    // agreement is tests/api_coverage.rs): 410 MPI_ functions when it was generated.
    assert!(mpi.len() >= 410, "only {} MPI_ prototypes", mpi.len());
    for p in [
        "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);",
        "double MPI_Wtime(void);",
        "MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);",
        "int MPI_Address(void *location, MPI_Aint *address);",
    ] {
        assert!(h.contains(p), "missing prototype {p}");
    }
    // A sample of the MPI-3.0/3.1 and MPI-4 additions and of the MPI-1 names kept for
    // old code.
    for n in [
        "MPI_Aint_diff",
        "MPI_Comm_idup",
        "MPI_Comm_split_type",
        "MPI_Dist_graph_create_adjacent",
        "MPI_Get_library_version",
        "MPI_Ineighbor_alltoallw",
        "MPI_Mprobe",
        "MPI_Type_size_x",
        "MPI_Allreduce_init",
        "MPI_Bcast_c",
        "MPI_Neighbor_alltoallw_init_c",
        "MPI_Comm_c2f",
        "MPI_Errhandler_set",
        "MPI_Type_struct",
    ] {
        assert!(mpi.iter().any(|m| m == n), "missing prototype for {n}");
    }
    let reduce =
        "int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, \
                  MPI_Op op, int root, MPI_Comm comm);";
    let flat: String = h.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(reduce), "missing prototype {reduce}");
}
