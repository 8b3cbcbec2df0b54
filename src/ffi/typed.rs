//! A user buffer of `count` instances of a datatype, checked and turned into what the
//! engine moves (coll/stage.rs stages collectives' buffers; p2p's messages are sent
//! from and received into them).
use crate::coll::stage::{self, packed_len, RedData, RedMode, Stage};
use crate::error::MpiResult;
use crate::ffi::check::{self, check_base, TypeInfo};
use crate::p2p::buf::Unpack;
use crate::p2p::{RecvInto, SendData, UserBuf};
use std::os::raw::c_void;

/// Packs `count` instances at `p` into a new vector.
pub fn pack_vec(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<Vec<u8>> {
    check_base(p, count, t, arg)?;
    // SAFETY: checked; the MPI caller guarantees `count` instances of the datatype at `p`.
    unsafe { stage::pack_vec(p, count, t) }
}

/// What a send of `count` instances at `p` transmits.
pub fn send_data(p: *const c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<SendData> {
    if t.contiguous {
        // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
        return Ok(SendData::User(unsafe {
            check::buffer(p, packed_len(t, count)?, arg)
        }?));
    }
    Ok(SendData::Owned(pack_vec(p, count, t, arg)?))
}

/// Where a receive of `count` instances at `p` puts the message.
pub fn recv_into(p: *mut c_void, count: usize, t: &TypeInfo, arg: &str) -> MpiResult<RecvInto> {
    if t.contiguous {
        // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
        return Ok(RecvInto::Bytes(unsafe {
            check::buffer(p, packed_len(t, count)?, arg)
        }?));
    }
    check_base(p, count, t, arg)?;
    let ty = crate::datatype::lookup(t.handle)?;
    // SAFETY: the MPI caller keeps the receive buffer valid until the request completes.
    Ok(RecvInto::Typed(Box::new(unsafe {
        Unpack::new(ty, count, p as *mut u8)
    })))
}

// The buffer arguments of a collective, checked and staged: `Stage` for one
// datatype's instances, `RedData` for a reduction's vector.
impl Stage {
    /// The bytes `count` instances at `p` contribute (packed if not contiguous).
    pub fn input(
        &mut self,
        p: *const c_void,
        count: usize,
        t: &TypeInfo,
        arg: &str,
    ) -> MpiResult<UserBuf> {
        if t.contiguous {
            // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
            return unsafe { check::buffer(p, packed_len(t, count)?, arg) };
        }
        Ok(self.packed(pack_vec(p, count, t, arg)?))
    }

    /// Where `count` instances at `p` are received (a staging buffer if not contiguous).
    pub fn output(
        &mut self,
        p: *mut c_void,
        count: usize,
        t: &TypeInfo,
        arg: &str,
    ) -> MpiResult<UserBuf> {
        if t.contiguous {
            // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
            return unsafe { check::buffer(p, packed_len(t, count)?, arg) };
        }
        check_base(p, count, t, arg)?;
        // SAFETY: checked; the MPI caller keeps the buffer valid until the collective
        // completes.
        unsafe { self.unpacked(p, count, t) }
    }
}

impl RedData {
    /// The bytes `count` instances at `p` contribute to the reduction.
    pub fn input(
        &self,
        st: &mut Stage,
        p: *const c_void,
        count: usize,
        arg: &str,
    ) -> MpiResult<UserBuf> {
        match self.mode {
            // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
            RedMode::Native => unsafe { check::buffer(p, self.bytes(count)?, arg) },
            RedMode::Packed => match self.spread() {
                Some(se) => st.spread(pack_vec(p, count, &self.t, arg)?, se),
                None => st.input(p, count, &self.t, arg),
            },
            RedMode::Image => st.image(pack_vec(p, count, &self.t, arg)?, count, &self.t),
        }
    }

    /// Where this process's part of the reduction's result is received.
    pub fn output(
        &self,
        st: &mut Stage,
        p: *mut c_void,
        count: usize,
        arg: &str,
    ) -> MpiResult<UserBuf> {
        match self.mode {
            // SAFETY: `p`: passed on from the entry point, valid as the MPI caller must pass it.
            RedMode::Native => unsafe { check::buffer(p, self.bytes(count)?, arg) },
            RedMode::Packed => match self.spread() {
                Some(se) => {
                    check_base(p, count, &self.t, arg)?;
                    // SAFETY: as in `Stage::output`.
                    unsafe { st.spread_output(p, count, &self.t, se) }
                }
                None => st.output(p, count, &self.t, arg),
            },
            RedMode::Image => {
                check_base(p, count, &self.t, arg)?;
                // SAFETY: as in `Stage::output`.
                unsafe { st.image_output(p, count, &self.t) }
            }
        }
    }
}
