//! Compiled residual functions and how Rust calls them, and how they call Rust.
//!
//! [`ResidualFn`] owns a residual function's machine code (freed with it) and
//! its listing. [`Residual`] is the typed handle: `call(args)` takes the red
//! arguments as a tuple and returns the result, or the error that Rust would
//! have panicked with. Callbacks from residual code into Rust go through
//! [`run_callback`], which catches panics: a panic never unwinds through
//! generated frames; it is carried out as a status word and resumed by the
//! caller of the residual function.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::backend::cranelift::{CraneliftBackend, NativeCode, MAX_FRAME_WORDS};
use crate::backend::{Backend, BackendError};
use crate::ir::builder::ResidualFunction;
use crate::ir::ops::{ErrorKind, ValTy};

/// A Cranelift backend whose code calls this crate's run-time hooks (the
/// flexswitch miss handler): the one to compile residual code with.
pub fn native_backend() -> Result<CraneliftBackend, BackendError> {
    CraneliftBackend::new(crate::run::promotion::HOOKS)
}

static MESSAGES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// The index of a panic message for [`ErrorKind::Abort`] (registered once).
pub fn message_id(msg: &'static str) -> u32 {
    let mut m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    match m.iter().position(|x| *x == msg) {
        Some(i) => i as u32,
        None => {
            m.push(msg);
            m.len() as u32 - 1
        }
    }
}

/// The message registered as `id`.
pub fn message(id: u32) -> Option<&'static str> {
    MESSAGES.lock().unwrap_or_else(|e| e.into_inner()).get(id as usize).copied()
}

thread_local! {
    static CALLBACK_PANIC: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
}

/// Runs the body of a callback that residual code calls: returns the status
/// word to hand back (0, or the code of `CallbackPanicked` after stashing the
/// panic for the caller of the residual function to resume).
pub fn run_callback(body: impl FnOnce() -> Result<(), ErrorKind>) -> u64 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(kind)) => kind.code(),
        Err(payload) => {
            CALLBACK_PANIC.with(|p| *p.borrow_mut() = Some(payload));
            ErrorKind::CallbackPanicked.code()
        }
    }
}

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

thread_local! {
    static HOST_BACKEND: RefCell<Option<CraneliftBackend>> = const { RefCell::new(None) };
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

/// Compiles to machine code with this thread's backend (for flexswitch
/// cases, whose listings are made only when asked for, from the function).
pub fn compile_native(f: &ResidualFunction) -> Result<NativeCode, BackendError> {
    HOST_BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_none() {
            *b = Some(native_backend()?);
        }
        b.as_mut().expect("made above").compile(f)
    })
}

/// The payload of a callback that failed with `status` (a panic it caught).
pub fn take_callback_panic(status: u64) -> Option<Box<dyn Any + Send>> {
    if ErrorKind::from_code(status) == Some(ErrorKind::CallbackPanicked) {
        Some(CALLBACK_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| Box::new("a callback panicked")))
    } else {
        None
    }
}

/// Why a call of residual code did not return normally.
pub enum ResidualError {
    /// An error exit: where the interpreter would have panicked.
    Exit {
        /// Which check failed.
        kind: ErrorKind,
        /// For `IndexOutOfBounds`: the index and the length.
        detail: Option<(u64, u64)>,
    },
    /// A Rust function called from residual code panicked.
    Panicked(Box<dyn Any + Send>),
    /// A flexswitch with no way to continue handed over to the caller: the
    /// live values at the switch, then the promoted value, then the address
    /// of the switch's table. (Switches made by generating extensions
    /// continue in the interpreter themselves.)
    Resume(Vec<u64>),
    /// The interpreter, continuing after a hand-over, reached the portal's
    /// merge point: the state there (a `JitState` of the generating
    /// extension's frames), for the portal to continue in the interpreter
    /// proper (see [`call_parking`]).
    Parked(Box<dyn Any>),
}

impl ResidualError {
    /// Raises the panic the interpreter would have raised.
    pub fn resume(self) -> ! {
        match self {
            // jitgen's own failures (execute mode meeting what it cannot
            // run) are raised with their message; the interpreter's panics,
            // already reported where they happened, continue unwinding.
            ResidualError::Panicked(p) => match p.downcast::<String>() {
                Ok(s) if s.starts_with("jitgen") => panic!("{s}"),
                Ok(s) => std::panic::resume_unwind(s),
                Err(p) => std::panic::resume_unwind(p),
            },
            other => panic!("{other}"),
        }
    }

    /// The error kind, for exits.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ResidualError::Exit { kind, .. } => Some(*kind),
            ResidualError::Panicked(_) | ResidualError::Resume(_) | ResidualError::Parked(_) => None,
        }
    }
}

impl fmt::Display for ResidualError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResidualError::Exit { kind: ErrorKind::IndexOutOfBounds, detail: Some((i, n)) } => {
                write!(f, "index out of bounds: the len is {n} but the index is {i}")
            }
            ResidualError::Exit { kind: ErrorKind::Abort(i), .. } => match message(*i) {
                Some(m) => f.write_str(m),
                None => write!(f, "{}", ErrorKind::Abort(*i)),
            },
            ResidualError::Exit { kind, .. } => write!(f, "{kind}"),
            ResidualError::Resume(w) => {
                write!(f, "residual code handed over to the interpreter with {} words", w.len())
            }
            ResidualError::Parked(_) => f.write_str("the interpreter stopped at the portal's merge point"),
            ResidualError::Panicked(p) => {
                let msg =
                    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
                write!(f, "{}", msg.unwrap_or_else(|| "a callback panicked".into()))
            }
        }
    }
}

impl fmt::Debug for ResidualError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResidualError({self})")
    }
}

/// A compiled residual function: machine code and listing. Cloning is cheap
/// (a shared handle); the code is freed with the last clone.
#[derive(Clone, Debug)]
pub struct ResidualFn(std::rc::Rc<Compiled>);

#[derive(Debug)]
struct Compiled {
    inputs: Vec<ValTy>,
    outputs: Vec<ValTy>,
    /// Kept to print the listing when asked (formatting it at every
    /// compilation took about 2% of the compile time).
    function: ResidualFunction,
    listing: std::cell::OnceCell<String>,
    ops: usize,
    native: NativeCode,
    /// Owns the code compiled later for the states its switches resume.
    pieces: Option<std::rc::Rc<dyn crate::run::promotion::Pieces>>,
    /// Fusions that made `native`, and the tree's cases then (see
    /// [`ResidualFn::fuse_pieces`]).
    fused: (usize, usize),
    /// When the root was compiled, and the time its fusions took so far.
    born: std::time::Instant,
    fusing: std::time::Duration,
    /// Entries that found a fusion due and postponed it (the clock is read
    /// at one in [`CLOCK_EVERY`]), and the operations a fusion would
    /// compile at the tree's count of cases then.
    postponed: std::cell::Cell<u32>,
    estimate: std::cell::Cell<(usize, usize)>,
}

/// How often residual code took the cases of a tree's switches, per piece
/// they continue in (see [`crate::run::promotion::FlexTable::hits`]).
struct Heat<'a> {
    /// The tables of the root's and the pieces' switches.
    tables: Vec<&'a crate::run::promotion::FlexTable>,
    /// Per piece (by entry address), the cases taken into it.
    hits: std::collections::HashMap<usize, u64>,
    /// All cases taken.
    total: u64,
    /// Each piece's entry address, in the tree's order.
    entries: Vec<usize>,
}

impl<'a> Heat<'a> {
    fn of(root: &'a ResidualFunction, pieces: &'a [(usize, std::rc::Rc<ResidualFunction>)]) -> Heat<'a> {
        let tables: Vec<&crate::run::promotion::FlexTable> = std::iter::once(root)
            .chain(pieces.iter().map(|(_, f)| &**f))
            .flat_map(|f| f.switches.iter())
            .filter_map(|t| t.as_any().downcast_ref::<crate::run::promotion::FlexTable>())
            .collect();
        let mut hits: std::collections::HashMap<usize, u64> = std::collections::HashMap::new();
        for (entry, n) in tables.iter().flat_map(|t| t.hits()) {
            *hits.entry(entry).or_default() += n;
        }
        let total = hits.values().sum();
        Heat { tables, hits, total, entries: pieces.iter().map(|(e, _)| *e).collect() }
    }

    /// Whether piece `k` is fused: residual code took the cases into it at
    /// least one time in [`HOT_SHARE`] (every piece, before it took any).
    fn is_hot(&self, k: usize) -> bool {
        self.total == 0 || self.hits.get(&self.entries[k]).copied().unwrap_or(0).saturating_mul(HOT_SHARE) >= self.total
    }
}

/// What [`ResidualFn::fuse_pieces`] did.
pub enum Fusion {
    /// Nothing to fuse: no new cases, or [`MAX_FUSIONS`] reached.
    Nothing,
    /// A fusion is due, but the root has not existed long enough yet.
    Postponed,
    /// The fused code, and what fusing took.
    Fused(ResidualFn, std::time::Duration),
}

/// A root is fused once it has existed this many times as long as its
/// fusions took and the next is expected to take (see
/// [`ResidualFn::fuse_pieces`]); `Config::set_fusion_patience` changes it.
pub const FUSION_PATIENCE: u32 = 2;

/// While a fusion is postponed, one entry in this many reads the clock.
pub const CLOCK_EVERY: u32 = 16;

/// Fusions of one root's pieces at most: each compiles the whole tree again.
pub const MAX_FUSIONS: usize = 4;

/// Operations of pieces that one fusion copies at most (past them, a
/// switch's case is reached through the switch): Cranelift's time grows
/// faster than the function.
pub const MAX_FUSED_OPS: usize = 40_000;

/// A piece is fused when residual code took the cases that continue in it
/// at least one time in this many of all the cases it took (see
/// `ir::passes::fuse`).
pub const HOT_SHARE: u64 = 1000;

impl ResidualFn {
    /// Compiles a residual function with Cranelift, keeping its listing.
    pub fn compile(f: &ResidualFunction, backend: &mut CraneliftBackend) -> Result<ResidualFn, BackendError> {
        Ok(ResidualFn(std::rc::Rc::new(Compiled {
            inputs: f.inputs.clone(),
            outputs: f.outputs.clone(),
            function: f.clone(),
            listing: std::cell::OnceCell::new(),
            ops: f.op_count(),
            native: backend.compile(f)?,
            pieces: f.pieces.clone(),
            fused: (0, 0),
            born: std::time::Instant::now(),
            fusing: std::time::Duration::ZERO,
            postponed: std::cell::Cell::new(0),
            estimate: std::cell::Cell::new((usize::MAX, 0)),
        })))
    }

    /// The pieces below the function that run often, fused into one
    /// function (see `ir::passes::fuse`) and compiled, when its switches got
    /// cases since it was made, at most [`MAX_FUSIONS`] times. Every case
    /// table that continues in a fused piece then points at that piece's
    /// entry into the fused code (its reentry), so the code runs from one
    /// piece to the next through jumps instead of switches.
    ///
    /// The root is not fused: a path leaves it through a switch at most once
    /// per entry (a case never comes back into it), so its own code runs as
    /// compiled and enters the fused code at a piece's reentry. Nor are the
    /// pieces run rarely (the continuations of a recursion's first few
    /// levels, say): a piece is fused when residual code took the cases that
    /// continue in it at least one time in [`HOT_SHARE`]. So the fused code
    /// depends on what runs often, not on when the root was compiled.
    ///
    /// A fusion compiles the pieces again, which costs a program that
    /// runs its code briefly (a first run, a machine made afresh for each
    /// run) more than it gains. So it waits until the root has existed
    /// `patience` times as long as its fusions took and the next is
    /// expected to take at most (the tree's operations at `nanos_per_op()`,
    /// what compiling has cost this module): code that keeps running is
    /// fused, code that runs once is not. With `patience` 0, it fuses
    /// whenever cases were added.
    ///
    /// The handle returned runs the root's code as before; the listing
    /// stays the root's with its cases. Values seen later get cases in the
    /// pieces, until the next fusion. [`Fusion::Nothing`] also when the
    /// backend fails.
    pub fn fuse_pieces(&self, patience: u32, nanos_per_op: impl FnOnce() -> u64) -> Fusion {
        let me = &*self.0;
        let Some(pieces) = me.pieces.as_ref() else { return Fusion::Nothing };
        let n = pieces.cases();
        let (times, cases) = me.fused;
        if n == cases || times >= MAX_FUSIONS {
            return Fusion::Nothing;
        }
        if patience > 0 {
            let k = me.postponed.get();
            me.postponed.set(k.wrapping_add(1));
            if k % CLOCK_EVERY != 0 {
                return Fusion::Postponed;
            }
            let ops = match me.estimate.get() {
                (at, ops) if at == n => ops,
                _ => {
                    // The tree's size (what a fusion of every piece would
                    // compile): which pieces are hot is known only once
                    // the code has run, so the wait does not depend on it.
                    let copied: usize = pieces.functions().iter().map(|(_, f)| f.op_count()).sum();
                    let ops = me.ops + copied.min(MAX_FUSED_OPS);
                    me.estimate.set((n, ops));
                    ops
                }
            };
            let expected = std::time::Duration::from_nanos(nanos_per_op().saturating_mul(ops as u64));
            if me.born.elapsed() < (me.fusing + expected) * patience {
                return Fusion::Postponed;
            }
        }
        let t = std::time::Instant::now();
        let functions = pieces.functions();
        let index: std::collections::HashMap<usize, usize> =
            functions.iter().enumerate().map(|(k, (entry, _))| (*entry, k)).collect();
        // Function 0 is the base of the fused function: an entry that is
        // never taken, before the pieces' copies (every piece a reentry).
        let mut base = crate::ir::builder::ResidualBuilder::new(&me.function.name, &me.inputs, &me.outputs);
        base.error_exit(crate::ir::ops::ErrorKind::Abort(u32::MAX));
        let base = base.finish();
        let cases = |func: usize, switch: u32| -> Vec<(u64, usize)> {
            let f = if func == 0 { &base } else { &*functions[func - 1].1 };
            let Some(t) = f.switches.get(switch as usize) else { return vec![] };
            let Some(t) = t.as_any().downcast_ref::<crate::run::promotion::FlexTable>() else { return vec![] };
            t.entries().into_iter().filter_map(|(w, entry)| Some((w, *index.get(&entry)?))).collect()
        };
        let refs: Vec<&ResidualFunction> = functions.iter().map(|(_, f)| &**f).collect();
        let heat = Heat::of(&me.function, &functions);
        let hot = |k: usize| heat.is_hot(k);
        let (fused, copied) = base.fused(&refs, &cases, MAX_FUSED_OPS, &hot);
        // Nothing to copy (every piece's outputs differ from the root's) is
        // a fusion done too: it is not tried again until cases are added.
        let native = (!copied.is_empty()).then(|| {
            HOST_BACKEND.with(|b| {
                // Not while this thread's backend is compiling already.
                let mut b = b.try_borrow_mut().ok()?;
                if b.is_none() {
                    *b = Some(native_backend().ok()?);
                }
                b.as_mut()?.compile(&fused).ok()
            })
        });
        let native = match native {
            Some(None) => return Fusion::Nothing,
            Some(Some(native)) => Some(native),
            None => None,
        };
        // Cases continuing in a piece that was copied now enter the fused
        // code at its copy, wherever the switch is; the tree keeps that
        // code as long as its tables.
        let to: std::collections::HashMap<usize, usize> = copied
            .iter()
            .enumerate()
            .filter_map(|(k, piece)| Some((functions[*piece].0, native.as_ref()?.reentry(k)? as usize)))
            .collect();
        for t in &heat.tables {
            t.redirect(&to);
        }
        if let Some(native) = &native {
            pieces.keep(native.owner());
        }
        let took = t.elapsed();
        Fusion::Fused(
            ResidualFn(std::rc::Rc::new(Compiled {
                inputs: me.inputs.clone(),
                outputs: me.outputs.clone(),
                function: me.function.clone(),
                listing: me.listing.clone(),
                ops: me.ops,
                native: me.native.clone(),
                pieces: me.pieces.clone(),
                fused: (times + 1, n),
                born: me.born,
                fusing: me.fusing + took,
                postponed: std::cell::Cell::new(0),
                estimate: std::cell::Cell::new((usize::MAX, 0)),
            })),
            took,
        )
    }

    /// Whether both handles are of the same compiled code.
    pub fn same_code(&self, other: &ResidualFn) -> bool {
        std::rc::Rc::ptr_eq(&self.0, &other.0)
    }

    /// The residual operations, one per line.
    pub fn listing(&self) -> &str {
        self.0.listing.get_or_init(|| crate::ir::builder::listing(&self.0.function))
    }

    /// The listing, followed by the cases compiled so far for each of its
    /// flexswitches (nested cases indented).
    pub fn listing_with_cases(&self) -> String {
        let mut out = self.listing().to_string();
        for (i, t) in self.0.native.switches().iter().enumerate() {
            out.push_str(&format!("switch #{i}:\n"));
            t.describe(&mut out, 1);
        }
        if let Some(p) = &self.0.pieces {
            p.describe(&mut out);
        }
        out
    }

    /// The tables of the function's own flexswitches.
    pub fn switches(&self) -> Vec<&crate::run::promotion::FlexTable> {
        self.0.native.switches().iter().filter_map(|t| t.as_any().downcast_ref()).collect()
    }

    /// The entry point of the machine code (the `tail` convention, one
    /// argument: the frame), for direct calls from residual code.
    pub fn entry_point(&self) -> *const u8 {
        self.0.native.tail_entry()
    }

    /// The number of residual operations.
    pub fn op_count(&self) -> usize {
        self.0.ops
    }

    /// Input types.
    pub fn inputs(&self) -> &[ValTy] {
        &self.0.inputs
    }

    /// Output types.
    pub fn outputs(&self) -> &[ValTy] {
        &self.0.outputs
    }

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
                let p = CALLBACK_PANIC.with(|p| p.borrow_mut().take());
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

/// The frame a direct call runs its code on, its inputs pushed first
/// (see [`ResidualFn::call_frame`]): no allocation per call.
pub struct InputFrame {
    words: [u64; MAX_FRAME_WORDS],
    len: usize,
}

impl InputFrame {
    /// An empty frame.
    #[inline]
    pub fn new() -> InputFrame {
        InputFrame { words: [0; MAX_FRAME_WORDS], len: 0 }
    }

    /// Adds an input word.
    #[inline]
    pub fn push(&mut self, w: u64) {
        self.words[self.len] = w;
        self.len += 1;
    }

    /// Adds input words.
    #[inline]
    pub fn extend_from_slice(&mut self, w: &[u64]) {
        self.words[self.len..self.len + w.len()].copy_from_slice(w);
        self.len += w.len();
    }
}

impl Default for InputFrame {
    fn default() -> Self {
        InputFrame::new()
    }
}

/// A Rust value that crosses into residual code as one word.
pub trait Word: Copy {
    /// Its residual type.
    const TY: ValTy;
    /// As a canonical word.
    fn to_word(self) -> u64;
    /// From a canonical word.
    fn from_word(w: u64) -> Self;
}

macro_rules! int_words {
    ($($t:ty => $vt:expr),*) => {$(
        impl Word for $t {
            const TY: ValTy = $vt;
            fn to_word(self) -> u64 { self as u64 }
            fn from_word(w: u64) -> Self { w as $t }
        }
    )*};
}
int_words!(i8 => ValTy::I8, i16 => ValTy::I16, i32 => ValTy::I32, i64 => ValTy::I64, isize => ValTy::I64,
           u8 => ValTy::U8, u16 => ValTy::U16, u32 => ValTy::U32, u64 => ValTy::U64, usize => ValTy::U64);

impl Word for bool {
    const TY: ValTy = ValTy::Bool;
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Self {
        w != 0
    }
}

impl Word for f64 {
    const TY: ValTy = ValTy::F64;
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    fn from_word(w: u64) -> Self {
        f64::from_bits(w)
    }
}

/// Red arguments of a residual function: a tuple of [`Word`]s.
pub trait Args {
    /// Their types.
    fn types() -> Vec<ValTy>;
    /// As words.
    fn words(self) -> Vec<u64>;
}

/// Results of a residual function: a [`Word`] or a tuple of them.
pub trait Outputs: Sized {
    /// Their types.
    fn types() -> Vec<ValTy>;
    /// From words.
    fn from_words(w: &[u64]) -> Self;
}

impl<T: Word> Outputs for T {
    fn types() -> Vec<ValTy> {
        vec![T::TY]
    }
    fn from_words(w: &[u64]) -> Self {
        T::from_word(w[0])
    }
}

macro_rules! tuples {
    ($(($($n:ident $i:tt),*)),*) => {$(
        impl<$($n: Word),*> Args for ($($n,)*) {
            fn types() -> Vec<ValTy> { vec![$($n::TY),*] }
            #[allow(unused_variables)]
            fn words(self) -> Vec<u64> { vec![$(self.$i.to_word()),*] }
        }
    )*};
}
tuples!((), (A 0), (A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3), (A 0, B 1, C 2, D 3, E 4), (A 0, B 1, C 2, D 3, E 4, G 5));

/// A typed handle on a residual function of red arguments `A` returning `R`.
pub struct Residual<A, R> {
    f: ResidualFn,
    _sig: PhantomData<fn(A) -> R>,
}

impl<A: Args, R: Outputs> Residual<A, R> {
    /// Wraps a compiled function; its signature must be `A -> R`.
    pub fn new(f: ResidualFn) -> Result<Residual<A, R>, BackendError> {
        if f.inputs() != A::types() || f.outputs() != R::types() {
            return Err(BackendError(format!(
                "signature mismatch: compiled {:?} -> {:?}, handle {:?} -> {:?}",
                f.inputs(),
                f.outputs(),
                A::types(),
                R::types()
            )));
        }
        Ok(Residual { f, _sig: PhantomData })
    }

    /// Runs the residual code.
    pub fn call(&self, args: A) -> Result<R, ResidualError> {
        self.f.call_words(&args.words()).map(|w| R::from_words(&w))
    }

    /// The residual operations, one per line.
    pub fn listing(&self) -> &str {
        self.f.listing()
    }

    /// The untyped function.
    pub fn function(&self) -> &ResidualFn {
        &self.f
    }
}
