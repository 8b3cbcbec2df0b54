//! Asymmetric fences between processes: a heavy fence that one process issues rarely
//! makes the light fences of the others (a compiler barrier, no instruction) act as
//! full memory barriers.
//!
//! The pairing (the asymmetric form of Dekker's protocol): a fast side stores its
//! announcement, issues [`light`] and then loads the slow side's flag; the slow side
//! stores its flag, issues [`heavy`] and then loads the announcements. At least one of
//! the two sees the other's store. Linux provides the heavy side as
//! `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`: every running thread of every process
//! that registered for it executes a full barrier before the call returns (a thread not
//! running passes one when it is switched in). A process that has not registered
//! ([`register`]) gets no barrier, so the slow side may only rely on the fence when
//! every fast side registered.
//!
//! Cost on the 2-CPU machine of the benchmarks: about 10 µs per heavy fence (an
//! inter-processor interrupt per CPU running a registered process).
use std::sync::atomic::{compiler_fence, Ordering};
use std::sync::OnceLock;

const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// Registers this process for the heavy fences of the others (once; later calls
/// return the first answer): whether it is registered, so that [`heavy`] covers it.
pub fn register() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        let q = membarrier(MEMBARRIER_CMD_QUERY);
        q >= 0
            && q as libc::c_int & MEMBARRIER_CMD_GLOBAL_EXPEDITED != 0
            && membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0
    })
}

/// The heavy fence: a full barrier here and in every thread of every registered
/// process. False when the system refused it (nothing may then be assumed of the
/// others' light fences).
pub fn heavy() -> bool {
    register() && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0
}

/// The light fence: keeps the compiler from moving memory accesses across it; a
/// [`heavy`] fence elsewhere supplies the hardware barrier.
#[inline]
pub fn light() {
    compiler_fence(Ordering::SeqCst);
}
