//! Generates mpi.h from the template `include/mpi.h.in`, the ABI table
//! `abi/mpich-abi-c.tsv` and the prototypes `api/prototypes.h`.
//!
//! The template holds the types; the line `@PROTOTYPES@` is replaced by
//! `api/prototypes.h` (written by `api/gen.py` from the MPI 5.0 standard for the
//! functions the library exports, committed), and the line `@ABI_CONSTANTS@` by one
//! definition per table row, so every handle and integer value in the header comes
//! from the table:
//!
//! * handle kinds (datatype, op, comm, ...) become `#define NAME ((C_TYPE)0x........)`;
//! * `keyval` and `int` rows become plain integer macros (negative values in
//!   parentheses), which bindgen can read;
//! * `pointer` rows become casts of an integer to the row's C type;
//! * `extern_data` rows become `extern` declarations, and the `extern_func` row
//!   (MPI_DUP_FN) a prototype of the function symbol plus the macros naming it.
//!
//! Rows whose NAME contains '(' or '.' (sizeof/offsetof/layout facts) and the
//! kinds typedef, sizeof, alignof, offsetof, layout and runtime describe the ABI
//! but define nothing. Two rows are deliberately not copied; see
//! [`OVERRIDDEN`] and [`OMITTED`].

/// The marker line in the template that receives the generated constants.
pub const MARKER: &str = "@ABI_CONSTANTS@";

/// The marker line in the template that receives `api/prototypes.h`.
pub const PROTOTYPES_MARKER: &str = "@PROTOTYPES@";

/// Rows whose value is replaced on purpose: the table records the MPI level of
/// the MPICH build it was measured on (4.0), but this header declares the MPI-3.1
/// API, so it must announce 3.1.
pub const OVERRIDDEN: &[(&str, i64)] = &[("MPI_VERSION", 3), ("MPI_SUBVERSION", 1)];

/// Rows left out on purpose (none: every row of the table is defined, MPICH_NUMVERSION
/// included; tools that switch to MPICH-specific code key on MPICH_NAME, which stays
/// undefined so they probe features instead).
pub const OMITTED: &[&str] = &[];

const HANDLE_KINDS: &[&str] = &[
    "datatype",
    "op",
    "comm",
    "group",
    "errhandler",
    "info",
    "request",
    "win",
    "session",
];

const DESCRIPTIVE_KINDS: &[&str] = &[
    "typedef", "sizeof", "alignof", "offsetof", "layout", "runtime",
];

struct Row<'a> {
    name: &'a str,
    hex: &'a str,
    dec: &'a str,
    kind: &'a str,
    ctype: &'a str,
    note: &'a str,
}

fn rows(tsv: &str) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for (i, line) in tsv.lines().enumerate() {
        if i == 0 || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert!(
            f.len() >= 5,
            "abi table line {}: too few fields: {line:?}",
            i + 1
        );
        out.push(Row {
            name: f[0].trim(),
            hex: f[1].trim(),
            dec: f[2].trim(),
            kind: f[3].trim(),
            ctype: f[4].trim(),
            note: f.get(5).map_or("", |s| s.trim()),
        });
    }
    out
}

/// Writes a C type with its pointer stars spaced the usual way: `void*` -> `void *`.
fn c_type(t: &str) -> String {
    let base = t.trim_end_matches(['*', ' ']);
    let stars = t[base.len()..].matches('*').count();
    if stars == 0 {
        base.to_string()
    } else {
        format!("{base} {}", "*".repeat(stars))
    }
}

/// An integer literal as a macro body: negative values in parentheses.
fn int_literal(v: i64) -> String {
    if v < 0 {
        format!("({v})")
    } else {
        v.to_string()
    }
}

fn parse_dec(r: &Row<'_>) -> i64 {
    r.dec
        .parse()
        .unwrap_or_else(|_| panic!("abi table: {}: bad VALUE_DEC {:?}", r.name, r.dec))
}

/// The 32-bit value of a handle row, checked against its decimal column.
fn handle_bits(r: &Row<'_>) -> u32 {
    let hex = r.hex.trim_start_matches("0x");
    let v = u32::from_str_radix(hex, 16)
        .unwrap_or_else(|_| panic!("abi table: {}: bad VALUE_HEX {:?}", r.name, r.hex));
    let d = parse_dec(r);
    assert!(
        d == i64::from(v) || d == i64::from(v as i32),
        "abi table: {}: VALUE_HEX {} and VALUE_DEC {} disagree",
        r.name,
        r.hex,
        r.dec
    );
    v
}

fn define(out: &mut String, name: &str, body: &str) {
    out.push_str(&format!("#define {name} {body}\n"));
}

fn constants(tsv: &str) -> String {
    let mut out = String::new();
    let mut last_kind = "";
    for r in rows(tsv) {
        if r.name.contains('(') || r.name.contains('.') || DESCRIPTIVE_KINDS.contains(&r.kind) {
            continue;
        }
        if r.kind != last_kind {
            out.push_str(&format!("\n/* kind: {} */\n", r.kind));
            last_kind = r.kind;
        }
        if OMITTED.contains(&r.name) {
            out.push_str(&format!(
                "/* {} is not defined on purpose: tools must not mistake this library for MPICH. */\n",
                r.name
            ));
            continue;
        }
        if let Some(&(_, v)) = OVERRIDDEN.iter().find(|(n, _)| *n == r.name) {
            out.push_str(&format!(
                "/* The ABI table gives {} = {} (the MPICH build it was measured on); this header\n   declares the MPI-3.1 API, so it announces version 3.1. */\n",
                r.name, r.dec
            ));
            define(&mut out, r.name, &int_literal(v));
            continue;
        }
        match r.kind {
            k if HANDLE_KINDS.contains(&k) => {
                let v = handle_bits(&r);
                define(
                    &mut out,
                    r.name,
                    &format!("(({})0x{v:08x})", c_type(r.ctype)),
                );
            }
            "keyval" => {
                let v = handle_bits(&r);
                assert!(
                    v <= i32::MAX as u32,
                    "keyval {} does not fit an int",
                    r.name
                );
                define(&mut out, r.name, &format!("0x{v:08x}"));
            }
            "int" => {
                let v = parse_dec(&r);
                assert!(
                    i32::try_from(v).is_ok(),
                    "abi table: {}: {} does not fit an int",
                    r.name,
                    v
                );
                define(&mut out, r.name, &int_literal(v));
            }
            "pointer" => {
                let v = parse_dec(&r);
                define(&mut out, r.name, &format!("(({}){v})", c_type(r.ctype)));
            }
            "extern_data" => {
                let t = c_type(r.ctype);
                if t.ends_with('*') {
                    out.push_str(&format!("extern {t}{};\n", r.name));
                } else {
                    // e.g. "int *const": keep the const next to the name.
                    let t = t.replace("*const", "* const");
                    out.push_str(&format!("extern {t} {};\n", r.name));
                }
            }
            "extern_func" => extern_func(&mut out, &r),
            other => panic!(
                "abi table: {}: unknown KIND {other:?}; teach build_support/header.rs about it",
                r.name
            ),
        }
    }
    out
}

/// MPI_DUP_FN names a function symbol of the library; the typed variants are casts
/// of it, as the standard's MPI_COMM_DUP_FN/MPI_TYPE_DUP_FN/MPI_WIN_DUP_FN.
fn extern_func(out: &mut String, r: &Row<'_>) {
    assert_eq!(
        r.name, "MPI_DUP_FN",
        "only MPI_DUP_FN is known as an extern_func row"
    );
    assert_eq!(
        c_type(r.ctype),
        "MPI_Copy_function *",
        "MPI_DUP_FN: unexpected C_TYPE"
    );
    let sym = r
        .note
        .split_whitespace()
        .skip_while(|w| *w != "symbol")
        .nth(1)
        .unwrap_or("MPIR_Dup_fn");
    out.push_str(&format!(
        "int {sym}(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in,\n    void *attribute_val_out, int *flag);\n"
    ));
    define(out, "MPI_DUP_FN", sym);
    define(
        out,
        "MPI_COMM_DUP_FN",
        "((MPI_Comm_copy_attr_function *)MPI_DUP_FN)",
    );
    define(
        out,
        "MPI_TYPE_DUP_FN",
        "((MPI_Type_copy_attr_function *)MPI_DUP_FN)",
    );
    define(
        out,
        "MPI_WIN_DUP_FN",
        "((MPI_Win_copy_attr_function *)MPI_DUP_FN)",
    );
}

/// Builds mpi.h: the template with its marker lines replaced by the constants and
/// the prototypes.
pub fn generate_mpi_h(tsv: &str, tmpl: &str, prototypes: &str) -> String {
    for marker in [MARKER, PROTOTYPES_MARKER] {
        let hits = tmpl.lines().filter(|l| l.trim() == marker).count();
        assert_eq!(
            hits, 1,
            "include/mpi.h.in must contain the line {marker} exactly once"
        );
    }
    let consts = constants(tsv);
    let mut out = String::with_capacity(tmpl.len() + consts.len() + prototypes.len() + 256);
    out.push_str(
        "/* Generated by build.rs from include/mpi.h.in, abi/mpich-abi-c.tsv and api/prototypes.h. Do not edit. */\n",
    );
    for line in tmpl.lines() {
        if line.trim() == MARKER {
            out.push_str(consts.trim_start_matches('\n'));
        } else if line.trim() == PROTOTYPES_MARKER {
            out.push_str(prototypes.trim_end_matches('\n'));
            out.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
