//! Pushes and pops of a real `Vec` of scalars (and of structs of scalars) worked on in place
//! (`JitState::vec_push`, `vec_pop`): compiled and executed, they leave the
//! `Vec` as Rust's own methods do, whatever its length and capacity, and a
//! value pushed is popped from what the compiler knows, not from memory.

mod common;

use common::Blk;
use jitgen_runtime::builder::Inst;
use jitgen_runtime::heap::{vec_header, vec_reserve_one};
use jitgen_runtime::ops::{BinOp, CmpOp, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::schedule::{Compilation, MergeKind};
use jitgen_runtime::state::JitState;

/// The alias class of the elements (any class of elements will do).
const ELEMS: u32 = 4;

/// One step on the `Vec`: push a constant, push the input, or pop.
#[derive(Clone, Copy, Debug)]
enum Op {
    Push(i64),
    PushInput,
    Pop,
}

/// Runs `ops` on `v` as Rust does, folding what the pops give into a word
/// (`Some(x)` as `3x + 1`, `None` as 0, each step's times 7).
fn reference(ops: &[Op], v: &mut Vec<i64>, input: i64) -> i64 {
    let mut acc = 0i64;
    for op in ops {
        match op {
            Op::Push(k) => v.push(*k),
            Op::PushInput => v.push(input),
            Op::Pop => {
                let got = v.pop().map_or(0, |x| x.wrapping_mul(3).wrapping_add(1));
                acc = acc.wrapping_mul(7).wrapping_add(got);
            }
        }
    }
    acc
}

/// The same steps through the compiler (compiling, or executing at once
/// on the `Vec` whose address is the first input).
fn steps(c: &mut Compilation<Blk>, ops: &[Op]) {
    let h = vec_header::<i64>().expect("the probe works on this build");
    let [v, input] = c.inputs()[..] else { unreachable!() };
    let mut st = JitState::new(Blk(vec![]));
    let mut acc = RedBox::i64(0);
    for op in ops {
        match op {
            Op::Push(k) => st.vec_push(&mut c.b, &v, &RedBox::i64(*k), h, 8, ELEMS, vec_reserve_one::<i64>),
            Op::PushInput => st.vec_push(&mut c.b, &v, &input, h, 8, ELEMS, vec_reserve_one::<i64>),
            Op::Pop => {
                let [tag, x] = st.vec_pop(&mut c.b, &v, ValTy::I64, h, 8, ELEMS);
                // `tag * (3x + 1)`: 0 for `None`.
                let tag = c.b.red_cast(&tag, ValTy::I64);
                let y = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &x, &RedBox::i64(3));
                let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &y, &RedBox::i64(1));
                let got = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &y, &tag);
                let a = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &acc, &RedBox::i64(7));
                acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &a, &got);
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
    let len = 1 + next(12) as usize;
    (0..len)
        .map(|_| match next(5) {
            0 | 1 => Op::Pop,
            2 => Op::PushInput,
            _ => Op::Push(next(100) as i64 - 50),
        })
        .collect()
}

/// `Vec`s of each length up to 3, with no room, some, or exactly enough.
fn starts() -> Vec<Vec<i64>> {
    let mut out = vec![];
    for n in 0..4 {
        for extra in [0, 1, 5] {
            let mut v = Vec::with_capacity(n + extra);
            v.extend((0..n as i64).map(|k| 10 * k + 7));
            out.push(v);
        }
    }
    out.push(Vec::new());
    out
}

#[test]
fn random_pushes_and_pops_agree_with_rust_compiled_and_executed() {
    let mut seed = 0x5eed_0024_u64;
    for _ in 0..300 {
        let ops = random_ops(&mut seed);
        let mut c: Compilation<Blk> =
            Compilation::new("vec", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
        steps(&mut c, &ops);
        let f = jitgen_runtime::residual::compile_host(&c.finish().expect("small")).expect("compiles");
        for start in starts() {
            let input = 1234;
            let mut want_v = start.clone();
            let want = reference(&ops, &mut want_v, input);
            let mut got_v = start.clone();
            let got = f.call_words(&[&mut got_v as *mut Vec<i64> as u64, input as u64]).expect("runs")[0] as i64;
            assert_eq!((got, &got_v), (want, &want_v), "{ops:?} on {start:?}");
            let mut exec_v = start.clone();
            let addr = &mut exec_v as *mut Vec<i64> as u64;
            let c: Compilation<Blk> =
                Compilation::executing("vec", &[ValTy::Ptr, ValTy::I64], &[addr, input as u64], &[ValTy::I64]);
            let got = c.execute(|c| steps(c, &ops)).expect("runs")[0] as i64;
            assert_eq!((got, &exec_v), (want, &want_v), "{ops:?} on {start:?}, executed");
        }
    }
}

#[test]
fn a_value_pushed_is_popped_without_a_load_or_a_test() {
    // Two pushes, then two pops: the pops know the length is positive and
    // the values pushed; the only loads are the header's, once each.
    let mut c: Compilation<Blk> = Compilation::new("vec", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
    steps(&mut c, &[Op::PushInput, Op::Push(5), Op::Pop, Op::Pop]);
    let f = c.finish().expect("small");
    let insts: Vec<&Inst> = f.blocks.values().flat_map(|b| b.insts.iter()).collect();
    let listing = jitgen_runtime::builder::listing(&f);
    let loads = |ty: ValTy| insts.iter().filter(|i| matches!(i, Inst::Load { ty: t, .. } if *t == ty)).count();
    // The length once; the capacity and buffer again only where the `Vec`
    // grew (a side branch per push); no element.
    assert_eq!((loads(ValTy::U64), loads(ValTy::Ptr), loads(ValTy::I64)), (2 + 2, 1 + 2, 0), "{listing}");
    assert!(!insts.iter().any(|i| matches!(i, Inst::Cmp { op: jitgen_runtime::ops::CmpOp::Ne, .. })), "{listing}");
}

#[test]
fn a_merge_point_keeps_what_pushes_told_of_the_length() {
    // A push, a merge point, a pop: the pop still knows the `Vec` is not
    // empty (no test of the length) and takes the value pushed.
    let h = vec_header::<i64>().expect("the probe works on this build");
    let mut c: Compilation<Blk> = Compilation::new("vec", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
    let [v, input] = c.inputs()[..] else { unreachable!() };
    let mut st = JitState::new(Blk(vec![v]));
    st.vec_push(&mut c.b, &v, &input, h, 8, ELEMS, vec_reserve_one::<i64>);
    let mut st = c.merge(st, MergeKind::LoopHead).expect("a new version");
    let v = st.frames[0].0[0];
    let [tag, x] = st.vec_pop(&mut c.b, &v, ValTy::I64, h, 8, ELEMS);
    assert_eq!(tag, RedBox::constant(ValTy::U32, 1));
    c.finish_return(&[x]);
    let f = c.finish().expect("small");
    let listing = jitgen_runtime::builder::listing(&f);
    let insts: Vec<&Inst> = f.blocks.values().flat_map(|b| b.insts.iter()).collect();
    assert!(!insts.iter().any(|i| matches!(i, Inst::Load { ty: ValTy::I64, .. })), "{listing}");
    let code = jitgen_runtime::residual::compile_host(&f).expect("compiles");
    let mut data = vec![1i64, 2];
    assert_eq!(code.call_words(&[&mut data as *mut Vec<i64> as u64, 99]).expect("runs")[0], 99);
    assert_eq!(data, [1, 2]);
}

// Lists with a tail (`VList::Tail`): a real `Vec` followed by elements not
// stored yet, worked on as generated code does (the tail first, the `Vec`
// in place otherwise, the tail moved into it where the `Vec` itself is
// needed).

use jitgen_runtime::heap::{vec_extend, vec_layout, vec_new_repeat, vec_set};
use jitgen_runtime::vlist::{InPlace, InPlaceRef, VList};

static IN_PLACE: InPlace = InPlace {
    header: vec_header::<i64>,
    size: 8,
    ty: ValTy::I64,
    class: ELEMS,
    reserve: vec_reserve_one::<i64>,
    extend: vec_extend::<i64>,
};

/// One step on a list with a tail.
#[derive(Clone, Copy, Debug)]
enum TOp {
    Push(i64),
    PushInput,
    Pop,
    Len,
    /// Reads element `len - 1 - d` (an index the compiler places).
    GetBack(u8),
    /// Reads the element at the index given as input (known only at run time).
    GetAt,
    /// Writes element `len - 1 - d`.
    SetBack(u8, i64),
    /// Moves the tail into memory (the `Vec` itself is needed).
    Flush,
}

/// Runs `ops` on `v` as Rust does, folding what they read into a word
/// (each step's times 7); `Err` where Rust would panic (an index out of
/// bounds).
fn tail_reference(ops: &[TOp], v: &mut Vec<i64>, input: i64, at: u64) -> Result<i64, ()> {
    let mut acc = 0i64;
    let mut fold = |x: i64| acc = acc.wrapping_mul(7).wrapping_add(x);
    for op in ops {
        match *op {
            TOp::Push(k) => v.push(k),
            TOp::PushInput => v.push(input),
            TOp::Pop => fold(v.pop().map_or(0, |x| x.wrapping_mul(3).wrapping_add(1))),
            TOp::Len => fold(v.len() as i64),
            TOp::GetBack(d) => fold(*v.get(v.len().wrapping_sub(1 + d as usize)).ok_or(())?),
            TOp::GetAt => fold(*v.get(at as usize).ok_or(())?),
            TOp::SetBack(d, k) => {
                let i = v.len().wrapping_sub(1 + d as usize);
                *v.get_mut(i).ok_or(())? = k;
            }
            TOp::Flush => {}
        }
    }
    Ok(acc)
}

/// The same steps through the compiler; inputs: the `Vec`, `input`, `at`.
fn tail_steps(c: &mut Compilation<Blk>, ops: &[TOp]) {
    let h = vec_header::<i64>().expect("the probe works on this build");
    let layout = vec_layout::<i64>().expect("the probe works on this build");
    let [v, input, at] = c.inputs()[..] else { unreachable!() };
    let mut st = JitState::new(Blk(vec![]));
    let mut l = VList::Tail(v, vec![], InPlaceRef(&IN_PLACE), None);
    let mut acc = RedBox::i64(0);
    let mut fold = |c: &mut Compilation<Blk>, x: RedBox| {
        let a = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &acc, &RedBox::i64(7));
        acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &a, &x);
    };
    let real =
        |c: &mut Compilation<Blk>, l: &mut VList| l.force(&mut c.b, ValTy::I64, vec_new_repeat::<i64>, vec_set::<i64>);
    let len = |c: &mut Compilation<Blk>, st: &mut JitState<Blk>, l: &mut VList| match st.tail_len(&mut c.b, l) {
        Some(n) => n,
        None => {
            let a = real(c, l);
            st.vec_len(&mut c.b, &a, layout)
        }
    };
    let back = |c: &mut Compilation<Blk>, st: &mut JitState<Blk>, l: &mut VList, d: u8| {
        let n = len(c, st, l);
        c.b.red_bin(BinOp::Sub, Overflow::Wrap, &n, &RedBox::u64(1 + d as u64))
    };
    let get = |c: &mut Compilation<Blk>, st: &mut JitState<Blk>, l: &mut VList, i: RedBox| match st
        .tail_get(&mut c.b, l, &i)
    {
        Some(x) => x,
        None => {
            let a = real(c, l);
            let e = st.vec_elem(&mut c.b, &a, &i, 8, layout);
            st.load_field(&mut c.b, ValTy::I64, &e, 0, ELEMS, 0)
        }
    };
    for op in ops {
        match *op {
            TOp::Push(_) | TOp::PushInput => {
                let x = match *op {
                    TOp::Push(k) => RedBox::i64(k),
                    _ => input,
                };
                if !l.push_virtual(&x) {
                    let a = real(c, &mut l);
                    st.vec_push(&mut c.b, &a, &x, h, 8, ELEMS, vec_reserve_one::<i64>);
                }
            }
            TOp::Pop => {
                let [tag, x] = match l.pop_virtual() {
                    Some(Some(x)) => [RedBox::constant(ValTy::U32, 1), x],
                    Some(None) => [RedBox::constant(ValTy::U32, 0), RedBox::i64(0)],
                    None => {
                        let a = real(c, &mut l);
                        st.vec_pop(&mut c.b, &a, ValTy::I64, h, 8, ELEMS)
                    }
                };
                let tag = c.b.red_cast(&tag, ValTy::I64);
                let y = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &x, &RedBox::i64(3));
                let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &y, &RedBox::i64(1));
                let got = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &y, &tag);
                fold(c, got);
            }
            TOp::Len => {
                let n = len(c, &mut st, &mut l);
                let n = c.b.red_cast(&n, ValTy::I64);
                fold(c, n);
            }
            TOp::GetBack(d) => {
                let i = back(c, &mut st, &mut l, d);
                let x = get(c, &mut st, &mut l, i);
                fold(c, x);
            }
            TOp::GetAt => {
                let x = get(c, &mut st, &mut l, at);
                fold(c, x);
            }
            TOp::SetBack(d, k) => {
                let i = back(c, &mut st, &mut l, d);
                let x = RedBox::i64(k);
                if !st.tail_set(&mut c.b, &mut l, &i, &x) {
                    let a = real(c, &mut l);
                    let e = st.vec_elem(&mut c.b, &a, &i, 8, layout);
                    st.store_field(&mut c.b, &e, 0, &x, ELEMS, 0);
                }
            }
            TOp::Flush => {
                real(c, &mut l);
            }
        }
    }
    real(c, &mut l);
    c.finish_return(&[acc]);
}

fn random_tail_ops(seed: &mut u64) -> Vec<TOp> {
    let mut next = |n: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % n
    };
    let len = 1 + next(16) as usize;
    (0..len)
        .map(|_| match next(12) {
            0 | 1 => TOp::Pop,
            2 => TOp::PushInput,
            3 => TOp::Len,
            4 | 5 => TOp::GetBack(next(4) as u8),
            6 => TOp::GetAt,
            7 => TOp::SetBack(next(4) as u8, next(100) as i64),
            8 => TOp::Flush,
            _ => TOp::Push(next(100) as i64 - 50),
        })
        .collect()
}

#[test]
fn random_steps_on_a_list_with_a_tail_agree_with_rust_compiled_and_executed() {
    let mut seed = 0x7a11_0025_u64;
    let tys = [ValTy::Ptr, ValTy::I64, ValTy::U64];
    for _ in 0..300 {
        let ops = random_tail_ops(&mut seed);
        let mut c: Compilation<Blk> = Compilation::new("tail", &tys, &[ValTy::I64], Default::default());
        tail_steps(&mut c, &ops);
        let f = jitgen_runtime::residual::compile_host(&c.finish().expect("small")).expect("compiles");
        for start in starts() {
            for at in [0u64, 1, 2, 4, 9] {
                let input = 1234;
                let mut want_v = start.clone();
                let want = tail_reference(&ops, &mut want_v, input, at);
                let mut got_v = start.clone();
                let got = f.call_words(&[&mut got_v as *mut Vec<i64> as u64, input as u64, at]);
                let got = got.map(|w| w[0] as i64).map_err(|_| ());
                assert_eq!(got, want, "{ops:?} on {start:?} at {at}");
                if want.is_ok() {
                    assert_eq!(got_v, want_v, "{ops:?} on {start:?} at {at}");
                }
                let mut exec_v = start.clone();
                let addr = &mut exec_v as *mut Vec<i64> as u64;
                let c: Compilation<Blk> =
                    Compilation::executing("tail", &tys, &[addr, input as u64, at], &[ValTy::I64]);
                let got = c.execute(|c| tail_steps(c, &ops)).map(|w| w[0] as i64).map_err(|_| ());
                assert_eq!(got, want, "{ops:?} on {start:?} at {at}, executed");
                if want.is_ok() {
                    assert_eq!(exec_v, want_v, "{ops:?} on {start:?} at {at}, executed");
                }
            }
        }
    }
}

#[test]
fn a_tail_keeps_pushes_in_registers_and_reads_by_the_length() {
    // Pushes onto the tail, reads at indices placed from the length, a
    // write, pops: no element is stored or loaded until the tail moves
    // into memory at the end (one call).
    let ops = [TOp::PushInput, TOp::Push(5), TOp::GetBack(1), TOp::SetBack(0, 8), TOp::GetBack(0), TOp::Pop, TOp::Len];
    let mut c: Compilation<Blk> =
        Compilation::new("tail", &[ValTy::Ptr, ValTy::I64, ValTy::U64], &[ValTy::I64], Default::default());
    tail_steps(&mut c, &ops);
    let f = c.finish().expect("small");
    let listing = jitgen_runtime::builder::listing(&f);
    let insts: Vec<&Inst> = f.blocks.values().flat_map(|b| b.insts.iter()).collect();
    assert!(!insts.iter().any(|i| matches!(i, Inst::Load { ty: ValTy::I64, .. })), "{listing}");
    assert!(!insts.iter().any(|i| matches!(i, Inst::Store { .. })), "{listing}");
    let calls = insts.iter().filter(|i| matches!(i, Inst::Call { .. })).count();
    assert_eq!(calls, 1, "{listing}");
    // A read at an index known only at run time chooses without a branch:
    // one load from memory, no call.
    let mut c: Compilation<Blk> =
        Compilation::new("tail", &[ValTy::Ptr, ValTy::I64, ValTy::U64], &[ValTy::I64], Default::default());
    let [v, input, at] = c.inputs()[..] else { unreachable!() };
    let mut st = JitState::new(Blk(vec![]));
    let mut l = VList::Tail(v, vec![], InPlaceRef(&IN_PLACE), None);
    assert!(l.push_virtual(&input) && l.push_virtual(&RedBox::i64(3)));
    let x = st.tail_get(&mut c.b, &l, &at).expect("a tail of two is chosen from");
    c.finish_return(&[x]);
    let f = c.finish().expect("small");
    let listing = jitgen_runtime::builder::listing(&f);
    let insts: Vec<&Inst> = f.blocks.values().flat_map(|b| b.insts.iter()).collect();
    assert_eq!(insts.iter().filter(|i| matches!(i, Inst::Load { ty: ValTy::I64, .. })).count(), 1, "{listing}");
    assert!(!insts.iter().any(|i| matches!(i, Inst::Call { .. })), "{listing}");
}

/// A compilation of inputs `(vec, i64, u64)`, and the length of the list
/// before a tail over the `Vec` at the first (known to be a length).
fn length_before_a_tail(name: &str) -> (Compilation<Blk>, RedBox) {
    let mut c: Compilation<Blk> =
        Compilation::new(name, &[ValTy::Ptr, ValTy::I64, ValTy::U64], &[ValTy::I64], Default::default());
    let v = c.inputs()[0];
    let mut st = JitState::new(Blk(vec![]));
    let l = VList::Tail(v, vec![], InPlaceRef(&IN_PLACE), None);
    let len = st.tail_len(&mut c.b, &l).expect("a tail");
    (c, len)
}

#[test]
fn a_length_plus_constants_compares_as_the_constants() {
    // The length before a tail is below 2^63: adding constants below 2^62
    // cannot wrap, so `len + 1 < len + 3` is known; `len - 1 < len` is
    // not (it wraps where the length is 0), nor is a comparison with a
    // value of another root.
    let (mut c, len) = length_before_a_tail("lengths");
    let at = c.inputs()[2];
    let plus = |c: &mut Compilation<Blk>, k: i64| c.b.red_bin(BinOp::Add, Overflow::Wrap, &len, &RedBox::u64(k as u64));
    let (one, three, minus) = (plus(&mut c, 1), plus(&mut c, 3), plus(&mut c, -1));
    assert_eq!(c.b.red_cmp(CmpOp::Lt, &one, &three).as_const(), Some(1));
    assert_eq!(c.b.red_cmp(CmpOp::Ge, &one, &three).as_const(), Some(0));
    assert_eq!(c.b.red_cmp(CmpOp::Gt, &three, &len).as_const(), Some(1));
    assert_eq!(c.b.red_cmp(CmpOp::Lt, &minus, &len).as_const(), None);
    assert_eq!(c.b.red_cmp(CmpOp::Lt, &at, &len).as_const(), None);
    // Against a constant: `len + 3` is at least 3, so `>= 3` and `< 1` are
    // known; `len + 1 >= 3` is not, nor is `len - 1 >= 1`.
    let k = RedBox::u64;
    assert_eq!(c.b.red_cmp(CmpOp::Ge, &three, &k(3)).as_const(), Some(1));
    assert_eq!(c.b.red_cmp(CmpOp::Lt, &three, &k(1)).as_const(), Some(0));
    assert_eq!(c.b.red_cmp(CmpOp::Ge, &one, &k(3)).as_const(), None);
    assert_eq!(c.b.red_cmp(CmpOp::Ge, &minus, &k(1)).as_const(), None);
}

#[test]
fn a_checked_step_from_a_length_plus_a_constant_wraps_where_it_cannot_overflow() {
    // `len + 3 - 3` and `len + 3 - 1` cannot go below 0, nor `len + 3 + 1`
    // past `u64::MAX`: no error exit. `len + 1 - 2` and `len - 1` can: the
    // checked subtraction stays.
    let (mut c, len) = length_before_a_tail("steps");
    let k = RedBox::u64;
    let three = c.b.red_bin(BinOp::Add, Overflow::Wrap, &len, &k(3));
    let one = c.b.red_bin(BinOp::Add, Overflow::Wrap, &len, &k(1));
    let back = c.b.red_bin(BinOp::Sub, Overflow::Check, &three, &k(3));
    assert_eq!(back, len, "back at the length itself");
    for (op, b) in [(BinOp::Sub, 1), (BinOp::Add, 1)] {
        c.b.red_bin(op, Overflow::Check, &three, &k(b));
    }
    c.b.red_bin(BinOp::Sub, Overflow::Check, &one, &k(2));
    c.b.red_bin(BinOp::Sub, Overflow::Check, &len, &k(1));
    // Wrapping steps whose values are unused are dropped; checked ones stay.
    let listing = jitgen_runtime::builder::listing(&c.b.finish());
    let checked = listing.lines().filter(|l| l.contains("_checked")).count();
    assert_eq!(checked, 2, "only `len + 1 - 2` and `len - 1` are checked:\n{listing}");
}

#[test]
fn a_comparison_taken_true_orders_the_values_between_its_sides() {
    // `x - 1 < x + 1` holds only where nothing from `x - 1` to `x + 1`
    // wraps (`JitState::learn_path`). Past a branch on it, `x < x + 1` and
    // `x >= x - 1` are known; `x + 1 < x + 2` is not (`x + 2` may wrap),
    // nor is `x - 2 < x`. For a length nothing above wraps: past
    // `len - 1 < len + 1`, `len - 1 < len + 5` is known too.
    let (mut c, len) = length_before_a_tail("ordered");
    let x = c.inputs()[2];
    let plus = |c: &mut Compilation<Blk>, r: &RedBox, k: i64| {
        c.b.red_bin(BinOp::Add, Overflow::Wrap, r, &RedBox::u64(k as u64))
    };
    let lt = |c: &mut Compilation<Blk>, st: &JitState<Blk>, a: &RedBox, b: &RedBox| {
        st.red_cmp(&mut c.b, CmpOp::Lt, a, b).as_const()
    };
    let st = JitState::new(Blk(vec![x, len]));
    let (below, above) = (plus(&mut c, &x, -1), plus(&mut c, &x, 1));
    let cond = st.red_cmp(&mut c.b, CmpOp::Lt, &below, &above);
    assert_eq!(cond.as_const(), None, "nothing is known before the branch");
    assert!(c.split(&cond, &mut || JitState::new(Blk(vec![x, len]))));
    let (two, minus_two) = (plus(&mut c, &x, 2), plus(&mut c, &x, -2));
    assert_eq!(lt(&mut c, &st, &x, &above), Some(1));
    assert_eq!(st.red_cmp(&mut c.b, CmpOp::Ge, &x, &below).as_const(), Some(1));
    assert_eq!(lt(&mut c, &st, &above, &two), None);
    assert_eq!(lt(&mut c, &st, &minus_two, &x), None);
    let (len_below, len_above, len_five) = (plus(&mut c, &len, -1), plus(&mut c, &len, 1), plus(&mut c, &len, 5));
    assert_eq!(lt(&mut c, &st, &len_below, &len_five), None, "`len - 1` wraps where `len` is 0");
    let cond = st.red_cmp(&mut c.b, CmpOp::Lt, &len_below, &len_above);
    assert!(c.split(&cond, &mut || JitState::new(Blk(vec![x, len]))));
    assert_eq!(lt(&mut c, &st, &len_below, &len_five), Some(1));
    // Across a merge point it is a fact of the state, about the label's
    // parameters.
    let st = c.merge(st, MergeKind::LoopHead).expect("a new version");
    let (y, m) = (st.top().0[0], st.top().0[1]);
    assert_ne!(y, x, "a parameter of the version's label");
    let (y_above, m_below, m_five) = (plus(&mut c, &y, 1), plus(&mut c, &m, -1), plus(&mut c, &m, 5));
    assert_eq!(lt(&mut c, &st, &y, &y_above), Some(1));
    assert_eq!(lt(&mut c, &st, &m_below, &m_five), Some(1));
    // `3 <= y` taken true: `y - 3 < y` is known, `y - 4 < y` is not.
    let (y_three, y_four) = (plus(&mut c, &y, -3), plus(&mut c, &y, -4));
    let cond = st.red_cmp(&mut c.b, CmpOp::Le, &RedBox::u64(3), &y);
    assert!(c.split(&cond, &mut || st.clone()));
    assert_eq!(lt(&mut c, &st, &y_three, &y), Some(1));
    assert_eq!(lt(&mut c, &st, &y_four, &y), None);
    c.finish_return(&[RedBox::constant(ValTy::I64, 0)]);
    // The false sides (taken up in the order of their branches) know
    // none of what their branch showed, and what was known before it.
    let other = c.next_pending().expect("the false side of `x - 1 < x + 1`");
    assert_eq!(lt(&mut c, &other, &x, &above), None);
    c.finish_return(&[RedBox::constant(ValTy::I64, 0)]);
    let other = c.next_pending().expect("the false side of `len - 1 < len + 1`");
    assert_eq!(lt(&mut c, &other, &len_below, &len_five), None);
    assert_eq!(lt(&mut c, &other, &x, &above), Some(1), "known before that branch");
    c.finish_return(&[RedBox::constant(ValTy::I64, 0)]);
    let other = c.next_pending().expect("the false side of `3 <= y`");
    assert_eq!(lt(&mut c, &other, &y_three, &y), None);
    assert_eq!(lt(&mut c, &other, &y, &y_above), Some(1), "known before that branch");
}

// A real `Vec` of a struct of scalars (the frames of a VM kept in a field):
// pushed onto and popped in place by the struct's field words
// (`JitState::vlist_push`, `vlist_pop`), as a `Vec` of scalars is.

use jitgen_runtime::virtuals::{Popped, StructVec, VDesc, VPList};

/// A frame as a VM keeps it: fields of two widths, laid out as Rust likes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Frame {
    ret: u32,
    base: i64,
}

extern "C" fn never(_: *mut u64) -> u64 {
    unreachable!("pushes and pops of a real Vec<Frame> work in place")
}

static FRAME: VDesc = VDesc {
    name: "Frame",
    fields: &[ValTy::U32, ValTy::I64],
    alloc: never,
    offsets: &[std::mem::offset_of!(Frame, ret) as i32, std::mem::offset_of!(Frame, base) as i32],
    lists: &[],
    push_moved: never,
    pop_moved: never,
    by_fields: Some((never, never)),
    in_memory: Some(StructVec {
        header: vec_header::<Frame>,
        size: std::mem::size_of::<Frame>() as u64,
        class: 5,
        reserve: vec_reserve_one::<Frame>,
    }),
    reads_in_place: false,
};

/// The frame a step pushes: from a constant, or from the input.
fn frame_of(k: i64) -> Frame {
    Frame { ret: k as u32, base: k.wrapping_mul(3) - 1 }
}

/// [`reference`] for frames: a pop folds `3 ret + base + 1` (0 for `None`).
fn frames_reference(ops: &[Op], v: &mut Vec<Frame>, input: i64) -> i64 {
    let mut acc = 0i64;
    for op in ops {
        match op {
            Op::Push(k) => v.push(frame_of(*k)),
            Op::PushInput => v.push(frame_of(input)),
            Op::Pop => {
                let got = v.pop().map_or(0, |f| (f.ret as i64).wrapping_mul(3).wrapping_add(f.base).wrapping_add(1));
                acc = acc.wrapping_mul(7).wrapping_add(got);
            }
        }
    }
    acc
}

/// [`steps`] for frames, on the list `l` over the `Vec` at the first input.
fn frame_steps(c: &mut Compilation<Blk>, ops: &[Op], below_entry: bool) {
    let [v, input] = c.inputs()[..] else { unreachable!() };
    let mut st = JitState::new(Blk(vec![]));
    let mut l = if below_entry { VPList::Over(v, vec![]) } else { VPList::Real(v) };
    let mut acc = RedBox::i64(0);
    for op in ops {
        let k = match op {
            Op::Push(k) => RedBox::i64(*k),
            Op::PushInput => input,
            Op::Pop => {
                let (tag, p, from) = st.vlist_pop(&mut c.b, &mut l, &FRAME);
                assert!(matches!(from, Popped::InPlace | Popped::Virtual), "{from:?}");
                let ret = st.heap.field(&p, 0).expect("a virtual frame");
                let base = st.heap.field(&p, 1).expect("a virtual frame");
                let ret = c.b.red_cast(&ret, ValTy::I64);
                let tag = c.b.red_cast(&tag, ValTy::I64);
                let y = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &ret, &RedBox::i64(3));
                let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &y, &base);
                let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &y, &RedBox::i64(1));
                let got = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &y, &tag);
                let a = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &acc, &RedBox::i64(7));
                acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &a, &got);
                continue;
            }
        };
        let ret = c.b.red_cast(&k, ValTy::U32);
        let base = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &k, &RedBox::i64(3));
        let base = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &base, &RedBox::i64(1));
        let x = st.heap.alloc(&FRAME, vec![ret, base], vec![]);
        let called = st.vlist_push(&mut c.b, &mut l, &FRAME, x, false).expect("a real list");
        assert!(!called);
    }
    if let Some(Op::Pop) = ops.first() {
        assert_eq!(st.below_entry, below_entry);
    }
    c.finish_return(&[acc]);
}

#[test]
fn random_pushes_and_pops_of_frames_agree_with_rust_compiled_and_executed() {
    let mut seed = 0xf4a3_0024_u64;
    for _ in 0..200 {
        let ops = random_ops(&mut seed);
        let mut c: Compilation<Blk> =
            Compilation::new("frames", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
        frame_steps(&mut c, &ops, false);
        let f = jitgen_runtime::residual::compile_host(&c.finish().expect("small")).expect("compiles");
        for n in 0..4 {
            for extra in [0, 1, 5] {
                let mut start = Vec::with_capacity(n + extra);
                start.extend((0..n as i64).map(|k| frame_of(10 * k + 7)));
                let input = -1234;
                let mut want_v = start.clone();
                let want = frames_reference(&ops, &mut want_v, input);
                let mut got_v = start.clone();
                let got = f.call_words(&[&mut got_v as *mut Vec<Frame> as u64, input as u64]).expect("runs")[0] as i64;
                assert_eq!((got, &got_v), (want, &want_v), "{ops:?} on {start:?}");
                let mut exec_v = start.clone();
                let addr = &mut exec_v as *mut Vec<Frame> as u64;
                let c: Compilation<Blk> =
                    Compilation::executing("frames", &[ValTy::Ptr, ValTy::I64], &[addr, input as u64], &[ValTy::I64]);
                let got = c.execute(|c| frame_steps(c, &ops, false)).expect("runs")[0] as i64;
                assert_eq!((got, &exec_v), (want, &want_v), "{ops:?} on {start:?}, executed");
            }
        }
    }
}

#[test]
fn a_frame_pushed_is_popped_without_a_call_or_a_load_of_its_fields() {
    // A push then a pop: stores of the fields and the length, a side
    // branch growing the `Vec` where it is full; the pop takes the fields
    // pushed.
    let mut c: Compilation<Blk> =
        Compilation::new("frames", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
    frame_steps(&mut c, &[Op::PushInput, Op::Pop], false);
    let f = c.finish().expect("small");
    let listing = jitgen_runtime::builder::listing(&f);
    let calls: Vec<&str> = listing.lines().filter(|l| l.contains("call") && !l.contains("vec_reserve")).collect();
    assert!(calls.is_empty(), "{listing}");
    let insts: Vec<&Inst> = f.blocks.values().flat_map(|b| b.insts.iter()).collect();
    let loads = |ty: ValTy| insts.iter().filter(|i| matches!(i, Inst::Load { ty: t, .. } if *t == ty)).count();
    assert_eq!((loads(ValTy::U32), loads(ValTy::I64)), (0, 0), "{listing}");
    let code = jitgen_runtime::residual::compile_host(&f).expect("compiles");
    let mut data = vec![frame_of(1)];
    assert_eq!(code.call_words(&[&mut data as *mut Vec<Frame> as u64, 5]).expect("runs")[0], 3 * 5 + 14 + 1);
    assert_eq!(data, [frame_of(1)]);
    // Popped below a portal's own list: loads in place, and the path says
    // it returned below its entry.
    let mut c: Compilation<Blk> =
        Compilation::new("frames", &[ValTy::Ptr, ValTy::I64], &[ValTy::I64], Default::default());
    frame_steps(&mut c, &[Op::Pop, Op::Pop], true);
    let listing = jitgen_runtime::builder::listing(&c.finish().expect("small"));
    assert!(!listing.contains("call"), "{listing}");
}
