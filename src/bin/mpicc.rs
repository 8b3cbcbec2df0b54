//! The compiler wrapper: mpicc, mpicxx (mpic++, mpiCC), mpif77, mpif90, mpifort.
//!
//! One binary, installed under several names; argv[0] picks the language. The install
//! prefix is the parent of the directory holding the binary (`<prefix>/bin/mpicc`), with
//! the header in `<prefix>/include` and the library in `<prefix>/lib`.
//!
//! The wrapper runs the underlying compiler with `-I<prefix>/include`, the user's
//! arguments unchanged and in order, and, when linking, `-L<prefix>/lib
//! -Wl,-rpath,<prefix>/lib -lmpi`. `-show` (MPICH) and `--showme` (Open MPI) print the
//! command instead of running it.
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    Version,
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

/// Whether the compiler is gfortran 10 or newer (which needs
/// -fallow-argument-mismatch for the untyped buffers of mpif.h's interfaces).
fn gfortran_needs_mismatch_flag(cc: &[String]) -> bool {
    let Some(last) = cc.last() else { return false };
    if !last.contains("gfortran") {
        return false;
    }
    let Ok(out) = Command::new(&cc[0])
        .args(&cc[1..])
        .arg("-dumpversion")
        .output()
    else {
        return false;
    };
    let v = String::from_utf8_lossy(&out.stdout);
    v.trim()
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| m >= 10)
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
    let mut mode = Mode::Run;
    let mut over: Option<String> = None;
    let mut force_link: Option<bool> = None;
    let mut user: Vec<OsString> = Vec::new();
    for a in argv {
        match a.to_str() {
            Some("-show") | Some("--showme") | Some("-showme") => mode = Mode::Show,
            Some("-compile-info") => {
                mode = Mode::Show;
                force_link = Some(false)
            }
            Some("-link-info") => {
                mode = Mode::Show;
                force_link = Some(true)
            }
            Some("--showme:compile") => mode = Mode::CompileFlags,
            Some("--showme:link") => mode = Mode::LinkFlags,
            Some("--showme:incdirs") => mode = Mode::IncDirs,
            Some("--showme:libdirs") => mode = Mode::LibDirs,
            Some("--showme:libs") => mode = Mode::Libs,
            Some("--showme:version") => mode = Mode::Version,
            Some("--showme:help") | Some("-help") => mode = Mode::Help,
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
        eprintln!("{}: no compiler configured", lang.name());
        std::process::exit(1);
    }

    let mut compile_flags = vec![format!("-I{}", inc.display())];
    if lang == Lang::Fortran && gfortran_needs_mismatch_flag(&cc) {
        compile_flags.push("-fallow-argument-mismatch".into());
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

    // Only compiling, preprocessing or generating dependencies: no link flags.
    let linking = !user.iter().any(|a| {
        matches!(
            a.as_bytes(),
            b"-c" | b"-E" | b"-S" | b"-M" | b"-MM" | b"-fsyntax-only"
        )
    }) && !user.is_empty();
    // `mpicc -show` alone prints the whole compile-and-link line (build tools such as
    // rsmpi's build script parse -I/-L/-l flags out of it).
    let linking = force_link.unwrap_or(linking || (mode == Mode::Show && user.is_empty()));

    let mut cmd: Vec<OsString> = cc[1..].iter().map(OsString::from).collect();
    cmd.extend(compile_flags.iter().map(OsString::from));
    cmd.extend(user.iter().cloned());
    if linking {
        cmd.extend(link_flags.iter().map(OsString::from));
    }

    match mode {
        Mode::Run => {
            let err = Command::new(&cc[0]).args(&cmd).exec();
            eprintln!("{}: cannot run '{}': {err}", lang.name(), cc[0]);
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
        Mode::Version => println!("{} (shmpi) {}", lang.name(), env!("CARGO_PKG_VERSION")),
        Mode::Help => println!(
            "Usage: {} [-show | --showme[:compile|:link|:incdirs|:libdirs|:libs|:version]] \
             [-cc=COMPILER] compiler-arguments...\n\
             Runs {} with the MPI include and link flags (compiler chosen by {}).",
            lang.name(),
            lang.default_compiler(),
            lang.env_vars().join(", ")
        ),
    }
}
