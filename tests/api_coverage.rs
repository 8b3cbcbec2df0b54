//! The API surface against the MPI 5.0 standard (api/mpi50.tsv, written by api/gen.py
//! from the MPI Forum's pympistandard 0.2.0) and against the built library:
//!
//! * mpi.h declares exactly the MPI_/PMPI_ functions libmpi.so.12 exports, each MPI_
//!   with its PMPI_ twin, and api/exported.txt (what api/prototypes.h was generated
//!   from) is that same list;
//! * prints `exports N of the 531 C procedures of MPI 5.0` and, at the end, the missing
//!   procedures grouped by chapter (`cargo test --release --test api_coverage --
//!   --nocapture`);
//! * mpi.h is one clean header: a C file and a C++ file that include it twice and call
//!   one function of each chapter shmpi implements (an `_init` and a `_c` form among
//!   them) compile warning-free as C99/C11/C17 and C++11/17/20 with gcc and clang
//!   (clang when installed), link with build/bin/mpicc and mpicxx, and run as
//!   singletons;
//! * reports (without failing) the entries of fortran/functions.tsv that name no
//!   procedure of the standard.
//!
//! Needs the installed tree (`make build`): build/include/mpi.h, build/lib/libmpi.so.12,
//! build/bin/mpicc.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOTAL: usize = 531;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn installed(rel: &str) -> PathBuf {
    let p = root().join("build").join(rel);
    assert!(
        p.exists(),
        "{} is missing: run `make build` first",
        p.display()
    );
    p
}

fn scratch(name: &str) -> PathBuf {
    let d = root().join("target/api_coverage");
    fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs a command and returns its stdout; panics with its output when it fails.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The MPI_/PMPI_ functions the library defines (`nm -D --defined-only`, type T).
fn exported() -> BTreeSet<String> {
    let lib = installed("lib/libmpi.so.12");
    let out = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[1] == "T" && (f[2].starts_with("MPI_") || f[2].starts_with("PMPI_")))
                .then(|| f[2].to_string())
        })
        .collect()
}

/// Removes C comments and preprocessor lines.
fn strip_c(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        let j = rest[i + 2..].find("*/").expect("unterminated comment") + i + 4;
        out.push(' ');
        rest = &rest[j..];
    }
    out.push_str(rest);
    out.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The functions a header declares: every top-level statement (split at ';') that is
/// not a typedef and has an identifier right before its first '('.
fn declared_functions(h: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for st in strip_c(h).split(';') {
        let st = st.split_whitespace().collect::<Vec<_>>().join(" ");
        let st = st.replace("extern \"C\" {", "");
        let st = st.trim_start_matches(['}', ' ']).trim();
        if st.starts_with("typedef") || st.starts_with("extern") {
            continue;
        }
        let Some(p) = st.find('(') else { continue };
        let head = st[..p].trim_end();
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        // A declaration has a return type before the name.
        if start > 0 {
            names.insert(head[start..].to_string());
        }
    }
    names
}

struct Proc {
    name: String,
    chapter: String,
}

fn mpi50() -> Vec<Proc> {
    let tsv = fs::read_to_string(root().join("api/mpi50.tsv")).expect("api/mpi50.tsv");
    let mut v = Vec::new();
    for line in tsv.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        assert!(f.len() >= 4, "api/mpi50.tsv: bad line {line:?}");
        v.push(Proc {
            name: f[0].to_string(),
            chapter: f[1].to_string(),
        });
    }
    v
}

#[test]
fn header_declares_exactly_what_the_library_exports() {
    let exp = exported();
    let h = fs::read_to_string(installed("include/mpi.h")).unwrap();
    let decl: BTreeSet<String> = declared_functions(&h)
        .into_iter()
        .filter(|n| n.starts_with("MPI_") || n.starts_with("PMPI_"))
        .collect();
    let mut problems = Vec::new();
    for n in decl.difference(&exp) {
        problems.push(format!(
            "mpi.h declares {n}, which the library does not export"
        ));
    }
    for n in exp.difference(&decl) {
        problems.push(format!(
            "the library exports {n}, which mpi.h does not declare"
        ));
    }
    for (set, what) in [(&exp, "the library exports"), (&decl, "mpi.h declares")] {
        for n in set.iter() {
            let twin = match n.strip_prefix('P') {
                Some(m) => m.to_string(),
                None => format!("P{n}"),
            };
            if !set.contains(&twin) {
                problems.push(format!("{what} {n} without its twin {twin}"));
            }
        }
    }
    let listed: BTreeSet<String> = fs::read_to_string(root().join("api/exported.txt"))
        .expect("api/exported.txt")
        .split_whitespace()
        .map(String::from)
        .collect();
    if listed != exp {
        let added: Vec<_> = exp.difference(&listed).collect();
        let gone: Vec<_> = listed.difference(&exp).collect();
        problems.push(format!(
            "api/exported.txt is not the library's list (new exports {added:?}, gone {gone:?}): run `make api`"
        ));
    }
    assert!(
        exp.len() > 800,
        "only {} MPI_/PMPI_ exports: wrong library?",
        exp.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn coverage_of_the_c_procedures_of_mpi_5_0() {
    let procs = mpi50();
    assert_eq!(procs.len(), TOTAL, "api/mpi50.tsv: expected {TOTAL} rows");
    let names: BTreeSet<&str> = procs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), TOTAL, "api/mpi50.tsv: duplicate names");
    let exp = exported();
    let mut missing: BTreeMap<u32, (String, Vec<&str>)> = BTreeMap::new();
    let mut n = 0;
    for p in &procs {
        if exp.contains(&p.name) {
            n += 1;
        } else {
            let num: u32 = p
                .chapter
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(99);
            missing
                .entry(num)
                .or_insert_with(|| (p.chapter.clone(), Vec::new()))
                .1
                .push(&p.name);
        }
    }
    // One print, so that parallel tests do not split the list.
    let mut report = format!("exports {n} of the {TOTAL} C procedures of MPI 5.0\n");
    report.push_str(&format!("missing ({}), by chapter:\n", TOTAL - n));
    for (chapter, names) in missing.values() {
        report.push_str(&format!("  {chapter} ({}):\n", names.len()));
        let mut line = String::from("   ");
        for name in names {
            if line.len() + name.len() > 96 {
                report.push_str(&line);
                report.push('\n');
                line = String::from("   ");
            }
            line.push(' ');
            line.push_str(name);
        }
        report.push_str(&line);
        report.push('\n');
    }
    print!("{report}");
    // The library implements most of chapters 3, 5-11; a drop means lost exports.
    assert!(n >= 288, "exports only {n} of the {TOTAL}");
}

/// One source, valid C and C++: mpi.h included twice, one call from each chapter of
/// MPI 5.0 that shmpi implements (3, 5-11, 13, 15, 16, 19, and the removed 17),
/// `MPI_Allreduce_init` and `MPI_Allreduce_c`/`MPI_Type_contiguous_c` among them.
const PROGRAM: &str = r#"#include <mpi.h>
#include <mpi.h> /* twice: one include guard around everything */
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                         \
    do {                                                                    \
        int rc_ = (call);                                                   \
        if (rc_ != MPI_SUCCESS) {                                           \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, rc_); \
            return 1;                                                       \
        }                                                                   \
    } while (0)
#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    int rank = -1, size = 0, psize = 0, one = 1, got = 0, sum = 0, len = 0, nkeys = 0;
    int count = 0, dims[2] = {0, 0}, provided = 0;
    MPI_Count tsize = 0, xsize = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    MPI_Datatype pair = MPI_DATATYPE_NULL, real8 = MPI_DATATYPE_NULL;
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Aint addr = 0, old_addr = 0;
    MPI_Fint fcomm;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    double t0;

    /* 11 Process Initialization, Creation, and Management */
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Query_thread(&provided));
    /* 7 Groups, Contexts, Communicators, and Caching */
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(PMPI_Comm_size(MPI_COMM_WORLD, &psize));
    EXPECT(psize == size);
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(MPI_Comm_free(&dup));
    /* 9 MPI Environmental Management */
    t0 = MPI_Wtime();
    CHECK(MPI_Get_library_version(version, &len));
    EXPECT(len > 0 && strlen(version) == (size_t)len);
    /* 3 Point-to-Point Communication */
    CHECK(MPI_Sendrecv(&one, 1, MPI_INT, rank, 7, &got, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, &st));
    EXPECT(got == 1 && st.MPI_TAG == 7);
    /* 6 Collective Communication: a persistent (_init) and a large-count (_c) form */
    CHECK(MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    CHECK(MPI_Start(&req));
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(MPI_Request_free(&req));
    EXPECT(sum == size);
    sum = 0;
    CHECK(MPI_Allreduce_c(&one, &sum, (MPI_Count)1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EXPECT(sum == size);
    /* 5 Datatypes */
    CHECK(MPI_Type_contiguous_c((MPI_Count)2, MPI_INT, &pair));
    CHECK(MPI_Type_commit(&pair));
    CHECK(MPI_Type_size_c(pair, &tsize));
    EXPECT(tsize == 2 * (MPI_Count)sizeof(int));
    CHECK(MPI_Type_free(&pair));
    CHECK(MPI_Get_address(&one, &addr));
    /* 8 Process Topologies */
    CHECK(MPI_Dims_create(size, 2, dims));
    EXPECT(dims[0] * dims[1] == size);
    /* 10 The Info Object */
    CHECK(MPI_Info_create(&info));
    CHECK(MPI_Info_set(info, "key", "value"));
    CHECK(MPI_Info_get_nkeys(info, &nkeys));
    EXPECT(nkeys == 1);
    CHECK(MPI_Info_free(&info));
    /* 13 External Interfaces */
    CHECK(MPI_Status_set_elements(&st, MPI_INT, 3));
    CHECK(MPI_Get_count(&st, MPI_INT, &count));
    EXPECT(count == 3);
    /* 15 Tool Support */
    CHECK(MPI_Pcontrol(1));
    /* 16 Deprecated Interfaces */
    CHECK(MPI_Type_size_x(MPI_DOUBLE, &xsize));
    EXPECT(xsize == (MPI_Count)sizeof(double));
    /* 19 Language Bindings: the functions, not the macros of the same names */
    fcomm = (MPI_Comm_c2f)(MPI_COMM_WORLD);
    EXPECT((MPI_Comm_f2c)(fcomm) == MPI_COMM_WORLD);
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &real8));
    EXPECT(real8 != MPI_DATATYPE_NULL);
    /* 17 Removed Interfaces: MPI-1's names, still exported */
    CHECK(MPI_Address(&one, &old_addr));
    EXPECT(old_addr == addr);

    EXPECT(MPI_Wtime() >= t0);
    CHECK(MPI_Finalize());
    printf("one header: ok (rank %d of %d)\n", rank, size);
    return 0;
}
"#;

#[test]
fn one_header_for_c_and_cpp_included_twice() {
    let inc = installed("include");
    let c = scratch("twice.c");
    let cpp = scratch("twice.cpp");
    fs::write(&c, PROGRAM).unwrap();
    fs::write(&cpp, PROGRAM).unwrap();
    let warn = ["-Wall", "-Wextra", "-pedantic", "-Werror"];
    let mut compilers: Vec<(&str, &[&str], &Path)> = vec![
        ("gcc", &["-std=c99", "-Wstrict-prototypes"], &c),
        ("gcc", &["-std=c11"], &c),
        ("gcc", &["-std=c17"], &c),
        ("g++", &["-std=c++11"], &cpp),
        ("g++", &["-std=c++17"], &cpp),
        ("g++", &["-std=c++20"], &cpp),
    ];
    if have("clang") && have("clang++") {
        compilers.extend_from_slice(&[
            (
                "clang",
                &["-std=c99", "-Wstrict-prototypes"][..],
                c.as_path(),
            ),
            ("clang", &["-std=c11"][..], c.as_path()),
            ("clang", &["-std=c17"][..], c.as_path()),
            ("clang++", &["-std=c++11"][..], cpp.as_path()),
            ("clang++", &["-std=c++17"][..], cpp.as_path()),
            ("clang++", &["-std=c++20"][..], cpp.as_path()),
        ]);
    } else {
        println!("clang/clang++ not installed: checked with gcc only (`make deps` installs clang)");
    }
    for (cc, std, src) in &compilers {
        run(Command::new(cc)
            .args(*std)
            .args(warn)
            .arg("-I")
            .arg(&inc)
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg(scratch("twice.o")));
    }
    // C++ linkage would show as a mangled undefined symbol at link time.
    let bin = installed("bin");
    for (wrapper, src, exe) in [("mpicc", &c, "twice_c"), ("mpicxx", &cpp, "twice_cpp")] {
        let exe = scratch(exe);
        run(Command::new(bin.join(wrapper))
            .args(warn)
            .arg(src)
            .arg("-o")
            .arg(&exe));
        // A singleton: no launcher's variables.
        let out = run(Command::new(&exe)
            .env_remove("SHMPI_RANK")
            .env_remove("SHMPI_SIZE")
            .env_remove("SHMPI_ARENA_FD"));
        assert!(
            out.contains("one header: ok (rank 0 of 1)"),
            "{} printed {out:?}",
            exe.display()
        );
    }
}

/// fortran/functions.tsv names its entry points by their Fortran names: every one
/// should be a procedure of the standard (api/mpi50.tsv, or in api/mpi50-other.tsv a
/// Fortran-only procedure, a predefined function or a removed MPI-1 name), and the C
/// function a generated wrapper calls should be an export of the library. Reported,
/// not failing.
#[test]
fn fortran_table_names_procedures_of_the_standard() {
    let c_procs: BTreeSet<String> = mpi50()
        .iter()
        .map(|p| p.name.to_ascii_uppercase())
        .collect();
    let other_tsv =
        fs::read_to_string(root().join("api/mpi50-other.tsv")).expect("api/mpi50-other.tsv");
    let other: BTreeMap<String, String> = other_tsv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, k)| (n.to_ascii_uppercase(), k.to_string()))
        .collect();
    let exp = exported();
    let tsv = fs::read_to_string(root().join("fortran/functions.tsv")).expect("fortran table");
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut bad_c = Vec::new();
    let mut n = 0;
    for line in tsv.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        n += 1;
        let full = format!("MPI_{}", f[0].to_ascii_uppercase());
        let kind = if c_procs.contains(&full) {
            "C procedure of MPI 5.0".to_string()
        } else if let Some(k) = other.get(&full) {
            k.clone()
        } else {
            "NOT A PROCEDURE OF THE STANDARD".to_string()
        };
        kinds.entry(kind).or_default().push(f[0].to_string());
        if let Some(c) = f.get(1) {
            if !c.starts_with('@') && !exp.contains(*c) {
                bad_c.push(format!("{} -> {c}", f[0]));
            }
        }
    }
    let mut report = format!("fortran/functions.tsv: {n} entries\n");
    for (kind, names) in &kinds {
        let list = if kind.starts_with("C procedure") {
            String::new()
        } else {
            format!(": {}", names.join(" "))
        };
        report.push_str(&format!("  {kind}: {}{list}\n", names.len()));
    }
    if !bad_c.is_empty() {
        report.push_str(&format!(
            "  calling a C function the library does not export: {}\n",
            bad_c.join(", ")
        ));
    }
    print!("{report}");
    assert!(n > 0, "fortran/functions.tsv has no entries");
}
