//! Compiled residual code as the Cranelift backend hands it out: an entry
//! point, the trampoline that enters it, and the JIT module that holds its
//! memory, freed with the last handle.
//!
//! Architecture Invariant: machine code lives as long as a [`NativeCode`]
//! handle or an [`NativeCode::owner`] clone does; `live_code_modules` counts
//! what is not freed yet (`tests/ownership.rs`).

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cranelift_jit::JITModule;

use crate::ir::builder::SwitchTable;
use crate::ir::function::MAX_FRAME_WORDS;

/// `extern "C" fn(code, frame) -> status`: enters a `tail`-convention function.
pub(super) type Trampoline = unsafe extern "C" fn(usize, *mut u64) -> u64;

static LIVE_MODULES: AtomicUsize = AtomicUsize::new(0);

/// How many compiled residual functions hold machine code right now (in
/// every thread): what has not been freed yet.
pub fn live_code_modules() -> usize {
    LIVE_MODULES.load(Ordering::Relaxed)
}

pub(super) struct CodeOwner {
    module: Option<JITModule>,
    /// The word the code's reentry stubs write (see
    /// the Cranelift backend's `translate`).
    _selector: Option<Box<u64>>,
}

impl CodeOwner {
    pub(super) fn new(module: JITModule, selector: Option<Box<u64>>) -> CodeOwner {
        LIVE_MODULES.fetch_add(1, Ordering::Relaxed);
        CodeOwner { module: Some(module), _selector: selector }
    }
}

impl Drop for CodeOwner {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            LIVE_MODULES.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: the owner is dropped with the last `NativeCode` handle
            // and the last clone that `NativeCode::owner` gave (kept by
            // whatever hands out the code's entry points, such as the case
            // tables that enter a fused root at its reentries).
            unsafe { m.free_memory() };
        }
    }
}

/// Machine code compiled on one thread for another
/// (the Cranelift backend's `compile_detached`): it
/// holds no table and nothing of the thread that compiled it, and becomes
/// [`NativeCode`] on the thread that runs it ([`DetachedCode::attach`]).
pub struct DetachedCode {
    pub(super) entry: *const u8,
    pub(super) frame_words: usize,
    pub(super) trampoline: Trampoline,
    pub(super) owner: CodeOwner,
    pub(super) reentries: Vec<*const u8>,
}

// SAFETY: the entry points are addresses of finalized machine code that no
// thread writes, and the owner's module is memory that only its drop
// touches; nothing in it is tied to the thread that made it.
unsafe impl Send for DetachedCode {}

impl DetachedCode {
    /// The code, on the thread that runs it, with the switch tables of the
    /// function it was compiled from (whose addresses it holds).
    pub fn attach(self, switches: Vec<Rc<dyn SwitchTable>>) -> NativeCode {
        NativeCode {
            entry: self.entry,
            frame_words: self.frame_words,
            trampoline: self.trampoline,
            _owner: Rc::new(self.owner),
            switches,
            reentries: self.reentries,
            _turns: None,
        }
    }
}

/// Compiled residual code: an entry point with the frame calling convention
/// of [`crate::ir::builder`], and the memory that holds it.
#[derive(Clone)]
pub struct NativeCode {
    pub(super) entry: *const u8,
    pub(super) frame_words: usize,
    pub(super) trampoline: Trampoline,
    pub(super) _owner: Rc<CodeOwner>,
    pub(super) switches: Vec<Rc<dyn SwitchTable>>,
    /// The entry points at the function's reentries, in order.
    pub(super) reentries: Vec<*const u8>,
    /// The count its loops write (`ResidualFunction::turns`), kept as long
    /// as the code.
    pub(super) _turns: Option<Rc<std::cell::Cell<u64>>>,
}

impl std::fmt::Debug for NativeCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NativeCode({:p})", self.entry)
    }
}

impl NativeCode {
    /// Runs the code on a frame; returns the status word. The frame must
    /// hold at least [`NativeCode::frame_words`] words, inputs first.
    pub fn run(&self, frame: &mut [u64]) -> u64 {
        assert!(frame.len() >= MAX_FRAME_WORDS, "frames hold MAX_FRAME_WORDS words");
        // SAFETY: the code was compiled from a verified residual function that
        // reads and writes only the first MAX_FRAME_WORDS words of its frame
        // (and so do the cases it tail-calls), and returns instead of trapping
        // or unwinding; the trampoline calls it with the tail convention.
        unsafe { (self.trampoline)(self.entry as usize, frame.as_mut_ptr()) }
    }

    /// Runs the code from `entry`, one of its entry points (its
    /// [`NativeCode::reentry`]), on a frame, as [`NativeCode::run`] does.
    pub fn run_at(&self, entry: *const u8, frame: &mut [u64]) -> u64 {
        assert!(frame.len() >= MAX_FRAME_WORDS, "frames hold MAX_FRAME_WORDS words");
        assert!(entry == self.entry || self.reentries.contains(&entry), "an entry point of this code");
        // SAFETY: as in `run`: `entry` is one of this code's entry points,
        // each a tail-convention function of the frame.
        unsafe { (self.trampoline)(entry as usize, frame.as_mut_ptr()) }
    }

    /// The tables of this code's flexswitches.
    pub fn switches(&self) -> &[Rc<dyn SwitchTable>] {
        &self.switches
    }

    /// The entry point, a `tail`-convention function of the frame (for flexswitch cases).
    pub fn tail_entry(&self) -> *const u8 {
        self.entry
    }

    /// Words the frame must hold.
    pub fn frame_words(&self) -> usize {
        self.frame_words
    }

    /// The entry point at the function's reentry `k`
    /// ([`crate::ir::function::ResidualFunction::reentries`]), a `tail`-convention function of
    /// the frame as [`NativeCode::tail_entry`] is.
    pub fn reentry(&self, k: usize) -> Option<*const u8> {
        self.reentries.get(k).copied()
    }

    /// What keeps the machine code alive (its entry points, the reentries'
    /// included), for whoever hands them out beyond this handle's life.
    pub fn owner(&self) -> Rc<dyn std::any::Any> {
        self._owner.clone()
    }
}
