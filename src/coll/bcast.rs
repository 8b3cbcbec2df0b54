//! MPI_Bcast: a pipeline over chunks of one slot. In step t the root deposits chunk t
//! in its slot; after the step every other member copies it out. Cost: one
//! synchronisation per chunk, two copies per receiver (root -> slot -> receiver).
use super::Chan;
use crate::comm::Comm;
use crate::error::MpiResult;
use crate::p2p::UserBuf;

pub fn bcast(comm: &Comm, buf: UserBuf, root: usize) -> MpiResult<()> {
    let ch = Chan::new(comm)?;
    if ch.n == 1 {
        return Ok(());
    }
    let total = buf.len();
    let chunk = ch.slot_bytes;
    let nchunks = total.div_ceil(chunk).max(1);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        let len = chunk.min(total.saturating_sub(start));
        if ch.me == root && len > 0 {
            buf.read_at(start, ch.slice_mut(ch.slot(root, p), len));
        }
        ch.step()?;
        if ch.me != root && len > 0 {
            buf.write_at(start, ch.slice(ch.slot(root, p), len));
        }
    }
    Ok(())
}
