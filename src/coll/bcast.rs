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
//!
//! [`plan`] and [`now`] are the front of MPI_Bcast (the C caller's buffer address,
//! count, datatype and root), for intra- and intercommunicators.
use super::agree::{self, Desc};
use super::inter::Role;
use super::plan::Plan;
use super::stage::Stage;
use super::Chan;
use crate::args::{count as count_arg, datatype as datatype_arg};
use crate::comm::Comm;
use crate::error::MpiResult;
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

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

/// MPI_Bcast on `c` as a plan.
///
/// # Safety
/// `buffer` is valid as the MPI standard requires of the caller.
pub unsafe fn plan(
    c: &Arc<Comm>,
    buffer: *mut c_void,
    count: i64,
    datatype: i32,
    root: c_int,
) -> Plan {
    let mut st = Stage::default();
    let cc = c.clone();
    if c.is_inter() {
        let r = super::inter::inter_root(c, root)?;
        let (buf, is_root, receive) = match r {
            Role::Idle => (UserBuf::empty(), false, false),
            Role::Root | Role::Peer(_) => {
                let n = count_arg(count, "count")?;
                let t = datatype_arg(datatype, "datatype")?;
                if let Role::Root = r {
                    (st.input(buffer, n, &t, "buffer")?, true, false)
                } else {
                    (st.output(buffer, n, &t, "buffer")?, false, true)
                }
            }
        };
        return Ok((
            c.clone(),
            Box::pin(async move {
                super::inter::bcast(&cc, r, buf, is_root, receive).await?;
                st.finish()
            }),
        ));
    }
    let n = count_arg(count, "count")?;
    let t = datatype_arg(datatype, "datatype")?;
    let root = crate::args::root(root, c)?;
    let b = if c.rank == root {
        st.input(buffer, n, &t, "buffer")?
    } else {
        st.output(buffer, n, &t, "buffer")?
    };
    let p = crate::datatype::predefined::lookup(t.handle);
    let desc = bcast_desc(t.handle, p, t.size, n, root);
    Ok((
        c.clone(),
        Box::pin(async move {
            cc.coll.set_desc(desc);
            bcast(&cc, b, root).await?;
            st.finish()
        }),
    ))
}

/// The blocking MPI_Bcast of a predefined contiguous datatype over an intracommunicator,
/// with arguments that pass every check: the broadcast with the descriptor the full path
/// would publish, without the plan's boxing and staging. `None`: run the full path
/// ([`plan`]), nothing has happened.
///
/// # Safety
/// As [`plan`].
#[inline]
pub unsafe fn now(
    buffer: *mut c_void,
    count: i64,
    datatype: i32,
    root: c_int,
    comm: i32,
) -> Option<MpiResult<()>> {
    // (NULL and MPI_IN_PLACE, the addresses 0 and -1, in one comparison)
    let no_buffer = (buffer as usize).wrapping_add(1) <= 1;
    if count <= 0 || no_buffer || crate::runtime::state() != crate::runtime::INITIALIZED {
        return None;
    }
    let p = crate::datatype::predefined::lookup(datatype)?;
    if p.size != p.extent || p.true_extent != p.size {
        return None;
    }
    let c = crate::comm::get(comm).ok()?;
    // (a negative root becomes an index past any communicator's size)
    let root = root as u32 as usize;
    if root >= c.size() {
        return None;
    }
    if c.is_inter() {
        return None;
    }
    let bytes = (count as usize).checked_mul(p.size)?;
    // SAFETY: the standard requires `buffer` to hold `count` elements of `datatype`
    // (`bytes` bytes, contiguous); checked non-NULL and not MPI_IN_PLACE.
    let b = unsafe { UserBuf::new(buffer as *mut u8, bytes) };
    let desc = || bcast_desc(datatype, Some(p), p.size, count as usize, root);
    Some(bcast_blocking(&c, b, root, desc))
}

/// MPI_Bcast's agreement descriptor: count and type signature must agree on every rank
/// (agree.rs). `p` is `datatype`'s predefined entry, if it has one.
fn bcast_desc(
    datatype: i32,
    p: Option<&crate::datatype::predefined::Predef>,
    size: usize,
    n: usize,
    root: usize,
) -> Desc {
    let (sig, dtype) = match p {
        Some(p) => (agree::signature_of(p), datatype as u32 as u64),
        None => (agree::signature(datatype), agree::ANY),
    };
    Desc {
        bytes: (n as u64).wrapping_mul(size as u64),
        op: sig as u64,
        dtype,
        ..super::plan::move_desc("MPI_Bcast", Some(root as c_int))
    }
}
