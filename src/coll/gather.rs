//! The data-movement collectives: Gather(v), Scatter(v), Allgather(v), Alltoall(v, w).
//!
//! Each is one of three patterns over the channel's slots, pipelined by chunks:
//! - `by_sender`: every sender writes the next chunk of its one piece into its own slot;
//!   after the step the readers copy it (Gather, Allgather and their v forms).
//! - `scatter`: the root writes each member's next chunk into that member's slot; after
//!   the step each member copies its own (Scatter, Scatterv).
//! - `alltoall`: every member's slot is split into n sub-blocks, one per destination
//!   (Alltoall, v, w).
//!
//! When piece lengths may differ between members (the v and w forms), a first step
//! agrees on the longest piece so that every member runs the same number of steps.
//! Cost: one synchronisation per chunk; two copies per byte moved.
use super::Chan;
use crate::comm::Comm;
use crate::error::MpiResult;
use crate::p2p::UserBuf;

/// A byte range of a user buffer.
#[derive(Clone, Copy)]
pub struct Piece {
    pub buf: UserBuf,
    pub off: usize,
    pub len: usize,
}

impl Piece {
    pub fn none() -> Piece {
        Piece {
            buf: UserBuf::empty(),
            off: 0,
            len: 0,
        }
    }
}

async fn agree_max(ch: &Chan<'_>, mine: usize, vary: bool) -> MpiResult<usize> {
    if !vary {
        return Ok(mine);
    }
    ch.put_args(&[mine as u64]);
    ch.step().await?;
    Ok((0..ch.n)
        .map(|i| ch.peer_args(i, 0) as usize)
        .max()
        .unwrap_or(0))
}

/// Every member sends `send` (its own piece, or none); member `me` receives `recv[i]`
/// from each member i (empty pieces receive nothing). `vary`: lengths may differ.
pub async fn by_sender(comm: &Comm, send: Piece, recv: &[Piece], vary: bool) -> MpiResult<()> {
    let ch = Chan::open(comm).await?;
    let chunk = ch.slot_bytes;
    let longest = if vary {
        agree_max(&ch, send.len, true).await?
    } else {
        send.len.max(recv.iter().map(|p| p.len).max().unwrap_or(0))
    };
    let nchunks = longest.div_ceil(chunk).max(1);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        if send.len > start {
            let len = chunk.min(send.len - start);
            // SAFETY: this member's own slot of this step, nobody else's until the step
            // publishes it; the send buffer is not arena memory.
            let dst = unsafe { ch.slice_mut(ch.slot(ch.me, p), len) };
            send.buf.read_at(send.off + start, dst);
        }
        if ch.n > 1 {
            ch.step().await?;
        }
        for (i, r) in recv.iter().enumerate() {
            if r.len > start {
                let len = chunk.min(r.len - start);
                r.buf.write_at(r.off + start, ch.slice(ch.slot(i, p), len));
            }
        }
    }
    Ok(())
}

/// The root sends `send[j]` to each member j; every member receives `recv`.
pub async fn scatter(
    comm: &Comm,
    root: usize,
    send: &[Piece],
    recv: Piece,
    vary: bool,
) -> MpiResult<()> {
    let ch = Chan::open(comm).await?;
    let chunk = ch.slot_bytes;
    let mine = if ch.me == root {
        send.iter().map(|p| p.len).max().unwrap_or(0)
    } else {
        recv.len
    };
    let longest = if vary {
        agree_max(&ch, mine, true).await?
    } else {
        mine
    };
    let nchunks = longest.div_ceil(chunk).max(1);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        if ch.me == root {
            for (j, s) in send.iter().enumerate() {
                if s.len > start {
                    let len = chunk.min(s.len - start);
                    // SAFETY: in a scatter the root alone fills every slot of this step
                    // (one at a time) until the step publishes them.
                    let dst = unsafe { ch.slice_mut(ch.slot(j, p), len) };
                    s.buf.read_at(s.off + start, dst);
                }
            }
        }
        if ch.n > 1 {
            ch.step().await?;
        }
        if recv.len > start {
            let len = chunk.min(recv.len - start);
            recv.buf
                .write_at(recv.off + start, ch.slice(ch.slot(ch.me, p), len));
        }
    }
    Ok(())
}

/// Member `me` sends `send[j]` to each j and receives `recv[i]` from each i.
/// `in_place`: `send[j]` and `recv[j]` are the same bytes (MPI_IN_PLACE).
pub async fn alltoall(comm: &Comm, send: &[Piece], recv: &[Piece], vary: bool) -> MpiResult<()> {
    let ch = Chan::open(comm).await?;
    let n = ch.n;
    // Sub-blocks tile the slot exactly (8-byte aligned); the arena guarantees at least
    // 64 bytes of slot per member.
    let sub = (ch.slot_bytes / n) / 8 * 8;
    let mine = send
        .iter()
        .chain(recv.iter())
        .map(|p| p.len)
        .max()
        .unwrap_or(0);
    let longest = agree_max(&ch, mine, vary).await?;
    let nchunks = longest.div_ceil(sub).max(1);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * sub;
        for (j, s) in send.iter().enumerate() {
            if s.len > start {
                let len = sub.min(s.len - start);
                // SAFETY: sub-block j of this member's own slot of this step, written
                // only here until the step publishes it; `s.buf` is not arena memory.
                let dst = unsafe { ch.slice_mut(ch.slot(ch.me, p) + j * sub, len) };
                s.buf.read_at(s.off + start, dst);
            }
        }
        if n > 1 {
            ch.step().await?;
        }
        for (i, r) in recv.iter().enumerate() {
            if r.len > start {
                let len = sub.min(r.len - start);
                r.buf
                    .write_at(r.off + start, ch.slice(ch.slot(i, p) + ch.me * sub, len));
            }
        }
    }
    Ok(())
}
