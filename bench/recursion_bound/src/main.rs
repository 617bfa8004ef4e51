//! The ceiling of the stack VM's recursive fibonacci under a JIT built on
//! Cranelift: `cargo run --release` in this folder.
//!
//! It times, in one run, fib(25) (242,785 calls) three ways:
//! - a copy of the stack VM's plain interpreter (`interpreters/stackvm`,
//!   without its hints: the instructions fib uses, the same checks);
//! - recursive fib written directly in Cranelift IR, argument and result in
//!   registers, a native call per call: what residual code could reach if
//!   the interpreter's frames and operand stack stayed virtual across native
//!   calls and were only built when something forced them;
//! - the same, with the interpreter's state kept in memory at each call, as
//!   code that may hand over at any point must keep it: the argument pushed
//!   on the operand stack's buffer and a frame of two words pushed on the
//!   frames' buffer (each with a capacity test), both popped at the return.
//!
//! The ratios to plain are the bound on the 10x target of recursion for each
//! design (figures in PERFORMANCE.md).

use cranelift_codegen::ir::{condcodes::IntCC, types::I64, AbiParam, InstBuilder, MemFlagsData, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::time::Instant;

#[derive(Clone, Copy)]
enum I {
    Push(i64),
    Add,
    Sub,
    Lt,
    Load(usize),
    JumpIfZero(usize),
    Call(usize, usize),
    Ret,
    Halt,
}
use I::*;
#[derive(Clone, Copy)]
struct Frame {
    return_pc: usize,
    base: usize,
}
#[derive(Debug)]
enum E {
    Underflow,
    Pc,
    BadLocal,
    NoFrame,
}

#[inline(never)]
fn plain(code: &[I]) -> Result<i64, E> {
    let mut pc = 0;
    let mut stack: Vec<i64> = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    loop {
        let i = *code.get(pc).ok_or(E::Pc)?;
        pc += 1;
        let base = |f: &Vec<Frame>| f.last().map_or(0, |f| f.base);
        match i {
            Push(v) => stack.push(v),
            Add => {
                let (b, a) = (stack.pop().ok_or(E::Underflow)?, stack.pop().ok_or(E::Underflow)?);
                stack.push(a.wrapping_add(b))
            }
            Sub => {
                let (b, a) = (stack.pop().ok_or(E::Underflow)?, stack.pop().ok_or(E::Underflow)?);
                stack.push(a.wrapping_sub(b))
            }
            Lt => {
                let (b, a) = (stack.pop().ok_or(E::Underflow)?, stack.pop().ok_or(E::Underflow)?);
                stack.push((a < b) as i64)
            }
            Load(n) => {
                let v = *stack.get(base(&frames) + n).ok_or(E::BadLocal)?;
                stack.push(v)
            }
            JumpIfZero(t) => {
                if stack.pop().ok_or(E::Underflow)? == 0 {
                    pc = t
                }
            }
            Call(t, args) => {
                let base = stack.len().checked_sub(args).ok_or(E::Underflow)?;
                frames.push(Frame { return_pc: pc, base });
                pc = t
            }
            Ret => {
                let f = frames.pop().ok_or(E::NoFrame)?;
                let r = stack.pop().ok_or(E::Underflow)?;
                stack.truncate(f.base);
                stack.push(r);
                pc = f.return_pc
            }
            Halt => return stack.pop().ok_or(E::Underflow),
        }
    }
}

fn fib_code(n: i64) -> Vec<I> {
    vec![
        Push(n),
        Call(3, 1),
        Halt,
        Load(0),
        Push(2),
        Lt,
        JumpIfZero(9),
        Load(0),
        Ret,
        Load(0),
        Push(1),
        Sub,
        Call(3, 1),
        Load(0),
        Push(2),
        Sub,
        Call(3, 1),
        Add,
        Ret,
    ]
}

/// `write_through`: each call also keeps the interpreter's state in memory
/// (the argument pushed on the operand stack's buffer, a frame of two words
/// pushed, both popped at the return), with capacity checks that trap.
fn build(write_through: bool) -> *const u8 {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").unwrap();
    flags.set("preserve_frame_pointers", "true").unwrap();
    let isa = cranelift_native::builder().unwrap().finish(settings::Flags::new(flags)).unwrap();
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(I64));
    if write_through {
        sig.params.push(AbiParam::new(I64));
    }
    sig.returns.push(AbiParam::new(I64));
    let id = module.declare_function("fib", Linkage::Local, &sig).unwrap();
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let fref = module.declare_func_in_func(id, b.func);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let n = b.block_params(entry)[0];
        let st = if write_through { Some(b.block_params(entry)[1]) } else { None };
        let small = b.ins().icmp_imm_s(IntCC::SignedLessThan, n, 2);
        let (ret_n, rec) = (b.create_block(), b.create_block());
        b.ins().brif(small, ret_n, &[], rec, &[]);
        b.switch_to_block(ret_n);
        b.ins().return_(&[n]);
        b.switch_to_block(rec);
        let mf = MemFlagsData::trusted();
        // A push onto the buffer whose pointer, length and capacity are at
        // `at`, `at + 8`, `at + 16` of `st` (a trap when full): the old
        // length and the new element's address.
        let push = |b: &mut FunctionBuilder, st, at: i32, shift: i64| {
            let (p, len, cap) =
                (b.ins().load(I64, mf, st, at), b.ins().load(I64, mf, st, at + 8), b.ins().load(I64, mf, st, at + 16));
            let full = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, len, cap);
            b.ins().trapnz(full, cranelift_codegen::ir::TrapCode::unwrap_user(1));
            let off = b.ins().ishl_imm_u(len, shift);
            let elem = b.ins().iadd(p, off);
            let len1 = b.ins().iadd_imm_s(len, 1);
            b.ins().store(mf, len1, st, at + 8);
            (len, elem)
        };
        let call = |b: &mut FunctionBuilder, arg, pc: i64| {
            if let Some(st) = st {
                // st: [stack ptr, stack len, stack cap, frames ptr, frames len, frames cap]
                let (sl, at) = push(b, st, 0, 3);
                b.ins().store(mf, arg, at, 0);
                let (fl, at) = push(b, st, 24, 4);
                let rp = b.ins().iconst(I64, pc);
                b.ins().store(mf, rp, at, 0);
                b.ins().store(mf, sl, at, 8);
                let r = b.ins().call(fref, &[arg, st]);
                let r = b.inst_results(r)[0];
                // The return: the frame popped, the stack truncated to its base.
                b.ins().store(mf, fl, st, 32);
                b.ins().store(mf, sl, st, 8);
                r
            } else {
                let r = b.ins().call(fref, &[arg]);
                b.inst_results(r)[0]
            }
        };
        let a = b.ins().iadd_imm_s(n, -1);
        let x = call(&mut b, a, 13);
        let c = b.ins().iadd_imm_s(n, -2);
        let y = call(&mut b, c, 17);
        let s = b.ins().iadd(x, y);
        b.ins().return_(&[s]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    module.define_function(id, &mut ctx).unwrap();
    module.finalize_definitions().unwrap();
    let p = module.get_finalized_function(id);
    std::mem::forget(module);
    p
}

fn median<F: FnMut() -> i64>(mut f: F, want: i64) -> f64 {
    let mut v = vec![];
    for _ in 0..41 {
        let t = Instant::now();
        let r = f();
        v.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r, want);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let n = 25;
    let code = fib_code(n);
    let want = plain(&code).unwrap();
    let calls = 242785.0;
    let reg: extern "C" fn(i64) -> i64 = unsafe { std::mem::transmute(build(false)) };
    let wt: extern "C" fn(i64, *mut u64) -> i64 = unsafe { std::mem::transmute(build(true)) };
    let mut stack = vec![0i64; 1 << 16];
    let mut frames = vec![0i64; 1 << 17];
    let p = median(|| plain(std::hint::black_box(&code)).unwrap(), want);
    let r = median(|| reg(std::hint::black_box(n)), want);
    let w = median(
        || {
            let mut st = [stack.as_mut_ptr() as u64, 0, 1 << 16, frames.as_mut_ptr() as u64, 0, 1 << 16];
            wt(std::hint::black_box(n), st.as_mut_ptr())
        },
        want,
    );
    println!("fib({n}), {calls} calls, medians of 41");
    println!("plain stack VM        {p:.3} ms  {:.2} ns/call", p * 1e6 / calls);
    println!("cranelift, registers  {r:.3} ms  {:.2} ns/call  {:.1}x plain", r * 1e6 / calls, p / r);
    println!("cranelift, state kept {w:.3} ms  {:.2} ns/call  {:.1}x plain", w * 1e6 / calls, p / w);
}
