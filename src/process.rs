//! How this process ends and speaks: an exit with C stdio flushed, taken once, and
//! messages to standard error in one write. Every layer may stop the process.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - `fflush(NULL)` of C stdio and `_exit`, which std does not offer.
use std::sync::atomic::{AtomicI32, Ordering};

/// The status of the exit in progress, or -1.
static EXITING: AtomicI32 = AtomicI32::new(-1);

/// Flushes every C stdio stream (the program's buffered `printf` output).
pub fn flush_c_stdio() {
    // SAFETY: fflush(NULL) flushes all C streams; it has no preconditions.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

/// Ends this process with `status`, C stdio flushed (programs print with printf). The
/// first call exits normally, running the program's atexit handlers; such a handler may
/// call MPI again (an MPI_Finalize cleanup, as MPICH's test harness registers), and if
/// that call ends in another request to exit (the job is being torn down), the process
/// ends at once with the first call's status instead of entering exit() again.
pub fn exit_process(status: i32) -> ! {
    flush_c_stdio();
    match EXITING.compare_exchange(-1, status, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => std::process::exit(status),
        // SAFETY: _exit ends the process without running anything; always sound.
        Err(first) => unsafe { libc::_exit(first) },
    }
}

/// Writes `line` and a newline to standard error in one write, so that the messages of
/// ranks that fail at the same time do not interleave.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}
