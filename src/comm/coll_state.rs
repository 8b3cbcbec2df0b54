//! The collectives' state on one communicator (`Comm::coll`): where its channel's
//! steps stand, whose turn it is, the argument descriptor the next collective
//! publishes, where its ring broadcasts put their chunks. The algorithms that use it
//! live in coll/; this is the data they keep between calls, with the communicator.
#![deny(unsafe_code)]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Default)]
pub struct CollState {
    /// Whether the communicator is an intracommunicator (the argument agreement runs
    /// on intracommunicators only).
    pub intra: bool,
    /// The last step at which this member saw every member's channel counter: every
    /// member has finished reading the steps before it (coll/post.rs).
    pub synced: AtomicU64,
    /// The last step this member posted (coll/post.rs; 0: none).
    pub posted: AtomicU64,
    /// The last step a member published with the channel's (coll/mod.rs `Chan`) ordinary
    /// `publish` (not a posted step, not a ring broadcast's chunk).
    pub ordinary_last: AtomicU64,
    /// Where the ring broadcasts put their chunks (coll/ring.rs).
    pub ring: Mutex<Placement>,
    /// Which of the channel's double buffers the next collective step uses.
    pub step: AtomicU64,
    /// Collective tickets: the next to issue, and the one whose turn it is.
    pub ticket: AtomicU64,
    pub serving: AtomicU64,
    /// The argument descriptor of the collective whose turn it is, published with its
    /// first step (coll/agree.rs).
    /// Its words (kind, root, op, datatype, bytes, extra), valid while `desc_pending`;
    /// the per-peer flows of a data-movement collective go in `desc_flows`. Plain
    /// atomics: only the collective whose turn it is writes and takes them, so the
    /// common path costs no lock.
    pub(crate) desc_words: [AtomicU64; 6],
    pub(crate) desc_pending: std::sync::atomic::AtomicBool,
    pub(crate) desc_flows: Mutex<Option<Box<Flows>>>,
    pub(crate) desc_has_flows: std::sync::atomic::AtomicBool,
    /// Whether this communicator's collectives check argument agreement (the
    /// "shmpi_check_args" info hint of MPI_Comm_dup_with_info; SHMPI_CHECK_ARGS=0 turns
    /// it off everywhere).
    pub check_args: AtomicBool,
}

impl CollState {
    /// Sets the descriptor the current collective publishes with its first step.
    pub fn set_desc(&self, d: Desc) {
        self.set_desc_flows(d, None)
    }

    /// As [`CollState::set_desc`], with the flows of a data-movement collective.
    pub fn set_desc_flows(&self, desc: Desc, flows: Option<Box<Flows>>) {
        if self.checks_args() {
            let w = [
                desc.kind as u64,
                desc.root,
                desc.op,
                desc.dtype,
                desc.bytes,
                desc.extra,
            ];
            for (a, v) in self.desc_words.iter().zip(w) {
                a.store(v, Ordering::Relaxed);
            }
            self.desc_has_flows
                .store(flows.is_some(), Ordering::Relaxed);
            if flows.is_some() {
                *self.desc_flows.lock().unwrap_or_else(|e| e.into_inner()) = flows;
            }
            self.desc_pending.store(true, Ordering::Release);
        }
    }

    /// Takes the descriptor set for the current collective, if any.
    #[inline]
    pub fn take_desc(&self) -> Option<Pending> {
        if !self.desc_pending.load(Ordering::Acquire) {
            return None;
        }
        self.take_pending_desc()
    }

    /// [`Comm::take_desc`] once it saw a descriptor pending.
    fn take_pending_desc(&self) -> Option<Pending> {
        self.desc_pending.store(false, Ordering::Relaxed);
        let w: [u64; 6] = std::array::from_fn(|i| self.desc_words[i].load(Ordering::Relaxed));
        let desc = Desc {
            kind: w[0] as u16,
            root: w[1],
            op: w[2],
            dtype: w[3],
            bytes: w[4],
            extra: w[5],
        };
        let flows = if self.desc_has_flows.load(Ordering::Relaxed) {
            self.desc_has_flows.store(false, Ordering::Relaxed);
            self.desc_flows
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
        } else {
            None
        };
        Some(Pending { desc, flows })
    }

    /// Whether collectives on this communicator check argument agreement.
    pub fn checks_args(&self) -> bool {
        crate::settings::job().check_args && self.intra && self.check_args.load(Ordering::Relaxed)
    }
}

/// What one member called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub kind: u16,
    pub root: u64,
    pub op: u64,
    pub dtype: u64,
    pub bytes: u64,
    pub extra: u64,
}

/// What a member publishes with the first step of a collective.
pub struct Pending {
    pub desc: Desc,
    pub flows: Option<Box<Flows>>,
}

/// Which argument gave a piece's count (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Arg {
    #[default]
    SendCount = 0,
    SendCounts = 1,
    RecvCount = 2,
    RecvCounts = 3,
}

/// One member's side of one pair: what it sends to or expects from a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowEnd {
    pub bytes: u64,
    pub count: u64,
    /// The datatype, if predefined (for messages), else 0.
    pub dtype: i32,
    /// The element signature ([`signature`]); 0 matches any.
    pub sig: u32,
    /// The argument the count comes from, its index (for the array ones), and whether
    /// the piece is sent in place (from the receive buffer).
    pub arg: Arg,
    pub idx: u32,
    pub in_place: bool,
}

/// One member's sides of every pair of a data-movement collective, by peer: `send[j]`
/// what it sends to j, `recv[i]` what it expects from i (zero bytes: nothing).
#[derive(Clone, Debug, Default)]
pub struct Flows {
    pub send: Vec<FlowEnd>,
    pub recv: Vec<FlowEnd>,
}

/// Where the ring broadcasts of a communicator put their chunks: the same at every
/// member, which all place the same chunks in the same order.
#[derive(Default)]
pub struct Placement {
    /// The next free unit.
    pub(crate) cursor: usize,
    /// The step that last wrote each unit (0: none).
    pub(crate) last: Vec<u64>,
    /// The first step of the last broadcast whose root waited for everyone to reach it.
    pub(crate) floor: u64,
}
