//! Direct calls between compiled functions of an interpreter whose calls
//! recurse in Rust: a portal that calls itself once per call of the
//! interpreted program (PyPy's successors call this call_assembler).
//!
//! A call of the portal in residual code, with the portal's green arguments
//! known when compiling (the program, the called function), runs the portal
//! specialized to those arguments, from its start, as `jit::specialize` does:
//! no hook, no position key, no interpretation. The code is found through a
//! [`DirectEntry`], one per portal and per content of its green arguments in
//! a thread ([`DirectTable`]). The compiler makes the entry when it compiles
//! the first call site, and embeds the entry's address; every call site of
//! the same function shares it, the entry's own code included, so a
//! recursion calls its own code. The entry compiles on its first call, from
//! residual code (as a flexswitch miss does); where that declines, or while
//! it is being compiled (a recursion met in execute mode), the call goes to
//! the portal itself.
//!
//! Keys are the bytes of the green arguments and of everything they reach,
//! with the addresses of their buffers (the content a portal's code cache
//! compares): an entry runs only on the green data it was compiled for.
//! Entries live as long as their thread, and a table holds at most
//! [`MAX_DIRECT_ENTRIES`]: past that, call sites compile as before.
//!
//! How a call site calls (`ResidualBuilder::red_call_direct`): where the
//! entry has code ([`DirectEntry`]'s first word, read by residual code) and
//! fewer than [`MAX_NATIVE_DEPTH`] native direct calls are under way in the
//! thread, residual code calls the callee's machine code itself
//! (`Inst::CallCode`): its inputs on a frame on the native stack, the count
//! raised around the call, and what the callee left in the arena freed after
//! it. A non-zero status goes to [`direct_failed`], which finishes a
//! hand-over in the callee's own way or raises its error as the panic the
//! interpreter would have raised. Otherwise the call site calls its callback,
//! which compiles the entry on its first call and runs its code through Rust
//! ([`crate::run::residual::ResidualFn::call_frame`]), or calls the portal.
//!
//! The native stack: each direct call keeps a frame of `MAX_FRAME_WORDS`
//! words, and one through the callback the callback's frames too, more than
//! the interpreter's own Rust frame per call. So native calls nest at most
//! [`MAX_NATIVE_DEPTH`] deep, and calls through the callback only within
//! [`DIRECT_STACK_BUDGET`] bytes of stack from the outermost one
//! ([`enter_stack`]); deeper calls run the plain interpreter, whose frames
//! are those the program would have used without the JIT. A recursion as
//! deep as the plain interpreter can go then goes as deep under the JIT, and
//! ends with the same result or error.
//!
//! Architecture Invariant: an entry's address, once embedded in code, stays
//! valid for the thread's life (entries are boxed and never removed).

use std::cell::{Cell, OnceCell};

use rustc_hash::FxHashMap;

use crate::run::residual::ResidualFn;
use crate::run::stats::Stats;

/// How many direct entries a portal keeps in a thread.
pub const MAX_DIRECT_ENTRIES: usize = 4096;

/// The bytes of native stack compiled direct calls may nest within (see the
/// module doc).
pub const DIRECT_STACK_BUDGET: usize = 256 * 1024;

/// How many direct calls of compiled code ([`Inst::CallCode`]) may nest in
/// a thread before further calls take the callback (and its stack budget).
/// Each keeps a frame of `MAX_FRAME_WORDS` words on the native stack.
///
/// [`Inst::CallCode`]: crate::ir::function::Inst::CallCode
pub const MAX_NATIVE_DEPTH: u64 = 128;

thread_local! {
    /// How many native direct calls are under way (residual code raises it
    /// around each; a Rust entry into residual code restores it, for calls
    /// that left with an error).
    static DEPTH: Cell<u64> = const { Cell::new(0) };
}

/// The address of this thread's count of native direct calls under way
/// (compiled code runs only in the thread that compiled it).
pub fn depth_cell() -> *mut u64 {
    DEPTH.with(|d| d.as_ptr())
}

/// The count of native direct calls under way, for a Rust entry into
/// residual code to restore with [`restore_depth`].
pub fn depth() -> u64 {
    DEPTH.with(|d| d.get())
}

/// Restores the count [`depth`] gave.
pub fn restore_depth(d: u64) {
    DEPTH.with(|c| c.set(d));
}

/// The compiled code of a portal specialized to one content of its green
/// arguments, for direct calls.
#[derive(Default)]
#[repr(C)]
pub struct DirectEntry {
    /// The entry point of the code, 0 until it is compiled (and where it
    /// declined): residual code reads it here, at offset 0.
    native: Cell<usize>,
    /// The code, or `None` where its compilation declined.
    code: OnceCell<Option<ResidualFn>>,
    /// Its compilation is under way (calls meanwhile go to the portal).
    compiling: Cell<bool>,
}

impl DirectEntry {
    /// The code to run: compiled by `compile` on the first call, counted in
    /// `stats`. `None` where the compilation declined, or is under way.
    pub fn code(&self, stats: &Stats, compile: impl FnOnce() -> Result<ResidualFn, String>) -> Option<&ResidualFn> {
        if let Some(c) = self.code.get() {
            return c.as_ref();
        }
        if self.compiling.replace(true) {
            return None;
        }
        let t = std::time::Instant::now();
        let r = compile();
        stats.compiled(r.as_ref().ok().map(|f| f.op_count()), t.elapsed().as_nanos() as u64);
        if let Err(why) = &r {
            stats.declined_because(why);
        }
        self.compiling.set(false);
        if let Ok(code) = &r {
            self.native.set(code.entry_point() as usize);
        }
        let _ = self.code.set(r.ok());
        self.code.get().and_then(|c| c.as_ref())
    }

    /// Whether the entry has code (it was called, and compiled).
    pub fn has_code(&self) -> bool {
        matches!(self.code.get(), Some(Some(_)))
    }
}

/// The run-time hook of a direct call whose code returned a non-zero status
/// (callback convention): the frame holds the callee's words, then at
/// `MAX_FRAME_WORDS` the status and the entry's address. A hand-over is
/// finished here (the results written to the frame, 0 returned); an error
/// becomes the panic the interpreter would have raised, carried out as
/// `CallbackPanicked`.
///
/// # Safety
/// `frame` must be such a frame, of `MAX_FRAME_WORDS + 2` words, naming a
/// live entry.
pub unsafe extern "C" fn direct_failed(frame: *mut u64) -> u64 {
    use crate::ir::function::MAX_FRAME_WORDS;
    // SAFETY: guaranteed by the caller.
    let words = unsafe { std::slice::from_raw_parts_mut(frame, MAX_FRAME_WORDS + 2) };
    let (status, entry) = (words[MAX_FRAME_WORDS], words[MAX_FRAME_WORDS + 1]);
    // SAFETY: entries live as long as their thread.
    let entry = unsafe { &*(entry as usize as *const DirectEntry) };
    let Some(Some(code)) = entry.code.get() else { return status };
    let callee: &mut [u64; MAX_FRAME_WORDS] = (&mut words[..MAX_FRAME_WORDS]).try_into().expect("sized above");
    match code.failed(status, callee) {
        Ok(out) => {
            words[..out.len()].copy_from_slice(&out);
            0
        }
        Err(e) => crate::run::residual::run_callback(move || e.resume()),
    }
}

/// A portal's direct entries in a thread, by the content of their green
/// arguments.
#[derive(Default)]
pub struct DirectTable {
    entries: Option<FxHashMap<Vec<u8>, Box<DirectEntry>>>,
}

impl DirectTable {
    /// An empty table.
    pub const fn new() -> DirectTable {
        DirectTable { entries: None }
    }

    /// The address of the entry for `key`, made if new; `None` when the
    /// table is full.
    pub fn entry(&mut self, key: Vec<u8>) -> Option<*const DirectEntry> {
        let entries = self.entries.get_or_insert_with(FxHashMap::default);
        if let Some(e) = entries.get(&key) {
            return Some(&**e as *const DirectEntry);
        }
        if entries.len() >= MAX_DIRECT_ENTRIES {
            return None;
        }
        let e = Box::new(DirectEntry::default());
        let p = &*e as *const DirectEntry;
        entries.insert(key, e);
        Some(p)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.as_ref().map_or(0, |e| e.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

thread_local! {
    /// The stack address of the outermost direct call under way, and how
    /// many are nested.
    static OUTERMOST: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// A direct call under way (see [`enter_stack`]); ends when dropped.
pub struct StackGuard(());

impl Drop for StackGuard {
    fn drop(&mut self) {
        OUTERMOST.with(|o| {
            let (top, depth) = o.get();
            o.set(if depth <= 1 { (0, 0) } else { (top, depth - 1) });
        });
    }
}

/// Starts a direct call of compiled code, or says to interpret it (`None`)
/// where the calls under way already use [`DIRECT_STACK_BUDGET`] bytes of
/// native stack.
#[inline]
pub fn enter_stack() -> Option<StackGuard> {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    OUTERMOST.with(|o| {
        let (top, depth) = o.get();
        if depth == 0 {
            o.set((here, 1));
        } else {
            if top.abs_diff(here) > DIRECT_STACK_BUDGET {
                return None;
            }
            o.set((top, depth + 1));
        }
        Some(StackGuard(()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_shared_by_key_and_stay_put() {
        let mut t = DirectTable::new();
        let a = t.entry(vec![1, 2]).unwrap();
        let b = t.entry(vec![1, 3]).unwrap();
        for k in 0..100u8 {
            t.entry(vec![9, k]);
        }
        assert_eq!(t.entry(vec![1, 2]), Some(a));
        assert_ne!(a, b);
        assert_eq!(t.len(), 102);
    }

    #[test]
    fn an_entry_compiles_once_and_not_while_compiling() {
        let stats = Stats::new();
        let e = DirectEntry::default();
        let mut inner = None;
        let r = e.code(&stats, || {
            // A call met while compiling (execute mode): interpreted.
            inner = Some(e.code(&stats, || unreachable!()).is_none());
            Err("declined here".into())
        });
        assert!(r.is_none());
        assert_eq!(inner, Some(true));
        // Declined once: never compiled again.
        assert!(e.code(&stats, || unreachable!()).is_none());
        let s = stats.snapshot();
        assert_eq!((s.compilations, s.declined), (1, 1));
    }

    fn nest(levels: usize, entered: &mut usize) {
        let pad = std::hint::black_box([0u8; 1024]);
        match enter_stack() {
            Some(_g) => {
                *entered += 1;
                if levels > 1 {
                    nest(levels - 1, entered);
                }
            }
            None => {}
        }
        std::hint::black_box(&pad);
    }

    #[test]
    fn direct_calls_nest_only_within_the_stack_budget() {
        let mut entered = 0;
        nest(10, &mut entered);
        assert_eq!(entered, 10);
        let mut entered = 0;
        nest(100_000, &mut entered);
        // Each level takes at least 1 KiB: at most 256 fit the budget.
        assert!(entered > 16 && entered <= DIRECT_STACK_BUDGET / 1024 + 1, "{entered}");
        // All ended: the next outermost call starts afresh.
        assert_eq!(OUTERMOST.with(|o| o.get()), (0, 0));
    }
}
