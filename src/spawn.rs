//! MPI_Comm_spawn and MPI_Comm_spawn_multiple, MPI_Comm_get_parent, MPI_Comm_disconnect.
//!
//! The arena has more process slots than the ranks mpiexec starts (the universe,
//! `mpiexec --universe-size`). To spawn, the root of the parent communicator allocates
//! the channel of the parent-children intercommunicator, writes the commands into the
//! arena's spawn mailbox and signals mpiexec, which starts the children in the next free
//! slots with their own MPI_COMM_WORLD (a channel it allocates) and supervises them like
//! the first ranks. The root broadcasts the outcome; every parent then builds the
//! intercommunicator (its group, the children's slots, the channel), and each child
//! builds the same one at MPI_Init from its environment: MPI_Comm_get_parent returns it.
//! Point-to-point and collectives across it run on the ordinary rings and channel.
//!
//! Unsafe code here (every block has its SAFETY line):
//! - `kill`, the signal that asks mpiexec to spawn.
use crate::abi::*;
use crate::comm::{get, Comm};
use crate::create::register;
use crate::error::{err, MpiResult};
use crate::shm::{Arena, SPAWN_BYTES, SPAWN_OFF};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// One command of a spawn: the program, its arguments, how many copies, and the
/// `wdir` / `path` info keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cmd {
    pub prog: String,
    pub args: Vec<String>,
    pub n: usize,
    pub wdir: Option<String>,
    pub path: Option<String>,
}

/// What the root asks mpiexec for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub cmds: Vec<Cmd>,
    /// The parents' slots (the parent communicator's group, in rank order).
    pub parents: Vec<usize>,
    /// The intercommunicator's channel.
    pub ctx: usize,
}

// Mailbox fields (arena offsets).
const M_LOCK: usize = SPAWN_OFF;
const M_STATE: usize = SPAWN_OFF + 4;
const M_RESULT: usize = SPAWN_OFF + 8;
const M_BASE: usize = SPAWN_OFF + 16;
const M_LEN: usize = SPAWN_OFF + 24;
const M_MSG: usize = SPAWN_OFF + 64;
const M_MSG_MAX: usize = 900;
/// The payload's offset from SPAWN_OFF.
const M_PAYLOAD: usize = 1024;
/// Mailbox states.
const IDLE: u32 = 0;
const REQUESTED: u32 = 1;
const ANSWERED: u32 = 2;

/// The signal a root sends mpiexec when it posts a request.
pub fn request_signal() -> i32 {
    libc::SIGRTMIN() + 3
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_opt(out: &mut Vec<u8>, s: &Option<String>) {
    match s {
        Some(v) => {
            out.push(1);
            put_str(out, v);
        }
        None => out.push(0),
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(v.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        let v = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        String::from_utf8(v.to_vec()).ok()
    }
    fn opt(&mut self) -> Option<Option<String>> {
        let t = *self.b.get(self.at)?;
        self.at += 1;
        match t {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
}

impl Request {
    pub fn total(&self) -> usize {
        self.cmds.iter().map(|c| c.n).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend_from_slice(&(self.ctx as u32).to_le_bytes());
        o.extend_from_slice(&(self.parents.len() as u32).to_le_bytes());
        for &p in &self.parents {
            o.extend_from_slice(&(p as u32).to_le_bytes());
        }
        o.extend_from_slice(&(self.cmds.len() as u32).to_le_bytes());
        for c in &self.cmds {
            o.extend_from_slice(&(c.n as u32).to_le_bytes());
            put_str(&mut o, &c.prog);
            put_opt(&mut o, &c.wdir);
            put_opt(&mut o, &c.path);
            o.extend_from_slice(&(c.args.len() as u32).to_le_bytes());
            for a in &c.args {
                put_str(&mut o, a);
            }
        }
        o
    }

    pub fn decode(b: &[u8]) -> Option<Request> {
        let mut r = Reader { b, at: 0 };
        let ctx = r.u32()? as usize;
        let np = r.u32()? as usize;
        let parents = (0..np)
            .map(|_| r.u32().map(|v| v as usize))
            .collect::<Option<Vec<_>>>()?;
        let nc = r.u32()? as usize;
        let mut cmds = Vec::new();
        for _ in 0..nc {
            let n = r.u32()? as usize;
            let prog = r.str()?;
            let wdir = r.opt()?;
            let path = r.opt()?;
            let na = r.u32()? as usize;
            let args = (0..na).map(|_| r.str()).collect::<Option<Vec<_>>>()?;
            cmds.push(Cmd {
                prog,
                args,
                n,
                wdir,
                path,
            });
        }
        (r.at == b.len()).then_some(Request { cmds, parents, ctx })
    }
}

// ---- the launcher's side of the mailbox ----

/// A request waiting in the mailbox, if any (for mpiexec).
pub fn pending_request(a: &Arena) -> Option<Result<Request, String>> {
    if a.u32_at(M_STATE).load(Ordering::Acquire) != REQUESTED {
        return None;
    }
    let len = a.u64_at(M_LEN).load(Ordering::Relaxed) as usize;
    if len > SPAWN_BYTES - M_PAYLOAD {
        return Some(Err("malformed spawn request".into()));
    }
    let b = a.slice(SPAWN_OFF + M_PAYLOAD, len);
    Some(Request::decode(b).ok_or_else(|| "malformed spawn request".into()))
}

/// Answers the pending request: the children's first slot, or an error message.
pub fn answer(a: &Arena, outcome: Result<usize, String>) {
    match outcome {
        Ok(base) => {
            a.u64_at(M_BASE).store(base as u64, Ordering::Relaxed);
            a.i32_at(M_RESULT).store(MPI_SUCCESS, Ordering::Relaxed);
        }
        Err(msg) => {
            let m = msg.as_bytes();
            let m = &m[..m.len().min(M_MSG_MAX)];
            a.u32_at(M_MSG).store(m.len() as u32, Ordering::Relaxed);
            a.write(M_MSG + 4, m);
            a.i32_at(M_RESULT).store(MPI_ERR_SPAWN, Ordering::Relaxed);
        }
    }
    a.u32_at(M_STATE).store(ANSWERED, Ordering::Release);
}

// ---- the root's side ----

/// Posts `req` to mpiexec and waits for its answer: the children's first slot.
fn ask_launcher(req: &Request) -> MpiResult<usize> {
    let j = crate::runtime::job()?;
    let launcher = crate::settings::startup()
        .jobid
        .as_deref()
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|_| !j.singleton);
    let Some(launcher) = launcher else {
        return Err(err(
            MPI_ERR_SPAWN,
            "this process was not started by shmpi's mpiexec, so there is no launcher to start new processes (run it with mpiexec -n 1)",
        ));
    };
    let payload = req.encode();
    if payload.len() > SPAWN_BYTES - M_PAYLOAD {
        return Err(err(
            MPI_ERR_SPAWN,
            format!(
                "the commands and arguments take {} bytes; at most {} fit",
                payload.len(),
                SPAWN_BYTES - M_PAYLOAD
            ),
        ));
    }
    let a = &j.arena;
    let lock = a.u32_at(M_LOCK);
    while lock
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        crate::runtime::check_job_alive();
        std::thread::sleep(Duration::from_micros(200));
    }
    a.write(SPAWN_OFF + M_PAYLOAD, &payload);
    a.u64_at(M_LEN)
        .store(payload.len() as u64, Ordering::Relaxed);
    a.u32_at(M_STATE).store(REQUESTED, Ordering::Release);
    // SAFETY: kill with a valid signal number; failure is reported below by the wait.
    unsafe {
        libc::kill(launcher, request_signal());
    }
    let mut waited = Duration::ZERO;
    let outcome = loop {
        if a.u32_at(M_STATE).load(Ordering::Acquire) == ANSWERED {
            let res = a.i32_at(M_RESULT).load(Ordering::Relaxed);
            break if res == MPI_SUCCESS {
                Ok(a.u64_at(M_BASE).load(Ordering::Relaxed) as usize)
            } else {
                let n = (a.u32_at(M_MSG).load(Ordering::Relaxed) as usize).min(M_MSG_MAX);
                let msg = String::from_utf8_lossy(a.slice(M_MSG + 4, n)).into_owned();
                Err(err(res, msg))
            };
        }
        crate::runtime::check_job_alive();
        std::thread::sleep(Duration::from_micros(100));
        waited += Duration::from_micros(100);
        // The signal may have raced with mpiexec's start-up: repeat it now and then.
        if waited.as_millis().is_multiple_of(100) {
            // SAFETY: as above.
            unsafe {
                libc::kill(launcher, request_signal());
            }
        }
    };
    a.u32_at(M_STATE).store(IDLE, Ordering::Relaxed);
    lock.store(0, Ordering::Release);
    outcome
}

/// Broadcasts u64 values from `root` over `comm`.
fn bcast_u64s(comm: &Comm, root: usize, v: &mut [u64]) -> MpiResult<()> {
    let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    crate::coll::bcast_bytes(comm, &mut b, root)?;
    for (i, x) in b.chunks_exact(8).enumerate() {
        v[i] = u64::from_le_bytes(x.try_into().unwrap());
    }
    Ok(())
}

/// MPI_Comm_spawn(_multiple) over the intracommunicator `comm`: `cmds` is significant
/// at `root` only (the root's checks of its arguments have run already; `Err` there is
/// reported by every rank). Returns the intercommunicator to the children; `asked` gets
/// the number of processes the root asked for, at every rank (the length of the error
/// codes array), also when the spawn failed.
pub fn spawn(
    comm: &Arc<Comm>,
    root: usize,
    cmds: MpiResult<Vec<Cmd>>,
    asked: &mut usize,
) -> MpiResult<Arc<Comm>> {
    let j = crate::runtime::job()?;
    // [class, first slot, children, channel, message length]
    let mut head = [0u64; 5];
    let mut msg = Vec::new();
    if comm.rank == root {
        let requested = cmds
            .as_ref()
            .map_or(0, |v| v.iter().map(|c| c.n).sum::<usize>());
        let outcome = cmds.and_then(|cmds| {
            let total: usize = cmds.iter().map(|c| c.n).sum();
            let members = comm.size() + total;
            let ctx = j.arena.alloc_channel(members).ok_or_else(|| {
                err(
                    MPI_ERR_SPAWN,
                    format!(
                        "no free communicator context for the new intercommunicator: {} communicators are alive",
                        crate::shm::NCHAN
                    ),
                )
            })?;
            let req = Request {
                cmds,
                parents: comm.group.clone(),
                ctx,
            };
            match ask_launcher(&req) {
                Ok(base) => Ok((base, total, ctx)),
                Err(e) => {
                    for _ in 0..members {
                        j.arena.release_channel(ctx);
                    }
                    Err(e)
                }
            }
        });
        match outcome {
            Ok((base, total, ctx)) => head = [0, base as u64, total as u64, ctx as u64, 0],
            Err(e) => {
                msg = e.msg.clone().into_bytes();
                head = [e.class as u64, 0, requested as u64, 0, msg.len() as u64];
            }
        }
    }
    bcast_u64s(comm, root, &mut head)?;
    *asked = head[2] as usize;
    if head[0] != 0 {
        let mut words = vec![0u64; (head[4] as usize).div_ceil(8)];
        if comm.rank == root {
            msg.resize(words.len() * 8, 0);
            for (w, c) in words.iter_mut().zip(msg.chunks_exact(8)) {
                *w = u64::from_le_bytes(c.try_into().unwrap());
            }
        }
        if !words.is_empty() {
            bcast_u64s(comm, root, &mut words)?;
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let text = String::from_utf8_lossy(&bytes[..head[4] as usize]).into_owned();
        let text = if comm.rank == root {
            text
        } else {
            format!("at the root (rank {root}): {text}")
        };
        return Err(err(head[0] as i32, text));
    }
    let (base, total, ctx) = (head[1] as usize, head[2] as usize, head[3] as usize);
    crate::p2p::connect_up_to(base + total);
    j.note_processes(base + total);
    let c = Comm::new(
        0,
        ctx,
        comm.group.clone(),
        comm.rank,
        Some((base..base + total).collect()),
        j.size,
        "",
    );
    c.errhandler
        .store(comm.errhandler.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(register(c))
}

/// At MPI_Init of a spawned process: builds the intercommunicator to the parents.
pub fn init_parent(ctx: usize, parents: Vec<usize>) -> MpiResult<()> {
    let j = crate::runtime::job_any().ok_or_else(|| err(MPI_ERR_OTHER, "no job"))?;
    let world = get(MPI_COMM_WORLD)?;
    let c = Comm::new(
        0,
        ctx,
        world.group.clone(),
        world.rank,
        Some(parents),
        j.size,
        // (its default name, MPI-3.1 6.8)
        "MPI_COMM_PARENT",
    );
    let c = register(c);
    crate::comm::set_parent(c.handle);
    Ok(())
}

/// MPI_Comm_disconnect: waits for every member (so that communication pending on it has
/// been matched and completed by the caller's own waits), then frees it.
pub fn disconnect(h: i32) -> MpiResult<()> {
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err(
            MPI_ERR_COMM,
            "the predefined communicators MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected",
        ));
    }
    let c = get(h)?;
    // Over the channel: both groups of an intercommunicator take part.
    crate::coll::run(&c, crate::coll::barrier(&c))?;
    crate::create::free(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let r = Request {
            cmds: vec![
                Cmd {
                    prog: "./worker".into(),
                    args: vec!["-x".into(), "".into(), "ünï".into()],
                    n: 3,
                    wdir: Some("/tmp".into()),
                    path: None,
                },
                Cmd {
                    prog: "other".into(),
                    args: vec![],
                    n: 1,
                    wdir: None,
                    path: Some("/bin:/usr/bin".into()),
                },
            ],
            parents: vec![0, 2, 5],
            ctx: 77,
        };
        let b = r.encode();
        assert_eq!(Request::decode(&b), Some(r.clone()));
        assert_eq!(r.total(), 4);
        // Truncated or padded payloads are rejected.
        assert_eq!(Request::decode(&b[..b.len() - 1]), None);
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(Request::decode(&longer), None);
    }
}
