//! The compiler's thread: a portal's new code compiled to machine code
//! while the interpreter goes on.
//!
//! Under the default hot-spot policy, a key that gets hot runs its
//! generating extension on the interpreter's own thread (the extension
//! reads the interpreter's green data, which stays that thread's), and hands
//! the residual function it recorded to this thread ([`submit`]), which runs
//! Cranelift on it. The interpreter does not wait: it goes on interpreting,
//! and a later visit of the portal's hook finds the code ready
//! ([`Ticket::take`]) and installs it. Code is entered only on the thread
//! that asked for it, after it is installed there: nothing runs while it is
//! being compiled, and the hand-over is a visit of the hook like any other.
//!
//! What crosses threads is plain data: the residual function without its
//! switch tables and pieces ([`ResidualFunction::detach`]), the addresses
//! the code needs of them and of the asking thread ([`CodeContext`]), and
//! what comes back: the function and its machine code ([`DetachedCode`]),
//! attached to the tables on the asking thread. The tables stay with the
//! asking thread's ticket, so a ticket dropped before its code is taken
//! (its thread ended) drops code that never runs.
//!
//! A root recorded for this thread comes with its residual passes pending
//! ([`ResidualFunction::passes_pending`]): they run here, before
//! Cranelift, so that the interpreter's thread pays only for recording.
//!
//! A root compiled here is fused here too ([`submit_fusion`], the
//! `run::residual::SubmitFn` of such code): the fused function goes to this
//! thread, the pieces it fuses go on running meanwhile, and the next entry
//! of the root (or the next report of a hot switch) installs it, pointing
//! the tables at it as a fusion in place does.
//!
//! One thread serves the process, started when a first key gets warm
//! ([`prewarm`]); where no thread can be started, [`submit`] gives the
//! function back and the caller compiles it itself. Its first work is to
//! warm the compiler up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::backend::cranelift::{CodeContext, DetachedCode};
use crate::backend::BackendError;
use crate::ir::builder::ResidualFunction;
use crate::ir::ops::ValTy;
use crate::run::enter::{compile_host, compile_native};
use crate::run::residual::ResidualFn;

/// A compiled function (simplified, without its tables) and its machine code.
type Compiled = (ResidualFunction, DetachedCode);

/// The machine code of one submitted function, once compiled.
struct Slot {
    done: AtomicBool,
    code: Mutex<Option<(Result<Compiled, BackendError>, Duration)>>,
}

/// A function handed to the compiler's thread.
struct Job {
    function: ResidualFunction,
    context: CodeContext,
    slot: Arc<Slot>,
    ready: Box<dyn FnOnce() + Send>,
}

// SAFETY: a job's function was made by `ResidualFunction::detach`: its
// `switches` are empty and its `pieces` are `None`, the only fields that
// are not `Send` (reference-counted tables of the asking thread).
unsafe impl Send for Job {}

// SAFETY: a slot's functions are detached ones too (see `Job`).
unsafe impl Send for Slot {}
unsafe impl Sync for Slot {}

/// A submitted function and its machine code, attached to its tables.
pub type Attached = (ResidualFunction, crate::backend::cranelift::NativeCode);

/// A function submitted to the compiler's thread, until its code is taken
/// on the thread that submitted it: the function's tables and pieces, the
/// rest of it being on that thread.
pub struct Ticket {
    function: ResidualFunction,
    slot: Arc<Slot>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ticket({}, ready: {})", self.function.name, self.ready())
    }
}

impl Ticket {
    /// Whether the compiler's thread is done with the function.
    pub fn ready(&self) -> bool {
        self.slot.done.load(Ordering::Acquire)
    }

    /// The function's code, attached to its tables on this thread, and the
    /// time the compiler's thread took; `None` (the ticket kept) while it
    /// is not ready.
    pub fn take(self) -> Result<(Result<ResidualFn, BackendError>, Duration), Ticket> {
        let (code, took) = self.take_native()?;
        Ok((code.map(|(function, native)| ResidualFn::with_code(function, native)), took))
    }

    /// As [`Ticket::take`], the function and its machine code apart (a
    /// fusion's code is not a root of its own: see `run::fusion`).
    pub fn take_native(self) -> Result<(Result<Attached, BackendError>, Duration), Ticket> {
        if !self.ready() {
            return Err(self);
        }
        let taken = self.slot.code.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (code, took) =
            taken.unwrap_or_else(|| (Err(BackendError("the compiler's thread gave nothing".into())), Duration::ZERO));
        let tables = self.function;
        Ok((
            code.map(|(function, d)| {
                let function = tables.attached(function);
                let native = d.attach(function.switches.clone());
                (function, native)
            }),
            took,
        ))
    }

    /// Waits until the compiler's thread is done with the function (tests).
    pub fn wait(&self) {
        while !self.ready() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// The compiler thread's queue (`None`: it could not be started).
fn queue() -> Option<&'static Mutex<Sender<Job>>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Job>();
            let started = std::thread::Builder::new().name("jitgen-compiler".into()).spawn(move || {
                let mut backend = None;
                warm_up();
                for Job { mut function, context, slot, ready } in rx {
                    let t = std::time::Instant::now();
                    let r = compile(&mut backend, &mut function, &context).map(|code| (function, code));
                    *slot.code.lock().unwrap_or_else(|e| e.into_inner()) = Some((r, t.elapsed()));
                    slot.done.store(true, Ordering::Release);
                    ready();
                }
            });
            started.ok().map(|_| Mutex::new(tx))
        })
        .as_ref()
}

/// Warms the compiler up on its thread, once per process: makes the
/// backend's process-wide parts (the host's ISA, the trampoline, the stubs)
/// and compiles a small function at both optimization levels, so that the
/// first real compilation (on any thread) finds them made and the
/// compiler's code and tables paged in, and the compiler's thread its
/// memory. Called when a first key gets warm: the warm-up that follows
/// leaves the interpreter milliseconds to run meanwhile.
pub fn prewarm() {
    let _ = queue();
}

fn warm_up() {
    let f = prewarm_function();
    let _ = compile_host(&f);
    let _ = compile_native(&f);
}

/// A loop over a buffer (loads, stores, a bounds check, arithmetic and
/// branches): what compiling residual code exercises.
fn prewarm_function() -> ResidualFunction {
    use crate::ir::ops::{BinOp, CmpOp, Overflow};
    let mut b = crate::ir::builder::ResidualBuilder::new("prewarm", &[ValTy::Ptr, ValTy::U64], &[ValTy::U64]);
    let (base, n) = (b.inputs()[0], b.inputs()[1]);
    let zero = b.konst(ValTy::U64, 0);
    let (head, head_params) = b.new_label(&[ValTy::U64, ValTy::U64]);
    b.jump(head, &[zero, zero]);
    b.switch_to(head);
    let (i, acc) = (head_params[0], head_params[1]);
    let more = b.cmp(CmpOp::Lt, ValTy::U64, i, n);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    b.bounds_check(i, n);
    let eight = b.konst(ValTy::U64, 8);
    let off = b.bin(BinOp::Mul, ValTy::U64, Overflow::Wrap, i, eight);
    let off = b.cast(ValTy::U64, ValTy::Ptr, off);
    let at = b.bin(BinOp::Add, ValTy::Ptr, Overflow::Wrap, base, off);
    let x = b.load(ValTy::U64, at, 0);
    let acc2 = b.bin(BinOp::Add, ValTy::U64, Overflow::Wrap, acc, x);
    b.store(ValTy::U64, at, 0, acc2);
    let one = b.konst(ValTy::U64, 1);
    let i2 = b.bin(BinOp::Add, ValTy::U64, Overflow::Wrap, i, one);
    b.jump(head, &[i2, acc2]);
    b.switch_to(done);
    b.ret(&[acc]);
    b.finish()
}

/// Simplifies `f` if its passes are pending, and compiles it.
fn compile(
    backend: &mut Option<crate::backend::cranelift::CraneliftBackend>,
    f: &mut ResidualFunction,
    context: &CodeContext,
) -> Result<DetachedCode, BackendError> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if backend.is_none() {
            *backend = Some(crate::run::fusion::native_backend()?);
        }
        f.run_pending_passes();
        backend.as_mut().expect("made above").compile_detached(f, context)
    }));
    r.unwrap_or_else(|_| Err(BackendError("the backend panicked".into())))
}

/// Hands `f` to the compiler's thread, which compiles it at `speed` for
/// this thread and then calls `ready` (on its own thread); gives `f` back
/// where that thread could not be started.
pub fn submit(mut f: ResidualFunction, ready: Box<dyn FnOnce() + Send>) -> Result<Ticket, ResidualFunction> {
    let Some(queue) = queue() else { return Err(f) };
    let slot = Arc::new(Slot { done: AtomicBool::new(false), code: Mutex::new(None) });
    let Ok(queue) = queue.lock() else { return Err(f) };
    let context = CodeContext::of(&f);
    let job = Job { function: f.detach(), context, slot: slot.clone(), ready };
    match queue.send(job) {
        Ok(()) => Ok(Ticket { function: f, slot }),
        Err(unsent) => Err(f.attached(unsent.0.function)),
    }
}

/// Hands a fused function to the compiler's thread (see the module doc);
/// gives it back where that thread could not be started.
pub fn submit_fusion(f: ResidualFunction) -> Result<Box<dyn crate::run::residual::Compiling>, ResidualFunction> {
    submit(f, Box::new(|| {})).map(|t| Box::new(Some(t)) as Box<dyn crate::run::residual::Compiling>)
}

impl crate::run::residual::Compiling for Option<Ticket> {
    fn poll(&mut self) -> Option<(Result<crate::backend::cranelift::NativeCode, BackendError>, Duration)> {
        match self.take()?.take_native() {
            Ok((code, took)) => Some((code.map(|(_, native)| native), took)),
            Err(ticket) => {
                *self = Some(ticket);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warm-up's function compiles at both levels and does what it
    /// says: each cell becomes the sum of the cells up to it, and the whole
    /// sum is returned.
    #[test]
    fn the_warm_up_function_compiles_and_sums_its_buffer() {
        let f = prewarm_function();
        let code = compile_host(&f).expect("compiles at speed");
        compile_native(&f).expect("compiles as a case");
        let mut cells = [1u64, 2, 3, 4];
        let out = code.call_words(&[cells.as_mut_ptr() as u64, 4]).expect("runs");
        assert_eq!(cells, [1, 3, 6, 10]);
        assert_eq!(out, vec![10]);
    }
}
