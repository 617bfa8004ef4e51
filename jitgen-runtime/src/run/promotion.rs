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
//! are not inlined into the switch). Once a switch has cases, the root they
//! belong to is compiled again with them fused in, a test per case before
//! the switch (`ResidualFn::fuse_pieces`, `ir::passes::fuse`); the table
//! stays for the values seen later. A fusion is tried where the root is
//! entered and, for a call that never enters it again (a whole program in
//! one call), where a case has been taken `HOT_HITS` times more
//! (`fusion::flex_hot`).
//!
//! Growth is bounded: past `max_cases`, and when the compiler declines, the
//! miss returns no code and residual code leaves with the status
//! [`crate::ir::ops::ErrorKind::Resume`], the live values and the promoted value
//! in its frame, for the caller to continue in the interpreter.
//!
//! Memory: a table holds its cases' machine code (about one page each, see
//! `shared/notes`) and the compiler closure with its snapshot (the JIT state at
//! the switch: a few words per live variable). A bounded switch therefore uses
//! bounded memory whatever the number of distinct values seen.
//!
//! ## Promotion in detail
//!
//! **Promotion** (`promotion.rs`, `compile/schedule/resume.rs`). A block may end with
//! `Terminator::FlexSwitch { value, live, switch }`. Its cases are separate residual
//! functions compiled when a value is first seen: residual functions use Cranelift's
//! `tail` convention (Rust enters them through a SystemV trampoline compiled once per
//! process), the switch stores the live values and the promoted value into the frame,
//! scans the Rust-owned `FlexTable` inline (pairs of value and code pointer, reloaded
//! at every dispatch since the vector may move) and tail-calls the match, so that a
//! chain of cases never grows the stack. A miss tail-calls a stub shared by all
//! residual code (`CraneliftBackend::miss_stub`, compiled once per process like the
//! trampoline), which calls `flex_miss` (it runs the table's case compiler, appends the
//! case and returns its code) and tail-calls the new case, or hands over. A flexswitch
//! on a constant (the lazily compiled side of a split) has at most one case, its
//! value's: it tail-calls the table's first case without a scan (fewer blocks for
//! Cranelift: compiling TLC factorial's loop, with two such guards at entry, took 3-4%
//! less).
//!
//! *How compilation resumes.* `hint!(e, promote)` on a red scalar is a resume point of
//! the generating extension, like the continuation of an inlined call: the extension
//! pushes the continuation frame (the value to come in its `__ret`) and calls
//! `Compilation::flexswitch(state, value, fns)`. The snapshot is that state: the chain of
//! virtual frames at the promotion, with the run-time reds replaced by slots (an input
//! of the case, a constant kept, or the promoted value); `fns` are the extension's
//! `__run`, the function that hands a promoted value to the continuation, and `__defer`.
//! No path is replayed: the state *is* where compilation stopped. A case compiles that
//! state with the live values as inputs and the value delivered as a constant, in a
//! compilation of its own (its own budget) that shares its root's *tree*. Memory: a
//! switch holds its snapshot (its frames: a word or two per live variable and a key
//! vector per frame) and two closures; each case is a piece of machine code (a page or
//! so, see `shared/notes`) with its listing. Green references inside a snapshot point
//! into the interpreter's data; they are only used while residual code of the switch
//! runs, which is entered under the portal's key and content check (or borrows them,
//! for `jit::specialize`, whose result carries their lifetime).
//!
//! *Pieces and the tree.* The code compiled for cases belongs to the root function (its
//! `ResidualFn` owns the tree: the pieces, their listings, a cache from resumed state
//! to piece); switches refer to the tree weakly and to pieces by entry address. A state
//! resumed again (same key, same layout of constants and inputs, same promoted value)
//! reuses its piece, so pieces may jump to each other in loops without reference
//! cycles. `Limits::max_cases` bounds a switch, `Limits::max_tree_cases` (1000) the
//! pieces under one root.
//!
//! *Lazy sides and the budget.* When the extension was given `set_defer` (macro-generated
//! compilations are), a red split made after `Limits::lazy_after_ops` residual
//! operations (2000 by default) does not queue its false side: the side becomes a
//! single-case switch on a constant, compiled when first taken; one never taken is never
//! compiled (`tests/lazy.rs`). So does, from the first operation, a side that leaves the
//! interpreter's loop while the other stays (a block of the portal from which its merge
//! point cannot be reached: a `return`, an error; `Compilation::fork_exit`,
//! `Compilation::split_exit`): a run leaves once, and each piece that reaches such an
//! exit no longer carries a copy of it (`jit::stats().lazy_sides` counts these switches
//! with the others). Past `Limits::max_ops` (20000 by default), each path is
//! deferred the same way at its next merge point and the pending ones at once. A loop
//! cut by the budget thus runs as pieces that reuse each other; TLR's square with a
//! budget of 30 operations compiles at most one piece per instruction, all within the
//! first 40 turns, and none more for 1000 turns (`tests/lazy.rs`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::cranelift::NativeCode;
use crate::ir::builder::{CaseTable, SwitchTable};
use crate::run::residual::ResidualError;
use crate::run::stats::Stats;

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

pub use crate::ir::builder::Pieces;

/// Compiles the case of a value; `None` declines.
pub type CaseCompiler = Box<dyn FnMut(u64) -> Option<Case>>;

/// Continues in the interpreter from a switch that got no case: given the
/// live values and the promoted value, returns the outputs of the residual
/// function the switch belongs to (or its error).
pub type Resumer = Rc<dyn Fn(&[u64], u64) -> Result<Vec<u64>, ResidualError>>;

/// The cases of one flexswitch. Residual code reads `cases` directly
/// (hence `repr(C)`, and `cases` first: the table's address is its).
#[repr(C)]
pub struct FlexTable {
    cases: CaseTable,
    inner: RefCell<Inner>,
    resume: Option<Resumer>,
    stats: Option<&'static Stats>,
    /// The pieces of the root the switch belongs to (see `fusion::flex_hot`).
    tree: RefCell<Option<std::rc::Weak<dyn Pieces>>>,
}

struct Inner {
    entries: Vec<[u64; 2]>,
    /// What residual code counts per case (see [`CaseTable::hits`]).
    hits: Vec<u64>,
    /// The address each case was added with (its piece's entry), where
    /// `entries` may hold another way into the same code since
    /// ([`FlexTable::redirect`]).
    origin: Vec<u64>,
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
        write!(f, "FlexTable({} cases)", self.cases.len)
    }
}

impl FlexTable {
    /// A table with no cases yet, at most `max_cases`, compiling with `compile`.
    pub fn new(max_cases: usize, compile: CaseCompiler) -> Rc<FlexTable> {
        FlexTable::resumable(max_cases, compile, None, None)
    }

    /// A table whose switch, when it gets no case, continues through `resume`
    /// (inside [`crate::run::residual::ResidualFn::call_words`]), counting in `stats`.
    pub fn resumable(
        max_cases: usize,
        compile: CaseCompiler,
        resume: Option<Resumer>,
        stats: Option<&'static Stats>,
    ) -> Rc<FlexTable> {
        Rc::new(FlexTable {
            cases: CaseTable { len: 0, entries: std::ptr::null(), hits: std::ptr::null_mut() },
            inner: RefCell::new(Inner {
                entries: vec![],
                hits: vec![],
                origin: vec![],
                code: vec![],
                listings: vec![],
                compile,
                max_cases,
                misses: 0,
                declined: 0,
            }),
            resume,
            stats,
            tree: RefCell::new(None),
        })
    }

    /// Records the pieces of the root the switch belongs to.
    pub fn set_tree(&self, tree: std::rc::Weak<dyn Pieces>) {
        *self.tree.borrow_mut() = Some(tree);
    }

    /// The pieces of the root the switch belongs to, while they live.
    pub fn tree(&self) -> Option<Rc<dyn Pieces>> {
        self.tree.borrow().as_ref()?.upgrade()
    }

    /// The statistics the switch counts in.
    pub fn stats(&self) -> Option<&'static Stats> {
        self.stats
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
        self.cases.len
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

    /// Each case's value and the address of its code, in the order seen
    /// (none while a case of this table is being compiled).
    pub fn entries(&self) -> Vec<(u64, usize)> {
        let Ok(inner) = self.inner.try_borrow() else { return vec![] };
        inner.entries.iter().zip(&inner.origin).map(|(e, o)| (e[0], *o as usize)).collect()
    }

    /// Each case's code address (as [`FlexTable::entries`] gives it) and
    /// how many times residual code took it through this table.
    pub fn hits(&self) -> Vec<(usize, u64)> {
        let Ok(inner) = self.inner.try_borrow() else { return vec![] };
        inner.origin.iter().zip(&inner.hits).map(|(o, h)| (*o as usize, *h)).collect()
    }

    /// Makes each case whose code address is a key of `to` continue at
    /// that key's value instead (the same code, entered another way: a
    /// fused root's entry for its copy of the piece), and every other case
    /// at the address it was added with.
    pub fn redirect(&self, to: &std::collections::HashMap<usize, usize>) {
        let Ok(mut inner) = self.inner.try_borrow_mut() else { return };
        let Inner { entries, origin, .. } = &mut *inner;
        for (e, o) in entries.iter_mut().zip(origin.iter()) {
            e[1] = to.get(&(*o as usize)).map_or(*o, |t| *t as u64);
        }
    }
}

/// Called by residual code when no case matches `value`: compiles one and
/// returns its entry (a `Tail`-convention function of the frame), or null.
///
/// # Safety
/// `table` must point to a live `FlexTable` (residual code passes the table
/// it was compiled with, which its machine code keeps alive).
pub unsafe extern "C" fn flex_miss(table: *const CaseTable, value: u64) -> usize {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: residual code passes the table it was compiled with, which
        // its machine code keeps alive.
        // A `CaseTable` handed to residual code is the first field of a
        // `FlexTable` (`repr(C)`), at the same address.
        let table = unsafe { &*(table as *const FlexTable) };
        // A reentrant miss (the compiler itself running residual code of this
        // table) declines rather than borrowing twice.
        let Ok(mut inner) = table.inner.try_borrow_mut() else { return 0 };
        inner.misses += 1;
        MISSES.fetch_add(1, Ordering::Relaxed);
        let now = std::time::Instant::now();
        if inner.entries.len() < inner.max_cases && !crate::run::case_budget::allows(now) {
            // Past the call's budget: hand over (see `case_budget`).
            if let Some(s) = table.stats {
                s.case_put_off();
            }
            return 0;
        }
        let compiled = if inner.entries.len() >= inner.max_cases { None } else { (inner.compile)(value) };
        crate::run::case_budget::spend(now.elapsed());
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
        inner.hits.push(0);
        inner.origin.push(entry as u64);
        inner.code.push(code);
        inner.listings.push(listing);
        CASES.fetch_add(1, Ordering::Relaxed);
        // Publish for the inline scan: the vectors may have moved.
        let (ptr, len) = (inner.entries.as_ptr(), inner.entries.len());
        let hits = inner.hits.as_mut_ptr();
        drop(inner);
        // SAFETY: the fields residual code reads are only written here, by
        // the thread that runs the code.
        unsafe {
            let t = table as *const FlexTable as *mut FlexTable;
            (*t).cases.entries = ptr;
            (*t).cases.hits = hits;
            (*t).cases.len = len;
        }
        entry
    }));
    outcome.unwrap_or(0)
}

impl SwitchTable for FlexTable {
    fn case_table(&self) -> *const CaseTable {
        &self.cases
    }
    fn describe(&self, out: &mut String, depth: usize) {
        FlexTable::describe(self, out, depth)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
