//! The binding-time analysis, rule by rule.

use expect_test::{expect, Expect};
use hint_annotator::{annotate_source, CallKind, Color, ColoredGraphs};

fn annotate(src: &str) -> ColoredGraphs {
    annotate_source(src).unwrap_or_else(|e| panic!("annotation failed: {e}"))
}

/// Snapshot of one function's colored text.
fn check(src: &str, func: &str, expect: Expect) {
    let g = annotate(src);
    expect.assert_eq(&g.function(func).unwrap_or_else(|| panic!("no function {func}")).to_text());
}

/// The error message and position of an annotation that must fail.
fn error_of(src: &str) -> String {
    let e = annotate_source(src).err().expect("annotation must fail");
    e.into_iter()
        .map(|e| {
            let p = e.span().start();
            format!("{}:{}: {}", p.line, p.column, e)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn color(src: &str, func: &str, var: &str) -> Option<Color> {
    annotate(src).function(func).unwrap().color_of(var)
}

#[test]
fn everything_red_by_default_constants_green() {
    let src = "fn f(x: i64) -> i64 { let k = 3; let y = x + k; y }";
    assert_eq!(color(src, "f", "x"), Some(Color::Red));
    assert_eq!(color(src, "f", "k"), Some(Color::Green));
    assert_eq!(color(src, "f", "y"), Some(Color::Red));
}

#[test]
fn foldable_operations_green_when_all_inputs_are() {
    let src = "fn f(x: i64) -> i64 { let a = 3; let b = a * 7 + 1; let c = b < 10; let d = b as u8; let e = x + b + c as i64 + d as i64; e }";
    for v in ["b", "c", "d"] {
        assert_eq!(color(src, "f", v), Some(Color::Green), "{v}");
    }
    assert_eq!(color(src, "f", "e"), Some(Color::Red));
}

#[test]
fn non_foldable_operations_are_red() {
    // An allocation, a read from mutable memory, a pop: red although every input is green.
    let src = "struct P { v: i64 }
        fn f() -> i64 { let p = P { v: 1 }; let r = p.v; let mut s: Vec<i64> = Vec::new(); s.push(2); let t = s.pop().unwrap(); r + t }";
    for v in ["p", "r", "s", "t"] {
        assert_eq!(color(src, "f", v), Some(Color::Red), "{v}");
    }
}

#[test]
fn a_value_struct_of_green_fields_is_green() {
    // `Copy`, of words, never written: a decoded instruction. Its fields
    // read green where it is, so its operand is a known jump target.
    let src = "#[derive(Clone, Copy)] enum Op { Add, Jmp }
        #[derive(Clone, Copy)] struct Instr { op: Op, a: u8 }
        fn f(w: u32) -> usize { let k = hint!(w, promote); let ins = Instr { op: Op::Jmp, a: k as u8 }; let t = ins.a as usize; t }";
    assert_eq!(color(src, "f", "ins"), Some(Color::Green));
    assert_eq!(color(src, "f", "t"), Some(Color::Green));
    annotate(&src.replace("t }", "hint!(t, concrete) }"));
    // A struct some code writes is a place in memory, red as before.
    let written = format!("{src} fn g(i: &mut Instr) {{ i.a = 0; }}");
    assert_eq!(color(&written, "f", "ins"), Some(Color::Red));
    assert_eq!(color(&written, "f", "t"), Some(Color::Red));
    // Written whole through a portal's own `&mut` parameter (a split
    // `self.last = ins`), the caller's memory, it stays a value.
    let kept = src.replace(
        "fn f(w: u32) -> usize { let k",
        "fn f(w: u32, last: &mut Instr) -> usize { hint!(global_merge_point); let k",
    );
    let kept = kept.replace("let t = ins.a", "*last = ins; let t = ins.a");
    assert_eq!(color(&kept, "f", "t"), Some(Color::Green));
    // So is one that is not `Copy`.
    let moved = src.replace("#[derive(Clone, Copy)] struct", "struct");
    assert_eq!(color(&moved, "f", "ins"), Some(Color::Red));
}

/// The first input argument of a block other than the start: a join.
fn first_join(f: &hint_annotator::ColoredGraph) -> hint_annotator::flowgraph::Var {
    f.graph
        .blocks()
        .filter(|b| *b != f.graph.start)
        .flat_map(|b| f.graph.graph[b].inputargs.clone())
        .next()
        .expect("a join")
}

#[test]
fn join_of_greens_stays_red_unless_needed() {
    // The join rule: `x` merges two green constants but nothing needs it green.
    let src = "fn f(c: bool) -> i64 { let x = if c { 1 } else { 2 }; x }";
    let g = annotate(src);
    let f = g.function("f").unwrap();
    let join = first_join(f);
    assert_eq!(f.color(join), Color::Red);
    // With a concrete hint on it, the join (and what flows in) is green.
    let src = "fn f(c: bool) -> i64 { let x = if c { 1 } else { 2 }; hint!(x, concrete) }";
    let g = annotate(src);
    let f = g.function("f").unwrap();
    let join = first_join(f);
    assert_eq!(f.color(join), Color::Green);
    assert_eq!(f.color_of("c"), Some(Color::Red), "a red split may lead to a green join");
}

#[test]
fn concrete_is_global_and_backward() {
    // The hint on `z` makes `y`, `x` (the parameter) and the loop counter green.
    let src = "fn f(x: i64, n: i64) -> i64 {
        let mut i = 0;
        let mut acc = n;
        while i < 3 { acc = acc + i; i += 1; }
        let y = x * 2;
        let z = hint!(y + i, concrete);
        acc + z
    }";
    for v in ["x", "y", "i", "z"] {
        assert_eq!(color(src, "f", v), Some(Color::Green), "{v}");
    }
    assert_eq!(color(src, "f", "acc"), Some(Color::Red));
    assert_eq!(color(src, "f", "n"), Some(Color::Red));
}

#[test]
fn concrete_unsatisfiable_names_the_red_value() {
    let src = "fn f(code: Vec<u8>, pc: usize) -> u8 {
    let op = hint!(code[pc], concrete);
    op
}";
    expect!["2:13: `hint!(.., concrete)` cannot be satisfied: `code[pc]` is red: it is a read from mutable memory (reads are green only through a shared reference `&T` or a `hint!(.., deepfreeze)`d value); `hint!(.., promote)` instead makes it a constant in compiled code by a switch on its run-time value (for data that changes, such as an instruction pointer kept in a frame), and `hint!(.., deepfreeze)` on the data it is read from makes the read green (for data that never changes)"]
    .assert_eq(&error_of(src));
    let src = "fn f(a: i64) -> i64 {
    let b = hint!(a, variable);
    let c = b + 1;
    hint!(c, concrete)
}";
    expect![[r#"4:4: `hint!(.., concrete)` cannot be satisfied: `c` (`b + 1`) depends on `b` (`hint!(a, variable)`), which is red: it is forced red by `hint!(.., variable)`; use `hint!(.., promote)` on a value it depends on"#]]
    .assert_eq(&error_of(src));
}

#[test]
fn concrete_promotes_a_scalar_it_depends_on_where_it_is_read() {
    // `pc` is read from mutable memory: it is promoted where it is read,
    // and the element read through the shared slice is then green. The
    // element itself read from mutable memory is still an error (see
    // `concrete_unsatisfiable_names_the_red_value`).
    let src = "struct M { pc: usize }
fn f(code: &[u8], m: &mut M) -> u8 {
    let pc = m.pc;
    let op = hint!(code[pc], concrete);
    m.pc = pc + 1;
    op
}";
    check(
        src,
        "f",
        expect![[r#"
            fn f -> u8
            block0(code_0: &[u8] green, m_1: &mut M red):
                R pc_2: usize = getfield.pc(m_1)
                R pc_7: usize = hint_promote(pc_2)  [promotion: result green]
                G v3: u8 = getitem(code_0, pc_7)
                G op_4: u8 = hint_concrete(v3)
                G v5: usize = add(pc_7, 1_usize)
                R setfield.pc(m_1, v5)
                return op_4
        "#]],
    );
    // A value forced red stays an error.
    let src = "fn f(code: &[u8], a: usize) -> u8 {
    let b = hint!(a, variable);
    hint!(code[b], concrete)
}";
    expect![[r#"3:4: `hint!(.., concrete)` cannot be satisfied: `code[b]` depends on `b` (`hint!(a, variable)`), which is red: it is forced red by `hint!(.., variable)`; use `hint!(.., promote)` on a value it depends on"#]]
    .assert_eq(&error_of(src));
}

#[test]
fn promote_is_local() {
    let src = "fn f(a: i64) -> i64 { let b = a / 10; let c = hint!(b, promote); let d = c + 5; d + a }";
    assert_eq!(color(src, "f", "a"), Some(Color::Red));
    assert_eq!(color(src, "f", "b"), Some(Color::Red), "promote does not make its operand green");
    assert_eq!(color(src, "f", "c"), Some(Color::Green));
    assert_eq!(color(src, "f", "d"), Some(Color::Green));
    check(
        src,
        "f",
        expect![[r#"
            fn f -> i64
            block0(a_0: i64 red):
                R b_1: i64 = div(a_0, 10_i64)
                R c_2: i64 = hint_promote(b_1)  [promotion: result green]
                G d_3: i64 = add(c_2, 5_i64)
                R v4: i64 = add(d_3, a_0)
                return v4
        "#]],
    );
}

#[test]
fn variable_forces_red() {
    let src = "fn f() -> i64 { let a = 1; let b = hint!(a, variable); b + 1 }";
    assert_eq!(color(src, "f", "a"), Some(Color::Green));
    assert_eq!(color(src, "f", "b"), Some(Color::Red));
}

#[test]
fn deepfreeze_green_versus_mutable_red() {
    let src = "struct Prog { code: Vec<u8>, consts: Vec<i64> }
        fn frozen(p: &mut Prog, pc: usize) -> i64 {
            let q = hint!(p, deepfreeze);
            let op = hint!(q.code[pc], concrete);
            let k = q.consts[op as usize];
            k
        }
        fn thawed(p: &mut Prog, pc: usize) -> i64 {
            let op = p.code[pc];
            let k = p.consts[op as usize];
            k
        }";
    let g = annotate(src);
    let f = g.function("frozen").unwrap();
    for v in ["p", "q", "op", "pc", "k"] {
        assert_eq!(f.color_of(v), Some(Color::Green), "{v}");
    }
    let f = g.function("thawed").unwrap();
    for v in ["op", "k"] {
        assert_eq!(f.color_of(v), Some(Color::Red), "{v}");
    }
    // The same concrete hint without deepfreeze is rejected, naming the read.
    let src = "struct Prog { code: Vec<u8> }
fn f(p: &mut Prog, pc: usize) -> u8 {
    hint!(p.code[pc], concrete)
}";
    expect!["3:4: `hint!(.., concrete)` cannot be satisfied: `p.code[pc]` is red: it is a read from mutable memory (reads are green only through a shared reference `&T` or a `hint!(.., deepfreeze)`d value); `hint!(.., promote)` instead makes it a constant in compiled code by a switch on its run-time value (for data that changes, such as an instruction pointer kept in a frame), and `hint!(.., deepfreeze)` on the data it is read from makes the read green (for data that never changes)"]
    .assert_eq(&error_of(src));
}

#[test]
fn shared_references_are_frozen() {
    // Rust forbids mutation behind `&T` while it lives: reads through it fold.
    let src = "struct Code { ops: Vec<u8> }
        fn f(c: &Code, pc: usize) -> u8 { let op = hint!(c.ops[pc], concrete); op }";
    assert_eq!(color(src, "f", "op"), Some(Color::Green));
    assert_eq!(color(src, "f", "c"), Some(Color::Green));
}

#[test]
fn call_precision_z_equals_f_x_y() {
    // Two call sites of f: one with green arguments, one with red. The
    // dependencies stay local: the red site does not make the green one red.
    let src = "fn f(x: i64, y: i64) -> i64 { x * 10 + y }
        fn g(s: &[i64], pc: usize, r: i64) -> i64 {
            let z1 = f(s[pc], 1);
            let z2 = f(r, 2);
            let k = hint!(z1, concrete);
            k + z2
        }";
    let g = annotate(src);
    let f = g.function("g").unwrap();
    assert_eq!(f.color_of("z1"), Some(Color::Green));
    assert_eq!(f.color_of("z2"), Some(Color::Red));
    assert_eq!(f.color_of("s"), Some(Color::Green));
    assert_eq!(f.color_of("pc"), Some(Color::Green));
    assert_eq!(f.color_of("r"), Some(Color::Red));
    // f's own parameters stay red: not every call site passes green.
    assert_eq!(g.function("f").unwrap().color_of("x"), Some(Color::Red));
    // Green result, no effects: a green call (runs at compile time); the other is red.
    let kinds: Vec<CallKind> = f.ops().into_iter().filter_map(|(_, op, _)| f.call_kind(op.result)).collect();
    assert_eq!(kinds, [CallKind::Green, CallKind::Red]);
}

#[test]
fn parameter_green_when_every_call_site_passes_green() {
    let src = "fn callee(n: i64, m: i64) -> i64 { let t = n * 2; t + m }
        fn a(r: i64) -> i64 { callee(3, r) }
        fn b(r: i64) -> i64 { callee(4, r + 1) }";
    let g = annotate(src);
    let f = g.function("callee").unwrap();
    assert_eq!(f.color_of("n"), Some(Color::Green));
    assert_eq!(f.color_of("t"), Some(Color::Green));
    assert_eq!(f.color_of("m"), Some(Color::Red));
}

#[test]
fn concrete_in_callee_requires_green_arguments_at_call_sites() {
    let src = "fn step(code: &[u8], pc: usize) -> u8 { hint!(code[pc], concrete) }
        fn run(code: &[u8], start: usize, acc: i64) -> i64 {
            let mut pc = start;
            let op = step(code, pc);
            acc + op as i64
        }";
    let g = annotate(src);
    let run = g.function("run").unwrap();
    assert_eq!(run.color_of("code"), Some(Color::Green));
    assert_eq!(run.color_of("start"), Some(Color::Green));
    assert_eq!(run.color_of("acc"), Some(Color::Red));
    // A caller that cannot pass a green value is told where and why.
    let src = "fn step(code: &[u8], pc: usize) -> u8 { hint!(code[pc], concrete) }
fn run(code: &mut Vec<u8>, acc: i64) -> i64 {
    let pc = code.pop().unwrap() as usize;
    let op = step(code, pc);
    acc + op as i64
}";
    expect!["4:13: `step`, which needs its parameter 2 green (a `concrete` hint inside it), cannot be satisfied: `pc` (`code.pop().unwrap() as usize`) depends on `code.pop()`, which is red: it is the result of an operation with side effects; use `hint!(.., promote)` on a value it depends on"].assert_eq(&error_of(src));
}

#[test]
fn forcing_a_call_result_uses_a_specialized_copy() {
    // decode's result is a join (red by default); the concrete hint at one call
    // site forces it green in a copy of decode, leaving the other site red.
    let src = "fn decode(code: &[u8], pc: usize) -> u8 { if code[pc] > 100 { 0 } else { code[pc] } }
        fn f(code: &[u8], pc: usize, data: &[u8], i: usize) -> u8 {
            let op = hint!(decode(code, pc), concrete);
            let d = decode(data, i);
            op + d
        }";
    let g = annotate(src);
    let f = g.function("f").unwrap();
    assert_eq!(f.color_of("op"), Some(Color::Green));
    assert_eq!(f.color_of("d"), Some(Color::Red));
    assert_eq!(f.color_of("data"), Some(Color::Red));
    let copies: Vec<bool> = f
        .ops()
        .into_iter()
        .filter(|(_, op, _)| f.call_kind(op.result).is_some())
        .map(|(_, op, _)| f.calls_green_result_copy(op.result))
        .collect();
    assert_eq!(copies, [true, false]);
    // The normal decode returns red; its copy returns green.
    let normal = g.function("decode").unwrap();
    let copy = g.function("decode@green_result").unwrap();
    let ret = |c: &hint_annotator::ColoredGraph| {
        c.graph.blocks().find_map(|b| match &c.graph.graph[b].exit {
            hint_annotator::flowgraph::Exit::Return(hint_annotator::flowgraph::Value::Var(v)) => Some(c.color(*v)),
            _ => None,
        })
    };
    assert_eq!(ret(normal), Some(Color::Red));
    assert_eq!(ret(copy), Some(Color::Green));
    assert_eq!(copy.specializes.as_deref(), Some("decode"));
}

#[test]
fn call_kinds_green_gray_yellow_red() {
    let src = "struct S { log: Vec<i64> }
        fn pure_add(a: i64, b: i64) -> i64 { a + b }
        fn record(s: &mut S, v: i64) { s.log.push(v); }
        fn record_and_next(s: &mut S, pc: usize) -> usize { s.log.push(1); pc + 1 }
        fn f(s: &mut S, pc: usize, r: i64) -> i64 {
            let a = pure_add(1, 2);
            record(s, r);
            let next = record_and_next(s, pc);
            let n2 = hint!(next, concrete);
            let b = pure_add(r, 1);
            a + b + n2 as i64
        }";
    let g = annotate(src);
    let f = g.function("f").unwrap();
    let kinds: Vec<CallKind> = f.ops().into_iter().filter_map(|(_, op, _)| f.call_kind(op.result)).collect();
    assert_eq!(kinds, [CallKind::Green, CallKind::Gray, CallKind::Yellow, CallKind::Red]);
}

#[test]
fn position_key_is_the_green_variables_live_at_the_merge_point() {
    let src = "fn run(code: &[u8], n: i64, unused: i64) -> i64 {
        let mut pc = 0;
        let mut acc = n;
        let limit = code.len();
        while pc < limit {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            acc += op as i64;
            pc += 1;
        }
        acc
    }";
    let g = annotate(src);
    let f = g.function("run").unwrap();
    assert!(f.is_portal());
    // `unused` is dead there, `acc` and `n` red.
    assert_eq!(f.position_key().unwrap(), ["code", "limit", "pc"]);
}
