//! Copying between ranks' memory directly (`process_vm_readv`/`process_vm_writev`): one
//! copy between the user buffers of two processes, instead of two through the arena.
//! Used by large reductions and broadcasts (coll/direct.rs) when the system allows it,
//! and by the C test harness to learn whether it does.
//!
//! Whether it does depends on the kernel's ptrace policy (Yama's `ptrace_scope` 1 lets a
//! process read only its descendants, not its siblings), on a seccomp filter (some
//! container runtimes refuse the call) and on the target being dumpable. [`usable`]
//! probes the first two once, by asking for an unmapped address of the parent process:
//! EFAULT means the access check passed (siblings pass the same check), EPERM or ENOSYS
//! that it did not. Every rank publishes the result with its dumpable flag, and a
//! collective takes the direct path only if every member can.
use std::io;
use std::sync::OnceLock;

/// Whether this process may read its siblings' memory (probed once) and is itself
/// readable (dumpable).
pub fn usable() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // SAFETY: prctl(PR_GET_DUMPABLE) takes no pointers.
        let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) } == 1;
        dumpable && probe_parent()
    })
}

fn probe_parent() -> bool {
    let mut byte = 0u8;
    let local = libc::iovec {
        iov_base: (&mut byte as *mut u8).cast(),
        iov_len: 1,
    };
    // Page 1 is never mapped (mmap_min_addr), so a permitted read fails with EFAULT.
    let remote = libc::iovec {
        iov_base: 0x1000 as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: one local iovec over a byte we own; the remote iovec is only read by the
    // kernel on the other process's side.
    let r = unsafe { libc::process_vm_readv(libc::getppid(), &local, 1, &remote, 1, 0) };
    r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

/// Copies `dst.len()` bytes at address `remote` of process `pid` into `dst`.
pub fn read(pid: i32, remote: usize, dst: &mut [u8]) -> io::Result<()> {
    transfer(pid, remote, dst.as_mut_ptr(), dst.len(), false)
}

/// Copies `src` to address `remote` of process `pid`.
pub fn write(pid: i32, remote: usize, src: &[u8]) -> io::Result<()> {
    transfer(pid, remote, src.as_ptr().cast_mut(), src.len(), true)
}

/// Moves `len` bytes between `local` and address `remote` of process `pid`: into
/// `local` (`to_remote` false), or from it, which is then only read.
fn transfer(
    pid: i32,
    remote: usize,
    local: *mut u8,
    len: usize,
    to_remote: bool,
) -> io::Result<()> {
    transfer_pieces(pid, &[(remote, len)], local, len, to_remote)
}

/// Copies the remote pieces `(address, length)` of process `pid`, in order, into `dst`
/// (which holds their total length): one system call per 1024 pieces.
pub fn read_pieces(pid: i32, pieces: &[(usize, usize)], dst: &mut [u8]) -> io::Result<()> {
    transfer_pieces(pid, pieces, dst.as_mut_ptr(), dst.len(), false)
}

/// Copies `src` to the remote pieces `(address, length)` of process `pid`, in order.
pub fn write_pieces(pid: i32, pieces: &[(usize, usize)], src: &[u8]) -> io::Result<()> {
    transfer_pieces(pid, pieces, src.as_ptr().cast_mut(), src.len(), true)
}

fn transfer_pieces(
    pid: i32,
    pieces: &[(usize, usize)],
    local: *mut u8,
    len: usize,
    to_remote: bool,
) -> io::Result<()> {
    const BATCH: usize = 1024;
    let total: usize = pieces.iter().map(|p| p.1).sum();
    assert!(
        total <= len,
        "{total} bytes of pieces, {len} of local buffer"
    );
    // (piece index, bytes of it done, bytes of the local buffer done)
    let (mut i, mut within, mut done) = (0usize, 0usize, 0usize);
    let mut rem: Vec<libc::iovec> = Vec::with_capacity(BATCH.min(pieces.len()));
    while i < pieces.len() {
        rem.clear();
        let mut want = 0usize;
        let (mut j, mut w) = (i, within);
        while j < pieces.len() && rem.len() < BATCH {
            let (a, l) = pieces[j];
            if l > w {
                rem.push(libc::iovec {
                    iov_base: (a + w) as *mut libc::c_void,
                    iov_len: l - w,
                });
                want += l - w;
            }
            j += 1;
            w = 0;
        }
        if want == 0 {
            break;
        }
        let loc = libc::iovec {
            // SAFETY: `done + want <= total <= len`: inside the caller's buffer.
            iov_base: unsafe { local.add(done) }.cast(),
            iov_len: want,
        };
        // SAFETY: the local iovec lies in the caller's buffer (borrowed mutably by
        // `read_pieces`; only read by the kernel for `write_pieces`); the remote ranges
        // are checked by the kernel in the other process (EFAULT if not mapped there).
        let r = unsafe {
            if to_remote {
                libc::process_vm_writev(pid, &loc, 1, rem.as_ptr(), rem.len() as _, 0)
            } else {
                libc::process_vm_readv(pid, &loc, 1, rem.as_ptr(), rem.len() as _, 0)
            }
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::from_raw_os_error(libc::EFAULT));
        }
        // Advance the cursor by the bytes moved (a partial transfer stops at a piece
        // boundary or inside one).
        let mut moved = r as usize;
        done += moved;
        while moved > 0 {
            let left = pieces[i].1 - within;
            if moved >= left {
                moved -= left;
                i += 1;
                within = 0;
            } else {
                within += moved;
                moved = 0;
            }
        }
        while i < pieces.len() && pieces[i].1 == within {
            i += 1;
            within = 0;
        }
    }
    Ok(())
}
