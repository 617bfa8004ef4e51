//! Promotion: flexswitches, whose cases are compiled when a value is first
//! seen at run time.
//!
//! A [`FlexTable`] belongs to one flexswitch of residual code. Residual code
//! scans its cases inline (value, code pointer) and tail-calls the matching
//! case with its frame, which holds the live values; on a miss it calls
//! [`flex_miss`], which runs the table's compiler for the new value (the
//! generating extension resumed from the state snapshotted at the switch, the
//! value now a constant), appends the case, and returns its code. The cases
//! are separate functions entered by tail call, so a loop through a switch
//! does not grow the stack (Cranelift cannot patch code, which is why cases
//! are not inlined into the switch).
//!
//! Growth is bounded: past `max_cases`, and when the compiler declines, the
//! miss returns no code and residual code leaves with the status
//! [`crate::ops::ErrorKind::Resume`], the live values and the promoted value
//! in its frame, for the caller to continue in the interpreter.
//!
//! Memory: a table holds its cases' machine code (about one page each, see
//! `shared/notes`) and the compiler closure with its snapshot (the JIT state at
//! the switch: a few words per live variable). A bounded switch therefore uses
//! bounded memory whatever the number of distinct values seen.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::cranelift::NativeCode;
use crate::driver::Stats;
use crate::residual::ResidualError;

/// A compiled case.
pub enum Case {
    /// Code the table keeps alive, and its listing.
    Owned(NativeCode, String),
    /// Code kept alive elsewhere (by the root function's tree of pieces,
    /// see `schedule`): its `tail` entry and its name. Cases may form loops
    /// (a piece whose switch resumes the state it was compiled for); no
    /// table owns such code, so no reference cycle keeps it alive.
    Shared(*const u8, String),
}

/// The code compiled below a root function for the states its switches
/// resume, owned by the root function.
pub trait Pieces: std::fmt::Debug {
    /// Appends each piece's listing and its switches' cases to `out`.
    fn describe(&self, out: &mut String);
}

/// Compiles the case of a value; `None` declines.
pub type CaseCompiler = Box<dyn FnMut(u64) -> Option<Case>>;

/// Continues in the interpreter from a switch that got no case: given the
/// live values and the promoted value, returns the outputs of the residual
/// function the switch belongs to (or its error).
pub type Resumer = Rc<dyn Fn(&[u64], u64) -> Result<Vec<u64>, ResidualError>>;

/// The cases of one flexswitch. Residual code reads `len` and `entries`
/// directly (hence `repr(C)` and the fixed field order).
#[repr(C)]
pub struct FlexTable {
    len: usize,
    entries: *const [u64; 2],
    inner: RefCell<Inner>,
    resume: Option<Resumer>,
    stats: Option<&'static Stats>,
}

struct Inner {
    entries: Vec<[u64; 2]>,
    code: Vec<Option<NativeCode>>,
    listings: Vec<String>,
    compile: CaseCompiler,
    max_cases: usize,
    misses: u64,
    declined: u64,
}

static CASES: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Cases compiled and misses (callbacks into the compiler) so far, in every
/// thread: `(cases, misses)`.
pub fn global_counts() -> (u64, u64) {
    (CASES.load(Ordering::Relaxed), MISSES.load(Ordering::Relaxed))
}

impl std::fmt::Debug for FlexTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlexTable({} cases)", self.len)
    }
}

impl FlexTable {
    /// A table with no cases yet, at most `max_cases`, compiling with `compile`.
    pub fn new(max_cases: usize, compile: CaseCompiler) -> Rc<FlexTable> {
        FlexTable::resumable(max_cases, compile, None, None)
    }

    /// A table whose switch, when it gets no case, continues through `resume`
    /// (inside [`crate::residual::ResidualFn::call_words`]), counting in `stats`.
    pub fn resumable(
        max_cases: usize,
        compile: CaseCompiler,
        resume: Option<Resumer>,
        stats: Option<&'static Stats>,
    ) -> Rc<FlexTable> {
        Rc::new(FlexTable {
            len: 0,
            entries: std::ptr::null(),
            inner: RefCell::new(Inner {
                entries: vec![],
                code: vec![],
                listings: vec![],
                compile,
                max_cases,
                misses: 0,
                declined: 0,
            }),
            resume,
            stats,
        })
    }

    /// How to continue in the interpreter when this switch gets no case.
    pub fn resumer(&self) -> Option<Resumer> {
        self.resume.clone()
    }

    /// Appends the listing of every case (and of their switches' cases,
    /// indented) to `out`.
    pub fn describe(&self, out: &mut String, depth: usize) {
        let inner = self.inner.borrow();
        let pad = "    ".repeat(depth);
        for (k, entry) in inner.entries.iter().enumerate() {
            let Some(code) = &inner.code[k] else {
                out.push_str(&format!("{pad}case {}: {}\n", entry[0] as i64, inner.listings[k]));
                continue;
            };
            out.push_str(&format!("{pad}case {}:\n", entry[0] as i64));
            for line in inner.listings[k].lines() {
                out.push_str(&format!("{pad}    {line}\n"));
            }
            for (i, t) in code.switches().iter().enumerate() {
                out.push_str(&format!("{pad}    switch #{i}:\n"));
                t.describe(out, depth + 2);
            }
        }
    }

    /// Cases compiled so far.
    pub fn cases(&self) -> usize {
        self.len
    }

    /// Times residual code called back into the compiler.
    pub fn misses(&self) -> u64 {
        self.inner.borrow().misses
    }

    /// Misses that got no case (bound reached, or the compiler declined).
    pub fn declined(&self) -> u64 {
        self.inner.borrow().declined
    }

    /// The values that have cases, in the order they were seen.
    pub fn values(&self) -> Vec<u64> {
        self.inner.borrow().entries.iter().map(|e| e[0]).collect()
    }
}

/// Called by residual code when no case matches `value`: compiles one and
/// returns its entry (a `Tail`-convention function of the frame), or null.
///
/// # Safety
/// `table` must point to a live `FlexTable` (residual code passes the table
/// it was compiled with, which its machine code keeps alive).
pub unsafe extern "C" fn flex_miss(table: *const FlexTable, value: u64) -> usize {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: residual code passes the table it was compiled with, which
        // its machine code keeps alive.
        let table = unsafe { &*table };
        // A reentrant miss (the compiler itself running residual code of this
        // table) declines rather than borrowing twice.
        let Ok(mut inner) = table.inner.try_borrow_mut() else { return 0 };
        inner.misses += 1;
        MISSES.fetch_add(1, Ordering::Relaxed);
        let compiled = if inner.entries.len() >= inner.max_cases { None } else { (inner.compile)(value) };
        if let Some(s) = table.stats {
            s.flexswitch_missed(compiled.is_some());
        }
        let (entry, code, listing) = match compiled {
            Some(Case::Owned(code, listing)) => (code.tail_entry() as usize, Some(code), listing),
            Some(Case::Shared(entry, name)) => (entry as usize, None, name),
            None => {
                inner.declined += 1;
                return 0;
            }
        };
        inner.entries.push([value, entry as u64]);
        inner.code.push(code);
        inner.listings.push(listing);
        CASES.fetch_add(1, Ordering::Relaxed);
        // Publish for the inline scan: the vector may have moved.
        let (ptr, len) = (inner.entries.as_ptr(), inner.entries.len());
        drop(inner);
        // SAFETY: the fields residual code reads are only written here, by
        // the thread that runs the code.
        unsafe {
            let t = table as *const FlexTable as *mut FlexTable;
            (*t).entries = ptr;
            (*t).len = len;
        }
        entry
    }));
    outcome.unwrap_or(0)
}
