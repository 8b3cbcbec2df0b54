//! Derived datatypes: the handle registry, the constructors of MPI §4.1 and the
//! queries (envelope / contents, names, bounds).
//!
//! Every datatype, predefined or derived, resolves to an `Arc<Type>`; an operation holds
//! its `TypeRef` while it runs, so MPI_Type_free of a type still in use is safe. Derived
//! handles are DIRECT datatype handles with table indices from [`FIRST_INDEX`] up (0..4
//! are the pair types' handles).
#![deny(unsafe_code)]
use super::layout::{self, Basic, Builder, Layout};
use super::predefined::{self, Predef, PREDEFINED, PREDEFINED_LEN};
use crate::abi::*;
use crate::error::{err, MpiError, MpiResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// What a type was built from: MPI_Type_get_envelope / MPI_Type_get_contents.
#[derive(Clone, Debug)]
pub struct Envelope {
    pub combiner: i32,
    pub ints: Vec<i32>,
    pub addrs: Vec<isize>,
    /// The MPI_Count arguments of an MPI-4 large-count constructor (`MPI_Type_..._c`),
    /// which MPI_Type_get_envelope_c reports as large counts; empty otherwise.
    pub counts: Vec<i64>,
    /// The datatypes it was built from, kept alive with the type.
    pub types: Vec<TypeRef>,
}

impl Envelope {
    /// Argument `k` of the constructor's count-like arguments (its integers, or its
    /// large counts when it was a large-count constructor: the two lists start alike).
    pub fn count_arg(&self, k: usize) -> i64 {
        if self.counts.is_empty() {
            self.ints[k] as i64
        } else {
            self.counts[k]
        }
    }
}

/// A datatype: its layout, its construction, its commit state and name.
#[derive(Debug)]
pub struct Type {
    pub layout: Layout,
    pub envelope: Envelope,
    /// Set for predefined types.
    pub predefined: Option<&'static Predef>,
    committed: AtomicBool,
    name: Mutex<String>,
    /// MPI_Type_set_attr's attributes.
    pub attrs: crate::attr::Attrs,
    /// The handle of a type of MPI_Type_create_f90_*: predefined in the standard's
    /// sense (permanent, never freed, MPI_Type_get_contents returns it as itself).
    permanent: OnceLock<i32>,
}

/// A resolved datatype, held for the duration of an operation.
pub type TypeRef = Arc<Type>;

impl Type {
    fn new(layout: Layout, envelope: Envelope) -> Type {
        Type {
            layout,
            envelope,
            predefined: None,
            committed: AtomicBool::new(false),
            name: Mutex::new(String::new()),
            attrs: Mutex::new(Vec::new()),
            permanent: OnceLock::new(),
        }
    }
    pub fn size(&self) -> usize {
        self.layout.size
    }
    pub fn lb(&self) -> isize {
        self.layout.lb()
    }
    pub fn ub(&self) -> isize {
        self.layout.ub()
    }
    pub fn extent(&self) -> isize {
        self.layout.extent()
    }
    pub fn true_lb(&self) -> isize {
        self.layout.true_lb
    }
    pub fn true_extent(&self) -> isize {
        self.layout.true_extent()
    }
    pub fn is_committed(&self) -> bool {
        self.committed.load(Ordering::Acquire)
    }
    /// One block of `size` bytes at displacement 0 with extent == size: `count`
    /// instances are `count * size` plain bytes at the buffer address.
    pub fn is_contiguous(&self) -> bool {
        self.layout.contiguous_at() == Some(0)
    }
    pub fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set_name(&self, s: &str) {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = s.to_string();
    }
    /// The single predefined basic type of the type map and how many per instance.
    pub fn basic_elem(&self) -> Option<(i32, usize)> {
        match self.layout.basic {
            Basic::One(h) => {
                let p = predefined::lookup(h)?;
                Some((h, self.layout.size / p.size.max(1)))
            }
            _ => None,
        }
    }
}

/// Table indices below this are never handed out (they are the pair types' handles).
pub const FIRST_INDEX: usize = 5;

struct Registry {
    slots: Vec<Option<TypeRef>>,
    free: Vec<usize>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    slots: Vec::new(),
    free: Vec::new(),
});

fn predefined_refs() -> &'static [TypeRef] {
    static PRE: OnceLock<Vec<TypeRef>> = OnceLock::new();
    PRE.get_or_init(|| {
        PREDEFINED
            .iter()
            .map(|p| {
                let mut t = Type::new(
                    Layout::predefined(p),
                    Envelope {
                        combiner: MPI_COMBINER_NAMED,
                        ints: vec![],
                        addrs: vec![],
                        counts: vec![],
                        types: vec![],
                    },
                );
                t.predefined = Some(p);
                t.committed = AtomicBool::new(true);
                t.name = Mutex::new(p.name.to_string());
                Arc::new(t)
            })
            .collect()
    })
}

fn predefined_ref(p: &'static Predef) -> TypeRef {
    let idx = (p as *const Predef as usize - PREDEFINED.as_ptr() as usize)
        / std::mem::size_of::<Predef>();
    debug_assert!(idx < PREDEFINED_LEN);
    predefined_refs()[idx].clone()
}

fn register(t: TypeRef) -> MpiResult<i32> {
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if r.slots.len() < FIRST_INDEX {
        r.slots.resize(FIRST_INDEX, None);
    }
    let idx = match r.free.pop() {
        Some(i) => i,
        None => {
            if r.slots.len() > 0x03ff_ffff {
                return Err(err(
                    MPI_ERR_OTHER,
                    "too many datatypes (free some with MPI_Type_free)",
                ));
            }
            r.slots.push(None);
            r.slots.len() - 1
        }
    };
    r.slots[idx] = Some(t);
    Ok(direct_handle(OBJ_DATATYPE, idx))
}

/// Any valid datatype (committed or not): what constructors and queries accept.
/// `arg` names the argument in the message.
pub fn get(h: i32, arg: &str) -> MpiResult<TypeRef> {
    if let Some(p) = predefined::lookup(h) {
        return Ok(predefined_ref(p));
    }
    if h == MPI_DATATYPE_NULL {
        return Err(err(MPI_ERR_TYPE, format!("{arg} is MPI_DATATYPE_NULL")));
    }
    let bad = || {
        err(
            MPI_ERR_TYPE,
            format!("{arg}={h:#010x} is not a valid datatype handle"),
        )
    };
    if let Some(t) = crate::pin::replayed_object::<TypeRef>(h) {
        return Ok(t);
    }
    let idx = direct_index(h, OBJ_DATATYPE).ok_or_else(bad)?;
    if idx < FIRST_INDEX {
        return Err(bad());
    }
    let r = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    match r.slots.get(idx) {
        Some(Some(t)) => {
            crate::pin::record_object(h, t);
            Ok(t.clone())
        }
        Some(None) => Err(err(
            MPI_ERR_TYPE,
            format!("{arg}={h:#010x} is a freed datatype (MPI_Type_free)"),
        )),
        None => Err(bad()),
    }
}

/// A valid, committed datatype for what needs only its type signature (the status
/// queries MPI_Get_count, MPI_Get_elements, MPI_Status_set_elements): any extent.
pub fn get_signature(h: i32, arg: &str) -> MpiResult<TypeRef> {
    let t = get(h, arg)?;
    if !t.is_committed() {
        return Err(err(
            MPI_ERR_TYPE,
            format!("{arg}: datatype {h:#010x} is not committed (call MPI_Type_commit first)"),
        ));
    }
    Ok(t)
}

/// A datatype usable in communication: valid, committed, with a non-negative extent.
pub fn get_committed(h: i32, arg: &str) -> MpiResult<TypeRef> {
    let t = get_signature(h, arg)?;
    if t.extent() < 0 {
        return Err(err(
            MPI_ERR_TYPE,
            format!(
                "{arg}: datatype {h:#010x} has a negative extent ({}); shmpi does not communicate, pack or reduce with such a datatype",
                t.extent()
            ),
        ));
    }
    Ok(t)
}

/// MPI_Type_commit.
pub fn commit(h: i32) -> MpiResult<()> {
    get(h, "datatype")?.committed.store(true, Ordering::Release);
    Ok(())
}

/// MPI_Type_free: the handle becomes invalid; operations holding the type keep it.
pub fn free(h: i32) -> MpiResult<()> {
    if let Some(p) = predefined::lookup(h) {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype={} is predefined and cannot be freed", p.name),
        ));
    }
    let t = get(h, "datatype")?;
    if t.permanent.get().is_some() {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype={h:#010x} comes from MPI_Type_create_f90_*: it is predefined and cannot be freed"),
        ));
    }
    // The delete callbacks run first; one that fails leaves the type as it was.
    crate::attr::delete_all(type_owner(h, &t))?;
    let idx = direct_index(h, OBJ_DATATYPE).expect("checked by get");
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if r.slots[idx].take().is_some() {
        r.free.push(idx);
    }
    Ok(())
}

/// How a constructor was called: with int counts (`MPI_Type_vector`) or with MPI_Count
/// ones (MPI-4's `MPI_Type_vector_c`). It decides only where the envelope keeps the
/// arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Int,
    Large,
}

/// A count, displacement or size argument of a constructor: an int (`MPI_Type_vector`),
/// an MPI_Aint (`MPI_Type_create_hvector`'s stride) or an MPI_Count (MPI-4's
/// `MPI_Type_vector_c`). The type of the counts says which form was called.
pub trait Arg: Copy {
    const FORM: Form;
    fn wide(self) -> i64;
}
impl Arg for i32 {
    const FORM: Form = Form::Int;
    fn wide(self) -> i64 {
        self.into()
    }
}
impl Arg for isize {
    const FORM: Form = Form::Int;
    fn wide(self) -> i64 {
        self as i64
    }
}
impl Arg for i64 {
    const FORM: Form = Form::Large;
    fn wide(self) -> i64 {
        self
    }
}

/// Registers a type built by a constructor called in `form` with the count-like
/// arguments `ints` (ints in the int form) and the address-like ones `addrs`: the large
/// form reports both, in that order, as large counts (MPI-4.0 section 5.1.13).
fn make_in(
    form: Form,
    layout: Layout,
    combiner: i32,
    ints: Vec<i64>,
    addrs: Vec<isize>,
    types: Vec<TypeRef>,
) -> MpiResult<i32> {
    let env = match form {
        // (the int form's arguments came in as ints)
        Form::Int => Envelope {
            combiner,
            ints: ints.iter().map(|&v| v as i32).collect(),
            addrs,
            counts: vec![],
            types,
        },
        Form::Large => Envelope {
            combiner,
            ints: vec![],
            addrs: vec![],
            counts: ints
                .into_iter()
                .chain(addrs.iter().map(|&a| a as i64))
                .collect(),
            types,
        },
    };
    register(Arc::new(Type::new(layout, env)))
}

/// The first `n` entries of an array argument of `n` entries or more, widened.
fn wide<A: Arg>(v: &[A], n: usize, arg: &str) -> MpiResult<Vec<i64>> {
    check_len(v, n, arg)?;
    Ok(v[..n].iter().map(|x| x.wide()).collect())
}

/// The first `n` entries of an array of byte displacements, as addresses.
fn addrs<A: Arg>(v: &[A], n: usize, arg: &str) -> MpiResult<Vec<isize>> {
    Ok(wide(v, n, arg)?.into_iter().map(addr).collect())
}

// ---------------------------------------------------------------------------------------
// Argument checks

fn count_arg(n: i64, arg: &str) -> MpiResult<usize> {
    if n < 0 {
        Err(err(MPI_ERR_COUNT, format!("{arg}={n} is negative")))
    } else {
        usize::try_from(n).map_err(|_| err(MPI_ERR_COUNT, format!("{arg}={n} is too large")))
    }
}

fn blocklen(n: i64, arg: &str) -> MpiResult<usize> {
    if n < 0 {
        Err(err(MPI_ERR_ARG, format!("{arg}={n} is negative")))
    } else {
        usize::try_from(n).map_err(|_| err(MPI_ERR_ARG, format!("{arg}={n} is too large")))
    }
}

/// An MPI_Count displacement or stride as an address offset.
fn addr(v: i64) -> isize {
    v as isize
}

fn check_len<T>(a: &[T], n: usize, arg: &str) -> MpiResult<()> {
    if a.len() < n {
        return Err(err(
            MPI_ERR_ARG,
            format!("{arg} has {} entries, {n} needed", a.len()),
        ));
    }
    Ok(())
}

fn mul(a: isize, b: isize, what: &str) -> MpiResult<isize> {
    a.checked_mul(b)
        .ok_or_else(|| err(MPI_ERR_ARG, format!("{what}: {a} x {b} overflows")))
}

/// The dimensions of an array type (subarray, darray): `ndims` positive, each array
/// (`lens` its lengths, `names` its names) that long, `order` C or Fortran. Returns the
/// dimensions from the fastest-varying one out.
fn grid(ndims: i32, lens: &[usize], names: &[&str], order: i32) -> MpiResult<Vec<usize>> {
    if ndims <= 0 {
        return Err(err(MPI_ERR_ARG, format!("ndims={ndims} must be positive")));
    }
    let nd = ndims as usize;
    if let Some((len, arg)) = lens.iter().zip(names).find(|(&len, _)| len < nd) {
        return Err(err(
            MPI_ERR_ARG,
            format!("{arg} has {len} entries, {nd} needed"),
        ));
    }
    match order {
        MPI_ORDER_C => Ok((0..nd).rev().collect()),
        MPI_ORDER_FORTRAN => Ok((0..nd).collect()),
        _ => Err(err(
            MPI_ERR_ARG,
            format!("order={order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
        )),
    }
}

const SUBARRAY_ARRAYS: [&str; 3] = ["array_of_sizes", "array_of_subsizes", "array_of_starts"];
const DARRAY_ARRAYS: [&str; 4] = [
    "array_of_gsizes",
    "array_of_distribs",
    "array_of_dargs",
    "array_of_psizes",
];

// ---------------------------------------------------------------------------------------
// Constructors (slices in, handle out; the type of the counts says which form was
// called, see [`Arg`])

/// MPI_Type_contiguous(_c).
pub fn contiguous<C: Arg>(count: C, old: i32) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let o = get(old, "oldtype")?;
    let l = layout::repeat(&o.layout, n, o.extent())?;
    make_in(
        C::FORM,
        l,
        MPI_COMBINER_CONTIGUOUS,
        vec![count.wide()],
        vec![],
        vec![o],
    )
}

fn hvector_layout(n: usize, bl: usize, stride: isize, o: &Type) -> MpiResult<Layout> {
    let block = layout::repeat(&o.layout, bl, o.extent())?;
    layout::repeat(&block, n, stride)
}

/// MPI_Type_vector(_c) (stride in elements of `old`).
pub fn vector<C: Arg>(count: C, blocklength: C, stride: C, old: i32) -> MpiResult<i32> {
    let (count, blocklength, stride) = (count.wide(), blocklength.wide(), stride.wide());
    let n = count_arg(count, "count")?;
    let bl = blocklen(blocklength, "blocklength")?;
    let o = get(old, "oldtype")?;
    let st = mul(addr(stride), o.extent(), "stride x extent of oldtype")?;
    let l = hvector_layout(n, bl, st, &o)?;
    make_in(
        C::FORM,
        l,
        MPI_COMBINER_VECTOR,
        vec![count, blocklength, stride],
        vec![],
        vec![o],
    )
}

/// MPI_Type_create_hvector(_c) / MPI_Type_hvector (stride in bytes).
pub fn hvector<C: Arg, D: Arg>(count: C, blocklength: C, stride: D, old: i32) -> MpiResult<i32> {
    let (count, blocklength, stride) = (count.wide(), blocklength.wide(), addr(stride.wide()));
    let n = count_arg(count, "count")?;
    let bl = blocklen(blocklength, "blocklength")?;
    let o = get(old, "oldtype")?;
    let l = hvector_layout(n, bl, stride, &o)?;
    make_in(
        C::FORM,
        l,
        MPI_COMBINER_HVECTOR,
        vec![count, blocklength],
        vec![stride],
        vec![o],
    )
}

fn blocks_layout(o: &Type, bls: &[usize], disps: &[isize]) -> MpiResult<Layout> {
    let mut b = Builder::new();
    for (bl, d) in bls.iter().zip(disps) {
        b.add(&o.layout, *d, *bl, o.extent())?;
    }
    b.finish(false)
}

fn blocklens(bls: &[i64]) -> MpiResult<Vec<usize>> {
    bls.iter()
        .enumerate()
        .map(|(i, &b)| blocklen(b, &format!("array_of_blocklengths[{i}]")))
        .collect()
}

/// Displacements in elements of `o`, in bytes.
fn scaled(disps: &[i64], o: &Type) -> MpiResult<Vec<isize>> {
    disps
        .iter()
        .map(|&d| mul(addr(d), o.extent(), "displacement x extent of oldtype"))
        .collect()
}

/// MPI_Type_indexed(_c) (displacements in elements of `old`).
pub fn indexed<C: Arg>(count: C, bls: &[C], disps: &[C], old: i32) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let bls = wide(bls, n, "array_of_blocklengths")?;
    let b = blocklens(&bls)?;
    let disps = wide(disps, n, "array_of_displacements")?;
    let o = get(old, "oldtype")?;
    let l = blocks_layout(&o, &b, &scaled(&disps, &o)?)?;
    let mut ints = vec![count.wide()];
    ints.extend(bls);
    ints.extend(disps);
    make_in(C::FORM, l, MPI_COMBINER_INDEXED, ints, vec![], vec![o])
}

/// MPI_Type_create_hindexed(_c) / MPI_Type_hindexed (displacements in bytes).
pub fn hindexed<C: Arg, D: Arg>(count: C, bls: &[C], disps: &[D], old: i32) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let bls = wide(bls, n, "array_of_blocklengths")?;
    let b = blocklens(&bls)?;
    let disps = addrs(disps, n, "array_of_displacements")?;
    let o = get(old, "oldtype")?;
    let l = blocks_layout(&o, &b, &disps)?;
    let mut ints = vec![count.wide()];
    ints.extend(bls);
    make_in(C::FORM, l, MPI_COMBINER_HINDEXED, ints, disps, vec![o])
}

/// MPI_Type_create_indexed_block(_c).
pub fn indexed_block<C: Arg>(count: C, blocklength: C, disps: &[C], old: i32) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let bl = blocklen(blocklength.wide(), "blocklength")?;
    let disps = wide(disps, n, "array_of_displacements")?;
    let o = get(old, "oldtype")?;
    let l = blocks_layout(&o, &vec![bl; n], &scaled(&disps, &o)?)?;
    let mut ints = vec![count.wide(), blocklength.wide()];
    ints.extend(disps);
    make_in(
        C::FORM,
        l,
        MPI_COMBINER_INDEXED_BLOCK,
        ints,
        vec![],
        vec![o],
    )
}

/// MPI_Type_create_hindexed_block(_c).
pub fn hindexed_block<C: Arg, D: Arg>(
    count: C,
    blocklength: C,
    disps: &[D],
    old: i32,
) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let bl = blocklen(blocklength.wide(), "blocklength")?;
    let disps = addrs(disps, n, "array_of_displacements")?;
    let o = get(old, "oldtype")?;
    let l = blocks_layout(&o, &vec![bl; n], &disps)?;
    let ints = vec![count.wide(), blocklength.wide()];
    make_in(
        C::FORM,
        l,
        MPI_COMBINER_HINDEXED_BLOCK,
        ints,
        disps,
        vec![o],
    )
}

/// MPI_Type_create_struct(_c) / MPI_Type_struct. MPI_LB and MPI_UB entries act as
/// markers.
pub fn structure<C: Arg, D: Arg>(
    count: C,
    bls: &[C],
    disps: &[D],
    types: &[i32],
) -> MpiResult<i32> {
    let n = count_arg(count.wide(), "count")?;
    let bls = wide(bls, n, "array_of_blocklengths")?;
    let b = blocklens(&bls)?;
    let disps = addrs(disps, n, "array_of_displacements")?;
    check_len(types, n, "array_of_types")?;
    let ts = types[..n]
        .iter()
        .enumerate()
        .map(|(i, &t)| get(t, &format!("array_of_types[{i}]")))
        .collect::<MpiResult<Vec<_>>>()?;
    let mut bld = Builder::new();
    for i in 0..n {
        bld.add(&ts[i].layout, disps[i], b[i], ts[i].extent())?;
    }
    let l = bld.finish(true)?;
    let mut ints = vec![count.wide()];
    ints.extend(bls);
    make_in(C::FORM, l, MPI_COMBINER_STRUCT, ints, disps, ts)
}

/// MPI_Type_create_resized(_c).
pub fn resized<D: Arg>(old: i32, lb: D, extent: D) -> MpiResult<i32> {
    let (lb, extent) = (addr(lb.wide()), addr(extent.wide()));
    let o = get(old, "oldtype")?;
    // A negative extent is legal; such a type can be queried and built upon, but not
    // used to communicate (see `get_committed`).
    let l = o.layout.resized(lb, extent)?;
    make_in(
        D::FORM,
        l,
        MPI_COMBINER_RESIZED,
        vec![],
        vec![lb, extent],
        vec![o],
    )
}

/// The datatype `h` as the owner of attributes.
pub fn type_owner(h: i32, t: &TypeRef) -> crate::attr::Owner<'_> {
    crate::attr::Owner {
        kind: crate::attr::Kind::Type,
        handle: h,
        attrs: &t.attrs,
    }
}

/// A copy of `old` under a new handle, without its attributes: what the library keeps
/// for itself (a persistent request's datatype), invisible to attribute callbacks.
fn dup_layout(o: &TypeRef) -> Type {
    let t = Type::new(
        o.layout.clone(),
        Envelope {
            combiner: MPI_COMBINER_DUP,
            ints: vec![],
            addrs: vec![],
            counts: vec![],
            types: vec![o.clone()],
        },
    );
    t.committed.store(o.is_committed(), Ordering::Release);
    t
}

/// A duplicate for the library's own use (no attribute callbacks run).
pub fn dup_internal(old: i32) -> MpiResult<i32> {
    let o = get(old, "oldtype")?;
    register(Arc::new(dup_layout(&o)))
}

/// MPI_Type_dup: same layout, same commit state, new handle, the attributes the copy
/// callbacks keep.
pub fn dup(old: i32) -> MpiResult<i32> {
    let o = get(old, "oldtype")?;
    let t = Arc::new(dup_layout(&o));
    // The copy callbacks see the old handle; a failing one (or a full handle table)
    // undoes the copies made so far through their delete callbacks.
    let copied = crate::attr::copy_all(type_owner(old, &o), type_owner(old, &t));
    match copied.and_then(|()| register(t.clone())) {
        Ok(h) => Ok(h),
        Err(e) => {
            let _ = crate::attr::delete_all(type_owner(old, &t));
            Err(e)
        }
    }
}

/// MPI_Type_create_subarray(_c). `order` is MPI_ORDER_C or MPI_ORDER_FORTRAN.
pub fn subarray<C: Arg>(
    ndims: i32,
    sizes: &[C],
    subsizes: &[C],
    starts: &[C],
    order: i32,
    old: i32,
) -> MpiResult<i32> {
    let lens = [sizes.len(), subsizes.len(), starts.len()];
    let dims = grid(ndims, &lens, &SUBARRAY_ARRAYS, order)?;
    let nd = dims.len();
    let sizes = wide(sizes, nd, "array_of_sizes")?;
    let subsizes = wide(subsizes, nd, "array_of_subsizes")?;
    let starts = wide(starts, nd, "array_of_starts")?;
    for i in 0..nd {
        let (s, ss, st) = (sizes[i], subsizes[i], starts[i]);
        if s <= 0 {
            return Err(err(
                MPI_ERR_ARG,
                format!("array_of_sizes[{i}]={s} must be positive"),
            ));
        }
        if ss < 0 || ss > s {
            return Err(err(
                MPI_ERR_ARG,
                format!("array_of_subsizes[{i}]={ss} is outside 0..={s} (array_of_sizes[{i}])"),
            ));
        }
        if st < 0 || st > s - ss {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "array_of_starts[{i}]={st} is outside 0..={} (size {s} - subsize {ss})",
                    s - ss
                ),
            ));
        }
    }
    let o = get(old, "oldtype")?;
    let mut l = o.layout.clone();
    let mut stride = o.extent();
    let mut offset: isize = 0;
    for &d in &dims {
        l = layout::repeat(&l, subsizes[d] as usize, stride)?;
        offset = offset
            .checked_add(mul(starts[d] as isize, stride, "array_of_starts x stride")?)
            .ok_or_else(|| err(MPI_ERR_ARG, "subarray offset overflows"))?;
        stride = mul(stride, sizes[d] as isize, "array size in bytes")?;
    }
    let mut b = Builder::new();
    b.add(&l, offset, 1, 0)?;
    let l = b.finish(false)?.resized(0, stride)?;
    let mut dims = sizes;
    dims.extend(subsizes);
    dims.extend(starts);
    let env = match C::FORM {
        Form::Int => {
            let mut ints = vec![ndims];
            ints.extend(dims.iter().map(|&v| v as i32));
            ints.push(order);
            Envelope {
                combiner: MPI_COMBINER_SUBARRAY,
                ints,
                addrs: vec![],
                counts: vec![],
                types: vec![o],
            }
        }
        // (MPI-4.0: ndims and order stay integers, the sizes are large counts)
        Form::Large => Envelope {
            combiner: MPI_COMBINER_SUBARRAY,
            ints: vec![ndims, order],
            addrs: vec![],
            counts: dims,
            types: vec![o],
        },
    };
    register(Arc::new(Type::new(l, env)))
}

// ---------------------------------------------------------------------------------------
// Queries

/// MPI_Type_get_envelope: (num_integers, num_addresses, num_datatypes, combiner). A type
/// built by a large-count constructor has no such envelope: MPI_ERR_TYPE.
pub fn envelope(h: i32) -> MpiResult<(usize, usize, usize, i32)> {
    let t = get(h, "datatype")?;
    let e = &t.envelope;
    no_large_counts(h, e)?;
    Ok((e.ints.len(), e.addrs.len(), e.types.len(), e.combiner))
}

fn no_large_counts(h: i32, e: &Envelope) -> MpiResult<()> {
    if e.counts.is_empty() {
        return Ok(());
    }
    Err(err(
        MPI_ERR_TYPE,
        format!(
            "datatype={h:#x} was built by a large-count constructor (an MPI_Type_..._c call): its {} MPI_Count arguments need MPI_Type_get_envelope_c / MPI_Type_get_contents_c",
            e.counts.len()
        ),
    ))
}

/// MPI_Type_get_envelope_c: (num_integers, num_addresses, num_large_counts,
/// num_datatypes, combiner).
pub fn envelope_c(h: i32) -> MpiResult<(usize, usize, usize, usize, i32)> {
    let t = get(h, "datatype")?;
    let e = &t.envelope;
    Ok((
        e.ints.len(),
        e.addrs.len(),
        e.counts.len(),
        e.types.len(),
        e.combiner,
    ))
}

/// MPI_Type_get_contents: the integers, addresses and datatype handles the type was
/// built from. Derived datatypes come back as new handles (to be freed by the caller)
/// of the same type objects; predefined ones as themselves.
pub fn contents(
    h: i32,
    max_ints: usize,
    max_addrs: usize,
    max_types: usize,
) -> MpiResult<(Vec<i32>, Vec<isize>, Vec<i32>)> {
    no_large_counts(h, &get(h, "datatype")?.envelope)?;
    let (i, a, _, d) = contents_c(h, max_ints, max_addrs, 0, max_types)?;
    Ok((i, a, d))
}

/// The array lengths MPI_Type_get_contents(_c) writes for `h`: integers, addresses,
/// large counts (none in the int form, which refuses a type built with any) and
/// datatypes. `max` are the call's max_ arguments as (value, name): max_integers,
/// max_addresses, max_large_counts (only in the _c form) and max_datatypes; none may
/// be negative.
pub fn contents_len(h: i32, max: &[(i64, &str)]) -> MpiResult<[usize; 4]> {
    if let Some((v, what)) = max.iter().find(|(v, _)| *v < 0) {
        return Err(err(MPI_ERR_ARG, format!("{what}={v} is negative")));
    }
    if max.len() == 4 {
        let (ni, na, nc, nd, _) = envelope_c(h)?;
        Ok([ni, na, nc, nd])
    } else {
        let (ni, na, nd, _) = envelope(h)?;
        Ok([ni, na, 0, nd])
    }
}

/// MPI_Type_get_contents(_c), with `max` as [`contents_len`] checked it.
pub fn contents_of(h: i32, max: &[(i64, &str)]) -> MpiResult<Contents> {
    let m = |i: usize| max[i].0 as usize;
    if max.len() == 4 {
        contents_c(h, m(0), m(1), m(2), m(3))
    } else {
        let (i, a, d) = contents(h, m(0), m(1), m(2))?;
        Ok((i, a, vec![], d))
    }
}

/// What MPI_Type_get_contents_c returns: integers, addresses, large counts, datatypes.
pub type Contents = (Vec<i32>, Vec<isize>, Vec<i64>, Vec<i32>);

/// MPI_Type_get_contents_c: as [`contents`], with the large counts.
pub fn contents_c(
    h: i32,
    max_ints: usize,
    max_addrs: usize,
    max_counts: usize,
    max_types: usize,
) -> MpiResult<Contents> {
    let t = get(h, "datatype")?;
    let e = &t.envelope;
    if e.combiner == MPI_COMBINER_NAMED {
        return Err(err(
            MPI_ERR_TYPE,
            format!(
                "datatype={} is predefined (combiner MPI_COMBINER_NAMED): it has no contents",
                predefined::name_of(h)
            ),
        ));
    }
    for (have, need, what) in [
        (max_ints, e.ints.len(), "max_integers"),
        (max_addrs, e.addrs.len(), "max_addresses"),
        (max_counts, e.counts.len(), "max_large_counts"),
        (max_types, e.types.len(), "max_datatypes"),
    ] {
        if have < need {
            return Err(err(
                MPI_ERR_ARG,
                format!("{what}={have} is smaller than the {need} the envelope reports"),
            ));
        }
    }
    let mut hs = Vec::with_capacity(e.types.len());
    for c in &e.types {
        match (c.predefined, c.permanent.get()) {
            (Some(p), _) => hs.push(p.handle),
            (None, Some(&ph)) => hs.push(ph),
            (None, None) => match register(c.clone()) {
                Ok(nh) => hs.push(nh),
                Err(x) => {
                    for h in hs {
                        let _ = free(h);
                    }
                    return Err(x);
                }
            },
        }
    }
    Ok((e.ints.clone(), e.addrs.clone(), e.counts.clone(), hs))
}

/// MPI_Type_get_name: the name set, or the standard name of a predefined type, or "".
pub fn get_name(h: i32) -> MpiResult<String> {
    Ok(get(h, "datatype")?.name())
}

/// MPI_Type_set_name: the name kept is cut to MPI_MAX_OBJECT_NAME - 1 bytes (at a
/// character boundary).
pub fn set_name(h: i32, name: &str) -> MpiResult<()> {
    let t = get(h, "datatype")?;
    let mut cut = name.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    t.set_name(&name[..cut]);
    Ok(())
}

/// MPI_Type_match_size: the Fortran-sized predefined type of `class` and `size`.
pub fn match_size(class: i32, size: i32) -> MpiResult<i32> {
    let cands: &[i32] = match class {
        MPI_TYPECLASS_REAL => &[MPI_REAL4, MPI_REAL8, MPI_REAL16],
        MPI_TYPECLASS_INTEGER => &[MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8],
        MPI_TYPECLASS_COMPLEX => &[MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32],
        _ => {
            return Err(err(
                MPI_ERR_ARG,
                format!("typeclass={class} is not MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX"),
            ))
        }
    };
    cands
        .iter()
        .copied()
        .find(|&h| predefined::lookup(h).map(|p| p.size as i64) == Some(size as i64))
        .ok_or_else(|| {
            err(
                MPI_ERR_ARG,
                format!("no predefined type of typeclass {class} has size={size}"),
            )
        })
}

fn no_f90(what: &str) -> MpiError {
    err(MPI_ERR_ARG, format!("no predefined type provides {what}"))
}

/// The type of MPI_Type_create_f90_real/complex/integer (`combiner`, with the
/// arguments `ints` as given): one handle per distinct call, made once, laid out as
/// the predefined `base` it selects and reporting the F90 combiner and its arguments
/// (MPI-3.1 4.1.13, 17.1.9). Repeated calls return the same handle, so a program that
/// asks in a loop creates nothing new.
fn f90_type(combiner: i32, ints: Vec<i32>, base: i32) -> MpiResult<i32> {
    /// (combiner, arguments) -> handle.
    type Made = std::collections::HashMap<(i32, Vec<i32>), i32>;
    static MADE: std::sync::LazyLock<Mutex<Made>> = std::sync::LazyLock::new(Default::default);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let key = (combiner, ints);
    if let Some(&h) = made.get(&key) {
        return Ok(h);
    }
    let p = predefined::lookup(base).expect("a predefined Fortran type");
    let mut t = Type::new(
        Layout::predefined(p),
        Envelope {
            combiner,
            ints: key.1.clone(),
            addrs: vec![],
            counts: vec![],
            types: vec![],
        },
    );
    t.committed = AtomicBool::new(true);
    t.name = Mutex::new(p.name.to_string());
    let t = Arc::new(t);
    let h = register(t.clone())?;
    let _ = t.permanent.set(h);
    made.insert(key, h);
    Ok(h)
}

/// MPI_Type_create_f90_real (p, r may be MPI_UNDEFINED, but not both).
pub fn f90_real(p: i32, r: i32) -> MpiResult<i32> {
    f90_type(MPI_COMBINER_F90_REAL, vec![p, r], f90_real_kind(p, r)?)
}

/// MPI_Type_create_f90_complex: the complex type of the real kind f90_real picks.
pub fn f90_complex(p: i32, r: i32) -> MpiResult<i32> {
    f90_type(
        MPI_COMBINER_F90_COMPLEX,
        vec![p, r],
        f90_complex_kind(p, r)?,
    )
}

/// MPI_Type_create_f90_integer: the smallest INTEGERn with decimal range `r`.
pub fn f90_integer(r: i32) -> MpiResult<i32> {
    f90_type(MPI_COMBINER_F90_INTEGER, vec![r], f90_integer_kind(r)?)
}

/// The predefined REALn of SELECTED_REAL_KIND(p, r).
pub fn f90_real_kind(p: i32, r: i32) -> MpiResult<i32> {
    if p == MPI_UNDEFINED && r == MPI_UNDEFINED {
        return Err(err(MPI_ERR_ARG, "p and r are both MPI_UNDEFINED"));
    }
    let p = if p == MPI_UNDEFINED { 0 } else { p };
    let r = if r == MPI_UNDEFINED { 0 } else { r };
    if p < 0 || r < 0 {
        return Err(err(MPI_ERR_ARG, format!("p={p}, r={r}: negative")));
    }
    if p <= 6 && r <= 37 {
        Ok(MPI_REAL4)
    } else if p <= 15 && r <= 307 {
        Ok(MPI_REAL8)
    } else if p <= 33 && r <= 4931 {
        Ok(MPI_REAL16)
    } else {
        Err(no_f90(&format!("precision p={p} and range r={r}")))
    }
}

/// The predefined COMPLEXn of the real kind [`f90_real_kind`] picks.
pub fn f90_complex_kind(p: i32, r: i32) -> MpiResult<i32> {
    Ok(match f90_real_kind(p, r)? {
        MPI_REAL4 => MPI_COMPLEX8,
        MPI_REAL8 => MPI_COMPLEX16,
        _ => MPI_COMPLEX32,
    })
}

/// The smallest predefined INTEGERn with decimal range `r`.
pub fn f90_integer_kind(r: i32) -> MpiResult<i32> {
    match r {
        r if r < 0 => Err(err(MPI_ERR_ARG, format!("r={r} is negative"))),
        0..=2 => Ok(MPI_INTEGER1),
        3..=4 => Ok(MPI_INTEGER2),
        5..=9 => Ok(MPI_INTEGER4),
        10..=18 => Ok(MPI_INTEGER8),
        _ => Err(no_f90(&format!("decimal range r={r}"))),
    }
}

/// The element-index blocks (start, len) that process coordinate `r` of `p` owns in a
/// dimension of `g` elements under distribution `distrib` with argument `darg`
/// (MPI §4.1.4, MPI_Type_create_darray).
fn darray_blocks(
    i: usize,
    g: i64,
    distrib: i32,
    darg: i32,
    p: i32,
    r: i32,
) -> MpiResult<Vec<(usize, usize)>> {
    let bad = |m: String| err(MPI_ERR_ARG, format!("dimension {i}: {m}"));
    match distrib {
        MPI_DISTRIBUTE_NONE => {
            if p != 1 {
                return Err(bad(format!(
                    "MPI_DISTRIBUTE_NONE needs array_of_psizes[{i}]=1, not {p}"
                )));
            }
            Ok(vec![(0, g as usize)])
        }
        MPI_DISTRIBUTE_BLOCK => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                (g + p as i64 - 1) / p as i64
            } else if darg <= 0 || (darg as i64) * (p as i64) < g {
                return Err(bad(format!(
                    "block size array_of_dargs[{i}]={darg} x {p} processes does not cover {g} elements"
                )));
            } else {
                darg as i64
            };
            let lo = (r as i64 * b).min(g);
            let hi = ((r as i64 + 1) * b).min(g);
            Ok(vec![(lo as usize, (hi - lo) as usize)])
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG {
                1
            } else if darg <= 0 {
                return Err(bad(format!("array_of_dargs[{i}]={darg} must be positive")));
            } else {
                darg as i64
            };
            let mut v = vec![];
            let mut lo = r as i64 * b;
            while lo < g {
                v.push((lo as usize, (b.min(g - lo)) as usize));
                lo += p as i64 * b;
            }
            Ok(v)
        }
        _ => Err(bad(format!(
            "array_of_distribs[{i}]={distrib} is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE"
        ))),
    }
}

/// MPI_Type_create_darray(_c): the part of a `gsizes` array (in `order`) that process
/// `rank` of a row-major `psizes` process grid owns; extent = the whole array.
#[allow(clippy::too_many_arguments)]
pub fn darray<C: Arg>(
    size: i32,
    rank: i32,
    ndims: i32,
    gsizes: &[C],
    distribs: &[i32],
    dargs: &[i32],
    psizes: &[i32],
    order: i32,
    old: i32,
) -> MpiResult<i32> {
    if size <= 0 {
        return Err(err(MPI_ERR_ARG, format!("size={size} must be positive")));
    }
    if rank < 0 || rank >= size {
        return Err(err(
            MPI_ERR_ARG,
            format!("rank={rank} is outside 0..{size}"),
        ));
    }
    let lens = [gsizes.len(), distribs.len(), dargs.len(), psizes.len()];
    let dims = grid(ndims, &lens, &DARRAY_ARRAYS, order)?;
    let nd = dims.len();
    let gsizes = wide(gsizes, nd, "array_of_gsizes")?;
    let mut nprocs: i64 = 1;
    for i in 0..nd {
        if gsizes[i] <= 0 || psizes[i] <= 0 {
            return Err(err(
                MPI_ERR_ARG,
                format!(
                    "array_of_gsizes[{i}]={} and array_of_psizes[{i}]={} must be positive",
                    gsizes[i], psizes[i]
                ),
            ));
        }
        nprocs = nprocs.saturating_mul(psizes[i] as i64);
    }
    if nprocs != size as i64 {
        return Err(err(
            MPI_ERR_ARG,
            format!("the process grid (array_of_psizes) has {nprocs} processes, size={size}"),
        ));
    }
    // the process coordinates, row-major whatever `order`
    let mut coords = vec![0i32; nd];
    let mut rem = rank;
    for i in (0..nd).rev() {
        coords[i] = rem % psizes[i];
        rem /= psizes[i];
    }
    let o = get(old, "oldtype")?;
    let mut l = o.layout.clone();
    let mut stride = o.extent();
    for &d in &dims {
        let blocks = darray_blocks(d, gsizes[d], distribs[d], dargs[d], psizes[d], coords[d])?;
        let mut b = Builder::new();
        for (start, len) in blocks {
            b.add(
                &l,
                mul(start as isize, stride, "darray offset")?,
                len,
                stride,
            )?;
        }
        l = b.finish(false)?;
        stride = mul(stride, gsizes[d] as isize, "array size in bytes")?;
    }
    let l = l.resized(0, stride)?;
    let mut ints = vec![size, rank, ndims];
    // (the large form keeps the global sizes as large counts, the rest as integers)
    let counts = match C::FORM {
        Form::Int => {
            ints.extend(gsizes.iter().map(|&g| g as i32));
            vec![]
        }
        Form::Large => gsizes,
    };
    ints.extend_from_slice(&distribs[..nd]);
    ints.extend_from_slice(&dargs[..nd]);
    ints.extend_from_slice(&psizes[..nd]);
    ints.push(order);
    register(Arc::new(Type::new(
        l,
        Envelope {
            combiner: MPI_COMBINER_DARRAY,
            ints,
            addrs: vec![],
            counts,
            types: vec![o],
        },
    )))
}
