//! The user's buffers of a collective, as the engine moves them: contiguous data goes
//! straight through; a non-contiguous datatype (derived, or a padded pair type such as
//! MPI_DOUBLE_INT) travels packed, `count * size` bytes, so every receiver sees the same
//! byte stream whatever its own layout. [`Stage`] keeps the packed copies of inputs and
//! the staging buffers of outputs (unpacked when the collective is done); [`RedData`]
//! decides how a reduction's data is laid out.
//!
//! The buffer arguments are the C caller's addresses, checked here (NULL, MPI_IN_PLACE,
//! MPI_BOTTOM) before they are staged.
use crate::abi::*;
use crate::args::check_base;
use crate::datatype::predefined::Predef;
use crate::datatype::{TypeInfo, TypeRef};
use crate::error::{err, MpiResult};
use crate::p2p::buf::{buffer, contiguous, pack_vec, packed_len, recycle, staging};
use crate::p2p::UserBuf;
use std::os::raw::c_void;

fn lookup(t: &TypeInfo) -> MpiResult<TypeRef> {
    crate::datatype::lookup(t.handle)
}

/// Unpacks a packed stream into `count` instances at `p`.
///
/// # Safety
/// `p` has room for `count` instances of `ty`; `data` is at most their packed size.
unsafe fn unpack_with(p: *mut c_void, count: usize, ty: &TypeRef, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    // SAFETY: this function's contract.
    unsafe { crate::datatype::unpack(ty, count, p as *mut u8, data, 0) };
}

/// The basic pair type of a derived datatype's elements laid out as in memory (see
/// [`Stage::spread`]).
pub type Pair = &'static Predef;

/// A staged output: buffer index, user address, count, type, and the basic pair type
/// when the buffer holds its elements laid out as in memory (see [`Stage::spread`]).
/// The datatype object is the one the call named: the program may free its handle (and
/// get it back for a new type) before a nonblocking collective completes.
type Unpacked = (usize, *mut c_void, usize, TypeRef, Option<Pair>);

/// Staging for collectives: packed copies of non-contiguous inputs, and staging buffers
/// for non-contiguous outputs that are unpacked when the collective is done.
#[derive(Default)]
pub struct Stage {
    bufs: Vec<Vec<u8>>,
    unpacks: Vec<Unpacked>,
    /// Output images (buffer index, user address, count, type, the type's object)
    /// copied back at the end.
    images: Vec<(usize, *mut c_void, usize, TypeInfo, TypeRef)>,
}

// SAFETY: the raw pointers are the MPI caller's buffers, which the standard keeps valid
// and untouched by the caller until the (possibly nonblocking) collective completes; the
// library runs one MPI call at a time (MPI_THREAD_SERIALIZED).
unsafe impl Send for Stage {}

impl Drop for Stage {
    /// The staging buffers go back for the next collective (p2p/buf.rs `staging`).
    fn drop(&mut self) {
        for v in self.bufs.drain(..) {
            recycle(v);
        }
    }
}

/// A buffer argument as the engine sees it once staged, or why it is wrong.
pub type Staged = MpiResult<UserBuf>;

impl Stage {
    /// The bytes `count` instances at `p` contribute (packed if not contiguous).
    pub fn input(&mut self, p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> Staged {
        if t.contiguous {
            return contiguous(p, count, t, arg);
        }
        Ok(self.packed(pack_vec(p, count, t, arg)?))
    }

    /// Where `count` instances at `p` are received (a staging buffer if not contiguous).
    // A safe fn over the C caller's address, as the C boundary's plans call it: they
    // pass addresses valid as the MPI standard requires.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn output(&mut self, p: *mut c_void, count: usize, t: &TypeInfo, arg: &str) -> Staged {
        if t.contiguous {
            return contiguous(p, count, t, arg);
        }
        check_base(p, count, t, arg)?;
        // SAFETY: checked; the MPI caller keeps the buffer valid until the collective
        // completes.
        unsafe { self.unpacked(p, count, t) }
    }

    /// Keeps `v` for the collective's duration and returns the engine's view of it.
    fn hold(&mut self, mut v: Vec<u8>) -> UserBuf {
        // SAFETY: the vector is kept in `self.bufs` (its heap block does not move) for
        // as long as the stage, which outlives the collective.
        let b = unsafe { UserBuf::new(v.as_mut_ptr(), v.len()) };
        self.bufs.push(v);
        b
    }

    /// An input already packed (`pack_vec`), held for the collective.
    pub fn packed(&mut self, v: Vec<u8>) -> UserBuf {
        self.hold(v)
    }

    /// A staging buffer for `count` instances at `p`, unpacked there by `finish`.
    ///
    /// # Safety
    /// `p` is the caller's checked MPI buffer of `count` instances, valid until the
    /// collective completes.
    pub unsafe fn unpacked(
        &mut self,
        p: *mut c_void,
        count: usize,
        t: &TypeInfo,
    ) -> MpiResult<UserBuf> {
        let ty = lookup(t)?;
        let v = staging(packed_len(t, count)?, true);
        self.unpacks.push((self.bufs.len(), p, count, ty, None));
        Ok(self.hold(v))
    }

    /// An input of a datatype made of a padded pair type (`size` bytes of data in an
    /// `extent`-byte element, e.g. MPI_DOUBLE_INT), already packed: the elements are
    /// spread to their extent, the layout the predefined pair type has in memory, so
    /// that every rank hands the engine the same bytes per element whichever datatype
    /// it passed.
    pub fn spread(&mut self, packed: Vec<u8>, pair: Pair) -> MpiResult<UserBuf> {
        let v = crate::op::spread_pairs(pair, &packed, packed.len() / pair.size)?;
        recycle(packed);
        Ok(self.hold(v))
    }

    /// The output twin of [`Stage::spread`]: `finish` gathers the elements back to
    /// packed form and unpacks them.
    ///
    /// # Safety
    /// As [`Stage::unpacked`].
    pub unsafe fn spread_output(
        &mut self,
        p: *mut c_void,
        count: usize,
        t: &TypeInfo,
        pair: Pair,
    ) -> MpiResult<UserBuf> {
        let ty = lookup(t)?;
        let v = staging(packed_len(t, count)? / pair.size * pair.extent, true);
        self.unpacks
            .push((self.bufs.len(), p, count, ty, Some(pair)));
        Ok(self.hold(v))
    }

    /// Keeps a buffer alive for the duration of the collective.
    pub fn keep(&mut self, v: Vec<u8>) {
        self.bufs.push(v);
    }

    /// An image of the `count` instances at `p`: a buffer laid out like the user's
    /// memory from the type's lower bound (`count * extent` bytes), holding the type
    /// map's bytes (the rest zero). User-defined operations index data this way.
    // A safe fn over the C caller's address, as the C boundary's plans call it: they
    // pass addresses valid as the MPI standard requires.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn image(&mut self, p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> Staged {
        check_base(p, count, t, arg)?;
        let mut img = self.new_image(count, t)?;
        if count > 0 && t.size > 0 {
            let ty = lookup(t)?;
            // SAFETY: `p` holds `count` instances (checked; the MPI caller's buffer), and
            // the image holds them laid out from the lower bound (checked by new_image),
            // so origin = image - lb addresses them.
            unsafe {
                crate::datatype::copy_map(
                    &ty,
                    count,
                    p as *const u8,
                    img.as_mut_ptr().wrapping_offset(-t.lb),
                )
            };
        }
        Ok(self.hold(img))
    }

    /// An output image for `count` instances at `p`, copied back (type map bytes only)
    /// by `finish`.
    ///
    /// # Safety
    /// As [`Stage::unpacked`].
    pub unsafe fn image_output(
        &mut self,
        p: *mut c_void,
        count: usize,
        t: &TypeInfo,
    ) -> MpiResult<UserBuf> {
        let img = self.new_image(count, t)?;
        self.images
            .push((self.bufs.len(), p, count, *t, lookup(t)?));
        Ok(self.hold(img))
    }

    fn new_image(&self, count: usize, t: &TypeInfo) -> MpiResult<Vec<u8>> {
        let ty = lookup(t)?;
        let (lb, ext) = (ty.lb(), ty.extent());
        if ty.true_lb() < lb || ty.true_lb() + ty.true_extent() as isize > lb + ext {
            return Err(err(
                MPI_ERR_TYPE,
                format!(
                    "datatype {:#x} has data outside its extent [lb, lb+extent); a user-defined operation cannot be applied to it in a collective",
                    t.handle
                ),
            ));
        }
        let n = count
            .checked_mul(t.extent)
            .ok_or_else(|| err(MPI_ERR_COUNT, format!("count={count} x extent overflows")))?;
        Ok(staging(n, true))
    }

    /// Unpacks every staged output into the user's buffers.
    pub fn finish(self) -> MpiResult<()> {
        for (i, p, count, ty, spread) in &self.unpacks {
            match spread {
                // SAFETY: the output was staged with the contract of `unpacked`.
                None => unsafe { unpack_with(*p, *count, ty, &self.bufs[*i]) },
                Some(pair) => {
                    let b = &self.bufs[*i];
                    let packed = crate::op::gather_pairs(pair, b, b.len() / pair.extent)?;
                    // SAFETY: as above (`spread_output`).
                    unsafe { unpack_with(*p, *count, ty, &packed) }
                }
            }
        }
        for (i, p, count, t, ty) in &self.images {
            if *count > 0 && t.size > 0 {
                // SAFETY: the image holds `count` instances laid out from the lower
                // bound; the output was staged with the contract of `image_output`.
                unsafe {
                    crate::datatype::copy_map(
                        ty,
                        *count,
                        self.bufs[*i].as_ptr().wrapping_offset(-t.lb),
                        *p as *mut u8,
                    )
                };
            }
        }
        Ok(())
    }
}

/// How a reduction's data is laid out in the engine, decided once per call:
/// - predefined datatype: the user's memory as it is (`count * extent` bytes; the
///   kernels know the padded pair layouts);
/// - derived datatype with a predefined op: its basic elements, packed and then laid
///   out at the basic type's extent (which only a padded pair type such as
///   MPI_DOUBLE_INT makes differ from its size), reduced with the basic type's kernel.
///   So every rank gives the engine the same bytes, in the same units, whichever of
///   the datatypes with that type signature it passed (MPI_DOUBLE with count 3n on one
///   rank, a contiguous type of 3 MPI_DOUBLE with count n on another): the engine
///   splits the vector into chunks and shares by those units, which must agree;
/// - derived datatype with a user op: images of the memory layout (`count * extent`),
///   which is what the user function indexes.
pub struct RedData {
    pub t: TypeInfo,
    pub op: crate::op::OpRef,
    /// The op handle the caller passed (for argument agreement).
    pub op_handle: i32,
    /// Bytes per instance in the engine.
    pub unit: usize,
    /// The engine's element (the unit of its chunks and shares): a predefined datatype,
    /// its basic type (with a predefined op), or one instance (a user op).
    pub elem: usize,
    /// With a predefined op on a derived datatype: its basic type and the number of
    /// basic elements per instance.
    basic: Option<(&'static crate::datatype::predefined::Predef, usize)>,
    pub mode: RedMode,
}

/// Where a reduction's engine data comes from (see [`RedData`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RedMode {
    /// The user's memory as it is.
    Native,
    /// The basic elements, packed (and spread when [`RedData::spread`] says so).
    Packed,
    /// Images of the memory layout.
    Image,
}

impl RedData {
    pub fn new(datatype: i32, op: i32) -> MpiResult<RedData> {
        let t = crate::datatype::type_info(datatype, "datatype")?;
        let o = crate::op::resolve(op)?;
        let predefined = crate::datatype::predefined::lookup(datatype).is_some();
        let mut basic = None;
        let mode = match (&o, predefined) {
            (crate::op::OpRef::Builtin(b), true) => {
                crate::op::kernel_for(*b, datatype)?;
                RedMode::Native
            }
            (crate::op::OpRef::Builtin(b), false) => {
                if let Some((h, per)) = crate::op::reduce_basic(*b, datatype)? {
                    basic = Some((crate::op::predefined_type(h)?, per));
                }
                RedMode::Packed
            }
            (crate::op::OpRef::User(_), true) => RedMode::Native,
            (crate::op::OpRef::User(_), false) if t.contiguous => RedMode::Native,
            (crate::op::OpRef::User(_), false) => RedMode::Image,
        };
        let (unit, elem) = match basic {
            Some((p, per)) => (per * p.extent, p.extent),
            None if mode == RedMode::Packed => (t.size, 1),
            None => (t.extent, t.extent),
        };
        Ok(RedData {
            t,
            op: o,
            op_handle: op,
            unit,
            elem,
            basic,
            mode,
        })
    }

    /// The bytes `count` instances at `p` contribute to the reduction.
    // A safe fn over the C caller's address, as the C boundary's plans call it: they
    // pass addresses valid as the MPI standard requires.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn input(&self, st: &mut Stage, p: *const c_void, count: usize, arg: &str) -> Staged {
        match self.mode {
            // SAFETY: `p`: the C caller's buffer, valid as the MPI standard requires.
            RedMode::Native => unsafe { buffer(p, self.bytes(count)?, arg) },
            RedMode::Packed => match self.spread() {
                Some(se) => st.spread(pack_vec(p, count, &self.t, arg)?, se),
                None => st.input(p, count, &self.t, arg),
            },
            RedMode::Image => st.image(p, count, &self.t, arg),
        }
    }

    /// Where this process's part of the reduction's result is received.
    // A safe fn over the C caller's address, as the C boundary's plans call it: they
    // pass addresses valid as the MPI standard requires.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn output(&self, st: &mut Stage, p: *mut c_void, count: usize, arg: &str) -> Staged {
        match self.mode {
            // SAFETY: `p`: the C caller's buffer, valid as the MPI standard requires.
            RedMode::Native => unsafe { buffer(p, self.bytes(count)?, arg) },
            RedMode::Packed if self.spread().is_none() => st.output(p, count, &self.t, arg),
            _ => {
                check_base(p, count, &self.t, arg)?;
                match self.spread() {
                    // SAFETY: as in `Stage::output`.
                    Some(se) => unsafe { st.spread_output(p, count, &self.t, se) },
                    // SAFETY: as in `Stage::output`.
                    None => unsafe { st.image_output(p, count, &self.t) },
                }
            }
        }
    }

    /// Whether the engine may read the input straight from the receive buffer
    /// (MPI_IN_PLACE without staging).
    pub fn native(&self) -> bool {
        self.mode == RedMode::Native
    }

    /// The basic pair type when the engine holds a derived datatype's elements laid
    /// out as in memory (see [`Stage::spread`]).
    pub fn spread(&self) -> Option<Pair> {
        self.basic
            .filter(|(p, _)| p.size != p.extent)
            .map(|(p, _)| p)
    }

    pub fn bytes(&self, count: usize) -> MpiResult<usize> {
        count.checked_mul(self.unit).ok_or_else(|| {
            err(
                MPI_ERR_COUNT,
                format!("count={count} x {} bytes overflows", self.unit),
            )
        })
    }

    /// The argument descriptor of a reduction of `count` instances (coll/agree.rs), of
    /// the collective numbered `kind` (`agree::kind_of`): a predefined op and datatype
    /// are compared by handle, everything by byte count.
    pub fn desc(&self, kind: u16, root: Option<usize>, count: usize) -> super::agree::Desc {
        use super::agree::{Desc, ANY};
        let op = match &self.op {
            crate::op::OpRef::Builtin(_) => self.op_handle as u32 as u64,
            // A user op is not compared (its handle is the process's own), but the
            // extent of the elements it is applied to is: the engine cuts the vector at
            // whole elements, and processes cutting at different places would fold
            // misaligned pieces (see `agree::user_op_word`).
            crate::op::OpRef::User(_) => super::agree::user_op_word(self.t.extent),
        };
        let dtype = if crate::datatype::predefined::lookup(self.t.handle).is_some() {
            self.t.handle as u32 as u64
        } else {
            ANY
        };
        Desc {
            kind,
            root: root.map_or(ANY, |r| r as u64),
            op,
            dtype,
            bytes: (count as u64).wrapping_mul(self.t.size as u64),
            extra: ANY,
        }
    }

    /// The element-wise function the engine applies (`inout = in op inout`).
    pub fn func(&self) -> impl Fn(&[u8], &mut [u8]) -> MpiResult<()> + Sync + '_ {
        let dt = self.t.handle;
        let unit = self.unit.max(1);
        // Images start at the lower bound; a user function expects the buffer address.
        let lb = if self.mode == RedMode::Image {
            self.t.lb
        } else {
            0
        };
        // A predefined op on a derived datatype reduces its basic elements, as many as
        // the engine hands over (a chunk need not hold whole instances).
        let (dt, unit) = match self.basic {
            Some((p, _)) => (p.handle, p.extent),
            None => (dt, unit),
        };
        move |inv: &[u8], inout: &mut [u8]| {
            crate::op::apply_image(&self.op, dt, inv, inout, inv.len() / unit, lb)
        }
    }

    /// The engine's view of the operation, over `f` (from [`RedData::func`]).
    pub fn reduction<'a>(&self, f: super::reduce::RedFn<'a>) -> super::reduce::Reduction<'a> {
        // The one-pass fold where the engine's bytes are predefined elements: a
        // predefined datatype as it is, or a derived one packed into its basic type.
        let multi = match (&self.op, self.mode, self.basic) {
            (crate::op::OpRef::Builtin(b), RedMode::Native, _) => {
                crate::datatype::predefined::lookup(self.t.handle)
                    .and_then(|p| crate::op::predefined_multi(*b, p))
            }
            (crate::op::OpRef::Builtin(b), RedMode::Packed, Some((p, _))) => {
                crate::op::predefined_multi(*b, p)
            }
            _ => None,
        };
        super::reduce::Reduction {
            f,
            commutative: crate::op::is_commutative(&self.op),
            extent: self.elem,
            multi,
        }
    }
}
