//! MPI_Bcast. Up to `Chan::post_payload` bytes it goes in one posted step, where the root
//! does not wait for the others (coll/post.rs); with more members than CPUs, up to 8 KiB
//! in a chain of them (`Chan::post_limit`). Beyond, with more members than CPUs, and from
//! 8 KiB when each member has a CPU, through a ring of chunks where the root waits only
//! when the ring is full (coll/ring.rs). When `SHMPI_DIRECT` forces it, from 32 KiB the
//! data goes directly between the processes' buffers (coll/direct.rs). What remains
//! (992 bytes to 8 KiB with a CPU per member, or the ring turned off) is a pipeline over
//! chunks of one slot: in step t the root deposits chunk t in its slot; after the step
//! every other member copies it out. Cost: one synchronisation per chunk, two copies per
//! receiver (root -> slot -> receiver).
use super::Chan;
use crate::comm::Comm;
use crate::error::MpiResult;
use crate::p2p::UserBuf;

pub async fn bcast(comm: &Comm, buf: UserBuf, root: usize) -> MpiResult<()> {
    if comm.chan_members.len() == 1 {
        return Ok(());
    }
    use super::select::BcastPath;
    let ch = Chan::new(comm)?;
    let path = super::select::bcast(
        buf.len(),
        &super::select::Group::of(&ch),
        crate::settings::job(),
    );
    match path {
        BcastPath::Posted => return super::post::bcast(&ch, &buf, root).await,
        BcastPath::Ring => return super::ring::bcast(&ch, &buf, root).await,
        BcastPath::Direct | BcastPath::Pipeline => {}
    }
    ch.settle().await;
    if path == BcastPath::Direct && super::direct::bcast(&ch, &buf, root).await? {
        return Ok(());
    }
    let total = buf.len();
    let chunk = ch.slot_bytes;
    let nchunks = total.div_ceil(chunk).max(1);
    let nt = crate::p2p::buf::streaming(total);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        let len = chunk.min(total.saturating_sub(start));
        if ch.me == root && len > 0 {
            // SAFETY: the root's slot of this step is the root's alone until the step below
            // publishes it; `buf` is the user's buffer, not arena memory.
            buf.read_at(start, unsafe { ch.slice_mut(ch.slot(root, p), len) });
        }
        ch.step().await?;
        if ch.me != root && len > 0 {
            buf.write_at_nt(start, ch.slice(ch.slot(root, p), len), nt);
        }
    }
    Ok(())
}

/// Broadcast over an intercommunicator's channel: the root (channel index `root`)
/// sends `buf`; members with `receive` copy it. Members that neither send nor receive
/// (MPI_PROC_NULL in the root's group) only take part in the steps. The root publishes
/// the length first, since only it and the receivers know it.
pub async fn bcast_inter(comm: &Comm, buf: UserBuf, root: usize, receive: bool) -> MpiResult<()> {
    let ch = Chan::open(comm).await?;
    if ch.me == root {
        ch.put_args(&[buf.len() as u64]);
    }
    ch.step().await?;
    let total = ch.peer_args(root, 0) as usize;
    if receive && total != buf.len() {
        return Err(crate::error::err(
            crate::abi::MPI_ERR_TRUNCATE,
            format!(
                "the root broadcasts {total} bytes but this process's buffer holds {}",
                buf.len()
            ),
        ));
    }
    let chunk = ch.slot_bytes;
    let nchunks = total.div_ceil(chunk);
    for t in 0..nchunks {
        let (_, p) = ch.next_step();
        let start = t * chunk;
        let len = chunk.min(total - start);
        if ch.me == root {
            // SAFETY: the root's slot of this step is the root's alone until the step below
            // publishes it; `buf` is the user's buffer, not arena memory.
            buf.read_at(start, unsafe { ch.slice_mut(ch.slot(root, p), len) });
        }
        ch.step().await?;
        if receive {
            buf.write_at(start, ch.slice(ch.slot(root, p), len));
        }
    }
    Ok(())
}

/// The blocking MPI_Bcast over an intracommunicator, with the descriptor `desc` makes:
/// in a posted step when it applies (coll/post.rs), else the broadcast run in place.
#[inline]
pub fn bcast_blocking(
    c: &Comm,
    b: UserBuf,
    root: usize,
    desc: impl Fn() -> super::agree::Desc,
) -> MpiResult<()> {
    if let Some(r) = super::post::bcast_now(c, &b, root, &desc) {
        return r;
    }
    let desc = desc();
    let fut = std::pin::pin!(async {
        c.coll.set_desc(desc);
        bcast(c, b, root).await
    });
    super::run(c, fut)
}
