//! The continuation stack: where compiled recursion keeps the saved frames
//! of the interpreted program's calls.
//!
//! When compiled code meets a language-level recursion (a function of the
//! interpreted program calling itself through the interpreter's `Vec` of
//! saved frames), the frames it holds virtual are *spilled*: each one's
//! run-time values are pushed here as words, followed by the number of the
//! template that says how to rebuild the frame from them (its type, its
//! constants, the lengths of its lists; kept by the compiler,
//! `compile::spill`). A return that finds no virtual frame left pops the
//! top entry and continues in code compiled for that template, with the
//! frame virtual again (a flexswitch on the template number). So the
//! interpreted program's frames cost a few words each, on the heap, however
//! deep it recurses: the native stack does not grow with the recursion.
//!
//! The stack is one per thread, a [`Raw`] at a fixed address that residual
//! code reads and writes in place ([`Raw::address`]: loads and stores of its
//! fields, and a call of [`reserve`] only when it must grow). Compiled code
//! keeps the fields in registers while it runs (register cells, stored
//! before each of its calls and exits, loaded after each call), so what it
//! calls must find them in memory and may change them. Each call of
//! residual code ([`crate::run::residual::ResidualFn::call_words`]) sees only
//! the entries pushed since it began ([`enter`] sets the base, [`leave`]
//! drops what is left above it: after an error exit the interpreter's frames
//! are gone anyway; a hand-over rebuilds the spilled frames into the
//! interpreter's `Vec` first).
//!
//! The stack also counts the current call's entries ([`Raw::count`]): each
//! push adds one, each pop takes one, beside the length, in a register of
//! compiled code. That count is the length of the spilled frames of an
//! interpreter that reads `frames.len()` (`compile::spill::entries`, a
//! read of the register), as a VM that checks its call depth does at every
//! call: counting by a walk down the entries would cost such a call a
//! callback (PERFORMANCE.md).
//!
//! An entry's last word is its template number in the low [`TEMPLATE_BITS`]
//! bits. The top bit, [`SEALED`], says that no entry from this one down
//! holds part of an operand stack that is not in memory
//! (`compile::spill::materialize` sets it on the entries it walks past, so
//! that the next walk stops there).
//!
//! Invariant: `count` is the number of entries from `base` to `len`.
//!
//! Invariant: an entry is pushed and popped by code of the thread that
//! compiled it (residual code is not `Send`), so template numbers are those
//! of this thread's compiler and the address in the code is this thread's
//! stack.

use std::cell::UnsafeCell;

use crate::run::residual::run_callback;

/// The stack as residual code sees it: a buffer of words, its length and
/// capacity in words, and where the current call of residual code began.
#[repr(C)]
pub struct Raw {
    /// The buffer (a `Vec<u64>`'s, taken apart).
    pub words: *mut u64,
    /// Words in use.
    pub len: u64,
    /// Words allocated.
    pub cap: u64,
    /// The length when the current call of residual code began.
    pub base: u64,
    /// The number of entries from `base` to `len`.
    pub count: u64,
}

/// An entry's last word holds its template number in these low bits (see
/// the module doc).
pub const TEMPLATE_BITS: u32 = 32;

/// The template number in an entry's last word.
pub fn template_of(word: u64) -> u64 {
    word & ((1 << TEMPLATE_BITS) - 1)
}

/// The bit of an entry's last word that says no entry from it down holds
/// part of an operand stack outside memory (see the module doc).
pub const SEALED: u64 = 1 << 63;

/// Byte offsets of [`Raw`]'s fields, for residual code.
pub const WORDS: i32 = std::mem::offset_of!(Raw, words) as i32;
/// See [`WORDS`].
pub const LEN: i32 = std::mem::offset_of!(Raw, len) as i32;
/// See [`WORDS`].
pub const CAP: i32 = std::mem::offset_of!(Raw, cap) as i32;
/// See [`WORDS`].
pub const BASE: i32 = std::mem::offset_of!(Raw, base) as i32;
/// See [`WORDS`].
pub const COUNT: i32 = std::mem::offset_of!(Raw, count) as i32;

struct Stack(UnsafeCell<Raw>);

impl Drop for Stack {
    fn drop(&mut self) {
        let r = self.0.get_mut();
        if !r.words.is_null() {
            // SAFETY: made by `reserve` from a `Vec<u64>` of this capacity.
            drop(unsafe { Vec::from_raw_parts(r.words, 0, r.cap as usize) });
        }
    }
}

thread_local! {
    static STACK: Stack = const { Stack(UnsafeCell::new(Raw { words: std::ptr::null_mut(), len: 0, cap: 0, base: 0, count: 0 })) };
}

/// The thread's stack. Only this module and this thread's residual code
/// touch it, never while another of its users runs (residual code calls
/// into this module, never the reverse), so each use has it to itself.
fn with<T>(f: impl FnOnce(&mut Raw) -> T) -> T {
    // SAFETY: see above; the reference does not outlive `f`.
    STACK.with(|s| f(unsafe { &mut *s.0.get() }))
}

impl Raw {
    /// The address of this thread's stack (for residual code compiled in it).
    pub fn address() -> u64 {
        STACK.with(|s| s.0.get() as usize as u64)
    }
}

/// Runs `f` on the words of the current call's entries, oldest first (code
/// that reads or rewrites entries in place: `compile::spill::materialize`).
/// `f` must not use the stack otherwise.
pub fn with_call_words<T>(f: impl FnOnce(&mut [u64]) -> T) -> T {
    with(|r| {
        if r.words.is_null() {
            return f(&mut []);
        }
        // SAFETY: the words from `base` to `len` are in use in the buffer.
        let words = unsafe { std::slice::from_raw_parts_mut(r.words.add(r.base as usize), (r.len - r.base) as usize) };
        f(words)
    })
}

/// What the top entry's word holds when the stack has no entry of the
/// current call (see [`peek`]).
pub const EMPTY: u64 = u64::MAX;

/// Starts a call of residual code: it sees the entries pushed from now on.
/// Returns what [`leave`] needs to restore.
pub fn enter() -> [u64; 3] {
    with(|r| {
        let saved = [r.len, r.base, r.count];
        r.base = r.len;
        r.count = 0;
        saved
    })
}

/// Ends a call of residual code started by [`enter`]: drops what it left.
pub fn leave(saved: [u64; 3]) {
    with(|r| [r.len, r.base, r.count] = saved)
}

/// The number of entries of the current call of residual code.
pub fn call_entries() -> u64 {
    with(|r| r.count)
}

/// Makes room for `[n]` more words (`[n] -> []`).
///
/// # Safety
/// `buf` holds one word.
pub unsafe extern "C" fn reserve(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word.
        let n = unsafe { *buf };
        with(|r| {
            if r.len + n <= r.cap {
                return;
            }
            // SAFETY: the parts of a `Vec<u64>` (or nothing yet).
            let mut v = if r.words.is_null() {
                Vec::new()
            } else {
                unsafe { Vec::from_raw_parts(r.words, r.len as usize, r.cap as usize) }
            };
            v.reserve((n as usize).max(v.capacity()).max(256));
            let mut v = std::mem::ManuallyDrop::new(v);
            r.words = v.as_mut_ptr();
            r.cap = v.capacity() as u64;
        });
        Ok(())
    })
}

/// Pushes an entry: `[n, w_1 .. w_n, template] -> []` (execute mode's way;
/// compiled code stores the words itself).
///
/// # Safety
/// `buf` holds `n + 2` words.
pub unsafe extern "C" fn push(buf: *mut u64) -> u64 {
    // SAFETY: the caller passes n, then n words and the template.
    let n = unsafe { *buf };
    let mut room = n + 1;
    // SAFETY: one word.
    let status = unsafe { reserve(&mut room) };
    if status != 0 {
        return status;
    }
    with(|r| {
        // SAFETY: room for n + 1 words was reserved above.
        unsafe { std::ptr::copy_nonoverlapping(buf.add(1), r.words.add(r.len as usize), n as usize + 1) };
        r.len += n + 1;
        r.count += 1;
    });
    0
}

/// The template of the top entry of the current call, or [`EMPTY`]: `[] -> [t]`.
///
/// # Safety
/// `buf` holds one word.
pub unsafe extern "C" fn peek(buf: *mut u64) -> u64 {
    // SAFETY: the words from `base` to `len` are in use in the buffer.
    let t = with(|r| if r.len > r.base { template_of(unsafe { *r.words.add(r.len as usize - 1) }) } else { EMPTY });
    // SAFETY: one word.
    unsafe { *buf = t };
    0
}

/// Pops the top entry, of `n` words: `[n] -> [w_1 .. w_n]`.
///
/// # Safety
/// `buf` holds `max(n, 1)` words, and the current call's top entry has `n`.
pub unsafe extern "C" fn pop(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: the caller passes n and room for n words.
        let n = unsafe { *buf };
        with(|r| {
            assert!(r.len >= r.base + n + 1, "jitgen: a continuation entry of {n} words");
            let at = r.len - n - 1;
            // SAFETY: the entry's words are in the buffer, `buf` has room.
            unsafe { std::ptr::copy_nonoverlapping(r.words.add(at as usize), buf, n as usize) };
            r.len = at;
            r.count -= 1;
        });
        Ok(())
    })
}
