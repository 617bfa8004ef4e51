//! Counted loops of one block run several turns per jump (`builder`'s
//! unrolling): the code simplification makes, run against the same loop
//! taken one turn at a time in Rust, across trip counts and at the ends of
//! the integer range, where the guard must refuse to unroll.

use expect_test::{expect, Expect};
use jitgen_runtime::builder::{listing, ResidualBuilder, ResidualFunction};
use jitgen_runtime::ops::{BinOp, CmpOp, ErrorKind, Overflow, ValTy};
use jitgen_runtime::residual::{ResidualError, ResidualFn};

/// How the accumulator of the test loop is updated.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Acc {
    /// `acc + t`, wrapping.
    Add,
    /// `t + acc`, wrapping.
    AddRight,
    /// `acc - 3`, wrapping.
    SubConst,
    /// `acc + t`, checking overflow.
    Checked,
}

/// A loop `L(iv, acc[, bound]): iv' = iv + step; t = iv' & 255; acc' = ..;
/// continue while iv' test bound`, leaving with `(acc', iv)`, of the inputs
/// `(start, bound, init, pick)`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    ty: ValTy,
    step: i64,
    test: CmpOp,
    /// The branch continues on its true side (else the comparison is
    /// negated and the loop continues on the false side).
    on_true: bool,
    /// `iv'` is the comparison's left operand (else `bound test' iv'`).
    iv_left: bool,
    /// The bound is a parameter of the loop passed on unchanged: `bound`,
    /// or `init` when `pick` is 0 (else the input `bound`, defined before
    /// the loop).
    bound_param: bool,
    acc: Acc,
}

fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
    }
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        o => o,
    }
}

/// The loop as residual code, simplified (and so unrolled) by `finish`.
fn build(s: Shape) -> ResidualFunction {
    let ty = s.ty;
    let mut b = ResidualBuilder::new("counted", &[ty, ty, ty, ty], &[ty, ty]);
    let [start, bound, init, pick] = b.inputs()[..] else { unreachable!() };
    let params: Vec<ValTy> = if s.bound_param { vec![ty; 3] } else { vec![ty; 2] };
    let (head, p) = b.new_label(&params);
    let (exit, q) = b.new_label(&[ty, ty]);
    if s.bound_param {
        // Two ways in with two bounds: the parameter stays one.
        let zero = b.konst(ty, 0);
        let picked = b.cmp(CmpOp::Ne, ty, pick, zero);
        b.branch(picked, (head, &[start, init, bound]), (head, &[start, init, init]));
    } else {
        b.jump(head, &[start, init]);
    }
    b.switch_to(head);
    let (iv, acc) = (p[0], p[1]);
    let limit = if s.bound_param { p[2] } else { bound };
    let step = b.konst(ty, ty.canon(s.step as u64));
    let iv2 = b.bin(BinOp::Add, ty, Overflow::Wrap, iv, step);
    let mask = b.konst(ty, 255);
    let t = b.bin(BinOp::And, ty, Overflow::Wrap, iv2, mask);
    let acc2 = match s.acc {
        Acc::Add => b.bin(BinOp::Add, ty, Overflow::Wrap, acc, t),
        Acc::AddRight => b.bin(BinOp::Add, ty, Overflow::Wrap, t, acc),
        Acc::SubConst => {
            let three = b.konst(ty, 3);
            b.bin(BinOp::Sub, ty, Overflow::Wrap, acc, three)
        }
        Acc::Checked => b.bin(BinOp::Add, ty, Overflow::Check, acc, t),
    };
    let op = if s.on_true { s.test } else { negate(s.test) };
    let cond = if s.iv_left { b.cmp(op, ty, iv2, limit) } else { b.cmp(flip(op), ty, limit, iv2) };
    let mut again = vec![iv2, acc2];
    if s.bound_param {
        again.push(limit);
    }
    let leave = [acc2, iv];
    if s.on_true {
        b.branch(cond, (head, &again), (exit, &leave));
    } else {
        b.branch(cond, (exit, &leave), (head, &again));
    }
    b.switch_to(exit);
    b.ret(&q);
    b.finish()
}

/// The loop one turn at a time; `None` if it runs more than 200 turns.
fn reference(s: Shape, start: u64, bound: u64, init: u64, pick: u64) -> Option<Result<[u64; 2], ErrorKind>> {
    let ty = s.ty;
    let bound = if s.bound_param && pick == 0 { init } else { bound };
    let holds = |a: u64, b: u64| {
        let ord = if ty.signed() { (a as i64).cmp(&(b as i64)) } else { a.cmp(&b) };
        match s.test {
            CmpOp::Lt => ord.is_lt(),
            CmpOp::Le => ord.is_le(),
            CmpOp::Gt => ord.is_gt(),
            CmpOp::Ge => ord.is_ge(),
            CmpOp::Eq => ord.is_eq(),
            CmpOp::Ne => ord.is_ne(),
        }
    };
    let (mut iv, mut acc) = (start, init);
    for _ in 0..200 {
        let old = iv;
        iv = ty.canon(iv.wrapping_add(s.step as u64));
        let t = iv & 255;
        acc = match s.acc {
            Acc::Add | Acc::AddRight => ty.canon(acc.wrapping_add(t)),
            Acc::SubConst => ty.canon(acc.wrapping_sub(3)),
            Acc::Checked => {
                let sum =
                    if ty.signed() { (acc as i64).checked_add(t as i64).map(|v| v as u64) } else { acc.checked_add(t) };
                match sum {
                    Some(v) => v,
                    None => return Some(Err(ErrorKind::Overflow(BinOp::Add))),
                }
            }
        };
        if !holds(iv, bound) {
            return Some(Ok([acc, old]));
        }
    }
    None
}

fn compile(f: &ResidualFunction) -> ResidualFn {
    ResidualFn::compile(f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap()
}

/// Runs the compiled loop on starts and bounds around zero and the ends of
/// the range, trip counts 0 to 30, against [`reference`]; returns how many
/// inputs ran.
fn agrees(s: Shape, f: &ResidualFunction) -> usize {
    let code = compile(f);
    let (lo, hi) = match s.ty {
        ValTy::Int { bits: 8, signed: false } => (0, 255),
        t if t.signed() => (i64::MIN as u64, i64::MAX as u64),
        _ => (0, u64::MAX),
    };
    let canon = |x: u64| s.ty.canon(x);
    let mut starts = vec![0u64, 7, canon((-5i64) as u64)];
    for d in 0..6u64 {
        starts.push(hi.wrapping_sub(d));
        starts.push(lo.wrapping_add(d));
    }
    let mut ran = 0;
    for &start in &starts {
        for d in -3i64..30 {
            let bound = canon(start.wrapping_add((d * s.step.signum()) as u64));
            for bound in [bound, hi, lo, canon(hi.wrapping_sub(2)), canon(lo.wrapping_add(2))] {
                for (init, pick) in [(5u64, 1u64), (canon(hi.wrapping_sub(600)), 1), (bound, 0)] {
                    let Some(want) = reference(s, start, bound, init, pick) else { continue };
                    let got = code.call_words(&[start, bound, init, pick]);
                    let got = match got {
                        Ok(w) => Ok([w[0], w[1]]),
                        Err(ResidualError::Exit { kind, .. }) => Err(kind),
                        Err(e) => panic!("{s:?} start {start} bound {bound} pick {pick}: {e:?}"),
                    };
                    assert_eq!(
                        got,
                        want,
                        "{s:?}: start {start:#x} bound {bound:#x} init {init:#x} pick {pick}\n{}",
                        listing(f)
                    );
                    ran += 1;
                }
            }
        }
    }
    ran
}

/// Whether the function was unrolled: its guard is the only `and` of two
/// bools the test loop has.
fn unrolled(f: &ResidualFunction) -> bool {
    listing(f).contains(" = and.bool ")
}

#[test]
fn counted_loops_unrolled_give_the_results_of_one_turn_at_a_time() {
    let mut shapes = vec![];
    for ty in [ValTy::I64, ValTy::U64] {
        for (step, tests) in [(1, [CmpOp::Lt, CmpOp::Le]), (3, [CmpOp::Lt, CmpOp::Le]), (-1, [CmpOp::Gt, CmpOp::Ge])] {
            for test in tests {
                for (on_true, iv_left, bound_param) in
                    [(true, true, false), (false, true, true), (true, false, true), (false, false, false)]
                {
                    for acc in [Acc::Add, Acc::AddRight, Acc::SubConst, Acc::Checked] {
                        shapes.push(Shape { ty, step, test, on_true, iv_left, bound_param, acc });
                    }
                }
            }
        }
    }
    for s in shapes {
        let f = build(s);
        assert!(unrolled(&f), "{s:?} is a counted loop:\n{}", listing(&f));
        let ran = agrees(s, &f);
        assert!(ran > 1000, "{s:?}: {ran} inputs");
    }
}

#[test]
fn loops_that_do_not_count_toward_their_bound_stay_as_they_are() {
    // Stepping away from the bound (the loop ends by wrapping around), and
    // a test for equality: no guard can show how many turns are left.
    for (step, test) in [(-1, CmpOp::Lt), (1, CmpOp::Gt), (3, CmpOp::Ne), (1, CmpOp::Eq)] {
        let s = Shape { ty: ValTy::I64, step, test, on_true: true, iv_left: true, bound_param: false, acc: Acc::Add };
        let f = build(s);
        assert!(!unrolled(&f) && !listing(&f).contains(" = gt.u64 "), "{s:?}:\n{}", listing(&f));
        if matches!(test, CmpOp::Ne | CmpOp::Eq) {
            agrees(s, &f);
        }
    }
}

#[test]
fn loops_stepping_by_one_until_they_meet_their_bound_unroll_at_any_width() {
    // `while iv' != bound` stepping by one, up or down (a Brainfuck `[-]`
    // once its cell is carried in a register): the guard takes the distance
    // to the bound modulo the width, compared unsigned; wrapping around the
    // ends of the range is part of the loop.
    for ty in [ValTy::I64, ValTy::U64, ValTy::U8] {
        let unsigned = match ty {
            ValTy::U8 => " = gt.u8 ",
            _ => " = gt.u64 ",
        };
        for step in [1, -1] {
            for (on_true, iv_left, bound_param) in
                [(true, true, false), (false, true, true), (true, false, true), (false, false, false)]
            {
                for acc in [Acc::Add, Acc::AddRight, Acc::SubConst] {
                    let s = Shape { ty, step, test: CmpOp::Ne, on_true, iv_left, bound_param, acc };
                    let f = build(s);
                    assert!(listing(&f).contains(unsigned), "{s:?} is a counted loop:\n{}", listing(&f));
                    let ran = agrees(s, &f);
                    assert!(ran > 500, "{s:?}: {ran} inputs");
                }
            }
        }
    }
}

fn check(s: Shape, want: Expect) {
    want.assert_eq(&listing(&build(s)));
}

#[test]
fn an_accumulator_is_carried_by_one_addition_per_unrolled_turn() {
    // Each copy's `iv + step` becomes `iv + k*step`, and the four `acc + t`
    // become `acc + (((t1 + t2) + t3) + t4)`: the values carried from one
    // jump to the next each wait for one addition.
    check(
        Shape {
            ty: ValTy::I64,
            step: 1,
            test: CmpOp::Le,
            on_true: true,
            iv_left: true,
            bound_param: true,
            acc: Acc::Add,
        },
        expect![[r#"
            entry(v0: i64, v1: i64, v2: i64, v3: i64):
                v4 = const.i64 0
                v5 = ne.i64 v3, v4
                branch v5, L3(v0, v2, v1), L3(v0, v2, v2)
            L1(v6: i64, v7: i64, v8: i64):
                v9 = const.i64 1
                v10 = add.i64 v6, v9
                v11 = const.i64 255
                v12 = and.i64 v10, v11
                v13 = add.i64 v7, v12
                v14 = le.i64 v10, v8
                branch v14, L1(v10, v13, v8), L2(v6, v13)
            L2(v15: i64, v16: i64):
                return v16, v15
            L3(v17: i64, v18: i64, v19: i64):
                v20 = const.i64 3
                v21 = sub.i64 v19, v20
                v22 = lt.i64 v21, v19
                v23 = le.i64 v17, v21
                v24 = and.bool v22, v23
                branch v24, L4(v17, v18, v19, v21), L1(v17, v18, v19)
            L4(v25: i64, v26: i64, v27: i64, v28: i64):
                v29 = const.i64 1
                v30 = add.i64 v25, v29
                v31 = const.i64 255
                v32 = and.i64 v30, v31
                v33 = const.i64 2
                v34 = add.i64 v25, v33
                v35 = and.i64 v34, v31
                v36 = add.i64 v32, v35
                v37 = const.i64 3
                v38 = add.i64 v25, v37
                v39 = and.i64 v38, v31
                v40 = add.i64 v36, v39
                v41 = const.i64 4
                v42 = add.i64 v25, v41
                v43 = and.i64 v42, v31
                v44 = add.i64 v40, v43
                v45 = add.i64 v26, v44
                v46 = le.i64 v42, v27
                v47 = le.i64 v42, v28
                branch v47, L4(v42, v45, v27, v28), L5()
            L5():
                branch v46, L1(v42, v45, v27), L2(v38, v45)
        "#]],
    );
}
