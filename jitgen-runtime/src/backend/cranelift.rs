//! The Cranelift backend: residual functions to machine code (cranelift-jit).
//!
//! Every residual function is compiled into a JIT module of its own, owned by
//! the [`NativeCode`] handle (and its clones): the code is freed when the last
//! handle is dropped. Checks that Rust performs (division by zero, overflow
//! with overflow checks, bounds) are explicit branches to error exits that
//! return a status word; generated code never traps and never unwinds.
//!
//! ## The calling convention
//!
//! **Calling convention.** Compiled residual code is a function of a frame pointer
//! returning a status word (Cranelift's `tail` convention, entered through a SystemV
//! trampoline: `tramp(code, frame)`; frames hold `MAX_FRAME_WORDS` = 64 words):
//! inputs are read from a frame of 64-bit words, outputs written back to it, and the
//! return value is a status word: 0, or the code of the error exit taken. A uniform
//! signature means one safe typed handle for every function (`Residual<(i64, i64),
//! i64>::call((x, y))`) and no transmute per signature; it costs a few loads and stores
//! at entry and exit only. Checks that Rust performs (division and remainder by zero,
//! `MIN / -1`, overflow where overflow checks are on, shift amounts, bounds) are
//! branches to error blocks that return a status; nothing traps. (`/` and `%` are
//! recorded with `Overflow::Check`; `wrapping_div` and `wrapping_rem` with
//! `Overflow::Wrap`, which gives `MIN` and 0 by -1 without dividing.) Callbacks into Rust use
//! `unsafe extern "C" fn(*mut u64) -> u64` too (`CallbackFn`: unsafe because the buffer
//! must hold the words the callback reads and writes, and the addresses in it must be of
//! live objects of its types), wrapped in `run_callback`, which catches a
//! panic, keeps its payload in a thread-local and returns a status; the caller of the
//! residual function resumes the panic (`ResidualError::resume`). A callback's buffer is
//! the calling function's own frame, whose words are free between the entry's loads and
//! an exit's stores (a stack slot only for a call of 64 words or more). A callback on a
//! cold path (a `Vec` growing) goes through a `preserve_all` stub that clobbers no
//! register and takes no register argument: the code leaves the callback and its buffer
//! in a pair of words of its thread, where the stub's `preserving_dispatch` reads them.
//!
//! ## Register cells
//!
//! Words of memory that a residual function names as `RegisterCell`s (the continuation
//! stack's fields) live in Cranelift variables while it runs: loaded where it starts and
//! after each call, stored before each call and exit when it writes them, so that a loop
//! pushing and popping continuation entries carries them in registers.
//!
//! ## Optimization levels
//!
//! Roots and fused code are compiled at `opt_level=speed` with the backtracking
//! register allocator; flexswitch cases at `opt_level=none` with the single-pass
//! allocator ([`CraneliftBackend::compile_case`]), which skips the e-graph
//! mid-end and allocates registers in one walk of the code. A case that runs
//! often is compiled again at `speed` when fusion copies it into its root, and
//! the cases fusion does not reach are the cold ones. A case's flexswitches
//! store the frame and tail-call one dispatch stub shared by all cases
//! (`stubs.rs`), which scans the table, counts the hit and tail-calls the
//! case or the miss stub; roots and fused code scan inline, a tail call less.
//! Figures in PERFORMANCE.md.
//!
//! ## Layout
//!
//! Blocks that only lead out of the function (returns, errors, flexswitches:
//! `ResidualFunction::exit_paths`) are cold, laid out last, and so are the error
//! blocks and every block the translation makes to continue a cold one (after a call,
//! after a check). Cranelift emits the blocks marked cold after all the others; a block
//! that continues a cold one without the mark is emitted in its place among the hot
//! blocks, and the cold path jumps out to the end and back into the middle, spreading
//! the hot code (`tests/promotion.rs`; figures in PERFORMANCE.md). The register
//! allocator does not see this order: it works on Cranelift's reverse postorder of the
//! blocks, whatever their marks.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};

use super::{Backend, BackendError};
use crate::ir::builder::{CaseTable, Inst, Label, RegisterCell, ResidualFunction, SecondaryMap, Terminator, Val};
use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

pub use super::native::{live_code_modules, DetachedCode, NativeCode};
use super::native::{CodeOwner, Trampoline};
use stubs::{case_scan, count_case_hit, miss_stub_sig, preserving_args};

mod stubs;
pub use crate::ir::function::MAX_FRAME_WORDS;

/// Compiles residual functions with Cranelift for the host.
///
/// Residual functions use Cranelift's `tail` calling convention, so that a
/// flexswitch can tail-call its cases; Rust enters them through a SystemV
/// trampoline compiled once per process.
pub struct CraneliftBackend {
    isa: OwnedTargetIsa,
    /// The same host at `opt_level=none`, for flexswitch cases
    /// ([`CraneliftBackend::compile_case`]).
    case_isa: OwnedTargetIsa,
    trampoline: Trampoline,
    /// The address of the flexswitch miss path shared by all residual code
    /// (see [`CraneliftBackend::miss_stub`]).
    miss_stub: usize,
    /// The address of the dispatch shared by flexswitch cases' switches
    /// (see [`CraneliftBackend::dispatch_stub`]).
    dispatch_stub: usize,
    /// [`RuntimeHooks::direct_failed`].
    direct_failed: usize,
    /// [`RuntimeHooks::flex_hot`].
    flex_hot: usize,
    /// See [`CraneliftBackend::preserving`].
    preserving: usize,
}

/// What residual code calls at run time, given by the layer that runs it:
/// the backend compiles calls to these addresses and imports nothing of it.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeHooks {
    /// Called by a flexswitch when no case matches: given the switch's
    /// [`CaseTable`] and the value, returns the entry of the case to
    /// tail-call (compiling it if need be), or 0 to hand over.
    pub flex_miss: unsafe extern "C" fn(*const CaseTable, u64) -> usize,
    /// Called (callback convention, on the [`CaseTable`]'s address) each
    /// time a case of a switch has been taken `HOT_HITS` times more.
    pub flex_hot: crate::ir::function::CallbackFn,
    /// Called (callback convention) when code called directly
    /// ([`Inst::CallCode`]) returned a non-zero status: the frame holds the
    /// callee's words, then at `MAX_FRAME_WORDS` the status and the entry.
    /// Returns 0 with the results in the frame, or the status to leave with.
    pub direct_failed: crate::ir::function::CallbackFn,
}

/// Where a call through [`CraneliftBackend::preserving`] leaves the status:
/// the buffer's last word.
const PRESERVING_STATUS: i32 = 8 * (MAX_FRAME_WORDS as i32 - 1);
/// Where machine code finds a case table's fields.
const CASES_LEN: i32 = std::mem::offset_of!(CaseTable, len) as i32;
const CASES_ENTRIES: i32 = std::mem::offset_of!(CaseTable, entries) as i32;
const CASES_HITS: i32 = std::mem::offset_of!(CaseTable, hits) as i32;
/// How often a case's hits are reported ([`RuntimeHooks::flex_hot`]): a
/// power of two.
pub const HOT_HITS: u64 = 1 << 16;

fn tail_sig() -> Signature {
    let mut sig = Signature::new(CallConv::Tail);
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

impl CraneliftBackend {
    /// A backend for the host machine, whose code calls `hooks` at run time.
    /// The verifier runs in debug builds. The hooks of a process's first
    /// backend are those of every later one (the miss stub is compiled once).
    pub fn new(hooks: RuntimeHooks) -> Result<CraneliftBackend, BackendError> {
        // The ISA (host detection and flags) is made once per process.
        static ISA: std::sync::OnceLock<Result<OwnedTargetIsa, BackendError>> = std::sync::OnceLock::new();
        let isa = ISA.get_or_init(|| Self::host_isa("speed", "backtracking")).clone()?;
        static CASE_ISA: std::sync::OnceLock<Result<OwnedTargetIsa, BackendError>> = std::sync::OnceLock::new();
        let case_isa = CASE_ISA.get_or_init(|| Self::host_isa("none", "single_pass")).clone()?;
        // So is the trampoline: a thread's first compilation (each of a
        // server's worker threads) does not compile it again.
        static TRAMPOLINE: std::sync::OnceLock<Result<usize, BackendError>> = std::sync::OnceLock::new();
        let entry = TRAMPOLINE.get_or_init(|| Self::trampoline(&isa).map(|t| t as usize)).clone()?;
        // SAFETY: made by `trampoline` with this signature, and never freed.
        let trampoline = unsafe { std::mem::transmute::<usize, Trampoline>(entry) };
        static MISS_STUB: std::sync::OnceLock<Result<usize, BackendError>> = std::sync::OnceLock::new();
        let miss_stub = MISS_STUB.get_or_init(|| Self::miss_stub(&isa, hooks)).clone()?;
        static DISPATCH_STUB: std::sync::OnceLock<Result<usize, BackendError>> = std::sync::OnceLock::new();
        let dispatch_stub = DISPATCH_STUB.get_or_init(|| Self::dispatch_stub(&isa, miss_stub, hooks)).clone()?;
        static PRESERVING: std::sync::OnceLock<Result<usize, BackendError>> = std::sync::OnceLock::new();
        let preserving = PRESERVING.get_or_init(|| Self::preserving(&isa)).clone()?;
        Ok(CraneliftBackend {
            isa,
            case_isa,
            trampoline,
            miss_stub,
            dispatch_stub,
            direct_failed: hooks.direct_failed as usize,
            flex_hot: hooks.flex_hot as usize,
            preserving,
        })
    }

    /// The host's ISA with jitgen's flags, at Cranelift's `opt_level`, with
    /// its `regalloc_algorithm`.
    fn host_isa(opt_level: &str, regalloc: &str) -> Result<OwnedTargetIsa, BackendError> {
        let e = |e: &dyn std::fmt::Display| BackendError(e.to_string());
        let mut flags = settings::builder();
        flags.set("opt_level", opt_level).map_err(|x| e(&x))?;
        flags.set("regalloc_algorithm", regalloc).map_err(|x| e(&x))?;
        flags.set("use_colocated_libcalls", "false").map_err(|x| e(&x))?;
        flags.set("is_pic", "false").map_err(|x| e(&x))?;
        flags.set("preserve_frame_pointers", "true").map_err(|x| e(&x))?;
        // Functions start on a cache line: where a loop falls relative to
        // cache lines and 32-byte fetch windows then depends on the code
        // alone, not on where the code allocator put it.
        flags.set("log2_min_function_alignment", "6").map_err(|x| e(&x))?;
        flags.set("enable_verifier", if cfg!(debug_assertions) { "true" } else { "false" }).map_err(|x| e(&x))?;
        let isa = cranelift_native::builder().map_err(|x| e(&x))?;
        isa.finish(settings::Flags::new(flags)).map_err(|x| e(&x))
    }
}

/// A function of the frame, in the same module as `target`, that writes
/// `index` at `selector` and tail-calls `target`: an entry point of
/// `target` at one of its reentries.
fn reentry_stub(
    module: &mut JITModule,
    target: cranelift_module::FuncId,
    selector: u64,
    index: u64,
) -> Result<cranelift_module::FuncId, BackendError> {
    let err = |e: &dyn std::fmt::Display| BackendError(e.to_string());
    let mut ctx = module.make_context();
    ctx.func.signature = tail_sig();
    let mut fbc = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let blk = b.create_block();
        b.append_block_params_for_function_params(blk);
        b.switch_to_block(blk);
        let frame = b.block_params(blk)[0];
        let at = b.ins().iconst(types::I64, selector as i64);
        let k = b.ins().iconst(types::I64, index as i64);
        b.ins().store(MemFlagsData::trusted(), k, at, 0);
        let callee = module.declare_func_in_func(target, b.func);
        // By absolute address: the module may place the stub in another
        // mapping than `target`, further away than a 32-bit displacement
        // reaches.
        b.func.dfg.ext_funcs[callee].colocated = false;
        b.ins().return_call(callee, &[frame]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    let id = module.declare_anonymous_function(&ctx.func.signature).map_err(|e| err(&e))?;
    module.define_function(id, &mut ctx).map_err(|e| err(&format!("{e:?}")))?;
    Ok(id)
}

extern "C" fn fmod_f64(a: f64, b: f64) -> f64 {
    a % b
}

fn clif(ty: ValTy) -> Type {
    match ty {
        ValTy::Int { bits: 8, .. } | ValTy::Bool => types::I8,
        ValTy::Int { bits: 16, .. } => types::I16,
        ValTy::Int { bits: 32, .. } => types::I32,
        ValTy::Int { .. } | ValTy::Ptr => types::I64,
        ValTy::F64 => types::F64,
    }
}

struct Tr<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    f: &'a ResidualFunction,
    vals: SecondaryMap<Val, Option<Value>>,
    blocks: HashMap<Label, Block>,
    frame: Value,
    errors: HashMap<u64, Block>,
    bounds_error: Option<Block>,
    propagate: Option<Block>,
    /// [`ResidualFunction::true_side_loops`].
    true_side_loops: SecondaryMap<Label, bool>,
    /// The block being translated.
    current: Label,
    /// [`CraneliftBackend::miss_stub`]'s address.
    miss_stub: usize,
    /// [`CraneliftBackend::dispatch_stub`]'s address, where the function's
    /// switches dispatch through it (a flexswitch case's).
    dispatch_stub: Option<usize>,
    /// [`RuntimeHooks::direct_failed`]'s address.
    direct_failed: usize,
    /// [`RuntimeHooks::flex_hot`]'s address.
    flex_hot: usize,
    /// [`CraneliftBackend::preserving`]'s address.
    preserving: usize,
    /// The address of the running thread's [`stubs::PRESERVING_ARGS`].
    preserving_args: usize,
    /// The address of each switch's case table ([`CodeContext`]).
    case_tables: &'a [usize],
    /// The function's register cells, each a variable, and whether the
    /// function stores to it (one it only reads is not stored back).
    cells: Vec<(RegisterCell, Variable, bool)>,
    /// The constants that are a register cell's address.
    cell_bases: HashMap<Val, u64>,
    /// The constants made in each block ([`Tr::iconst`]).
    consts: rustc_hash::FxHashMap<(Block, Type, i64), Value>,
}

impl Tr<'_, '_> {
    /// Values of types `tys` from the frame's first words (a function's or
    /// a reentry's inputs).
    fn inputs_from_frame(&mut self, tys: &[ValTy]) -> Vec<BlockArg> {
        let frame = self.frame;
        tys.iter()
            .enumerate()
            .map(|(k, t)| {
                let x = if *t == ValTy::F64 {
                    self.b.ins().load(types::F64, MemFlagsData::trusted(), frame, 8 * k as i32)
                } else {
                    let w = self.b.ins().load(types::I64, MemFlagsData::trusted(), frame, 8 * k as i32);
                    self.from_word(w, *t)
                };
                BlockArg::Value(x)
            })
            .collect()
    }

    /// At the entry: a word at `selector` other than zero (a reentry's
    /// index plus one) is cleared, and the code continues at that reentry
    /// with its inputs from the frame; zero falls through to the entry.
    fn reentry_dispatch(&mut self, selector: u64) {
        let f = self.f;
        let at = self.iconst(types::I64, selector as i64);
        let which = self.b.ins().load(types::I64, MemFlagsData::trusted(), at, 0);
        let (dispatch, entry) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(dispatch);
        self.b.ins().brif(which, dispatch, &[], entry, &[]);
        self.b.switch_to_block(dispatch);
        let zero = self.iconst(types::I64, 0);
        self.b.ins().store(MemFlagsData::trusted(), zero, at, 0);
        for (k, l) in f.reentries.iter().enumerate() {
            let go = self.b.create_block();
            if k + 1 < f.reentries.len() {
                let next = self.b.create_block();
                self.b.set_cold_block(next);
                let this = self.b.ins().icmp_imm_s(IntCC::Equal, which, k as i64 + 1);
                self.b.ins().brif(this, go, &[], next, &[]);
                self.b.switch_to_block(go);
                self.reenter(*l);
                self.b.switch_to_block(next);
            } else {
                self.b.ins().jump(go, &[]);
                self.b.switch_to_block(go);
                self.reenter(*l);
            }
        }
        self.b.switch_to_block(entry);
    }

    /// Adds one to the hit counter of case `i` of the table at `tbl`; at
    /// each multiple of `HOT_HITS` (a power of two), reports the table hot
    /// ([`RuntimeHooks::flex_hot`]).
    fn count_hit(&mut self, tbl: Value, i: Value) {
        count_case_hit(self.b, tbl, i, self.flex_hot);
    }

    /// Jumps to block `l` with its parameters from the frame.
    fn reenter(&mut self, l: Label) {
        let f = self.f;
        let tys: Vec<ValTy> = f.blocks[l].params.iter().map(|p| f.vals[*p]).collect();
        let args = self.inputs_from_frame(&tys);
        let to = self.blocks[&l];
        self.b.ins().jump(to, &args);
    }

    /// The variable of the register cell that a load or store at
    /// `base+offset` reads or writes, if it is one.
    fn cell(&self, base: Val, offset: i32) -> Option<Variable> {
        let address = *self.cell_bases.get(&base)?;
        self.cells.iter().find(|(c, ..)| c.address == address && c.offset == offset).map(|(_, v, _)| *v)
    }

    /// Loads the register cells from memory (where the function starts,
    /// and after a call).
    fn load_cells(&mut self) {
        for k in 0..self.cells.len() {
            let (c, var, _) = self.cells[k];
            let a = self.iconst(types::I64, c.address as i64);
            let x = self.b.ins().load(types::I64, MemFlagsData::trusted(), a, c.offset);
            self.b.def_var(var, x);
        }
    }

    /// Stores the register cells to memory (before a call or an exit).
    fn store_cells(&mut self) {
        for k in 0..self.cells.len() {
            let (c, var, written) = self.cells[k];
            if !written {
                continue;
            }
            let x = self.b.use_var(var);
            let a = self.iconst(types::I64, c.address as i64);
            self.b.ins().store(MemFlagsData::trusted(), x, a, c.offset);
        }
    }

    /// The constant `k` of type `ty`, made once per block: exits store the
    /// same addresses (a register cell's, a table's) and constants again and
    /// again, and at `opt_level=none` Cranelift compiled each copy.
    fn iconst(&mut self, ty: Type, k: i64) -> Value {
        let Some(block) = self.b.current_block() else { return self.b.ins().iconst(ty, k) };
        if let Some(v) = self.consts.get(&(block, ty, k)) {
            return *v;
        }
        let v = self.b.ins().iconst(ty, k);
        self.consts.insert((block, ty, k), v);
        v
    }

    fn v(&self, v: Val) -> Value {
        self.vals[v].expect("value defined before use")
    }

    fn def(&mut self, v: Val, x: Value) {
        self.vals[v] = Some(x);
    }

    fn ty(&self, v: Val) -> ValTy {
        self.f.vals[v]
    }

    /// A value widened to a 64-bit word (floats stay floats).
    fn to_word(&mut self, x: Value, ty: ValTy) -> Value {
        match ty {
            ValTy::Int { bits: 64, .. } | ValTy::Ptr | ValTy::F64 => x,
            ValTy::Int { signed: true, .. } => self.b.ins().sextend(types::I64, x),
            _ => self.b.ins().uextend(types::I64, x),
        }
    }

    fn from_word(&mut self, w: Value, ty: ValTy) -> Value {
        match clif(ty) {
            types::I64 | types::F64 => w,
            t => self.b.ins().ireduce(t, w),
        }
    }

    /// A new block that continues the current one: cold (laid out last)
    /// when the current one is, so that a cold path split by the
    /// translation stays in one piece at the end of the layout. (A cold
    /// block jumping back to a block laid out before it reads, to the
    /// register allocator, as a loop around all the code between them.)
    fn continuation(&mut self) -> Block {
        let blk = self.b.create_block();
        if self.b.current_block().is_some_and(|c| self.b.func.layout.is_cold(c)) {
            self.b.set_cold_block(blk);
        }
        blk
    }

    /// A new block laid out last (cold).
    fn cold_block(&mut self) -> Block {
        let blk = self.b.create_block();
        self.b.set_cold_block(blk);
        blk
    }

    fn error_block(&mut self, kind: ErrorKind) -> Block {
        let code = kind.code();
        if let Some(b) = self.errors.get(&code) {
            return *b;
        }
        let blk = self.cold_block();
        self.errors.insert(code, blk);
        blk
    }

    /// The value of `v` when it is an integer constant (sign-extended).
    fn const_of(&self, v: Value) -> Option<i64> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let ValueDef::Result(inst, _) = self.b.func.dfg.value_def(v) else { return None };
        match self.b.func.dfg.insts[inst] {
            InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } => {
                let bits = self.b.func.dfg.value_type(v).bits();
                let x = imm.bits();
                Some(if bits < 64 { (x << (64 - bits)) >> (64 - bits) } else { x })
            }
            _ => None,
        }
    }

    /// Continues only if `cond` is false; otherwise leaves with `kind`.
    fn exit_if(&mut self, cond: Value, kind: ErrorKind) {
        let err = self.error_block(kind);
        let cont = self.continuation();
        self.b.ins().brif(cond, err, &[], cont, &[]);
        self.b.switch_to_block(cont);
    }

    fn args(&self, vs: &[Val]) -> Vec<BlockArg> {
        vs.iter().map(|v| BlockArg::Value(self.v(*v))).collect()
    }

    fn int_cc(op: CmpOp, signed: bool) -> IntCC {
        match (op, signed) {
            (CmpOp::Eq, _) => IntCC::Equal,
            (CmpOp::Ne, _) => IntCC::NotEqual,
            (CmpOp::Lt, true) => IntCC::SignedLessThan,
            (CmpOp::Le, true) => IntCC::SignedLessThanOrEqual,
            (CmpOp::Gt, true) => IntCC::SignedGreaterThan,
            (CmpOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
            (CmpOp::Lt, false) => IntCC::UnsignedLessThan,
            (CmpOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
            (CmpOp::Gt, false) => IntCC::UnsignedGreaterThan,
            (CmpOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        }
    }

    fn min_of(ty: ValTy) -> i64 {
        ty.canon(1u64 << (ty.bits() - 1)) as i64
    }

    fn bin(&mut self, op: BinOp, ty: ValTy, ov: Overflow, a: Value, b: Value, b_ty: ValTy) -> Value {
        let cty = clif(ty);
        if ty == ValTy::F64 {
            return match op {
                BinOp::Add => self.b.ins().fadd(a, b),
                BinOp::Sub => self.b.ins().fsub(a, b),
                BinOp::Mul => self.b.ins().fmul(a, b),
                BinOp::Div => self.b.ins().fdiv(a, b),
                BinOp::Rem => {
                    let mut sig = Signature::new(CallConv::SystemV);
                    sig.params.push(AbiParam::new(types::F64));
                    sig.params.push(AbiParam::new(types::F64));
                    sig.returns.push(AbiParam::new(types::F64));
                    let sig = self.b.import_signature(sig);
                    let fp = self.iconst(types::I64, fmod_f64 as *const () as usize as i64);
                    let call = self.b.ins().call_indirect(sig, fp, &[a, b]);
                    self.b.inst_results(call)[0]
                }
                BinOp::Min | BinOp::Max => {
                    // Rust's f64::min/max return the other operand when one is NaN.
                    let cc = if op == BinOp::Min { FloatCC::LessThan } else { FloatCC::GreaterThan };
                    let pick_a = self.b.ins().fcmp(cc, a, b);
                    let ordered = self.b.ins().select(pick_a, a, b);
                    let b_nan = self.b.ins().fcmp(FloatCC::Unordered, b, b);
                    self.b.ins().select(b_nan, a, ordered)
                }
                _ => unreachable!("bitwise operation on f64 rejected when recorded"),
            };
        }
        let signed = ty.signed();
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul if ov == Overflow::Check => {
                if ty.bits() == 64 {
                    let (r, of) = match (op, signed) {
                        (BinOp::Add, true) => self.b.ins().sadd_overflow(a, b),
                        (BinOp::Add, false) => self.b.ins().uadd_overflow(a, b),
                        (BinOp::Sub, true) => self.b.ins().ssub_overflow(a, b),
                        (BinOp::Sub, false) => self.b.ins().usub_overflow(a, b),
                        (_, true) => self.b.ins().smul_overflow(a, b),
                        (_, false) => self.b.ins().umul_overflow(a, b),
                    };
                    self.exit_if(of, ErrorKind::Overflow(op));
                    r
                } else {
                    // Narrow: compute in 64 bits, where it cannot overflow, and
                    // check that the result survives truncation.
                    let (wa, wb) = (self.to_word(a, ty), self.to_word(b, ty));
                    let w = match op {
                        BinOp::Add => self.b.ins().iadd(wa, wb),
                        BinOp::Sub => self.b.ins().isub(wa, wb),
                        _ => self.b.ins().imul(wa, wb),
                    };
                    let r = self.b.ins().ireduce(cty, w);
                    let back = self.to_word(r, ty);
                    let differs = self.b.ins().icmp(IntCC::NotEqual, back, w);
                    self.exit_if(differs, ErrorKind::Overflow(op));
                    r
                }
            }
            BinOp::Add => self.b.ins().iadd(a, b),
            BinOp::Sub => self.b.ins().isub(a, b),
            BinOp::Mul => self.b.ins().imul(a, b),
            BinOp::Div | BinOp::Rem if signed && self.const_of(b).is_some_and(|c| c > 0) => {
                // By a positive constant: nothing to check, and a dividend
                // that is not negative (the common case, and predicted)
                // takes the unsigned sequence, shorter than the signed one.
                let nonneg = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, a, 0);
                let (fast, slow, join) = (self.continuation(), self.cold_block(), self.continuation());
                let r = self.b.append_block_param(join, cty);
                self.b.ins().brif(nonneg, fast, &[], slow, &[]);
                self.b.switch_to_block(fast);
                let q = if op == BinOp::Div { self.b.ins().udiv(a, b) } else { self.b.ins().urem(a, b) };
                self.b.ins().jump(join, &[BlockArg::Value(q)]);
                self.b.switch_to_block(slow);
                let q = if op == BinOp::Div { self.b.ins().sdiv(a, b) } else { self.b.ins().srem(a, b) };
                self.b.ins().jump(join, &[BlockArg::Value(q)]);
                self.b.switch_to_block(join);
                r
            }
            BinOp::Div | BinOp::Rem => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                let kind = if op == BinOp::Div { ErrorKind::DivideByZero } else { ErrorKind::RemainderByZero };
                self.exit_if(zero, kind);
                if signed && ov == Overflow::Check {
                    let is_min = self.b.ins().icmp_imm_s(IntCC::Equal, a, Self::min_of(ty));
                    let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                    let both = self.b.ins().band(is_min, is_m1);
                    self.exit_if(both, ErrorKind::Overflow(op));
                } else if signed {
                    // Wrapping: by -1, `a / -1` is `-a` (`MIN` stays `MIN`)
                    // and `a % -1` is 0, without the division, which traps
                    // on `MIN / -1`.
                    let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                    let one = self.iconst(clif(ty), 1);
                    let divisor = self.b.ins().select(is_m1, one, b);
                    let (by_m1, r) = if op == BinOp::Div {
                        (self.b.ins().ineg(a), self.b.ins().sdiv(a, divisor))
                    } else {
                        (self.iconst(clif(ty), 0), self.b.ins().srem(a, divisor))
                    };
                    return self.b.ins().select(is_m1, by_m1, r);
                }
                match (op, signed) {
                    (BinOp::Div, true) => self.b.ins().sdiv(a, b),
                    (BinOp::Div, false) => self.b.ins().udiv(a, b),
                    (_, true) => self.b.ins().srem(a, b),
                    (_, false) => self.b.ins().urem(a, b),
                }
            }
            BinOp::And => self.b.ins().band(a, b),
            BinOp::Or => self.b.ins().bor(a, b),
            BinOp::Xor => self.b.ins().bxor(a, b),
            BinOp::Shl | BinOp::Shr => {
                if ov == Overflow::Check {
                    let amount = self.to_word(b, b_ty);
                    let too_far = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, amount, ty.bits() as i64);
                    self.exit_if(too_far, ErrorKind::Overflow(op));
                }
                match (op, signed) {
                    (BinOp::Shl, _) => self.b.ins().ishl(a, b),
                    (_, true) => self.b.ins().sshr(a, b),
                    (_, false) => self.b.ins().ushr(a, b),
                }
            }
            BinOp::Min if signed => self.b.ins().smin(a, b),
            BinOp::Min => self.b.ins().umin(a, b),
            BinOp::Max if signed => self.b.ins().smax(a, b),
            BinOp::Max => self.b.ins().umax(a, b),
        }
    }

    fn un(&mut self, op: UnOp, ty: ValTy, ov: Overflow, a: Value) -> Value {
        match (ty, op) {
            (ValTy::F64, UnOp::Neg) => self.b.ins().fneg(a),
            (ValTy::F64, _) => self.b.ins().fabs(a),
            (ValTy::Bool, _) => self.b.ins().icmp_imm_s(IntCC::Equal, a, 0),
            (_, UnOp::Not) => self.b.ins().bnot(a),
            (_, UnOp::Abs) if !ty.signed() => a,
            (_, UnOp::Neg | UnOp::Abs) => {
                if ov == Overflow::Check {
                    let bad = if ty.signed() {
                        self.b.ins().icmp_imm_s(IntCC::Equal, a, Self::min_of(ty))
                    } else {
                        self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0)
                    };
                    self.exit_if(bad, ErrorKind::NegOverflow);
                }
                if op == UnOp::Neg {
                    self.b.ins().ineg(a)
                } else {
                    self.b.ins().iabs(a)
                }
            }
        }
    }

    fn cast(&mut self, from: ValTy, to: ValTy, a: Value) -> Value {
        match (from, to) {
            (ValTy::F64, ValTy::F64) => a,
            (ValTy::F64, ValTy::Bool) => {
                let z = self.b.ins().f64const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, a, z)
            }
            (ValTy::F64, ValTy::Int { bits, signed }) => {
                if bits >= 32 {
                    let t = clif(to);
                    return if signed {
                        self.b.ins().fcvt_to_sint_sat(t, a)
                    } else {
                        self.b.ins().fcvt_to_uint_sat(t, a)
                    };
                }
                let w = if signed {
                    self.b.ins().fcvt_to_sint_sat(types::I32, a)
                } else {
                    self.b.ins().fcvt_to_uint_sat(types::I32, a)
                };
                let clamped = if signed {
                    let lo = self.iconst(types::I32, -(1i64 << (bits - 1)));
                    let hi = self.iconst(types::I32, (1i64 << (bits - 1)) - 1);
                    let x = self.b.ins().smax(w, lo);
                    self.b.ins().smin(x, hi)
                } else {
                    let hi = self.iconst(types::I32, (1i64 << bits) - 1);
                    self.b.ins().umin(w, hi)
                };
                self.b.ins().ireduce(clif(to), clamped)
            }
            (_, ValTy::F64) => {
                let w = self.to_word(a, from);
                if from.signed() {
                    self.b.ins().fcvt_from_sint(types::F64, w)
                } else {
                    self.b.ins().fcvt_from_uint(types::F64, w)
                }
            }
            (_, ValTy::Bool) => self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0),
            (_, _) => {
                let (fb, tb) = (clif(from).bits(), clif(to).bits());
                if fb == tb {
                    a
                } else if fb > tb {
                    self.b.ins().ireduce(clif(to), a)
                } else if from.signed() {
                    self.b.ins().sextend(clif(to), a)
                } else {
                    self.b.ins().uextend(clif(to), a)
                }
            }
        }
    }

    fn inst(&mut self, i: &Inst) {
        match i {
            Inst::Const { dst, ty, bits } => {
                let x = match ty {
                    ValTy::F64 => self.b.ins().f64const(f64::from_bits(*bits)),
                    t => self.iconst(clif(*t), *bits as i64),
                };
                if *ty == ValTy::Ptr && self.cells.iter().any(|(c, ..)| c.address == *bits) {
                    self.cell_bases.insert(*dst, *bits);
                }
                self.def(*dst, x);
            }
            Inst::Bin { dst, op, ty, ov, a, b } => {
                let (x, y, bt) = (self.v(*a), self.v(*b), self.ty(*b));
                let r = self.bin(*op, *ty, *ov, x, y, bt);
                self.def(*dst, r);
            }
            Inst::Un { dst, op, ty, ov, a } => {
                let x = self.v(*a);
                let r = self.un(*op, *ty, *ov, x);
                self.def(*dst, r);
            }
            Inst::Cmp { dst, op, ty, a, b } => {
                let (x, y) = (self.v(*a), self.v(*b));
                let r = if *ty == ValTy::F64 {
                    let cc = match op {
                        CmpOp::Eq => FloatCC::Equal,
                        CmpOp::Ne => FloatCC::NotEqual,
                        CmpOp::Lt => FloatCC::LessThan,
                        CmpOp::Le => FloatCC::LessThanOrEqual,
                        CmpOp::Gt => FloatCC::GreaterThan,
                        CmpOp::Ge => FloatCC::GreaterThanOrEqual,
                    };
                    self.b.ins().fcmp(cc, x, y)
                } else {
                    self.b.ins().icmp(Self::int_cc(*op, ty.signed()), x, y)
                };
                self.def(*dst, r);
            }
            Inst::Cast { dst, from, to, a } => {
                let x = self.v(*a);
                let r = self.cast(*from, *to, x);
                self.def(*dst, r);
            }
            Inst::Load { dst, ty, base, offset } => {
                if let Some(var) = self.cell(*base, *offset) {
                    let x = self.b.use_var(var);
                    self.def(*dst, x);
                    return;
                }
                let p = self.v(*base);
                let r = self.b.ins().load(clif(*ty), MemFlagsData::trusted(), p, *offset);
                self.def(*dst, r);
            }
            Inst::Store { base, offset, value, .. } => {
                if let Some(var) = self.cell(*base, *offset) {
                    let x = self.v(*value);
                    self.b.def_var(var, x);
                    return;
                }
                let (p, x) = (self.v(*base), self.v(*value));
                self.b.ins().store(MemFlagsData::trusted(), x, p, *offset);
            }
            Inst::BoundsCheck { index, len } => {
                let (i, n) = (self.v(*index), self.v(*len));
                let (i, n) = (self.to_word(i, self.ty(*index)), self.to_word(n, self.ty(*len)));
                let out = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, n);
                let err = match self.bounds_error {
                    Some(b) => b,
                    None => {
                        let blk = self.cold_block();
                        self.b.append_block_param(blk, types::I64);
                        self.b.append_block_param(blk, types::I64);
                        *self.bounds_error.insert(blk)
                    }
                };
                let cont = self.continuation();
                self.b.ins().brif(out, err, &[BlockArg::Value(i), BlockArg::Value(n)], cont, &[]);
                self.b.switch_to_block(cont);
            }
            Inst::CallCode { dsts, code, entry, args } => {
                // The callee's frame, then the status and the entry for the
                // failure hook.
                self.store_cells();
                let (slot, addr) = self.call_frame(args, MAX_FRAME_WORDS + 2);
                let target = self.v(*code);
                let tsig = self.b.import_signature(tail_sig());
                let call = self.b.ins().call_indirect(tsig, target, &[addr]);
                let status = self.b.inst_results(call)[0];
                let failed = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
                let (fail, cont) = (self.cold_block(), self.continuation());
                self.b.ins().brif(failed, fail, &[], cont, &[]);
                self.b.switch_to_block(fail);
                let at = 8 * MAX_FRAME_WORDS as i32;
                self.b.ins().stack_store(types::I64, status, slot, at);
                let e = self.iconst(types::I64, *entry as i64);
                self.b.ins().stack_store(types::I64, e, slot, at + 8);
                let status = self.callback(self.direct_failed, addr);
                self.propagate_or(status, cont);
                self.results(dsts, addr);
                self.load_cells();
            }
            Inst::Call { dsts, func, args, cold, .. } => {
                self.store_cells();
                let words = args.len().max(dsts.len()).max(1);
                let addr = self.callback_buffer(args, words);
                let status = if *cold && words < MAX_FRAME_WORDS {
                    self.preserving_callback(*func as usize, addr)
                } else {
                    self.callback(*func as usize, addr)
                };
                let cont = self.continuation();
                self.propagate_or(status, cont);
                self.results(dsts, addr);
                self.load_cells();
            }
        }
    }

    /// A stack slot of `words` words holding `args` first, and its address.
    fn call_frame(&mut self, args: &[(Val, ValTy)], words: usize) -> (cranelift_codegen::ir::StackSlot, Value) {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8 * words as u32, 3));
        for (k, (a, t)) in args.iter().enumerate() {
            let x = self.v(*a);
            let w = self.to_word(x, *t);
            self.b.ins().stack_store(types::I64, w, slot, 8 * k as i32);
        }
        let addr = self.b.ins().stack_addr(types::I64, slot, 0);
        (slot, addr)
    }

    /// The buffer of a callback's call, holding `args` first, of at least
    /// `words` words and [`MAX_FRAME_WORDS`] in all: the function's own
    /// frame, whose words are free between the entry's loads and an exit's
    /// stores, when the call needs at most `MAX_FRAME_WORDS - 1` (the last
    /// word takes a preserving call's status), else a stack slot. The frame
    /// takes no address of its own: a stack slot's address is a value that
    /// Cranelift hoists out of loops, one per slot and offset, and then
    /// keeps in a stack slot of its own across the loop.
    fn callback_buffer(&mut self, args: &[(Val, ValTy)], words: usize) -> Value {
        if words < MAX_FRAME_WORDS {
            for (k, (a, t)) in args.iter().enumerate() {
                let x = self.v(*a);
                let w = self.to_word(x, *t);
                self.b.ins().store(MemFlagsData::trusted(), w, self.frame, 8 * k as i32);
            }
            return self.frame;
        }
        self.call_frame(args, words).1
    }

    /// A call of the callback at `func` on the buffer at `addr`: its status.
    fn callback(&mut self, func: usize, addr: Value) -> Value {
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let sig = self.b.import_signature(sig);
        let fp = self.iconst(types::I64, func as i64);
        let call = self.b.ins().call_indirect(sig, fp, &[addr]);
        self.b.inst_results(call)[0]
    }

    /// [`Tr::callback`] through [`CraneliftBackend::preserving`], a call
    /// that clobbers no register and takes no register argument: the
    /// callback and the buffer go to the thread's [`stubs::PRESERVING_ARGS`], the
    /// status comes back in the buffer's last word (the buffer is the
    /// frame: see [`Tr::callback_buffer`]).
    fn preserving_callback(&mut self, func: usize, addr: Value) -> Value {
        let args = self.iconst(types::I64, self.preserving_args as i64);
        let fp = self.iconst(types::I64, func as i64);
        self.b.ins().store(MemFlagsData::trusted(), fp, args, 0);
        self.b.ins().store(MemFlagsData::trusted(), addr, args, 8);
        let sig = self.b.import_signature(Signature::new(CallConv::PreserveAll));
        let stub = self.iconst(types::I64, self.preserving as i64);
        self.b.ins().call_indirect(sig, stub, &[]);
        self.b.ins().load(types::I64, MemFlagsData::trusted(), addr, PRESERVING_STATUS)
    }

    /// Leaves with `status` unless it is 0; else goes on in `cont`.
    fn propagate_or(&mut self, status: Value, cont: Block) {
        let failed = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
        let prop = match self.propagate {
            Some(b) => b,
            None => {
                let blk = self.cold_block();
                self.b.append_block_param(blk, types::I64);
                *self.propagate.insert(blk)
            }
        };
        self.b.ins().brif(failed, prop, &[BlockArg::Value(status)], cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// Defines `dsts` from the first words of the buffer at `addr`.
    fn results(&mut self, dsts: &[Val], addr: Value) {
        for (k, d) in dsts.iter().enumerate() {
            let t = self.ty(*d);
            let r = if t == ValTy::F64 {
                self.b.ins().load(types::F64, MemFlagsData::trusted(), addr, 8 * k as i32)
            } else {
                let w = self.b.ins().load(types::I64, MemFlagsData::trusted(), addr, 8 * k as i32);
                self.from_word(w, t)
            };
            self.def(*d, r);
        }
    }

    fn terminator(&mut self, t: &Terminator) {
        if matches!(t, Terminator::Return(_) | Terminator::Error(_) | Terminator::FlexSwitch { .. }) {
            self.store_cells();
        }
        match t {
            Terminator::Jump(l, args) => {
                let a = self.args(args);
                self.b.ins().jump(self.blocks[l], &a);
            }
            Terminator::Branch { cond, if_true, if_false } => {
                let (ta, fa) = (self.args(&if_true.1), self.args(&if_false.1));
                let c = self.v(*cond);
                let (t, f) = (self.blocks[&if_true.0], self.blocks[&if_false.0]);
                let mut edges = vec![];
                let (t, ta) = self.cold_edge(t, ta, &mut edges);
                let (f, fa) = self.cold_edge(f, fa, &mut edges);
                if self.true_side_loops[self.current] {
                    // Cranelift lays a branch's false side right after it:
                    // the loop's side goes there (`c == 0` folds into the
                    // comparison that made `c`).
                    let not = self.b.ins().icmp_imm_u(IntCC::Equal, c, 0);
                    self.b.ins().brif(not, f, &fa, t, &ta);
                } else {
                    self.b.ins().brif(c, t, &ta, f, &fa);
                }
                for (edge, target, args) in edges {
                    self.b.switch_to_block(edge);
                    self.b.ins().jump(target, &args);
                }
            }
            Terminator::Return(vals) => {
                for (k, v) in vals.iter().enumerate() {
                    let (x, t) = (self.v(*v), self.ty(*v));
                    let w = self.to_word(x, t);
                    self.b.ins().store(MemFlagsData::trusted(), w, self.frame, 8 * k as i32);
                }
                let ok = self.iconst(types::I64, 0);
                self.b.ins().return_(&[ok]);
            }
            Terminator::Error(kind) => {
                let code = self.iconst(types::I64, kind.code() as i64);
                self.b.ins().return_(&[code]);
            }
            Terminator::FlexSwitch { value, live, switch } => {
                // The live values, then the promoted value, into the frame.
                for (k, v) in live.iter().enumerate() {
                    let (x, t) = (self.v(*v), self.ty(*v));
                    let w = self.to_word(x, t);
                    self.b.ins().store(MemFlagsData::trusted(), w, self.frame, 8 * k as i32);
                }
                let (x, t) = (self.v(*value), self.ty(*value));
                let vw = self.to_word(x, t);
                let vw = if t == ValTy::F64 { self.b.ins().bitcast(types::I64, MemFlagsData::new(), vw) } else { vw };
                self.b.ins().store(MemFlagsData::trusted(), vw, self.frame, 8 * live.len() as i32);
                let table = self.case_tables[*switch as usize] as i64;
                let tbl = self.iconst(types::I64, table);
                let offset = 8 * (live.len() as i64 + 1);
                let status = ErrorKind::Resume(live.len() as u32 + 2).code() as i64;
                if let Some(stub) = self.dispatch_stub {
                    let [offset, status, stub] = [offset, status, stub as i64].map(|k| self.iconst(types::I64, k));
                    let ssig = self.b.import_signature(miss_stub_sig());
                    self.b.ins().return_call_indirect(ssig, stub, &[self.frame, tbl, vw, offset, status]);
                    return;
                }
                // A switch leaves the function, so its block is an exit path,
                // laid out last (cold): so are the blocks of its dispatch and
                // of its miss path, so that they do not stand between the
                // entry and a loop (a guard's failure side).
                let cold = self.b.current_block().is_some_and(|c| self.b.func.layout.is_cold(c));
                let block = |b: &mut FunctionBuilder| {
                    let blk = b.create_block();
                    if cold {
                        b.set_cold_block(blk);
                    }
                    blk
                };
                let hit = block(self.b);
                let miss = block(self.b);
                self.b.append_block_param(hit, types::I64);
                if self.const_of(x).is_some() {
                    // A constant (the lazily compiled side of a split): only
                    // this value ever misses, so a table with a case holds
                    // just its case, first.
                    let len = self.b.ins().load(types::I64, MemFlagsData::trusted(), tbl, CASES_LEN);
                    let first = block(self.b);
                    self.b.ins().brif(len, first, &[], miss, &[]);
                    self.b.switch_to_block(first);
                    let entries = self.b.ins().load(types::I64, MemFlagsData::trusted(), tbl, CASES_ENTRIES);
                    let code = self.b.ins().load(types::I64, MemFlagsData::trusted(), entries, 8);
                    let zero = self.iconst(types::I64, 0);
                    self.count_hit(tbl, zero);
                    self.b.ins().jump(hit, &[BlockArg::Value(code)]);
                } else {
                    // Scan the cases: (value, code) pairs.
                    let (i, code) = case_scan(self.b, tbl, vw, miss, &block);
                    self.count_hit(tbl, i);
                    self.b.ins().jump(hit, &[BlockArg::Value(code)]);
                }
                self.b.switch_to_block(hit);
                let target = self.b.block_params(hit)[0];
                let tsig = self.b.import_signature(tail_sig());
                self.b.ins().return_call_indirect(tsig, target, &[self.frame]);
                // A miss calls back into the compiler for a new case, in the
                // shared stub; it hands over with the table after the
                // promoted value if there is none.
                self.b.switch_to_block(miss);
                let offset = self.iconst(types::I64, offset);
                let status = self.iconst(types::I64, status);
                let stub = self.iconst(types::I64, self.miss_stub as i64);
                let ssig = self.b.import_signature(miss_stub_sig());
                self.b.ins().return_call_indirect(ssig, stub, &[self.frame, tbl, vw, offset, status]);
            }
        }
    }

    /// A branch's way to `target` with `args`: where the target is laid
    /// out last (cold) and takes arguments, a block of its own that jumps
    /// there, so that Cranelift computes the arguments (constants, sums)
    /// on that edge and not before the branch, where they would take
    /// registers, or stack slots, on the path that runs.
    /// The edge's block is filled after the branch (`edges`: the block,
    /// its target and the arguments).
    fn cold_edge(
        &mut self,
        target: Block,
        args: Vec<BlockArg>,
        edges: &mut Vec<(Block, Block, Vec<BlockArg>)>,
    ) -> (Block, Vec<BlockArg>) {
        if args.is_empty() || !self.b.func.layout.is_cold(target) {
            return (target, args);
        }
        let edge = self.b.create_block();
        self.b.set_cold_block(edge);
        edges.push((edge, target, args));
        (edge, vec![])
    }

    fn error_blocks(&mut self) {
        let mut errors: Vec<(u64, Block)> = self.errors.iter().map(|(c, b)| (*c, *b)).collect();
        errors.sort();
        for (code, blk) in errors {
            self.b.switch_to_block(blk);
            self.store_cells();
            let c = self.iconst(types::I64, code as i64);
            self.b.ins().return_(&[c]);
        }
        if let Some(blk) = self.bounds_error {
            self.b.switch_to_block(blk);
            let (i, n) = (self.b.block_params(blk)[0], self.b.block_params(blk)[1]);
            self.store_cells();
            self.b.ins().store(MemFlagsData::trusted(), i, self.frame, 0);
            self.b.ins().store(MemFlagsData::trusted(), n, self.frame, 8);
            let c = self.iconst(types::I64, ErrorKind::IndexOutOfBounds.code() as i64);
            self.b.ins().return_(&[c]);
        }
        if let Some(blk) = self.propagate {
            self.b.switch_to_block(blk);
            let s = self.b.block_params(blk)[0];
            self.b.ins().return_(&[s]);
        }
    }
}

/// The register cells of `f` that it can keep in registers, each with
/// whether `f` stores to it: a cell some load or store reaches other than
/// as one 64-bit word at its offset is left in memory.
fn usable_cells(f: &ResidualFunction) -> Vec<(RegisterCell, bool)> {
    let mut addresses: HashMap<Val, u64> = HashMap::new();
    let mut cells: Vec<(RegisterCell, bool, bool)> = f.cells.iter().map(|c| (*c, false, true)).collect();
    for (_, b) in f.live_blocks() {
        for i in &b.insts {
            let (base, offset, ty, store) = match i {
                Inst::Const { dst, ty: ValTy::Ptr, bits } => {
                    addresses.insert(*dst, *bits);
                    continue;
                }
                Inst::Load { base, offset, ty, .. } => (base, *offset, *ty, false),
                Inst::Store { base, offset, ty, .. } => (base, *offset, *ty, true),
                _ => continue,
            };
            let Some(address) = addresses.get(base) else { continue };
            for (c, written, usable) in &mut cells {
                if c.address != *address || (offset as i64 - c.offset as i64).abs() >= 8 {
                    continue;
                }
                if offset == c.offset && clif(ty) == types::I64 {
                    *written |= store;
                } else {
                    *usable = false;
                }
            }
        }
    }
    cells.into_iter().filter(|c| c.2).map(|(c, written, _)| (c, written)).collect()
}

impl Backend for CraneliftBackend {
    type Code = NativeCode;

    fn compile(&mut self, f: &ResidualFunction) -> Result<NativeCode, BackendError> {
        let isa = self.isa.clone();
        self.compile_for(isa, f)
    }
}

impl CraneliftBackend {
    /// Compiles a flexswitch case: as [`Backend::compile`], at Cranelift's
    /// `opt_level=none` with the single-pass register allocator (see the
    /// module doc, "Optimization levels").
    pub fn compile_case(&mut self, f: &ResidualFunction) -> Result<NativeCode, BackendError> {
        let isa = self.case_isa.clone();
        self.compile_for(isa, f)
    }

    fn compile_for(&mut self, isa: OwnedTargetIsa, f: &ResidualFunction) -> Result<NativeCode, BackendError> {
        let code = self.compile_detached_at(isa, f, &CodeContext::of(f))?;
        let mut code = code.attach(f.switches.clone());
        code._turns = f.turns.clone();
        Ok(code)
    }

    /// Compiles `f` at `speed`, as [`Backend::compile`] does, for code that
    /// runs on another thread than this one: what the code needs of that
    /// thread and of `f`'s switch tables is `cx` (made there), and `f` may
    /// have no tables of its own ([`ResidualFunction::detach`]). The
    /// code is handed back as [`DetachedCode`], which the thread that runs
    /// it attaches to the tables.
    pub fn compile_detached(&mut self, f: &ResidualFunction, cx: &CodeContext) -> Result<DetachedCode, BackendError> {
        let isa = self.isa.clone();
        self.compile_detached_at(isa, f, cx)
    }

    /// Compiles `f` with `isa`; a panic inside Cranelift is a
    /// [`BackendError`] (the code's key is then interpreted), never an
    /// unwinding through the portal.
    fn compile_detached_at(
        &mut self,
        isa: OwnedTargetIsa,
        f: &ResidualFunction,
        cx: &CodeContext,
    ) -> Result<DetachedCode, BackendError> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.compile_detached_unguarded(isa, f, cx)));
        r.unwrap_or_else(|p| {
            let why = p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied());
            Err(BackendError(format!("Cranelift panicked: {}", why.unwrap_or("(no message)"))))
        })
    }

    fn compile_detached_unguarded(
        &mut self,
        isa: OwnedTargetIsa,
        f: &ResidualFunction,
        cx: &CodeContext,
    ) -> Result<DetachedCode, BackendError> {
        debug_assert!(!f.passes_pending, "{}: compiled with its residual passes pending", f.name);
        if f.frame_words() > MAX_FRAME_WORDS {
            return Err(BackendError(format!("a frame of {} words (at most {MAX_FRAME_WORDS})", f.frame_words())));
        }
        // Code compiled at `opt_level=none` (a flexswitch case) dispatches
        // through the shared stub.
        let shared_dispatch = isa.flags().opt_level() == settings::OptLevel::None;
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        // The word a reentry's stub writes its index into (see `translate`),
        // for a function that has reentries.
        let selector = (!f.reentries.is_empty()).then(|| Box::new(0u64));
        let at = selector.as_deref().map_or(0, |s| s as *const u64 as u64);
        let mut warm = WarmContexts::take();
        let name = crate::backend::dump::tool_name(f);
        let r = self.compile_in(f, cx, &mut module, &mut warm, at, shared_dispatch, name.as_ref());
        warm.give_back();
        let (id, size) = r?;
        let stubs = (0..f.reentries.len())
            .map(|k| reentry_stub(&mut module, id, at, k as u64 + 1))
            .collect::<Result<Vec<_>, _>>()?;
        module.finalize_definitions().map_err(|e| BackendError(e.to_string()))?;
        let ptr = module.get_finalized_function(id);
        if let Some(name) = &name {
            crate::backend::dump::perf_map(ptr as usize, size, name);
        }
        let reentries = stubs.into_iter().map(|s| module.get_finalized_function(s)).collect();
        Ok(DetachedCode {
            entry: ptr,
            frame_words: f.frame_words(),
            trampoline: self.trampoline,
            owner: CodeOwner::new(module, selector),
            reentries,
        })
    }
}

/// What compiled code needs of the thread that runs it and of its
/// function's switch tables, as addresses: made on that thread
/// ([`CodeContext::of`]), so that the code may be compiled on another.
#[derive(Clone, Debug)]
pub struct CodeContext {
    /// The address of each switch's [`CaseTable`], in order.
    case_tables: Vec<usize>,
    /// The address of the running thread's [`stubs::PRESERVING_ARGS`].
    preserving_args: usize,
}

impl CodeContext {
    /// The context of `f`'s code on this thread.
    pub fn of(f: &ResidualFunction) -> CodeContext {
        CodeContext {
            case_tables: f.switches.iter().map(|t| t.case_table() as usize).collect(),
            preserving_args: preserving_args(),
        }
    }
}

/// Cranelift's compilation contexts, kept between compilations (of any
/// thread: the benchmark harness compiles each run in a fresh thread). They
/// hold the tables of the mid-end and the register allocator, which would
/// otherwise be allocated again for each compilation.
struct WarmContexts {
    ctx: cranelift_codegen::Context,
    fbc: FunctionBuilderContext,
}

static WARM_CONTEXTS: std::sync::Mutex<Vec<WarmContexts>> = std::sync::Mutex::new(Vec::new());

impl WarmContexts {
    fn take() -> WarmContexts {
        let kept = WARM_CONTEXTS.lock().ok().and_then(|mut v| v.pop());
        kept.unwrap_or_else(|| WarmContexts {
            ctx: cranelift_codegen::Context::new(),
            fbc: FunctionBuilderContext::new(),
        })
    }

    fn give_back(mut self) {
        self.ctx.clear();
        if let Ok(mut v) = WARM_CONTEXTS.lock() {
            // One per thread compiling at once is plenty.
            if v.len() < 8 {
                v.push(self);
            }
        }
    }
}

impl CraneliftBackend {
    /// Translates `f` and defines it in `module`.
    fn compile_in(
        &self,
        f: &ResidualFunction,
        cx: &CodeContext,
        module: &mut JITModule,
        warm: &mut WarmContexts,
        selector: u64,
        shared_dispatch: bool,
        name: Option<&crate::backend::dump::ToolName>,
    ) -> Result<(cranelift_module::FuncId, usize), BackendError> {
        let (ctx, fbc) = (&mut warm.ctx, &mut warm.fbc);
        self.translate(f, cx, &mut ctx.func, fbc, selector, shared_dispatch);
        let err = |e: &dyn std::fmt::Display| BackendError(e.to_string());
        let id = match name {
            Some(name) => module.declare_function(&name.symbol, cranelift_module::Linkage::Local, &ctx.func.signature),
            None => module.declare_anonymous_function(&ctx.func.signature),
        }
        .map_err(|e| err(&e))?;
        module.define_function(id, ctx).map_err(|e| err(&format!("{e:?}")))?;
        if let Some(name) = name {
            crate::backend::dump::dump_machine_code(ctx, f, name);
        }
        Ok((id, ctx.compiled_code().map_or(0, |c| c.code_buffer().len())))
    }

    /// The Cranelift IR that `f` translates to, as text (before Cranelift's
    /// optimizations; blocks laid out last are marked `cold`).
    pub fn clif(&self, f: &ResidualFunction) -> String {
        let mut func = cranelift_codegen::ir::Function::new();
        self.translate(f, &CodeContext::of(f), &mut func, &mut FunctionBuilderContext::new(), 0, false);
        func.display().to_string()
    }

    /// Translates `f` into `func`, an empty function (a new one, or a warm
    /// context's, which `WarmContexts::give_back` cleared).
    ///
    /// A function with [`ResidualFunction::reentries`] is entered at one of
    /// them when the word at `selector` holds its index plus one (written by
    /// that reentry's stub, see [`CraneliftBackend::compile`]), which it
    /// clears; at its entry otherwise.
    fn translate(
        &self,
        f: &ResidualFunction,
        cx: &CodeContext,
        func: &mut cranelift_codegen::ir::Function,
        fbc: &mut FunctionBuilderContext,
        selector: u64,
        shared_dispatch: bool,
    ) {
        func.signature = tail_sig();
        {
            let mut b = FunctionBuilder::new(func, fbc);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            let frame = b.block_params(entry)[0];
            let mut blocks = HashMap::new();
            let mut vals = SecondaryMap::with_capacity(f.vals.len());
            let exit_paths = f.exit_paths();
            for (l, blk) in f.live_blocks() {
                let cb = b.create_block();
                if exit_paths[l] {
                    b.set_cold_block(cb);
                }
                for p in &blk.params {
                    vals[*p] = Some(b.append_block_param(cb, clif(f.vals[*p])));
                }
                blocks.insert(l, cb);
            }
            let mut tr = Tr {
                b: &mut b,
                f,
                vals,
                blocks,
                frame,
                errors: HashMap::new(),
                bounds_error: None,
                propagate: None,
                true_side_loops: f.true_side_loops(),
                current: Label::ENTRY,
                miss_stub: self.miss_stub,
                dispatch_stub: shared_dispatch.then_some(self.dispatch_stub),
                direct_failed: self.direct_failed,
                flex_hot: self.flex_hot,
                preserving: self.preserving,
                preserving_args: cx.preserving_args,
                case_tables: &cx.case_tables,
                cells: vec![],
                cell_bases: HashMap::new(),
                consts: rustc_hash::FxHashMap::default(),
            };
            tr.cells = usable_cells(f).into_iter().map(|(c, w)| (c, tr.b.declare_var(types::I64), w)).collect();
            tr.b.switch_to_block(entry);
            tr.load_cells();
            if !f.reentries.is_empty() {
                tr.reentry_dispatch(selector);
            }
            let args = tr.inputs_from_frame(&f.inputs);
            let first = tr.blocks[&Label::ENTRY];
            tr.b.ins().jump(first, &args);
            // A case's code counts the turns of its loops at their heads
            // (`ResidualFunction::turns`; cases compile at `opt_level=none`,
            // as they dispatch through the shared stub).
            let turns = f.turns.as_ref().filter(|_| shared_dispatch).map(|t| t.as_ptr() as i64);
            let heads = if turns.is_some() { f.loop_heads() } else { vec![] };
            for l in f.blocks_in_dominance_order() {
                let blk = &f.blocks[l];
                let cb = tr.blocks[&l];
                tr.b.switch_to_block(cb);
                tr.current = l;
                if let (Some(at), true) = (turns, heads.contains(&l)) {
                    let at = tr.b.ins().iconst(types::I64, at);
                    let n = tr.b.ins().load(types::I64, MemFlagsData::trusted(), at, 0);
                    let n = tr.b.ins().iadd_imm_s(n, 1);
                    tr.b.ins().store(MemFlagsData::trusted(), n, at, 0);
                }
                for i in &blk.insts {
                    tr.inst(i);
                }
                tr.terminator(blk.term.as_ref().expect("live block"));
            }
            tr.error_blocks();
            b.seal_all_blocks();
            b.finalize(self.isa.frontend_config());
        }
    }
}
