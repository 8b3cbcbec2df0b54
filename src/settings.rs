//! Every `SHMPI_*` environment variable the library reads, defined once: name, default,
//! parse and meaning, in three tables, each read once.
//!
//! - [`Job`]: the job-wide settings, those that decide an algorithm, a protocol or the
//!   arena's layout, where every rank must agree. mpiexec (a singleton for itself) takes
//!   them from its own environment and writes them into the arena when it creates it
//!   (shm `create_job_arena`); every rank, spawned ones too, adopts the arena's values in
//!   MPI_Init ([`adopt_job`]) and ignores its own environment for them. A rank started
//!   with another `SHMPI_SEGMENT` or `SHMPI_CHAIN` than its peers so still agrees with
//!   them.
//! - [`Rank`]: per-rank settings, which only tune how this process waits or computes and
//!   may differ between ranks (SIMD level, binding, spin and sleep times).
//! - [`Startup`]: what mpiexec passes to each rank it starts (slot, sizes, the arena's
//!   descriptor, the spawned world's place), parsed and checked by runtime.rs.
//!
//! The launcher (src/launch: `SHMPI_TIMEOUT`, `SHMPI_UNIVERSE_SIZE`) and the compiler
//! wrappers (src/bin/mpicc.rs: `SHMPI_CC`, `SHMPI_PREFIX`, ...) read their own variables;
//! the test programs' `SHMPI_TEST_*` are theirs.
//!
//! The bottom layer: this module depends on nothing else of the crate.
#![deny(unsafe_code)]
use std::sync::OnceLock;

/// Where a setting applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The job's: taken from the arena (written by whoever created it).
    Job,
    /// This process's own.
    Rank,
    /// Passed by mpiexec to each rank it starts.
    Startup,
}

/// One row of the tables, for documentation and checks.
#[derive(Clone, Copy, Debug)]
pub struct Def {
    pub name: &'static str,
    pub scope: Scope,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// A value a job-wide setting has, as one word of the arena's settings block.
pub trait Word: Sized {
    fn to_word(&self) -> u64;
    fn from_word(w: u64) -> Self;
}

/// `None` is all ones.
const UNSET: u64 = u64::MAX;

impl Word for usize {
    fn to_word(&self) -> u64 {
        *self as u64
    }
    fn from_word(w: u64) -> Self {
        w as usize
    }
}
impl Word for bool {
    fn to_word(&self) -> u64 {
        *self as u64
    }
    fn from_word(w: u64) -> Self {
        w != 0
    }
}
impl Word for Option<usize> {
    fn to_word(&self) -> u64 {
        self.map_or(UNSET, |v| v as u64)
    }
    fn from_word(w: u64) -> Self {
        (w != UNSET).then_some(w as usize)
    }
}
impl Word for Option<u32> {
    fn to_word(&self) -> u64 {
        self.map_or(UNSET, |v| v as u64)
    }
    fn from_word(w: u64) -> Self {
        (w != UNSET).then_some(w as u32)
    }
}
impl Word for Option<bool> {
    fn to_word(&self) -> u64 {
        self.map_or(UNSET, |v| v as u64)
    }
    fn from_word(w: u64) -> Self {
        (w != UNSET).then_some(w != 0)
    }
}
impl Word for Direct {
    fn to_word(&self) -> u64 {
        *self as u64
    }
    fn from_word(w: u64) -> Self {
        match w {
            0 => Direct::Off,
            2 => Direct::On,
            3 => Direct::Require,
            _ => Direct::Auto,
        }
    }
}

/// `SHMPI_DIRECT`: whether collectives, rendezvous messages and one-sided calls on
/// windows of the processes' own memory may copy straight between the processes'
/// buffers (coll/direct.rs, rma/mod.rs; without it those windows are served by their
/// members, rma/serve.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `0` or `off`: never.
    Off = 0,
    /// unset: when the communicator has no more members than the machine has CPUs
    /// online, in the size ranges of coll/select.rs.
    Auto = 1,
    /// `1` or `on`: at every member count and every size from the minimum on.
    On = 2,
    /// `require`: as `On`, and a collective that cannot take the direct path because a
    /// member cannot read the others' memory fails, as does the creation of a window on
    /// the processes' own memory (the tests use it to be sure they exercise this path).
    Require = 3,
}

/// `SHMPI_SIMD`: a cap on the SIMD level of the reduction kernels (op/kernels.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdCap {
    /// unset (or anything else): what the CPU has.
    None,
    /// `baseline`.
    Baseline,
    /// `avx2`.
    Avx2,
}

// ---- parsers: `None` for a value they do not take (then the default applies) ----

/// An on/off switch with an automatic middle: `0`/`off`, `1`/`on`, else automatic.
fn switch(v: &str) -> Option<Option<bool>> {
    match v {
        "0" | "off" => Some(Some(false)),
        "1" | "on" => Some(Some(true)),
        _ => None,
    }
}
/// `0` or `1` only.
fn bit(v: &str) -> Option<Option<bool>> {
    match v {
        "0" => Some(Some(false)),
        "1" => Some(Some(true)),
        _ => None,
    }
}
fn count(v: &str) -> Option<usize> {
    v.parse().ok()
}
fn some_count(v: &str) -> Option<Option<usize>> {
    v.parse().ok().map(Some)
}
fn positive(v: &str) -> Option<Option<u32>> {
    v.parse().ok().filter(|&n| n > 0).map(Some)
}
fn micros(v: &str) -> Option<Option<u64>> {
    v.parse().ok().map(Some)
}
fn not_zero(v: &str) -> Option<bool> {
    Some(v != "0")
}
fn not_none(v: &str) -> Option<bool> {
    Some(v != "none")
}
fn direct(v: &str) -> Option<Direct> {
    match v {
        "0" | "off" => Some(Direct::Off),
        "1" | "on" => Some(Direct::On),
        "require" => Some(Direct::Require),
        _ => None,
    }
}
fn simd(v: &str) -> Option<SimdCap> {
    match v {
        "baseline" => Some(SimdCap::Baseline),
        "avx2" => Some(SimdCap::Avx2),
        _ => None,
    }
}
fn text(v: &str) -> Option<Option<String>> {
    Some(Some(v.to_string()))
}

/// A table of settings: a struct with one field per setting, its rows ([`Def`]), and
/// the constructor from a lookup of the environment (unset or unparsable: the default).
macro_rules! table {
    (
        $(#[$sm:meta])*
        $S:ident ($scope:ident) {
            $(
                #[doc = $doc:literal]
                $field:ident: $ty:ty = $name:literal, default $def:expr, $dtext:literal, parse $parse:expr;
            )*
        }
    ) => {
        $(#[$sm])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $S {
            $(
                #[doc = concat!("`", $name, "` (default: ", $dtext, "): ", $doc)]
                pub $field: $ty,
            )*
        }
        impl $S {
            /// The rows of the table.
            pub const DEFS: &'static [Def] = &[
                $(Def { name: $name, scope: Scope::$scope, default: $dtext, meaning: $doc },)*
            ];
            /// The settings as `get` (a variable's value, if set) gives them.
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> $S {
                $S {
                    $(
                        $field: get($name).as_deref().and_then($parse).unwrap_or($def),
                    )*
                }
            }
            /// The settings of this process's environment now (not cached).
            pub fn from_env() -> $S {
                Self::from_lookup(|k| std::env::var(k).ok())
            }
        }
    };
}

table! {
    /// The job-wide settings (module comment).
    Job(Job) {
        #[doc = "bytes of a collective channel's slot (at least 64 per slot of the job); the pipeline's chunk"]
        segment: Option<usize> = "SHMPI_SEGMENT", default None,
            "1 MiB up to 8 ranks, 64 KiB up to 32, 16 KiB beyond", parse some_count;
        #[doc = "bytes of each of a pair's two pipe segments for large messages"]
        pipe_segment: Option<usize> = "SHMPI_PIPE_SEGMENT", default None,
            "64 KiB up to 32 ranks, 16 KiB beyond", parse some_count;
        #[doc = "the chain of large reductions (coll/chain.rs): 0 never, 1 whenever it can, unset by size and member count"]
        chain: Option<bool> = "SHMPI_CHAIN", default None, "by size", parse switch;
        #[doc = "the ring broadcast (coll/ring.rs): 0 never, 1 beyond the posted steps, unset by size and member count"]
        bcast_ring: Option<bool> = "SHMPI_BCAST_RING", default None, "by size", parse switch;
        #[doc = "the direct path (coll/direct.rs): 0/off, 1/on, require, unset automatic"]
        direct: Direct = "SHMPI_DIRECT", default Direct::Auto, "automatic", parse direct;
        #[doc = "the smallest vector (bytes) that takes the direct path, collectives and rendezvous messages"]
        direct_min: Option<usize> = "SHMPI_DIRECT_MIN", default None, "per collective (coll/select.rs)", parse some_count;
        #[doc = "tests: member 0 of an adaptive reduction wishes for the other path every N calls"]
        adapt_flip: Option<u32> = "SHMPI_ADAPT_FLIP", default None, "off", parse positive;
        #[doc = "copies into user buffers of at least this many bytes use streaming stores"]
        stream_min: usize = "SHMPI_STREAM_MIN", default 8 << 20, "8 MiB", parse count;
        #[doc = "collectives check that the members' arguments agree (0 turns it off)"]
        check_args: bool = "SHMPI_CHECK_ARGS", default true, "on", parse not_zero;
    }
}

table! {
    /// The per-rank settings (module comment).
    Rank(Rank) {
        #[doc = "microseconds a waiting rank spins before it yields"]
        spin_us: Option<u64> = "SHMPI_SPIN_US", default None, "shm/wait.rs SPIN", parse micros;
        #[doc = "microseconds a waiting rank yields before it sleeps"]
        yield_us: Option<u64> = "SHMPI_YIELD_US", default None, "shm/wait.rs YIELD", parse micros;
        #[doc = "microseconds a rank waits alone before it sleeps at once"]
        lonely_us: Option<u64> = "SHMPI_LONELY_US", default None, "shm/wait.rs LONELY", parse micros;
        #[doc = "the longest sleep on the doorbell, microseconds"]
        sleep_us: Option<u64> = "SHMPI_SLEEP_US", default None, "shm/wait.rs SLEEP", parse micros;
        #[doc = "1 or 0: whether this rank waits as on an oversubscribed machine"]
        oversubscribed: Option<bool> = "SHMPI_OVERSUBSCRIBED", default None, "more ranks than CPUs", parse bit;
        #[doc = "none: leave the placement of the ranks to the scheduler (shm/place.rs)"]
        bind: bool = "SHMPI_BIND", default true, "shm/place.rs placement", parse not_none;
        #[doc = "bytes of staging buffers for non-contiguous data that a rank keeps for reuse"]
        stage_keep: usize = "SHMPI_STAGE_KEEP", default 256 << 20, "256 MiB", parse count;
        #[doc = "baseline or avx2: caps the reduction kernels' SIMD level"]
        simd: SimdCap = "SHMPI_SIMD", default SimdCap::None, "what the CPU has", parse simd;
    }
}

table! {
    /// What mpiexec passes to each rank (runtime.rs parses and checks it); all unset in
    /// a singleton.
    Startup(Startup) {
        #[doc = "the rank's slot in the arena"]
        rank: Option<String> = "SHMPI_RANK", default None, "unset: a singleton", parse text;
        #[doc = "the size of the rank's MPI_COMM_WORLD"]
        size: Option<String> = "SHMPI_SIZE", default None, "unset: a singleton", parse text;
        #[doc = "the descriptor of the job's arena"]
        arena_fd: Option<String> = "SHMPI_ARENA_FD", default None, "unset: a singleton", parse text;
        #[doc = "process slots of the arena (the universe)"]
        slots: Option<String> = "SHMPI_SLOTS", default None, "SHMPI_SIZE", parse text;
        #[doc = "the ranks mpiexec started"]
        np: Option<String> = "SHMPI_NP", default None, "SHMPI_SIZE", parse text;
        #[doc = "mpiexec's process id (MPI_Comm_spawn's requests go to it)"]
        jobid: Option<String> = "SHMPI_JOBID", default None, "none", parse text;
        #[doc = "how many processes the slot held before this one"]
        generation: Option<String> = "SHMPI_GENERATION", default None, "0", parse text;
        #[doc = "a spawned world's first slot"]
        world_base: Option<String> = "SHMPI_WORLD_BASE", default None, "0", parse text;
        #[doc = "a spawned world's channel"]
        world_ctx: Option<String> = "SHMPI_WORLD_CTX", default None, "0", parse text;
        #[doc = "a spawned world's parent intercommunicator's channel"]
        parent_ctx: Option<String> = "SHMPI_PARENT_CTX", default None, "none", parse text;
        #[doc = "the parents' slots, comma-separated"]
        parent_group: Option<String> = "SHMPI_PARENT_GROUP", default None, "none", parse text;
        #[doc = "MPI_APPNUM of a spawned world"]
        appnum: Option<String> = "SHMPI_APPNUM", default None, "0", parse text;
    }
}

/// Words of the arena's settings block (shm `H_SETTINGS`); the job's settings use the
/// first [`Job::WORDS`].
pub const JOB_WORDS: usize = 32;
const _: () = assert!(Job::WORDS <= JOB_WORDS);

impl Job {
    /// Words the job's settings take.
    pub const WORDS: usize = 9;

    /// The settings as the words of the arena's settings block.
    pub fn to_words(&self) -> [u64; Job::WORDS] {
        [
            self.segment.to_word(),
            self.pipe_segment.to_word(),
            self.chain.to_word(),
            self.bcast_ring.to_word(),
            self.direct.to_word(),
            self.direct_min.to_word(),
            self.adapt_flip.to_word(),
            self.stream_min.to_word(),
            self.check_args.to_word(),
        ]
    }

    /// The settings the words of [`Job::to_words`] hold.
    pub fn from_words(w: &[u64; Job::WORDS]) -> Job {
        Job {
            segment: Word::from_word(w[0]),
            pipe_segment: Word::from_word(w[1]),
            chain: Word::from_word(w[2]),
            bcast_ring: Word::from_word(w[3]),
            direct: Word::from_word(w[4]),
            direct_min: Word::from_word(w[5]),
            adapt_flip: Word::from_word(w[6]),
            stream_min: Word::from_word(w[7]),
            check_args: Word::from_word(w[8]),
        }
    }
}

static JOB: OnceLock<Job> = OnceLock::new();
static RANK: OnceLock<Rank> = OnceLock::new();
static STARTUP: OnceLock<Startup> = OnceLock::new();

/// The job's settings: those of the arena once MPI_Init adopted them ([`adopt_job`]);
/// before (in unit tests, or a call before MPI_Init), this process's environment's.
pub fn job() -> &'static Job {
    JOB.get_or_init(Job::from_env)
}

/// Makes `s` (read from the job's arena) this process's job settings. False if the
/// settings were already read with other values (something read them before MPI_Init).
pub fn adopt_job(s: Job) -> bool {
    let want = s.clone();
    JOB.get_or_init(|| s) == &want
}

/// This process's own settings.
pub fn rank() -> &'static Rank {
    RANK.get_or_init(Rank::from_env)
}

/// What mpiexec passed to this process.
pub fn startup() -> &'static Startup {
    STARTUP.get_or_init(Startup::from_env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(kv: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| kv.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn defaults() {
        let j = Job::from_lookup(|_| None);
        assert_eq!(j.segment, None);
        assert_eq!(j.direct, Direct::Auto);
        assert_eq!(j.stream_min, 8 << 20);
        assert!(j.check_args);
        let r = Rank::from_lookup(|_| None);
        assert!(r.bind);
        assert_eq!(r.simd, SimdCap::None);
        assert_eq!(Startup::from_lookup(|_| None).rank, None);
    }

    #[test]
    fn parses() {
        let j = Job::from_lookup(lookup(&[
            ("SHMPI_SEGMENT", "4096"),
            ("SHMPI_CHAIN", "off"),
            ("SHMPI_BCAST_RING", "1"),
            ("SHMPI_DIRECT", "require"),
            ("SHMPI_DIRECT_MIN", "bad"),
            ("SHMPI_ADAPT_FLIP", "0"),
            ("SHMPI_CHECK_ARGS", "0"),
        ]));
        assert_eq!(j.segment, Some(4096));
        assert_eq!(j.chain, Some(false));
        assert_eq!(j.bcast_ring, Some(true));
        assert_eq!(j.direct, Direct::Require);
        assert_eq!(j.direct_min, None);
        assert_eq!(j.adapt_flip, None);
        assert!(!j.check_args);
        let r = Rank::from_lookup(lookup(&[
            ("SHMPI_BIND", "none"),
            ("SHMPI_OVERSUBSCRIBED", "on"),
            ("SHMPI_SIMD", "avx2"),
        ]));
        assert!(!r.bind);
        assert_eq!(r.oversubscribed, None);
        assert_eq!(r.simd, SimdCap::Avx2);
    }

    #[test]
    fn words_round_trip() {
        let all = [
            Job::from_lookup(|_| None),
            Job::from_lookup(lookup(&[
                ("SHMPI_SEGMENT", "0"),
                ("SHMPI_PIPE_SEGMENT", "64"),
                ("SHMPI_CHAIN", "1"),
                ("SHMPI_BCAST_RING", "0"),
                ("SHMPI_DIRECT", "0"),
                ("SHMPI_DIRECT_MIN", "1"),
                ("SHMPI_ADAPT_FLIP", "3"),
                ("SHMPI_STREAM_MIN", "0"),
                ("SHMPI_CHECK_ARGS", "0"),
            ])),
        ];
        for j in all {
            assert_eq!(Job::from_words(&j.to_words()), j);
        }
        assert_eq!(Job::DEFS.len(), Job::WORDS);
    }

    #[test]
    fn names_unique() {
        let mut names: Vec<&str> = [Job::DEFS, Rank::DEFS, Startup::DEFS]
            .iter()
            .flat_map(|d| d.iter().map(|d| d.name))
            .collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
