//! The generating extension of the seeds' `ll_plus_minus`, written by hand in
//! the shape `#[jit_interpreter]` will emit: a resumable state machine over the
//! function's join blocks, greens in their Rust types, reds as red boxes.

use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::{Residual, ResidualFn};
use jitgen_runtime::schedule::{Compilation, Limits, MergeKind};
use jitgen_runtime::state::{Frame, JitState};

/// The interpreter (the specification).
fn ll_plus_minus(s: &[u8], x: i64, y: i64) -> i64 {
    let mut acc = x;
    let mut pc = 0;
    while pc < s.len() {
        let op = s[pc];
        if op == b'+' {
            acc = acc.wrapping_add(y);
        } else if op == b'-' {
            acc = acc.wrapping_sub(y);
        }
        pc += 1;
    }
    acc
}

/// The states of the generating extension: one variant per join block, with
/// the variables live there (greens as Rust values, reds as red boxes).
#[derive(Clone, Debug)]
enum PlusMinus<'a> {
    /// block1(acc, pc), the loop head; `s` and `y` are live too.
    LoopHead { s: &'a [u8], pc: usize, acc: RedBox, y: RedBox },
}

impl Frame for PlusMinus<'_> {
    type Key = (u32, usize, usize, usize);
    fn key(&self) -> Self::Key {
        match self {
            PlusMinus::LoopHead { s, pc, .. } => (1, s.as_ptr() as usize, s.len(), *pc),
        }
    }
    fn reds(&self) -> Vec<RedBox> {
        match self {
            PlusMinus::LoopHead { acc, y, .. } => vec![*acc, *y],
        }
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        match self {
            PlusMinus::LoopHead { acc, y, .. } => {
                *acc = r[0];
                *y = r[1];
            }
        }
    }
}

/// `jit::specialize::ll_plus_minus(s)`: the residual function of (x, y).
fn specialize(s: &[u8]) -> Residual<(i64, i64), i64> {
    let mut c: Compilation<PlusMinus> =
        Compilation::new("ll_plus_minus", &[ValTy::I64; 2], &[ValTy::I64], Limits::default());
    let ins = c.inputs();
    // block0: acc = x; pc = 0; goto block1.
    let mut next = Some(JitState::new(PlusMinus::LoopHead { s, pc: 0, acc: ins[0], y: ins[1] }));
    while let Some(st) = next.take() {
        // block1 is a join: a merge point.
        let Some(st) = c.merge(st, MergeKind::LoopHead) else {
            next = c.next_pending();
            continue;
        };
        let PlusMinus::LoopHead { s, mut pc, mut acc, y } = st.top().clone();
        // The loop condition is green: it runs at compile time.
        if pc < s.len() {
            let op = s[pc];
            if op == b'+' {
                acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &y);
            } else if op == b'-' {
                acc = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &acc, &y);
            }
            pc += 1;
            next = Some(JitState::new(PlusMinus::LoopHead { s, pc, acc, y }));
        } else {
            c.finish_return(&[acc]);
            next = c.next_pending();
        }
    }
    let f = c.finish().expect("within budget");
    let mut backend = jitgen_runtime::residual::native_backend().unwrap();
    Residual::new(ResidualFn::compile(&f, &mut backend).unwrap()).unwrap()
}

#[test]
fn plus_minus_plus_is_add_sub_add() {
    let r = specialize(b"+-+");
    expect_test::expect![[r#"
        entry(v0: i64, v1: i64):
            v2 = add.i64 v0, v1
            v3 = sub.i64 v2, v1
            v4 = add.i64 v3, v1
            return v4
    "#]]
    .assert_eq(r.listing());
    let ops: Vec<&str> = r.listing().lines().skip(1).filter_map(|l| l.split_whitespace().nth(2)).collect();
    assert_eq!(ops, ["add.i64", "sub.i64", "add.i64"]);
    let samples = [0i64, 1, -1, 3, 10, -77, 1 << 40, i64::MAX, i64::MIN, 123_456_789];
    for x in samples {
        for y in samples {
            assert_eq!(r.call((x, y)).unwrap(), ll_plus_minus(b"+-+", x, y), "x={x} y={y}");
        }
    }
}

#[test]
fn other_programs_agree_with_the_interpreter() {
    for prog in [&b""[..], b"+", b"----", b"+x-y+", b"++++++++++++++++++++++++++++++++-"] {
        let r = specialize(prog);
        let expected_ops = prog.iter().filter(|c| **c == b'+' || **c == b'-').count();
        assert_eq!(r.function().op_count(), expected_ops, "{}", r.listing());
        for (x, y) in [(0, 0), (5, 3), (-9, 4), (i64::MAX, 1), (i64::MIN, -1)] {
            assert_eq!(r.call((x, y)).unwrap(), ll_plus_minus(prog, x, y));
        }
    }
}
