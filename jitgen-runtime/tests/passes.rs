//! The passes of residual code, text in, text out: each test parses a
//! listing, runs one pass, and snapshots the listing after it
//! (`UPDATE_EXPECT=1` rewrites the snapshots). Each also compiles the
//! function before and after the pass and runs both on small inputs: a
//! pass that changes what the function computes fails here even if its
//! listing was accepted. And every listing the conformance suite prints
//! parses back to itself.

use expect_test::{expect, Expect};
use jitgen_runtime::ir::function::ResidualFunction;
use jitgen_runtime::ir::listing::{listing, parse, ListedCallback, ParseError};
use jitgen_runtime::ops::ValTy;
use jitgen_runtime::residual::{compile_host, ResidualError};

fn parsed(text: &str) -> ResidualFunction {
    parse(text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// What a function returns for `inputs`: its outputs, or the error it
/// leaves with.
fn outcome(f: &ResidualFunction, inputs: &[u64]) -> Result<Vec<u64>, String> {
    let code = compile_host(f).unwrap_or_else(|e| panic!("{e:?}\n{}", listing(f)));
    match code.call_words(inputs) {
        Ok(w) => Ok(w),
        Err(ResidualError::Exit { kind, .. }) => Err(format!("{kind:?}")),
        Err(e) => Err(format!("{e:?}")),
    }
}

/// Every combination of a few small inputs (loops in these tests count up
/// to an input, so each run is short).
fn small_inputs(n: usize) -> Vec<Vec<u64>> {
    let values = [0u64, 1, 2, 3, 7, 10];
    let mut out = vec![vec![]];
    for _ in 0..n {
        out = out.into_iter().flat_map(|v| values.iter().map(move |x| [v.clone(), vec![*x]].concat())).collect();
    }
    out
}

/// Parses `input`, runs `pass` on it, checks that the result is SSA and
/// computes what the input did on small inputs, and snapshots its listing.
fn check(pass: fn(&mut ResidualFunction), input: &str, expect: Expect) {
    let before = parsed(input);
    assert_eq!(listing(&before), listing(&parsed(&listing(&before))), "the listing parses back to itself");
    let mut after = before.clone();
    pass(&mut after);
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    for inputs in small_inputs(before.inputs.len()) {
        assert_eq!(outcome(&before, &inputs), outcome(&after, &inputs), "inputs {inputs:?}\n{}", listing(&after));
    }
    expect.assert_eq(&listing(&after));
}

#[test]
fn every_conformance_listing_parses_back_to_itself() {
    let text = include_str!("conformance.listings.txt");
    let mut seen = 0;
    for chunk in format!("\n{text}").split("\n# ").skip(1) {
        let (name, body) = chunk.split_once('\n').unwrap();
        let body = body.trim_end().to_string() + "\n";
        let calls = [
            ListedCallback { name: "add_one", func: noop, rets: &[ValTy::I64] },
            ListedCallback { name: "explode", func: noop, rets: &[] },
        ];
        let f = parse(&body, &calls).unwrap_or_else(|e| panic!("{name}: {e}\n{body}"));
        assert_eq!(listing(&f), body, "{name}");
        seen += 1;
    }
    assert!(seen >= 8, "only {seen} listings");
}

unsafe extern "C" fn noop(_: *mut u64) -> u64 {
    0
}

#[test]
fn malformed_listings_are_refused_at_their_line() {
    let err = |text: &str| parse(text, &[]).unwrap_err();
    assert_eq!(
        err("entry(v0: i64):\n    v1 = add.i64 v0, v9\n    return v1\n"),
        ParseError { line: 2, message: "v9 is never defined".into() }
    );
    assert_eq!(err("entry(v0: i65):\n    return v0\n").message, "unknown type `i65`");
    assert_eq!(err("entry():\n    jump L4()\n").message, "L4 is not a block of this listing");
    assert_eq!(err("entry(v0: i64):\n    v1 = frob.i64 v0\n    return v1\n").message, "unknown operation `frob`");
    assert_eq!(err("entry(v0: i64):\n    v1 = call f(v0)\n    return v1\n").message, "no callback named `f` given");
    assert_eq!(err("entry(v0: i64):\n    v0 = const.i64 1\n    return v0\n").message, "v0 is defined twice");
    assert_eq!(err("entry(v0: i64):\n    return v0\n    return v0\n").line, 3);
    assert_eq!(err("L1():\n    return\n").message, "no entry block");
    assert_eq!(err("entry():\n    v0 = const.i64 1\n").message, "block L0 has no terminator");
    assert_eq!(err("entry():\n    error Abort(x)\n").message, "unknown error `Abort(x)`");
    assert_eq!(
        err("reentry L0\nreentry L3\nentry():\n    return\n"),
        ParseError { line: 2, message: "reentry L3 is not a block".into() }
    );
    assert_eq!(err("reentry L\nentry():\n    return\n"), ParseError { line: 1, message: "reentry LABEL".into() });
}

#[test]
fn merging_jumps_over_forwarders_and_joins_single_predecessors() {
    check(
        ResidualFunction::merge_blocks,
        "
entry(v0: i64, v1: i64):
    v2 = const.i64 0
    jump L1(v2, v1)
L1(v3: i64, v4: i64):
    v5 = lt.i64 v3, v0
    branch v5, L2(v3, v4), L4(v4)
L2(v6: i64, v7: i64):
    v8 = const.i64 1
    v9 = add.i64 v6, v8
    v10 = add.i64 v7, v6
    jump L3(v10, v9)
L3(v11: i64, v12: i64):
    jump L1(v12, v11)
L4(v13: i64):
    jump L5(v13)
L5(v14: i64):
    return v14
L6(v15: i64):
    return v15
",
        expect![[r#"
            entry(v0: i64, v1: i64):
                v2 = const.i64 0
                jump L1(v2, v1)
            L1(v3: i64, v4: i64):
                v5 = lt.i64 v3, v0
                branch v5, L2(v3, v4), L5(v4)
            L2(v6: i64, v7: i64):
                v8 = const.i64 1
                v9 = add.i64 v6, v8
                v10 = add.i64 v7, v6
                jump L1(v9, v10)
            L5(v11: i64):
                return v11
        "#]],
    );
}

#[test]
fn propagation_replaces_single_valued_and_equal_parameters_and_folds_constants() {
    check(
        |f| {
            f.propagate();
        },
        "
entry(v0: i64):
    v1 = const.i64 0
    v2 = const.i64 3
    jump L1(v1, v2, v0, v0)
L1(v3: i64, v4: i64, v5: i64, v6: i64):
    v7 = lt.i64 v3, v5
    branch v7, L2(), L3()
L2():
    v8 = add.i64 v3, v4
    v9 = const.bool true
    branch v9, L1(v8, v4, v5, v6), L3()
L3():
    v10 = sub.i64 v6, v5
    v11 = mul.i64 v4, v2
    v12 = add.i64 v10, v11
    return v12, v3
",
        expect![[r#"
            entry(v0: i64):
                v1 = const.i64 0
                v2 = const.i64 3
                jump L1(v1)
            L1(v3: i64):
                v4 = lt.i64 v3, v0
                branch v4, L2(), L3()
            L2():
                v5 = add.i64 v3, v2
                v6 = const.bool true
                jump L1(v5)
            L3():
                v7 = sub.i64 v0, v0
                v8 = const.i64 9
                v9 = add.i64 v7, v8
                return v9, v3
        "#]],
    );
}

/// A `while` loop: its test heads the loop, and the back edge jumps to it.
const WHILE_LOOP: &str = "
entry(v0: i64):
    v1 = const.i64 0
    jump L1(v1, v1)
L1(v2: i64, v3: i64):
    v4 = lt.i64 v2, v0
    branch v4, L2(), L3()
L2():
    v5 = add.i64 v3, v2
    v6 = const.i64 1
    v7 = add.i64 v2, v6
    jump L1(v7, v5)
L3():
    return v3
";

#[test]
fn rotation_copies_a_loop_test_onto_the_back_edge() {
    check(
        |f| {
            f.close_loops_through_small_blocks();
        },
        WHILE_LOOP,
        expect![[r#"
            entry(v0: i64):
                v1 = const.i64 0
                jump L1(v1, v1)
            L1(v2: i64, v3: i64):
                v4 = lt.i64 v2, v0
                branch v4, L2(v2, v3), L3(v3)
            L2(v5: i64, v6: i64):
                v7 = add.i64 v6, v5
                v8 = const.i64 1
                v9 = add.i64 v5, v8
                v10 = lt.i64 v9, v0
                branch v10, L2(v9, v7), L3(v7)
            L3(v11: i64):
                return v11
        "#]],
    );
}

#[test]
fn unrolling_runs_a_counted_loop_four_turns_per_jump_behind_a_guard() {
    check(
        ResidualFunction::unroll_counted_loops,
        "
entry(v0: i64):
    v1 = const.i64 0
    jump L1(v1, v1)
L1(v2: i64, v3: i64):
    v4 = add.i64 v3, v2
    v5 = const.i64 1
    v6 = add.i64 v2, v5
    v7 = lt.i64 v6, v0
    branch v7, L1(v6, v4), L2()
L2():
    return v4
",
        expect![[r#"
            entry(v0: i64):
                v1 = const.i64 0
                jump L3(v1, v1)
            L1(v2: i64, v3: i64):
                v4 = add.i64 v3, v2
                v5 = const.i64 1
                v6 = add.i64 v2, v5
                v7 = lt.i64 v6, v0
                branch v7, L1(v6, v4), L2(v4)
            L2(v8: i64):
                return v8
            L3(v9: i64, v10: i64):
                v11 = const.i64 3
                v12 = sub.i64 v0, v11
                v13 = lt.i64 v12, v0
                v14 = lt.i64 v9, v12
                v15 = and.bool v13, v14
                branch v15, L4(v9, v10, v12), L1(v9, v10)
            L4(v16: i64, v17: i64, v18: i64):
                v19 = const.i64 1
                v20 = add.i64 v16, v19
                v21 = add.i64 v16, v20
                v22 = const.i64 2
                v23 = add.i64 v16, v22
                v24 = add.i64 v21, v23
                v25 = const.i64 3
                v26 = add.i64 v16, v25
                v27 = add.i64 v24, v26
                v28 = add.i64 v17, v27
                v29 = const.i64 4
                v30 = add.i64 v16, v29
                v31 = lt.i64 v30, v0
                v32 = lt.i64 v30, v18
                branch v32, L4(v30, v28, v18), L5()
            L5():
                branch v31, L1(v30, v28), L2(v28)
        "#]],
    );
}

#[test]
fn simplification_rotates_then_unrolls_a_while_loop() {
    check(
        ResidualFunction::simplify,
        WHILE_LOOP,
        expect![[r#"
        entry(v0: i64):
            v1 = const.i64 0
            v2 = lt.i64 v1, v0
            branch v2, L5(v1, v1), L3(v1)
        L2(v3: i64, v4: i64):
            v5 = add.i64 v4, v3
            v6 = const.i64 1
            v7 = add.i64 v3, v6
            v8 = lt.i64 v7, v0
            branch v8, L2(v7, v5), L3(v5)
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
            branch v33, L6(v31, v29, v19), L7()
        L7():
            branch v32, L2(v31, v29), L3(v29)
    "#]],
    );
}

#[test]
fn a_flexswitch_and_errors_survive_the_round_trip() {
    let text = "entry(v0: i64, v1: u8):
    v2 = const.u8 255
    v3 = add_checked.u8 v1, v2
    v4 = cast.u8.i64 v3
    v5 = const.i64 -7
    v6 = div_checked.i64 v0, v5
    v7 = neg_checked.i64 v6
    v8 = const.f64 -0.5
    v9 = const.bool false
    v10 = const.ptr 0x1000
    v11 = load.i64 v10+-8
    store.u8 v10+16, v3
    bounds_check v4, v0
    branch v9, L1(), L2()
L1():
    flexswitch v7 [live v0, v8] #0
L2():
    branch v9, L3(), L4()
L3():
    error Overflow(Mul)
L4():
    error Abort(3)
";
    let f = parsed(text);
    assert_eq!(listing(&f), text);
    assert_eq!(f.inputs, [ValTy::I64, ValTy::U8]);
    assert_eq!(f.switches.len(), 1);
}

#[test]
fn stores_written_over_before_anything_reads_are_dropped() {
    // A word of memory the function may write (its address in the listing).
    static CELL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let cell = format!("{:#x}", &CELL as *const _ as usize);
    // The first store is written over (only arithmetic between); the
    // second is read by the load; a checked add (it may leave) keeps the
    // third; the last is the block's.
    let input = "
entry(v0: i64):
    v1 = const.ptr CELL
    store.i64 v1+0, v0
    v2 = const.i64 1
    v3 = add.i64 v0, v2
    store.i64 v1+0, v3
    v4 = load.i64 v1+0
    store.i64 v1+0, v4
    v5 = add_checked.i64 v4, v2
    store.i64 v1+0, v5
    return v5
"
    .replace("CELL", &cell);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.drop_overwritten_stores());
    for x in [0u64, 1, 7, i64::MAX as u64] {
        assert_eq!(outcome(&before, &[x]), outcome(&after, &[x]), "input {x}");
    }
    let want = "
entry(v0: i64):
    v1 = const.ptr CELL
    v2 = const.i64 1
    v3 = add.i64 v0, v2
    store.i64 v1+0, v3
    v4 = load.i64 v1+0
    store.i64 v1+0, v4
    v5 = add_checked.i64 v4, v2
    store.i64 v1+0, v5
    return v5
"
    .replace("CELL", &cell);
    assert_eq!(listing(&after), want.trim_start());
}

#[test]
fn values_nothing_uses_are_dropped_with_the_loads_they_came_from() {
    // A word of memory the function reads (its address in the listing).
    static CELL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(7);
    let cell = format!("{:#x}", &CELL as *const _ as usize);
    // v2 and the chain v3, v4 are used by nothing; v5 is (by the branch);
    // a checked add and a division may leave, so they stay unused; v9 is
    // passed to a block that does not read it, which is a use.
    let input = "
entry(v0: i64):
    v1 = const.ptr CELL
    v2 = load.i64 v1+0
    v3 = load.i64 v1+0
    v4 = add.i64 v3, v0
    v5 = load.i64 v1+0
    v6 = lt.i64 v5, v0
    v7 = add_checked.i64 v0, v0
    v8 = div.i64 v0, v5
    v9 = mul.i64 v0, v0
    branch v6, L1(v9), L2()
L1(v10: i64):
    return v0
L2():
    return v5
"
    .replace("CELL", &cell);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.drop_dead_values());
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    for x in [0u64, 1, 8, i64::MAX as u64] {
        assert_eq!(outcome(&before, &[x]), outcome(&after, &[x]), "input {x}");
    }
    // (The listing numbers values anew.)
    let want = "
entry(v0: i64):
    v1 = const.ptr CELL
    v2 = load.i64 v1+0
    v3 = lt.i64 v2, v0
    v4 = add_checked.i64 v0, v0
    v5 = div.i64 v0, v2
    v6 = mul.i64 v0, v0
    branch v3, L1(v6), L2()
L1(v7: i64):
    return v0
L2():
    return v2
"
    .replace("CELL", &cell);
    assert_eq!(listing(&after), want.trim_start());
    assert!(!after.drop_dead_values(), "nothing more to drop");
}

#[test]
fn a_chain_of_dead_values_across_blocks_is_dropped_to_its_start() {
    // v5 uses v4, which uses v2 of the entry block, which uses v1: once
    // v5 goes, each goes in turn; v3, passed on, stays a use.
    let input = "
entry(v0: i64):
    v1 = mul.i64 v0, v0
    v2 = add.i64 v1, v0
    jump L1(v0)
L1(v3: i64):
    v4 = sub.i64 v2, v3
    v5 = mul.i64 v4, v4
    return v3
";
    let before = parsed(input);
    let mut after = before.clone();
    assert!(after.drop_dead_values());
    for x in [0u64, 3, i64::MAX as u64] {
        assert_eq!(outcome(&before, &[x]), outcome(&after, &[x]), "input {x}");
    }
    assert_eq!(listing(&after), "entry(v0: i64):\n    jump L1(v0)\nL1(v1: i64):\n    return v1\n");
    assert!(!after.drop_dead_values(), "nothing more to drop");
}

#[test]
fn a_direct_call_of_compiled_code_parses_back_and_runs_the_callee() {
    use jitgen_runtime::run::direct::DirectEntry;
    use jitgen_runtime::run::stats::Stats;
    // Callees: twice their input, and a division by their input.
    let twice = compile_host(&parsed("entry(v0: i64):\n    v1 = add.i64 v0, v0\n    return v1\n")).unwrap();
    let divide =
        compile_host(&parsed("entry(v0: i64):\n    v1 = const.i64 84\n    v2 = div.i64 v1, v0\n    return v2\n"))
            .unwrap();
    let stats = Stats::new();
    for (callee, cases) in [(twice, vec![(21, Ok(42)), (-4, Ok(-8))]), (divide, vec![(2, Ok(42)), (0, Err(()))])] {
        let entry = Box::new(DirectEntry::default());
        let code = entry.code(&stats, || Ok(callee)).unwrap().entry_point() as usize as u64;
        let addr = &*entry as *const DirectEntry as usize;
        let text = format!("entry(v0: i64, v1: ptr):\n    v2 = call_code.i64 v1(v0) entry {addr:#x}\n    return v2\n");
        let caller = parsed(&text);
        assert_eq!(listing(&caller), text, "the listing parses back to itself");
        let caller = compile_host(&caller).unwrap();
        for (x, want) in cases {
            match (caller.call_words(&[x as u64, code]), want) {
                (Ok(w), Ok(v)) => assert_eq!(w, vec![v as u64]),
                // The callee's error exit, raised by the failure hook as
                // the panic the interpreter would have raised.
                (Err(ResidualError::Panicked(p)), Err(())) => {
                    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
                    assert!(msg.contains("divide by zero"), "{msg}");
                }
                (got, want) => panic!("{x}: {got:?}, want {want:?}"),
            }
        }
    }
}

/// Fusion: a root's flexswitch gets a test per case before it, jumping to
/// a copy of the piece the case continues in; the copy's own switch is
/// fused the same way (here to a piece already copied), and each switch
/// stays for the values without a case.
#[test]
fn fusion_copies_the_pieces_that_cases_continue_in() {
    let root = parsed(
        "entry(v0: i64):
    v1 = const.i64 1
    v2 = add.i64 v0, v1
    flexswitch v0 [live v2] #0
",
    );
    // Piece 0 multiplies by ten; piece 1 switches on its input, whose case
    // 3 continues in piece 0.
    let times_ten = parsed(
        "entry(v0: i64):
    v1 = const.i64 10
    v2 = mul.i64 v0, v1
    return v2
",
    );
    let again = parsed(
        "entry(v0: i64):
    flexswitch v0 [live v0] #0
",
    );
    let cases = |func: usize, switch: u32| match (func, switch) {
        (0, 0) => vec![(1, 0), (2, 1)],
        (2, 0) => vec![(3, 0)],
        _ => vec![],
    };
    let mut root = root;
    root.outputs = vec![ValTy::I64];
    let mut times_ten = times_ten;
    times_ten.outputs = vec![ValTy::I64];
    let mut again = again;
    again.outputs = vec![ValTy::I64];
    let (fused, copied) = root.fused(&[&times_ten, &again], &cases, 1000, &|_| true);
    fused.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&fused)));
    assert_eq!(listing(&fused), listing(&parsed(&listing(&fused))), "the listing parses back to itself");
    // 1 -> piece 0 on 2; 2 -> piece 1 on 3 -> piece 0 on 3.
    assert_eq!(outcome(&fused, &[1]), Ok(vec![20]));
    assert_eq!(outcome(&fused, &[2]), Ok(vec![30]));
    // Each copy is a reentry, in the order copied: a case of a piece left
    // out enters the copy there with the piece's inputs.
    assert_eq!(copied, vec![0, 1]);
    let code = compile_host(&fused).expect("compiles");
    assert_eq!(code.call_reentry(0, &[4]).map(|r| r.map_err(|e| format!("{e:?}"))), Some(Ok(vec![40])));
    assert_eq!(code.call_reentry(1, &[3]).map(|r| r.map_err(|e| format!("{e:?}"))), Some(Ok(vec![30])));
    assert!(code.call_reentry(2, &[3]).is_none());
    // The entry still runs the root after a reentry was taken.
    assert_eq!(code.call_words(&[1]).map_err(|e| format!("{e:?}")), Ok(vec![20]));
    expect![[r#"
        reentry L1
        reentry L2
        entry(v0: i64):
            v1 = const.i64 1
            v2 = add.i64 v0, v1
            v3 = const.i64 1
            v4 = eq.i64 v0, v3
            branch v4, L1(v2), L4()
        L1(v5: i64):
            v6 = const.i64 10
            v7 = mul.i64 v5, v6
            return v7
        L2(v8: i64):
            v9 = const.i64 3
            v10 = eq.i64 v8, v9
            branch v10, L1(v8), L5()
        L3():
            flexswitch v0 [live v2] #0
        L4():
            v11 = const.i64 2
            v12 = eq.i64 v0, v11
            branch v12, L2(v2), L3()
        L5():
            flexswitch v8 [live v8] #1
    "#]]
    .assert_eq(&listing(&fused));
    // Past the budget of copied operations (here one), a case stays the
    // switch's: piece 0 (two operations) is not copied, piece 1 is.
    let (small, _) = root.fused(&[&times_ten, &again], &cases, 1, &|_| true);
    assert!(!listing(&small).contains("mul") && listing(&small).contains("flexswitch v5 [live v5] #1"));
}

/// Fusion copies only the pieces its caller calls hot: a case whose piece
/// is cold stays the switch's, and a hot piece that only a cold one reaches
/// is copied as a reentry of its own (the cold piece's case enters it there).
#[test]
fn fusion_leaves_cold_pieces_to_their_switches() {
    let mut root = parsed(
        "entry(v0: i64):
    flexswitch v0 [live v0] #0
",
    );
    let mut times_ten = parsed(
        "entry(v0: i64):
    v1 = const.i64 10
    v2 = mul.i64 v0, v1
    return v2
",
    );
    let mut again = parsed(
        "entry(v0: i64):
    flexswitch v0 [live v0] #0
",
    );
    for f in [&mut root, &mut times_ten, &mut again] {
        f.outputs = vec![ValTy::I64];
    }
    // The root's case 2 continues in piece 1, whose case 3 continues in
    // piece 0; only piece 0 is hot.
    let cases = |func: usize, switch: u32| match (func, switch) {
        (0, 0) => vec![(2, 1)],
        (2, 0) => vec![(3, 0)],
        _ => vec![],
    };
    let (fused, copied) = root.fused(&[&times_ten, &again], &cases, 1000, &|k| k == 0);
    fused.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&fused)));
    assert_eq!(copied, vec![0]);
    let code = compile_host(&fused).expect("compiles");
    assert_eq!(code.call_reentry(0, &[7]).map(|r| r.map_err(|e| format!("{e:?}"))), Some(Ok(vec![70])));
    expect![[r#"
        reentry L1
        entry(v0: i64):
            flexswitch v0 [live v0] #0
        L1(v1: i64):
            v2 = const.i64 10
            v3 = mul.i64 v1, v2
            return v3
    "#]]
    .assert_eq(&listing(&fused));
}

/// The word a register cell test keeps in a register (at `+8`; the word at
/// `+0` is not a cell).
static WORDS: [std::sync::atomic::AtomicU64; 2] = [const { std::sync::atomic::AtomicU64::new(0) }; 2];

/// A callback that gives the register cell's word as it finds it in memory,
/// then adds 100 to it there.
unsafe extern "C" fn seen(buf: *mut u64) -> u64 {
    let w = WORDS[1].fetch_add(100, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: room for one result.
    unsafe { *buf = w };
    0
}

/// A register cell lives in a register while the function runs: a loop
/// adds to it without memory seeing it, a call finds it stored and what
/// the call stored is loaded after it, and each exit (a return, an error)
/// stores what the function added last. Its listing names it on a `register` line.
#[test]
fn a_register_cell_is_stored_before_calls_and_exits_and_loaded_after_calls() {
    use std::sync::atomic::Ordering::Relaxed;
    let address = WORDS.as_ptr() as u64;
    let text = format!(
        "register {address:#x}+8
entry(v0: u64):
    v1 = const.ptr {address:#x}
    v2 = const.u64 0
    jump L1(v2)
L1(v3: u64):
    v4 = lt.u64 v3, v0
    branch v4, L2(), L3()
L2():
    v5 = load.u64 v1+8
    v6 = const.u64 1
    v7 = add.u64 v5, v6
    store.u64 v1+8, v7
    v8 = add.u64 v3, v6
    jump L1(v8)
L3():
    v9 = call seen()
    v10 = load.u64 v1+8
    v11 = const.u64 1
    v12 = add.u64 v10, v11
    store.u64 v1+8, v12
    v13 = const.u64 7
    v14 = eq.u64 v0, v13
    branch v14, L4(), L5()
L4():
    error DivideByZero
L5():
    v15 = load.u64 v1+0
    return v9, v10, v15
"
    );
    let calls = [ListedCallback { name: "seen", func: seen, rets: &[ValTy::U64] }];
    let mut f = parse(&text, &calls).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(listing(&f), text, "the listing parses back to itself");
    f.outputs = vec![ValTy::U64; 3];
    let code = compile_host(&f).unwrap_or_else(|e| panic!("{e:?}"));
    for (n, start) in [(0u64, 5u64), (3, 40), (7, 1000), (10, 2)] {
        WORDS[0].store(9, Relaxed);
        WORDS[1].store(start, Relaxed);
        let got = code.call_words(&[n]);
        if n == 7 {
            assert!(matches!(got, Err(ResidualError::Exit { .. })), "{got:?}");
        } else {
            // The call saw the loop's sum; the load after it, what the call
            // stored; the word beside the cell is an ordinary load.
            assert_eq!(got.unwrap_or_else(|e| panic!("{e:?}")), vec![start + n, start + n + 100, 9]);
        }
        assert_eq!(WORDS[1].load(Relaxed), start + n + 101, "stored at the exit");
    }
}

/// A Brainfuck tape of 8 cells, in memory the functions below work on, and
/// the lock the tests that use it hold (tests run in parallel).
static TAPE: [std::sync::atomic::AtomicU8; 8] = [const { std::sync::atomic::AtomicU8::new(0) }; 8];
static TAPE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What `f` returns for `inputs` from a tape holding `cells`, and the tape after.
fn outcome_on_tape(f: &ResidualFunction, inputs: &[u64], cells: [u8; 8]) -> (Result<Vec<u64>, String>, Vec<u8>) {
    use std::sync::atomic::Ordering::Relaxed;
    for (c, x) in TAPE.iter().zip(cells) {
        c.store(x, Relaxed);
    }
    let out = outcome(f, inputs);
    (out, TAPE.iter().map(|c| c.load(Relaxed)).collect())
}

#[test]
fn known_memory_is_forwarded_and_implied_checks_dropped() {
    let _tape = TAPE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tape = format!("{:#x}", TAPE.as_ptr() as usize);
    // `+++>++<-.` on the tape (its length an input) as an interpreter records
    // it: each instruction checks its constant index, loads the cell at
    // `tape + index`, and stores it back; `.` returns the cell. Every load
    // but the first of each cell reads what the store before it wrote; the
    // checks of index 0 after the first are implied by it, those of index
    // 1 by each other.
    let input = "
entry(v0: u64):
    v1 = const.ptr TAPE
    v2 = const.u64 0
    v3 = const.ptr 0x0
    v4 = const.u8 1
    bounds_check v2, v0
    v5 = add.ptr v1, v3
    v6 = load.u8 v5+0
    v7 = add.u8 v6, v4
    store.u8 v5+0, v7
    bounds_check v2, v0
    v8 = add.ptr v1, v3
    v9 = load.u8 v8+0
    v10 = add.u8 v9, v4
    store.u8 v8+0, v10
    bounds_check v2, v0
    v11 = load.u8 v1+0
    v12 = add.u8 v11, v4
    store.u8 v1+0, v12
    v13 = const.u64 1
    v14 = const.ptr 0x1
    bounds_check v13, v0
    v15 = add.ptr v1, v14
    v16 = load.u8 v15+0
    v17 = add.u8 v16, v4
    store.u8 v15+0, v17
    bounds_check v13, v0
    v18 = load.u8 v1+1
    v19 = add.u8 v18, v4
    store.u8 v1+1, v19
    bounds_check v2, v0
    v20 = add.ptr v1, v3
    v21 = load.u8 v20+0
    v22 = sub.u8 v21, v4
    store.u8 v20+0, v22
    bounds_check v2, v0
    v23 = load.u8 v1+0
    v24 = cast.u8.u64 v23
    return v24
"
    .replace("TAPE", &tape);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.forward_memory());
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    for len in [0u64, 1, 2, 8] {
        for cells in [[0u8; 8], [5, 254, 3, 0, 0, 0, 0, 9]] {
            assert_eq!(
                outcome_on_tape(&before, &[len], cells),
                outcome_on_tape(&after, &[len], cells),
                "length {len}, tape {cells:?}\n{}",
                listing(&after)
            );
        }
    }
    // The whole pipeline then drops the stores written over and the values
    // nothing uses: one load per cell, a store kept before each check that
    // may leave.
    after.simplify();
    for len in [0u64, 1, 2, 8] {
        let cells = [5, 254, 3, 0, 0, 0, 0, 9];
        assert_eq!(outcome_on_tape(&before, &[len], cells), outcome_on_tape(&after, &[len], cells), "length {len}");
    }
    let want = expect![[r#"
        entry(v0: u64):
            v1 = const.ptr TAPE
            v2 = const.u64 0
            bounds_check v2, v0
            v3 = load.u8 v1+0
            v4 = const.u8 2
            v5 = add.u8 v3, v4
            v6 = const.u8 3
            v7 = add.u8 v3, v6
            store.u8 v1+0, v7
            v8 = const.u64 1
            bounds_check v8, v0
            v9 = load.u8 v1+1
            v10 = add.u8 v9, v4
            store.u8 v1+1, v10
            store.u8 v1+0, v5
            v11 = cast.u8.u64 v5
            return v11
    "#]];
    want.assert_eq(&listing(&after).replace(&tape, "TAPE"));
}

#[test]
fn memory_a_store_may_have_written_is_loaded_again() {
    let _tape = TAPE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tape = format!("{:#x}", TAPE.as_ptr() as usize);
    // A store through another base (which may be the same address) forgets
    // what the block knew; a `u16` stored over two cells is not the value
    // of either; a check of a larger index is not implied by one of a
    // smaller. Only the load of cell 3, which the store to cells 1 and 2
    // does not overlap, reads a known value.
    let input = "
entry(v0: u64, v1: u64):
    v2 = const.ptr TAPE
    v3 = const.u64 0
    v4 = const.u64 2
    bounds_check v3, v0
    v5 = load.u8 v2+0
    v6 = load.u8 v2+3
    v7 = const.u16 300
    store.u16 v2+1, v7
    v8 = load.u8 v2+3
    v9 = cast.u64.ptr v1
    store.u8 v9+0, v5
    v10 = load.u8 v2+0
    v11 = load.u8 v2+1
    bounds_check v4, v0
    v12 = add.u8 v10, v11
    v13 = add.u8 v12, v8
    v14 = add.u8 v13, v6
    v15 = cast.u8.u64 v14
    return v15
"
    .replace("TAPE", &tape);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.forward_memory());
    let cell = tape.clone();
    for len in [0u64, 1, 3] {
        // The second input: an address in the tape (cell 0), or another one.
        let other = &TAPE[7] as *const _ as u64;
        for at in [TAPE.as_ptr() as u64, other] {
            let cells = [5, 254, 3, 0, 0, 0, 0, 9];
            assert_eq!(outcome_on_tape(&before, &[len, at], cells), outcome_on_tape(&after, &[len, at], cells));
        }
    }
    let want = expect![[r#"
        entry(v0: u64, v1: u64):
            v2 = const.ptr TAPE
            v3 = const.u64 0
            v4 = const.u64 2
            bounds_check v3, v0
            v5 = load.u8 v2+0
            v6 = load.u8 v2+3
            v7 = const.u16 300
            store.u16 v2+1, v7
            v8 = cast.u64.ptr v1
            store.u8 v8+0, v5
            v9 = load.u8 v2+0
            v10 = load.u8 v2+1
            bounds_check v4, v0
            v11 = add.u8 v9, v10
            v12 = add.u8 v11, v6
            v13 = add.u8 v12, v6
            v14 = cast.u8.u64 v13
            return v14
    "#]];
    want.assert_eq(&listing(&after).replace(&cell, "TAPE"));
}

#[test]
fn a_brainfuck_straight_line_checks_and_loads_each_cell_once() {
    let _tape = TAPE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // `+++>++<-.` as the generating extension of a Brainfuck interpreter on a
    // `&mut [u8]` tape records it (`tape[ptr]` checked, loaded and stored by
    // each instruction, every address `tape + index`; the inputs are the
    // tape's address and length), then the whole pipeline.
    let input = "
entry(v0: ptr, v1: u64):
    v2 = const.u64 0
    bounds_check v2, v1
    v3 = const.ptr 0x0
    v4 = add.ptr v0, v3
    v5 = load.u8 v4+0
    v6 = const.u8 1
    v7 = add.u8 v5, v6
    v8 = const.u64 0
    bounds_check v8, v1
    v9 = const.ptr 0x0
    v10 = add.ptr v0, v9
    store.u8 v10+0, v7
    v11 = const.u64 0
    bounds_check v11, v1
    v12 = const.ptr 0x0
    v13 = add.ptr v0, v12
    v14 = load.u8 v13+0
    v15 = const.u8 1
    v16 = add.u8 v14, v15
    v17 = const.u64 0
    bounds_check v17, v1
    v18 = const.ptr 0x0
    v19 = add.ptr v0, v18
    store.u8 v19+0, v16
    v20 = const.u64 0
    bounds_check v20, v1
    v21 = const.ptr 0x0
    v22 = add.ptr v0, v21
    v23 = load.u8 v22+0
    v24 = const.u8 1
    v25 = add.u8 v23, v24
    v26 = const.u64 0
    bounds_check v26, v1
    v27 = const.ptr 0x0
    v28 = add.ptr v0, v27
    store.u8 v28+0, v25
    v29 = const.u64 1
    bounds_check v29, v1
    v30 = const.ptr 0x1
    v31 = add.ptr v0, v30
    v32 = load.u8 v31+0
    v33 = const.u8 1
    v34 = add.u8 v32, v33
    v35 = const.u64 1
    bounds_check v35, v1
    v36 = const.ptr 0x1
    v37 = add.ptr v0, v36
    store.u8 v37+0, v34
    v38 = const.u64 1
    bounds_check v38, v1
    v39 = const.ptr 0x1
    v40 = add.ptr v0, v39
    v41 = load.u8 v40+0
    v42 = const.u8 1
    v43 = add.u8 v41, v42
    v44 = const.u64 1
    bounds_check v44, v1
    v45 = const.ptr 0x1
    v46 = add.ptr v0, v45
    store.u8 v46+0, v43
    v47 = const.u64 0
    bounds_check v47, v1
    v48 = const.ptr 0x0
    v49 = add.ptr v0, v48
    v50 = load.u8 v49+0
    v51 = const.u8 1
    v52 = sub.u8 v50, v51
    v53 = const.u64 0
    bounds_check v53, v1
    v54 = const.ptr 0x0
    v55 = add.ptr v0, v54
    store.u8 v55+0, v52
    v56 = const.u64 0
    bounds_check v56, v1
    v57 = const.ptr 0x0
    v58 = add.ptr v0, v57
    v59 = load.u8 v58+0
    v60 = cast.u8.u64 v59
    return v60
";
    let before = parsed(input);
    let mut after = before.clone();
    after.simplify();
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    for len in [0u64, 1, 2, 8] {
        for cells in [[0u8; 8], [5, 254, 3, 0, 0, 0, 0, 9]] {
            let at = TAPE.as_ptr() as u64;
            assert_eq!(outcome_on_tape(&before, &[at, len], cells), outcome_on_tape(&after, &[at, len], cells));
        }
    }
    let want = expect![[r#"
        entry(v0: ptr, v1: u64):
            v2 = const.u64 0
            bounds_check v2, v1
            v3 = load.u8 v0+0
            v4 = const.u8 2
            v5 = add.u8 v3, v4
            v6 = const.u8 3
            v7 = add.u8 v3, v6
            store.u8 v0+0, v7
            v8 = const.u64 1
            bounds_check v8, v1
            v9 = load.u8 v0+1
            v10 = add.u8 v9, v4
            store.u8 v0+1, v10
            store.u8 v0+0, v5
            v11 = cast.u8.u64 v5
            return v11
    "#]];
    want.assert_eq(&listing(&after));
    assert!(listing(&after).lines().count() <= 20, "{}", listing(&after));
}

#[test]
fn an_address_computed_again_names_the_same_place() {
    let _tape = TAPE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tape = format!("{:#x}", TAPE.as_ptr() as usize);
    // `tape[i] += 1; tape[i]` with a run-time `i`: the address made again is
    // the first one, so the second load reads what the store wrote.
    let input = "
entry(v0: u64):
    v1 = const.ptr TAPE
    v2 = const.u64 8
    bounds_check v0, v2
    v3 = cast.u64.ptr v0
    v4 = add.ptr v1, v3
    v5 = load.u8 v4+0
    v6 = const.u8 1
    v7 = add.u8 v5, v6
    store.u8 v4+0, v7
    bounds_check v0, v2
    v8 = cast.u64.ptr v0
    v9 = add.ptr v1, v8
    v10 = load.u8 v9+0
    v11 = cast.u8.u64 v10
    return v11
"
    .replace("TAPE", &tape);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.forward_memory());
    for i in [0u64, 3, 7, 8, 10] {
        let cells = [5, 254, 3, 0, 0, 0, 0, 255];
        assert_eq!(outcome_on_tape(&before, &[i], cells), outcome_on_tape(&after, &[i], cells), "index {i}");
    }
    let want = expect![[r#"
        entry(v0: u64):
            v1 = const.ptr TAPE
            v2 = const.u64 8
            bounds_check v0, v2
            v3 = cast.u64.ptr v0
            v4 = add.ptr v1, v3
            v5 = load.u8 v4+0
            v6 = const.u8 1
            v7 = add.u8 v5, v6
            store.u8 v4+0, v7
            v8 = cast.u8.u64 v7
            return v8
    "#]];
    want.assert_eq(&listing(&after).replace(&tape, "TAPE"));
}

#[test]
fn a_one_block_loop_carries_its_cell_in_a_register() {
    let _tape = TAPE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let tape = format!("{:#x}", TAPE.as_ptr() as usize);
    // Brainfuck's `[-]` once its `[` passed, on the cell at an input index
    // of a tape whose length is the other input: each turn checks the
    // index, loads the cell, stores it less one, and goes on while that is
    // not zero. The index does not change around the loop.
    let input = "
entry(v0: u64, v1: u64):
    v2 = const.ptr TAPE
    jump L1(v1)
L1(v3: u64):
    bounds_check v3, v0
    v4 = cast.u64.ptr v3
    v5 = add.ptr v2, v4
    v6 = load.u8 v5+0
    v7 = const.u8 1
    v8 = sub.u8 v6, v7
    store.u8 v5+0, v8
    v9 = const.u8 0
    v10 = ne.u8 v8, v9
    branch v10, L1(v3), L2()
L2():
    return v3
"
    .replace("TAPE", &tape);
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.keep_loop_places());
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    let runs = |f: &ResidualFunction| {
        let mut out = vec![];
        for (len, at) in [(8u64, 0u64), (8, 3), (8, 7), (2, 1), (2, 5)] {
            for cells in [[1u8, 2, 3, 0, 255, 0, 9, 7], [0; 8]] {
                out.push(outcome_on_tape(f, &[len, at], cells));
            }
        }
        out
    };
    assert_eq!(runs(&before), runs(&after), "{}", listing(&after));
    // The first turn stays as it was and goes on in the copy, which carries
    // the cell (no load, no store, no check) and stores it where it leaves.
    let want = expect![[r#"
        entry(v0: u64, v1: u64):
            v2 = const.ptr TAPE
            jump L1(v1)
        L1(v3: u64):
            bounds_check v3, v0
            v4 = cast.u64.ptr v3
            v5 = add.ptr v2, v4
            v6 = load.u8 v5+0
            v7 = const.u8 1
            v8 = sub.u8 v6, v7
            store.u8 v5+0, v8
            v9 = const.u8 0
            v10 = ne.u8 v8, v9
            branch v10, L3(v8), L2()
        L2():
            return v3
        L3(v11: u8):
            v12 = sub.u8 v11, v7
            v13 = ne.u8 v12, v9
            branch v13, L3(v12), L4()
        L4():
            store.u8 v5+0, v12
            jump L2()
    "#]];
    want.assert_eq(&listing(&after).replace(&tape, "TAPE"));
    // Then the copy is a counted loop: four turns per jump.
    after.simplify();
    assert_eq!(runs(&before), runs(&after), "{}", listing(&after));
    assert!(listing(&after).contains("gt.u8"), "{}", listing(&after));
}

#[test]
fn a_loop_over_two_places_or_that_may_leave_in_mid_turn_keeps_its_memory() {
    // `[->+<]`: the two cells may be one address as far as the pass knows
    // (two bases), so neither is carried.
    let input = "
entry(v0: ptr, v1: ptr):
    jump L1()
L1():
    v2 = load.u8 v0+0
    v3 = const.u8 1
    v4 = sub.u8 v2, v3
    store.u8 v0+0, v4
    v5 = load.u8 v1+0
    v6 = add.u8 v5, v3
    store.u8 v1+0, v6
    v7 = const.u8 0
    v8 = ne.u8 v4, v7
    branch v8, L1(), L2()
L2():
    return
";
    let mut f = parsed(input);
    assert!(!f.keep_loop_places(), "{}", listing(&f));
    // A division by what the cell holds may leave in mid-turn, with the
    // cell's store sunk to the loop's exits: left as it is too.
    let input = "
entry(v0: ptr, v1: u8):
    jump L1()
L1():
    v2 = load.u8 v0+0
    v3 = const.u8 1
    v4 = sub.u8 v2, v3
    store.u8 v0+0, v4
    v5 = div.u8 v1, v4
    v6 = const.u8 0
    v7 = ne.u8 v5, v6
    branch v7, L1(), L2()
L2():
    return
";
    let mut f = parsed(input);
    assert!(!f.keep_loop_places(), "{}", listing(&f));
}

/// A `Vec`'s header (capacity, buffer, length) in memory the test below
/// works on, and the lock it holds.
static HEADER: [std::sync::atomic::AtomicU64; 3] = [const { std::sync::atomic::AtomicU64::new(0) }; 3];
static HEADER_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn memory_a_pop_tested_nonempty_steps_by_one() {
    use std::sync::atomic::Ordering::Relaxed;
    let _header = HEADER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // Two `pop`s in a row, as a `Vec` of scalars compiles them: the new
    // length `len - cast(len != 0)` is stored before the interpreter tests
    // the flag. Past each test the length is `len - 1`, which does not wait
    // for the comparison and the cast; where the test failed it is `len`.
    // A step by a flag the branch did not decide stays.
    let input = "
entry(v1: u64):
    v0 = const.ptr HEADER
    v2 = load.u64 v0+16
    v3 = const.u64 0
    v4 = ne.u64 v2, v3
    v5 = cast.bool.u64 v4
    v6 = sub.u64 v2, v5
    store.u64 v0+16, v6
    v7 = cast.bool.u32 v4
    v8 = const.u32 1
    v9 = eq.u32 v7, v8
    v20 = ne.u64 v1, v3
    v21 = cast.bool.u64 v20
    v22 = add.u64 v2, v21
    branch v9, L1(), L2()
L1():
    v10 = load.u64 v0+16
    v11 = ne.u64 v10, v3
    v12 = cast.bool.u64 v11
    v13 = sub.u64 v10, v12
    store.u64 v0+16, v13
    v14 = cast.bool.u32 v11
    v15 = eq.u32 v14, v8
    branch v15, L3(), L4()
L2():
    v16 = load.u64 v0+16
    return v16, v22
L3():
    v17 = load.u64 v0+16
    return v17, v22
L4():
    v18 = load.u64 v0+16
    return v18, v13
"
    .replace("HEADER", &format!("{:#x}", HEADER.as_ptr() as usize));
    let before = parsed(&input);
    let mut after = before.clone();
    assert!(after.forward_memory());
    after.check_dominance().unwrap_or_else(|e| panic!("{e}\n{}", listing(&after)));
    let run = |f: &ResidualFunction, len: u64, x: u64| {
        HEADER[2].store(len, Relaxed);
        (outcome(f, &[x]), HEADER[2].load(Relaxed))
    };
    for (len, x) in [(0, 0), (1, 1), (2, 0), (3, 7)] {
        assert_eq!(run(&before, len, x), run(&after, len, x), "length {len}, x {x}\n{}", listing(&after));
    }
    let header = format!("{:#x}", HEADER.as_ptr() as usize);
    expect![[r#"
        entry(v0: u64):
            v1 = const.ptr HEADER
            v2 = load.u64 v1+16
            v3 = const.u64 0
            v4 = ne.u64 v2, v3
            v5 = cast.bool.u64 v4
            v6 = sub.u64 v2, v5
            store.u64 v1+16, v6
            v7 = cast.bool.u32 v4
            v8 = const.u32 1
            v9 = eq.u32 v7, v8
            v10 = ne.u64 v0, v3
            v11 = cast.bool.u64 v10
            v12 = add.u64 v2, v11
            branch v9, L1(), L2()
        L1():
            v13 = const.u64 1
            v14 = sub.u64 v2, v13
            v15 = ne.u64 v14, v3
            v16 = cast.bool.u64 v15
            v17 = sub.u64 v14, v16
            store.u64 v1+16, v17
            v18 = cast.bool.u32 v15
            v19 = eq.u32 v18, v8
            branch v19, L3(), L4()
        L2():
            return v2, v12
        L3():
            v20 = sub.u64 v14, v13
            v21 = const.u64 18446744073709551614
            v22 = add.u64 v2, v21
            return v22, v12
        L4():
            return v14, v14
    "#]]
    .assert_eq(&listing(&after).replace(&header, "HEADER"));
}

#[test]
fn memory_bounds_checks_a_branch_implies_go() {
    // `get(i)` tests `i < len` and then indexes with a check of its own; a
    // `pop` tests `len == 0` and then reads `len - 1`; a check of `len - 2`
    // that passed implies one of `len - 1`. A check the branches do not
    // imply stays: `i` against another length, `len - 1` where `len` may be
    // 0, and a signed comparison says nothing.
    check(
        |f| {
            f.forward_memory();
        },
        "
entry(v0: u64, v1: u64, v2: u64):
    v3 = lt.u64 v1, v0
    branch v3, L1(), L2()
L1():
    bounds_check v1, v0
    bounds_check v1, v2
    v4 = const.u64 2
    v5 = sub.u64 v0, v4
    bounds_check v5, v0
    v6 = const.u64 1
    v7 = sub.u64 v0, v6
    bounds_check v7, v0
    return v7
L2():
    v8 = const.u64 0
    v9 = eq.u64 v2, v8
    branch v9, L3(), L4()
L3():
    v10 = const.u64 1
    v11 = sub.u64 v0, v10
    bounds_check v11, v0
    return v11
L4():
    v12 = const.u64 1
    v13 = sub.u64 v2, v12
    bounds_check v13, v2
    v14 = cast.u64.i64 v2
    v15 = cast.u64.i64 v12
    v16 = gt.i64 v14, v15
    branch v16, L5(), L6()
L5():
    v17 = const.u64 2
    v18 = sub.u64 v2, v17
    bounds_check v18, v2
    return v18
L6():
    return v13
",
        expect![[r#"
            entry(v0: u64, v1: u64, v2: u64):
                v3 = lt.u64 v1, v0
                branch v3, L1(), L2()
            L1():
                bounds_check v1, v2
                v4 = const.u64 2
                v5 = sub.u64 v0, v4
                bounds_check v5, v0
                v6 = const.u64 1
                v7 = sub.u64 v0, v6
                return v7
            L2():
                v8 = const.u64 0
                v9 = eq.u64 v2, v8
                branch v9, L3(), L4()
            L3():
                v10 = const.u64 1
                v11 = sub.u64 v0, v10
                bounds_check v11, v0
                return v11
            L4():
                v12 = const.u64 1
                v13 = sub.u64 v2, v12
                v14 = cast.u64.i64 v2
                v15 = cast.u64.i64 v12
                v16 = gt.i64 v14, v15
                branch v16, L5(), L6()
            L5():
                v17 = const.u64 2
                v18 = sub.u64 v2, v17
                bounds_check v18, v2
                return v18
            L6():
                return v13
        "#]],
    );
}

/// A function's loop heads are the targets of its back edges, and code
/// compiled as a flexswitch's case counts the turns of its loops there
/// (`ResidualFunction::turns`, which fusion weighs pieces by); code
/// compiled at `speed` (a root, a fused copy) counts nothing.
#[test]
fn a_case_counts_the_turns_of_its_loops_at_their_heads() {
    use jitgen_runtime::ir::function::Label;
    let f = parsed(WHILE_LOOP);
    // L1, the second block, the only one with two parameters.
    let l1 = f.live_blocks().find(|(_, b)| b.params.len() == 2).map(|(l, _)| l);
    assert_eq!(f.loop_heads(), vec![l1.expect("L1")]);
    assert_eq!(parsed("entry(v0: i64):\n    return v0\n").loop_heads(), Vec::<Label>::new());
    let case = jitgen_runtime::residual::compile_native(&f).expect("compiles");
    let code = jitgen_runtime::residual::ResidualFn::with_code(f.clone(), case);
    assert_eq!(code.call_words(&[5]).expect("runs"), vec![10]);
    // The head is reached once from the entry and once per back edge.
    assert_eq!(f.turns.as_ref().map(|t| t.get()), Some(6));
    let root = parsed(WHILE_LOOP);
    assert_eq!(compile_host(&root).expect("compiles").call_words(&[5]).expect("runs"), vec![10]);
    assert_eq!(root.turns.as_ref().map(|t| t.get()), Some(0));
}

/// A turn counter for `dropping_turn_checks`: far from running out.
static TURNS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1 << 40);

fn turns_at() -> u64 {
    &TURNS as *const _ as u64
}

fn drop_the_turn_checks(f: &mut ResidualFunction) {
    assert!(f.drop_turn_checks(turns_at()));
}

/// Fused code that calls no Rust loses its turn checks: the counter's
/// load, decrement and store go, and the test of what is left becomes a
/// jump to the side that goes on; the rest of the loop stays.
#[test]
fn dropping_turn_checks_leaves_the_loop() {
    let input = format!(
        "
entry(v0: i64):
    v1 = const.i64 0
    jump L1(v1)
L1(v2: i64):
    v3 = const.ptr {:#x}
    v4 = load.i64 v3+0
    v5 = const.i64 1
    v6 = sub.i64 v4, v5
    store.i64 v3+0, v6
    v7 = const.i64 0
    v8 = gt.i64 v6, v7
    branch v8, L2(), L3()
L2():
    v9 = add.i64 v2, v5
    v10 = lt.i64 v9, v0
    branch v10, L1(v9), L4(v9)
L3():
    error Abort(0)
L4(v11: i64):
    return v11
",
        turns_at()
    );
    let parsed_input = parsed(&input);
    assert!(!parsed_input.calls_rust());
    check(
        drop_the_turn_checks,
        &input,
        expect![[r#"
            entry(v0: i64):
                v1 = const.i64 0
                jump L1(v1)
            L1(v2: i64):
                v3 = const.i64 1
                v4 = const.i64 0
                jump L2()
            L2():
                v5 = add.i64 v2, v3
                v6 = lt.i64 v5, v0
                branch v6, L1(v5), L4(v5)
            L3():
                error Abort(0)
            L4(v7: i64):
                return v7
        "#]],
    );
}
