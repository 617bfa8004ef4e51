//! Pushes, sets and pops of a real `Vec` of plain enums worked on in place
//! (`JitState::flat_vec_push`, `flat_set`, `flat_vec_pop`), with values
//! whose variant is known only at run time (a stack VM pushing a value it
//! read): compiled and executed, they leave the `Vec` as Rust's own methods
//! do, and no helper is called where the layout lets every slot be written.

mod common;

use common::{Blk, FlatValue, Value, TYS, VARIANT};
use jitgen_runtime::builder::listing;
use jitgen_runtime::heap::Flat;
use jitgen_runtime::ops::{BinOp, CmpOp, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::schedule::Compilation;
use jitgen_runtime::state::{FlatVec, JitState};

/// The alias class of the elements.
const ELEMS: u32 = 4;

/// One step on the `Vec`.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// Pushes the value the inputs give (its variant known at run time).
    PushInput,
    /// Pushes a value known while compiling.
    Push(Value),
    /// Writes the inputs' value at an index (in bounds).
    SetInput(u64),
    /// Pops, folding the words it gives into the result.
    Pop,
}

/// The words folded into the result: `Some(v)` as its flattened words,
/// `None` as 0, each step's times 31.
fn fold(acc: u64, some: u64, words: &[u64]) -> u64 {
    let w = words.iter().fold(some, |a, w| a.wrapping_mul(7).wrapping_add(*w));
    acc.wrapping_mul(31).wrapping_add(w.wrapping_mul(some))
}

/// `ops` as Rust does them.
fn reference(ops: &[Op], v: &mut Vec<Value>, input: Value) -> u64 {
    let mut acc = 0;
    for op in ops {
        match op {
            Op::PushInput => v.push(input),
            Op::Push(x) => v.push(*x),
            Op::SetInput(i) => {
                if let Some(slot) = v.get_mut(*i as usize) {
                    *slot = input;
                }
            }
            Op::Pop => {
                let mut w = [0u64; 4];
                let some = match v.pop() {
                    Some(x) => {
                        FlatValue::flat(&x, &mut w);
                        1
                    }
                    None => 0,
                };
                acc = fold(acc, some, &w);
            }
        }
    }
    acc
}

/// The same steps through the compiler; `len` is the `Vec`'s length at the
/// start (sets are made only in bounds, as the reference's).
fn steps(c: &mut Compilation<Blk>, ops: &[Op], len: u64) {
    let ins = c.inputs().to_vec();
    let (v, input) = (ins[0], &ins[1..]);
    let how = FlatVec::of::<FlatValue>(ELEMS);
    let mut st = JitState::new(Blk(vec![]));
    let mut acc = RedBox::constant(ValTy::U64, 0);
    let mut n = len;
    for op in ops {
        match op {
            Op::PushInput => {
                st.flat_vec_push(&mut c.b, &v, input, &how);
                n += 1;
            }
            Op::Push(x) => {
                let mut w = [0u64; 4];
                FlatValue::flat(x, &mut w);
                let words: Vec<RedBox> = w.iter().zip(TYS).map(|(w, t)| RedBox::constant(t, *w)).collect();
                st.flat_vec_push(&mut c.b, &v, &words, &how);
                n += 1;
            }
            Op::SetInput(i) => {
                if *i < n {
                    st.flat_set::<FlatValue>(&mut c.b, &v, &RedBox::constant(ValTy::U64, *i), input, ELEMS);
                }
            }
            Op::Pop => {
                let tys = [ValTy::U32, ValTy::U32, ValTy::I64, ValTy::U32, ValTy::Bool];
                let got = st.flat_vec_pop(&mut c.b, &v, &how, &tys);
                let some = c.b.red_cast(&got[0], ValTy::U64);
                let mut w = some;
                // The tag, then each slot of the value's own variant (the
                // other slots are whatever memory held).
                for (j, x) in got[1..].iter().enumerate() {
                    let x = c.b.red_cast(x, ValTy::U64);
                    let x = if j == 0 {
                        x
                    } else {
                        let own = c.b.red_cmp(CmpOp::Eq, &got[1], &RedBox::constant(ValTy::U32, VARIANT[j - 1]));
                        let own = c.b.red_cast(&own, ValTy::U64);
                        c.b.red_bin(BinOp::Mul, Overflow::Wrap, &x, &own)
                    };
                    let m = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &w, &RedBox::constant(ValTy::U64, 7));
                    w = c.b.red_bin(BinOp::Add, Overflow::Wrap, &m, &x);
                }
                let w = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &w, &some);
                let a = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &acc, &RedBox::constant(ValTy::U64, 31));
                acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &a, &w);
                n = n.saturating_sub(1);
            }
        }
    }
    c.finish_return(&[acc]);
}

fn random_ops(seed: &mut u64) -> Vec<Op> {
    let mut next = |n: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % n
    };
    let len = 1 + next(10) as usize;
    (0..len)
        .map(|_| match next(8) {
            0 | 1 => Op::Pop,
            2 | 3 | 4 => Op::PushInput,
            5 => Op::SetInput(next(4)),
            6 => Op::Push(Value::Cons(next(1000) as u32)),
            _ => Op::Push(Value::Int(next(100) as i64 - 50)),
        })
        .collect()
}

const INPUTS: [ValTy; 5] = [ValTy::Ptr, ValTy::U32, ValTy::I64, ValTy::U32, ValTy::Bool];

fn words(v: Value) -> Vec<u64> {
    let mut w = [0u64; 4];
    FlatValue::flat(&v, &mut w);
    w.to_vec()
}

#[test]
fn the_value_enum_has_slots_apart() {
    let l = FlatValue::layout().expect("a layout for this enum");
    assert!(l.slots_apart(), "{l:?}");
}

/// Values of every variant pushed and set whose variant the compiler does
/// not know, on `Vec`s of each length up to 3 with and without room:
/// the compiled code and the executing compiler agree with Rust.
#[test]
fn values_of_a_variant_known_at_run_time_are_pushed_and_set_in_place() {
    let mut seed = 0x5eed_0060_u64;
    let inputs = [Value::Int(-3), Value::Nil, Value::Cons(77), Value::Flag(true), Value::Flag(false)];
    for _ in 0..150 {
        let ops = random_ops(&mut seed);
        for len in 0..4u64 {
            let mut c: Compilation<Blk> = Compilation::new("vec", &INPUTS, &[ValTy::U64], Default::default());
            steps(&mut c, &ops, len);
            let f = c.finish().expect("small");
            let text = listing(&f);
            assert!(!text.contains("vec_push") && !text.contains("vec_set"), "{ops:?}\n{text}");
            let code = jitgen_runtime::residual::compile_host(&f).expect("compiles");
            for input in inputs {
                for extra in [0, 1, 4] {
                    let mut start = Vec::with_capacity(len as usize + extra);
                    start.extend((0..len).map(|k| Value::Cons(k as u32 + 10)));
                    let mut want_v = start.clone();
                    let want = reference(&ops, &mut want_v, input);
                    let mut got_v = start.clone();
                    let mut args = vec![&mut got_v as *mut Vec<Value> as u64];
                    args.extend(words(input));
                    let got = code.call_words(&args).expect("runs")[0];
                    assert_eq!((got, &got_v), (want, &want_v), "{ops:?} on {start:?} with {input:?}");
                    let mut exec_v = start.clone();
                    let mut args = vec![&mut exec_v as *mut Vec<Value> as u64];
                    args.extend(words(input));
                    let c: Compilation<Blk> = Compilation::executing("vec", &INPUTS, &args, &[ValTy::U64]);
                    let got = c.execute(|c| steps(c, &ops, len)).expect("runs")[0];
                    assert_eq!((got, &exec_v), (want, &want_v), "{ops:?} on {start:?} with {input:?}, executed");
                }
            }
        }
    }
}
