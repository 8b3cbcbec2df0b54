//! The compact type map of a datatype: what pack/unpack walk and what the size, bounds and
//! element queries read. Pure data and arithmetic; no registry, no raw memory.
//!
//! One instance of a type is a list of [`Seg`]s in type-map order. A segment is a strided
//! run of `count` equal blocks of `len` bytes (`disp + k*stride` for k in 0..count), so a
//! vector of a basic type is a single segment whatever its count; adjacent blocks merge.
//! The lower and upper bounds follow MPI §4.1.6 including the MPI_LB / MPI_UB markers
//! (and MPI_Type_create_resized, which the standard defines as setting both markers):
//! each bound is absent (empty type map), plain (from data) or marked (explicit).
#![deny(unsafe_code)]
use crate::abi::*;
use crate::datatype::predefined::{Elem, Predef};
use crate::error::{err, MpiResult};

/// A strided run of equal contiguous blocks, relative to the instance's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub disp: isize,
    pub len: usize,
    pub count: usize,
    /// Distance between consecutive blocks (0 when `count == 1`).
    pub stride: isize,
}

/// A lower or upper bound of a type map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The type map has no entry that sets this bound.
    None,
    /// From the data entries (plus the alignment padding of a struct for the upper bound).
    Plain(isize),
    /// From an explicit MPI_LB / MPI_UB marker or MPI_Type_create_resized.
    Marked(isize),
}

impl Bound {
    pub fn value(self) -> Option<isize> {
        match self {
            Bound::None => None,
            Bound::Plain(v) | Bound::Marked(v) => Some(v),
        }
    }
    pub fn is_marked(self) -> bool {
        matches!(self, Bound::Marked(_))
    }
}

/// Whether every data entry of the type map is one and the same predefined type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basic {
    /// No data entries (so far).
    Empty,
    /// Only this predefined datatype.
    One(i32),
    Mixed,
}

impl Basic {
    fn join(self, o: Basic) -> Basic {
        match (self, o) {
            (Basic::Empty, x) | (x, Basic::Empty) => x,
            (Basic::One(a), Basic::One(b)) if a == b => Basic::One(a),
            _ => Basic::Mixed,
        }
    }
}

/// The type map of one instance, compacted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of data in one instance (MPI_Type_size).
    pub size: usize,
    pub lbb: Bound,
    pub ubb: Bound,
    /// Bounds of the data bytes alone (0, 0 when there are none).
    pub true_lb: isize,
    pub true_ub: isize,
    /// The data blocks in type-map order.
    pub segs: Vec<Seg>,
    /// `cum[j]` = packed bytes before segment j; `cum[segs.len()] == size`.
    pub cum: Vec<usize>,
    /// The basic elements in type-map order, run-length encoded as (element size, run).
    pub elems: Vec<(usize, usize)>,
    pub basic: Basic,
    /// Alignment of the strictest basic type inside (for a struct's padding).
    pub align: usize,
}

/// Upper limit on the segments / element runs of one flattened instance.
pub const MAX_PIECES: usize = 1 << 24;

impl Layout {
    pub fn lb(&self) -> isize {
        self.lbb.value().or(self.ubb.value()).unwrap_or(0)
    }
    pub fn ub(&self) -> isize {
        self.ubb.value().or(self.lbb.value()).unwrap_or(0)
    }
    pub fn extent(&self) -> isize {
        self.ub() - self.lb()
    }
    pub fn true_extent(&self) -> isize {
        self.true_ub - self.true_lb
    }
    /// True when the type map has no entry at all (not even a marker).
    pub fn is_empty_map(&self) -> bool {
        self.lbb == Bound::None && self.ubb == Bound::None
    }
    /// Basic elements in one instance.
    pub fn elem_count(&self) -> usize {
        self.elems.iter().map(|e| e.1).sum()
    }
    /// If the packed stream of any number of instances is the user bytes starting at
    /// `origin + d`, that `d`.
    pub fn contiguous_at(&self) -> Option<isize> {
        if self.size == 0 {
            return Some(0);
        }
        match self.segs.as_slice() {
            [s] if s.count == 1 && s.len == self.size && self.extent() == self.size as isize => {
                Some(s.disp)
            }
            _ => None,
        }
    }

    /// The layout of a predefined datatype.
    pub fn predefined(p: &Predef) -> Layout {
        if p.handle == MPI_LB || p.handle == MPI_UB {
            let (lbb, ubb) = if p.handle == MPI_LB {
                (Bound::Marked(0), Bound::None)
            } else {
                (Bound::None, Bound::Marked(0))
            };
            return Layout {
                size: 0,
                lbb,
                ubb,
                true_lb: 0,
                true_ub: 0,
                segs: vec![],
                cum: vec![0],
                elems: vec![],
                basic: Basic::Empty,
                align: 1,
            };
        }
        let segs = if p.elem == Elem::ShortInt {
            vec![seg(0, 2), seg(4, 4)]
        } else {
            vec![seg(0, p.size)]
        };
        let elems = match p.elem {
            Elem::FloatInt | Elem::TwoInt | Elem::TwoInteger | Elem::TwoReal => vec![(4, 2)],
            Elem::TwoDoublePrecision => vec![(8, 2)],
            Elem::DoubleInt | Elem::LongInt => vec![(8, 1), (4, 1)],
            Elem::ShortInt => vec![(2, 1), (4, 1)],
            Elem::LongDoubleInt => vec![(16, 1), (4, 1)],
            _ => vec![(p.size, 1)],
        };
        let align = match p.elem {
            Elem::LongDouble
            | Elem::Float128
            | Elem::ComplexLongDouble
            | Elem::ComplexFloat128
            | Elem::LongDoubleInt => 16,
            Elem::ComplexF32 => 4,
            Elem::ComplexF64 | Elem::DoubleInt | Elem::LongInt | Elem::TwoDoublePrecision => 8,
            Elem::FloatInt | Elem::TwoInt | Elem::TwoInteger | Elem::TwoReal | Elem::ShortInt => 4,
            _ => p.size.max(1),
        };
        let mut cum = vec![0];
        for s in &segs {
            cum.push(cum.last().unwrap() + s.len);
        }
        Layout {
            size: p.size,
            lbb: Bound::Plain(0),
            ubb: Bound::Plain(p.extent as isize),
            true_lb: 0,
            true_ub: p.true_extent as isize,
            segs,
            cum,
            elems,
            basic: Basic::One(p.handle),
            align,
        }
    }

    /// The same data with both bounds set by markers (MPI_Type_create_resized).
    pub fn resized(&self, lb: isize, extent: isize) -> MpiResult<Layout> {
        let ub = lb.checked_add(extent).ok_or_else(|| {
            err(
                MPI_ERR_ARG,
                format!("lb={lb} + extent={extent} overflows the address range"),
            )
        })?;
        let mut l = self.clone();
        l.lbb = Bound::Marked(lb);
        l.ubb = Bound::Marked(ub);
        Ok(l)
    }
}

fn seg(disp: isize, len: usize) -> Seg {
    Seg {
        disp,
        len,
        count: 1,
        stride: 0,
    }
}

fn too_complex() -> crate::error::MpiError {
    err(
        MPI_ERR_OTHER,
        format!("datatype too irregular: one instance would need more than {MAX_PIECES} blocks"),
    )
}

/// Appends a segment, merging it into the previous one where the result is the same
/// sequence of bytes.
pub fn push_seg(v: &mut Vec<Seg>, mut s: Seg) {
    if s.len == 0 || s.count == 0 {
        return;
    }
    if s.count == 1 {
        s.stride = 0;
    } else if s.stride == s.len as isize {
        s = seg(s.disp, s.len * s.count);
    }
    if let Some(l) = v.last_mut() {
        if l.count == 1 && s.count == 1 && l.disp + l.len as isize == s.disp {
            l.len += s.len;
            return;
        }
        if l.len == s.len {
            let stride = match (l.count > 1, s.count > 1) {
                (true, true) if l.stride == s.stride => Some(l.stride),
                (true, false) => Some(l.stride),
                (false, true) => Some(s.stride),
                (false, false) => Some(s.disp - l.disp),
                _ => None,
            };
            if let Some(st) = stride {
                if l.disp + l.count as isize * st == s.disp {
                    l.count += s.count;
                    l.stride = st;
                    if l.stride == l.len as isize {
                        *l = seg(l.disp, l.len * l.count);
                    }
                    return;
                }
            }
        }
    }
    v.push(s);
}

fn push_elem(v: &mut Vec<(usize, usize)>, e: (usize, usize)) {
    if e.1 == 0 {
        return;
    }
    if let Some(l) = v.last_mut() {
        if l.0 == e.0 {
            l.1 += e.1;
            return;
        }
    }
    v.push(e);
}

/// Accumulates the instances of child types that make up a new type map.
pub struct Builder {
    size: u128,
    lbm: Option<i128>,
    lbp: Option<i128>,
    ubm: Option<i128>,
    ubp: Option<i128>,
    tlo: Option<i128>,
    thi: Option<i128>,
    segs: Vec<Seg>,
    elems: Vec<(usize, usize)>,
    basic: Basic,
    align: usize,
}

fn min_opt(a: Option<i128>, b: i128) -> Option<i128> {
    Some(a.map_or(b, |a| a.min(b)))
}
fn max_opt(a: Option<i128>, b: i128) -> Option<i128> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            size: 0,
            lbm: None,
            lbp: None,
            ubm: None,
            ubp: None,
            tlo: None,
            thi: None,
            segs: vec![],
            elems: vec![],
            basic: Basic::Empty,
            align: 1,
        }
    }

    /// Adds `n` instances of `c` at `d + i*stride` (i in 0..n).
    pub fn add(&mut self, c: &Layout, d: isize, n: usize, stride: isize) -> MpiResult<()> {
        if n == 0 || c.is_empty_map() {
            return Ok(());
        }
        let (d, st) = (d as i128, stride as i128);
        let last = d + (n as i128 - 1) * st;
        let (first_off, last_off) = (d.min(last), d.max(last));
        match c.lbb {
            Bound::Marked(v) => self.lbm = min_opt(self.lbm, v as i128 + first_off),
            Bound::Plain(v) => self.lbp = min_opt(self.lbp, v as i128 + first_off),
            Bound::None => {}
        }
        match c.ubb {
            Bound::Marked(v) => self.ubm = max_opt(self.ubm, v as i128 + last_off),
            Bound::Plain(v) => self.ubp = max_opt(self.ubp, v as i128 + last_off),
            Bound::None => {}
        }
        self.align = self.align.max(c.align);
        if c.size == 0 {
            return Ok(());
        }
        self.tlo = min_opt(self.tlo, c.true_lb as i128 + first_off);
        self.thi = max_opt(self.thi, c.true_ub as i128 + last_off);
        // The bounds checks in finish() guarantee the displacements below fit; until
        // then compute them without overflow panics.
        if self.thi.unwrap() > isize::MAX as i128 || self.tlo.unwrap() < isize::MIN as i128 {
            return Err(err(
                MPI_ERR_ARG,
                "the displacements put the data outside the address range",
            ));
        }
        self.size += c.size as u128 * n as u128;
        self.basic = self.basic.join(c.basic);
        let (d, st) = (d as isize, stride);
        // segments
        match c.segs.as_slice() {
            [s] if s.count == 1 => push_seg(
                &mut self.segs,
                Seg {
                    disp: s.disp + d,
                    len: s.len,
                    count: n,
                    stride: st,
                },
            ),
            [s] if n == 1 || s.count as isize * s.stride == st && st != 0 => push_seg(
                &mut self.segs,
                Seg {
                    disp: s.disp + d,
                    len: s.len,
                    count: s.count * n,
                    stride: s.stride,
                },
            ),
            segs => {
                if (self.segs.len() as u128) + (segs.len() as u128) * (n as u128)
                    > MAX_PIECES as u128 * 4
                {
                    return Err(too_complex());
                }
                for i in 0..n {
                    let o = d + i as isize * st;
                    for s in segs {
                        push_seg(
                            &mut self.segs,
                            Seg {
                                disp: s.disp + o,
                                ..*s
                            },
                        );
                        if self.segs.len() > MAX_PIECES {
                            return Err(too_complex());
                        }
                    }
                }
            }
        }
        // elements
        match c.elems.as_slice() {
            [e] => push_elem(&mut self.elems, (e.0, e.1 * n)),
            es => {
                for _ in 0..n {
                    for e in es {
                        push_elem(&mut self.elems, *e);
                    }
                    if self.elems.len() > MAX_PIECES {
                        return Err(too_complex());
                    }
                }
            }
        }
        Ok(())
    }

    /// The finished layout; `pad` rounds a plain upper bound so that the extent is a
    /// multiple of the strictest alignment inside (a struct's trailing padding).
    pub fn finish(self, pad: bool) -> MpiResult<Layout> {
        let lb = match (self.lbm, self.lbp) {
            (Some(v), _) => Some((v, true)),
            (None, Some(v)) => Some((v, false)),
            _ => None,
        };
        let mut ub = match (self.ubm, self.ubp) {
            (Some(v), _) => Some((v, true)),
            (None, Some(v)) => Some((v, false)),
            _ => None,
        };
        if pad {
            if let (Some((u, false)), Some((l, _))) = (ub, lb) {
                let a = self.align.max(1) as i128;
                let ext = u - l;
                let r = ext.rem_euclid(a);
                if r != 0 {
                    ub = Some((u + a - r, false));
                }
            }
        }
        let fits = |v: i128| v >= isize::MIN as i128 && v <= isize::MAX as i128;
        let mut all = vec![self.tlo.unwrap_or(0), self.thi.unwrap_or(0)];
        all.extend(lb.map(|x| x.0));
        all.extend(ub.map(|x| x.0));
        if !all.iter().all(|&v| fits(v)) || self.size > isize::MAX as u128 {
            return Err(err(
                MPI_ERR_ARG,
                "the datatype's bounds or size exceed the address range",
            ));
        }
        if let (Some((l, _)), Some((u, _))) = (lb, ub) {
            if !fits(u - l) {
                return Err(err(MPI_ERR_ARG, "the datatype's extent overflows"));
            }
        }
        let bound = |b: Option<(i128, bool)>| match b {
            None => Bound::None,
            Some((v, true)) => Bound::Marked(v as isize),
            Some((v, false)) => Bound::Plain(v as isize),
        };
        let mut cum = Vec::with_capacity(self.segs.len() + 1);
        let mut acc = 0usize;
        cum.push(0);
        for s in &self.segs {
            acc += s.len * s.count;
            cum.push(acc);
        }
        debug_assert_eq!(acc as u128, self.size);
        Ok(Layout {
            size: self.size as usize,
            lbb: bound(lb),
            ubb: bound(ub),
            true_lb: self.tlo.unwrap_or(0) as isize,
            true_ub: self.thi.unwrap_or(0) as isize,
            segs: self.segs,
            cum,
            elems: self.elems,
            basic: self.basic,
            align: self.align,
        })
    }
}

/// `n` instances of `c` at `stride` bytes apart, as one layout (no padding).
pub fn repeat(c: &Layout, n: usize, stride: isize) -> MpiResult<Layout> {
    let mut b = Builder::new();
    b.add(c, 0, n, stride)?;
    b.finish(false)
}
