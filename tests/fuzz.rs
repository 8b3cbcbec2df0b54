//! Fuzzing on stable Rust (cargo-fuzz needs nightly): two seeded random drivers.
//!
//! - `datatypes`: random nested sequences of the datatype constructors (contiguous,
//!   vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct, resized,
//!   dup, subarray) with random, sometimes invalid, arguments; each type is checked
//!   against an independent type map built here (size, true bounds, bounds of types
//!   without markers or padding, resized bounds) and packed / unpacked with random counts
//!   and random windows of the packed stream, compared byte for byte with the type map.
//! - `entry_points`: the exported C entry points (reductions, their nonblocking forms,
//!   Bcast, Reduce_local, Op_commutative, Pack) called in-process on a singleton under
//!   MPI_ERRORS_RETURN with random handles (valid, null, freed, uncommitted, garbage),
//!   counts, roots and pointers among NULL, MPI_IN_PLACE and valid buffers: every call
//!   must return, and a correct reduction must still work after each one.
//!
//! Both run for a short time in `make test` (about 10 s each); `make fuzz` runs the long
//! version (SHMPI_FUZZ_ITERS=N inputs each). SHMPI_FUZZ_SEED picks the seed; a failure
//! names the input's seed, and SHMPI_FUZZ_SEED=that with SHMPI_FUZZ_ITERS=1 replays it.
use shmpi::abi::*;
use shmpi::datatype::{self, derived};
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// xorshift64*: small, seedable, good enough to pick arguments.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// How many inputs and how long: SHMPI_FUZZ_ITERS (default: as many as fit in `secs`).
fn budget(secs: u64) -> (u64, Duration, u64) {
    let iters = std::env::var("SHMPI_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok());
    let seed = std::env::var("SHMPI_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    match iters {
        Some(n) => (n, Duration::from_secs(u64::MAX / 4), seed),
        None => (u64::MAX, Duration::from_secs(secs), seed),
    }
}

// ---------------------------------------------------------------------------------------
// Datatypes against an independent type map

/// A type as this file understands it: its data entries (displacement, length) in type
/// map order, and what is known about its bounds.
#[derive(Clone)]
struct Model {
    entries: Vec<(isize, usize)>,
    /// lb / ub are exactly the data's bounds (no resized, no struct padding below).
    plain: bool,
    /// Set by resized: the bounds it must have.
    forced: Option<(isize, isize)>,
}

const LEAVES: &[(i32, usize)] = &[
    (MPI_BYTE, 1),
    (MPI_CHAR, 1),
    (MPI_SHORT, 2),
    (MPI_INT, 4),
    (MPI_FLOAT, 4),
    (MPI_DOUBLE, 8),
    (MPI_LONG_LONG, 8),
];

struct Gen<'a> {
    rng: &'a mut Rng,
    made: Vec<i32>,
    /// Constructor calls tried / rejected with an error.
    calls: u64,
    errors: u64,
}

impl Gen<'_> {
    fn extent_of(h: i32) -> isize {
        derived::get(h, "t").unwrap().extent()
    }

    /// A random (sometimes bad) small count.
    fn count(&mut self, max: i64) -> i32 {
        if self.rng.chance(3) {
            self.rng.pick(&[-1, -7, i32::MIN])
        } else {
            self.rng.range(0, max) as i32
        }
    }

    fn gen(&mut self, depth: u32) -> Option<(i32, Model)> {
        if depth == 0 || self.rng.chance(25) {
            let (h, sz) = self.rng.pick(LEAVES);
            return Some((
                h,
                Model {
                    entries: vec![(0, sz)],
                    plain: true,
                    forced: None,
                },
            ));
        }
        let (old, om) = self.gen(depth - 1)?;
        let ext = Self::extent_of(old);
        // Copies of the old type at these displacements, in type map order.
        let copies = |disps: &[(isize, usize)]| -> Vec<(isize, usize)> {
            let mut v = Vec::new();
            for &(d, bl) in disps {
                for k in 0..bl {
                    for &(ed, el) in &om.entries {
                        v.push((d + k as isize * ext + ed, el));
                    }
                }
            }
            v
        };
        let kind = self.rng.below(11);
        self.calls += 1;
        let (res, entries, plain, forced) = match kind {
            0 => {
                let n = self.count(4);
                let disps: Vec<_> = (0..n.max(0)).map(|i| (i as isize * ext, 1)).collect();
                (derived::contiguous(n, old), copies(&disps), om.plain, None)
            }
            1 | 2 => {
                let n = self.count(4);
                let bl = self.count(3);
                let stride = self.rng.range(-5, 5);
                let (res, bstride) = if kind == 1 {
                    (
                        derived::vector(n, bl, stride as i32, old),
                        stride as isize * ext,
                    )
                } else {
                    let s = stride as isize * 3 + self.rng.range(-2, 2) as isize;
                    (derived::hvector(n, bl, s, old), s)
                };
                let disps: Vec<_> = (0..n.max(0))
                    .map(|i| (i as isize * bstride, bl.max(0) as usize))
                    .collect();
                (res, copies(&disps), om.plain, None)
            }
            3..=6 => {
                let n = self.count(4);
                let m = n.max(0) as usize;
                let bls: Vec<i32> = (0..m).map(|_| self.count(3)).collect();
                let d: Vec<i64> = (0..m).map(|_| self.rng.range(-6, 6)).collect();
                let same = self.count(3);
                let (res, disps): (_, Vec<(isize, usize)>) = match kind {
                    3 => {
                        let di: Vec<i32> = d.iter().map(|&x| x as i32).collect();
                        (
                            derived::indexed(n, &bls, &di, old),
                            (0..m)
                                .map(|i| (d[i] as isize * ext, bls[i].max(0) as usize))
                                .collect(),
                        )
                    }
                    4 => {
                        let db: Vec<isize> = d.iter().map(|&x| x as isize * 5).collect();
                        (
                            derived::hindexed(n, &bls, &db, old),
                            (0..m).map(|i| (db[i], bls[i].max(0) as usize)).collect(),
                        )
                    }
                    5 => {
                        let di: Vec<i32> = d.iter().map(|&x| x as i32).collect();
                        (
                            derived::indexed_block(n, same, &di, old),
                            (0..m)
                                .map(|i| (d[i] as isize * ext, same.max(0) as usize))
                                .collect(),
                        )
                    }
                    _ => {
                        let db: Vec<isize> = d.iter().map(|&x| x as isize * 3).collect();
                        (
                            derived::hindexed_block(n, same, &db, old),
                            (0..m).map(|i| (db[i], same.max(0) as usize)).collect(),
                        )
                    }
                };
                (res, copies(&disps), om.plain, None)
            }
            7 => {
                // A struct of the old type and a leaf.
                let (leaf, lsz) = self.rng.pick(LEAVES);
                let b0 = self.count(2);
                let b1 = self.rng.range(0, 2) as i32;
                let d0 = self.rng.range(-16, 16) as isize;
                let d1 = self.rng.range(-16, 16) as isize;
                let res = derived::structure(2, &[b0, b1], &[d0, d1], &[old, leaf]);
                let mut e = copies(&[(d0, b0.max(0) as usize)]);
                for k in 0..b1 as isize {
                    e.push((d1 + k * lsz as isize, lsz));
                }
                (res, e, false, None)
            }
            8 => {
                let lb = self.rng.range(-20, 20) as isize;
                let ex = self.rng.range(-4, 40) as isize;
                let ok_extent = ex;
                (
                    derived::resized(old, lb, ex),
                    om.entries.clone(),
                    false,
                    Some((lb, lb + ok_extent)),
                )
            }
            9 => (derived::dup(old), om.entries.clone(), om.plain, om.forced),
            _ => {
                // A 2-d subarray in C or Fortran order.
                let sizes = [self.rng.range(1, 4) as i32, self.rng.range(1, 4) as i32];
                let sub = [
                    self.rng.range(0, sizes[0] as i64) as i32,
                    self.rng.range(0, sizes[1] as i64) as i32,
                ];
                let st = [
                    self.rng.range(0, (sizes[0] - sub[0]) as i64) as i32,
                    self.rng.range(0, (sizes[1] - sub[1]) as i64) as i32,
                ];
                let c_order = self.rng.chance(50);
                let order = if c_order {
                    MPI_ORDER_C
                } else {
                    MPI_ORDER_FORTRAN
                };
                let mut disps = Vec::new();
                // Type map order: the fastest dimension innermost.
                let (slow, fast) = if c_order { (0, 1) } else { (1, 0) };
                for i in 0..sub[slow] {
                    for j in 0..sub[fast] {
                        let (a, b) = if c_order {
                            (st[0] + i, st[1] + j)
                        } else {
                            (st[0] + j, st[1] + i)
                        };
                        let lin = if c_order {
                            a as isize * sizes[1] as isize + b as isize
                        } else {
                            b as isize * sizes[0] as isize + a as isize
                        };
                        disps.push((lin * ext, 1));
                    }
                }
                let total = sizes[0] as isize * sizes[1] as isize * ext;
                (
                    derived::subarray(2, &sizes, &sub, &st, order, old),
                    copies(&disps),
                    false,
                    Some((0, total)),
                )
            }
        };
        match res {
            Ok(h) => {
                self.made.push(h);
                if self.rng.chance(80) {
                    derived::commit(h).unwrap();
                }
                Some((
                    h,
                    Model {
                        entries,
                        plain,
                        forced,
                    },
                ))
            }
            Err(_) => {
                self.errors += 1;
                None
            }
        }
    }
}

/// Checks one type against its model, and packs / unpacks it. Returns the number of
/// pack + unpack operations checked.
fn check_type(rng: &mut Rng, h: i32, m: &Model, seed: u64) -> u64 {
    let t = derived::get(h, "t").unwrap();
    let ctx = || format!("seed {seed}, type {h:#x}");
    let size: usize = m.entries.iter().map(|e| e.1).sum();
    assert_eq!(t.size(), size, "size ({})", ctx());
    let data: Vec<&(isize, usize)> = m.entries.iter().filter(|e| e.1 > 0).collect();
    if !data.is_empty() {
        let tlb = data.iter().map(|e| e.0).min().unwrap();
        let tub = data.iter().map(|e| e.0 + e.1 as isize).max().unwrap();
        assert_eq!(t.true_lb(), tlb, "true_lb ({})", ctx());
        assert_eq!(t.true_extent(), tub - tlb, "true_extent ({})", ctx());
        if m.plain && m.forced.is_none() {
            assert_eq!((t.lb(), t.extent()), (tlb, tub - tlb), "bounds ({})", ctx());
        }
    }
    if let Some((lb, ub)) = m.forced {
        assert_eq!((t.lb(), t.ub()), (lb, ub), "forced bounds ({})", ctx());
    }
    let mut ops = 0;
    for _ in 0..3 {
        let count = rng.below(4) as usize;
        let Some((off, len)) = datatype::span(&t, count) else {
            continue;
        };
        if len > 1 << 20 {
            continue;
        }
        let slack = 16isize;
        // The buffer address is `origin` bytes into the slice, the data `off` bytes
        // from there, with some slack on either side.
        let origin = (slack - off).max(0) as usize;
        let buflen = (origin as isize + off + len as isize + slack) as usize;
        let src: Vec<u8> = (0..buflen).map(|_| rng.next() as u8).collect();
        let ext = t.extent();
        // The oracle's packed stream: every entry of every instance, in order.
        let mut want = Vec::with_capacity(count * size);
        let mut places = Vec::with_capacity(count * size);
        for i in 0..count {
            for &(d, l) in &m.entries {
                for b in 0..l {
                    let at = origin as isize + i as isize * ext + d + b as isize;
                    assert!(
                        at >= 0 && (at as usize) < buflen,
                        "the type map leaves span() ({})",
                        ctx()
                    );
                    want.push(src[at as usize]);
                    places.push(at as usize);
                }
            }
        }
        let mut got = vec![0u8; want.len()];
        datatype::pack_slice(&t, count, &src, origin, &mut got, 0)
            .unwrap_or_else(|e| panic!("pack: {} ({})", e.msg, ctx()));
        assert!(got == want, "pack differs from the type map ({})", ctx());
        // A random window of the stream.
        if !want.is_empty() {
            let a = rng.below(want.len() as u64) as usize;
            let b = a + rng.below((want.len() - a) as u64 + 1) as usize;
            let mut w = vec![0u8; b - a];
            datatype::pack_slice(&t, count, &src, origin, &mut w, a).unwrap();
            assert!(w == want[a..b], "pack window [{a},{b}) ({})", ctx());
        }
        // Past the end of the stream: an error, not a panic.
        let mut past = vec![0u8; 1];
        assert!(datatype::pack_slice(&t, count, &src, origin, &mut past, want.len()).is_err());
        ops += 1;
        // Unpack, when no byte is written twice (overlapping receive types are
        // erroneous): the oracle writes each stream byte at its place.
        let mut seen = vec![false; buflen];
        let overlap = places
            .iter()
            .any(|&p| std::mem::replace(&mut seen[p], true));
        if !overlap {
            let stream: Vec<u8> = (0..want.len()).map(|_| rng.next() as u8).collect();
            let mut oracle = vec![0xA5u8; buflen];
            for (k, &p) in places.iter().enumerate() {
                oracle[p] = stream[k];
            }
            let mut dst = vec![0xA5u8; buflen];
            // In two pieces, as a pipelined receive would.
            let cut = rng.below(stream.len() as u64 + 1) as usize;
            datatype::unpack_slice(&t, count, &mut dst, origin, &stream[..cut], 0).unwrap();
            datatype::unpack_slice(&t, count, &mut dst, origin, &stream[cut..], cut).unwrap();
            assert!(
                dst == oracle,
                "unpack differs from the type map ({})",
                ctx()
            );
            ops += 1;
        }
    }
    ops
}

fn run_datatypes(iters: u64, limit: Duration, seed0: u64) {
    let t0 = Instant::now();
    let (mut inputs, mut types, mut ops, mut calls, mut errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
    while inputs < iters && t0.elapsed() < limit {
        let seed = seed0.wrapping_add(inputs);
        inputs += 1;
        let mut rng = Rng::new(seed);
        let mut g = Gen {
            rng: &mut rng,
            made: Vec::new(),
            calls: 0,
            errors: 0,
        };
        let depth = 1 + g.rng.below(3) as u32;
        let r = g.gen(depth);
        let made = std::mem::take(&mut g.made);
        calls += g.calls;
        errors += g.errors;
        if let Some((h, m)) = r {
            if derived::get(h, "t")
                .map(|t| t.is_committed())
                .unwrap_or(false)
            {
                types += 1;
                ops += check_type(&mut rng, h, &m, seed);
            }
        }
        for h in made {
            derived::free(h).unwrap();
        }
    }
    println!(
        "fuzz datatypes: {inputs} inputs (seed {seed0}), {calls} constructor calls ({errors} rejected), \
         {types} types checked, {ops} pack/unpack checks, {:.1}s",
        t0.elapsed().as_secs_f64()
    );
}

/// The library provides MPI_THREAD_SERIALIZED: the two fuzzers (threads of one test
/// process) take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn datatypes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (iters, limit, seed) = budget(8);
    run_datatypes(iters, limit, seed);
}

// ---------------------------------------------------------------------------------------
// C entry points: argument validation

use shmpi::ffi::c::{coll, coll_move, comm, datatype as cdt, init, op as cop, p2p};

unsafe extern "C" fn user_sum(inv: *mut c_void, inout: *mut c_void, len: *mut i32, _t: *mut i32) {
    let n = *len as usize;
    let a = std::slice::from_raw_parts(inv as *const i32, n);
    let b = std::slice::from_raw_parts_mut(inout as *mut i32, n);
    for i in 0..n {
        b[i] = b[i].wrapping_add(a[i]);
    }
}

const IN_PLACE: *mut c_void = -1isize as *mut c_void;

struct Handles {
    comms: Vec<i32>,
    types: Vec<i32>,
    ops: Vec<i32>,
}

/// The largest extent of any valid type below, times the largest valid count.
const MAX_COUNT: i32 = 64;
const BUF: usize = 64 * 64 + 64;

fn run_entry_points(iters: u64, limit: Duration, seed0: u64) {
    // SAFETY: every call below gets pointers to live buffers (sized for the largest
    // valid count and extent), NULL, or MPI_IN_PLACE; invalid handles are plain integers.
    unsafe {
        let mut flag = 0;
        init::MPI_Initialized(&mut flag);
        if flag == 0 {
            assert_eq!(
                init::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()),
                0
            );
        }
        init::MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        init::MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        let mut dup = 0;
        assert_eq!(comm::MPI_Comm_dup(MPI_COMM_WORLD, &mut dup), 0);
        let mut freed_comm = 0;
        comm::MPI_Comm_dup(MPI_COMM_WORLD, &mut freed_comm);
        let fc = freed_comm;
        comm::MPI_Comm_free(&mut freed_comm);
        let mut vec_t = 0;
        cdt::MPI_Type_vector(3, 2, 4, MPI_INT, &mut vec_t);
        cdt::MPI_Type_commit(&mut vec_t);
        let mut unc = 0;
        cdt::MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &mut unc);
        let mut freed_t = 0;
        cdt::MPI_Type_contiguous(2, MPI_INT, &mut freed_t);
        let ft = freed_t;
        cdt::MPI_Type_free(&mut freed_t);
        let mut uop = 0;
        cop::MPI_Op_create(Some(user_sum), 1, &mut uop);
        let mut freed_op = 0;
        cop::MPI_Op_create(Some(user_sum), 0, &mut freed_op);
        let fo = freed_op;
        cop::MPI_Op_free(&mut freed_op);
        let h = Handles {
            comms: vec![
                MPI_COMM_WORLD,
                MPI_COMM_SELF,
                dup,
                MPI_COMM_NULL,
                fc,
                0x1234,
                -1,
                0,
            ],
            types: vec![
                MPI_INT,
                MPI_DOUBLE,
                MPI_CHAR,
                MPI_C_BOOL,
                MPI_DOUBLE_INT,
                MPI_2INT,
                MPI_LONG_DOUBLE,
                vec_t,
                unc,
                ft,
                MPI_DATATYPE_NULL,
                0x1234,
                -1,
                0,
            ],
            ops: vec![
                MPI_SUM,
                MPI_MAX,
                MPI_BAND,
                MPI_LXOR,
                MPI_MAXLOC,
                MPI_MINLOC,
                MPI_REPLACE,
                MPI_NO_OP,
                uop,
                fo,
                MPI_OP_NULL,
                0x1234,
                -1,
                0,
            ],
        };
        let mut sbuf = vec![0u8; BUF];
        let mut rbuf = vec![0u8; BUF];
        let t0 = Instant::now();
        let verbose = std::env::var_os("SHMPI_FUZZ_VERBOSE").is_some();
        let (mut inputs, mut errors, skipped) = (0u64, 0u64, 0u64);
        let mut rcounts = [0i32; 4];
        while inputs < iters && t0.elapsed() < limit {
            let seed = seed0.wrapping_add(inputs);
            inputs += 1;
            let mut rng = Rng::new(seed);
            let c = rng.pick(&h.comms);
            let t = rng.pick(&h.types);
            let o = rng.pick(&h.ops);
            let count = if rng.chance(10) {
                rng.pick(&[-1, i32::MIN, -1000])
            } else {
                rng.range(0, MAX_COUNT as i64) as i32
            };
            let root = rng.pick(&[0, 0, 0, 1, -1, -5, i32::MAX, i32::MIN]);
            let sp = rng.below(10);
            let rp = rng.below(10);
            let sb: *mut c_void = match sp {
                0 => std::ptr::null_mut(),
                1 => IN_PLACE,
                2 => rbuf.as_mut_ptr() as *mut c_void,
                _ => sbuf.as_mut_ptr() as *mut c_void,
            };
            let rb: *mut c_void = match rp {
                0 => std::ptr::null_mut(),
                1 => IN_PLACE,
                _ => rbuf.as_mut_ptr() as *mut c_void,
            };
            for r in rcounts.iter_mut() {
                *r = if rng.chance(10) { -1 } else { count.max(0) };
            }
            let rc_ptr = if rng.chance(5) {
                std::ptr::null()
            } else {
                rcounts.as_ptr()
            };
            let mut req = MPI_REQUEST_NULL;
            let f = rng.below(16);
            if verbose {
                eprintln!(
                    "seed {seed}: function {f} comm {c:#x} type {t:#x} op {o:#x} count {count} \
                     root {root} sendbuf {sp} recvbuf {rp} recvcounts {:?}",
                    if rc_ptr.is_null() {
                        None
                    } else {
                        Some(rcounts)
                    }
                );
            }
            let rc = match f {
                0 => coll::MPI_Allreduce(sb, rb, count, t, o, c),
                1 => coll::MPI_Reduce(sb, rb, count, t, o, root, c),
                2 => cop::MPI_Reduce_local(sb, rb, count, t, o),
                3 => coll::MPI_Scan(sb, rb, count, t, o, c),
                4 => coll::MPI_Exscan(sb, rb, count, t, o, c),
                5 => coll::MPI_Reduce_scatter_block(sb, rb, count, t, o, c),
                6 => coll::MPI_Reduce_scatter(sb, rb, rc_ptr, t, o, c),
                7 => coll::MPI_Iallreduce(sb, rb, count, t, o, c, &mut req),
                8 => coll::MPI_Ireduce(sb, rb, count, t, o, root, c, &mut req),
                9 => coll::MPI_Iscan(sb, rb, count, t, o, c, &mut req),
                10 => coll::MPI_Iexscan(sb, rb, count, t, o, c, &mut req),
                11 => coll::MPI_Ireduce_scatter(sb, rb, rc_ptr, t, o, c, &mut req),
                12 => coll_move::MPI_Bcast(rb, count, t, root, c),
                13 => {
                    let mut commute = 0;
                    let p = if rng.chance(10) {
                        std::ptr::null_mut()
                    } else {
                        &mut commute as *mut i32
                    };
                    cop::MPI_Op_commutative(o, p)
                }
                14 => {
                    // NULL and MPI_IN_PLACE buffers included: MPI_Pack must reject them.
                    let mut pos = rng.range(-2, 8) as i32;
                    let outsize = rng.range(-1, BUF as i64) as i32;
                    cdt::MPI_Pack(sb, count, t, rb, outsize, &mut pos, c)
                }
                _ => coll::MPI_Ireduce_scatter_block(sb, rb, count, t, o, c, &mut req),
            };
            if rc != 0 {
                errors += 1;
                assert_eq!(
                    req, MPI_REQUEST_NULL,
                    "seed {seed}: a failed call returned a request"
                );
            } else if req != MPI_REQUEST_NULL {
                let rc = p2p::MPI_Wait(&mut req, std::ptr::null_mut());
                assert_eq!(rc, 0, "seed {seed}: MPI_Wait failed");
            }
            // Still working: a correct reduction.
            if inputs % 64 == 0 {
                let (a, mut b) = (3i32, 0i32);
                let rc = coll::MPI_Allreduce(
                    &a as *const i32 as *mut c_void,
                    &mut b as *mut i32 as *mut c_void,
                    1,
                    MPI_INT,
                    MPI_SUM,
                    MPI_COMM_WORLD,
                );
                assert_eq!((rc, b), (0, 3), "seed {seed}: broken after the input");
            }
        }
        println!(
            "fuzz entry points: {inputs} inputs (seed {seed0}), {errors} calls returned an \
             error, {} succeeded, {skipped} skipped (known crash), {:.1}s",
            inputs - errors - skipped,
            t0.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn entry_points() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (iters, limit, seed) = budget(8);
    run_entry_points(iters, limit, seed);
}
