//! The compiler wrapper: mpicc, mpicxx (mpic++, mpiCC), mpif77, mpif90, mpifort.
//!
//! One binary, installed under several names; argv[0] picks the language. The install
//! prefix is the parent of the directory holding the binary (`<prefix>/bin/mpicc`, the
//! symbolic links resolved), with the header in `<prefix>/include` and the library in
//! `<prefix>/lib`; SHMPI_PREFIX overrides it. The tree can therefore be moved as a whole.
//!
//! The wrapper runs the underlying compiler with `-I<prefix>/include` (and, for gfortran
//! 10 or newer, `-fallow-argument-mismatch -fallow-invalid-boz` as MPICH's mpifort
//! passes), the user's arguments unchanged and in order, and, when linking, `-L<prefix>/lib
//! -Wl,-rpath,<prefix>/lib -lmpi`. `-show` (MPICH) and `-showme`/`--showme` (Open MPI)
//! print the command instead of running it.
//!
//! Versions: `-v` prints `mpicc for shmpi version X.Y.Z (MPI 3.1)` (the form of MPICH's
//! `mpicc -v`) and then runs the compiler with `-v`; `--version` runs the compiler's
//! `--version` and then prints the same line; `-showme:version` prints
//! `mpicc: shmpi X.Y.Z (MPI 3.1, Language: C)` (the form of Open MPI's). X.Y.Z is the
//! package version, MPI 3.1 the MPI_VERSION.MPI_SUBVERSION the header announces.
#![deny(unsafe_code)]
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

// The header generator's list of values it changes on purpose: MPI_VERSION and
// MPI_SUBVERSION of the installed mpi.h.
#[allow(dead_code)]
#[path = "../../build_support/header.rs"]
mod header;

/// shmpi's version (the package version of Cargo.toml).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The MPI version the header announces: "3.1".
fn mpi_version() -> String {
    let get = |name: &str| {
        header::OVERRIDDEN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    };
    format!("{}.{}", get("MPI_VERSION"), get("MPI_SUBVERSION"))
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Lang {
    C,
    Cxx,
    Fortran,
}

impl Lang {
    fn from_argv0(argv0: &str) -> Lang {
        let base = Path::new(argv0)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match base.as_str() {
            "mpicxx" | "mpic++" | "mpiCC" | "mpicpc" => Lang::Cxx,
            "mpif77" | "mpif90" | "mpifort" | "mpif95" => Lang::Fortran,
            b if b.starts_with("mpicxx") || b.starts_with("mpic++") => Lang::Cxx,
            b if b.starts_with("mpif") => Lang::Fortran,
            _ => Lang::C,
        }
    }
    fn env_vars(self) -> &'static [&'static str] {
        match self {
            Lang::C => &["MPICH_CC", "OMPI_CC", "SHMPI_CC"],
            Lang::Cxx => &["MPICH_CXX", "OMPI_CXX", "SHMPI_CXX"],
            Lang::Fortran => &["MPICH_FC", "MPICH_F90", "OMPI_FC", "SHMPI_FC"],
        }
    }
    fn default_compiler(self) -> &'static str {
        match self {
            Lang::C => "cc",
            Lang::Cxx => "c++",
            Lang::Fortran => "gfortran",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Lang::C => "mpicc",
            Lang::Cxx => "mpicxx",
            Lang::Fortran => "mpifort",
        }
    }
    /// The language as Open MPI's `-showme:version` names it.
    fn language(self) -> &'static str {
        match self {
            Lang::C => "C",
            Lang::Cxx => "C++",
            Lang::Fortran => "Fortran",
        }
    }
}

/// What the wrapper was asked to do besides compiling.
#[derive(PartialEq, Debug)]
enum Mode {
    Run,
    /// Print the whole command.
    Show,
    /// Print the compile flags only (`--showme:compile`).
    CompileFlags,
    /// Print the link flags only (`--showme:link`).
    LinkFlags,
    IncDirs,
    LibDirs,
    Libs,
    /// `-showme:version`.
    Version,
    /// `-showme:command`: the underlying compiler.
    Command,
    Help,
}

fn prefix() -> PathBuf {
    if let Some(p) = std::env::var_os("SHMPI_PREFIX").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe()
        .or_else(|_| std::fs::read_link("/proc/self/exe"))
        .unwrap_or_else(|_| PathBuf::from("/usr/local/bin/mpicc"));
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/usr/local"))
}

/// The underlying compiler, split into words (`MPICH_CC="ccache gcc"` works).
fn compiler(lang: Lang, over: Option<String>) -> Vec<String> {
    let chosen = over.or_else(|| {
        lang.env_vars()
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
    });
    let c = chosen.unwrap_or_else(|| lang.default_compiler().to_string());
    c.split_whitespace().map(str::to_string).collect()
}

/// The flags MPICH's mpifort passes to gfortran 10 or newer: mpif.h declares no
/// interfaces, so one program passes buffers of different types to the same routine
/// (an error since gfortran 10), and old code initialises INTEGERs with BOZ constants
/// outside DATA statements. SHMPI_FCFLAGS replaces them (empty: none); flags given on
/// the command line come after them, so `-fno-allow-argument-mismatch` still wins.
fn fortran_flags(fc: &[String]) -> Vec<String> {
    if let Some(v) = std::env::var_os("SHMPI_FCFLAGS") {
        return v
            .to_string_lossy()
            .split_whitespace()
            .map(str::to_string)
            .collect();
    }
    match gfortran_major(fc) {
        Some(m) if m >= 10 => vec![
            "-fallow-argument-mismatch".into(),
            "-fallow-invalid-boz".into(),
        ],
        _ => Vec::new(),
    }
}

/// The major version of the compiler when it is GNU Fortran (whatever its name:
/// `gfortran-12`, `f95`, `ccache gfortran`), otherwise None.
fn gfortran_major(fc: &[String]) -> Option<u32> {
    let run = |arg: &str| {
        Command::new(&fc[0])
            .args(&fc[1..])
            .arg(arg)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let banner = run("--version")?;
    if !banner.lines().next()?.contains("GNU Fortran") {
        return None;
    }
    run("-dumpversion")?.trim().split('.').next()?.parse().ok()
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn main() {
    let mut argv = std::env::args_os();
    let argv0 = argv
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lang = Lang::from_argv0(&argv0);
    // The name it was called by (mpif77, mpif90, mpifort, ...), for messages.
    let tool = Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| lang.name().to_string());
    let mut mode = Mode::Run;
    let mut over: Option<String> = None;
    let mut force_link: Option<bool> = None;
    let mut user: Vec<OsString> = Vec::new();
    for a in argv {
        // Open MPI accepts its -showme options with one dash or two.
        let showme = a
            .to_str()
            .and_then(|s| s.strip_prefix("--").or_else(|| s.strip_prefix('-')))
            .filter(|s| *s == "showme" || s.starts_with("showme:"));
        if let Some(opt) = showme {
            mode = match opt {
                "showme" => Mode::Show,
                "showme:compile" => Mode::CompileFlags,
                "showme:link" => Mode::LinkFlags,
                "showme:incdirs" => Mode::IncDirs,
                "showme:libdirs" => Mode::LibDirs,
                "showme:libs" => Mode::Libs,
                "showme:version" => Mode::Version,
                "showme:command" => Mode::Command,
                _ => Mode::Help,
            };
            continue;
        }
        match a.to_str() {
            Some("-show") => mode = Mode::Show,
            Some("-compile-info") | Some("-compile_info") => {
                mode = Mode::Show;
                force_link = Some(false)
            }
            Some("-link-info") | Some("-link_info") => {
                mode = Mode::Show;
                force_link = Some(true)
            }
            Some("-help") => mode = Mode::Help,
            Some(s) if s.starts_with("-cc=") || s.starts_with("-cxx=") || s.starts_with("-fc=") => {
                over = s.split_once('=').map(|(_, v)| v.to_string())
            }
            _ => user.push(a),
        }
    }
    let prefix = prefix();
    let inc = prefix.join("include");
    let lib = prefix.join("lib");
    let cc = compiler(lang, over);
    if cc.is_empty() {
        eprintln!("{tool}: no compiler configured");
        std::process::exit(1);
    }

    let mut compile_flags = vec![format!("-I{}", inc.display())];
    if lang == Lang::Fortran {
        compile_flags.extend(fortran_flags(&cc));
    }
    let mut libs = Vec::new();
    if lang == Lang::Fortran
        && (lib.join("libmpifort.so").exists() || lib.join("libmpifort.a").exists())
    {
        libs.push("-lmpifort".to_string());
    }
    libs.push("-lmpi".to_string());
    let mut link_flags = vec![
        format!("-L{}", lib.display()),
        format!("-Wl,-rpath,{}", lib.display()),
    ];
    link_flags.extend(libs.iter().cloned());

    // Only compiling, preprocessing or generating dependencies: no link flags. Neither
    // when the compiler is only asked about itself (`mpicc -v`, `mpicc --version`).
    let linking = !user.iter().any(|a| {
        matches!(
            a.as_bytes(),
            b"-c" | b"-E" | b"-S" | b"-M" | b"-MM" | b"-fsyntax-only"
        )
    }) && !user.iter().all(|a| {
        matches!(
            a.as_bytes(),
            b"-v" | b"--version" | b"-dumpversion" | b"-dumpfullversion" | b"-dumpmachine"
        )
    });
    // `mpicc -show` alone prints the whole compile-and-link line (build tools such as
    // rsmpi's build script parse -I/-L/-l flags out of it).
    let linking = force_link.unwrap_or(linking || (mode == Mode::Show && user.is_empty()));
    let asks = |s: &str| user.iter().any(|a| a.as_bytes() == s.as_bytes());

    let mut cmd: Vec<OsString> = cc[1..].iter().map(OsString::from).collect();
    cmd.extend(compile_flags.iter().map(OsString::from));
    cmd.extend(user.iter().cloned());
    if linking {
        cmd.extend(link_flags.iter().map(OsString::from));
    }

    let version_line = format!("{tool} for shmpi version {VERSION} (MPI {})", mpi_version());
    match mode {
        Mode::Run if asks("--version") => {
            // The compiler's own banner first (tools read its first line), then shmpi's.
            match Command::new(&cc[0]).args(&cmd).status() {
                Ok(st) => {
                    println!("{version_line}");
                    std::process::exit(st.code().unwrap_or(1));
                }
                Err(err) => {
                    eprintln!("{tool}: cannot run '{}': {err}", cc[0]);
                    std::process::exit(127);
                }
            }
        }
        Mode::Run => {
            if asks("-v") {
                // As MPICH's wrappers: the wrapper's version, then the compiler's -v.
                use std::io::Write;
                println!("{version_line}");
                let _ = std::io::stdout().flush();
            }
            let err = Command::new(&cc[0]).args(&cmd).exec();
            eprintln!("{tool}: cannot run '{}': {err}", cc[0]);
            std::process::exit(127);
        }
        Mode::Show => {
            let words: Vec<String> = std::iter::once(cc[0].clone())
                .chain(cmd.iter().map(|a| quote(&a.to_string_lossy())))
                .collect();
            println!("{}", words.join(" "));
        }
        Mode::CompileFlags => println!("{}", compile_flags.join(" ")),
        Mode::LinkFlags => println!("{}", link_flags.join(" ")),
        Mode::IncDirs => println!("{}", inc.display()),
        Mode::LibDirs => println!("{}", lib.display()),
        Mode::Libs => println!(
            "{}",
            libs.iter()
                .map(|l| l.trim_start_matches("-l"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Mode::Version => println!(
            "{tool}: shmpi {VERSION} (MPI {}, Language: {})",
            mpi_version(),
            lang.language()
        ),
        Mode::Command => println!("{}", cc.join(" ")),
        Mode::Help => println!(
            "Usage: {tool} [-show | -showme[:compile|:link|:incdirs|:libdirs|:libs|:version|:command]]\n\
             \x20      [-compile-info | -link-info] [{}=COMPILER] compiler-arguments...\n\
             Runs {} (or the compiler {} names) with the flags of\n\
             shmpi {VERSION} (MPI {}) installed in {}.{}",
            match lang {
                Lang::C => "-cc",
                Lang::Cxx => "-cxx",
                Lang::Fortran => "-fc",
            },
            lang.default_compiler(),
            lang.env_vars().join(", "),
            mpi_version(),
            prefix.display(),
            if lang == Lang::Fortran {
                "\nWith gfortran 10 or newer it adds -fallow-argument-mismatch -fallow-invalid-boz\n\
                 (SHMPI_FCFLAGS replaces them; later -fno-allow-* flags override them)."
            } else {
                ""
            }
        ),
    }
}
