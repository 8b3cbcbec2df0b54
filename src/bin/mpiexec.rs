//! mpiexec (also installed as mpirun): starts and supervises an MPI job on this machine.
//! See `shmpi::launch`.
#![deny(unsafe_code)]
fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(shmpi::launch::main_with_args(args));
}
