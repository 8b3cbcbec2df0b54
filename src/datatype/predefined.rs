//! The predefined datatypes: every handle of abi/mpich-abi-c.tsv with its standard name,
//! size, extent, element kind (how the reduction kernels read it) and the type class the
//! standard puts it in for the predefined reduction operations (MPI-2.2 §5.9.2 and
//! Annex B.1 item 11; MPI_COUNT and the C++ types as MPI-3 classifies them).
//!
//! Aliases (MPI_LONG_LONG = MPI_LONG_LONG_INT, MPI_C_COMPLEX = MPI_C_FLOAT_COMPLEX) share
//! one handle and so one entry; the entry carries the first name. MPI_INTEGER16 is
//! MPI_DATATYPE_NULL in this ABI (unsupported) and is not in the table.
#![deny(unsafe_code)]
use crate::abi::*;

/// How the bytes of one element are read by the reduction kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// x87 80-bit extended precision stored in 16 bytes (C `long double`).
    LongDouble,
    /// IEEE binary128 (`__float128`, Fortran REAL*16).
    Float128,
    /// IEEE binary16 (MPIX_C_FLOAT16).
    F16,
    ComplexF32,
    ComplexF64,
    ComplexLongDouble,
    /// Two binary128 (COMPLEX*32).
    ComplexFloat128,
    /// C `_Bool` / C++ `bool`: one byte, non-zero is true.
    CBool,
    /// Fortran LOGICAL: 4 bytes, non-zero is true, .TRUE. is written as 1 (gfortran).
    FLogical,
    Byte,
    /// MPI_CHAR / MPI_CHARACTER: text, not a number.
    Char,
    WChar,
    Packed,
    /// MPI_LB / MPI_UB markers (size 0).
    LbUb,
    /// (float value, int index), extent 8.
    FloatInt,
    /// (double value @0, int index @8), size 12, extent 16.
    DoubleInt,
    /// (long value @0, int index @8), size 12, extent 16.
    LongInt,
    /// (short value @0, int index @4), size 6, extent 8.
    ShortInt,
    /// (long double value @0, int index @16), size 20, extent 32.
    LongDoubleInt,
    /// (int, int).
    TwoInt,
    /// (INTEGER, INTEGER).
    TwoInteger,
    /// (REAL, REAL).
    TwoReal,
    /// (DOUBLE PRECISION, DOUBLE PRECISION).
    TwoDoublePrecision,
}

impl Elem {
    /// True for the (value, index) kinds that MPI_MINLOC / MPI_MAXLOC take.
    pub fn is_pair(self) -> bool {
        matches!(
            self,
            Elem::FloatInt
                | Elem::DoubleInt
                | Elem::LongInt
                | Elem::ShortInt
                | Elem::LongDoubleInt
                | Elem::TwoInt
                | Elem::TwoInteger
                | Elem::TwoReal
                | Elem::TwoDoublePrecision
        )
    }
}

/// The type classes of MPI §5.9.2, which decide the valid (op, type) combinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeClass {
    CInteger,
    FortranInteger,
    FloatingPoint,
    Logical,
    Complex,
    Byte,
    /// The MINLOC/MAXLOC pair types (§5.9.4); valid only with those two ops.
    Pair,
    /// In no class: MPI_CHAR, MPI_CHARACTER, MPI_WCHAR, MPI_PACKED, MPI_LB, MPI_UB.
    None,
}

impl TypeClass {
    /// The name used in messages, e.g. "floating point".
    pub fn name(self) -> &'static str {
        match self {
            TypeClass::CInteger => "C integer",
            TypeClass::FortranInteger => "Fortran integer",
            TypeClass::FloatingPoint => "floating point",
            TypeClass::Logical => "logical",
            TypeClass::Complex => "complex",
            TypeClass::Byte => "byte",
            TypeClass::Pair => "MINLOC/MAXLOC pair",
            TypeClass::None => "no reduction type class",
        }
    }
}

/// One predefined datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predef {
    pub handle: i32,
    pub name: &'static str,
    /// MPI_Type_size, in bytes.
    pub size: usize,
    /// MPI_Type_get_extent (lower bound is always 0), in bytes.
    pub extent: usize,
    /// MPI_Type_get_true_extent (true lower bound is always 0): the bytes one element
    /// really spans. Equal to `size` except for MPI_SHORT_INT (short @0, int @4: 8).
    pub true_extent: usize,
    pub elem: Elem,
    pub class: TypeClass,
}

const fn p(
    handle: i32,
    name: &'static str,
    size: usize,
    extent: usize,
    elem: Elem,
    class: TypeClass,
) -> Predef {
    // MPI_SHORT_INT has a hole between its short and its int: it spans 8 bytes.
    let true_extent = if handle == MPI_SHORT_INT { 8 } else { size };
    Predef {
        handle,
        name,
        size,
        extent,
        true_extent,
        elem,
        class,
    }
}

use Elem as E;
use TypeClass as C;

/// An entry of the table: the handle, whose constant's name is the type's name, then
/// size, extent, element kind and type class.
macro_rules! p {
    ($h:ident, $($rest:expr),*) => {
        p($h, stringify!($h), $($rest),*)
    };
}

/// Every predefined datatype, in the order of the ABI table.
pub static PREDEFINED: [Predef; PREDEFINED_LEN] = LIST;

/// Number of distinct predefined datatype handles.
pub const PREDEFINED_LEN: usize = 65;

#[rustfmt::skip]
const LIST: [Predef; PREDEFINED_LEN] = [
    p!(MPI_CHAR, 1, 1, E::Char, C::None),
    p!(MPI_SIGNED_CHAR, 1, 1, E::I8, C::CInteger),
    p!(MPI_UNSIGNED_CHAR, 1, 1, E::U8, C::CInteger),
    p!(MPI_BYTE, 1, 1, E::Byte, C::Byte),
    p!(MPI_WCHAR, 4, 4, E::WChar, C::None),
    p!(MPI_SHORT, 2, 2, E::I16, C::CInteger),
    p!(MPI_UNSIGNED_SHORT, 2, 2, E::U16, C::CInteger),
    p!(MPI_INT, 4, 4, E::I32, C::CInteger),
    p!(MPI_UNSIGNED, 4, 4, E::U32, C::CInteger),
    p!(MPI_LONG, 8, 8, E::I64, C::CInteger),
    p!(MPI_UNSIGNED_LONG, 8, 8, E::U64, C::CInteger),
    p!(MPI_FLOAT, 4, 4, E::F32, C::FloatingPoint),
    p!(MPI_DOUBLE, 8, 8, E::F64, C::FloatingPoint),
    p!(MPI_LONG_DOUBLE, 16, 16, E::LongDouble, C::FloatingPoint),
    p!(MPI_LONG_LONG_INT, 8, 8, E::I64, C::CInteger),
    p!(MPI_UNSIGNED_LONG_LONG, 8, 8, E::U64, C::CInteger),
    p!(MPI_PACKED, 1, 1, E::Packed, C::None),
    p!(MPI_LB, 0, 0, E::LbUb, C::None),
    p!(MPI_UB, 0, 0, E::LbUb, C::None),
    p!(MPI_INT8_T, 1, 1, E::I8, C::CInteger),
    p!(MPI_INT16_T, 2, 2, E::I16, C::CInteger),
    p!(MPI_INT32_T, 4, 4, E::I32, C::CInteger),
    p!(MPI_INT64_T, 8, 8, E::I64, C::CInteger),
    p!(MPI_UINT8_T, 1, 1, E::U8, C::CInteger),
    p!(MPI_UINT16_T, 2, 2, E::U16, C::CInteger),
    p!(MPI_UINT32_T, 4, 4, E::U32, C::CInteger),
    p!(MPI_UINT64_T, 8, 8, E::U64, C::CInteger),
    p!(MPI_C_BOOL, 1, 1, E::CBool, C::Logical),
    p!(MPI_C_COMPLEX, 8, 8, E::ComplexF32, C::Complex),
    p!(MPI_C_DOUBLE_COMPLEX, 16, 16, E::ComplexF64, C::Complex),
    p!(MPI_C_LONG_DOUBLE_COMPLEX, 32, 32, E::ComplexLongDouble, C::Complex),
    p!(MPI_AINT, 8, 8, E::I64, C::FortranInteger),
    p!(MPI_OFFSET, 8, 8, E::I64, C::FortranInteger),
    p!(MPI_COUNT, 8, 8, E::I64, C::FortranInteger),
    p!(MPIX_C_FLOAT16, 2, 2, E::F16, C::FloatingPoint),
    p!(MPI_2INT, 8, 8, E::TwoInt, C::Pair),
    p!(MPI_FLOAT_INT, 8, 8, E::FloatInt, C::Pair),
    p!(MPI_DOUBLE_INT, 12, 16, E::DoubleInt, C::Pair),
    p!(MPI_LONG_INT, 12, 16, E::LongInt, C::Pair),
    p!(MPI_SHORT_INT, 6, 8, E::ShortInt, C::Pair),
    p!(MPI_LONG_DOUBLE_INT, 20, 32, E::LongDoubleInt, C::Pair),
    p!(MPI_INTEGER, 4, 4, E::I32, C::FortranInteger),
    p!(MPI_REAL, 4, 4, E::F32, C::FloatingPoint),
    p!(MPI_DOUBLE_PRECISION, 8, 8, E::F64, C::FloatingPoint),
    p!(MPI_COMPLEX, 8, 8, E::ComplexF32, C::Complex),
    p!(MPI_DOUBLE_COMPLEX, 16, 16, E::ComplexF64, C::Complex),
    p!(MPI_LOGICAL, 4, 4, E::FLogical, C::Logical),
    p!(MPI_CHARACTER, 1, 1, E::Char, C::None),
    p!(MPI_2INTEGER, 8, 8, E::TwoInteger, C::Pair),
    p!(MPI_2REAL, 8, 8, E::TwoReal, C::Pair),
    p!(MPI_2DOUBLE_PRECISION, 16, 16, E::TwoDoublePrecision, C::Pair),
    p!(MPI_INTEGER1, 1, 1, E::I8, C::FortranInteger),
    p!(MPI_INTEGER2, 2, 2, E::I16, C::FortranInteger),
    p!(MPI_INTEGER4, 4, 4, E::I32, C::FortranInteger),
    p!(MPI_INTEGER8, 8, 8, E::I64, C::FortranInteger),
    p!(MPI_REAL4, 4, 4, E::F32, C::FloatingPoint),
    p!(MPI_REAL8, 8, 8, E::F64, C::FloatingPoint),
    p!(MPI_REAL16, 16, 16, E::Float128, C::FloatingPoint),
    p!(MPI_COMPLEX8, 8, 8, E::ComplexF32, C::Complex),
    p!(MPI_COMPLEX16, 16, 16, E::ComplexF64, C::Complex),
    p!(MPI_COMPLEX32, 32, 32, E::ComplexFloat128, C::Complex),
    p!(MPI_CXX_BOOL, 1, 1, E::CBool, C::Logical),
    p!(MPI_CXX_FLOAT_COMPLEX, 8, 8, E::ComplexF32, C::Complex),
    p!(MPI_CXX_DOUBLE_COMPLEX, 16, 16, E::ComplexF64, C::Complex),
    p!(MPI_CXX_LONG_DOUBLE_COMPLEX, 32, 32, E::ComplexLongDouble, C::Complex),
];

/// Index into [`PREDEFINED`] by handle. The built-in handles carry a 7-bit index in
/// bits 0-7 (0x01..0x46) and the five pair types are direct handles 0..4, so a 128-entry
/// table for the built-ins and a 5-entry one for the pairs answer in O(1).
struct Index {
    builtin: [u8; 128],
    pair: [u8; 5],
}

const NONE: u8 = u8::MAX;

const INDEX: Index = {
    let mut ix = Index {
        builtin: [NONE; 128],
        pair: [NONE; 5],
    };
    let mut i = 0;
    while i < PREDEFINED_LEN {
        let h = LIST[i].handle as u32;
        if h >> 30 == KIND_BUILTIN {
            ix.builtin[(h & 0x7f) as usize] = i as u8;
        } else {
            ix.pair[(h & 0x7) as usize] = i as u8;
        }
        i += 1;
    }
    ix
};

/// Looks up a predefined datatype by handle; `None` for anything else (derived handles,
/// MPI_DATATYPE_NULL, garbage).
#[inline]
pub fn lookup(h: i32) -> Option<&'static Predef> {
    let u = h as u32;
    let slot = match u >> 30 {
        KIND_BUILTIN if (u >> 26) & 0xf == OBJ_DATATYPE => {
            // Built-in datatype handles are 0x4c00SS II: size byte then index byte.
            if u & 0x80 != 0 {
                return None;
            }
            INDEX.builtin[(u & 0x7f) as usize]
        }
        KIND_DIRECT if u & !0x7 == MPI_FLOAT_INT as u32 && (u & 0x7) < 5 => {
            INDEX.pair[(u & 0x7) as usize]
        }
        _ => return None,
    };
    if slot == NONE {
        return None;
    }
    let e = &PREDEFINED[slot as usize];
    if e.handle == h {
        Some(e)
    } else {
        None
    }
}

/// The standard name of a predefined datatype, or a description of the handle.
pub fn name_of(h: i32) -> String {
    if h == MPI_DATATYPE_NULL {
        return "MPI_DATATYPE_NULL".to_string();
    }
    match lookup(h) {
        Some(p) => p.name.to_string(),
        None => format!("datatype {h:#010x}"),
    }
}

/// True if `h` is one of the five pair types whose handles collide with the first
/// direct datatype indices (0..4): a derived-datatype table must not hand those out.
pub fn is_reserved_direct(h: i32) -> bool {
    matches!(
        h,
        MPI_FLOAT_INT | MPI_DOUBLE_INT | MPI_LONG_INT | MPI_SHORT_INT | MPI_LONG_DOUBLE_INT
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every datatype row of the ABI table: (name, handle, size, extent) read from the
    /// NOTE column (mpich_Type_size, extent).
    fn tsv_rows() -> Vec<(String, i32, Option<usize>, Option<usize>)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/abi/mpich-abi-c.tsv");
        let tsv = std::fs::read_to_string(path).unwrap();
        let mut out = vec![];
        for line in tsv.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 6 || f[3] != "datatype" {
                continue;
            }
            let h = u32::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap() as i32;
            let field = |key: &str| {
                f[5].split_whitespace()
                    .find_map(|kv| kv.strip_prefix(key))
                    .map(|v| v.parse::<usize>().unwrap())
            };
            out.push((
                f[0].to_string(),
                h,
                field("mpich_Type_size="),
                field("extent="),
            ));
        }
        out
    }

    #[test]
    fn table_matches_abi_tsv() {
        let rows = tsv_rows();
        assert!(rows.len() > 60);
        for (name, h, size, extent) in &rows {
            if *h == MPI_DATATYPE_NULL {
                // MPI_DATATYPE_NULL and MPI_INTEGER16 (unsupported in this ABI)
                assert!(lookup(*h).is_none(), "{name}");
                continue;
            }
            let p = lookup(*h).unwrap_or_else(|| panic!("{name} {h:#x} missing"));
            assert_eq!(p.handle, *h);
            assert_eq!(Some(p.size), *size, "{name} size");
            assert_eq!(Some(p.extent), *extent, "{name} extent");
            // the entry carries this name or that of the alias with the same handle
            let same_handle: Vec<&str> = rows
                .iter()
                .filter(|r| r.1 == *h)
                .map(|r| r.0.as_str())
                .collect();
            assert!(same_handle.contains(&p.name), "{name} vs {}", p.name);
        }
        // and nothing in the table that the TSV does not have
        for p in PREDEFINED.iter() {
            assert!(
                rows.iter().any(|r| r.1 == p.handle && r.0 == p.name),
                "{}",
                p.name
            );
        }
        // handles are unique
        for (i, p) in PREDEFINED.iter().enumerate() {
            assert!(
                PREDEFINED[i + 1..].iter().all(|q| q.handle != p.handle),
                "{}",
                p.name
            );
        }
    }

    #[test]
    fn built_in_handles_encode_their_size() {
        for p in PREDEFINED.iter() {
            let u = p.handle as u32;
            if u >> 30 == KIND_BUILTIN {
                assert_eq!(((u >> 8) & 0xff) as usize, p.size, "{}", p.name);
            }
        }
    }

    #[test]
    fn pair_layouts() {
        let get = |h| lookup(h).unwrap();
        assert_eq!(
            (get(MPI_DOUBLE_INT).size, get(MPI_DOUBLE_INT).extent),
            (12, 16)
        );
        assert_eq!(
            (
                get(MPI_LONG_DOUBLE_INT).size,
                get(MPI_LONG_DOUBLE_INT).extent
            ),
            (20, 32)
        );
        assert_eq!((get(MPI_SHORT_INT).size, get(MPI_SHORT_INT).extent), (6, 8));
        assert_eq!(get(MPI_SHORT_INT).true_extent, 8);
        assert_eq!((get(MPI_LONG_INT).size, get(MPI_LONG_INT).extent), (12, 16));
        assert_eq!((get(MPI_FLOAT_INT).size, get(MPI_FLOAT_INT).extent), (8, 8));
        for p in PREDEFINED.iter() {
            assert_eq!(p.elem.is_pair(), p.class == TypeClass::Pair, "{}", p.name);
            assert!(
                p.true_extent <= p.extent && p.size <= p.true_extent,
                "{}",
                p.name
            );
        }
    }

    #[test]
    fn classes_follow_the_standard() {
        let class = |h| lookup(h).unwrap().class;
        use TypeClass as C;
        for h in [
            MPI_INT,
            MPI_SIGNED_CHAR,
            MPI_UNSIGNED_CHAR,
            MPI_INT8_T,
            MPI_UINT64_T,
            MPI_LONG_LONG,
            MPI_UNSIGNED_LONG_LONG,
        ] {
            assert_eq!(class(h), C::CInteger);
        }
        for h in [
            MPI_INTEGER,
            MPI_INTEGER1,
            MPI_INTEGER8,
            MPI_AINT,
            MPI_OFFSET,
            MPI_COUNT,
        ] {
            assert_eq!(class(h), C::FortranInteger);
        }
        for h in [
            MPI_FLOAT,
            MPI_DOUBLE,
            MPI_LONG_DOUBLE,
            MPI_REAL,
            MPI_DOUBLE_PRECISION,
            MPI_REAL4,
            MPI_REAL8,
            MPI_REAL16,
            MPIX_C_FLOAT16,
        ] {
            assert_eq!(class(h), C::FloatingPoint);
        }
        for h in [MPI_LOGICAL, MPI_C_BOOL, MPI_CXX_BOOL] {
            assert_eq!(class(h), C::Logical);
        }
        for h in [
            MPI_COMPLEX,
            MPI_DOUBLE_COMPLEX,
            MPI_C_COMPLEX,
            MPI_C_FLOAT_COMPLEX,
            MPI_C_DOUBLE_COMPLEX,
            MPI_C_LONG_DOUBLE_COMPLEX,
            MPI_COMPLEX8,
            MPI_COMPLEX16,
            MPI_COMPLEX32,
            MPI_CXX_FLOAT_COMPLEX,
            MPI_CXX_DOUBLE_COMPLEX,
            MPI_CXX_LONG_DOUBLE_COMPLEX,
        ] {
            assert_eq!(class(h), C::Complex);
        }
        assert_eq!(class(MPI_BYTE), C::Byte);
        for h in [
            MPI_CHAR,
            MPI_CHARACTER,
            MPI_WCHAR,
            MPI_PACKED,
            MPI_LB,
            MPI_UB,
        ] {
            assert_eq!(class(h), C::None);
        }
    }

    #[test]
    fn lookup_rejects_everything_else() {
        for h in [
            0,
            -1,
            MPI_DATATYPE_NULL,
            MPI_COMM_WORLD,
            MPI_SUM,
            0x4c00_0100,
            0x4c00_01ff,
            0x8c00_0005u32 as i32,
            0x8c00_0010u32 as i32,
            MPI_DOUBLE ^ 0x100,
        ] {
            assert!(lookup(h).is_none(), "{h:#x}");
        }
        assert_eq!(name_of(MPI_DOUBLE), "MPI_DOUBLE");
        assert_eq!(name_of(MPI_DATATYPE_NULL), "MPI_DATATYPE_NULL");
        assert!(is_reserved_direct(MPI_SHORT_INT));
    }
}
