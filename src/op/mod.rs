//! Reduction operations: the predefined ops, the (op, type class) validity table of
//! MPI §5.9.2, the kernels, and user-defined operations (§5.9.5).
//!
//! What the collectives call:
//! - [`resolve`] an op handle to an [`OpRef`] once per call (it holds an `Arc`, so an op
//!   freed meanwhile stays alive until the operation completes);
//! - [`is_commutative`] to choose an algorithm;
//! - [`apply`] (`inout = inv op inout`, element-wise), or for a predefined op
//!   [`kernel_for`] once and then the returned [`Kernel`] on each block.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - calls of the program's MPI_User_function (a C function pointer) on the buffers of
//!   a reduction. kernels.rs (SIMD intrinsics behind CPU feature checks), ld.rs (the C
//!   long-double loops) and tests.rs (MXCSR access, user functions) have their own.
use crate::abi::*;
use crate::datatype::predefined::{self, Predef, TypeClass};
use crate::error::{err, MpiResult};
use std::os::raw::{c_int, c_void};
use std::sync::{Arc, RwLock};

pub mod kernels;
mod ld;

#[cfg(test)]
mod tests;

pub use kernels::{kernel, Kernel};

/// The predefined operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinOp {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

impl BuiltinOp {
    /// Every predefined op, in handle order.
    pub const ALL: [BuiltinOp; 14] = [
        BuiltinOp::Max,
        BuiltinOp::Min,
        BuiltinOp::Sum,
        BuiltinOp::Prod,
        BuiltinOp::Land,
        BuiltinOp::Band,
        BuiltinOp::Lor,
        BuiltinOp::Bor,
        BuiltinOp::Lxor,
        BuiltinOp::Bxor,
        BuiltinOp::Minloc,
        BuiltinOp::Maxloc,
        BuiltinOp::Replace,
        BuiltinOp::NoOp,
    ];

    /// The predefined op of handle `h`, if it is one.
    pub fn from_handle(h: i32) -> Option<BuiltinOp> {
        Some(match h {
            MPI_MAX => BuiltinOp::Max,
            MPI_MIN => BuiltinOp::Min,
            MPI_SUM => BuiltinOp::Sum,
            MPI_PROD => BuiltinOp::Prod,
            MPI_LAND => BuiltinOp::Land,
            MPI_BAND => BuiltinOp::Band,
            MPI_LOR => BuiltinOp::Lor,
            MPI_BOR => BuiltinOp::Bor,
            MPI_LXOR => BuiltinOp::Lxor,
            MPI_BXOR => BuiltinOp::Bxor,
            MPI_MINLOC => BuiltinOp::Minloc,
            MPI_MAXLOC => BuiltinOp::Maxloc,
            MPI_REPLACE => BuiltinOp::Replace,
            MPI_NO_OP => BuiltinOp::NoOp,
            _ => return None,
        })
    }

    /// The op's handle.
    pub fn handle(self) -> i32 {
        match self {
            BuiltinOp::Max => MPI_MAX,
            BuiltinOp::Min => MPI_MIN,
            BuiltinOp::Sum => MPI_SUM,
            BuiltinOp::Prod => MPI_PROD,
            BuiltinOp::Land => MPI_LAND,
            BuiltinOp::Band => MPI_BAND,
            BuiltinOp::Lor => MPI_LOR,
            BuiltinOp::Bor => MPI_BOR,
            BuiltinOp::Lxor => MPI_LXOR,
            BuiltinOp::Bxor => MPI_BXOR,
            BuiltinOp::Minloc => MPI_MINLOC,
            BuiltinOp::Maxloc => MPI_MAXLOC,
            BuiltinOp::Replace => MPI_REPLACE,
            BuiltinOp::NoOp => MPI_NO_OP,
        }
    }

    /// The standard name, e.g. "MPI_SUM".
    pub fn name(self) -> &'static str {
        match self {
            BuiltinOp::Max => "MPI_MAX",
            BuiltinOp::Min => "MPI_MIN",
            BuiltinOp::Sum => "MPI_SUM",
            BuiltinOp::Prod => "MPI_PROD",
            BuiltinOp::Land => "MPI_LAND",
            BuiltinOp::Band => "MPI_BAND",
            BuiltinOp::Lor => "MPI_LOR",
            BuiltinOp::Bor => "MPI_BOR",
            BuiltinOp::Lxor => "MPI_LXOR",
            BuiltinOp::Bxor => "MPI_BXOR",
            BuiltinOp::Minloc => "MPI_MINLOC",
            BuiltinOp::Maxloc => "MPI_MAXLOC",
            BuiltinOp::Replace => "MPI_REPLACE",
            BuiltinOp::NoOp => "MPI_NO_OP",
        }
    }
}

/// The validity table of MPI §5.9.2 / §5.9.4: may `op` reduce data of type class `class`?
/// MPI_REPLACE and MPI_NO_OP belong to one-sided accumulate only: never in reductions.
pub fn valid(op: BuiltinOp, class: TypeClass) -> bool {
    use BuiltinOp as O;
    use TypeClass as C;
    match op {
        O::Max | O::Min => matches!(class, C::CInteger | C::FortranInteger | C::FloatingPoint),
        O::Sum | O::Prod => matches!(
            class,
            C::CInteger | C::FortranInteger | C::FloatingPoint | C::Complex
        ),
        O::Land | O::Lor | O::Lxor => matches!(class, C::CInteger | C::Logical),
        O::Band | O::Bor | O::Bxor => matches!(class, C::CInteger | C::FortranInteger | C::Byte),
        O::Minloc | O::Maxloc => class == C::Pair,
        O::Replace | O::NoOp => false,
    }
}

/// Checks that predefined `op` may reduce predefined datatype `p`; the error (class
/// MPI_ERR_OP) names both.
pub fn check_valid(op: BuiltinOp, p: &Predef) -> MpiResult<()> {
    if valid(op, p.class) {
        return Ok(());
    }
    if matches!(op, BuiltinOp::Replace | BuiltinOp::NoOp) {
        return Err(err(
            MPI_ERR_OP,
            format!(
                "{} is only valid in one-sided accumulate operations, not in reductions (datatype {})",
                op.name(),
                p.name
            ),
        ));
    }
    Err(err(
        MPI_ERR_OP,
        format!(
            "{} is not defined for datatype {} ({})",
            op.name(),
            p.name,
            p.class.name()
        ),
    ))
}

/// The predefined datatype of handle `dtype`, or MPI_ERR_TYPE naming it.
pub fn predefined_type(dtype: i32) -> MpiResult<&'static Predef> {
    if dtype == MPI_DATATYPE_NULL {
        return Err(err(MPI_ERR_TYPE, "invalid datatype MPI_DATATYPE_NULL"));
    }
    predefined::lookup(dtype).ok_or_else(|| {
        if handle_obj(dtype) == OBJ_DATATYPE && handle_kind(dtype) == KIND_DIRECT {
            // Derived datatypes reduce through their basic element type: see
            // `reduce_basic` (and `apply`, which does it for packed data).
            err(
                MPI_ERR_TYPE,
                format!(
                    "datatype {dtype:#010x} is derived: reduce its packed data with the basic type from op::reduce_basic"
                ),
            )
        } else {
            err(
                MPI_ERR_TYPE,
                format!("invalid datatype handle {dtype:#010x}"),
            )
        }
    })
}

/// For predefined `op` on any committed datatype: the predefined type its type map is
/// made of and how many of them one instance holds (`(dtype, 1)` for a predefined
/// type); `None` for a type with no data (nothing to reduce). MPI_ERR_OP naming the op
/// and the type if the type map mixes basic types or the op is not defined on them.
pub fn reduce_basic(op: BuiltinOp, dtype: i32) -> MpiResult<Option<(i32, usize)>> {
    if let Some(p) = predefined::lookup(dtype) {
        check_valid(op, p)?;
        return Ok(Some((dtype, 1)));
    }
    let t = crate::datatype::lookup(dtype)?;
    if t.size() == 0 {
        return Ok(None);
    }
    let Some((basic, per)) = t.basic_elem() else {
        return Err(err(
            MPI_ERR_OP,
            format!(
                "{} needs a datatype made of one predefined type; datatype {dtype:#010x} mixes several",
                op.name()
            ),
        ));
    };
    let p = predefined_type(basic)?;
    check_valid(op, p).map_err(|e| {
        err(
            MPI_ERR_OP,
            format!("{} (datatype {dtype:#010x} is made of {})", e.msg, p.name),
        )
    })?;
    Ok(Some((basic, per)))
}

/// The kernel for predefined `op` on predefined datatype `dtype`, after the standard's
/// validity check, and the datatype's extent (the stride between elements).
/// Errors: MPI_ERR_TYPE for a datatype that is not predefined, MPI_ERR_OP for an
/// (op, type) pair the standard does not define.
pub fn kernel_for(op: BuiltinOp, dtype: i32) -> MpiResult<(Kernel, usize)> {
    if let Some(p) = predefined::lookup(dtype) {
        if let Some(k) = predefined_kernel(op, p) {
            return Ok((k, p.extent));
        }
    }
    let p = predefined_type(dtype)?;
    check_valid(op, p)?;
    Ok((kernel(op, p.elem)?, p.extent))
}

/// The kernels of every valid (predefined op, predefined datatype) pair, chosen once
/// (at the detected vector level): a call then costs two table reads, no validity
/// checks and no `Result`s. `None` where the pair is invalid.
struct KernelTable {
    binary: [[Option<Kernel>; BuiltinOp::ALL.len()]; predefined::PREDEFINED_LEN],
    multi: [[Option<kernels::MultiKernel>; BuiltinOp::ALL.len()]; predefined::PREDEFINED_LEN],
}

fn kernel_table() -> &'static KernelTable {
    static TABLE: std::sync::OnceLock<KernelTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = KernelTable {
            binary: [[None; BuiltinOp::ALL.len()]; predefined::PREDEFINED_LEN],
            multi: [[None; BuiltinOp::ALL.len()]; predefined::PREDEFINED_LEN],
        };
        for ((row, mrow), p) in t
            .binary
            .iter_mut()
            .zip(t.multi.iter_mut())
            .zip(predefined::PREDEFINED.iter())
        {
            for ((slot, mslot), op) in row.iter_mut().zip(mrow.iter_mut()).zip(BuiltinOp::ALL) {
                if valid(op, p.class) {
                    *slot = kernel(op, p.elem).ok();
                    *mslot = kernels::multi_kernel(op, p.elem);
                }
            }
        }
        t
    })
}

/// The index of `p` in `PREDEFINED` from its address (`lookup` hands out references
/// into the static array); checked, so any other reference gives `None`.
#[inline]
fn predefined_index(p: &'static Predef) -> Option<usize> {
    let base = predefined::PREDEFINED.as_ptr() as usize;
    let i = (p as *const Predef as usize).wrapping_sub(base) / std::mem::size_of::<Predef>();
    match predefined::PREDEFINED.get(i) {
        Some(q) if std::ptr::eq(q, p) => Some(i),
        _ => None,
    }
}

/// The kernel of predefined `op` on predefined datatype `p` (an entry of
/// `PREDEFINED`, as `predefined::lookup` returns), or `None` if the standard does
/// not define the pair (then [`kernel_for`] gives the error).
#[inline]
pub fn predefined_kernel(op: BuiltinOp, p: &'static Predef) -> Option<Kernel> {
    predefined_index(p).and_then(|i| kernel_table().binary[i][op as usize])
}

/// As [`predefined_kernel`], with the pair's one-pass fold of several sources
/// (`kernels::MultiKernel`) where it has one.
#[inline]
pub fn predefined_kernels(
    op: BuiltinOp,
    p: &'static Predef,
) -> Option<(Kernel, Option<kernels::MultiKernel>)> {
    let i = predefined_index(p)?;
    let t = kernel_table();
    Some((t.binary[i][op as usize]?, t.multi[i][op as usize]))
}

/// As [`predefined_kernels`], the one-pass fold alone.
pub fn predefined_multi(op: BuiltinOp, p: &'static Predef) -> Option<kernels::MultiKernel> {
    predefined_kernels(op, p).and_then(|(_, m)| m)
}

fn k_replace(inv: &[u8], inout: &mut [u8]) {
    let n = inv.len().min(inout.len());
    inout[..n].copy_from_slice(&inv[..n]);
}

fn k_no_op(_inv: &[u8], _inout: &mut [u8]) {}

/// As [`kernel_for`], for one-sided accumulate: also MPI_REPLACE (copy `inv` over
/// `inout`) and MPI_NO_OP (leave `inout`) on every predefined datatype.
pub fn accumulate_kernel_for(op: BuiltinOp, dtype: i32) -> MpiResult<(Kernel, usize)> {
    let p = predefined_type(dtype)?;
    match op {
        BuiltinOp::Replace => Ok((k_replace as Kernel, p.extent)),
        BuiltinOp::NoOp => Ok((k_no_op as Kernel, p.extent)),
        _ => kernel_for(op, dtype),
    }
}

/// Bytes that `count` elements of `p` span: `(count-1)*extent + true_extent` (the last
/// element's trailing padding is not needed), 0 for count 0.
pub fn span(p: &Predef, count: usize) -> Option<usize> {
    if count == 0 {
        return Some(0);
    }
    (count - 1)
        .checked_mul(p.extent)?
        .checked_add(p.true_extent)
}

// ---------------------------------------------------------------------------------------
// User-defined operations

/// The user function of MPI_Op_create: (invec, inoutvec, *len, *datatype). C and
/// Fortran functions have this shape alike (all arguments by address); the datatype
/// is the caller's handle.
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut i32);

/// The user function of MPI-4 MPI_Op_create_c: the same with an MPI_Count length.
pub type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut i32);

/// A user operation's function, as it was registered.
#[derive(Debug, Clone, Copy)]
pub enum UserFunc {
    /// MPI_Op_create (C or Fortran): called with at most `INT_MAX` elements at a time.
    Int(UserFn),
    /// MPI_Op_create_c: called with the whole count.
    Count(UserFnC),
}

/// A user-defined operation.
#[derive(Debug)]
pub struct UserOp {
    pub func: UserFunc,
    pub commute: bool,
    /// The handle it was created with (for messages).
    pub handle: i32,
}

impl UserOp {
    /// The most elements one call of the function may be handed.
    pub fn max_count(&self) -> usize {
        match self.func {
            UserFunc::Int(_) => c_int::MAX as usize,
            UserFunc::Count(_) => i64::MAX as usize,
        }
    }

    /// Calls the user function on `n` elements of `dtype`: `inout = inv op inout`.
    ///
    /// # Safety
    /// `inv` and `inout` must address `n` elements of `dtype` (as the function sees
    /// them: from the type map's origin), `inv` only read, and `n <= self.max_count()`.
    pub unsafe fn call(&self, inv: *mut c_void, inout: *mut c_void, n: usize, dtype: i32) {
        let mut dt = dtype;
        match self.func {
            UserFunc::Int(f) => {
                let mut len = n as c_int;
                // SAFETY: registered by MPI_Op_create with the standard's
                // MPI_User_function signature; `len` and `dt` are live locals; the
                // buffers are the caller's promise.
                unsafe { f(inv, inout, &mut len, &mut dt) }
            }
            UserFunc::Count(f) => {
                let mut len = n as i64;
                // SAFETY: as above, with MPI_User_function_c's signature
                // (MPI_Op_create_c).
                unsafe { f(inv, inout, &mut len, &mut dt) }
            }
        }
    }
}

/// A resolved operation: what a reduction holds while it runs.
#[derive(Debug, Clone)]
pub enum OpRef {
    Builtin(BuiltinOp),
    User(Arc<UserOp>),
}

impl OpRef {
    /// The op's name for messages: "MPI_SUM" or "user op 0x98000000".
    pub fn name(&self) -> String {
        match self {
            OpRef::Builtin(b) => b.name().to_string(),
            OpRef::User(u) => format!("user op {:#010x}", u.handle),
        }
    }
}

static USER_OPS: RwLock<Vec<Option<Arc<UserOp>>>> = RwLock::new(Vec::new());

/// Largest user-op table index a handle can carry.
const MAX_USER_OPS: usize = 0x03ff_ffff;

/// Registers a user operation and returns its handle (MPI_Op_create).
pub fn create(func: UserFunc, commute: bool) -> MpiResult<i32> {
    let mut t = USER_OPS.write().unwrap_or_else(|e| e.into_inner());
    let idx = match t.iter().position(|s| s.is_none()) {
        Some(i) => i,
        None => {
            if t.len() >= MAX_USER_OPS {
                return Err(err(
                    MPI_ERR_OTHER,
                    "too many user-defined operations (free some with MPI_Op_free)",
                ));
            }
            t.push(None);
            t.len() - 1
        }
    };
    let handle = direct_handle(OBJ_OP, idx);
    t[idx] = Some(Arc::new(UserOp {
        func,
        commute,
        handle,
    }));
    Ok(handle)
}

fn describe_op_handle(h: i32) -> String {
    if h == MPI_OP_NULL {
        "MPI_OP_NULL".to_string()
    } else {
        format!("{h:#010x}")
    }
}

/// Resolves an op handle: a predefined op, or a live user op (held by `Arc`).
/// MPI_OP_NULL, a freed or a garbage handle give MPI_ERR_OP.
pub fn resolve(h: i32) -> MpiResult<OpRef> {
    if let Some(b) = BuiltinOp::from_handle(h) {
        return Ok(OpRef::Builtin(b));
    }
    if h == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "invalid op MPI_OP_NULL"));
    }
    if let Some(u) = crate::pin::replayed_object::<Arc<UserOp>>(h) {
        return Ok(OpRef::User(u));
    }
    let idx = direct_index(h, OBJ_OP)
        .ok_or_else(|| err(MPI_ERR_OP, format!("invalid op handle {h:#010x}")))?;
    let t = USER_OPS.read().unwrap_or_else(|e| e.into_inner());
    match t.get(idx) {
        Some(Some(u)) => {
            crate::pin::record_object(h, u);
            Ok(OpRef::User(u.clone()))
        }
        Some(None) => Err(err(
            MPI_ERR_OP,
            format!("op {h:#010x} has been freed (MPI_Op_free)"),
        )),
        None => Err(err(MPI_ERR_OP, format!("invalid op handle {h:#010x}"))),
    }
}

/// Frees a user operation (MPI_Op_free). Operations in progress keep their `Arc`.
pub fn free(h: i32) -> MpiResult<()> {
    if let Some(b) = BuiltinOp::from_handle(h) {
        return Err(err(
            MPI_ERR_OP,
            format!("cannot free predefined op {}", b.name()),
        ));
    }
    if h == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "cannot free MPI_OP_NULL"));
    }
    let idx = direct_index(h, OBJ_OP).ok_or_else(|| {
        err(
            MPI_ERR_OP,
            format!("invalid op handle {}", describe_op_handle(h)),
        )
    })?;
    let mut t = USER_OPS.write().unwrap_or_else(|e| e.into_inner());
    match t.get_mut(idx) {
        Some(slot @ Some(_)) => {
            *slot = None;
            Ok(())
        }
        Some(None) => Err(err(MPI_ERR_OP, format!("op {h:#010x} was already freed"))),
        None => Err(err(MPI_ERR_OP, format!("invalid op handle {h:#010x}"))),
    }
}

/// True if the op is commutative: every predefined op is; a user op as created.
pub fn is_commutative(op: &OpRef) -> bool {
    match op {
        OpRef::Builtin(_) => true,
        OpRef::User(u) => u.commute,
    }
}

/// `n` packed elements of the predefined pair type `p` (MPI_Pack's form: value and index
/// back to back) laid out as in memory, `extent` apart with each field at its
/// displacement (MPI_SHORT_INT's index is at 4, not 2): what the pair kernels read.
pub fn spread_pairs(p: &Predef, packed: &[u8], n: usize) -> MpiResult<Vec<u8>> {
    let t = crate::datatype::derived::get(p.handle, "datatype")?;
    let mut v = vec![0u8; n * p.extent];
    crate::datatype::unpack_slice(&t, n, &mut v, 0, &packed[..n * p.size], 0)?;
    Ok(v)
}

/// The inverse of [`spread_pairs`].
pub fn gather_pairs(p: &Predef, spread: &[u8], n: usize) -> MpiResult<Vec<u8>> {
    let t = crate::datatype::derived::get(p.handle, "datatype")?;
    let mut v = vec![0u8; n * p.size];
    crate::datatype::pack_slice(&t, n, spread, 0, &mut v, 0)?;
    Ok(v)
}

/// `inout[i] = inv[i] op inout[i]` for `count` elements of datatype `dtype`.
///
/// A predefined op needs a predefined datatype (MPI_ERR_TYPE otherwise) that it is
/// defined on (MPI_ERR_OP otherwise), and both slices must hold `count` elements
/// (MPI_ERR_BUFFER otherwise; the last element's trailing padding may be absent).
/// A user op is called with the caller's datatype handle, once for every
/// `i32::MAX` elements; for a derived datatype the slices are taken as they are.
///
/// Derived datatypes with a predefined op: the type map must hold a single predefined
/// type (see [`reduce_basic`]) and the slices hold the PACKED data
/// (`datatype::pack` of `count` instances, `count * size` bytes); the result in
/// `inout` is packed too (unpack it into the user's buffer).
pub fn apply(op: &OpRef, dtype: i32, inv: &[u8], inout: &mut [u8], count: usize) -> MpiResult<()> {
    match op {
        OpRef::Builtin(b) if predefined::lookup(dtype).is_none() => {
            let Some((basic, per)) = reduce_basic(*b, dtype)? else {
                return Ok(());
            };
            let n = count.checked_mul(per).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count {count} of datatype {dtype:#010x} overflows"),
                )
            })?;
            let p = predefined_type(basic)?;
            if p.size == p.extent {
                return apply(op, basic, inv, inout, n);
            }
            // A pair type with padding (e.g. MPI_DOUBLE_INT): packed elements are `size`
            // bytes apart, the kernel reads them laid out as in memory.
            let need = n * p.size;
            check_len(need, inv.len(), inout.len(), n, p.name)?;
            let a = spread_pairs(p, &inv[..need], n)?;
            let mut b2 = spread_pairs(p, &inout[..need], n)?;
            apply(op, basic, &a, &mut b2, n)?;
            inout[..need].copy_from_slice(&gather_pairs(p, &b2, n)?);
            Ok(())
        }
        OpRef::Builtin(b) => {
            let (k, _) = kernel_for(*b, dtype)?;
            let p = predefined_type(dtype)?;
            let need = span(p, count).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count {count} of {} overflows the address space", p.name),
                )
            })?;
            check_len(need, inv.len(), inout.len(), count, p.name)?;
            k(&inv[..need], &mut inout[..need]);
            Ok(())
        }
        OpRef::User(u) => apply_user(u, dtype, inv, inout, count, 0),
    }
}

fn check_len(need: usize, a: usize, b: usize, count: usize, tname: &str) -> MpiResult<()> {
    if a < need || b < need {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "{count} elements of {tname} need {need} bytes, buffers hold {a} (in) and {b} (inout)"
            ),
        ));
    }
    Ok(())
}

fn apply_user(
    u: &UserOp,
    dtype: i32,
    inv: &[u8],
    inout: &mut [u8],
    count: usize,
    lb: isize,
) -> MpiResult<()> {
    if count == 0 {
        return Ok(());
    }
    let chunk = u.max_count();
    // The stride between chunks: needed only beyond `chunk` elements.
    let extent = if count > chunk {
        crate::datatype::info(dtype).map(|i| i.1).ok_or_else(|| {
            err(
                MPI_ERR_COUNT,
                format!("count {count} exceeds {chunk} for a user op on datatype {dtype:#010x}"),
            )
        })?
    } else {
        0
    };
    if let Some(p) = predefined::lookup(dtype) {
        let need =
            span(p, count).ok_or_else(|| err(MPI_ERR_COUNT, format!("count {count} overflows")))?;
        check_len(need, inv.len(), inout.len(), count, p.name)?;
    }
    let mut done = 0usize;
    while done < count {
        let n = (count - done).min(chunk);
        let off = done * extent;
        // The user function addresses the datatype's type map from the buffer address,
        // which is `lb` bytes before the first instance's memory image.
        let a = inv[off..].as_ptr().wrapping_offset(-lb) as *mut c_void;
        let b = inout[off..].as_mut_ptr().wrapping_offset(-lb) as *mut c_void;
        // SAFETY: `a` and `b` point at `n` (at most `max_count`) elements of `dtype`
        // inside the slices (checked above for predefined types; for derived types the
        // caller sized them). The user function reads `a` only.
        unsafe { u.call(a, b, n, dtype) };
        done += n;
    }
    Ok(())
}

/// [`apply`] on memory images of a derived datatype whose lower bound is `lb`: each
/// slice starts at the first instance's lower bound, so a user function is handed the
/// address the type map is relative to (`slice - lb`). Predefined ops are unaffected.
pub fn apply_image(
    op: &OpRef,
    dtype: i32,
    inv: &[u8],
    inout: &mut [u8],
    count: usize,
    lb: isize,
) -> MpiResult<()> {
    match op {
        OpRef::User(u) => apply_user(u, dtype, inv, inout, count, lb),
        _ => apply(op, dtype, inv, inout, count),
    }
}

/// MPI_Reduce_local of `n` elements of `datatype` (`inout = in op inout`), once the
/// arguments are checked.
///
/// # Safety
/// As the standard requires, `inbuf` and `inoutbuf` each hold `n` elements of
/// `datatype`, are not NULL (when `n > 0`) nor MPI_IN_PLACE, and do not overlap.
pub unsafe fn reduce_local(
    o: &OpRef,
    datatype: i32,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: usize,
) -> MpiResult<()> {
    match o {
        OpRef::Builtin(b) if predefined::lookup(datatype).is_none() => {
            // A derived datatype: pack both buffers, reduce the packed data with the
            // kernel of its basic type, unpack the result into inoutbuf.
            let t = crate::datatype::lookup_arg(datatype, "datatype")?;
            if reduce_basic(*b, datatype)?.is_none() || n == 0 {
                return Ok(());
            }
            let bytes = crate::datatype::packed_size(&t, n).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count = {n} of datatype {datatype:#010x} overflows"),
                )
            })?;
            let mut a = vec![0u8; bytes];
            let mut b2 = vec![0u8; bytes];
            // SAFETY: the standard requires inbuf and inoutbuf to hold `count` instances
            // of `datatype`; both were checked non-NULL and not MPI_IN_PLACE above.
            crate::datatype::pack(&t, n, inbuf as *const u8, &mut a, 0);
            // SAFETY: as above.
            crate::datatype::pack(&t, n, inoutbuf as *const u8, &mut b2, 0);
            apply(o, datatype, &a, &mut b2, n)?;
            // SAFETY: as above; inoutbuf is writable and `b2` is our own vector.
            crate::datatype::unpack(&t, n, inoutbuf as *mut u8, &b2, 0);
            Ok(())
        }
        OpRef::Builtin(b) => {
            let p = predefined_type(datatype)?;
            check_valid(*b, p)?;
            let bytes = span(p, n).ok_or_else(|| {
                err(
                    MPI_ERR_COUNT,
                    format!("count = {n} of {} overflows", p.name),
                )
            })?;
            if bytes == 0 {
                return Ok(());
            }
            // SAFETY: the standard requires inbuf and inoutbuf to hold `count` elements
            // of `datatype`, i.e. at least `bytes` bytes; both were checked non-NULL
            // and not MPI_IN_PLACE above. If they overlap the call is erroneous.
            let a = std::slice::from_raw_parts(inbuf as *const u8, bytes);
            // SAFETY: as above; inoutbuf is written through this one slice only.
            let b = std::slice::from_raw_parts_mut(inoutbuf as *mut u8, bytes);
            apply(o, datatype, a, b, n)
        }
        OpRef::User(u) => {
            // valid and committed (the user function gets the handle itself)
            crate::datatype::lookup_arg(datatype, "datatype")?;
            if n == 0 {
                return Ok(());
            }
            // In calls of at most `max_count` elements (INT_MAX for MPI_Op_create's
            // functions; the elements are independent), `extent` bytes apart.
            let ext = crate::datatype::info(datatype).map_or(0, |i| i.1);
            let mut done = 0usize;
            while done < n {
                let k = (n - done).min(u.max_count());
                let off = done * ext;
                // SAFETY: a user op receives the caller's buffers as they are (the
                // datatype may be derived: its layout is the user function's business);
                // elements done..done + k lie `off` bytes on; `k <= max_count`.
                u.call(
                    (inbuf as *mut u8).wrapping_add(off) as *mut c_void,
                    (inoutbuf as *mut u8).wrapping_add(off) as *mut c_void,
                    k,
                    datatype,
                );
                done += k;
            }
            Ok(())
        }
    }
}
