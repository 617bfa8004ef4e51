//! Compilations through the scheduler: folding, red splits that merge again,
//! residual loops, widening, and error exits from residual code.

use expect_test::expect;
use jitgen_runtime::builder::{listing, Terminator};
use jitgen_runtime::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::{Residual, ResidualFn};
use jitgen_runtime::schedule::{Compilation, CompileStats, Declined, Limits, MergeKind};
use jitgen_runtime::state::{Frame, JitState};

/// A frame for small hand-written extensions: a block number and its reds.
#[derive(Clone, Debug)]
struct Blk {
    block: u32,
    green: i64,
    reds: Vec<RedBox>,
}

impl Frame for Blk {
    type Key = (u32, i64);
    fn key(&self) -> (u32, i64) {
        (self.block, self.green)
    }
    fn reds(&self) -> Vec<RedBox> {
        self.reds.clone()
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        self.reds = r.to_vec();
    }
}

fn st(block: u32, reds: Vec<RedBox>) -> JitState<Blk> {
    JitState::new(Blk { block, green: 0, reds })
}

fn native<A: jitgen_runtime::residual::Args, R: jitgen_runtime::residual::Outputs, F: Frame>(
    c: Compilation<F>,
) -> (Residual<A, R>, CompileStats) {
    let stats = c.stats();
    let f = c.finish().expect("within budget");
    (compiled(&f), stats)
}

/// A residual function through Cranelift, callable with typed arguments.
fn compiled<A: jitgen_runtime::residual::Args, R: jitgen_runtime::residual::Outputs>(
    f: &jitgen_runtime::builder::ResidualFunction,
) -> Residual<A, R> {
    Residual::new(ResidualFn::compile(f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap()).unwrap()
}

#[test]
fn constant_red_boxes_fold() {
    let mut c: Compilation<Blk> = Compilation::new("fold", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let x = c.inputs()[0];
    let a = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &RedBox::i64(6), &RedBox::i64(7));
    let b = c.b.red_un(UnOp::Neg, Overflow::Wrap, &a);
    let cond = c.b.red_cmp(CmpOp::Lt, &b, &RedBox::i64(0));
    assert_eq!(a, RedBox::i64(42));
    assert_eq!(b, RedBox::i64(-42));
    assert_eq!(cond, RedBox::bool(true));
    assert_eq!(c.b.red_cast(&RedBox::i64(300), ValTy::U8), RedBox::constant(ValTy::U8, 44));
    // A constant condition folds: no branch, no queued state.
    assert!(c.split(&cond, &mut || unreachable!("the false side of a constant condition is never made")));
    // Identities with a run-time operand emit nothing either.
    let ops_before = c.b.op_count();
    assert_eq!(c.b.red_bin(BinOp::Add, Overflow::Check, &RedBox::i64(0), &x), x);
    assert_eq!(c.b.red_bin(BinOp::Mul, Overflow::Check, &x, &RedBox::i64(1)), x);
    assert_eq!(c.b.red_bin(BinOp::Shl, Overflow::Check, &x, &RedBox::i64(0)), x);
    assert_eq!(c.b.op_count(), ops_before);
    // So do comparisons of a run-time bool with a constant that give it back.
    let neg = c.b.red_cmp(CmpOp::Lt, &x, &RedBox::i64(0));
    let ops_before = c.b.op_count();
    assert_eq!(c.b.red_cmp(CmpOp::Ne, &neg, &RedBox::bool(false)), neg);
    assert_eq!(c.b.red_cmp(CmpOp::Eq, &RedBox::bool(true), &neg), neg);
    assert_eq!(c.b.op_count(), ops_before);
    assert_ne!(c.b.red_cmp(CmpOp::Eq, &neg, &RedBox::bool(false)), neg);
    let r = c.b.red_bin(BinOp::Add, Overflow::Wrap, &x, &b);
    c.finish_return(&[r]);
    assert_eq!(c.stats().splits, 0);
    let (f, _) = native::<(i64,), i64, _>(c);
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 -42
            v2 = add.i64 v0, v1
            return v2
    "#]]
    .assert_eq(f.listing());
    assert_eq!(f.call((50,)).unwrap(), 8);
}

/// A join reached with no branch recorded since the path's last merge point
/// can be reached by no other path: it is passed, no version or block made
/// for it (they were most of what a recursion's compilation did). After a
/// branch, the next join merges, and the side queued at the branch jumps to
/// the version the first side made there.
#[test]
fn joins_reached_by_one_path_are_passed() {
    let mut c: Compilation<Blk> = Compilation::new("passed", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let x = c.inputs()[0];
    // Two joins on the straight path: passed, the path keeps its state.
    let s = c.merge(st(1, vec![x]), MergeKind::Join).expect("passed");
    let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &s.top().reds[0], &RedBox::i64(1));
    let mut s = c
        .merge(JitState { frames: vec![Blk { block: 2, green: 0, reds: vec![y] }], ..s }, MergeKind::Join)
        .expect("passed");
    assert_eq!((c.stats().merges, c.stats().joins_passed), (0, 2));
    // A branch: both sides reach block 3, which merges them.
    let cond = c.b.red_cmp(CmpOp::Gt, &y, &RedBox::i64(0));
    let mut other = s.clone();
    let taken = c.split(&cond, &mut || std::mem::replace(&mut other, JitState::empty()));
    assert!(taken);
    s.top_mut().block = 3;
    let s = c.merge(s, MergeKind::Join).expect("a new version");
    let r = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &s.top().reds[0], &RedBox::i64(2));
    c.finish_return(&[r]);
    let mut queued = c.next_pending().expect("the false side");
    queued.top_mut().block = 3;
    assert!(c.merge(queued, MergeKind::Join).is_none(), "the false side jumps to the version");
    assert!(c.next_pending().is_none());
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats, CompileStats { splits: 1, merges: 2, joins_passed: 2, matches: 1, ..Default::default() });
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 1
            v2 = add.i64 v0, v1
            v3 = const.i64 0
            v4 = gt.i64 v2, v3
            branch v4, L3(), L3()
        L3():
            v5 = const.i64 2
            v6 = mul.i64 v2, v5
            return v6
    "#]]
    .assert_eq(f.listing());
    for n in [-5i64, 0, 7] {
        assert_eq!(f.call((n,)).unwrap(), (n + 1) * 2);
    }
}

/// `fn f(x: i64) -> i64 { let y = if x > 0 { x } else { -x }; y + 1 }`
#[test]
fn red_if_whose_sides_merge_again() {
    let mut c: Compilation<Blk> = Compilation::new("absplus", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let x = c.inputs()[0];
    let cond = c.b.red_cmp(CmpOp::Gt, &x, &RedBox::i64(0));
    // block 1: then; block 2: else; block 3: the join with y.
    let mut next = Some(if c.split(&cond, &mut || st(2, vec![x])) { st(1, vec![x]) } else { st(2, vec![x]) });
    while let Some(s) = next.take() {
        let f = s.top().clone();
        match f.block {
            1 => next = Some(st(3, vec![f.reds[0]])),
            2 => {
                let neg = c.b.red_un(UnOp::Neg, Overflow::Wrap, &f.reds[0]);
                next = Some(st(3, vec![neg]));
            }
            3 => match c.merge(s, MergeKind::Join) {
                Some(s) => {
                    let y = s.top().reds[0];
                    let r = c.b.red_bin(BinOp::Add, Overflow::Wrap, &y, &RedBox::i64(1));
                    c.finish_return(&[r]);
                    next = c.next_pending();
                }
                None => next = c.next_pending(),
            },
            _ => unreachable!(),
        }
    }
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats, CompileStats { splits: 1, merges: 2, matches: 1, widenings: 0, ..Default::default() });
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = gt.i64 v0, v1
            branch v2, L3(v0), L2()
        L2():
            v3 = neg.i64 v0
            jump L3(v3)
        L3(v4: i64):
            v5 = const.i64 1
            v6 = add.i64 v4, v5
            return v6
    "#]]
    .assert_eq(f.listing());
    for x in [-5i64, 0, 7, i64::MIN + 1] {
        assert_eq!(f.call((x,)).unwrap(), x.wrapping_abs().wrapping_add(1));
    }
}

/// `fn f(n: i64) -> i64 { let mut i = 0; let mut acc = 0; while i < n { acc += i; i += 1 } acc }`,
/// everything red. `generalize` is the loop-head policy.
fn count(generalize: bool, limits: Limits) -> (Compilation<Blk>, usize) {
    let mut c: Compilation<Blk> = Compilation::new("count", &[ValTy::I64], &[ValTy::I64], limits);
    let n = c.inputs()[0];
    let mut next = Some(st(1, vec![RedBox::i64(0), RedBox::i64(0), n]));
    let mut steps = 0;
    while let Some(s) = next.take() {
        steps += 1;
        let f = s.top().clone();
        match f.block {
            // The loop head: a merge point.
            1 => match c.merge(s, if generalize { MergeKind::LoopHeadGeneral } else { MergeKind::LoopHead }) {
                Some(s) => {
                    let [i, acc, n] = s.top().reds[..] else { unreachable!() };
                    let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
                    if c.split(&more, &mut || st(2, vec![acc])) {
                        let acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &i);
                        let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                        next = Some(st(1, vec![i, acc, n]));
                    } else {
                        next = Some(st(2, vec![acc]));
                    }
                }
                None => next = c.next_pending(),
            },
            // After the loop: another join.
            2 => match c.merge(s, MergeKind::Join) {
                Some(s) => {
                    c.finish_return(&s.top().reds);
                    next = c.next_pending();
                }
                None => next = c.next_pending(),
            },
            _ => unreachable!(),
        }
    }
    (c, steps)
}

#[test]
fn red_loop_compiles_to_a_residual_loop() {
    let (c, steps) = count(true, Limits::default());
    assert!(steps < 10, "{steps} steps");
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats.widenings, 0);
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v1, v0
            branch v2, L6(v1, v1), L4(v1)
        L2(v3: i64, v4: i64):
            v5 = add.i64 v4, v3
            v6 = const.i64 1
            v7 = add.i64 v3, v6
            v8 = lt.i64 v7, v0
            branch v8, L2(v7, v5), L4(v5)
        L4(v9: i64):
            return v9
        L6(v10: i64, v11: i64):
            v12 = const.i64 3
            v13 = sub.i64 v0, v12
            v14 = lt.i64 v13, v0
            v15 = lt.i64 v10, v13
            v16 = and.bool v14, v15
            branch v16, L7(v10, v11, v13), L2(v10, v11)
        L7(v17: i64, v18: i64, v19: i64):
            v20 = const.i64 1
            v21 = add.i64 v17, v20
            v22 = add.i64 v17, v21
            v23 = const.i64 2
            v24 = add.i64 v17, v23
            v25 = add.i64 v22, v24
            v26 = const.i64 3
            v27 = add.i64 v17, v26
            v28 = add.i64 v25, v27
            v29 = add.i64 v18, v28
            v30 = const.i64 4
            v31 = add.i64 v17, v30
            v32 = lt.i64 v31, v0
            v33 = lt.i64 v31, v19
            branch v33, L7(v31, v29, v19), L8()
        L8():
            branch v32, L2(v31, v29), L4(v29)
    "#]]
    .assert_eq(f.listing());
    for n in [-3i64, 0, 1, 10, 100_000] {
        assert_eq!(f.call((n,)).unwrap(), (0..n.max(0)).sum::<i64>());
    }
}

#[test]
fn widening_at_a_merge() {
    // Without generalizing on arrival, the first two turns are specialized
    // to their constants (i = 0, acc = 0; i = 1, acc = 0), then the third
    // shape (i = 2, acc = 1) is widened: both become run-time values.
    let (c, _) = count(false, Limits::default());
    let (f, stats) = native::<(i64,), i64, _>(c);
    // One widening at the loop head. (After the loop, a forward join, each
    // shape gets a version of its own instead.)
    assert_eq!(stats.widenings, 1, "{}", f.listing());
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v1, v0
            branch v2, L4(), L3()
        L3():
            v3 = const.i64 0
            return v3
        L4():
            v4 = const.i64 1
            v5 = lt.i64 v4, v0
            branch v5, L5(), L3()
        L5():
            v6 = const.i64 2
            v7 = lt.i64 v6, v0
            branch v7, L12(v6, v4), L10(v4)
        L8(v8: i64, v9: i64):
            v10 = add.i64 v9, v8
            v11 = const.i64 1
            v12 = add.i64 v8, v11
            v13 = lt.i64 v12, v0
            branch v13, L8(v12, v10), L10(v10)
        L10(v14: i64):
            return v14
        L12(v15: i64, v16: i64):
            v17 = const.i64 3
            v18 = sub.i64 v0, v17
            v19 = lt.i64 v18, v0
            v20 = lt.i64 v15, v18
            v21 = and.bool v19, v20
            branch v21, L13(v15, v16, v18), L8(v15, v16)
        L13(v22: i64, v23: i64, v24: i64):
            v25 = const.i64 1
            v26 = add.i64 v22, v25
            v27 = add.i64 v22, v26
            v28 = const.i64 2
            v29 = add.i64 v22, v28
            v30 = add.i64 v27, v29
            v31 = const.i64 3
            v32 = add.i64 v22, v31
            v33 = add.i64 v30, v32
            v34 = add.i64 v23, v33
            v35 = const.i64 4
            v36 = add.i64 v22, v35
            v37 = lt.i64 v36, v0
            v38 = lt.i64 v36, v24
            branch v38, L13(v36, v34, v24), L14()
        L14():
            branch v37, L8(v36, v34), L10(v34)
    "#]]
    .assert_eq(f.listing());
    let text = f.listing();
    for n in [0i64, 1, 2, 3, 50] {
        assert_eq!(f.call((n,)).unwrap(), (0..n).sum::<i64>(), "{text}");
    }
}

#[test]
fn the_last_version_before_the_general_one_keeps_what_all_versions_agree_on() {
    // One merge key reached by states that always hold the same tag (7) and
    // a payload that differs. Making the tag a run-time value would compile
    // every case of the code that tests it; only a state with another tag
    // gets the fully general version.
    let mut c: Compilation<Blk> = Compilation::new("versions", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let x = c.inputs()[0];
    let tag = |t: u64| RedBox::constant(ValTy::U32, t);
    let mut arrive = |t: u64, payload: RedBox| {
        // Each state comes from a path of its own (through a branch: a
        // join reached with no branch since the last merge point is passed).
        let mut s = st(1, vec![tag(t), payload]);
        s.merged_at = u64::MAX;
        let reds = c.merge(s, MergeKind::Join).map(|s| s.top().reds.clone());
        if reds.is_none() {
            // The path jumped to existing code: the next one starts elsewhere.
            let (elsewhere, _) = c.b.new_label(&[]);
            c.b.switch_to(elsewhere);
        }
        reds
    };
    assert_eq!(Limits::default().max_versions, 4);
    for k in 0..3 {
        assert_eq!(arrive(7, RedBox::i64(k)), Some(vec![tag(7), RedBox::i64(k)]), "exact version {k}");
    }
    let last = arrive(7, RedBox::i64(3)).expect("a fourth version");
    assert_eq!(last[0], tag(7), "the tag every version agreed on stays a constant");
    assert_eq!(last[1].as_const(), None, "the payload that differed is a run-time value");
    assert_eq!(arrive(7, x), None, "the fourth version covers any payload with tag 7");
    let general = arrive(8, RedBox::i64(0)).expect("the fully general version");
    assert!(general.iter().all(|r| r.as_const().is_none()), "{general:?}");
    assert_eq!(arrive(9, x), None, "the general version covers every state");
    c.finish_return(&[x]);
    assert_eq!(c.stats().widenings, 1);
    assert!(c.finish().is_ok());
}

#[test]
fn a_block_that_only_forwards_its_parameters_is_jumped_over() {
    use jitgen_runtime::builder::ResidualBuilder;
    // sum(n): a loop entered, and closed, through a block that swaps and
    // copies its parameters (as a loop entered in mid-turn leaves one).
    let mut b = ResidualBuilder::new("forward", &[ValTy::I64], &[ValTy::I64]);
    let n = b.inputs()[0];
    let (head, hp) = b.new_label(&[ValTy::I64, ValTy::I64, ValTy::I64]);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let (fwd, fp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let zero = b.konst(ValTy::I64, 0);
    b.jump(fwd, &[zero, zero]);
    b.switch_to(head);
    let (i, acc, copy) = (hp[0], hp[1], hp[2]);
    let more = b.cmp(CmpOp::Lt, ValTy::I64, i, n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let acc = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, acc, copy);
    let one = b.konst(ValTy::I64, 1);
    let i = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, i, one);
    b.jump(fwd, &[acc, i]);
    b.switch_to(fwd);
    b.jump(head, &[fp[1], fp[0], fp[1]]);
    b.switch_to(done);
    b.ret(&[hp[1]]);
    let f = b.finish();
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v1, v0
            branch v2, L6(v1, v1), L3(v1)
        L2(v3: i64, v4: i64):
            v5 = add.i64 v4, v3
            v6 = const.i64 1
            v7 = add.i64 v3, v6
            v8 = lt.i64 v7, v0
            branch v8, L2(v7, v5), L3(v5)
        L3(v9: i64):
            return v9
        L6(v10: i64, v11: i64):
            v12 = const.i64 3
            v13 = sub.i64 v0, v12
            v14 = lt.i64 v13, v0
            v15 = lt.i64 v10, v13
            v16 = and.bool v14, v15
            branch v16, L7(v10, v11, v13), L2(v10, v11)
        L7(v17: i64, v18: i64, v19: i64):
            v20 = const.i64 1
            v21 = add.i64 v17, v20
            v22 = add.i64 v17, v21
            v23 = const.i64 2
            v24 = add.i64 v17, v23
            v25 = add.i64 v22, v24
            v26 = const.i64 3
            v27 = add.i64 v17, v26
            v28 = add.i64 v25, v27
            v29 = add.i64 v18, v28
            v30 = const.i64 4
            v31 = add.i64 v17, v30
            v32 = lt.i64 v31, v0
            v33 = lt.i64 v31, v19
            branch v33, L7(v31, v29, v19), L8()
        L8():
            branch v32, L2(v31, v29), L3(v29)
    "#]]
    .assert_eq(&listing(&f));
    let code: Residual<(i64,), i64> = compiled(&f);
    // acc takes the previous i each turn: 0 + 0 + 1 + ... + (n - 1).
    for n in [0i64, 1, 2, 5, 100] {
        assert_eq!(code.call((n,)).unwrap(), (0..n).sum::<i64>());
    }
}

#[test]
fn a_loop_closed_through_a_small_block_gets_a_copy_of_it() {
    use jitgen_runtime::builder::ResidualBuilder;
    // sum(n) entered in mid-turn: the rest of a turn (`acc += i`) heads the
    // loop, and the back edge comes through it: three blocks a turn.
    let mut b = ResidualBuilder::new("mid-turn", &[ValTy::I64], &[ValTy::I64]);
    let n = b.inputs()[0];
    let (rest, rp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let (test, tp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let zero = b.konst(ValTy::I64, 0);
    // (The test has another way in, so it does not merge into `rest`.)
    let negative = b.cmp(CmpOp::Lt, ValTy::I64, n, zero);
    b.branch(negative, (test, &[zero, zero]), (rest, &[zero, zero]));
    b.switch_to(rest);
    let acc = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, rp[1], rp[0]);
    b.jump(test, &[rp[0], acc]);
    b.switch_to(test);
    let more = b.cmp(CmpOp::Lt, ValTy::I64, tp[0], n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let one = b.konst(ValTy::I64, 1);
    let i = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, tp[0], one);
    b.jump(rest, &[i, tp[1]]);
    b.switch_to(done);
    b.ret(&[tp[1]]);
    let f = b.finish();
    // The back edge's block ends with a copy of `rest` and of the test
    // (copies of a copy): one block a turn; the entry's ways in keep
    // theirs.
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v0, v1
            branch v2, L2(), L1()
        L1():
            v3 = lt.i64 v1, v0
            branch v3, L8(v1, v1), L4(v1)
        L2():
            v4 = lt.i64 v1, v0
            branch v4, L8(v1, v1), L4(v1)
        L3(v5: i64, v6: i64):
            v7 = const.i64 1
            v8 = add.i64 v5, v7
            v9 = add.i64 v6, v8
            v10 = lt.i64 v8, v0
            branch v10, L3(v8, v9), L4(v9)
        L4(v11: i64):
            return v11
        L8(v12: i64, v13: i64):
            v14 = const.i64 3
            v15 = sub.i64 v0, v14
            v16 = lt.i64 v15, v0
            v17 = lt.i64 v12, v15
            v18 = and.bool v16, v17
            branch v18, L9(v12, v13, v15), L3(v12, v13)
        L9(v19: i64, v20: i64, v21: i64):
            v22 = const.i64 1
            v23 = add.i64 v19, v22
            v24 = const.i64 2
            v25 = add.i64 v19, v24
            v26 = add.i64 v23, v25
            v27 = const.i64 3
            v28 = add.i64 v19, v27
            v29 = add.i64 v26, v28
            v30 = const.i64 4
            v31 = add.i64 v19, v30
            v32 = add.i64 v29, v31
            v33 = add.i64 v20, v32
            v34 = lt.i64 v31, v0
            v35 = lt.i64 v31, v21
            branch v35, L9(v31, v33, v21), L10()
        L10():
            branch v34, L3(v31, v33), L4(v33)
    "#]]
    .assert_eq(&listing(&f));
    sums_up_to_n(&f);
}

/// Checks that `f(n)` is 0 + 1 + ... + n (just 0 when n <= 0), compiled.
fn sums_up_to_n(f: &jitgen_runtime::builder::ResidualFunction) {
    let code: Residual<(i64,), i64> = compiled(f);
    for n in [-3i64, 0, 1, 2, 5, 100] {
        assert_eq!(code.call((n,)).unwrap(), (0..=n).sum::<i64>(), "n {n}");
    }
}

#[test]
fn a_loop_head_whose_values_are_used_after_it_is_rotated() {
    // `acc += i` then `i < n` at the head, as TLC f1's inner loop compiled
    // at the `x += i & j`: the back edge's block passes the head's new
    // `acc` back to it, and the exit returns it. Copying the head to the
    // back edge gives `acc` two definitions: the body gets a parameter for
    // it, and so does the exit.
    use jitgen_runtime::builder::ResidualBuilder;
    let mut b = ResidualBuilder::new("rotate", &[ValTy::I64], &[ValTy::I64]);
    let n = b.inputs()[0];
    let (head, hp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let zero = b.konst(ValTy::I64, 0);
    b.jump(head, &[zero, zero]);
    b.switch_to(head);
    let (acc, i) = (hp[0], hp[1]);
    let acc = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, acc, i);
    let more = b.cmp(CmpOp::Lt, ValTy::I64, i, n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let one = b.konst(ValTy::I64, 1);
    let i = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, hp[1], one);
    b.jump(head, &[acc, i]);
    b.switch_to(done);
    b.ret(&[acc]);
    let f = b.finish();
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v1, v0
            branch v2, L5(v1, v1), L3(v1)
        L2(v3: i64, v4: i64):
            v5 = const.i64 1
            v6 = add.i64 v3, v5
            v7 = add.i64 v4, v6
            v8 = lt.i64 v6, v0
            branch v8, L2(v6, v7), L3(v7)
        L3(v9: i64):
            return v9
        L5(v10: i64, v11: i64):
            v12 = const.i64 3
            v13 = sub.i64 v0, v12
            v14 = lt.i64 v13, v0
            v15 = lt.i64 v10, v13
            v16 = and.bool v14, v15
            branch v16, L6(v10, v11, v13), L2(v10, v11)
        L6(v17: i64, v18: i64, v19: i64):
            v20 = const.i64 1
            v21 = add.i64 v17, v20
            v22 = const.i64 2
            v23 = add.i64 v17, v22
            v24 = add.i64 v21, v23
            v25 = const.i64 3
            v26 = add.i64 v17, v25
            v27 = add.i64 v24, v26
            v28 = const.i64 4
            v29 = add.i64 v17, v28
            v30 = add.i64 v27, v29
            v31 = add.i64 v18, v30
            v32 = lt.i64 v29, v0
            v33 = lt.i64 v29, v19
            branch v33, L6(v29, v31, v19), L7()
        L7():
            branch v32, L2(v29, v31), L3(v31)
    "#]]
    .assert_eq(&listing(&f));
    sums_up_to_n(&f);
}

#[test]
fn compilation_terminates_when_greens_never_repeat() {
    // A merge key that changes every turn (a green counter) never matches:
    // the budget ends the compilation.
    let limits = Limits { max_ops: 200, ..Limits::default() };
    let mut c: Compilation<Blk> = Compilation::new("runaway", &[ValTy::I64], &[ValTy::I64], limits);
    let x = c.inputs()[0];
    let mut state = Some(JitState::new(Blk { block: 1, green: 0, reds: vec![x] }));
    let mut turns = 0;
    while let Some(s) = state.take() {
        turns += 1;
        let Some(s) = c.merge(s, MergeKind::Join) else { break };
        let f = s.top().clone();
        let y = c.b.red_bin(BinOp::Add, Overflow::Wrap, &f.reds[0], &RedBox::i64(1));
        state = Some(JitState::new(Blk { block: 1, green: f.green + 1, reds: vec![y] }));
    }
    assert!(turns < 300, "{turns}");
    assert!(matches!(c.finish(), Err(Declined::Budget { .. })));
}

#[test]
fn division_by_zero_and_out_of_bounds_are_errors_from_residual_code() {
    // a / b with a red divisor, and a constant division by zero: both checks
    // stay in residual code and leave through an error exit.
    let mut c: Compilation<Blk> = Compilation::new("div", &[ValTy::I64, ValTy::I64], &[ValTy::I64], Limits::default());
    let [a, b] = c.inputs()[..] else { unreachable!() };
    let q = c.b.red_bin(BinOp::Div, Overflow::Check, &a, &b);
    let zero = c.b.red_cmp(CmpOp::Eq, &a, &RedBox::i64(0));
    assert!(c.split(&zero, &mut || st(0, vec![])));
    let bad = c.b.red_bin(BinOp::Rem, Overflow::Wrap, &RedBox::i64(1), &RedBox::i64(0));
    assert!(!bad.is_const(), "a constant remainder by zero must not fold");
    c.finish_return(&[bad]);
    let s = c.next_pending().unwrap();
    assert_eq!(s.top().block, 0);
    c.finish_return(&[q]);
    let (f, _) = native::<(i64, i64), i64, _>(c);
    assert_eq!(f.call((9, 2)).unwrap(), 4);
    assert_eq!(f.call((9, 0)).unwrap_err().kind(), Some(ErrorKind::DivideByZero));
    assert_eq!(f.call((0, 3)).unwrap_err().kind(), Some(ErrorKind::RemainderByZero));
    assert_eq!(f.call((i64::MIN, -1)).unwrap_err().to_string(), "attempt to divide with overflow");

    // v[i] on a red slice (pointer and length) and a red index.
    let mut c: Compilation<Blk> =
        Compilation::new("get", &[ValTy::Ptr, ValTy::U64, ValTy::U64], &[ValTy::I64], Limits::default());
    let [p, len, i] = c.inputs()[..] else { unreachable!() };
    c.b.red_bounds_check(&i, &len);
    let off = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &i, &RedBox::u64(8));
    let off = c.b.red_cast(&off, ValTy::Ptr);
    let addr = c.b.red_bin(BinOp::Add, Overflow::Wrap, &p, &off);
    let v = c.b.red_load(ValTy::I64, &addr, 0);
    c.finish_return(&[v]);
    let f = c.finish().unwrap();
    let text = listing(&f);
    assert!(text.contains("bounds_check"), "{text}");
    let f = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    let data = [5i64, 6, 7];
    let call = |i: u64| f.call_words(&[data.as_ptr() as u64, data.len() as u64, i]);
    assert_eq!(call(2).unwrap(), [7]);
    assert_eq!(call(3).unwrap_err().to_string(), "index out of bounds: the len is 3 but the index is 3");
    assert_eq!(call(u64::MAX).unwrap_err().kind(), Some(ErrorKind::IndexOutOfBounds));
}

/// `fn f(x) -> i64 { let a = g(x); a * 2 }` with `g(x) = if x > 0 { x } else { 0 }`
/// inlined: the state is a chain of two frames, copied at the split inside g.
#[test]
fn inlined_call_keeps_a_chain_of_frames() {
    let mut c: Compilation<Blk> = Compilation::new("f", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let x = c.inputs()[0];
    // Caller frame: block 10 is where f continues after the call (a join: g returns twice).
    let caller = Blk { block: 10, green: 0, reds: vec![] };
    let callee = Blk { block: 1, green: 0, reds: vec![x] };
    let mut next = Some(JitState {
        frames: vec![caller, callee],
        heap: Default::default(),
        known: vec![],
        epoch: 0,
        lineage: Default::default(),
        below_entry: false,
        leaving: false,
        merged_at: 0,
        top_len: None,
    });
    let mut depth_seen = vec![];
    while let Some(mut s) = next.take() {
        depth_seen.push(s.frames.len());
        let f = s.top().clone();
        match f.block {
            // g: the red split.
            1 => {
                let pos = c.b.red_cmp(CmpOp::Gt, &f.reds[0], &RedBox::i64(0));
                let mut other = s.clone();
                other.top_mut().block = 3;
                if c.split(&pos, &mut || other.clone()) {
                    s.top_mut().block = 2;
                } else {
                    s.top_mut().block = 3;
                }
                next = Some(s);
            }
            // g returns x or 0: pop its frame, the result goes to the caller.
            2 | 3 => {
                let r = if f.block == 2 { f.reds[0] } else { RedBox::i64(0) };
                s.frames.pop();
                s.top_mut().reds = vec![r];
                next = Some(s);
            }
            10 => match c.merge(s, MergeKind::Join) {
                Some(s) => {
                    let a = s.top().reds[0];
                    let r = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &a, &RedBox::i64(2));
                    c.finish_return(&[r]);
                    next = c.next_pending();
                }
                None => next = c.next_pending(),
            },
            _ => unreachable!(),
        }
    }
    // The pending state resumed with both frames.
    assert_eq!(depth_seen.iter().filter(|d| **d == 2).count(), 3, "{depth_seen:?}");
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!((stats.splits, stats.matches), (1, 1));
    for x in [-4i64, 0, 9] {
        assert_eq!(f.call((x,)).unwrap(), x.max(0) * 2);
    }
}

/// `acc = (acc + i) % d` for i in 0..n, compiled from `first` (reds
/// `[i, acc, n, d]` at the loop head, block 1).
fn mod_sum(c: &mut Compilation<Blk>, first: JitState<Blk>) {
    let mut next = Some(first);
    while let Some(s) = next.take() {
        let f = s.top().clone();
        match f.block {
            1 => match c.merge(s, MergeKind::LoopHead) {
                Some(s) => {
                    let [i, acc, n, d] = s.top().reds[..] else { unreachable!() };
                    let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
                    if c.split(&more, &mut || st(2, vec![acc])) {
                        let sum = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &i);
                        let acc = c.b.red_bin(BinOp::Rem, Overflow::Wrap, &sum, &d);
                        let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                        next = Some(st(1, vec![i, acc, n, d]));
                    } else {
                        next = Some(st(2, vec![acc]));
                    }
                }
                None => next = c.next_pending(),
            },
            _ => {
                c.finish_return(&f.reds);
                next = c.next_pending();
            }
        }
    }
}

#[test]
fn loop_invariant_divisors_are_found_and_promoted_at_entry() {
    let tys = [ValTy::I64, ValTy::I64];
    let mut c: Compilation<Blk> = Compilation::new("modsum", &tys, &[ValTy::I64], Limits::default());
    let [n, d] = c.inputs()[..] else { unreachable!() };
    let entry = st(1, vec![RedBox::i64(0), RedBox::i64(0), n, d]);
    c.mark_entry();
    mod_sum(&mut c, entry.clone());
    // Of the loop's reds, `d` (index 3) is kept by the loop and divides;
    // `n` is kept but only compared, `i` and `acc` change.
    let facts = c.entry_facts();
    assert_eq!(facts.divisors, [3]);
    assert_eq!(facts.copies, []);
    // The same code with d = 7 behind a guard: the other divisors take the
    // general loop (queued here, and compiled next: this compilation cannot
    // defer).
    let now = [RedBox::i64(0), RedBox::i64(0), RedBox::i64(100), RedBox::i64(7)];
    assert!(c.version_entry(entry, &facts, &now));
    let general = c.next_pending().expect("the general state, queued");
    assert_eq!(general.top().reds[3], d);
    mod_sum(&mut c, general);
    let (f, _) = native::<(i64, i64), i64, _>(c);
    // The promoted loop divides by the constant; the general one by `d`.
    expect![[r#"
        entry(v0: i64, v1: i64):
            v2 = const.i64 7
            v3 = eq.i64 v1, v2
            branch v3, L1(), L13()
        L1():
            v4 = const.i64 0
            v5 = lt.i64 v4, v0
            branch v5, L2(), L3()
        L2():
            v6 = const.i64 1
            v7 = lt.i64 v6, v0
            branch v7, L5(), L6()
        L3():
            return v4
        L5():
            v8 = const.i64 2
            v9 = lt.i64 v8, v0
            branch v9, L24(v8, v6), L9(v6)
        L6():
            return v4
        L8(v10: i64, v11: i64):
            v12 = add.i64 v11, v10
            v13 = rem.i64 v12, v2
            v14 = const.i64 1
            v15 = add.i64 v10, v14
            v16 = lt.i64 v15, v0
            branch v16, L8(v15, v13), L9(v13)
        L9(v17: i64):
            return v17
        L13():
            v18 = const.i64 0
            v19 = lt.i64 v18, v0
            branch v19, L14(), L15()
        L14():
            v20 = rem.i64 v18, v1
            v21 = const.i64 1
            v22 = lt.i64 v21, v0
            branch v22, L17(), L18()
        L15():
            return v18
        L17():
            v23 = add.i64 v20, v21
            v24 = rem.i64 v23, v1
            v25 = const.i64 2
            v26 = lt.i64 v25, v0
            branch v26, L27(v25, v24), L21(v24)
        L18():
            return v20
        L20(v27: i64, v28: i64):
            v29 = add.i64 v28, v27
            v30 = rem.i64 v29, v1
            v31 = const.i64 1
            v32 = add.i64 v27, v31
            v33 = lt.i64 v32, v0
            branch v33, L20(v32, v30), L21(v30)
        L21(v34: i64):
            return v34
        L24(v35: i64, v36: i64):
            v37 = const.i64 3
            v38 = sub.i64 v0, v37
            v39 = lt.i64 v38, v0
            v40 = lt.i64 v35, v38
            v41 = and.bool v39, v40
            branch v41, L25(v35, v36, v38), L8(v35, v36)
        L25(v42: i64, v43: i64, v44: i64):
            v45 = add.i64 v43, v42
            v46 = rem.i64 v45, v2
            v47 = const.i64 1
            v48 = add.i64 v42, v47
            v49 = add.i64 v46, v48
            v50 = rem.i64 v49, v2
            v51 = const.i64 2
            v52 = add.i64 v42, v51
            v53 = add.i64 v50, v52
            v54 = rem.i64 v53, v2
            v55 = const.i64 3
            v56 = add.i64 v42, v55
            v57 = add.i64 v54, v56
            v58 = rem.i64 v57, v2
            v59 = const.i64 4
            v60 = add.i64 v42, v59
            v61 = lt.i64 v60, v0
            v62 = lt.i64 v60, v44
            branch v62, L25(v60, v58, v44), L26()
        L26():
            branch v61, L8(v60, v58), L9(v58)
        L27(v63: i64, v64: i64):
            v65 = const.i64 3
            v66 = sub.i64 v0, v65
            v67 = lt.i64 v66, v0
            v68 = lt.i64 v63, v66
            v69 = and.bool v67, v68
            branch v69, L28(v63, v64, v66), L20(v63, v64)
        L28(v70: i64, v71: i64, v72: i64):
            v73 = add.i64 v71, v70
            v74 = rem.i64 v73, v1
            v75 = const.i64 1
            v76 = add.i64 v70, v75
            v77 = add.i64 v74, v76
            v78 = rem.i64 v77, v1
            v79 = const.i64 2
            v80 = add.i64 v70, v79
            v81 = add.i64 v78, v80
            v82 = rem.i64 v81, v1
            v83 = const.i64 3
            v84 = add.i64 v70, v83
            v85 = add.i64 v82, v84
            v86 = rem.i64 v85, v1
            v87 = const.i64 4
            v88 = add.i64 v70, v87
            v89 = lt.i64 v88, v0
            v90 = lt.i64 v88, v72
            branch v90, L28(v88, v86, v72), L29()
        L29():
            branch v89, L20(v88, v86), L21(v86)
    "#]]
    .assert_eq(f.listing());
    let want = |n: i64, d: i64| (0..n).fold(0i64, |acc, i| (acc + i) % d);
    for (n, d) in [(100, 7), (100, 5), (1000, 7), (3, -4), (0, 7)] {
        assert_eq!(f.call((n, d)).unwrap(), want(n, d), "n {n} d {d}");
    }
}

#[test]
fn invariant_divisors_are_found_when_the_first_merge_point_only_forwards() {
    // `while i < n { acc = (acc + i) % d; i += 1 }` with two merge points
    // in a row at the top of the loop, the compilation starting at the
    // first (as TLC factorial compiled at a PICK): its block only forwards
    // its parameters to the second, and simplification jumps over it.
    let tys = [ValTy::I64; 4];
    let mut c: Compilation<Blk> = Compilation::new("modsum", &tys, &[ValTy::I64], Limits::default());
    let first = st(0, c.inputs());
    drive(&mut c, first, |c, s| match s.top().block {
        0 => {
            let [i, acc, n, d] = s.top().reds[..] else { unreachable!() };
            st(1, vec![d, n, acc, i])
        }
        _ => {
            let [d, n, acc, i] = s.top().reds[..] else { unreachable!() };
            let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
            if c.split(&more, &mut || st(2, vec![acc])) {
                let sum = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &i);
                let acc = c.b.red_bin(BinOp::Rem, Overflow::Wrap, &sum, &d);
                let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                st(0, vec![i, acc, n, d])
            } else {
                st(2, vec![acc])
            }
        }
    });
    // The second merge point made no block of its own that only passes the
    // first one's parameters on: the first one's, still empty, serves it.
    let recorded = c.b.function();
    let forwarding = recorded
        .blocks
        .values()
        .skip(1)
        .filter(|b| !b.params.is_empty() && b.insts.is_empty() && matches!(b.term, Some(Terminator::Jump(..))));
    assert_eq!(forwarding.count(), 0, "{}", listing(recorded));
    let facts = c.entry_facts();
    let f = c.finish().expect("within budget");
    let text = listing(&f);
    let forwarders = text
        .lines()
        .zip(text.lines().skip(1))
        .filter(|(l, next)| l.starts_with('L') && next.trim_start().starts_with("jump"));
    assert_eq!(forwarders.count(), 0, "the first merge point's block is jumped over:\n{text}");
    assert_eq!(facts.divisors, [3], "d, last in the entry state");
}

/// `while i < n { x += i; copy = x; i += 1 } copy`, all red: the loop's
/// back edge passes one value for `x` and `copy`.
#[test]
fn invariant_divisors_are_found_through_a_version_that_shares_another_merge_points_label() {
    // The entry state knows `acc` = 0; the loop comes back with it a
    // run-time value, through a second merge point (block 1) that records
    // nothing before the first (block 0) is reached again. That second
    // version of block 0 shares block 1's label, whose parameters hold the
    // reds in another order; the loop closes there, never at the entry's
    // own label, so `d` is known invariant only through the shared one.
    let tys = [ValTy::I64; 3];
    let mut c: Compilation<Blk> = Compilation::new("modsum", &tys, &[ValTy::I64], Limits::default());
    let [i, n, d] = c.inputs()[..] else { unreachable!() };
    let first = st(0, vec![i, RedBox::i64(0), n, d]);
    drive(&mut c, first, |c, s| match s.top().block {
        0 => {
            let [i, acc, n, d] = s.top().reds[..] else { unreachable!() };
            let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
            if c.split(&more, &mut || st(2, vec![acc])) {
                let sum = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &i);
                let acc = c.b.red_bin(BinOp::Rem, Overflow::Wrap, &sum, &d);
                let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                st(1, vec![d, n, acc, i])
            } else {
                st(2, vec![acc])
            }
        }
        _ => {
            let [d, n, acc, i] = s.top().reds[..] else { unreachable!() };
            st(0, vec![i, acc, n, d])
        }
    });
    let facts = c.entry_facts();
    assert_eq!(facts.divisors, [3], "d, last in the entry state");
    let f = c.finish().expect("within budget");
    let f: jitgen_runtime::residual::Residual<(i64, i64, i64), i64> = compiled(&f);
    for (i, n, d) in [(0, 10, 7), (3, 50, 9), (5, 2, 3)] {
        let want = (i..n).fold(0, |acc, i| (acc + i) % d);
        assert_eq!(f.call((i, n, d)).unwrap(), want);
    }
}

fn copy_loop(c: &mut Compilation<Blk>, first: JitState<Blk>) {
    drive(c, first, |c, s| {
        let [i, x, copy, n] = s.top().reds[..] else { unreachable!() };
        let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
        if c.split(&more, &mut || st(2, vec![copy])) {
            let x = c.b.red_bin(BinOp::Add, Overflow::Wrap, &x, &i);
            let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
            st(1, vec![i, x, x, n])
        } else {
            st(2, vec![copy])
        }
    });
}

/// Drives a hand-written extension whose every block starts at a merge
/// point (a loop head): block 2 returns its reds; from any other block's
/// merged state, `turn` emits the block and gives the next state.
fn drive(
    c: &mut Compilation<Blk>,
    first: JitState<Blk>,
    mut turn: impl FnMut(&mut Compilation<Blk>, JitState<Blk>) -> JitState<Blk>,
) {
    let mut next = Some(first);
    while let Some(s) = next.take() {
        let block = s.top().block;
        next = match c.merge(s, MergeKind::LoopHead) {
            Some(s) if block == 2 => {
                c.finish_return(&s.top().reds);
                c.next_pending()
            }
            Some(s) => Some(turn(c, s)),
            None => c.next_pending(),
        };
    }
}

#[test]
fn copies_that_the_loop_keeps_equal_become_one_value_behind_a_guard() {
    let tys = [ValTy::I64; 4];
    let mut c: Compilation<Blk> = Compilation::new("copies", &tys, &[ValTy::I64], Limits::default());
    let entry = st(1, c.inputs());
    c.mark_entry();
    copy_loop(&mut c, entry.clone());
    let facts = c.entry_facts();
    assert_eq!(facts.copies, [(1, 2)], "x and copy");
    assert_eq!(facts.divisors, []);
    // Entered where they are equal (as they are now): one loop parameter
    // for both behind the guard, the general loop beside it.
    let now = [RedBox::i64(0), RedBox::i64(5), RedBox::i64(5), RedBox::i64(10)];
    assert!(c.version_entry(entry, &facts, &now));
    let general = c.next_pending().expect("the general state, queued");
    assert_ne!(general.top().reds[1], general.top().reds[2]);
    copy_loop(&mut c, general);
    let (f, _) = native::<(i64, i64, i64, i64), i64, _>(c);
    let text = f.listing();
    let loop_params: Vec<usize> =
        text.lines().filter(|l| l.starts_with('L') && l.contains("i64")).map(|l| l.matches("i64").count()).collect();
    // (`n`, the same every turn, is no parameter: simplification passes it
    // through.)
    assert!(loop_params.contains(&2), "a loop head with i and x only:\n{text}");
    let want = |i: i64, x: i64, copy: i64, n: i64| if i < n { x + (i..n).sum::<i64>() } else { copy };
    for (i, x, copy, n) in [(0, 5, 5, 10), (0, 5, 7, 10), (3, 1, 1, 2), (3, 1, 9, 2), (0, -4, -4, 1000)] {
        assert_eq!(f.call((i, x, copy, n)).unwrap(), want(i, x, copy, n), "{text}");
    }
}

/// The head of `for i in 0..n` carrying `i` and `carried` (i64s), which
/// returns `i` when done; leaves the builder in the loop's body.
fn counted_loop(
    b: &mut jitgen_runtime::builder::ResidualBuilder,
    n: jitgen_runtime::builder::Val,
    carried: &[jitgen_runtime::builder::Val],
) -> (jitgen_runtime::builder::Label, Vec<jitgen_runtime::builder::Val>) {
    let i64t = ValTy::I64;
    let zero = b.konst(i64t, 0);
    let (head, hp) = b.new_label(&vec![i64t; carried.len() + 1]);
    b.jump(head, &[&[zero][..], carried].concat());
    b.switch_to(head);
    let more = b.cmp(CmpOp::Lt, i64t, hp[0], n);
    let (body, _) = b.new_label(&[]);
    let (exit, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (exit, &[]));
    b.switch_to(exit);
    b.ret(&[hp[0]]);
    b.switch_to(body);
    (head, hp)
}

#[test]
fn invariant_divisors_through_an_inner_loop() {
    use jitgen_runtime::builder::ResidualBuilder;
    // for i in 0..n { for j in 0..3 { j % d } }: `d` reaches the division
    // through the inner loop's head, which also receives it from itself.
    let i64t = ValTy::I64;
    let mut b = ResidualBuilder::new("nested", &[i64t, i64t], &[i64t]);
    let (n, d) = (b.inputs()[0], b.inputs()[1]);
    let (head, hp) = counted_loop(&mut b, n, &[d]);
    let zero = b.konst(i64t, 0);
    let (inner, ip) = b.new_label(&[i64t, i64t]);
    b.jump(inner, &[zero, hp[1]]);
    b.switch_to(inner);
    let three = b.konst(i64t, 3);
    let more = b.cmp(CmpOp::Lt, i64t, ip[0], three);
    let (body, _) = b.new_label(&[]);
    let (back, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (back, &[]));
    b.switch_to(body);
    let _ = b.bin(BinOp::Rem, i64t, Overflow::Wrap, ip[0], ip[1]);
    let one = b.konst(i64t, 1);
    let j = b.bin(BinOp::Add, i64t, Overflow::Wrap, ip[0], one);
    b.jump(inner, &[j, ip[1]]);
    b.switch_to(back);
    let one = b.konst(i64t, 1);
    let i = b.bin(BinOp::Add, i64t, Overflow::Wrap, hp[0], one);
    b.jump(head, &[i, ip[1]]);
    let f = b.function().clone();
    assert_eq!(f.invariant_divisors(head), [1], "{}", listing(&f));
    // Not when the outer loop changes it.
    let mut g = f.clone();
    let Some(jitgen_runtime::builder::Terminator::Jump(_, args)) = &mut g.blocks[back].term else {
        panic!("the back edge: {}", listing(&f))
    };
    args[1] = args[0];
    assert_eq!(g.invariant_divisors(head), Vec::<usize>::new());
}

#[test]
fn invariant_divisors_through_a_copy_of_an_invariant_slot() {
    use jitgen_runtime::builder::ResidualBuilder;
    // A loop entered where its divisor `t` is a copy of the invariant `d`
    // (an interpreter's stack top): `for i in 0..n { i % t; t = d }`.
    let i64t = ValTy::I64;
    let build = |back_t: usize| {
        let mut b = ResidualBuilder::new("copied", &[i64t, i64t, i64t], &[i64t]);
        let (n, d, t) = (b.inputs()[0], b.inputs()[1], b.inputs()[2]);
        let (head, hp) = counted_loop(&mut b, n, &[d, t]);
        let _ = b.bin(BinOp::Rem, i64t, Overflow::Wrap, hp[0], hp[2]);
        let one = b.konst(i64t, 1);
        let i = b.bin(BinOp::Add, i64t, Overflow::Wrap, hp[0], one);
        b.jump(head, &[i, hp[1], hp[back_t]]);
        (b.function().clone(), head)
    };
    // Given `d` back: both the copy and the slot it copies are promoted.
    let (f, head) = build(1);
    assert_eq!(f.invariant_divisors(head), [1, 2], "{}", listing(&f));
    // Given `i` back: the divisor changes every turn.
    let (g, head) = build(0);
    assert_eq!(g.invariant_divisors(head), Vec::<usize>::new(), "{}", listing(&g));
}

#[test]
fn simplification_propagates_invariant_and_equal_parameters_and_folds_constants() {
    use jitgen_runtime::builder::ResidualBuilder;
    // What versioning at entry leaves: a loop whose divisor `d` arrives as
    // a constant and comes back unchanged, with `i` passed twice, and a
    // check on the divisor that is a comparison of constants.
    // `acc = (acc + i) % d` for i in 0..n.
    let i64t = ValTy::I64;
    let mut b = ResidualBuilder::new("propagate", &[i64t], &[i64t]);
    let n = b.inputs()[0];
    let (head, hp) = b.new_label(&[i64t, i64t, i64t, i64t]);
    let (body, _) = b.new_label(&[]);
    let (divide, _) = b.new_label(&[]);
    let (by_zero, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let zero = b.konst(i64t, 0);
    let seven = b.konst(i64t, 7);
    b.jump(head, &[zero, zero, seven, zero]);
    b.switch_to(head);
    let [i, acc, d, i_again] = hp[..] else { unreachable!() };
    let more = b.cmp(CmpOp::Lt, i64t, i, n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let zero = b.konst(i64t, 0);
    let is_zero = b.cmp(CmpOp::Eq, i64t, d, zero);
    b.branch(is_zero, (by_zero, &[]), (divide, &[]));
    b.switch_to(by_zero);
    b.error_exit(jitgen_runtime::ops::ErrorKind::RemainderByZero);
    b.switch_to(divide);
    let sum = b.bin(BinOp::Add, i64t, Overflow::Wrap, acc, i_again);
    let acc = b.bin(BinOp::Rem, i64t, Overflow::Wrap, sum, d);
    let one = b.konst(i64t, 1);
    let next = b.bin(BinOp::Add, i64t, Overflow::Wrap, i, one);
    b.jump(head, &[next, acc, d, next]);
    b.switch_to(done);
    b.ret(&[hp[1]]);
    let f = b.finish();
    // One parameter each for `i` and `acc`; the remainder by the constant;
    // the check gone.
    expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = const.i64 7
            v3 = lt.i64 v1, v0
            branch v3, L7(v1, v1), L5(v1)
        L2(v4: i64, v5: i64):
            v6 = add.i64 v5, v4
            v7 = rem.i64 v6, v2
            v8 = const.i64 1
            v9 = add.i64 v4, v8
            v10 = lt.i64 v9, v0
            branch v10, L2(v9, v7), L5(v7)
        L5(v11: i64):
            return v11
        L7(v12: i64, v13: i64):
            v14 = const.i64 3
            v15 = sub.i64 v0, v14
            v16 = lt.i64 v15, v0
            v17 = lt.i64 v12, v15
            v18 = and.bool v16, v17
            branch v18, L8(v12, v13, v15), L2(v12, v13)
        L8(v19: i64, v20: i64, v21: i64):
            v22 = add.i64 v20, v19
            v23 = rem.i64 v22, v2
            v24 = const.i64 1
            v25 = add.i64 v19, v24
            v26 = add.i64 v23, v25
            v27 = rem.i64 v26, v2
            v28 = const.i64 2
            v29 = add.i64 v19, v28
            v30 = add.i64 v27, v29
            v31 = rem.i64 v30, v2
            v32 = const.i64 3
            v33 = add.i64 v19, v32
            v34 = add.i64 v31, v33
            v35 = rem.i64 v34, v2
            v36 = const.i64 4
            v37 = add.i64 v19, v36
            v38 = lt.i64 v37, v0
            v39 = lt.i64 v37, v21
            branch v39, L8(v37, v35, v21), L9()
        L9():
            branch v38, L2(v37, v35), L5(v35)
    "#]]
    .assert_eq(&listing(&f));
    let code: Residual<(i64,), i64> = compiled(&f);
    for n in [0i64, 1, 5, 1000] {
        assert_eq!(code.call((n,)).unwrap(), (0..n).fold(0, |acc, i| (acc + i) % 7), "n {n}");
    }
}

/// A frame whose state holds a list: a block, its scalar reds, and the list.
#[derive(Clone, Debug)]
struct ListBlk {
    block: u32,
    reds: Vec<RedBox>,
    list: jitgen_runtime::vlist::VList,
}

impl Frame for ListBlk {
    type Key = (u32, u64);
    fn key(&self) -> (u32, u64) {
        (self.block, self.list.key_word())
    }
    fn reds(&self) -> Vec<RedBox> {
        let mut r = self.reds.clone();
        self.list.reds_into(&mut r);
        r
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        let n = self.reds.len();
        self.reds.copy_from_slice(&r[..n]);
        let mut at = n;
        self.list.set_reds(r, &mut at);
    }
    fn lists_mut(&mut self, f: &mut dyn FnMut(jitgen_runtime::state::ListMut<'_>)) {
        use jitgen_runtime::heap::{vec_new_repeat, vec_set};
        f(jitgen_runtime::state::ListMut::Scalars(&mut self.list, ValTy::I64, vec_new_repeat::<i64>, vec_set::<i64>));
    }
}

/// `let mut v = vec![7, 8, 9]; for i in 0..n { grow? v.push(i) : v.pop() }`,
/// then a drain summing what it pops: returns `v.len() << 32` (0 when the
/// drain emptied it) plus the sum.
fn list_loop(grow: bool, known_n: Option<i64>) -> (Compilation<ListBlk>, usize) {
    use jitgen_runtime::heap::{vec_len, vec_pop, vec_push};
    use jitgen_runtime::vlist::VList;
    let mut c: Compilation<ListBlk> = Compilation::new("list", &[ValTy::I64], &[ValTy::I64], Limits::default());
    let n = known_n.map_or(c.inputs()[0], RedBox::i64);
    let list = VList::Virtual(vec![RedBox::i64(7), RedBox::i64(8), RedBox::i64(9)]);
    let mut next = Some(JitState::new(ListBlk { block: 1, reds: vec![RedBox::i64(0), n], list }));
    let mut steps = 0;
    while let Some(s) = next.take() {
        steps += 1;
        let f = s.top().block;
        let kind = if f == 3 { MergeKind::Join } else { MergeKind::LoopHead };
        let Some(mut s) = c.merge(s, kind) else {
            next = c.next_pending();
            continue;
        };
        let mut fr = s.top().clone();
        match f {
            // The loop.
            1 => {
                let [i, n] = fr.reds[..] else { unreachable!() };
                let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
                let mut after = fr.clone();
                after.block = 2;
                after.reds = vec![RedBox::i64(0)];
                if c.split(&more, &mut || JitState::new(after.clone())) {
                    let done = if grow { fr.list.push_virtual(&i) } else { fr.list.pop_virtual().is_some() };
                    match (done, grow, &fr.list) {
                        (true, ..) => {}
                        (false, true, VList::Real(p)) => {
                            c.b.red_call(vec_push::<i64>, "vec_push", &[*p, i], &[]);
                        }
                        (false, false, VList::Real(p)) => {
                            c.b.red_call(vec_pop::<i64>, "vec_pop", &[*p], &[ValTy::U32, ValTy::I64]);
                        }
                        _ => unreachable!("a full list is not tested"),
                    }
                    fr.reds[0] = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                    *s.top_mut() = fr;
                    next = Some(s);
                } else {
                    *s.top_mut() = after;
                    next = Some(s);
                }
            }
            // The drain: `while let Some(x) = v.pop() { sum += x }`.
            2 => {
                let sum = fr.reds[0];
                let popped = match &mut fr.list {
                    VList::Virtual(_) => fr.list.pop_virtual().expect("virtual"),
                    VList::Tail(..) => unreachable!("this interpreter's lists get no tail"),
                    VList::Real(p) => {
                        let r = c.b.red_call(vec_pop::<i64>, "vec_pop", &[*p], &[ValTy::U32, ValTy::I64]);
                        let some = c.b.red_cmp(CmpOp::Eq, &r[0], &RedBox::constant(ValTy::U32, 1));
                        let mut done = fr.clone();
                        done.block = 3;
                        done.reds = vec![sum, RedBox::i64(0)];
                        if c.split(&some, &mut || JitState::new(done.clone())) {
                            Some(r[1])
                        } else {
                            *s.top_mut() = done;
                            next = Some(s);
                            continue;
                        }
                    }
                };
                match popped {
                    Some(x) => fr.reds[0] = c.b.red_bin(BinOp::Add, Overflow::Wrap, &sum, &x),
                    None => {
                        fr.block = 3;
                        fr.reds = vec![sum, RedBox::i64(0)];
                    }
                }
                *s.top_mut() = fr;
                next = Some(s);
            }
            _ => {
                let len = match &fr.list {
                    VList::Virtual(items) => RedBox::u64(items.len() as u64),
                    VList::Tail(..) => unreachable!("this interpreter's lists get no tail"),
                    VList::Real(p) => c.b.red_call(vec_len::<i64>, "vec_len", &[*p], &[ValTy::U64])[0],
                };
                let len = c.b.red_cast(&len, ValTy::I64);
                let len = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &len, &RedBox::i64(1 << 32));
                let r = c.b.red_bin(BinOp::Add, Overflow::Wrap, &len, &fr.reds[0]);
                c.finish_return(&[r]);
                next = c.next_pending();
            }
        }
    }
    (c, steps)
}

/// A loop that grows a virtual list forces it at its second turn: one
/// version of the loop for the list real, not one per length (a Brainfuck
/// machine printing in a loop compiled 1341 times before).
#[test]
fn a_list_growing_in_a_loop_is_forced_at_its_second_turn() {
    let (c, steps) = list_loop(true, None);
    assert!(steps < 40, "{steps} steps");
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats.lists_forced_at_merges, 1, "{}", f.listing());
    for n in [0i64, 1, 2, 5, 200] {
        let mark = jitgen_runtime::heap::arena_mark();
        let got = f.call((n,)).unwrap();
        jitgen_runtime::heap::arena_release(mark);
        assert_eq!(got, 24 + (0..n.max(0)).sum::<i64>(), "n = {n}");
    }
}

/// A loop that shrinks a virtual list (a drain) keeps it virtual: each
/// length is a version, at most the list's length of them.
#[test]
fn a_list_shrinking_in_a_loop_stays_virtual() {
    let (c, _) = list_loop(false, None);
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats.lists_forced_at_merges, 0, "{}", f.listing());
    assert!(!f.listing().contains("call"), "{}", f.listing());
    for n in [0i64, 1, 2, 3, 4, 100] {
        let left = &[7i64, 8, 9][..3 - n.clamp(0, 3) as usize];
        assert_eq!(f.call((n,)).unwrap(), left.iter().sum::<i64>(), "n = {n}");
    }
}

/// A loop that grows a virtual list but branches on nothing known only at
/// run time (its trip count is known while compiling: copying a call's
/// arguments) is unrolled with the list virtual.
#[test]
fn a_list_growing_in_a_loop_known_while_compiling_stays_virtual() {
    let (c, _) = list_loop(true, Some(5));
    let (f, stats) = native::<(i64,), i64, _>(c);
    assert_eq!(stats.lists_forced_at_merges, 0, "{}", f.listing());
    assert!(!f.listing().contains("call"), "{}", f.listing());
    assert_eq!(f.call((0,)).unwrap(), 24 + 10);
}

/// A loop storing at `buf[sp]` then at `buf[sp + 1]`, through merge points
/// between which only `sp + 1` is a red (`sp` itself is not) or both are:
/// what it stored is known where it reads `buf[sp + 1 - 1]`, and the store
/// at `buf[sp + 1]` does not forget `buf[sp]`. The merge point keeps
/// `sp + 1` as one more than `sp` where both are reds.
#[test]
fn stored_elements_are_found_again_across_merge_points_through_related_indices() {
    let mut c: Compilation<Blk> =
        Compilation::new("elements", &[ValTy::Ptr, ValTy::U64], &[ValTy::I64, ValTy::U64], Limits::default());
    let (buf, sp) = (c.inputs()[0], c.inputs()[1]);
    const CLASS: u32 = 4;
    let mut s = st(0, vec![buf, sp]);
    let at = c.b.red_index_addr(&buf, &sp, 8);
    s.store_field(&mut c.b, &at, 0, &RedBox::i64(16), CLASS, 0);
    let sp1 = c.b.red_bin(BinOp::Add, Overflow::Wrap, &sp, &RedBox::u64(1));
    // Only `sp + 1` is a red here: the fact at `buf[sp]` goes on relative to it.
    s.frames[0] = Blk { block: 1, green: 0, reds: vec![buf, sp1] };
    let mut s = c.merge(s, MergeKind::Join).expect("a new version");
    let (buf, sp1) = (s.frames[0].reds[0], s.frames[0].reds[1]);
    let at1 = c.b.red_index_addr(&buf, &sp1, 8);
    s.store_field(&mut c.b, &at1, 0, &RedBox::i64(4), CLASS, 0);
    // Both `sp` (as `sp + 1 - 1`) and `sp + 1` are reds now.
    let sp = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &sp1, &RedBox::u64(1));
    s.frames[0] = Blk { block: 2, green: 0, reds: vec![buf, sp, sp1] };
    let mut s = c.merge(s, MergeKind::Join).expect("a new version");
    let (buf, sp, sp1) = (s.frames[0].reds[0], s.frames[0].reds[1], s.frames[0].reds[2]);
    assert_eq!(c.b.difference(&sp, &sp1), Some(1), "the label knows `sp + 1` as one more than `sp`");
    let back = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &sp1, &RedBox::u64(1));
    let at = c.b.red_index_addr(&buf, &back, 8);
    let low = s.load_field(&mut c.b, ValTy::I64, &at, 0, CLASS, 0);
    let at1 = c.b.red_index_addr(&buf, &sp1, 8);
    let high = s.load_field(&mut c.b, ValTy::I64, &at1, 0, CLASS, 0);
    assert_eq!((low, high), (RedBox::i64(16), RedBox::i64(4)));
    let sum = c.b.red_bin(BinOp::Add, Overflow::Wrap, &low, &high);
    c.finish_return(&[sum, sp]);
    let f = c.finish().expect("within budget");
    assert!(!listing(&f).contains("load"), "{}", listing(&f));
    // Run: both stores reach memory, `sp` comes back as it went in.
    let code = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    let mut mem = [0i64; 4];
    let out = code.call_words(&[mem.as_mut_ptr() as u64, 1]).unwrap();
    assert_eq!((out[0], out[1], mem), (20, 1, [0, 16, 4, 0]));
}

/// `sp + k == 0` folds on a path where `sp` was checked against a length
/// (it is below 2^63, so adding less than 2^62 cannot wrap), and not before.
#[test]
fn an_index_checked_on_the_path_plus_a_constant_is_not_zero() {
    use jitgen_runtime::ops::CmpOp;
    let mut c: Compilation<Blk> = Compilation::new("nonzero", &[ValTy::U64, ValTy::U64], &[], Limits::default());
    let (sp, len) = (c.inputs()[0], c.inputs()[1]);
    let mut s = st(0, vec![sp, len]);
    let sp2 = c.b.red_bin(BinOp::Add, Overflow::Wrap, &sp, &RedBox::u64(2));
    let zero = RedBox::u64(0);
    assert!(!s.red_cmp(&mut c.b, CmpOp::Eq, &sp2, &zero).is_const(), "nothing known of sp yet");
    s.bounds_check(&mut c.b, &sp, &len);
    assert_eq!(s.red_cmp(&mut c.b, CmpOp::Eq, &sp2, &zero), RedBox::bool(false));
    assert_eq!(s.red_cmp(&mut c.b, CmpOp::Ne, &sp2, &zero), RedBox::bool(true));
    // `sp - 1` may be zero, and `sp` itself too.
    let below = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &sp, &RedBox::u64(1));
    assert!(!s.red_cmp(&mut c.b, CmpOp::Eq, &below, &zero).is_const());
    assert!(!s.red_cmp(&mut c.b, CmpOp::Eq, &sp, &zero).is_const());
    // Another path, where `sp` was not checked, knows nothing.
    let fresh = st(0, vec![sp, len]);
    assert!(!fresh.red_cmp(&mut c.b, CmpOp::Eq, &sp2, &zero).is_const());
    c.finish_return(&[]);
}

/// A length taken back below a value and counted up to it again
/// (`red_length_plus`, as a frame's segment goes back into its stack's
/// tail) is that value, which keeps its own form: values made from either
/// are still known relative to each other (a procedure's argument index
/// beside its stack's hidden part).
#[test]
fn a_length_counted_back_up_to_its_root_keeps_the_relations() {
    let mut c: Compilation<Blk> = Compilation::new("lengths", &[ValTy::U64], &[ValTy::U64], Limits::default());
    let base = c.inputs()[0];
    let below = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &base, &RedBox::u64(1));
    assert_eq!(c.b.red_length_plus(&below, 1), base, "one above `base - 1` is `base`");
    let index = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &base, &RedBox::u64(1));
    assert_eq!(c.b.root_form(&below, None), (base, -1));
    assert_eq!(c.b.root_form(&base, None), (base, 0));
    assert_eq!(c.b.difference(&below, &index), Some(0));
    let above = c.b.red_length_plus(&below, 3);
    assert_eq!(c.b.difference(&index, &above), Some(3));
    assert_eq!(c.b.difference(&base, &above), Some(2));
}

/// An integer plus constants that come back to it is the integer itself
/// under wrapping arithmetic; a checked step is kept (it may overflow where
/// the constants meet only modulo the width), and still known as its root.
#[test]
fn constants_added_and_taken_back_give_the_value_back_where_nothing_can_overflow() {
    let mut c: Compilation<Blk> = Compilation::new("linear", &[ValTy::U8], &[ValTy::U8], Limits::default());
    let x = c.inputs()[0];
    let up = c.b.red_bin(BinOp::Add, Overflow::Wrap, &x, &RedBox::constant(ValTy::U8, 200));
    let ops = c.b.op_count();
    assert_eq!(c.b.red_bin(BinOp::Sub, Overflow::Wrap, &up, &RedBox::constant(ValTy::U8, 200)), x);
    assert_eq!(c.b.red_bin(BinOp::Add, Overflow::Wrap, &up, &RedBox::constant(ValTy::U8, 56)), x);
    assert_eq!(c.b.op_count(), ops, "nothing emitted");
    let back = c.b.red_bin(BinOp::Add, Overflow::Check, &up, &RedBox::constant(ValTy::U8, 56));
    assert_ne!(back, x, "a checked add overflows here for every x");
    assert_eq!(c.b.difference(&x, &back), Some(0));
    assert_eq!(c.b.difference(&x, &up), Some(200));
    c.finish_return(&[back]);
    let f = c.finish().expect("within budget");
    let code = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    assert!(code.call_words(&[3]).is_err(), "3 + 200 + 56 overflows a u8");
}

/// The wrapping difference of two integers computed from one root is a
/// constant (`len - (len - 2)`: how many elements a `truncate` to two
/// fewer drops), emitted as nothing; a checked one is kept (`x - (x + 1)`
/// overflows for every `x`), and so is a difference of unrelated values.
#[test]
fn a_wrapping_difference_of_one_root_plus_constants_is_a_constant() {
    let mut c: Compilation<Blk> =
        Compilation::new("difference", &[ValTy::U64, ValTy::U64], &[ValTy::U64], Limits::default());
    let (len, other) = (c.inputs()[0], c.inputs()[1]);
    let shorter = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &RedBox::u64(2));
    let ops = c.b.op_count();
    assert_eq!(c.b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &shorter), RedBox::u64(2));
    assert_eq!(c.b.red_bin(BinOp::Sub, Overflow::Wrap, &shorter, &len), RedBox::u64(2u64.wrapping_neg()));
    assert_eq!(c.b.op_count(), ops, "nothing emitted");
    let longer = c.b.red_bin(BinOp::Add, Overflow::Wrap, &len, &RedBox::u64(1));
    let checked = c.b.red_bin(BinOp::Sub, Overflow::Check, &len, &longer);
    assert!(!checked.is_const(), "a checked difference may overflow");
    let unrelated = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &other);
    assert!(!unrelated.is_const());
    c.finish_return(&[checked]);
    let f = c.finish().expect("within budget");
    let code = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    assert!(code.call_words(&[5, 0]).is_err(), "5 - 6 overflows a u64");
}
