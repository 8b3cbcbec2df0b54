//! The reductions on intercommunicators at the C boundary: arguments checked and
//! staged, then the engine's bodies in coll/inter.rs.
use super::coll::Plan;
use crate::coll::inter::{self, Role};
use crate::coll::stage::{RedData, Stage};
use crate::comm::Comm;
use crate::ffi::check;
use crate::p2p::UserBuf;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

pub fn reduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: i32,
    op: i32,
    root: c_int,
) -> Plan {
    let role = crate::coll::inter::inter_root(c, root)?;
    let mut st = Stage::default();
    // Arguments are checked now; the root discovery and length agreement are steps.
    let (mine, rd, buf) = match role {
        Role::Root => {
            let rd = RedData::new(datatype, op)?;
            let n = check::count(count, "count")?;
            let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
            (rd.bytes(n)?, Some(rd), recv)
        }
        Role::Peer(_) => {
            check::not_in_place(sendbuf, "sendbuf")?;
            let rd = RedData::new(datatype, op)?;
            let n = check::count(count, "count")?;
            let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
            (rd.bytes(n)?, Some(rd), send)
        }
        Role::Idle => (0, None, UserBuf::empty()),
    };
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            match rd {
                Some(rd) => {
                    let f = rd.func();
                    let red = rd.reduction(&f);
                    inter::reduce(&cc, role, mine, Some(&red), buf).await?
                }
                None => inter::reduce(&cc, role, mine, None, buf).await?,
            }
            st.finish()
        }),
    ))
}

/// Both groups reduce to the other: `lo..hi` is this process's byte range of the other
/// group's reduced vector.
#[allow(clippy::too_many_arguments)]
fn both_ways(
    c: &Arc<Comm>,
    rd: RedData,
    st: Stage,
    total: usize,
    send: UserBuf,
    recv: UserBuf,
    lo: usize,
    hi: usize,
) -> Plan {
    let cc = c.clone();
    Ok((
        c.clone(),
        Box::pin(async move {
            let f = rd.func();
            let red = rd.reduction(&f);
            inter::both_ways(&cc, &red, total, send, recv, lo, hi).await?;
            st.finish()
        }),
    ))
}

pub fn allreduce(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: i32,
    op: i32,
) -> Plan {
    check::not_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let n = check::count(count, "count")?;
    let total = rd.bytes(n)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, n, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, n, "recvbuf")?;
    both_ways(c, rd, st, total, send, recv, 0, total)
}

/// Reduce-scatter across the groups: my group's vector of `sum(counts)` instances; I
/// receive `counts[my rank]` instances of the other group's reduction.
pub fn reduce_scatter(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[usize],
    datatype: i32,
    op: i32,
) -> Plan {
    check::not_in_place(sendbuf, "sendbuf")?;
    let rd = RedData::new(datatype, op)?;
    let sum: usize = counts.iter().sum();
    let lo = rd.bytes(counts[..c.rank].iter().sum())?;
    let block = rd.bytes(counts[c.rank])?;
    let total = rd.bytes(sum)?;
    let mut st = Stage::default();
    let send = rd.input(&mut st, sendbuf, sum, "sendbuf")?;
    let recv = rd.output(&mut st, recvbuf, counts[c.rank], "recvbuf")?;
    both_ways(c, rd, st, total, send, recv, lo, lo + block)
}

pub fn reduce_scatter_block(
    c: &Arc<Comm>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: i64,
    datatype: i32,
    op: i32,
) -> Plan {
    let n = check::count(recvcount, "recvcount")?;
    reduce_scatter(c, sendbuf, recvbuf, &vec![n; c.size()], datatype, op)
}
