//! Point-to-point messaging over the arena.
//!
//! Every ordered pair of ranks (src, dst) has a single-producer single-consumer ring of
//! frames. A message of at most `eager_max` bytes travels inline in one frame (eager).
//! A larger one sends a request-to-send frame. If the sender's memory may be read by
//! other processes, that frame carries the message's address (`F_RTS_DIRECT`), and the
//! receiver, once it matched it, reads the bytes straight into its buffer
//! (`process_vm_readv`, at the end of a progress pass: `Engine::read_due`) and answers
//! `F_READ`, which completes the send. Otherwise, or if that read fails, the receiver
//! writes the message id into the pair's bulk pipe (clear-to-send) and the sender
//! streams the bytes through the pipe's two segments, so large messages are pipelined
//! and nothing is buffered without bound. Ssend always uses the rendezvous so that it
//! completes only once matched. Frames of one pair are consumed in order, which gives
//! MPI's non-overtaking rule.
//!
//! A matched probe (MPI_Mprobe) takes an unexpected message off the matching queue into
//! a request-table entry of its own; a rendezvous message gets its clear-to-send only when
//! MPI_Mrecv receives it, so its sender waits, while other messages of the pair, which
//! are announced one at a time in match order, keep using the pipe.
//!
//! Cost: eager = 2 copies (user -> ring -> user), one hand-off; direct rendezvous = 1
//! copy, two hand-offs (the request and the answer); pipe rendezvous = 2 copies, one
//! hand-off per pipe segment.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - the mutable arena views (`Arena::slice_mut`) of a ring entry or pipe segment this
//!   sender reserved and has not published yet;
//! - the direct read into a receive buffer (`UserBuf::as_mut_slice`);
//! - `recv_bytes`, which lends a borrowed slice to a blocking receive.
pub mod buf;

use crate::abi::*;
use crate::comm::Comm;
use crate::error::{err, MpiResult};
use crate::runtime::Job;
use crate::shm::proto::{Frame, Ring};
use crate::shm::wait::{notify, Backoff};
use crate::shm::{Arena, RING_HDR};
pub use buf::UserBuf;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

const F_EAGER: u32 = 1;
const F_RTS: u32 = 2;
/// Sender to receiver: withdraw message `id` if no receive has taken it yet.
const F_CANCEL: u32 = 4;
/// Receiver to sender: the answer for message `id`, `tag` 1 if it was withdrawn.
const F_CANCEL_REPLY: u32 = 5;
/// Receiver in MPI_Finalize to sender: rendezvous message `id` was never received and
/// never will be.
const F_REFUSED: u32 = 6;
/// A request to send whose 8 inline bytes give the address of the message's bytes in
/// the sender's memory, which stay there until the receiver answers: it reads them
/// directly (`process_vm_readv`, one copy) and answers `F_READ`, or, if it cannot,
/// answers with a clear-to-send as for `F_RTS`.
const F_RTS_DIRECT: u32 = 7;
/// Receiver to sender: message `id` was read directly from the sender's memory; the
/// send is complete.
const F_READ: u32 = 8;

/// What a completed operation reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    pub count_bytes: u64,
    pub cancelled: bool,
    /// Why a receive failed because no message can ever match it (`error` is then
    /// MPI_ERR_OTHER).
    pub orphan: Orphan,
}

/// Why no message can ever match a receive ([`Status::orphan`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Orphan {
    #[default]
    No,
    /// Its source is in MPI_Finalize with nothing left to send.
    SourceGone,
    /// It receives from MPI_ANY_SOURCE, and every rank that could send it is in
    /// MPI_Finalize with nothing left to send (this rank aside, which waits for it).
    AllGone,
    /// It receives from this rank itself, which waits for it.
    FromItself,
    /// A send (of rendezvous size, or synchronous) whose receiver called MPI_Finalize
    /// without receiving it; `source` is the destination.
    ReceiverGone,
}

impl Status {
    pub fn empty() -> Status {
        Status {
            source: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            error: MPI_SUCCESS,
            count_bytes: 0,
            cancelled: false,
            orphan: Orphan::No,
        }
    }
    /// The status of a receive from MPI_PROC_NULL.
    pub fn proc_null() -> Status {
        Status {
            source: MPI_PROC_NULL,
            tag: MPI_ANY_TAG,
            ..Status::empty()
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Standard,
    Sync,
    Ready,
    Buffered,
}

/// The bytes a send takes from.
pub enum SendData {
    /// Contiguous bytes of the program's.
    User(UserBuf),
    /// Bytes the library holds.
    Owned(Vec<u8>),
    /// A non-contiguous datatype in the program's buffer, packed as it goes out.
    Typed(buf::Typed),
}

impl SendData {
    fn len(&self) -> usize {
        match self {
            SendData::User(b) => b.len(),
            SendData::Owned(v) => v.len(),
            SendData::Typed(t) => t.len(),
        }
    }
    /// Where the bytes are in this process, if they lie there as one block that does
    /// not move while the send is on (an owned vector is never resized): what a
    /// receiver may read directly.
    fn addr(&self) -> Option<usize> {
        match self {
            SendData::User(b) => Some(b.addr()),
            SendData::Owned(v) => Some(v.as_ptr() as usize),
            SendData::Typed(_) => None,
        }
    }
    fn copy_out(&self, off: usize, dst: &mut [u8]) {
        match self {
            SendData::User(b) => b.read_at(off, dst),
            SendData::Owned(v) => dst.copy_from_slice(&v[off..off + dst.len()]),
            SendData::Typed(t) => t.pack_at(off, dst),
        }
    }
    /// The data as bytes the library holds (a send that must not read the program's
    /// buffer after the call: MPI_Bsend, MPI_Sendrecv_replace).
    pub fn into_owned(self) -> SendData {
        match self {
            SendData::User(b) => SendData::Owned(b.as_slice().to_vec()),
            SendData::Typed(t) => SendData::Owned(t.to_vec()),
            owned => owned,
        }
    }
}

#[derive(Debug, PartialEq)]
enum SendStage {
    /// Not yet in the ring (ring full, or behind earlier queued sends).
    Queued,
    /// RTS in the ring, waiting for clear-to-send.
    AwaitCts,
    /// Streaming through the pipe; `sent` bytes pushed so far.
    Streaming {
        sent: usize,
    },
    Done,
}

struct SendReq {
    dst: usize,
    ctx: u32,
    tag: i32,
    data: SendData,
    rdv: bool,
    msg_id: u64,
    stage: SendStage,
    /// Bytes of the attached MPI_Bsend buffer this send holds.
    bsend_bytes: usize,
    /// MPI_Cancel asked the receiver to withdraw the message; the answer is awaited.
    cancelling: bool,
}

#[derive(Debug, PartialEq)]
enum RecvStage {
    Posted,
    /// Matched a rendezvous its sender offered to be read directly (`F_RTS_DIRECT`):
    /// the read is due (`Engine::read_due`).
    Reading {
        src: usize,
        len: usize,
        msg_id: u64,
        addr: u64,
    },
    /// Matched a rendezvous: pulling `len` bytes from src's pipe.
    Streaming {
        src: usize,
        len: usize,
        got: usize,
        msg_id: u64,
        cts_sent: bool,
    },
    Done,
}

struct RecvReq {
    ctx: u32,
    src: i32, // world rank or MPI_ANY_SOURCE
    tag: i32,
    into: RecvInto,
    stage: RecvStage,
    comm_src: i32, // source rank as the user sees it, once matched
}

enum ReqKind {
    Send(SendReq),
    Recv(RecvReq),
    /// Already complete (e.g. PROC_NULL).
    Done,
    /// The program's request of an MPI_Bsend / MPI_Ibsend: complete at once, while the
    /// library's own send of message `msg_id` to `dst` goes on in the background
    /// (MPI_Cancel withdraws that one).
    Bsent {
        dst: usize,
        msg_id: u64,
    },
    /// MPI_Isendrecv(_replace): complete when both its receive and its send are, with
    /// the receive's status (see `pair`).
    Pair {
        recv: ReqId,
        send: ReqId,
    },
    /// A nonblocking collective, driven by coll::nb.
    Coll,
    /// A generalized request (MPI_Grequest_start): completed by the program through
    /// `complete_user`; its status comes from the program's query callback.
    User,
    /// A message matched by MPI_Mprobe / MPI_Improbe and taken off the matching queue:
    /// only MPI_Mrecv / MPI_Imrecv of this id can receive it. A rendezvous message stays
    /// unannounced (no clear-to-send), so its sender keeps waiting, and the pair's pipe
    /// stays free for the other messages this rank receives meanwhile.
    Message(Unexpected),
}

struct Req {
    kind: ReqKind,
    complete: bool,
    status: Status,
    /// The communicator's from_world translation, for MPI_SOURCE.
    from_world: std::sync::Arc<Comm>,
}

impl Req {
    /// Completes a receive whose buffer holds what fits of its `len`-byte message.
    fn finish_recv(&mut self, len: usize) {
        let ReqKind::Recv(r) = &mut self.kind else {
            unreachable!()
        };
        let cap = r.into.cap();
        r.stage = RecvStage::Done;
        self.complete = true;
        self.status.count_bytes = len.min(cap) as u64;
        self.status.error = if len > cap {
            MPI_ERR_TRUNCATE
        } else {
            MPI_SUCCESS
        };
    }
}

/// Reads what fits in receive `r` of a `len`-byte message at `addr` in the memory of
/// the process in slot `src` (its request to send was `F_RTS_DIRECT`); false if that
/// failed (then the pipe carries it). A non-contiguous receive reads it in pieces of
/// [`STAGE`] bytes into `stage` and unpacks each.
fn read_direct(
    a: &Arena,
    src: usize,
    addr: u64,
    r: &RecvReq,
    len: usize,
    stage: &mut Vec<u8>,
) -> bool {
    let pid = a.rank_pid(src).load(Ordering::Acquire) as i32;
    let n = len.min(r.into.cap());
    let u = match &r.into {
        RecvInto::Bytes(b) => {
            let b = b.sub(0, n);
            // SAFETY: the receive buffer of the request being completed, which it owns;
            // nothing else refers to it during the read.
            let dst = unsafe { b.as_mut_slice() };
            return crate::shm::peer::read(pid, addr as usize, dst).is_ok();
        }
        RecvInto::Typed(u) => u,
    };
    if stage.len() < n.min(STAGE) {
        stage.resize(n.min(STAGE), 0);
    }
    let mut off = 0;
    while off < n {
        let k = (n - off).min(STAGE);
        if crate::shm::peer::read(pid, addr as usize + off, &mut stage[..k]).is_err() {
            return false;
        }
        u.unpack_at(off, &stage[..k]);
        off += k;
    }
    true
}

/// Bytes of the staging buffer through which a non-contiguous receive reads a message
/// from its sender's memory: small enough to stay in the cache between the read and
/// the unpack.
const STAGE: usize = 256 << 10;

struct Unexpected {
    src: usize,
    ctx: u32,
    tag: i32,
    len: usize,
    /// An eager message's bytes; `Held::Rdv` for a request to send.
    payload: Held,
    msg_id: u64,
    /// For a request to send: the address of the message in the sender's memory if it
    /// may be read from there directly (`F_RTS_DIRECT`), else 0.
    addr: u64,
}

/// Bytes an eager message may hold in place in the unexpected queue.
const HELD_INLINE: usize = 48;

/// The payload of an unexpected message: an eager message of up to [`HELD_INLINE`]
/// bytes in place (most small messages: no heap allocation and free for each, which
/// callgrind put at about 200 of the 1800 instructions of a receive in a stream of
/// 8-byte messages), a longer one on the heap; nothing for a request to send.
enum Held {
    Inline(u8, [u8; HELD_INLINE]),
    Heap(Box<[u8]>),
    Rdv,
}

impl Held {
    fn eager(bytes: &[u8]) -> Held {
        if bytes.len() <= HELD_INLINE {
            let mut b = [0u8; HELD_INLINE];
            b[..bytes.len()].copy_from_slice(bytes);
            Held::Inline(bytes.len() as u8, b)
        } else {
            Held::Heap(bytes.into())
        }
    }
}

impl Unexpected {
    fn payload(&self) -> Payload<'_> {
        match &self.payload {
            Held::Inline(n, b) => Payload::Eager(&b[..*n as usize]),
            Held::Heap(bytes) => Payload::Eager(bytes),
            Held::Rdv => Payload::Rdv {
                msg_id: self.msg_id,
                addr: self.addr,
            },
        }
    }
}

/// What a matched message brings its receive ([`Engine::deliver`]).
enum Payload<'a> {
    /// An eager message's bytes.
    Eager(&'a [u8]),
    /// A rendezvous message: its id, and its address in the sender's memory if the
    /// receiver may read it from there (else 0).
    Rdv { msg_id: u64, addr: u64 },
}

#[derive(Default)]
struct Engine {
    reqs: Vec<Option<Req>>,
    free: Vec<usize>,
    posted: VecDeque<usize>,
    unexpected: VecDeque<Unexpected>,
    /// Per destination: sends not yet fully in the ring, in order.
    queued: Vec<VecDeque<usize>>,
    /// The destinations whose `queued` may be non-empty (every one that is; no
    /// duplicates), so that pushing looks at those only, not at every slot of the arena
    /// (with room for spawned processes, dozens: 40% of the instructions of a small
    /// blocking MPI_Send went into that loop).
    queued_dsts: Vec<usize>,
    /// Per destination: the ring's tail as this rank last read it (`Ring::push_seen`).
    tail_seen: Vec<usize>,
    /// Rendezvous sends awaiting CTS or streaming.
    rdv_sends: Vec<usize>,
    /// Receives whose message is due to be read from its sender's memory
    /// ([`RecvStage::Reading`]).
    reads: Vec<usize>,
    /// Per source: receives streaming or waiting to issue CTS, in match order.
    rdv_recvs: Vec<VecDeque<usize>>,
    /// The staging buffer of direct reads into non-contiguous receives
    /// ([`read_direct`]), kept between them.
    stage: Vec<u8>,
    next_msg_id: Vec<u64>,
    /// Bytes of the MPI_Bsend buffer in use, and its capacity.
    bsend_used: usize,
    bsend_cap: usize,
    bsend_buf: usize,
    /// Requests the user let go of (freed when complete).
    detached: Vec<usize>,
    /// Slots below this may send to us: the rings polled for arrivals (the ranks
    /// started with us and any spawned processes we are connected to).
    scan: usize,
    /// Cancellation frames (requests and answers) waiting for room in their ring:
    /// (destination, frame).
    control: VecDeque<(usize, Frame)>,
    /// Sends whose cancellation the receiver has not answered yet.
    cancelling: Vec<usize>,
    /// MPI_Isendrecv requests not complete yet.
    pairs: Vec<usize>,
    /// Tests that found their request incomplete (`idle_test`).
    idle_tests: u32,
}

static ENGINE: Mutex<Option<Engine>> = Mutex::new(None);

/// Sets the engine up for an arena of `n` slots, polling slots below `scan`.
/// `generation` counts the earlier processes that occupied this slot (spawned processes
/// reuse the slots of finished ones): rendezvous message ids start above theirs, so a
/// clear-to-send they left in a pipe can never match a new message.
pub fn init(n: usize, scan: usize, generation: u64) {
    let e = Engine {
        queued: (0..n).map(|_| VecDeque::new()).collect(),
        rdv_recvs: (0..n).map(|_| VecDeque::new()).collect(),
        tail_seen: vec![0; n],
        next_msg_id: vec![(generation << 40) | 1; n],
        scan: scan.min(n),
        ..Default::default()
    };
    *ENGINE.lock().unwrap() = Some(e);
}

/// Widens the polled slots to those below `scan` (a communicator now reaches them).
pub fn connect_up_to(scan: usize) {
    let mut g = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = g.as_mut() {
        e.scan = e.scan.max(scan.min(e.queued.len()));
    }
}

fn with_engine<T>(f: impl FnOnce(&mut Engine, &Job) -> T) -> MpiResult<T> {
    let job =
        crate::runtime::job_any().ok_or_else(|| err(MPI_ERR_OTHER, "MPI is not initialised"))?;
    let mut g = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    let e = g
        .as_mut()
        .ok_or_else(|| err(MPI_ERR_OTHER, "MPI is not initialised"))?;
    Ok(f(e, job))
}

fn eager_max(a: &Arena) -> usize {
    (a.lay.ring_bytes / 4).min(16 << 10)
}

/// Whether a point-to-point message of `len` bytes that goes by rendezvous offers its
/// receiver to read it straight from the sender's memory (p2p/mod.rs `F_RTS_DIRECT`):
/// unless `SHMPI_DIRECT` is off, from `SHMPI_DIRECT_MIN` bytes on (by default above the
/// eager limit `eager`: a synchronous send of a short message keeps to the pipe), if
/// this process is readable. The receiver falls back to the pipe if it cannot read.
fn direct_wanted(len: usize, eager: usize) -> bool {
    direct_wanted_by(len, eager, crate::settings::job()) && crate::shm::peer::usable()
}

/// [`direct_wanted`] without the question whether this process is readable.
fn direct_wanted_by(len: usize, eager: usize, set: &crate::settings::Job) -> bool {
    set.direct != crate::settings::Direct::Off && len >= set.direct_min.unwrap_or(eager + 1)
}

// ---------------------------------------------------------------- rings

/// The frame ring of the ordered pair (src, dst) (its protocol: shm/proto.rs).
fn ring(a: &Arena, src: usize, dst: usize) -> Ring {
    let off = a.lay.ring(src, dst);
    Ring {
        head: off,
        tail: off + 64,
        data: off + RING_HDR,
        cap: a.lay.ring_bytes,
    }
}

/// Tries to append one frame; false if the ring has no room now. `tail_seen`: this
/// rank's last look at the ring's tail (`Ring::push_seen`).
fn try_push(
    a: &Arena,
    me: usize,
    dst: usize,
    f: Frame,
    data: &SendData,
    tail_seen: &mut usize,
) -> bool {
    let inline = match f.kind {
        F_EAGER => f.len,
        F_RTS_DIRECT => 8,
        _ => 0,
    };
    let fill = |at| {
        if f.kind == F_RTS_DIRECT {
            let addr = data.addr().expect("a direct offer of bytes in place") as u64;
            a.write(at, &addr.to_le_bytes());
        } else {
            // SAFETY: the frame's inline bytes in a ring entry `push_seen` reserved for
            // this sender and publishes only after `fill` returns.
            data.copy_out(0, unsafe { a.slice_mut(at, inline) });
        }
    };
    let pushed = ring(a, me, dst).push_seen(a, f, inline, fill, tail_seen);
    if pushed {
        notify(a, dst);
    }
    pushed
}

// ---------------------------------------------------------------- pipes

struct Pipe {
    cts: usize,
    produced: usize,
    consumed: usize,
    data: usize,
    cap: usize,
}

/// Whether nothing is in flight to or from slot `s`: every ring empty, every pipe
/// drained (for mpiexec, before a finished process's slot is given to a new one).
pub fn slot_quiet(a: &Arena, s: usize) -> bool {
    (0..a.lay.n).all(|x| {
        [(x, s), (s, x)].iter().all(|&(src, dst)| {
            let r = ring(a, src, dst);
            let p = pipe(a, src, dst);
            a.u64_at(r.head).load(Ordering::Acquire) == a.u64_at(r.tail).load(Ordering::Acquire)
                && a.u64_at(p.produced).load(Ordering::Acquire)
                    == a.u64_at(p.consumed).load(Ordering::Acquire)
        })
    })
}

fn pipe(a: &Arena, src: usize, dst: usize) -> Pipe {
    let off = a.lay.pipe(src, dst);
    Pipe {
        cts: off,
        produced: off + 64,
        consumed: off + 128,
        data: off + crate::shm::PIPE_HDR,
        cap: 2 * a.lay.pipe_seg,
    }
}

// ---------------------------------------------------------------- engine

fn matches(r: &RecvReq, src: usize, ctx: u32, tag: i32) -> bool {
    r.ctx == ctx
        && (r.src == MPI_ANY_SOURCE || r.src as usize == src)
        && (r.tag == MPI_ANY_TAG || r.tag == tag)
}

impl Engine {
    fn alloc(&mut self, r: Req) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.reqs[i] = Some(r);
                i
            }
            None => {
                self.reqs.push(Some(r));
                self.reqs.len() - 1
            }
        }
    }

    fn req(&mut self, id: usize) -> &mut Req {
        self.reqs[id].as_mut().expect("live request")
    }

    fn recv_of(&mut self, id: usize) -> &mut RecvReq {
        match &mut self.req(id).kind {
            ReqKind::Recv(r) => r,
            _ => unreachable!(),
        }
    }

    /// The first unexpected message a receive of (`source`, `tag`) on `comm` would match.
    fn find_unexpected(&self, comm: &Comm, source: i32, tag: i32) -> Option<usize> {
        let probe = RecvReq {
            ctx: comm.ctx as u32,
            src: if source == MPI_ANY_SOURCE {
                MPI_ANY_SOURCE
            } else {
                comm.peer_world(source as usize) as i32
            },
            tag,
            into: RecvInto::Bytes(UserBuf::empty()),
            stage: RecvStage::Posted,
            comm_src: 0,
        };
        self.unexpected
            .iter()
            .position(|u| matches(&probe, u.src, u.ctx, u.tag))
    }

    /// Delivers an eager payload, reads a rendezvous message straight from its
    /// sender's memory, or starts the pipe's rendezvous, for matched receive `id`.
    fn deliver(
        &mut self,
        a: &Arena,
        id: usize,
        src: usize,
        tag: i32,
        len: usize,
        payload: Payload<'_>,
    ) {
        let req = self.req(id);
        let comm_src = req.from_world.from_world[src];
        req.status.source = comm_src;
        req.status.tag = tag;
        let ReqKind::Recv(r) = &mut req.kind else {
            unreachable!()
        };
        r.comm_src = comm_src;
        match payload {
            Payload::Eager(bytes) => {
                r.into.put(0, &bytes[..len]);
                req.finish_recv(len);
            }
            Payload::Rdv { msg_id, addr } if addr != 0 && crate::shm::peer::usable() => {
                // Read at the end of this or the next progress pass (`read_due`), after
                // this rank's own sends went out: MPI_Sendrecv, or MPI_Irecv followed by
                // MPI_Isend, would otherwise read before its own request to send
                // leaves, and the two processes' copies would run one after the other
                // instead of at once.
                r.stage = RecvStage::Reading {
                    src,
                    len,
                    msg_id,
                    addr,
                };
                self.reads.push(id);
            }
            Payload::Rdv { msg_id, .. } => self.start_pipe(a, id, src, len, msg_id),
        }
    }

    /// Receive `id` takes rendezvous message `msg_id` of `len` bytes from `src` through
    /// the pair's pipe: its clear-to-send goes out when the receives before it are done.
    fn start_pipe(&mut self, a: &Arena, id: usize, src: usize, len: usize, msg_id: u64) {
        self.recv_of(id).stage = RecvStage::Streaming {
            src,
            len,
            got: 0,
            msg_id,
            cts_sent: false,
        };
        self.rdv_recvs[src].push_back(id);
        self.advance_rdv_recv(a, src);
    }

    /// Reads the messages of the receives in [`RecvStage::Reading`] straight from their
    /// senders' memory and tells the senders (`F_READ`); one this process cannot read
    /// goes by the pipe instead.
    fn read_due(&mut self, a: &Arena, me: usize) {
        let mut stage = std::mem::take(&mut self.stage);
        for id in std::mem::take(&mut self.reads) {
            let r = self.recv_of(id);
            let RecvStage::Reading {
                src,
                len,
                msg_id,
                addr,
            } = r.stage
            else {
                unreachable!()
            };
            if read_direct(a, src, addr, r, len, &mut stage) {
                self.req(id).finish_recv(len);
                self.control
                    .push_back((src, control_frame(F_READ, 0, msg_id)));
            } else {
                self.start_pipe(a, id, src, len, msg_id);
            }
        }
        self.stage = stage;
        self.flush_control(a, me);
    }

    /// Issues CTS for the first waiting rendezvous from `src` and pulls what is there.
    fn advance_rdv_recv(&mut self, a: &Arena, src: usize) {
        let me = crate::runtime::job_any().unwrap().rank;
        while let Some(&id) = self.rdv_recvs[src].front() {
            let p = pipe(a, src, me);
            let r = self.recv_of(id);
            let RecvReq { stage, into, .. } = r;
            let RecvStage::Streaming {
                len,
                got,
                msg_id,
                cts_sent,
                ..
            } = stage
            else {
                unreachable!()
            };
            if !*cts_sent {
                a.u64_at(p.cts).store(*msg_id, Ordering::Release);
                *cts_sent = true;
                notify(a, src);
            }
            // Pull available bytes.
            let produced = a.u64_at(p.produced).load(Ordering::Acquire) as usize;
            let mut consumed = a.u64_at(p.consumed).load(Ordering::Relaxed) as usize;
            let cap = into.cap();
            let mut moved = false;
            while consumed < produced && *got < *len {
                let pos = consumed % p.cap;
                let n = (produced - consumed).min(p.cap - pos).min(*len - *got);
                if *got < cap {
                    let k = n.min(cap - *got);
                    into.put(*got, a.slice(p.data + pos, k));
                }
                *got += n;
                consumed += n;
                moved = true;
            }
            if moved {
                a.u64_at(p.consumed)
                    .store(consumed as u64, Ordering::Release);
                notify(a, src);
                crate::shm::wait::stepped();
            }
            if *got < *len {
                return;
            }
            let len = *len;
            self.req(id).finish_recv(len);
            self.rdv_recvs[src].pop_front();
        }
    }

    /// Drains every incoming ring, matching frames against posted receives.
    fn drain(&mut self, a: &Arena, me: usize, n: usize) {
        for src in 0..n {
            let consumed = ring(a, src, me).pop_all(a, |h, payload| {
                match h.kind {
                    F_CANCEL => return self.withdraw(src, h.id),
                    F_CANCEL_REPLY => return self.cancel_answered(src, h.id, h.tag != 0),
                    F_REFUSED => return self.refused(src, h.id),
                    F_READ => return self.read_done(src, h.id),
                    _ => {}
                }
                let addr = if h.kind == F_RTS_DIRECT {
                    u64::from_le_bytes(a.slice(payload, 8).try_into().unwrap())
                } else {
                    0
                };
                let pos = self.posted.iter().position(|&id| {
                    match &self.reqs[id].as_ref().unwrap().kind {
                        ReqKind::Recv(rr) => matches(rr, src, h.ctx, h.tag),
                        _ => false,
                    }
                });
                match (pos, h.kind) {
                    (Some(p), F_EAGER) => {
                        let id = self.posted.remove(p).unwrap();
                        let bytes = Payload::Eager(a.slice(payload, h.len));
                        self.deliver(a, id, src, h.tag, h.len, bytes);
                    }
                    (Some(p), _) => {
                        let id = self.posted.remove(p).unwrap();
                        let rdv = Payload::Rdv { msg_id: h.id, addr };
                        self.deliver(a, id, src, h.tag, h.len, rdv);
                    }
                    (None, kind) => self.unexpected.push_back(Unexpected {
                        src,
                        ctx: h.ctx,
                        tag: h.tag,
                        len: h.len,
                        payload: if kind == F_EAGER {
                            Held::eager(a.slice(payload, h.len))
                        } else {
                            Held::Rdv
                        },
                        msg_id: h.id,
                        addr,
                    }),
                }
            });
            if consumed {
                notify(a, src);
            }
        }
    }

    /// A sender asks to withdraw message `msg_id`: it is withdrawn if it still waits in
    /// the unexpected queue (no receive, matched probe or MPI_Mrecv has taken it); the
    /// answer goes back either way.
    fn withdraw(&mut self, src: usize, msg_id: u64) {
        let pos = self
            .unexpected
            .iter()
            .position(|u| u.src == src && u.msg_id == msg_id);
        if let Some(p) = pos {
            self.unexpected.remove(p);
        }
        let answer = control_frame(F_CANCEL_REPLY, pos.is_some() as i32, msg_id);
        self.control.push_back((src, answer));
    }

    /// In MPI_Finalize, where no receive can be posted any more: answers each request to
    /// send that no receive took (in the unexpected queue, or taken by a matched probe
    /// that no MPI_Mrecv followed) with a refusal, so that its sender's send fails
    /// instead of waiting for a clear-to-send forever (`refused`).
    fn refuse_unmatched(&mut self, job: &Job) {
        self.progress(job);
        let refuse = |u: &Unexpected| {
            (
                u.src,
                Frame {
                    kind: F_REFUSED,
                    fbytes: 0,
                    ctx: u.ctx,
                    tag: u.tag,
                    len: 0,
                    id: u.msg_id,
                },
            )
        };
        let mut kept = VecDeque::with_capacity(self.unexpected.len());
        for u in std::mem::take(&mut self.unexpected) {
            if matches!(u.payload, Held::Rdv) {
                self.control.push_back(refuse(&u));
            } else {
                kept.push_back(u);
            }
        }
        self.unexpected = kept;
        for id in 0..self.reqs.len() {
            if let Some(Req {
                kind: ReqKind::Message(u),
                ..
            }) = &self.reqs[id]
            {
                if matches!(u.payload, Held::Rdv) {
                    let f = refuse(u);
                    self.control.push_back(f);
                    self.reqs[id] = None;
                    self.free.push(id);
                }
            }
        }
        self.push_sends(&job.arena, job.rank);
    }

    /// Receiver `dst` called MPI_Finalize without receiving our message `msg_id`: its
    /// send fails (MPI_ERR_OTHER, `Orphan::ReceiverGone`); the library's own send of an
    /// MPI_Bsend just ends, giving its part of the attached buffer back.
    fn refused(&mut self, dst: usize, msg_id: u64) {
        let ours = |k: &ReqKind| match k {
            ReqKind::Send(s) => s.dst == dst && s.msg_id == msg_id,
            ReqKind::Bsent { dst: d, msg_id: m } => *d == dst && *m == msg_id,
            _ => false,
        };
        let reqs = &self.reqs;
        let cancelling: Vec<usize> = (self.cancelling.iter().copied())
            .filter(|&id| reqs[id].as_ref().is_some_and(|r| ours(&r.kind)))
            .collect();
        self.cancelling.retain(|id| !cancelling.contains(id));
        let Some(p) =
            (self.rdv_sends.iter()).position(|&id| matches!(&reqs[id], Some(r) if ours(&r.kind)))
        else {
            return;
        };
        let id = self.rdv_sends.remove(p);
        for c in cancelling {
            if c != id {
                // the program's request of an MPI_Bsend being cancelled: not withdrawn
                self.req(c).complete = true;
            }
        }
        let req = self.req(id);
        let ReqKind::Send(s) = &mut req.kind else {
            unreachable!()
        };
        s.stage = SendStage::Done;
        s.cancelling = false;
        let (tag, len, bs) = (s.tag, s.data.len(), std::mem::take(&mut s.bsend_bytes));
        req.complete = true;
        if bs == 0 {
            req.status = Status {
                source: req.from_world.from_world.get(dst).copied().unwrap_or(-1),
                tag,
                error: MPI_ERR_OTHER,
                count_bytes: len as u64,
                orphan: Orphan::ReceiverGone,
                ..Status::empty()
            };
        }
        self.bsend_used -= bs;
    }

    /// The receiver answered the cancellation of our message `msg_id` to it.
    fn cancel_answered(&mut self, dst: usize, msg_id: u64, withdrawn: bool) {
        let found =
            self.cancelling
                .iter()
                .position(|&id| match &self.reqs[id].as_ref().unwrap().kind {
                    ReqKind::Send(s) => s.dst == dst && s.msg_id == msg_id,
                    ReqKind::Bsent { dst: d, msg_id: m } => *d == dst && *m == msg_id,
                    _ => false,
                });
        let Some(p) = found else { return };
        let id = self.cancelling.swap_remove(p);
        if let ReqKind::Bsent { .. } = self.req(id).kind {
            if withdrawn {
                self.drop_buffered(dst, msg_id);
                self.req(id).status.cancelled = true;
            }
            self.req(id).complete = true;
            return;
        }
        let ReqKind::Send(s) = &mut self.req(id).kind else {
            unreachable!()
        };
        s.cancelling = false;
        let eager = !s.rdv;
        if withdrawn {
            s.stage = SendStage::Done;
            self.rdv_sends.retain(|&x| x != id);
            let r = self.req(id);
            r.complete = true;
            r.status = Status {
                cancelled: true,
                ..Status::empty()
            };
        } else if eager {
            // Received (or taken by a matched probe): the send completed normally.
            self.req(id).complete = true;
        }
        // A rendezvous the receiver has matched goes on: its clear-to-send comes.
    }

    /// Completes every MPI_Isendrecv whose two halves are done, and frees the halves.
    fn complete_pairs(&mut self) {
        let mut i = 0;
        while i < self.pairs.len() {
            let id = self.pairs[i];
            let ReqKind::Pair { recv, send } = self.req(id).kind else {
                unreachable!()
            };
            if !(self.req(recv).complete && self.req(send).complete) {
                i += 1;
                continue;
            }
            let mut st = self.req(recv).status;
            if st.error == MPI_SUCCESS {
                st.error = self.req(send).status.error;
            }
            for half in [recv, send] {
                self.reqs[half] = None;
                self.free.push(half);
            }
            let r = self.req(id);
            r.complete = true;
            r.status = st;
            self.pairs.swap_remove(i);
        }
    }

    /// The library's own send of a buffered message `msg_id` to `dst`, withdrawn by
    /// the receiver or taken back before it left: finished without sending the rest,
    /// its part of the attached buffer freed (it is detached: the engine frees it).
    fn drop_buffered(&mut self, dst: usize, msg_id: u64) {
        let found = self
            .rdv_sends
            .iter()
            .chain(self.queued[dst].iter())
            .copied()
            .find(|&id| {
                matches!(&self.reqs[id].as_ref().unwrap().kind,
                ReqKind::Send(s) if s.dst == dst && s.msg_id == msg_id)
            });
        let Some(id) = found else { return };
        self.rdv_sends.retain(|&x| x != id);
        self.queued[dst].retain(|&x| x != id);
        self.end_send(id);
    }

    /// Marks send `id` done and complete, and gives back its part of the attached
    /// buffer (an MPI_Bsend's).
    fn end_send(&mut self, id: usize) {
        let ReqKind::Send(s) = &mut self.req(id).kind else {
            unreachable!()
        };
        s.stage = SendStage::Done;
        let bs = std::mem::take(&mut s.bsend_bytes);
        self.bsend_used -= bs;
        self.req(id).complete = true;
    }

    /// Pushes the control frames that have room in their rings, in order per
    /// destination.
    fn flush_control(&mut self, a: &Arena, me: usize) {
        let mut blocked = Vec::new();
        let mut i = 0;
        while i < self.control.len() {
            let (dst, f) = self.control[i];
            let empty = SendData::Owned(Vec::new());
            if !blocked.contains(&dst) && try_push(a, me, dst, f, &empty, &mut self.tail_seen[dst])
            {
                self.control.remove(i);
            } else {
                // Later frames to the same process wait behind this one.
                blocked.push(dst);
                i += 1;
            }
        }
    }

    /// Pushes control frames and queued sends into rings and streams rendezvous data.
    fn push_sends(&mut self, a: &Arena, me: usize) {
        self.flush_control(a, me);
        let mut k = 0;
        while k < self.queued_dsts.len() {
            let dst = self.queued_dsts[k];
            while let Some(&id) = self.queued[dst].front() {
                let ReqKind::Send(s) = &mut self.reqs[id].as_mut().unwrap().kind else {
                    unreachable!()
                };
                let len = s.data.len();
                let kind = if !s.rdv {
                    F_EAGER
                } else if s.data.addr().is_some() && direct_wanted(len, eager_max(a)) {
                    F_RTS_DIRECT
                } else {
                    F_RTS
                };
                let f = Frame {
                    kind,
                    fbytes: 0,
                    ctx: s.ctx,
                    tag: s.tag,
                    len,
                    id: s.msg_id,
                };
                if !try_push(a, me, dst, f, &s.data, &mut self.tail_seen[dst]) {
                    break;
                }
                if kind == F_RTS_DIRECT {
                    // (the receiver's copy runs at 10-17 GB/s here; beyond 5 ms, what a
                    // wake-up costs no longer counts, and a receiver that is late does
                    // not keep this rank spinning for long)
                    let ns = (20_000 + len as u64 / 4).min(5_000_000);
                    crate::shm::wait::expect_peer_busy(std::time::Duration::from_nanos(ns));
                }
                self.queued[dst].pop_front();
                if s.rdv {
                    s.stage = SendStage::AwaitCts;
                    self.rdv_sends.push(id);
                } else {
                    s.stage = SendStage::Done;
                    let bs = s.bsend_bytes;
                    self.bsend_used -= bs;
                    self.req(id).complete = true;
                }
            }
            if self.queued[dst].is_empty() {
                self.queued_dsts.swap_remove(k);
            } else {
                k += 1;
            }
        }
        let mut i = 0;
        while i < self.rdv_sends.len() {
            let id = self.rdv_sends[i];
            let ReqKind::Send(s) = &mut self.reqs[id].as_mut().unwrap().kind else {
                unreachable!()
            };
            let p = pipe(a, me, s.dst);
            if s.stage == SendStage::AwaitCts && a.u64_at(p.cts).load(Ordering::Acquire) == s.msg_id
            {
                s.stage = SendStage::Streaming { sent: 0 };
            }
            if let SendStage::Streaming { sent } = &mut s.stage {
                let consumed = a.u64_at(p.consumed).load(Ordering::Acquire) as usize;
                let mut produced = a.u64_at(p.produced).load(Ordering::Relaxed) as usize;
                let len = s.data.len();
                let mut moved = false;
                while *sent < len && produced - consumed < p.cap {
                    let pos = produced % p.cap;
                    let room = p.cap - (produced - consumed);
                    let k = (len - *sent).min(p.cap - pos).min(room).min(a.lay.pipe_seg);
                    // SAFETY: free pipe bytes (produced - consumed < cap): the receiver
                    // reads them only after the release store of `produced` below.
                    s.data
                        .copy_out(*sent, unsafe { a.slice_mut(p.data + pos, k) });
                    *sent += k;
                    produced += k;
                    moved = true;
                }
                if moved {
                    a.u64_at(p.produced)
                        .store(produced as u64, Ordering::Release);
                    notify(a, s.dst);
                    crate::shm::wait::stepped();
                }
                if *sent == len {
                    self.rdv_sends.swap_remove(i);
                    self.finish_rdv_send(id);
                    continue;
                }
            }
            i += 1;
        }
    }

    /// Completes rendezvous send `id` (taken off `rdv_sends`), all of whose bytes the
    /// receiver has.
    fn finish_rdv_send(&mut self, id: usize) {
        self.end_send(id);
        // A cancellation that came too late: its answer finds nothing.
        self.cancelling.retain(|&x| x != id);
    }

    /// Receiver `dst` read our message `msg_id` straight from our memory (`F_READ`).
    fn read_done(&mut self, dst: usize, msg_id: u64) {
        let reqs = &self.reqs;
        let found = self.rdv_sends.iter().position(|&id| {
            matches!(&reqs[id], Some(Req { kind: ReqKind::Send(s), .. })
                if s.dst == dst && s.msg_id == msg_id)
        });
        if let Some(p) = found {
            let id = self.rdv_sends.swap_remove(p);
            self.finish_rdv_send(id);
        }
    }

    /// Whether nothing waits for this rank's progress but what may arrive ([`send_now`]).
    fn idle(&self) -> bool {
        self.queued_dsts.is_empty()
            && self.control.is_empty()
            && self.rdv_sends.is_empty()
            && self.reads.is_empty()
            && self.posted.is_empty()
            && self.pairs.is_empty()
            && self.cancelling.is_empty()
            && self.detached.is_empty()
            && self.rdv_recvs[..self.scan].iter().all(|q| q.is_empty())
    }

    /// Whether a frame waits in one of this rank's incoming rings.
    fn frames_waiting(&self, a: &Arena, me: usize) -> bool {
        (0..self.scan).any(|src| {
            let r = ring(a, src, me);
            a.u64_at(r.head).load(Ordering::Acquire) != a.u64_at(r.tail).load(Ordering::Relaxed)
        })
    }

    /// Whether this rank has nothing left to send: no send queued, streaming or waiting
    /// for its clear-to-send, no cancellation under way.
    fn nothing_to_send(&self) -> bool {
        self.queued.iter().all(|q| q.is_empty())
            && self.rdv_sends.is_empty()
            && self.control.is_empty()
            && self.cancelling.is_empty()
    }

    /// Fails the posted receives that can never match: their source is in MPI_Finalize
    /// with nothing left to send, so everything it sent is in the rings already, and
    /// this rank has taken it all from them (a progress pass after it saw the source
    /// quiet) without a match; and `waited` if every rank it may come from is so, or is
    /// this one.
    fn fail_orphaned(&mut self, job: &Job, waited: Option<ReqId>) {
        let a = &job.arena;
        let me = job.rank;
        // Why request `id` can never be matched, if it cannot. A receive from a specific
        // rank cannot once that rank is quiet. The one this wait cannot return without
        // (`waited`) cannot either if everyone it may come from is quiet or is this
        // rank: this rank sends nothing while it waits here (no other thread may call
        // MPI meanwhile: the thread level is at most MPI_THREAD_SERIALIZED), and it
        // matched nothing of its own in the progress before.
        let orphan = |e: &Engine, id: usize| {
            let Some(Req {
                kind: ReqKind::Recv(r),
                from_world,
                ..
            }) = e.reqs[id].as_ref()
            else {
                return Orphan::No;
            };
            let blocking = waited == Some(id);
            // (what this rank sent itself is all in its ring, and so taken by progress)
            let self_done = || e.queued.get(me).is_none_or(|q| q.is_empty());
            if r.src >= 0 {
                let src = r.src as usize;
                if a.is_quiet(src) {
                    Orphan::SourceGone
                } else if src == me && blocking && self_done() {
                    Orphan::FromItself
                } else {
                    Orphan::No
                }
            } else if blocking
                && self_done()
                && (from_world.from_world.iter().enumerate())
                    .all(|(w, &c)| c < 0 || w == me || a.is_quiet(w))
            {
                Orphan::AllGone
            } else {
                Orphan::No
            }
        };
        if !self.posted.iter().any(|&id| orphan(self, id) != Orphan::No) {
            return;
        }
        self.progress(job);
        let found: Vec<(usize, Orphan)> = self
            .posted
            .iter()
            .map(|&id| (id, orphan(self, id)))
            .filter(|&(_, o)| o != Orphan::No)
            .collect();
        self.posted.retain(|id| !found.iter().any(|(f, _)| f == id));
        for (id, why) in found {
            let req = self.req(id);
            let ReqKind::Recv(r) = &req.kind else {
                continue;
            };
            let source = match usize::try_from(r.src) {
                Ok(src) => req.from_world.from_world.get(src).copied().unwrap_or(-1),
                Err(_) => MPI_ANY_SOURCE,
            };
            req.status = Status {
                source,
                tag: r.tag,
                error: MPI_ERR_OTHER,
                orphan: why,
                ..Status::empty()
            };
            req.complete = true;
        }
    }

    /// A test found its request incomplete: every 512th time, the posted receives from
    /// a rank that has finalized with nothing left to send fail (`fail_orphaned`), so
    /// that a loop of MPI_Test on one ends too, not only a wait.
    fn idle_test(&mut self, job: &Job) {
        self.idle_tests = self.idle_tests.wrapping_add(1);
        if self.idle_tests.is_multiple_of(512) {
            self.fail_orphaned(job, None);
        }
    }

    fn progress(&mut self, job: &Job) {
        self.progress_with(job, true)
    }

    /// A progress pass; the direct reads of rendezvous messages only if `reads`.
    fn progress_with(&mut self, job: &Job, reads: bool) {
        let a = &job.arena;
        self.push_sends(a, job.rank);
        self.drain(a, job.rank, self.scan);
        for src in 0..self.scan {
            if !self.rdv_recvs[src].is_empty() {
                self.advance_rdv_recv(a, src);
            }
        }
        self.push_sends(a, job.rank);
        if reads && !self.reads.is_empty() {
            self.read_due(a, job.rank);
        }
        if !self.pairs.is_empty() {
            self.complete_pairs();
        }
        if !self.detached.is_empty() {
            let mut i = 0;
            while i < self.detached.len() {
                let id = self.detached[i];
                if self.req(id).complete {
                    self.reqs[id] = None;
                    self.free.push(id);
                    self.detached.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
}

// ---------------------------------------------------------------- public API

/// A request id in the engine's table.
pub type ReqId = usize;

/// Starts a send of `data` to rank `dest` of `comm`.
pub fn isend(
    comm: &std::sync::Arc<Comm>,
    data: SendData,
    dest: i32,
    tag: i32,
    mode: Mode,
) -> MpiResult<ReqId> {
    isend_ctx(comm, comm.ctx as u32, data, dest, tag, mode)
}

/// A blocking MPI_Send's (or MPI_Rsend's) shortcut for a message of eager size: when
/// nothing else needs this rank's progress (no send queued, streaming or awaiting an
/// answer, no receive posted or under way, no control frame or nonblocking collective
/// pending, no frame waiting in an incoming ring), the frame goes straight into the
/// destination's ring, without a request, a progress pass or a wait (which took about
/// 900 of the 1600 instructions of such a send). Returns whether it did; if not, the
/// caller takes the ordinary path.
pub fn send_now(
    comm: &std::sync::Arc<Comm>,
    data: &SendData,
    dest: i32,
    tag: i32,
) -> MpiResult<bool> {
    if dest == MPI_PROC_NULL || crate::progress::any_pending() {
        return Ok(false);
    }
    with_engine(|e, job| {
        let a = &job.arena;
        let len = data.len();
        if len > eager_max(a) || !e.idle() || e.frames_waiting(a, job.rank) {
            return false;
        }
        let dst = comm.peer_world(dest as usize);
        let f = Frame {
            kind: F_EAGER,
            fbytes: 0,
            ctx: comm.ctx as u32,
            tag,
            len,
            id: e.next_msg_id[dst],
        };
        if !try_push(a, job.rank, dst, f, data, &mut e.tail_seen[dst]) {
            return false;
        }
        e.next_msg_id[dst] += 1;
        true
    })
}

/// The context bit of the library's own point-to-point traffic on a communicator (the
/// neighbourhood collectives): the program's receives, wildcards included, and probes
/// never match it.
pub const INTERNAL_CTX: u32 = 1 << 31;

/// [`isend`] in the communicator's internal context.
pub fn isend_internal(
    comm: &std::sync::Arc<Comm>,
    data: SendData,
    dest: i32,
    tag: i32,
) -> MpiResult<ReqId> {
    isend_ctx(
        comm,
        comm.ctx as u32 | INTERNAL_CTX,
        data,
        dest,
        tag,
        Mode::Standard,
    )
}

fn isend_ctx(
    comm: &std::sync::Arc<Comm>,
    ctx: u32,
    data: SendData,
    dest: i32,
    tag: i32,
    mode: Mode,
) -> MpiResult<ReqId> {
    with_engine(|e, job| {
        if dest == MPI_PROC_NULL {
            return Ok(e.alloc(Req {
                kind: ReqKind::Done,
                complete: true,
                status: Status::proc_null(),
                from_world: comm.clone(),
            }));
        }
        let dst = comm.peer_world(dest as usize);
        let len = data.len();
        let mut bsend_bytes = 0;
        let data = if mode == Mode::Buffered {
            bsend_bytes = len + MPI_BSEND_OVERHEAD as usize;
            if e.bsend_used + bsend_bytes > e.bsend_cap {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!(
                        "MPI_Bsend of {len} bytes needs {bsend_bytes} bytes of attached buffer but only {} of {} are free (attach a larger buffer with MPI_Buffer_attach)",
                        e.bsend_cap - e.bsend_used,
                        e.bsend_cap
                    ),
                ));
            }
            e.bsend_used += bsend_bytes;
            data.into_owned()
        } else {
            data
        };
        let rdv = mode == Mode::Sync || len > eager_max(&job.arena);
        let msg_id = e.next_msg_id[dst];
        e.next_msg_id[dst] += 1;
        let id = e.alloc(Req {
            kind: ReqKind::Send(SendReq {
                dst,
                ctx,
                tag,
                data,
                rdv,
                msg_id,
                stage: SendStage::Queued,
                bsend_bytes,
                cancelling: false,
            }),
            complete: false,
            status: Status::empty(),
            from_world: comm.clone(),
        });
        if !e.queued_dsts.contains(&dst) {
            e.queued_dsts.push(dst);
        }
        e.queued[dst].push_back(id);
        if mode == Mode::Buffered {
            // The data now lives in the library: the user's request is complete at
            // once, and the message completes on its own in the background.
            e.detached.push(id);
            let user = e.alloc(Req {
                kind: ReqKind::Bsent { dst, msg_id },
                complete: true,
                status: Status::empty(),
                from_world: comm.clone(),
            });
            e.progress(job);
            return Ok(user);
        }
        e.progress(job);
        Ok(id)
    })?
}

/// Posts a receive into `buf` from rank `source` (or MPI_ANY_SOURCE) of `comm`.
pub fn irecv(comm: &std::sync::Arc<Comm>, buf: UserBuf, source: i32, tag: i32) -> MpiResult<ReqId> {
    irecv_into(comm, RecvInto::Bytes(buf), source, tag)
}

/// A blocking receive into `buf` (the library's own exchanges of small records in
/// create/ and spawn.rs): [`irecv`], then [`wait`].
pub fn recv_bytes(
    comm: &std::sync::Arc<Comm>,
    buf: &mut [u8],
    source: i32,
    tag: i32,
) -> MpiResult<Status> {
    // SAFETY: `buf` is borrowed, valid and unused elsewhere, until `wait` returns.
    let b = unsafe { UserBuf::new(buf.as_mut_ptr(), buf.len()) };
    let id = irecv(comm, b, source, tag)?;
    wait(id)
}

/// Where a receive puts the message.
pub enum RecvInto {
    /// Contiguous bytes.
    Bytes(UserBuf),
    /// A non-contiguous datatype, unpacked into as the message arrives.
    Typed(buf::Typed),
}

impl RecvInto {
    /// Bytes of message the receive has room for.
    fn cap(&self) -> usize {
        match self {
            RecvInto::Bytes(b) => b.len(),
            RecvInto::Typed(u) => u.len(),
        }
    }
    /// Stores message bytes `off .. off + bytes.len()`, what of them fits.
    fn put(&self, off: usize, bytes: &[u8]) {
        match self {
            RecvInto::Typed(u) => u.unpack_at(off, bytes),
            RecvInto::Bytes(b) if off < b.len() => {
                let n = bytes.len().min(b.len() - off);
                b.write_at(off, &bytes[..n]);
            }
            RecvInto::Bytes(_) => {}
        }
    }
}

/// Posts a receive (see [`irecv`]) into a contiguous buffer or a datatype's layout.
pub fn irecv_into(
    comm: &std::sync::Arc<Comm>,
    into: RecvInto,
    source: i32,
    tag: i32,
) -> MpiResult<ReqId> {
    irecv_ctx(comm, comm.ctx as u32, into, source, tag)
}

/// [`irecv_into`] in the communicator's internal context (see [`INTERNAL_CTX`]).
pub fn irecv_internal(
    comm: &std::sync::Arc<Comm>,
    into: RecvInto,
    source: i32,
    tag: i32,
) -> MpiResult<ReqId> {
    irecv_ctx(comm, comm.ctx as u32 | INTERNAL_CTX, into, source, tag)
}

fn irecv_ctx(
    comm: &std::sync::Arc<Comm>,
    ctx: u32,
    into: RecvInto,
    source: i32,
    tag: i32,
) -> MpiResult<ReqId> {
    with_engine(|e, job| {
        if source == MPI_PROC_NULL {
            return e.alloc(Req {
                kind: ReqKind::Done,
                complete: true,
                status: Status::proc_null(),
                from_world: comm.clone(),
            });
        }
        let src = if source == MPI_ANY_SOURCE {
            MPI_ANY_SOURCE
        } else {
            comm.peer_world(source as usize) as i32
        };
        let r = RecvReq {
            ctx,
            src,
            tag,
            into,
            stage: RecvStage::Posted,
            comm_src: MPI_ANY_SOURCE,
        };
        // The unexpected messages first, in arrival order: every one of them arrived
        // before anything still in the rings. Only then is the receive posted and the
        // rings drained, so that a message already waiting there goes straight into
        // the receive's buffer (draining first would copy it into the unexpected queue
        // and out again).
        let pos = e
            .unexpected
            .iter()
            .position(|u| matches(&r, u.src, u.ctx, u.tag));
        let id = e.alloc(Req {
            kind: ReqKind::Recv(r),
            complete: false,
            status: Status::empty(),
            from_world: comm.clone(),
        });
        // (Taken out of the queue before the pass: a cancel request among the frames
        // drained must find it gone.)
        let found = pos.map(|p| e.unexpected.remove(p).unwrap());
        if found.is_none() {
            e.posted.push_back(id);
        }
        // A rendezvous message this pass hands a receive is read at the next pass
        // (every wait, test and send runs one), after this rank's next sends went out
        // (see `deliver`): MPI_Irecv followed by MPI_Isend on two ranks would otherwise
        // copy one message after the other.
        e.progress_with(job, false);
        if let Some(u) = found {
            e.deliver(&job.arena, id, u.src, u.tag, u.len, u.payload());
        }
        id
    })
}

/// One pass of the point-to-point engine: the progress hook it installs
/// (`crate::progress`; the whole engine's pass is `crate::progress::pass`).
pub fn progress() {
    let _ = with_engine(|e, job| e.progress(job));
}

/// Registers the request of a nonblocking collective (completed by `complete_coll`).
pub fn coll_request(comm: &std::sync::Arc<Comm>) -> MpiResult<ReqId> {
    with_engine(|e, _| {
        e.alloc(Req {
            kind: ReqKind::Coll,
            complete: false,
            status: Status::empty(),
            from_world: comm.clone(),
        })
    })
}

/// Completes a nonblocking collective's request, with an error class if it failed.
pub fn complete_coll(id: ReqId, error: Option<i32>) {
    let _ = with_engine(|e, _| {
        if let Some(Some(r)) = e.reqs.get_mut(id) {
            r.complete = true;
            r.status.error = error.unwrap_or(MPI_SUCCESS);
        }
    });
}

/// Joins a started receive and send into one request (MPI_Isendrecv), complete when
/// both are, with the receive's status; the two are freed with it.
pub fn pair(comm: &std::sync::Arc<Comm>, recv: ReqId, send: ReqId) -> MpiResult<ReqId> {
    with_engine(|e, job| {
        let id = e.alloc(Req {
            kind: ReqKind::Pair { recv, send },
            complete: false,
            status: Status::empty(),
            from_world: comm.clone(),
        });
        e.pairs.push(id);
        e.progress(job);
        id
    })
}

/// Registers a request the program completes itself (MPI_Grequest_start).
pub fn user_request(comm: &std::sync::Arc<Comm>) -> MpiResult<ReqId> {
    with_engine(|e, _| {
        e.alloc(Req {
            kind: ReqKind::User,
            complete: false,
            status: Status::empty(),
            from_world: comm.clone(),
        })
    })
}

/// Marks a user request complete (MPI_Grequest_complete). Returns true if the program
/// had already let go of it (MPI_Request_free): the engine then frees it.
pub fn complete_user(id: ReqId) -> MpiResult<bool> {
    with_engine(|e, job| {
        e.req(id).complete = true;
        let detached = e.detached.contains(&id);
        if detached {
            e.progress(job);
        }
        detached
    })
}

/// Whether `id` is a live request whose kind `is` says yes to.
fn kind_is(id: ReqId, is: impl Fn(&ReqKind) -> bool) -> bool {
    with_engine(|e, _| matches!(e.reqs.get(id), Some(Some(r)) if is(&r.kind))).unwrap_or(false)
}

/// Whether `id` is a live user request.
pub fn is_user(id: ReqId) -> bool {
    kind_is(id, |k| matches!(k, ReqKind::User))
}

/// Whether `id` is a nonblocking collective's request.
pub fn is_coll(id: ReqId) -> bool {
    kind_is(id, |k| matches!(k, ReqKind::Coll))
}

/// Tests a request: Some(status) and frees it if complete.
pub fn test(id: ReqId) -> MpiResult<Option<Status>> {
    Ok(test_on(id)?.map(|(st, _)| st))
}

/// As [`test`], with the communicator the completed request's error goes to: the handle
/// of the communicator that started it, when the request failed or is a nonblocking
/// collective's (whose error comes separately, coll::nb::take_error); None otherwise and
/// for a generalized request, which belongs to no communicator (its errors go to the
/// completion call's own handler, MPI_COMM_WORLD's).
pub fn test_on(id: ReqId) -> MpiResult<Option<(Status, Option<i32>)>> {
    crate::progress::poll_pending();
    with_engine(|e, job| {
        if !e.req(id).complete {
            e.progress(job);
            e.idle_test(job);
        }
        if e.req(id).complete {
            let r = e.req(id);
            let st = r.status;
            let on = match r.kind {
                ReqKind::User => None,
                ReqKind::Coll => Some(r.from_world.handle),
                _ => (st.error != MPI_SUCCESS).then_some(r.from_world.handle),
            };
            e.reqs[id] = None;
            e.free.push(id);
            Some((st, on))
        } else {
            None
        }
    })
}

/// True if request `id` is complete (does not free it).
pub fn is_complete(id: ReqId) -> bool {
    crate::progress::poll_pending();
    with_engine(|e, job| {
        if !e.req(id).complete {
            e.progress(job);
            e.idle_test(job);
        }
        e.req(id).complete
    })
    .unwrap_or(true)
}

/// Peeks the status of a complete request without freeing it.
pub fn peek(id: ReqId) -> Option<Status> {
    with_engine(|e, _| {
        e.reqs
            .get(id)
            .and_then(|r| r.as_ref())
            .filter(|r| r.complete)
            .map(|r| r.status)
    })
    .ok()
    .flatten()
}

/// Whether `id` is a live request (a matched message is not one until it is received).
pub fn exists(id: ReqId) -> bool {
    with_engine(|e, _| {
        e.reqs.get(id).is_some_and(|r| {
            r.as_ref()
                .is_some_and(|r| !matches!(r.kind, ReqKind::Message(_)))
        })
    })
    .unwrap_or(false)
}

/// Waits for request `id`, frees it and returns its status.
#[inline]
pub fn wait(id: ReqId) -> MpiResult<Status> {
    Ok(wait_on(id)?.0)
}

/// As [`wait`], with the communicator of [`test_on`].
pub fn wait_on(id: ReqId) -> MpiResult<(Status, Option<i32>)> {
    let job = crate::runtime::job()?;
    let mut b = Backoff::new(&job.arena, job.rank, job.policy());
    loop {
        if let Some(done) = test_on(id)? {
            return Ok(done);
        }
        b.pause(|| {
            fail_orphaned(Some(id));
            is_complete(id)
        });
    }
}

/// In the slow phase of a wait (before each sleep): fails the receives whose source has
/// finalized with nothing left to send, and the receive `waited` (the request the wait
/// cannot return without) if no rank that could send it can (`Engine::fail_orphaned`).
fn fail_orphaned(waited: Option<ReqId>) {
    if crate::shm::wait::in_slow_wait() {
        let _ = with_engine(|e, job| e.fail_orphaned(job, waited));
    }
}

/// In MPI_Finalize, while it waits for the other ranks: once this rank has nothing left
/// to send, marks it quiet (`Arena::is_quiet`) and wakes every rank, so that a receive
/// waiting for a message from it learns that none will come.
pub fn publish_quiet() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.load(Ordering::Relaxed) {
        return;
    }
    let Ok(true) = with_engine(|e, _| e.nothing_to_send()) else {
        return;
    };
    if let Ok(job) = crate::runtime::job() {
        let a = &job.arena;
        a.set_quiet(job.rank);
        for r in (0..a.lay.n).filter(|&r| r != job.rank) {
            notify(a, r);
        }
        DONE.store(true, Ordering::Relaxed);
    }
}

/// In MPI_Finalize, while it waits for the other ranks: refuses every message of
/// rendezvous size sent to this rank that no receive took (`Engine::refuse_unmatched`).
pub fn refuse_unmatched() {
    let _ = with_engine(|e, job| e.refuse_unmatched(job));
}

/// Blocks until `cond` holds, running the progress engine meanwhile.
pub fn wait_until(mut cond: impl FnMut() -> bool) -> MpiResult<()> {
    let job = crate::runtime::job()?;
    let mut b = Backoff::new(&job.arena, job.rank, job.policy());
    loop {
        crate::progress::pass();
        if cond() {
            return Ok(());
        }
        // The condition may consume what it finds (MPI_Waitany completes a request): if
        // the re-check before sleeping succeeds, that is the result.
        let mut done = false;
        b.pause(|| {
            crate::progress::pass();
            fail_orphaned(None);
            done = cond();
            done
        });
        if done {
            return Ok(());
        }
    }
}

/// Registers an already-complete request (used by operations finished at once).
pub fn completed(comm: &std::sync::Arc<Comm>, status: Status) -> MpiResult<ReqId> {
    with_engine(|e, _| {
        e.alloc(Req {
            kind: ReqKind::Done,
            complete: true,
            status,
            from_world: comm.clone(),
        })
    })
}

/// Starts cancelling request `id` (MPI_Cancel); its Wait/Test then says whether it was.
/// A receive that has not matched is cancelled at once. A send not yet in the ring is
/// taken back at once; one in it (an eager message or a rendezvous's request to send)
/// is withdrawn if the receiver has not taken it yet: the request completes when the
/// receiver's answer comes, cancelled or not. A rendezvous already streaming, a send
/// whose data has gone (MPI_Bsend's is the library's own) and a matched receive
/// complete normally. Returns false if nothing was started.
pub fn cancel(id: ReqId) -> MpiResult<bool> {
    with_engine(|e, job| {
        if let Some(p) = e.posted.iter().position(|&x| x == id) {
            e.posted.remove(p);
            cancelled_now(e, id);
            return true;
        }
        if let ReqKind::Bsent { dst, msg_id } = e.req(id).kind {
            if e.cancelling.contains(&id) {
                return true;
            }
            let queued = e.queued[dst].iter().any(|&x| {
                matches!(&e.reqs[x].as_ref().unwrap().kind,
                    ReqKind::Send(s) if s.msg_id == msg_id)
            });
            if queued {
                // Not in the ring yet: taken back here.
                e.drop_buffered(dst, msg_id);
                e.req(id).status.cancelled = true;
                e.progress(job);
                return true;
            }
            e.req(id).complete = false;
            e.cancelling.push(id);
            e.control
                .push_back((dst, control_frame(F_CANCEL, 0, msg_id)));
            e.progress(job);
            return true;
        }
        let (dst, msg_id, rdv, stage_queued, cancelling) = match &e.req(id).kind {
            ReqKind::Send(s) => (
                s.dst,
                s.msg_id,
                s.rdv,
                s.stage == SendStage::Queued,
                s.cancelling,
            ),
            _ => return false,
        };
        if cancelling {
            return true;
        }
        if stage_queued {
            e.queued[dst].retain(|&x| x != id);
            let ReqKind::Send(s) = &mut e.req(id).kind else {
                unreachable!()
            };
            s.stage = SendStage::Done;
            let bs = s.bsend_bytes;
            e.bsend_used -= bs;
            cancelled_now(e, id);
            return true;
        }
        let ReqKind::Send(s) = &mut e.req(id).kind else {
            unreachable!()
        };
        let in_ring = if rdv {
            s.stage == SendStage::AwaitCts
        } else {
            s.stage == SendStage::Done
        };
        if !in_ring {
            return false;
        }
        s.cancelling = true;
        // Not complete until the answer comes (an eager send was complete already).
        e.req(id).complete = false;
        e.cancelling.push(id);
        e.control
            .push_back((dst, control_frame(F_CANCEL, 0, msg_id)));
        e.progress(job);
        true
    })
}

/// Completes request `id` as cancelled.
fn cancelled_now(e: &mut Engine, id: ReqId) {
    let r = e.req(id);
    r.complete = true;
    r.status = Status {
        cancelled: true,
        ..Status::empty()
    };
}

/// A control frame of `kind` about message `msg_id` (no payload; `tag` carries the
/// answer of a cancellation).
fn control_frame(kind: u32, tag: i32, msg_id: u64) -> Frame {
    Frame {
        kind,
        fbytes: 0,
        ctx: 0,
        tag,
        len: 0,
        id: msg_id,
    }
}

/// Probes for a matching message without receiving it.
pub fn iprobe(comm: &std::sync::Arc<Comm>, source: i32, tag: i32) -> MpiResult<Option<Status>> {
    with_engine(|e, job| {
        if source == MPI_PROC_NULL {
            return Some(Status::proc_null());
        }
        e.progress(job);
        e.find_unexpected(comm, source, tag)
            .map(|p| unexpected_status(comm, &e.unexpected[p]))
    })
}

/// Why a blocking probe of `source` (a rank of `comm`'s peer group, or MPI_ANY_SOURCE)
/// can never match, looked at in the slow phase of its wait only: as for the receive a
/// wait cannot return without (`Engine::fail_orphaned`). The caller probes once more
/// after a verdict other than `Orphan::No`: a rank marks itself quiet only once all it
/// sent is in the rings.
pub fn probe_orphan(comm: &Comm, source: i32) -> Orphan {
    if !crate::shm::wait::in_slow_wait() {
        return Orphan::No;
    }
    with_engine(|e, job| {
        let (a, me) = (&job.arena, job.rank);
        let self_done = e.queued.get(me).is_none_or(|q| q.is_empty());
        let peers: &[usize] = comm.remote.as_deref().unwrap_or(&comm.group);
        if source == MPI_ANY_SOURCE {
            if self_done && peers.iter().all(|&w| w == me || a.is_quiet(w)) {
                return Orphan::AllGone;
            }
        } else if let Some(&w) = usize::try_from(source).ok().and_then(|s| peers.get(s)) {
            if a.is_quiet(w) {
                return Orphan::SourceGone;
            }
            if w == me && self_done {
                return Orphan::FromItself;
            }
        }
        Orphan::No
    })
    .unwrap_or(Orphan::No)
}

fn unexpected_status(comm: &Comm, u: &Unexpected) -> Status {
    Status {
        source: comm.from_world[u.src],
        tag: u.tag,
        error: MPI_SUCCESS,
        count_bytes: u.len as u64,
        ..Status::empty()
    }
}

/// Matched probe (MPI_Improbe): takes the first message a receive of (`source`, `tag`)
/// on `comm` would match off the matching queue, so that no other receive or probe can
/// match it, and returns its status and the message's id (received by [`imrecv`]).
/// `source` is a rank of `comm` or MPI_ANY_SOURCE (MPI_PROC_NULL is the caller's).
pub fn improbe(
    comm: &std::sync::Arc<Comm>,
    source: i32,
    tag: i32,
) -> MpiResult<Option<(Status, ReqId)>> {
    with_engine(|e, job| {
        e.progress(job);
        let p = e.find_unexpected(comm, source, tag)?;
        let u = e.unexpected.remove(p).unwrap();
        let status = unexpected_status(comm, &u);
        let id = e.alloc(Req {
            kind: ReqKind::Message(u),
            complete: false,
            status,
            from_world: comm.clone(),
        });
        Some((status, id))
    })
}

/// Whether `id` is a matched message not yet received.
pub fn is_message(id: ReqId) -> bool {
    with_engine(|e, _| {
        matches!(
            e.reqs.get(id),
            Some(Some(Req {
                kind: ReqKind::Message(_),
                ..
            }))
        )
    })
    .unwrap_or(false)
}

/// The communicator handle of matched message `id` (for its error handler).
pub fn message_comm(id: ReqId) -> Option<i32> {
    with_engine(|e, _| match e.reqs.get(id) {
        Some(Some(r)) if matches!(r.kind, ReqKind::Message(_)) => Some(r.from_world.handle),
        _ => None,
    })
    .ok()
    .flatten()
}

/// Matched receive (MPI_Imrecv): receives message `msg` (from [`improbe`]) into `into`.
/// The message's id becomes the id of the receive request, completed by wait/test.
pub fn imrecv(msg: ReqId, into: RecvInto) -> MpiResult<ReqId> {
    with_engine(|e, job| {
        let req = match e.reqs.get_mut(msg) {
            Some(Some(r)) if matches!(r.kind, ReqKind::Message(_)) => r,
            _ => {
                return Err(err(
                    MPI_ERR_REQUEST,
                    format!("message id {msg} is not a matched message"),
                ))
            }
        };
        let u = match std::mem::replace(&mut req.kind, ReqKind::Done) {
            ReqKind::Message(u) => u,
            _ => unreachable!(),
        };
        req.kind = ReqKind::Recv(RecvReq {
            ctx: u.ctx,
            src: u.src as i32,
            tag: u.tag,
            into,
            stage: RecvStage::Posted,
            comm_src: MPI_ANY_SOURCE,
        });
        req.status = Status::empty();
        e.deliver(&job.arena, msg, u.src, u.tag, u.len, u.payload());
        e.progress(job);
        Ok(msg)
    })?
}

/// MPI_Buffer_attach / detach bookkeeping: returns the previous (address, size).
pub fn bsend_attach(addr: usize, size: usize) -> MpiResult<()> {
    with_engine(|e, _| {
        if e.bsend_cap > 0 {
            return Err(err(
                MPI_ERR_BUFFER,
                "a buffer is already attached (detach it first)",
            ));
        }
        e.bsend_cap = size;
        e.bsend_buf = addr;
        Ok(())
    })?
}

/// The size of the attached MPI_Bsend buffer (0: none).
pub fn bsend_attached() -> MpiResult<usize> {
    with_engine(|e, _| e.bsend_cap)
}

/// Detaches the MPI_Bsend buffer once every buffered send has left it.
pub fn bsend_detach() -> MpiResult<(usize, usize)> {
    wait_until(|| with_engine(|e, _| e.bsend_used == 0).unwrap_or(true))?;
    with_engine(|e, _| {
        let r = (e.bsend_buf, e.bsend_cap);
        e.bsend_cap = 0;
        e.bsend_buf = 0;
        r
    })
}

/// Number of live requests (for leak checks and tests).
pub fn live_requests() -> usize {
    with_engine(|e, _| e.reqs.iter().filter(|r| r.is_some()).count()).unwrap_or(0)
}

/// Lets a request complete on its own (MPI_Request_free, MPI_Bsend): it is freed by the
/// engine once complete.
pub fn detach(id: ReqId) -> MpiResult<()> {
    with_engine(|e, job| {
        e.progress(job);
        if e.req(id).complete {
            e.reqs[id] = None;
            e.free.push(id);
        } else {
            e.detached.push(id);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kv: &'static [(&'static str, &'static str)]) -> crate::settings::Job {
        crate::settings::Job::from_lookup(|k| {
            kv.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn direct_reads_of_rendezvous_messages() {
        let auto = set(&[]);
        assert!(!direct_wanted_by(64 << 10, 64 << 10, &auto));
        assert!(direct_wanted_by((64 << 10) + 1, 64 << 10, &auto));
        let min = set(&[("SHMPI_DIRECT_MIN", "1")]);
        assert!(direct_wanted_by(1, 64 << 10, &min));
        let off = set(&[("SHMPI_DIRECT", "off")]);
        assert!(!direct_wanted_by(1 << 30, 64 << 10, &off));
    }
}
