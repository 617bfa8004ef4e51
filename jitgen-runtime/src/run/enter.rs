//! Entering compiled residual code from Rust: the backend whose code calls
//! the run-time hooks ([`native_backend`]) and this thread's instance of it,
//! calls with inputs as words or in a frame, from a portal that may park
//! ([`call_parking`]), and what a call that did not return normally gives (a
//! hand-over resumes the compiler in execute mode from the switch's state).
//! Each call saves and restores the thread's continuation stack and direct
//! call depth around the code it runs.

use crate::backend::cranelift::{NativeCode, MAX_FRAME_WORDS};
use crate::backend::BackendError;
use crate::ir::builder::ResidualFunction;
use crate::ir::ops::{ErrorKind, ValTy};
use crate::run::residual::{take_callback_panic, InputFrame, ResidualError, ResidualFn};

pub use crate::run::fusion::native_backend;
use crate::run::fusion::HOST_BACKEND;

thread_local! {
    static PARKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Calls `f` for a portal, which can continue in the interpreter proper: a
/// hand-over from residual code then runs the interpreter's flow graphs
/// only up to the portal's next merge point, and the call returns
/// [`ResidualError::Parked`] with the state there.
pub fn call_parking(f: &ResidualFn, inputs: &[u64]) -> Result<Vec<u64>, ResidualError> {
    let prev = PARKING.with(|p| p.replace(true));
    let r = f.call_words(inputs);
    PARKING.with(|p| p.set(prev));
    r
}

/// Whether the residual call under way may park (and no longer, for the
/// calls it makes in turn).
pub(crate) fn take_parking() -> bool {
    PARKING.with(|p| p.replace(false))
}

/// Compiles with this thread's Cranelift backend for the host (made on first use).
pub fn compile_host(f: &ResidualFunction) -> Result<ResidualFn, BackendError> {
    HOST_BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_none() {
            *b = Some(native_backend()?);
        }
        ResidualFn::compile(f, b.as_mut().expect("made above"))
    })
}

/// The machine code of what a generating extension recorded (or why it
/// has none), compiled with this thread's backend
/// ([`compile_host`]); a panic of the backend is an error too.
pub fn native(f: Result<ResidualFunction, String>) -> Result<ResidualFn, String> {
    let mut f = f?;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f.run_pending_passes();
        compile_host(&f)
    })) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(String::from("the backend panicked")),
    }
}

/// Compiles a flexswitch case to machine code with this thread's backend
/// ([`crate::backend::cranelift::CraneliftBackend::compile_case`]; its listing is made only when asked
/// for, from the function).
pub fn compile_native(f: &ResidualFunction) -> Result<NativeCode, BackendError> {
    HOST_BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_none() {
            *b = Some(native_backend()?);
        }
        b.as_mut().expect("made above").compile_case(f)
    })
}

impl ResidualFn {
    /// Calls with inputs as canonical words; returns the outputs as words.
    pub fn call_words(&self, inputs: &[u64]) -> Result<Vec<u64>, ResidualError> {
        let me = &*self.0;
        assert_eq!(inputs.len(), me.inputs.len(), "wrong number of inputs");
        // The frame lives on the stack: entering residual code allocates nothing.
        let mut frame = [0u64; MAX_FRAME_WORDS];
        for (k, (w, t)) in inputs.iter().zip(&me.inputs).enumerate() {
            frame[k] = t.canon(*w);
        }
        let saved = crate::run::contstack::enter();
        let depth = crate::run::direct::depth();
        let r = self.run_frame(&mut frame);
        crate::run::direct::restore_depth(depth);
        crate::run::contstack::leave(saved);
        r
    }

    /// Calls at reentry `k` (of a fused root, see
    /// [`ResidualFunction::reentries`]) with inputs as canonical words, as
    /// a switch's case that continues in a copied piece enters it; returns
    /// the outputs as words. `None` when there is no such reentry.
    pub fn call_reentry(&self, k: usize, inputs: &[u64]) -> Option<Result<Vec<u64>, ResidualError>> {
        let me = &*self.0;
        let entry = me.native.reentry(k)?;
        let l = me.function.reentries[k];
        let tys: Vec<ValTy> = me.function.blocks[l].params.iter().map(|p| me.function.vals[*p]).collect();
        assert_eq!(inputs.len(), tys.len(), "wrong number of inputs");
        let mut frame = [0u64; MAX_FRAME_WORDS];
        for (k, (w, t)) in inputs.iter().zip(&tys).enumerate() {
            frame[k] = t.canon(*w);
        }
        let saved = crate::run::contstack::enter();
        let depth = crate::run::direct::depth();
        let status = me.native.run_at(entry, &mut frame);
        crate::run::direct::restore_depth(depth);
        crate::run::contstack::leave(saved);
        if status == 0 {
            return Some(Ok(me.outputs.iter().enumerate().map(|(k, t)| t.canon(frame[k])).collect()));
        }
        Some(self.failed(status, &mut frame))
    }

    /// Calls with the inputs in `frame`, as [`ResidualFn::call_words`]
    /// does, without allocating: returns the outputs, the frame's first
    /// words (a direct call's, see [`crate::run::direct`]).
    pub fn call_frame<'f>(&self, frame: &'f mut InputFrame) -> Result<&'f [u64], ResidualError> {
        let me = &*self.0;
        assert_eq!(frame.len, me.inputs.len(), "wrong number of inputs");
        for (w, t) in frame.words.iter_mut().zip(&me.inputs) {
            *w = t.canon(*w);
        }
        let saved = crate::run::contstack::enter();
        let depth = crate::run::direct::depth();
        let status = me.native.run(&mut frame.words);
        crate::run::direct::restore_depth(depth);
        crate::run::contstack::leave(saved);
        if status == 0 {
            for (w, t) in frame.words.iter_mut().zip(&me.outputs) {
                *w = t.canon(*w);
            }
            return Ok(&frame.words[..me.outputs.len()]);
        }
        // A hand-over finished the call in the interpreter.
        let out = self.failed(status, &mut frame.words)?;
        frame.words[..out.len()].copy_from_slice(&out);
        Ok(&frame.words[..out.len()])
    }

    /// Runs the code on a frame holding its inputs; a hand-over continues
    /// in execute mode before this returns.
    fn run_frame(&self, frame: &mut [u64; MAX_FRAME_WORDS]) -> Result<Vec<u64>, ResidualError> {
        let me = &*self.0;
        let status = me.native.run(frame);
        if status == 0 {
            return Ok(me.outputs.iter().enumerate().map(|(k, t)| t.canon(frame[k])).collect());
        }
        self.failed(status, frame)
    }

    /// What a run that returned `status` (not 0) on `frame` gives.
    pub(crate) fn failed(&self, status: u64, frame: &mut [u64; MAX_FRAME_WORDS]) -> Result<Vec<u64>, ResidualError> {
        match ErrorKind::from_code(status) {
            Some(ErrorKind::CallbackPanicked) => {
                let p = take_callback_panic(status);
                Err(ResidualError::Panicked(p.unwrap_or_else(|| Box::new("a callback panicked"))))
            }
            Some(ErrorKind::Resume(n)) => {
                // The live values, the promoted value, the switch's table.
                let n = n as usize;
                let table = frame[n - 1] as usize as *const crate::run::promotion::FlexTable;
                // SAFETY: residual code put the address of one of its tables
                // there; the tables live as long as the code, owned by `self`
                // (directly, or through the cases of its switches).
                match unsafe { (*table).resumer() } {
                    Some(resume) => resume(&frame[..n - 2], frame[n - 2]),
                    None => Err(ResidualError::Resume(frame[..n].to_vec())),
                }
            }
            Some(kind @ ErrorKind::IndexOutOfBounds) => {
                Err(ResidualError::Exit { kind, detail: Some((frame[0], frame[1])) })
            }
            Some(kind) => Err(ResidualError::Exit { kind, detail: None }),
            None => Err(ResidualError::Exit { kind: ErrorKind::Abort(u32::MAX), detail: None }),
        }
    }
}
