//! jitgen's own machine code, compiled once per process and shared by all
//! residual code: the trampoline Rust enters residual code through, the
//! `preserve_all` stub of helper calls on cold paths, and the flexswitch
//! miss and dispatch stubs that residual code tail-calls.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Block, BlockArg, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};

use super::{
    tail_sig, CraneliftBackend, RuntimeHooks, CASES_ENTRIES, CASES_HITS, CASES_LEN, HOT_HITS, MAX_FRAME_WORDS,
};
use crate::backend::native::Trampoline;
use crate::backend::BackendError;

impl CraneliftBackend {
    /// `extern "C" fn(code, frame) -> status`: calls a tail-convention function.
    pub(super) fn trampoline(isa: &OwnedTargetIsa) -> Result<Trampoline, BackendError> {
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let ptr = infrastructure(isa, sig, |b, p| {
            let sig = b.import_signature(tail_sig());
            let call = b.ins().call_indirect(sig, p[0], &[p[1]]);
            let status = b.inst_results(call)[0];
            b.ins().return_(&[status]);
        })?;
        // SAFETY: compiled just above with the SystemV signature (i64, i64) -> i64.
        Ok(unsafe { std::mem::transmute::<usize, Trampoline>(ptr) })
    }

    /// The `preserve_all` stub of helper calls on cold paths: no
    /// parameters, it calls [`preserving_dispatch`], which finds the
    /// callback and its buffer where the residual code left them (the
    /// thread's [`PRESERVING_ARGS`]). The call clobbers no register, so
    /// values live across a helper call on a cold path (a `Vec` growing)
    /// stay in registers on the hot path around it; and it takes no
    /// register argument, so no value on that path is moved out of `rdi`
    /// or `rsi` for it (the register allocator then kept loop-carried
    /// values in stack slots: PERFORMANCE.md).
    pub(super) fn preserving(isa: &OwnedTargetIsa) -> Result<usize, BackendError> {
        infrastructure(isa, Signature::new(CallConv::PreserveAll), |b, _| {
            let csig = b.import_signature(Signature::new(CallConv::SystemV));
            let dispatch = b.ins().iconst(types::I64, preserving_dispatch as *const () as usize as i64);
            b.ins().call_indirect(csig, dispatch, &[]);
            b.ins().return_(&[]);
        })
    }

    /// The miss path of every flexswitch, compiled once per process and
    /// tail-called by residual code: `(frame, table, value, offset, status)`
    /// in the tail convention. It asks the compiler for a case
    /// (the `flex_miss` of the [`RuntimeHooks`] it was made with) and tail-calls it; if there is
    /// none, it writes the table at `frame + offset` and returns `status`
    /// (a hand-over). One stub for all residual code: made inline in every
    /// switch, this path cost a third of each switch's compile time
    /// (PERFORMANCE.md).
    pub(super) fn miss_stub(isa: &OwnedTargetIsa, hooks: RuntimeHooks) -> Result<usize, BackendError> {
        infrastructure(isa, miss_stub_sig(), |b, p| {
            let (frame, tbl, value, offset, status) = (p[0], p[1], p[2], p[3], p[4]);
            let mut msig = Signature::new(CallConv::SystemV);
            msig.params.push(AbiParam::new(types::I64));
            msig.params.push(AbiParam::new(types::I64));
            msig.returns.push(AbiParam::new(types::I64));
            let msig = b.import_signature(msig);
            let fp = b.ins().iconst(types::I64, hooks.flex_miss as *const () as usize as i64);
            let call = b.ins().call_indirect(msig, fp, &[tbl, value]);
            let code = b.inst_results(call)[0];
            let (go, resume) = (b.create_block(), b.create_block());
            b.ins().brif(code, go, &[], resume, &[]);
            b.switch_to_block(go);
            let tsig = b.import_signature(tail_sig());
            b.ins().return_call_indirect(tsig, code, &[frame]);
            // No case: hand over, the table last in the frame so that the
            // caller finds how to continue.
            b.switch_to_block(resume);
            let at = b.ins().iadd(frame, offset);
            b.ins().store(MemFlagsData::trusted(), tbl, at, 0);
            b.ins().return_(&[status]);
        })
    }

    /// The dispatch of flexswitch cases' switches, compiled once per
    /// process and tail-called with the miss stub's arguments: it scans the
    /// table's cases for the value, counts the hit (reporting every
    /// [`HOT_HITS`] to the `flex_hot` hook) and tail-calls the case's code,
    /// or tail-calls [`CraneliftBackend::miss_stub`]. A case is compiled at
    /// `opt_level=none` to run until its tree is fused, and most of its
    /// instructions were its switches' scans: one scan for all of them
    /// costs a tail call per dispatch and leaves a switch five
    /// instructions besides the frame's stores. Roots and fused code keep
    /// their scans inline.
    pub(super) fn dispatch_stub(
        isa: &OwnedTargetIsa,
        miss_stub: usize,
        hooks: RuntimeHooks,
    ) -> Result<usize, BackendError> {
        infrastructure(isa, miss_stub_sig(), |b, p| {
            let (frame, tbl, value) = (p[0], p[1], p[2]);
            let miss = b.create_block();
            let (i, code) = case_scan(b, tbl, value, miss, &|b| b.create_block());
            count_case_hit(b, tbl, i, hooks.flex_hot as usize);
            let tsig = b.import_signature(tail_sig());
            b.ins().return_call_indirect(tsig, code, &[frame]);
            b.switch_to_block(miss);
            let stub = b.ins().iconst(types::I64, miss_stub as i64);
            let ssig = b.import_signature(miss_stub_sig());
            b.ins().return_call_indirect(ssig, stub, p);
        })
    }
}

thread_local! {
    /// A helper call's callback and buffer, left by residual code for
    /// [`preserving_dispatch`]: a pair of words per thread, whose address
    /// the thread's code holds as a constant (residual code runs on the
    /// thread that compiled it, as its register cells do).
    pub(super) static PRESERVING_ARGS: std::cell::UnsafeCell<[u64; 2]> = const { std::cell::UnsafeCell::new([0; 2]) };
}

/// The address of this thread's [`PRESERVING_ARGS`].
pub(super) fn preserving_args() -> usize {
    PRESERVING_ARGS.with(|a| a.get() as usize)
}

/// Called by the `preserve_all` stub: runs the callback left in the
/// thread's [`PRESERVING_ARGS`] on the buffer left there, and stores its
/// status in the buffer's last word. Both are read before the call, so a
/// helper call made while the callback runs does not disturb this one.
extern "C" fn preserving_dispatch() {
    // SAFETY: residual code stored a `CallbackFn` and its buffer (a frame
    // of `MAX_FRAME_WORDS` words) just before calling the stub, on this
    // thread; nothing else writes the pair in between.
    unsafe {
        let [func, buffer] = PRESERVING_ARGS.with(|a| *a.get());
        let callback = std::mem::transmute::<usize, crate::ir::function::CallbackFn>(func as usize);
        let buffer = buffer as usize as *mut u64;
        let status = callback(buffer);
        *buffer.add(MAX_FRAME_WORDS - 1) = status;
    }
}

/// Compiles one function of jitgen's own (infrastructure, not residual
/// code) with `sig`, its body made by `body` from the entry block's
/// parameters, and returns its address. It is kept for the life of the
/// process (its module is never freed): one small function each.
fn infrastructure(
    isa: &OwnedTargetIsa,
    sig: Signature,
    body: impl FnOnce(&mut FunctionBuilder, &[Value]),
) -> Result<usize, BackendError> {
    let err = |e: &dyn std::fmt::Display| BackendError(e.to_string());
    let mut module = JITModule::new(JITBuilder::with_isa(isa.clone(), default_libcall_names()));
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    let mut fbc = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let blk = b.create_block();
        b.append_block_params_for_function_params(blk);
        b.switch_to_block(blk);
        let params = b.block_params(blk).to_vec();
        body(&mut b, &params);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    let id = module.declare_anonymous_function(&ctx.func.signature).map_err(|e| err(&e))?;
    module.define_function(id, &mut ctx).map_err(|e| err(&format!("{e:?}")))?;
    module.finalize_definitions().map_err(|e| err(&e))?;
    let ptr = module.get_finalized_function(id) as usize;
    std::mem::forget(module);
    Ok(ptr)
}

/// Scans the case table at `tbl` for `value`, in new blocks made by
/// `block`: leaves `b` in the block where case `i` matched, with its code's
/// address (`(i, code)`), and jumps to `miss` where none does. The dispatch
/// stub's scan, and a root's or a fusion's inline one.
pub(super) fn case_scan(
    b: &mut FunctionBuilder,
    tbl: Value,
    value: Value,
    miss: Block,
    block: &dyn Fn(&mut FunctionBuilder) -> Block,
) -> (Value, Value) {
    let (scan, body, taken) = (block(b), block(b), block(b));
    b.append_block_param(scan, types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(scan, &[BlockArg::Value(zero)]);
    b.switch_to_block(scan);
    let i = b.block_params(scan)[0];
    let len = b.ins().load(types::I64, MemFlagsData::trusted(), tbl, CASES_LEN);
    let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
    b.ins().brif(done, miss, &[], body, &[]);
    b.switch_to_block(body);
    let entries = b.ins().load(types::I64, MemFlagsData::trusted(), tbl, CASES_ENTRIES);
    let off = b.ins().imul_imm_s(i, 16);
    let e = b.ins().iadd(entries, off);
    let key = b.ins().load(types::I64, MemFlagsData::trusted(), e, 0);
    let code = b.ins().load(types::I64, MemFlagsData::trusted(), e, 8);
    let next = b.ins().iadd_imm_s(i, 1);
    let same = b.ins().icmp(IntCC::Equal, key, value);
    b.ins().brif(same, taken, &[], scan, &[BlockArg::Value(next)]);
    b.switch_to_block(taken);
    (i, code)
}

/// Counts a hit of case `i` of the table at `tbl`, and every [`HOT_HITS`]
/// calls `flex_hot` on the table (in a cold block); leaves `b` after it.
pub(super) fn count_case_hit(b: &mut FunctionBuilder, tbl: Value, i: Value, flex_hot: usize) {
    let hits = b.ins().load(types::I64, MemFlagsData::trusted(), tbl, CASES_HITS);
    let off = b.ins().imul_imm_s(i, 8);
    let at = b.ins().iadd(hits, off);
    let n = b.ins().load(types::I64, MemFlagsData::trusted(), at, 0);
    let n = b.ins().iadd_imm_s(n, 1);
    b.ins().store(MemFlagsData::trusted(), n, at, 0);
    let low = b.ins().band_imm_s(n, (HOT_HITS - 1) as i64);
    let (hot, cont) = (b.create_block(), b.create_block());
    b.set_cold_block(hot);
    b.ins().brif(low, cont, &[], hot, &[]);
    b.switch_to_block(hot);
    let mut sig = Signature::new(CallConv::SystemV);
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    let sig = b.import_signature(sig);
    let fp = b.ins().iconst(types::I64, flex_hot as i64);
    b.ins().call_indirect(sig, fp, &[tbl]);
    b.ins().jump(cont, &[]);
    b.switch_to_block(cont);
}

/// The signature of [`CraneliftBackend::miss_stub`].
pub(super) fn miss_stub_sig() -> Signature {
    let mut sig = Signature::new(CallConv::Tail);
    for _ in 0..5 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.returns.push(AbiParam::new(types::I64));
    sig
}
