//! A user buffer of `count` instances of a datatype, turned into what the engine moves:
//! contiguous data goes straight through; a non-contiguous datatype (derived, or a
//! padded pair type such as MPI_DOUBLE_INT) travels packed, `count * size` bytes, so
//! every receiver sees the same byte stream whatever its own layout.
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::ffi::check::{self, TypeInfo};
use crate::p2p::buf::Unpack;
use crate::p2p::{RecvInto, SendData, UserBuf};
use std::os::raw::c_void;

fn lookup(t: &TypeInfo) -> MpiResult<crate::datatype::TypeRef> {
    crate::datatype::lookup(t.handle)
}

/// Derived types may address absolute memory (MPI_BOTTOM, i.e. NULL); predefined ones
/// may not.
fn check_base(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<()> {
    if check::is_in_place(p) {
        return Err(err(MPI_ERR_BUFFER, format!("{arg} is MPI_IN_PLACE, which this call does not allow here")));
    }
    if p.is_null() && count > 0 && t.size > 0 && crate::datatype::predefined::lookup(t.handle).is_some() {
        return Err(err(MPI_ERR_BUFFER, format!("{arg} is NULL but holds {count} elements")));
    }
    Ok(())
}

/// Bytes of the packed stream of `count` instances.
pub fn packed_len(t: &TypeInfo, count: usize) -> MpiResult<usize> {
    count
        .checked_mul(t.size)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("count={count} x size {} overflows", t.size)))
}

/// Packs `count` instances at `p` into a new vector.
pub fn pack_vec(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<Vec<u8>> {
    check_base(p, count, t, arg)?;
    let ty = lookup(t)?;
    let mut v = vec![0u8; packed_len(t, count)?];
    if !v.is_empty() {
        // SAFETY: the MPI caller guarantees `count` instances of the datatype at `p`.
        unsafe { crate::datatype::pack(&ty, count, p as *const u8, &mut v, 0) };
    }
    Ok(v)
}

/// Unpacks a packed stream into `count` instances at `p`.
pub fn unpack_into(p: *mut c_void, count: usize, t: &TypeInfo, data: &[u8]) -> MpiResult<()> {
    if data.is_empty() {
        return Ok(());
    }
    let ty = lookup(t)?;
    // SAFETY: the MPI caller guarantees room for `count` instances at `p`; `data` is at
    // most their packed size.
    unsafe { crate::datatype::unpack(&ty, count, p as *mut u8, data, 0) };
    Ok(())
}

/// What a send of `count` instances at `p` transmits.
pub fn send_data(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<SendData> {
    if t.contiguous {
        return Ok(SendData::User(check::buffer(p, packed_len(t, count)?, arg)?));
    }
    Ok(SendData::Owned(pack_vec(p, count, t, arg)?))
}

/// Where a receive of `count` instances at `p` puts the message.
pub fn recv_into(p: *mut c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<RecvInto> {
    if t.contiguous {
        return Ok(RecvInto::Bytes(check::buffer(p, packed_len(t, count)?, arg)?));
    }
    check_base(p, count, t, arg)?;
    let ty = lookup(t)?;
    // SAFETY: the MPI caller keeps the receive buffer valid until the request completes.
    Ok(RecvInto::Typed(Box::new(unsafe { Unpack::new(ty, count, p as *mut u8) })))
}

/// Staging for collectives: packed copies of non-contiguous inputs, and staging buffers
/// for non-contiguous outputs that are unpacked when the collective is done.
#[derive(Default)]
pub struct Stage {
    bufs: Vec<Vec<u8>>,
    unpacks: Vec<(usize, *mut c_void, usize, TypeInfo)>,
}

impl Stage {
    /// The bytes `count` instances at `p` contribute (packed if not contiguous).
    pub fn input(&mut self, p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<UserBuf> {
        if t.contiguous {
            return check::buffer(p, packed_len(t, count)?, arg);
        }
        let mut v = pack_vec(p, count, t, arg)?;
        // SAFETY: the vector is kept in `self.bufs` (its heap block does not move) for
        // as long as the stage, which outlives the collective.
        let b = unsafe { UserBuf::new(v.as_mut_ptr(), v.len()) };
        self.bufs.push(v);
        Ok(b)
    }

    /// Where `count` instances at `p` are received (a staging buffer if not contiguous).
    pub fn output(&mut self, p: *mut c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<UserBuf> {
        if t.contiguous {
            return check::buffer(p, packed_len(t, count)?, arg);
        }
        check_base(p, count, t, arg)?;
        lookup(t)?;
        let mut v = vec![0u8; packed_len(t, count)?];
        // SAFETY: as in `input`.
        let b = unsafe { UserBuf::new(v.as_mut_ptr(), v.len()) };
        self.unpacks.push((self.bufs.len(), p as *mut c_void, count, *t));
        self.bufs.push(v);
        Ok(b)
    }

    /// Keeps a buffer alive for the duration of the collective.
    pub fn keep(&mut self, v: Vec<u8>) {
        self.bufs.push(v);
    }

    /// Unpacks every staged output into the user's buffers.
    pub fn finish(self) -> MpiResult<()> {
        for (i, p, count, t) in &self.unpacks {
            unpack_into(*p, *count, t, &self.bufs[*i])?;
        }
        Ok(())
    }
}

/// Address `p` advanced by `bytes` (possibly negative), as the standard's displacement
/// arithmetic does.
pub fn offset(p: *const c_void, bytes: isize) -> *mut c_void {
    (p as *const u8).wrapping_offset(bytes) as *mut c_void
}
