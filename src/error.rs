//! MPI error classes and codes, and the messages that say what went wrong.
//!
//! An engine function returns `Result<_, MpiError>`; the entry-point macro (ffi/mod.rs)
//! adds the function name and the rank, records the message, and hands back an error
//! *code*: the class in the low 7 bits and a message-ring slot above them, so that
//! MPI_Error_class recovers the class and MPI_Error_string the full text.
#![deny(unsafe_code)]
use crate::abi::*;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq)]
pub struct MpiError {
    pub class: i32,
    pub msg: String,
}

pub type MpiResult<T> = Result<T, MpiError>;

impl MpiError {
    pub fn new(class: i32, msg: impl Into<String>) -> Self {
        MpiError {
            class,
            msg: msg.into(),
        }
    }
}

/// Shorthand: `Err(err(MPI_ERR_COUNT, format!(..)))`.
pub fn err(class: i32, msg: impl Into<String>) -> MpiError {
    MpiError::new(class, msg)
}

/// The name of an error class, as used in messages.
pub fn class_name(class: i32) -> &'static str {
    match class {
        MPI_SUCCESS => "MPI_SUCCESS",
        MPI_ERR_BUFFER => "MPI_ERR_BUFFER",
        MPI_ERR_COUNT => "MPI_ERR_COUNT",
        MPI_ERR_TYPE => "MPI_ERR_TYPE",
        MPI_ERR_TAG => "MPI_ERR_TAG",
        MPI_ERR_COMM => "MPI_ERR_COMM",
        MPI_ERR_RANK => "MPI_ERR_RANK",
        MPI_ERR_ROOT => "MPI_ERR_ROOT",
        MPI_ERR_GROUP => "MPI_ERR_GROUP",
        MPI_ERR_OP => "MPI_ERR_OP",
        MPI_ERR_TOPOLOGY => "MPI_ERR_TOPOLOGY",
        MPI_ERR_DIMS => "MPI_ERR_DIMS",
        MPI_ERR_ARG => "MPI_ERR_ARG",
        MPI_ERR_UNKNOWN => "MPI_ERR_UNKNOWN",
        MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE",
        MPI_ERR_OTHER => "MPI_ERR_OTHER",
        MPI_ERR_INTERN => "MPI_ERR_INTERN",
        MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS",
        MPI_ERR_PENDING => "MPI_ERR_PENDING",
        MPI_ERR_REQUEST => "MPI_ERR_REQUEST",
        MPI_ERR_INFO => "MPI_ERR_INFO",
        MPI_ERR_INFO_KEY => "MPI_ERR_INFO_KEY",
        MPI_ERR_INFO_VALUE => "MPI_ERR_INFO_VALUE",
        MPI_ERR_INFO_NOKEY => "MPI_ERR_INFO_NOKEY",
        MPI_ERR_NO_MEM => "MPI_ERR_NO_MEM",
        MPI_ERR_NOT_SAME => "MPI_ERR_NOT_SAME",
        MPI_ERR_KEYVAL => "MPI_ERR_KEYVAL",
        MPI_ERR_SIZE => "MPI_ERR_SIZE",
        MPI_ERR_UNSUPPORTED_OPERATION => "MPI_ERR_UNSUPPORTED_OPERATION",
        MPI_ERR_PROC_ABORTED => "MPI_ERR_PROC_ABORTED",
        MPI_ERR_VALUE_TOO_LARGE => "MPI_ERR_VALUE_TOO_LARGE",
        MPI_ERR_SPAWN => "MPI_ERR_SPAWN",
        c => other_class(c).map_or("MPI_ERR_UNKNOWN", |o| o.0),
    }
}

/// The predefined classes of what shmpi does not implement (MPI-IO, one-sided
/// communication, the name service, the tools interface, sessions), by value (MPICH's):
/// name and the standard's text (MPI-4.0 Tables 9.1 and 15.x). A program may still
/// meet them: from MPI_Error_class/MPI_Error_string of their values, or from a user's
/// conversion function (MPI_ERR_CONVERSION).
fn other_class(class: i32) -> Option<(&'static str, &'static str)> {
    Some(match class {
        20 => ("MPI_ERR_ACCESS", "Permission denied"),
        21 => ("MPI_ERR_AMODE", "Error related to the amode passed to MPI_FILE_OPEN"),
        22 => ("MPI_ERR_BAD_FILE", "Invalid file name (e.g., path name too long)"),
        23 => ("MPI_ERR_CONVERSION", "An error occurred in a user supplied data conversion function"),
        24 => ("MPI_ERR_DUP_DATAREP", "Conversion functions could not be registered because a data representation identifier that was already defined was passed to MPI_REGISTER_DATAREP"),
        25 => ("MPI_ERR_FILE_EXISTS", "File exists"),
        26 => ("MPI_ERR_FILE_IN_USE", "File operation could not be completed, as the file is currently open by some process"),
        27 => ("MPI_ERR_FILE", "Invalid file handle"),
        32 => ("MPI_ERR_IO", "Other I/O error"),
        33 => ("MPI_ERR_NAME", "Invalid service name passed to MPI_LOOKUP_NAME"),
        36 => ("MPI_ERR_NO_SPACE", "Not enough space"),
        37 => ("MPI_ERR_NO_SUCH_FILE", "File does not exist"),
        38 => ("MPI_ERR_PORT", "Invalid port name passed to MPI_COMM_CONNECT"),
        39 => ("MPI_ERR_QUOTA", "Quota exceeded"),
        40 => ("MPI_ERR_READ_ONLY", "Read-only file or file system"),
        41 => ("MPI_ERR_SERVICE", "Invalid service name passed to MPI_UNPUBLISH_NAME"),
        43 => ("MPI_ERR_UNSUPPORTED_DATAREP", "Unsupported datarep passed to MPI_FILE_SET_VIEW"),
        45 => ("MPI_ERR_WIN", "Invalid win argument"),
        46 => ("MPI_ERR_BASE", "Invalid base passed to MPI_FREE_MEM"),
        47 => ("MPI_ERR_LOCKTYPE", "Invalid locktype argument"),
        49 => ("MPI_ERR_RMA_CONFLICT", "Conflicting accesses to window"),
        50 => ("MPI_ERR_RMA_SYNC", "Erroneous RMA synchronization"),
        52 => ("MPI_ERR_DISP", "Invalid disp argument"),
        53 => ("MPI_ERR_ASSERT", "Invalid assert argument"),
        55 => ("MPI_ERR_RMA_RANGE", "Target memory is not part of the window"),
        56 => ("MPI_ERR_RMA_ATTACH", "Memory cannot be attached"),
        57 => ("MPI_ERR_RMA_SHARED", "Memory cannot be shared"),
        58 => ("MPI_ERR_RMA_FLAVOR", "Passed window has the wrong flavor for the called function"),
        59 => ("MPI_T_ERR_MEMORY", "Out of memory"),
        60 => ("MPI_T_ERR_NOT_INITIALIZED", "Interface not initialized"),
        61 => ("MPI_T_ERR_CANNOT_INIT", "Interface not in the state to be initialized"),
        62 => ("MPI_T_ERR_INVALID_INDEX", "The index is invalid or has been deleted"),
        63 => ("MPI_T_ERR_INVALID_ITEM", "Item index queried is out of range"),
        64 => ("MPI_T_ERR_INVALID_HANDLE", "The handle is invalid"),
        65 => ("MPI_T_ERR_OUT_OF_HANDLES", "No more handles available"),
        66 => ("MPI_T_ERR_OUT_OF_SESSIONS", "No more sessions available"),
        67 => ("MPI_T_ERR_INVALID_SESSION", "Session argument is not a valid session"),
        68 => ("MPI_T_ERR_CVAR_SET_NOT_NOW", "Variable cannot be set at this moment"),
        69 => ("MPI_T_ERR_CVAR_SET_NEVER", "Variable cannot be set until end of execution"),
        70 => ("MPI_T_ERR_PVAR_NO_STARTSTOP", "Variable cannot be started or stopped"),
        71 => ("MPI_T_ERR_PVAR_NO_WRITE", "Variable cannot be written or reset"),
        72 => ("MPI_T_ERR_PVAR_NO_ATOMIC", "Variable cannot be read and written atomically"),
        73 => ("MPI_T_ERR_INVALID_NAME", "Name does not match"),
        74 => ("MPI_T_ERR_INVALID", "Invalid use of the interface or bad parameter value(s)"),
        75 => ("MPI_ERR_SESSION", "Invalid session handle"),
        78 => ("MPI_T_ERR_NOT_SUPPORTED", "Requested functionality not supported"),
        _ => return None,
    })
}

/// The standard text of an error class.
pub fn class_text(class: i32) -> &'static str {
    match class {
        MPI_SUCCESS => "No MPI error",
        MPI_ERR_BUFFER => "Invalid buffer pointer",
        MPI_ERR_COUNT => "Invalid count argument",
        MPI_ERR_TYPE => "Invalid datatype argument",
        MPI_ERR_TAG => "Invalid tag argument",
        MPI_ERR_COMM => "Invalid communicator",
        MPI_ERR_RANK => "Invalid rank",
        MPI_ERR_ROOT => "Invalid root",
        MPI_ERR_GROUP => "Invalid group",
        MPI_ERR_OP => "Invalid operation",
        MPI_ERR_TOPOLOGY => "Invalid topology",
        MPI_ERR_DIMS => "Invalid dimension argument",
        MPI_ERR_ARG => "Invalid argument of some other kind",
        MPI_ERR_UNKNOWN => "Unknown error",
        MPI_ERR_TRUNCATE => "Message truncated on receive",
        MPI_ERR_OTHER => "Known error not in this list",
        MPI_ERR_INTERN => "Internal MPI (implementation) error",
        MPI_ERR_IN_STATUS => "Error code is in status",
        MPI_ERR_PENDING => "Pending request",
        MPI_ERR_REQUEST => "Invalid request (handle)",
        MPI_ERR_INFO => "Invalid info argument",
        MPI_ERR_INFO_KEY => "Key longer than MPI_MAX_INFO_KEY",
        MPI_ERR_INFO_VALUE => "Value longer than MPI_MAX_INFO_VAL",
        MPI_ERR_INFO_NOKEY => "Invalid key passed to MPI_INFO_DELETE",
        MPI_ERR_NO_MEM => "MPI_ALLOC_MEM failed because memory is exhausted",
        MPI_ERR_NOT_SAME => "Collective argument not identical on all processes",
        MPI_ERR_KEYVAL => "Invalid keyval",
        MPI_ERR_SIZE => "Invalid size argument",
        MPI_ERR_UNSUPPORTED_OPERATION => "Unsupported operation",
        MPI_ERR_PROC_ABORTED => "Operation failed because a peer process has aborted",
        MPI_ERR_VALUE_TOO_LARGE => "Value is too large to store",
        MPI_ERR_SPAWN => "Error in spawning processes",
        c => other_class(c).map_or("Unknown error class", |o| o.1),
    }
}

/// Highest predefined class; codes above 127 carry a message slot.
pub const LAST_CLASS: i32 = 78;
const RING: usize = 256;

struct Ring {
    next: u32,
    msgs: Vec<(i32, String)>,
}

static MESSAGES: Mutex<Ring> = Mutex::new(Ring {
    next: 1,
    msgs: Vec::new(),
});

/// Records a full message for `class` and returns the error code that names it.
pub fn record(class: i32, full: String) -> i32 {
    if !(1..=LAST_CLASS).contains(&class) {
        return class;
    }
    let mut r = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    if r.msgs.is_empty() {
        r.msgs.resize(RING, (0, String::new()));
    }
    let k = r.next;
    r.next = if r.next >= (1 << 22) { 1 } else { r.next + 1 };
    let slot = k as usize % RING;
    r.msgs[slot] = (k as i32, full);
    class | ((k as i32) << 7)
}

/// Error classes and codes added by the program (MPI_Add_error_class/code), numbered
/// from `DYN_BASE` up, above every predefined code (MPI_ERR_LASTCODE): entry `i` is
/// value `DYN_BASE + i`, its class (itself for a class) and its string.
pub const DYN_BASE: i32 = MPI_ERR_LASTCODE + 1;

static DYNAMIC: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

/// Adds an error class (`class` None) or a code of `class`; returns its value.
pub fn add_dynamic(class: Option<i32>) -> MpiResult<i32> {
    if let Some(c) = class {
        if code_class(c) != Some(c) {
            return Err(err(
                MPI_ERR_ARG,
                format!("errorclass={c} is not an error class"),
            ));
        }
    }
    let mut d = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner());
    let v = i32::try_from(d.len())
        .ok()
        .and_then(|i| DYN_BASE.checked_add(i))
        .ok_or_else(|| err(MPI_ERR_OTHER, "no more error codes can be added"))?;
    d.push((class.unwrap_or(v), String::new()));
    Ok(v)
}

/// MPI_Add_error_string: the text of an added class or code.
pub fn set_dynamic_string(code: i32, text: String) -> MpiResult<()> {
    let mut d = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner());
    match code
        .checked_sub(DYN_BASE)
        .and_then(|i| d.get_mut(usize::try_from(i).ok()?))
    {
        Some(e) => {
            e.1 = text;
            Ok(())
        }
        None => Err(err(
            MPI_ERR_ARG,
            format!("errorcode={code} was not added by MPI_Add_error_class or MPI_Add_error_code (predefined codes keep their strings)"),
        )),
    }
}

/// The highest value added so far (MPI_LASTUSEDCODE), if any.
pub fn last_dynamic() -> Option<i32> {
    let n = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner()).len() as i32;
    (n > 0).then(|| DYN_BASE + n - 1)
}

fn dynamic(code: i32) -> Option<(i32, String)> {
    let i = usize::try_from(code.checked_sub(DYN_BASE)?).ok()?;
    DYNAMIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(i)
        .cloned()
}

/// The class of an error code (identity for classes).
pub fn code_class(code: i32) -> Option<i32> {
    if (0..=LAST_CLASS).contains(&code) || (100..=103).contains(&code) {
        return Some(code);
    }
    if code >= DYN_BASE {
        return dynamic(code).map(|(c, _)| c);
    }
    if code > 127 && code <= MPI_ERR_LASTCODE {
        let class = code & 0x7f;
        if (1..=LAST_CLASS).contains(&class) {
            return Some(class);
        }
    }
    None
}

/// The error a program's callback (attribute copy or delete, generalized request) ended
/// with by returning `rc` (not MPI_SUCCESS): a predefined class, with `msg`; a class or
/// code the program added (MPI_Add_error_class/code), passed on as it is, so that
/// MPI_Error_class and MPI_Error_string give the program's own class and string; a code
/// of this library (from an MPI call inside the callback), its class; anything else
/// MPI_ERR_UNKNOWN.
pub fn from_callback(rc: i32, msg: String) -> MpiError {
    let class = match code_class(rc) {
        Some(_) if rc >= DYN_BASE || (1..=LAST_CLASS).contains(&rc) => rc,
        Some(c) if c > 0 && recorded_message(rc).is_some() => c,
        _ => MPI_ERR_UNKNOWN,
    };
    MpiError::new(class, msg)
}

/// The full message of `code`, if this library handed it out and it is still in the
/// ring.
fn recorded_message(code: i32) -> Option<String> {
    let k = code >> 7;
    let r = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    match r.msgs.get(k as usize % RING) {
        Some((kk, m)) if k > 0 && *kk == k => Some(m.clone()),
        _ => None,
    }
}

/// The text of an error code: the recorded message if it is still in the ring, else the
/// class text.
pub fn code_string(code: i32) -> Option<String> {
    if code >= DYN_BASE {
        return dynamic(code).map(|(_, s)| s);
    }
    let class = code_class(code)?;
    if code > 127 && code == class | (code & !0x7f) && code & !0x7f != 0 {
        if let Some(m) = recorded_message(code) {
            return Some(m);
        }
    }
    Some(format!("{}: {}", class_name(class), class_text(class)))
}
