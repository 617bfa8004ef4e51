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
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::cranelift::NativeCode;

/// Compiles the case of a value; `None` declines.
pub type CaseCompiler = Box<dyn FnMut(u64) -> Option<NativeCode>>;

/// The cases of one flexswitch. Residual code reads `len` and `entries`
/// directly (hence `repr(C)` and the fixed field order).
#[repr(C)]
pub struct FlexTable {
    len: usize,
    entries: *const [u64; 2],
    inner: RefCell<Inner>,
}

struct Inner {
    entries: Vec<[u64; 2]>,
    code: Vec<NativeCode>,
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
    pub fn new(max_cases: usize, compile: CaseCompiler) -> std::rc::Rc<FlexTable> {
        std::rc::Rc::new(FlexTable {
            len: 0,
            entries: std::ptr::null(),
            inner: RefCell::new(Inner { entries: vec![], code: vec![], compile, max_cases, misses: 0, declined: 0 }),
        })
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
pub extern "C" fn flex_miss(table: *const FlexTable, value: u64) -> usize {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: residual code passes the table it was compiled with, which
        // its machine code keeps alive.
        let table = unsafe { &*table };
        // A reentrant miss (the compiler itself running residual code of this
        // table) declines rather than borrowing twice.
        let Ok(mut inner) = table.inner.try_borrow_mut() else { return 0 };
        inner.misses += 1;
        MISSES.fetch_add(1, Ordering::Relaxed);
        if inner.entries.len() >= inner.max_cases {
            inner.declined += 1;
            return 0;
        }
        let Some(code) = (inner.compile)(value) else {
            inner.declined += 1;
            return 0;
        };
        let entry = code.tail_entry() as usize;
        inner.entries.push([value, entry as u64]);
        inner.code.push(code);
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
