//! Compiled residual functions and how they call Rust; how Rust enters them is
//! in `enter.rs`, how their pieces are fused in `fusion.rs` (the facade's
//! `residual` module shows the three as one).
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
    /// proper (see `enter::call_parking`).
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

/// A fused function being compiled elsewhere, polled until its machine
/// code is ready (attached to its tables on this thread).
pub trait Compiling {
    /// The code and the time it took once ready; `None` while it is not.
    fn poll(&mut self) -> Option<(Result<NativeCode, BackendError>, std::time::Duration)>;
}

/// Hands a fused function to be compiled elsewhere; gives it back where it
/// cannot.
pub type SubmitFn = fn(ResidualFunction) -> Result<Box<dyn Compiling>, ResidualFunction>;

/// A fusion being compiled elsewhere (see `run::fusion`): its code to
/// come, the pieces it copied (the tree's functions then, and which of them
/// were copied, in the order of the fused function's reentries), the tree's
/// cases then, what fusing took on this thread, and the operations it
/// compiles.
pub(crate) struct PendingFusion {
    pub(crate) code: Box<dyn Compiling>,
    pub(crate) functions: Vec<(usize, std::rc::Rc<ResidualFunction>)>,
    pub(crate) copied: Vec<usize>,
    pub(crate) cases: usize,
    pub(crate) took: std::time::Duration,
    pub(crate) ops: usize,
}

impl std::fmt::Debug for PendingFusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingFusion({} operations, {} pieces copied)", self.ops, self.copied.len())
    }
}

/// A compiled residual function: machine code and listing. Cloning is cheap
/// (a shared handle); the code is freed with the last clone.
#[derive(Clone, Debug)]
pub struct ResidualFn(pub(crate) std::rc::Rc<Compiled>);

#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) inputs: Vec<ValTy>,
    pub(crate) outputs: Vec<ValTy>,
    /// Kept to print the listing when asked (formatting it at every
    /// compilation took about 2% of the compile time).
    pub(crate) function: ResidualFunction,
    pub(crate) listing: std::cell::OnceCell<String>,
    pub(crate) ops: usize,
    pub(crate) native: NativeCode,
    /// Owns the code compiled later for the states its switches resume.
    pub(crate) pieces: Option<std::rc::Rc<dyn crate::ir::function::Pieces>>,
    /// Fusions that redirected the tree's tables, and the tree's cases
    /// then (see `ResidualFn::fuse_pieces`).
    pub(crate) fused: std::cell::Cell<(usize, usize)>,
    /// When the root was compiled, and the time its fusions took so far;
    /// what its module had spent compiling then ([`ResidualFn::note_birth`]).
    pub(crate) born: std::time::Instant,
    pub(crate) compiling_at_birth: std::cell::Cell<u64>,
    pub(crate) fusing: std::cell::Cell<std::time::Duration>,
    /// The operations a fusion would compile, as estimated at the tree's
    /// count of cases then, at the root's age then (see
    /// `ResidualFn::fuse_pieces`).
    pub(crate) estimate: std::cell::Cell<(usize, usize, std::time::Duration)>,
    /// The heat of the tree at its last fusion, and the root's age when
    /// its heat was last taken (see `ResidualFn::fuse_pieces`).
    pub(crate) heat_at_fusion: std::cell::Cell<(u64, std::time::Duration)>,
    /// The entries of the pieces the last fusion copied, sorted: cases
    /// taken into them run fused code (see `ResidualFn::hot_again`).
    pub(crate) fused_entries: std::cell::RefCell<Vec<usize>>,
    /// How many times a portal entered the code, and when last
    /// ([`ResidualFn::note_entry`]).
    pub(crate) entered: std::cell::Cell<(u64, Option<std::time::Instant>)>,
    /// A fusion handed to the compiler's thread, until it is installed
    /// (see `ResidualFn::fuse_pieces`).
    pub(crate) pending_fusion: std::cell::RefCell<Option<PendingFusion>>,
    /// Where a hot switch hands the code's fusions to be compiled (code
    /// compiled on the compiler's thread, [`ResidualFn::fuse_elsewhere`]).
    pub(crate) elsewhere: std::cell::Cell<Option<SubmitFn>>,
}

impl ResidualFn {
    /// Compiles a residual function with Cranelift, keeping its listing.
    pub fn compile(f: &ResidualFunction, backend: &mut CraneliftBackend) -> Result<ResidualFn, BackendError> {
        let native = backend.compile(f)?;
        Ok(ResidualFn::with_code(f.clone(), native))
    }

    /// The handle of `f`'s machine code `native` (compiled from it, on this
    /// thread or attached to it: see `run::background`), keeping `f` for
    /// its listing.
    pub fn with_code(f: ResidualFunction, native: NativeCode) -> ResidualFn {
        let pieces = f.pieces.clone();
        let code = ResidualFn(std::rc::Rc::new(Compiled {
            inputs: f.inputs.clone(),
            outputs: f.outputs.clone(),
            listing: std::cell::OnceCell::new(),
            ops: f.op_count(),
            native,
            pieces: pieces.clone(),
            function: f,
            fused: std::cell::Cell::new((0, 0)),
            born: std::time::Instant::now(),
            compiling_at_birth: std::cell::Cell::new(0),
            fusing: std::cell::Cell::new(std::time::Duration::ZERO),
            estimate: std::cell::Cell::new((usize::MAX, 0, std::time::Duration::ZERO)),
            heat_at_fusion: std::cell::Cell::new((0, std::time::Duration::ZERO)),
            fused_entries: std::cell::RefCell::new(Vec::new()),
            entered: std::cell::Cell::new((0, None)),
            pending_fusion: std::cell::RefCell::new(None),
            elsewhere: std::cell::Cell::new(None),
        }));
        // Its switches find it through its pieces (`promotion::flex_hot`).
        if let Some(p) = &pieces {
            let root: std::rc::Rc<dyn std::any::Any> = code.0.clone();
            p.set_root(std::rc::Rc::downgrade(&root));
        }
        code
    }

    /// Records what the module had spent compiling, in nanoseconds, when
    /// this code was compiled: the time its cases take to compile later
    /// is not time it ran ([`ResidualFn::fuse_pieces`]).
    pub fn note_birth(&self, compiling: u64) {
        self.0.compiling_at_birth.set(compiling);
    }

    /// Records that the code's fusions are compiled through `submit` (code
    /// compiled on the compiler's thread), also those a hot switch starts
    /// from inside a call (`run::fusion::flex_hot`).
    pub fn fuse_elsewhere(&self, submit: SubmitFn) {
        self.0.elsewhere.set(Some(submit));
    }

    /// Records that a portal enters the code now: a switch of it that runs
    /// hot fuses it from inside only where this entry, its last, has lasted
    /// `promotion::LONG_CALL` (see `promotion::flex_hot`).
    pub fn note_entry(&self) {
        let (n, _) = self.0.entered.get();
        self.0.entered.set((n + 1, Some(std::time::Instant::now())));
    }

    /// The counter of the code's turn checks, for code with a tree of
    /// pieces (whether or not any of it makes checks yet: cases compiled
    /// later may; see [`crate::ir::function::TurnCounter`]).
    pub fn turns(&self) -> Option<&crate::ir::function::TurnCounter> {
        self.0.pieces.as_ref()?.turns()
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
}

/// The frame a direct call runs its code on, its inputs pushed first
/// (see [`ResidualFn::call_frame`]): no allocation per call.
pub struct InputFrame {
    pub(crate) words: [u64; MAX_FRAME_WORDS],
    pub(crate) len: usize,
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

/// A `char` is its scalar value, as residual code holds it (a `u32`).
impl Word for char {
    const TY: ValTy = ValTy::U32;
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Self {
        char::from_u32(w as u32).unwrap_or('\0')
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
