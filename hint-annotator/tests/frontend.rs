//! The front end: the supported subset of Rust as flow graphs, and an error
//! at its span for everything else.

use expect_test::{expect, Expect};
use hint_annotator::annotate_source;

/// Snapshot of every function's colored flow graph, or of the errors.
fn check(src: &str, expect: Expect) {
    let text = match annotate_source(src) {
        Ok(g) => g.to_text(),
        Err(e) => e
            .into_iter()
            .map(|e| {
                let p = e.span().start();
                format!("error {}:{}: {}\n", p.line, p.column, e)
            })
            .collect(),
    };
    expect.assert_eq(&text);
}

#[test]
fn float_constants_of_paths_are_constants() {
    check(
        "fn f(x: f64) -> f64 { if x > f64::MAX { f64::NAN } else { x * std::f64::consts::PI } }",
        expect![[r#"
            fn f -> f64
            block0(x_0: f64 red):
                R v3: bool = gt(x_0, 1.7976931348623157e308_f64)
                if v3 then block1(NaN_f64) else block2()
            block1(v2: f64 red):
                return v2
            block2():
                R v4: f64 = mul(x_0, 3.141592653589793_f64)
                goto block1(v4)
        "#]],
    );
}

#[test]
fn let_assign_compound_and_arithmetic() {
    check(
        "fn f(a: i32, b: u8, x: f64) -> i64 {
            let mut c: i64 = a as i64;
            c += 1;
            c = c * 2 - (b as i64) / 3 % 5;
            let d = (c << 2) ^ (c >> 1) & 7 | 1;
            let e = -x * 2.0;
            let g = !(d > 3) == (e <= 1.5);
            if g { d } else { c.wrapping_add(d).max(0) }
        }",
        expect![[r#"
            fn f -> i64
            block0(a_0: i32 red, b_1: u8 red, x_2: f64 red):
                R c_3: i64 = cast(a_0)
                R c_4: i64 = add(c_3, 1_i64)
                R v5: i64 = mul(c_4, 2_i64)
                R v6: i64 = cast(b_1)
                R v7: i64 = div(v6, 3_i64)
                R v8: i64 = rem(v7, 5_i64)
                R c_9: i64 = sub(v5, v8)
                R v10: i64 = shl(c_9, 2_i32)
                R v11: i64 = shr(c_9, 1_i32)
                R v12: i64 = and(v11, 7_i64)
                R v13: i64 = xor(v10, v12)
                R d_14: i64 = or(v13, 1_i64)
                R v15: f64 = neg(x_2)
                R e_16: f64 = mul(v15, 2.0_f64)
                R v17: bool = gt(d_14, 3_i64)
                R v18: bool = not(v17)
                R v19: bool = le(e_16, 1.5_f64)
                R g_20: bool = eq(v18, v19)
                if g_20 then block1(d_14) else block2()
            block1(v28: i64 red):
                return v28
            block2():
                R v29: i64 = wrapping_add(c_9, d_14)
                R v30: i64 = max(v29, 0_i64)
                goto block1(v30)
        "#]],
    );
}

#[test]
fn short_circuit_operators_are_control_flow() {
    check(
        "fn f(a: i64, b: i64) -> bool { a > 0 && b > 0 || a == b }",
        expect![[r#"
            fn f -> bool
            block0(a_0: i64 red, b_1: i64 red):
                R v2: bool = gt(a_0, 0_i64)
                if v2 then block2() else block1(false)
            block1(v5: bool red):
                if v5 then block3(true) else block4()
            block2():
                R v6: bool = gt(b_1, 0_i64)
                goto block1(v6)
            block3(v9: bool red):
                return v9
            block4():
                R v10: bool = eq(a_0, b_1)
                goto block3(v10)
        "#]],
    );
}

#[test]
fn loops_labels_break_continue() {
    check(
        "fn f(n: u32) -> u32 {
            let mut total = 0;
            let mut i = 0;
            'outer: while i < n {
                i += 1;
                let mut j = 0;
                loop {
                    j += 1;
                    if j > i { continue 'outer; }
                    if j == 7 { break 'outer; }
                    if j % 2 == 0 { continue; }
                    total += j;
                }
            }
            let k = loop { break total * 2; };
            for q in 0..3 { total += q; }
            k + total
        }",
        expect![[r#"
            fn f -> u32
            block0(n_0: u32 red):
                G total_1: u32 = same_as(0_u32)
                G i_2: u32 = same_as(0_u32)
                goto block1(total_1, i_2)
            block1(total_4: u32 red, i_5: u32 red):
                R v9: bool = lt(i_5, n_0)
                if v9 then block3() else block2(total_4)
            block2(total_7: u32 red):
                goto block8()
            block3():
                R i_10: u32 = add(i_5, 1_u32)
                G j_11: u32 = same_as(0_u32)
                goto block4(total_4, j_11)
            block4(total_13: u32 red, j_15: u32 red):
                R j_21: u32 = add(j_15, 1_u32)
                R v27: bool = gt(j_21, i_10)
                if v27 then block1(total_13, i_10) else block5()
            block5():
                R v35: bool = eq(j_21, 7_u32)
                if v35 then block2(total_13) else block6()
            block6():
                R v43: u32 = rem(j_21, 2_u32)
                R v44: bool = eq(v43, 0_u32)
                if v44 then block4(total_13, j_21) else block7()
            block7():
                R total_47: u32 = add(total_13, j_21)
                goto block4(total_47, j_21)
            block8():
                R v57: u32 = mul(total_7, 2_u32)
                goto block9()
            block9():
                G __for4_60: u32 = same_as(0_u32)
                goto block10(total_7, __for4_60)
            block10(total_62: u32 red, __for4_65: u32 red):
                R v70: bool = lt(__for4_65, 3_u32)
                if v70 then block12() else block11()
            block11():
                R v73: u32 = add(v57, total_62)
                return v73
            block12():
                R v71: u32 = add(__for4_65, 1_u32)
                R total_72: u32 = add(total_62, __for4_65)
                goto block10(total_72, v71)
        "#]],
    );
}

#[test]
fn match_on_integers_consts_ranges_and_wildcards() {
    check(
        "const HALT: u8 = 0;
        fn f(op: u8, x: i64) -> i64 {
            match op {
                HALT => 0,
                1 | 2 => x + 1,
                3..=9 => x * 2,
                n if n > 200 => -x,
                _ => x,
            }
        }",
        expect![[r#"
            fn f -> i64
            block0(op_0: u8 red, x_1: i64 red):
                R v7: bool = eq(op_0, 0_u8)
                if v7 then block1(0_i64) else block2()
            block1(v4: i64 red):
                return v4
            block2():
                R v14: bool = eq(op_0, 1_u8)
                if v14 then block4() else block5()
            block3():
                R v19: bool = ge(op_0, 3_u8)
                if v19 then block7() else block6()
            block4():
                R v16: i64 = add(x_1, 1_i64)
                goto block1(v16)
            block5():
                R v15: bool = eq(op_0, 2_u8)
                if v15 then block4() else block3()
            block6():
                R v24: bool = gt(op_0, 200_u8)
                if v24 then block9() else block1(x_1)
            block7():
                R v20: bool = le(op_0, 9_u8)
                if v20 then block8() else block6()
            block8():
                R v21: i64 = mul(x_1, 2_i64)
                goto block1(v21)
            block9():
                R v25: i64 = neg(x_1)
                goto block1(v25)
        "#]],
    );
}

#[test]
fn enums_structs_methods_and_question_mark() {
    check(
        "#[derive(Clone, Copy)]
        enum Op { Push(i64), Add, Jump { target: usize } }
        enum Err { Underflow }
        struct Frame { stack: Vec<i64>, pc: usize }
        impl Frame {
            fn pop(&mut self) -> Result<i64, Err> {
                match self.stack.pop() { Some(v) => Ok(v), None => Err(Err::Underflow) }
            }
            fn step(&mut self, op: Op) -> Result<(), Err> {
                match op {
                    Op::Push(v) => self.stack.push(v),
                    Op::Add => { let a = self.pop()?; let b = self.pop()?; self.stack.push(a + b); }
                    Op::Jump { target } => self.pc = target,
                }
                Ok(())
            }
        }
        fn run(code: &[Op]) -> Result<i64, Err> {
            let mut f = Box::new(Frame { stack: Vec::new(), pc: 0 });
            while f.pc < code.len() {
                let op = code[f.pc];
                f.pc += 1;
                f.step(op)?;
            }
            f.pop()
        }",
        expect![[r#"
            fn Frame::pop -> Result<i64, Err>
            block0(self_0: &mut Frame red):
                R v1: Vec<i64> = getfield.stack(self_0)
                R v2: Option<i64> = pop(v1)
                R v6: u32 = enum_tag(v2)
                R v7: bool = eq(v6, Option::Some)
                if v7 then block3() else block2()
            block1(v4: Result<i64, Err> red):
                return v4
            block2():
                G v10: Err = Err::Underflow()
                G v11: Result<i64, Err> = Result::Err(v10)
                goto block1(v11)
            block3():
                R v_8: i64 = enum_field.Some.0(v2)
                R v9: Result<i64, Err> = Result::Ok(v_8)
                goto block1(v9)

            fn Frame::step -> Result<(), Err>
            block0(self_0: &mut Frame red, op_1: Op red):
                R v7: u32 = enum_tag(op_1)
                R v8: bool = eq(v7, Op::Push)
                if v8 then block3() else block2()
            block1():
                G v33: Result<(), Err> = Result::Ok(())
                return v33
            block2():
                R v14: u32 = enum_tag(op_1)
                R v15: bool = eq(v14, Op::Add)
                if v15 then block5() else block4()
            block3():
                R v_9: i64 = enum_field.Push.0(op_1)
                R v10: Vec<i64> = getfield.stack(self_0)
                R push(v10, v_9)
                goto block1()
            block4():
                R target_31: usize = enum_field.Jump.0(op_1)
                R setfield.pc(self_0, target_31)
                goto block1()
            block5():
                R v16: Result<i64, Err> = call Frame::pop(self_0)  [red call]
                R v17: u32 = enum_tag(v16)
                R v18: bool = eq(v17, Result::Err)
                if v18 then block6() else block7()
            block6():
                R v19: Err = enum_field.Err.0(v16)
                R v20: Result<(), Err> = Result::Err(v19)
                return v20
            block7():
                R a_21: i64 = enum_field.Ok.0(v16)
                R v22: Result<i64, Err> = call Frame::pop(self_0)  [red call]
                R v23: u32 = enum_tag(v22)
                R v24: bool = eq(v23, Result::Err)
                if v24 then block8() else block9()
            block8():
                R v25: Err = enum_field.Err.0(v22)
                R v26: Result<(), Err> = Result::Err(v25)
                return v26
            block9():
                R b_27: i64 = enum_field.Ok.0(v22)
                R v28: Vec<i64> = getfield.stack(self_0)
                R v29: i64 = add(a_21, b_27)
                R push(v28, v29)
                goto block1()

            fn run -> Result<i64, Err>
            block0(code_0: &[Op] red):
                R v1: Vec<i64> = new_vec()
                R v2: Frame = new.Frame(v1, 0_usize)
                R f_3: Box<Frame> = new_box(v2)
                goto block1()
            block1():
                R v8: usize = getfield.pc(f_3)
                R v9: usize = len(code_0)
                R v10: bool = lt(v8, v9)
                if v10 then block3() else block2()
            block2():
                R v22: Result<i64, Err> = call Frame::pop(f_3)  [red call]
                return v22
            block3():
                R v11: usize = getfield.pc(f_3)
                R op_12: Op = getitem(code_0, v11)
                R v13: usize = getfield.pc(f_3)
                R v14: usize = add(v13, 1_usize)
                R setfield.pc(f_3, v14)
                R v16: Result<(), Err> = call Frame::step(f_3, op_12)  [red call]
                R v17: u32 = enum_tag(v16)
                R v18: bool = eq(v17, Result::Err)
                if v18 then block4() else block5()
            block4():
                R v19: Err = enum_field.Err.0(v16)
                R v20: Result<i64, Err> = Result::Err(v19)
                return v20
            block5():
                R enum_field.Ok.0(v16)
                goto block1()
        "#]],
    );
}

#[test]
fn vec_operations_and_indexing() {
    check(
        "fn f(data: &[i64], n: usize) -> i64 {
            let mut v = vec![0; n];
            let w = vec![1, 2, 3];
            v.push(data[0]);
            v[1] = w[2] + data.len() as i64;
            let top = v.pop().unwrap();
            if v.is_empty() { top } else { v[0] + top }
        }",
        expect![[r#"
            fn f -> i64
            block0(data_0: &[i64] red, n_1: usize red):
                R v_2: Vec<i64> = new_vec_repeat(0_i64, n_1)
                R w_3: Vec<i64> = new_vec(1_i64, 2_i64, 3_i64)
                R v4: i64 = getitem(data_0, 0_usize)
                R push(v_2, v4)
                R v6: i64 = getitem(w_3, 2_usize)
                R v7: usize = len(data_0)
                R v8: i64 = cast(v7)
                R v9: i64 = add(v6, v8)
                R setitem(v_2, 1_usize, v9)
                R v11: Option<i64> = pop(v_2)
                R top_12: i64 = unwrap(v11)
                R v19: usize = len(v_2)
                R v20: bool = eq(v19, 0_usize)
                if v20 then block1(top_12) else block2()
            block1(v18: i64 red):
                return v18
            block2():
                R v21: i64 = getitem(v_2, 0_usize)
                R v22: i64 = add(v21, top_12)
                goto block1(v22)
        "#]],
    );
}

#[test]
fn a_list_read_before_an_argument_or_index_that_branches_is_read_again_after_it() {
    // The field is read after the `if`, in the join: a list read before
    // it would be carried into the join (which forces a backed object).
    // Not where the index names the place's root (`s.n`): it could have
    // written the list, so the read stays where Rust makes it.
    check(
        "struct S { stack: Vec<i64>, n: usize }
        fn f(s: &mut S, a: i64, b: i64) -> i64 {
            s.stack.push(if a < b { 1 } else { 0 });
            s.stack.push(a);
            let x = s.stack[if a < b { 0 } else { 1 }];
            x + s.stack[if s.n > 0 { 0 } else { 1 }]
        }",
        expect![[r#"
            fn f -> i64
            block0(s_0: &mut S red, a_1: i64 red, b_2: i64 red):
                R v8: bool = lt(a_1, b_2)
                if v8 then block1(1_i64) else block1(0_i64)
            block1(v7: i64 red):
                R v9: Vec<i64> = getfield.stack(s_0)
                R push(v9, v7)
                R v11: Vec<i64> = getfield.stack(s_0)
                R push(v11, a_1)
                R v18: bool = lt(a_1, b_2)
                if v18 then block2(0_usize) else block2(1_usize)
            block2(v17: usize red):
                R v19: Vec<i64> = getfield.stack(s_0)
                R x_20: i64 = getitem(v19, v17)
                R v21: Vec<i64> = getfield.stack(s_0)
                R v27: usize = getfield.n(s_0)
                R v28: bool = gt(v27, 0_usize)
                if v28 then block3(0_usize) else block3(1_usize)
            block3(v26: usize red):
                R v29: i64 = getitem(v21, v26)
                R v30: i64 = add(x_20, v29)
                return v30
        "#]],
    );
}

#[test]
fn if_let_and_while_let() {
    check(
        "fn f(mut s: Vec<i64>) -> i64 {
            let mut acc = 0;
            while let Some(x) = s.pop() { acc += x; }
            if let Some(y) = s.pop() { y } else { acc }
        }",
        expect![[r#"
            fn f -> i64
            block0(s_0: Vec<i64> red):
                G acc_1: i64 = same_as(0_i64)
                goto block1(acc_1)
            block1(acc_3: i64 red):
                R v6: Option<i64> = pop(s_0)
                R v7: u32 = enum_tag(v6)
                R v8: bool = eq(v7, Option::Some)
                if v8 then block3() else block2()
            block2():
                R v14: Option<i64> = pop(s_0)
                R v17: u32 = enum_tag(v14)
                R v18: bool = eq(v17, Option::Some)
                if v18 then block5() else block4(acc_3)
            block3():
                R x_9: i64 = enum_field.Some.0(v6)
                R acc_10: i64 = add(acc_3, x_9)
                goto block1(acc_10)
            block4(v13: i64 red):
                return v13
            block5():
                R y_19: i64 = enum_field.Some.0(v14)
                goto block4(y_19)
        "#]],
    );
}

#[test]
fn unsupported_constructs_leave_the_function_to_rust_with_each_reason_at_its_span() {
    check(
        "fn f(x: i64) -> i64 {
    let t = vec![(x, x)];
    let c = |y: i64| y + 1;
    format!(\"{}\", x);
    let s = \"text\";
    for v in [1, 2] {}
    let a = [1, 2];
    x.foo()
}",
        expect![[r#"
            left to Rust: f
                2:13: a tuple is supported in a #[jit_interpreter] function only where it is destructured (`let (a, b) = ...`, `match (x, y) { ... }`, `.0`); to pass, return or store it, use a struct of the module
                3:13: a closure is not supported in a #[jit_interpreter] function; write a function of the module
                6:14: `for` over anything but an integer range is not supported in a #[jit_interpreter] function; iterate over indices: `for i in 0..v.len()`
                7:13: an array literal is not supported in a #[jit_interpreter] function; use `vec![...]`
                8:7: the method `foo` on `i64` is not supported in a #[jit_interpreter] function; supported: methods of the module's impls, len/is_empty/push/pop/get/get_mut/first/first_mut/last/last_mut/swap/truncate/clear/insert/remove/extend_from_slice/reverse/split_off, HashMap new/insert/get/remove/contains_key, unwrap/expect/unwrap_or/ok_or/map/map_or/map_or_else/and_then/unwrap_or_else/ok_or_else/unwrap_or_default/copied/is_some/is_none/is_ok/is_err/is_some_and/is_none_or/is_ok_and/map_err, wrapping_add/sub/mul/div/rem/neg, checked_add/sub/mul/div/rem, saturating_add/sub/mul, min, max, abs, rem_euclid, div_euclid, signum, is_positive, is_negative
        "#]],
    );
}

#[test]
fn unsupported_items_and_signatures_are_left_to_rust() {
    check(
        "static mut COUNT: i64 = 0;
mod inner {}
fn h(s: String) -> usize { 0 }
fn k(x: (i64, i64)) -> i64 { 0 }",
        expect![[r#"
            fn h -> usize
            block0(s_0: String red):
                return 0_usize

            left to Rust: COUNT
                1:12: a static is not analyzed (global mutable state hides from the JIT): code that uses it runs as Rust; a `const`, or a parameter, can compile

            left to Rust: inner
                2:5: a nested module is not analyzed: code that uses its items runs as Rust
        "#]],
    );
}

#[test]
fn a_generic_function_is_called_as_it_is_its_type_parameters_fresh_at_each_call() {
    check(
        "fn pick<T>(a: T, b: T, first: bool) -> T { if first { a } else { b } }
fn fail<T>(code: u8) -> Result<T, u8> { Err(code) }
fn f(x: i64, c: char) -> Result<i64, u8> {
    let y = pick(x, 2, true);
    let d = pick(c, 'a', false);
    if d == 'z' { return fail(3); }
    Ok(y)
}",
        expect![[r#"
            fn f -> Result<i64, u8>
            block0(x_0: i64 red, c_1: char red):
                R y_2: i64 = call_opaque pick(x_0, 2_i64, true)  [red call]
                R d_3: char = call_opaque pick(c_1, 'a', false)  [red call]
                R v9: bool = eq(d_3, 'z')
                if v9 then block2() else block1()
            block1():
                R v13: Result<i64, u8> = Result::Ok(y_2)
                return v13
            block2():
                R v10: Result<i64, u8> = call_opaque fail(3_u8)  [red call]
                return v10
        "#]],
    );
}

#[test]
fn a_function_left_to_rust_is_called_as_it_is_and_its_callers_analyzed() {
    check(
        "fn helper(x: i64) -> i64 {
    let c = |y: i64| y + 1;
    c(x)
}
fn f(x: i64) -> i64 { helper(x) + 1 }",
        expect![[r#"
            fn f -> i64
            block0(x_0: i64 red):
                R v1: i64 = call_opaque helper(x_0)  [red call]
                R v2: i64 = add(v1, 1_i64)
                return v2

            left to Rust: helper
                2:13: a closure is not supported in a #[jit_interpreter] function; write a function of the module
        "#]],
    );
}

#[test]
fn unsupported_rust_in_a_portal_or_a_misused_hint_stays_an_error() {
    check(
        "fn run(code: &[u8]) -> i64 {
    let mut pc = 0;
    loop {
        hint!(global_merge_point);
        let op = hint!(code[pc], concrete);
        let c = |y: i64| y + 1;
        pc += 1;
    }
}
fn g(x: i64) -> i64 { let c = |y: i64| y; hint!(x, fast) }",
        expect![[r#"
            error 6:16: a closure is not supported in a #[jit_interpreter] function; write a function of the module
            error 10:30: a closure is not supported in a #[jit_interpreter] function; write a function of the module
            error 10:51: unknown hint `fast`: expected one of `concrete`, `promote`, `deepfreeze`, `variable` (or `hint!(global_merge_point)` alone)
        "#]],
    );
}

#[test]
fn fields_of_types_the_analysis_does_not_model_are_opaque_objects_reached_by_address() {
    check(
        "pub struct M { pub n: i64, pub seen: BTreeMap<i64, u32>, pub h: std::num::Wrapping<i64> }
impl M {
    fn count(&mut self, k: i64) -> usize {
        self.seen.insert(k, 1);
        if self.seen.contains_key(&k) { self.seen.len() } else { 0 }
    }
    fn copied(&self) -> i64 {
        let h = self.h;
        super::show(h)
    }
}",
        expect![[r#"
            fn M::count -> usize
            block0(self_0: &mut M red, k_1: i64 red):
                R v2: BTreeMap<i64, u32> = getfield.seen(self_0)
                R v3: Option<u32> = call_opaque .insert(,)(v2, k_1, 1_u32)  [red call]
                R v7: BTreeMap<i64, u32> = getfield.seen(self_0)
                R v8: bool = call_opaque .contains_key(&)(v7, k_1)  [red call]
                if v8 then block2() else block1(0_usize)
            block1(v6: usize red):
                return v6
            block2():
                R v9: BTreeMap<i64, u32> = getfield.seen(self_0)
                R v10: usize = call_opaque .len()(v9)  [red call]
                goto block1(v10)

            left to Rust: M::copied
                9:9: a value of `std::num::Wrapping<i64>`, a type the analysis does not model, used by value: compiled code reaches such an object only by address (`&x`, `x.method(..)`)
        "#]],
    );
}

#[test]
fn an_opaque_type_named_by_two_paths_is_one_type() {
    check(
        "pub struct M { pub seen: std::collections::BTreeMap<i64, u32> }
fn size(m: &BTreeMap<i64, u32>) -> usize { m.len() }
impl M {
    fn total(&self) -> usize { size(&self.seen) }
}",
        expect![[r#"
            fn size -> usize
            block0(m_0: &BTreeMap<i64, u32> red):
                R v1: usize = call_opaque .len()(m_0)  [red call]
                return v1

            fn M::total -> usize
            block0(self_0: &M red):
                R v1: std::collections::BTreeMap<i64, u32> = getfield.seen(self_0)
                R v2: &std::collections::BTreeMap<i64, u32> = same_as(v1)
                R v3: usize = call size(v2)  [red call]
                return v3
        "#]],
    );
}

#[test]
fn generic_type_aliases_are_expanded_where_used() {
    check(
        "#[derive(Clone, Copy)]
pub enum E { Under }
type Res<T> = Result<T, E>;
type Pair<A, B> = Result<Option<A>, B>;
fn f(x: i64) -> Res<i64> { if x < 0 { Err(E::Under) } else { Ok(x) } }
fn g(x: u8) -> Pair<u8, E> { Ok(Some(x)) }",
        expect![[r#"
            fn f -> Result<i64, E>
            block0(x_0: i64 red):
                R v3: bool = lt(x_0, 0_i64)
                if v3 then block2() else block3()
            block1(v2: Result<i64, E> red):
                return v2
            block2():
                G v4: E = E::Under()
                G v5: Result<i64, E> = Result::Err(v4)
                goto block1(v5)
            block3():
                R v6: Result<i64, E> = Result::Ok(x_0)
                goto block1(v6)

            fn g -> Result<Option<u8>, E>
            block0(x_0: u8 red):
                R v1: Option<u8> = Option::Some(x_0)
                R v2: Result<Option<u8>, E> = Result::Ok(v1)
                return v2
        "#]],
    );
}

#[test]
fn macro_rules_macros_are_expanded_before_lowering() {
    // `binop!`'s `b` is its own: the caller's `b` in `sum!` is the parameter.
    check(
        "macro_rules! binop {
    ($s:ident, $op:tt) => {{ let b = $s.pop().unwrap(); let a = $s.pop().unwrap(); $s.push(a $op b); }};
}
fn f(x: i64, b: i64) -> i64 {
    macro_rules! twice { ($e:expr) => { $e * 2 }; }
    macro_rules! sum { ($($x:expr),*) => { 0 $(+ $x)* }; }
    let mut s: Vec<i64> = vec![x, b];
    binop!(s, -);
    let t = s.pop().unwrap();
    twice!(t + 1) + sum!(1, 2, b) + if matches!(t, 0..=3) { 1 } else { 0 }
}
fn g(x: i64) -> i64 {
    macro_rules! loops { () => { loops!() }; }
    macro_rules! one { (a) => { 1 }; }
    loops!() + one!(b) + x
}",
        expect![[r#"
            fn f -> i64
            block0(x_0: i64 red, b_1: i64 red):
                R s_2: Vec<i64> = new_vec(x_0, b_1)
                R v3: Option<i64> = pop(s_2)
                R __macro1_b_4: i64 = unwrap(v3)
                R v5: Option<i64> = pop(s_2)
                R __macro1_a_6: i64 = unwrap(v5)
                R v7: i64 = sub(__macro1_a_6, __macro1_b_4)
                R push(s_2, v7)
                R v9: Option<i64> = pop(s_2)
                R t_10: i64 = unwrap(v9)
                R v11: i64 = add(t_10, 1_i64)
                R v12: i64 = mul(v11, 2_i64)
                G v13: i64 = add(0_i64, 1_i64)
                G v14: i64 = add(v13, 2_i64)
                R v15: i64 = add(v14, b_1)
                R v16: i64 = add(v12, v15)
                R v31: bool = ge(t_10, 0_i64)
                if v31 then block3() else block2(false)
            block1(v21: i64 red):
                R v33: i64 = add(v16, v21)
                return v33
            block2(v26: bool red):
                if v26 then block1(1_i64) else block1(0_i64)
            block3():
                R v32: bool = le(t_10, 3_i64)
                if v32 then block2(true) else block2(false)

            left to Rust: g
                13:34: `loops!` expands more than 64 levels deep
                15:16: no rule of `one!` matches this invocation
        "#]],
    );
}

#[test]
fn hints_are_checked() {
    check(
        "fn f(x: i64) -> i64 {
    let a = hint!(x, fast);
    let b = hint!(x);
    hint!(global_merge_point);
    a + b
}",
        expect![[r#"
            error 2:21: unknown hint `fast`: expected one of `concrete`, `promote`, `deepfreeze`, `variable` (or `hint!(global_merge_point)` alone)
            error 3:12: `hint!` takes an expression and a flag: `concrete`, `promote`, `deepfreeze`, `variable` (or `hint!(global_merge_point)` alone)
        "#]],
    );
}

#[test]
fn types_come_from_use_like_rustc() {
    // `pc` is a usize because it indexes; `k` defaults to i32; `f` to f64.
    check(
        "fn f(s: &[u8]) -> u8 { let mut pc = 0; let k = 5; let f = 1.5; pc += 1; if f > 1.0 { s[pc] } else { s[k as usize] } }",
        expect![[r#"
            fn f -> u8
            block0(s_0: &[u8] red):
                G pc_1: usize = same_as(0_usize)
                G k_2: i32 = same_as(5_i32)
                G f_3: f64 = same_as(1.5_f64)
                G pc_4: usize = add(pc_1, 1_usize)
                G v10: bool = gt(f_3, 1.0_f64)
                if v10 then block2() else block3()
            block1(v9: u8 red):
                return v9
            block2():
                R v11: u8 = getitem(s_0, pc_4)
                goto block1(v11)
            block3():
                G v12: usize = cast(k_2)
                R v13: u8 = getitem(s_0, v12)
                goto block1(v13)
        "#]],
    );
}

#[test]
fn an_uninferable_type_leaves_the_function_to_rust_asking_for_an_ascription() {
    check(
        "fn f() -> usize {
    let v = Vec::new();
    v.len()
}",
        expect![[r#"
            left to Rust: f
                2:13: cannot infer the type of `v`; add a type ascription (`let x: T = ...`)
        "#]],
    );
}

#[test]
fn mismatched_types_leave_the_function_to_rust() {
    check(
        "fn f(a: i64, b: bool) -> i64 {
    a + b
}",
        expect![[r#"
            left to Rust: f
                2:5: mismatched types: expected `i64`, found `bool`
        "#]],
    );
}

#[test]
fn calls_to_functions_outside_the_module_are_opaque() {
    check(
        "#[jit_opaque]
        fn log(x: i64) { }
        fn f(x: i64) -> i64 { log(x); let y: i64 = super::helper(x); y }",
        expect![[r#"
            fn log -> ()
            block0(x_0: i64 red):
                return ()

            fn f -> i64
            block0(x_0: i64 red):
                R call_opaque log(x_0)  [gray call]
                R y_2: i64 = call_opaque super::helper(x_0)  [red call]
                return y_2
        "#]],
    );
}

#[test]
fn mut_references_to_values_are_places() {
    check(
        "pub struct Stack(Vec<i64>);
#[derive(Clone, Copy)]
pub enum E { Under, Bad }
impl Stack {
    fn peek_mut(&mut self) -> Result<&mut i64, E> {
        self.0.last_mut().ok_or(E::Under)
    }
    fn get_mut(&mut self, i: usize) -> Option<&mut i64> {
        self.0.get_mut(i)
    }
}
fn bump(x: &mut i64, by: i64) {
    *x += by;
}
fn f(s: &mut Stack, i: usize) -> Result<i64, E> {
    *s.peek_mut()? += 1;
    *s.get_mut(i).ok_or(E::Bad)? = 7;
    let mut a = 5;
    bump(&mut a, 2);
    if let Some(x) = s.0.first_mut() {
        bump(x, a);
    }
    Ok(a)
}",
        expect![[r#"
            fn f -> Result<i64, E>
            block0(s_0: &mut Stack red, i_1: usize red):
                R v6: Vec<i64> = getfield.0(s_0)
                R v7: usize = len(v6)
                R v8: bool = ne(v7, 0_usize)
                R v9: usize = wrapping_sub(v7, 1_usize)
                R v10: u32 = cast(v8)
                G v11: E = E::Under()
                R v12: bool = eq(v10, Option::None)
                R v13: u32 = cast(v12)
                goto block1()
            block1():
                R v18: bool = eq(v13, Result::Err)
                if v18 then block2() else block3()
            block2():
                G v19: Result<i64, E> = Result::Err(v11)
                return v19
            block3():
                R v20: Vec<i64> = getfield.0(s_0)
                R v21: i64 = getitem(v20, v9)
                R v22: i64 = add(v21, 1_i64)
                R v23: Vec<i64> = getfield.0(s_0)
                R setitem(v23, v9, v22)
                R v29: Vec<i64> = getfield.0(s_0)
                R v30: usize = len(v29)
                R v31: bool = lt(i_1, v30)
                R v32: u32 = cast(v31)
                goto block4()
            block4():
                G v36: E = E::Bad()
                R v37: bool = eq(v32, Option::None)
                R v38: u32 = cast(v37)
                R v39: bool = eq(v38, Result::Err)
                if v39 then block5() else block6()
            block5():
                G v40: Result<i64, E> = Result::Err(v36)
                return v40
            block6():
                R v41: Vec<i64> = getfield.0(s_0)
                R setitem(v41, i_1, 7_i64)
                G a_43: i64 = same_as(5_i64)
                G a_48: i64 = add(a_43, 2_i64)
                goto block7()
            block7():
                R v54: Vec<i64> = getfield.0(s_0)
                R v55: usize = len(v54)
                R v56: bool = ne(v55, 0_usize)
                R v57: u32 = cast(v56)
                R v61: bool = eq(v57, Option::Some)
                if v61 then block9() else block8()
            block8():
                G v73: Result<i64, E> = Result::Ok(a_48)
                return v73
            block9():
                R v68: Vec<i64> = getfield.0(s_0)
                R v69: i64 = getitem(v68, 0_usize)
                R v70: i64 = add(v69, a_48)
                R v71: Vec<i64> = getfield.0(s_0)
                R setitem(v71, 0_usize, v70)
                goto block8()
        "#]],
    );
}

#[test]
fn printing_is_a_residual_effect_and_asserts_abort() {
    check(
        "fn f(x: i64, w: usize) -> i64 {
    let y = x + 1;
    println!(\"{} and {y:>w$} {z}\", x, z = y * 2);
    eprint!(\"{{}}\");
    assert!(y > 0);
    assert_eq!(x, 3);
    y
}",
        expect![[r#"
            fn f -> i64
            block0(x_0: i64 red, w_1: usize red):
                R y_2: i64 = add(x_0, 1_i64)
                R v3: i64 = mul(y_2, 2_i64)
                R format println!("{} and {y:>w$} {z}")(x_0, v3, y_2, w_1)  [gray call]
                R format eprint!("{{}}")()  [gray call]
                R v6: bool = gt(y_2, 0_i64)
                if v6 then block1() else block2()
            block1():
                R v8: bool = eq(x_0, 3_i64)
                if v8 then block3() else block4()
            block2():
                abort "assertion failed: y > 0"
            block3():
                return y_2
            block4():
                R format assert_eq!("")(x_0, 3_i64)  [gray call]
                abort "assertion `left == right` failed"
        "#]],
    );
}

#[test]
fn a_portal_taking_a_mut_to_a_value_is_not_inlined() {
    check(
        "fn run(code: &[u8], acc: &mut i64) -> i64 {
    let mut pc = 0;
    while pc < code.len() {
        hint!(global_merge_point);
        pc += 1;
    }
    *acc = 1;
    *acc
}",
        expect![[r#"
            fn run -> i64
            block0(code_0: &[u8] red, acc_1: &mut i64 red):
                G pc_2: usize = same_as(0_usize)
                goto block1(pc_2)
            block1(pc_5: usize red):
                R v9: usize = len(code_0)
                R v10: bool = lt(pc_5, v9)
                if v10 then block3() else block2()
            block2():
                R call_opaque __jitgen_outlined_run_0(acc_1)  [gray call]
                R v14: i64 = load(acc_1)
                return v14
            block3():
                G global_merge_point()  [position key: ]
                R pc_12: usize = add(pc_5, 1_usize)
                goto block1(pc_12)

            left to Rust: run
                7:5: runs as Rust, one residual call (outlined): assigning through this reference (a `&mut` parameter of a portal, or a `Box`)
        "#]],
    );
}

/// `clone` of a value is the value; `clone` and `to_vec` of a list of
/// values copy it element by element into a new list.
#[test]
fn clones_of_values_and_lists_of_values() {
    check(
        "fn f(v: &Vec<i64>, x: i64) -> Vec<i64> {
    let mut w = v.clone();
    w.push(x.clone());
    w
}",
        expect![[r#"
            fn f -> Vec<i64>
            block0(v_0: &Vec<i64> red, x_1: i64 red):
                R w_2: Vec<i64> = new_vec()
                G __jitgen_k_3: usize = same_as(0_usize)
                goto block1(__jitgen_k_3)
            block1(__jitgen_k_7: usize red):
                R v12: usize = len(v_0)
                R v13: bool = lt(__jitgen_k_7, v12)
                if v13 then block3() else block2()
            block2():
                R push(w_2, x_1)
                return w_2
            block3():
                R v14: i64 = getitem(v_0, __jitgen_k_7)
                R push(w_2, v14)
                R __jitgen_k_16: usize = add(__jitgen_k_7, 1_usize)
                goto block1(__jitgen_k_16)
        "#]],
    );
}

/// `Alias::new()` through a type alias of a `Vec`, and `Vec::<T>::new()`,
/// give the list its element type: a field of an element can be read
/// without a type ascription on the `let`.
#[test]
fn constructors_through_aliases_and_turbofish_know_the_element_type() {
    check(
        "pub struct StackFrame { pub stack_offset: usize, pub ip: usize }
pub type CallStack = Vec<StackFrame>;
fn f(x: usize) -> usize {
    let mut call_stack = CallStack::new();
    call_stack.push(StackFrame { stack_offset: x, ip: 1 });
    let other = Vec::<StackFrame>::new();
    call_stack.last().unwrap().stack_offset + other.len()
}",
        expect![[r#"
            fn f -> usize
            block0(x_0: usize red):
                R call_stack_1: Vec<StackFrame> = new_vec()
                R v2: StackFrame = new.StackFrame(x_0, 1_usize)
                R push(call_stack_1, v2)
                R other_4: Vec<StackFrame> = new_vec()
                R v9: usize = len(call_stack_1)
                R v10: bool = eq(v9, 0_usize)
                if v10 then block2() else block3()
            block1(v8: Option<StackFrame> red):
                R v16: StackFrame = unwrap(v8)
                R v17: usize = getfield.stack_offset(v16)
                R v18: usize = len(other_4)
                R v19: usize = add(v17, v18)
                return v19
            block2():
                G v11: Option<StackFrame> = Option::None()
                goto block1(v11)
            block3():
                R v12: usize = len(call_stack_1)
                R v13: usize = sub(v12, 1_usize)
                R v14: StackFrame = getitem(call_stack_1, v13)
                R v15: Option<StackFrame> = Option::Some(v14)
                goto block1(v15)
        "#]],
    );
}

#[test]
fn item_macros_of_a_file_expand_into_its_items() {
    let file: syn::File = syn::parse_str(
        "macro_rules! ops { ($($(#[$doc:meta])* $op:ident,)*) => { pub enum Op { $($(#[$doc])* $op,)* } impl Op { pub const N: usize = 0; } }; }
ops! { /// Adds.
Add, /// Subtracts.
Sub, }
pub struct Other;",
    )
    .expect("a file");
    let items = hint_annotator::macro_rules::expand_items(file.items);
    let names: Vec<String> = items
        .iter()
        .map(|i| match i {
            syn::Item::Enum(e) => format!("enum {} {}", e.ident, e.variants.len()),
            syn::Item::Impl(_) => "impl".into(),
            syn::Item::Struct(s) => format!("struct {}", s.ident),
            syn::Item::Macro(_) => "macro".into(),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(names, ["macro", "enum Op 2", "impl", "struct Other"]);
    // The variants' doc comments came through the `meta` fragment.
    let syn::Item::Enum(e) = &items[1] else { unreachable!("checked") };
    assert_eq!(e.variants.iter().map(|v| v.attrs.len()).collect::<Vec<_>>(), [1, 1]);
}

#[test]
fn a_boxed_trait_object_in_a_portal_signature_is_an_opaque_object() {
    // `Box<dyn Error>` is an object the analysis does not model, which
    // compiled code owns as a whole; a trait object behind a reference is
    // still refused, naming it.
    check(
        "fn run(code: &[u8]) -> Result<i64, Box<dyn std::error::Error>> {
    let mut pc = 0;
    loop {
        hint!(global_merge_point);
        if hint!(code[pc], concrete) == 0 {
            return Ok(1);
        }
        pc += 1;
    }
}",
        expect![[r#"
            fn run -> Result<i64, Box<dyn std::error::Error>>
            block0(code_0: &[u8] green):
                G pc_1: usize = same_as(0_usize)
                goto block1(pc_1)
            block1(pc_3: usize green):
                G global_merge_point()  [position key: code_0, pc_3]
                G v11: u8 = getitem(code_0, pc_3)
                G v12: u8 = hint_concrete(v11)
                G v13: bool = eq(v12, 0_u8)
                if v13 then block3() else block2()
            block2():
                G pc_17: usize = add(pc_3, 1_usize)
                goto block1(pc_17)
            block3():
                G v14: Result<i64, Box<dyn std::error::Error>> = Result::Ok(1_i64)
                return v14
        "#]],
    );
    check(
        "fn run(code: &[u8], out: &dyn std::fmt::Debug) -> i64 {
    let mut pc = 0;
    loop {
        hint!(global_merge_point);
        if hint!(code[pc], concrete) == 0 {
            return 1;
        }
        pc += 1;
    }
}",
        expect![[r#"
            error 1:26: a trait object (`dyn std::fmt::Debug`) outside a `Box` is not supported by jitgen's analysis yet; own it as a `Box<dyn ..>` (an object compiled code holds without looking inside), or use a type of the module
        "#]],
    );
}

#[test]
fn a_promoted_field_is_known_until_written_or_handed_to_a_call() {
    // After the promotion, `s.pc` reads are the promoted value (green); a
    // written value is known too, but only a value (the struct written into
    // `s.at` is stored in place, and `s.at.n` is read from it again); a
    // branch keeps what is known, a join what both sides knew (`q`); a call
    // handed `s` forgets it.
    check(
        "#[derive(Clone, Copy)]
        struct At { n: i64 }
        struct S { pc: usize, at: At }
        fn touch(s: &mut S) { s.pc = 0; }
        fn f(s: &mut S, c: bool) -> usize {
            let p = hint!(s.pc, promote);
            let a = s.pc + 1;
            s.at = At { n: 3 };
            let n = s.at.n;
            let q = p + 2;
            if c { s.pc = q; } else { s.pc = q; }
            let b = s.pc;
            touch(s);
            let d = s.pc;
            p + a + n as usize + b + d
        }",
        expect![[r#"
            fn touch -> ()
            block0(s_0: &mut S red):
                R setfield.pc(s_0, 0_usize)
                return ()

            fn f -> usize
            block0(s_0: &mut S red, c_1: bool red):
                R v2: usize = getfield.pc(s_0)
                R p_3: usize = hint_promote(v2)  [promotion: result green]
                G a_4: usize = add(p_3, 1_usize)
                R v5: At = new.At(3_i64)
                R setfield.at(s_0, v5)
                R v7: At = getfield.at(s_0)
                R n_8: i64 = getfield.n(v7)
                G q_9: usize = add(p_3, 2_usize)
                if c_1 then block2() else block3()
            block1():
                R call touch(s_0)  [gray call]
                R d_20: usize = getfield.pc(s_0)
                G v21: usize = add(p_3, a_4)
                R v22: usize = cast(n_8)
                R v23: usize = add(v21, v22)
                R v24: usize = add(v23, q_9)
                R v25: usize = add(v24, d_20)
                return v25
            block2():
                R setfield.pc(s_0, q_9)
                goto block1()
            block3():
                R setfield.pc(s_0, q_9)
                goto block1()
        "#]],
    );
}

#[test]
fn a_derived_clone_of_a_struct_holding_an_rc_is_assigned_in_place() {
    // Its `Rc` cloned into the place by Rust (`clone_into`), its values
    // read before any is written; into a local never moved, and into the
    // place a list's accessor finds.
    check(
        "use std::rc::Rc;
        pub struct Code { pub ops: Vec<u8> }
        #[derive(Clone)]
        pub struct Frame { pub code: Rc<Code>, pub ip: usize, pub base: usize }
        fn f(frames: &mut Vec<Frame>, mut frame: Frame) -> usize {
            *frames.last_mut().unwrap() = frame.clone();
            frame = frames.last().unwrap().clone();
            frame.ip + frame.base
        }",
        expect![[r#"
            fn f -> usize
            block0(frames_0: &mut Vec<Frame> red, frame_1: Frame red):
                R v5: usize = len(frames_0)
                R v6: bool = eq(v5, 0_usize)
                if v6 then block2() else block3()
            block1(v4: Option<Frame> red):
                R v12: Frame = unwrap(v4)
                R clone_into.code(v12, frame_1)
                R v14: usize = getfield.ip(frame_1)
                R v15: usize = getfield.base(frame_1)
                R setfield.ip(v12, v14)
                R setfield.base(v12, v15)
                R v21: usize = len(frames_0)
                R v22: bool = eq(v21, 0_usize)
                if v22 then block5() else block6()
            block2():
                G v7: Option<Frame> = Option::None()
                goto block1(v7)
            block3():
                R v8: usize = len(frames_0)
                R v9: usize = sub(v8, 1_usize)
                R v10: Frame = getitem(frames_0, v9)
                R v11: Option<Frame> = Option::Some(v10)
                goto block1(v11)
            block4(v20: Option<Frame> red):
                R v28: Frame = unwrap(v20)
                R clone_into.code(frame_1, v28)
                R v30: usize = getfield.ip(v28)
                R v31: usize = getfield.base(v28)
                R setfield.ip(frame_1, v30)
                R setfield.base(frame_1, v31)
                R v34: usize = add(v30, v31)
                return v34
            block5():
                G v23: Option<Frame> = Option::None()
                goto block4(v23)
            block6():
                R v24: usize = len(frames_0)
                R v25: usize = sub(v24, 1_usize)
                R v26: Frame = getitem(frames_0, v25)
                R v27: Option<Frame> = Option::Some(v26)
                goto block4(v27)
        "#]],
    );
}

#[test]
fn consts_computed_fold_and_const_tables_read_as_a_match_on_the_index() {
    check(
        "const SHIFT: u32 = 3;
        const SIZE: usize = (1 << SHIFT) + 1;
        const HALF: f64 = 1.0 / 2.0;
        const TABLE: [i64; 3] = [4, -1, SIZE as i64 * 2];
        fn f(i: usize, x: f64) -> i64 {
            match i {
                SIZE => TABLE[1],
                _ => TABLE[i] + TABLE.get(2).copied().unwrap_or(0) + (x * HALF) as i64 + TABLE.len() as i64,
            }
        }",
        expect![[r#"
            fn f -> i64
            block0(i_0: usize red, x_1: f64 red):
                R v7: bool = eq(i_0, 9_usize)
                if v7 then block3() else block2()
            block1(v4: i64 red):
                return v4
            block2():
                R v38: bool = eq(i_0, 0_usize)
                if v38 then block8(4_i64) else block9()
            block3():
                G __jitgen_index_8: usize = same_as(1_usize)
                G v16: bool = eq(__jitgen_index_8, 0_usize)
                if v16 then block1(4_i64) else block4()
            block4():
                G v20: bool = eq(__jitgen_index_8, 1_usize)
                if v20 then block1(-1_i64) else block5()
            block5():
                G v24: bool = eq(__jitgen_index_8, 2_usize)
                if v24 then block7() else block6()
            block6():
                R v27: Vec<u8> = new_vec_repeat(0_u8, 3_usize)
                R v28: u8 = getitem(v27, __jitgen_index_8)
                abort "internal error: entered unreachable code"
            block7():
                G v25: i64 = cast(9_usize)
                G v26: i64 = mul(v25, 2_i64)
                goto block1(v26)
            block8(v34: i64 red):
                G __jitgen_index_53: usize = same_as(2_usize)
                G v61: bool = eq(__jitgen_index_53, 0_usize)
                if v61 then block15() else block14()
            block9():
                R v42: bool = eq(i_0, 1_usize)
                if v42 then block8(-1_i64) else block10()
            block10():
                R v46: bool = eq(i_0, 2_usize)
                if v46 then block12() else block11()
            block11():
                R v49: Vec<u8> = new_vec_repeat(0_u8, 3_usize)
                R v50: u8 = getitem(v49, i_0)
                abort "internal error: entered unreachable code"
            block12():
                G v47: i64 = cast(9_usize)
                G v48: i64 = mul(v47, 2_i64)
                goto block8(v48)
            block13(v57: Option<i64> red):
                R v85: u32 = enum_tag(v57)
                R v86: bool = eq(v85, Option::Some)
                if v86 then block21() else block20(0_i64)
            block14():
                G v66: bool = eq(__jitgen_index_53, 1_usize)
                if v66 then block17() else block16()
            block15():
                G v62: Option<i64> = Option::Some(4_i64)
                goto block13(v62)
            block16():
                G v71: bool = eq(__jitgen_index_53, 2_usize)
                if v71 then block19() else block18()
            block17():
                G v67: Option<i64> = Option::Some(-1_i64)
                goto block13(v67)
            block18():
                G v75: Option<i64> = Option::None()
                goto block13(v75)
            block19():
                G v72: i64 = cast(9_usize)
                G v73: i64 = mul(v72, 2_i64)
                G v74: Option<i64> = Option::Some(v73)
                goto block13(v74)
            block20(v80: i64 red):
                R v88: i64 = add(v34, v80)
                G v89: f64 = div(1.0_f64, 2.0_f64)
                R v90: f64 = mul(x_1, v89)
                R v91: i64 = cast(v90)
                R v92: i64 = add(v88, v91)
                G v93: i64 = cast(3_usize)
                R v94: i64 = add(v92, v93)
                goto block1(v94)
            block21():
                R __jitgen_v_87: i64 = enum_field.Some.0(v57)
                goto block20(__jitgen_v_87)
        "#]],
    );
}

#[test]
fn a_popped_frame_owning_a_vec_is_dropped_where_its_block_ends() {
    // `f` is read only for a scalar: dropped at its block's end. `g`'s
    // list is borrowed out of it, which the drop could outlive as the
    // analysis models it (a pointer into the object): not dropped.
    check(
        "struct Frame { ret: usize, locals: Vec<i64> }
        fn f(frames: &mut Vec<Frame>) -> usize {
            let n = {
                let f = frames.pop().unwrap();
                f.ret
            };
            let m = {
                let g = frames.pop().unwrap();
                g.locals.len()
            };
            n + m
        }",
        expect![[r#"
            fn f -> usize
            block0(frames_0: &mut Vec<Frame> red):
                R v1: Option<Frame> = pop(frames_0)
                R f_2: Frame = unwrap(v1)
                R n_3: usize = getfield.ret(f_2)
                R drop(f_2)
                R v5: Option<Frame> = pop(frames_0)
                R g_6: Frame = unwrap(v5)
                R v7: Vec<i64> = getfield.locals(g_6)
                R m_8: usize = len(v7)
                R v9: usize = add(n_3, m_8)
                return v9
        "#]],
    );
}

#[test]
fn a_number_methods_path_call_is_the_method_and_a_failed_operand_of_question_mark_is_one_error() {
    // `i64::checked_add(a, b)` is `a.checked_add(b)` with `a` an `i64`; an
    // unknown function under the match the macro makes of `?` is one
    // error, not also its patterns' and bindings'.
    check(
        "fn f(a: i64, b: i64) -> Option<i64> {
            let s = i64::checked_add(a, b)?;
            Some(i64::max(s, 0))
        }
        fn g(a: i64) -> Result<i64, u8> {
            let v = match u8::try_from([a, 1][0]) { Ok(__jit_v) => __jit_v, Err(__jit_e) => return Err(__jit_e) };
            Ok(v)
        }",
        expect![[r#"
            fn f -> Option<i64>
            block0(a_0: i64 red, b_1: i64 red):
                R __jitgen_s_2: i64 = wrapping_add(a_0, b_1)
                R v10: bool = ge(b_1, 0_i64)
                R v11: bool = ge(__jitgen_s_2, a_0)
                R v12: bool = eq(v10, v11)
                if v12 then block2() else block3()
            block1(v9: Option<i64> red):
                R v15: u32 = enum_tag(v9)
                R v16: bool = eq(v15, Option::None)
                if v16 then block4() else block5()
            block2():
                R v13: Option<i64> = Option::Some(__jitgen_s_2)
                goto block1(v13)
            block3():
                G v14: Option<i64> = Option::None()
                goto block1(v14)
            block4():
                G v17: Option<i64> = Option::None()
                return v17
            block5():
                R s_18: i64 = enum_field.Some.0(v9)
                R v19: i64 = max(s_18, 0_i64)
                R v20: Option<i64> = Option::Some(v19)
                return v20

            left to Rust: g
                6:40: an array literal is not supported in a #[jit_interpreter] function; use `vec![...]`
        "#]],
    );
}

#[test]
fn functions_of_rc_by_path_are_residual_calls_and_an_rc_moves_into_an_enum() {
    check(
        "use std::rc::Rc;
        pub enum Value { Nil, Str(Rc<str>) }
        fn f(a: &Rc<str>, b: &Rc<str>) -> bool { Rc::ptr_eq(a, b) }
        fn g(a: &Rc<str>) -> Value { Value::Str(Rc::clone(a)) }",
        expect![[r#"
            fn f -> bool
            block0(a_0: &Rc<str> red, b_1: &Rc<str> red):
                R v2: bool = call_opaque Rc::ptr_eq(a_0, b_1)  [red call]
                return v2

            fn g -> Value
            block0(a_0: &Rc<str> red):
                R v1: Rc<str> = same_as(a_0)
                R v2: Rc<str> = call_opaque .clone()(v1)  [red call]
                R v3: Value = Value::Str(v2)
                return v3
        "#]],
    );
}

/// A method of a user's trait called on a number may take it by `&mut`:
/// outlined, the call gives the method's value and leaves the number it
/// changed in its stash, read back by the getter.
#[test]
fn a_trait_method_that_may_change_a_number_hands_its_change_back() {
    check(
        "trait Tally { fn tally(&mut self) -> bool; }
impl Tally for i64 { fn tally(&mut self) -> bool { *self += 1; *self % 2 == 0 } }
fn run(code: &[u8]) -> i64 {
    let mut pc = 0;
    let mut n: i64 = 0;
    let mut evens = 0;
    while pc < code.len() {
        hint!(global_merge_point);
        pc += 1;
        if n.tally() { evens += 1; }
    }
    n + evens
}",
        expect![[r#"
            fn run -> i64
            block0(code_0: &[u8] red):
                G pc_1: usize = same_as(0_usize)
                G n_2: i64 = same_as(0_i64)
                G evens_3: i64 = same_as(0_i64)
                goto block1(pc_1, n_2, evens_3)
            block1(pc_5: usize red, n_6: i64 red, evens_7: i64 red):
                R v12: usize = len(code_0)
                R v13: bool = lt(pc_5, v12)
                if v13 then block3() else block2()
            block2():
                R v24: i64 = add(n_6, evens_7)
                return v24
            block3():
                G global_merge_point()  [position key: ]
                R pc_15: usize = add(pc_5, 1_usize)
                R __jitgen_value_21: bool = call_opaque __jitgen_outlined_run_0(n_6)  [red call]
                R n_22: i64 = call_opaque __jitgen_outlined_run_0_1()  [red call]
                if __jitgen_value_21 then block4() else block1(pc_15, n_22, evens_7)
            block4():
                R evens_23: i64 = add(evens_7, 1_i64)
                goto block1(pc_15, n_22, evens_23)

            left to Rust: run
                10:14: runs as Rust, one residual call (outlined): the method `tally` on `i64`
        "#]],
    );
}

/// `hint!(pc, promote);` as a statement promotes the local: after it,
/// `pc` is the promoted (green) value, as after `pc = hint!(pc, promote)`,
/// so the `concrete` read at the loop's head holds where `pc` came from a
/// red stack.
#[test]
fn a_promote_statement_makes_its_local_green_from_there_on() {
    check(
        "fn run(code: &[u8], stack: &mut Vec<usize>) -> u8 {
    let mut pc = 0;
    loop {
        hint!(global_merge_point);
        let op = hint!(code[pc], concrete);
        if op == 0 { return op; }
        pc = stack.pop().unwrap_or(0);
        hint!(pc, promote);
    }
}",
        expect![[r#"
            fn run -> u8
            block0(code_0: &[u8] green, stack_1: &mut Vec<usize> red):
                G pc_2: usize = same_as(0_usize)
                goto block1(pc_2)
            block1(pc_5: usize green):
                G global_merge_point()  [position key: code_0, pc_5]
                G v11: u8 = getitem(code_0, pc_5)
                G op_12: u8 = hint_concrete(v11)
                G v18: bool = eq(op_12, 0_u8)
                if v18 then block3() else block2()
            block2():
                R v21: Option<usize> = pop(stack_1)
                R v35: u32 = enum_tag(v21)
                R v36: bool = eq(v35, Option::Some)
                if v36 then block5() else block4(0_usize)
            block3():
                return op_12
            block4(pc_28: usize red):
                R pc_38: usize = hint_promote(pc_28)  [promotion: result green]
                goto block1(pc_38)
            block5():
                R __jitgen_v_37: usize = enum_field.Some.0(v21)
                goto block4(__jitgen_v_37)
        "#]],
    );
}

#[test]
fn an_element_borrowed_out_of_a_vec_is_not_dropped_where_its_block_ends() {
    // `f`, `g` and `h` are references into `functions` (the analysis models
    // each as the element): nothing is dropped. `p` is popped, and `t` made
    // by the module's own `get`: they are.
    check(
        "struct Function { arity: usize, code: Vec<i64> }
        struct Table { size: usize }
        impl Table {
            fn get(&self, i: usize) -> Function {
                Function { arity: i + self.size, code: Vec::new() }
            }
        }
        fn f(functions: &mut Vec<Function>, table: &Table, i: usize) -> Option<usize> {
            let a = {
                let f = functions.get(i)?;
                f.arity
            };
            let b = {
                let g = match functions.last() {
                    Some(g) => g,
                    None => return None,
                };
                g.arity
            };
            let c = {
                let h = functions.first().expect(\"a function\");
                h.arity
            };
            let d = {
                let p = functions.pop().unwrap();
                p.arity
            };
            let e = {
                let t = table.get(i);
                t.arity
            };
            Some(a + b + c + d + e)
        }",
        expect![[r#"
            fn Table::get -> Function
            block0(self_0: &Table red, i_1: usize red):
                R v2: usize = getfield.size(self_0)
                R v3: usize = add(i_1, v2)
                R v4: Vec<i64> = new_vec()
                R v5: Function = new.Function(v3, v4)
                return v5

            fn f -> Option<usize>
            block0(functions_0: &mut Vec<Function> red, table_1: &Table red, i_2: usize red):
                R v8: usize = len(functions_0)
                R v9: bool = lt(i_2, v8)
                if v9 then block2() else block3()
            block1(v7: Option<Function> red):
                R v13: u32 = enum_tag(v7)
                R v14: bool = eq(v13, Option::None)
                if v14 then block4() else block5()
            block2():
                R v10: Function = getitem(functions_0, i_2)
                R v11: Option<Function> = Option::Some(v10)
                goto block1(v11)
            block3():
                G v12: Option<Function> = Option::None()
                goto block1(v12)
            block4():
                G v15: Option<usize> = Option::None()
                return v15
            block5():
                R f_16: Function = enum_field.Some.0(v7)
                R a_17: usize = getfield.arity(f_16)
                R v23: usize = len(functions_0)
                R v24: bool = eq(v23, 0_usize)
                if v24 then block7() else block8()
            block6(v22: Option<Function> red):
                R v39: u32 = enum_tag(v22)
                R v40: bool = eq(v39, Option::Some)
                if v40 then block11() else block10()
            block7():
                G v25: Option<Function> = Option::None()
                goto block6(v25)
            block8():
                R v26: usize = len(functions_0)
                R v27: usize = sub(v26, 1_usize)
                R v28: Function = getitem(functions_0, v27)
                R v29: Option<Function> = Option::Some(v28)
                goto block6(v29)
            block9():
                R b_44: usize = getfield.arity(g_41)
                R v51: usize = len(functions_0)
                R v52: bool = eq(v51, 0_usize)
                if v52 then block13() else block14()
            block10():
                G v42: Option<usize> = Option::None()
                return v42
            block11():
                R g_41: Function = enum_field.Some.0(v22)
                goto block9()
            block12(v50: Option<Function> red):
                R h_56: Function = unwrap(v50)
                R c_57: usize = getfield.arity(h_56)
                R v58: Option<Function> = pop(functions_0)
                R p_59: Function = unwrap(v58)
                R d_60: usize = getfield.arity(p_59)
                R drop(p_59)
                R t_62: Function = call Table::get(table_1, i_2)  [red call]
                R e_63: usize = getfield.arity(t_62)
                R drop(t_62)
                R v65: usize = add(a_17, b_44)
                R v66: usize = add(v65, c_57)
                R v67: usize = add(v66, d_60)
                R v68: usize = add(v67, e_63)
                R v69: Option<usize> = Option::Some(v68)
                return v69
            block13():
                G v53: Option<Function> = Option::None()
                goto block12(v53)
            block14():
                R v54: Function = getitem(functions_0, 0_usize)
                R v55: Option<Function> = Option::Some(v54)
                goto block12(v55)
        "#]],
    );
}

#[test]
fn a_string_methods_receiver_is_computed_once() {
    // The index calls `next`, which moves `at` on: `clone` and `len` of the
    // element read once each, `next` called once for each.
    check(
        "fn next(at: &mut usize) -> usize {
    *at += 1;
    *at - 1
}
fn f(names: &[String], start: usize) -> usize {
    let mut at = start;
    let s = names[next(&mut at)].clone();
    s.len() + names[next(&mut at)].len() + at
}",
        expect![[r#"
            fn f -> usize
            block0(names_0: &[String] red, start_1: usize red):
                R at_6: usize = add(start_1, 1_usize)
                R v7: usize = sub(at_6, 1_usize)
                goto block1()
            block1():
                R v8: String = getitem(names_0, v7)
                R s_9: String = format format!("{}")(v8)
                R v10: &String = same_as(s_9)
                R v11: usize = call_opaque std::string::String::len(v10)  [red call]
                R at_17: usize = add(at_6, 1_usize)
                R v18: usize = sub(at_17, 1_usize)
                goto block2()
            block2():
                R v19: String = getitem(names_0, v18)
                R v20: &String = same_as(v19)
                R v21: usize = call_opaque std::string::String::len(v20)  [red call]
                R v22: usize = add(v11, v21)
                R v23: usize = add(v22, at_17)
                return v23
        "#]],
    );
}

#[test]
fn a_string_written_into_is_computed_once() {
    // The destination's index calls `next`, which moves `at` on: `write!`
    // and `+=` of a literal each call it once.
    check(
        "fn next(at: &mut usize) -> usize {
    *at += 1;
    *at - 1
}
fn f(names: &mut Vec<String>, start: usize) -> usize {
    let mut at = start;
    write!(names[next(&mut at)], \"{}\", at);
    names[next(&mut at)] += \"!\";
    at
}",
        expect![[r#"
            fn f -> usize
            block0(names_0: &mut Vec<String> red, start_1: usize red):
                R at_6: usize = add(start_1, 1_usize)
                R v7: usize = sub(at_6, 1_usize)
                goto block1()
            block1():
                R v8: String = getitem(names_0, v7)
                R v9: &mut String = same_as(v8)
                R format write!("{}")(v9, at_6)  [gray call]
                R at_15: usize = add(at_6, 1_usize)
                R v16: usize = sub(at_15, 1_usize)
                goto block2()
            block2():
                R v17: String = getitem(names_0, v16)
                R v18: &mut String = same_as(v17)
                R format write!("!")(v18)  [gray call]
                return at_15
        "#]],
    );
}

#[test]
fn a_string_appended_to_where_computing_it_has_effects_is_refused_not_computed_twice() {
    check(
        "fn next(at: &mut usize) -> usize {
    *at += 1;
    *at - 1
}
fn f(names: &mut Vec<String>, t: String) -> usize {
    let mut at = 0;
    names[next(&mut at)] += &t;
    at
}",
        expect![[r#"
            left to Rust: f
                7:5: `+=` on a `String` whose place is computed with effects is not supported in a #[jit_interpreter] function; bind it first (`let s = &mut names[next()]; *s += ..`), or call `push_str`
        "#]],
    );
}

#[test]
fn a_number_made_text_is_popped_once() {
    check(
        "fn f(mut v: Vec<i64>) -> String {
    v.pop().unwrap().to_string()
}",
        expect![[r#"
            fn f -> String
            block0(v_0: Vec<i64> red):
                R v1: Option<i64> = pop(v_0)
                R v2: i64 = unwrap(v1)
                R v3: String = format format!("{}")(v2)
                return v3
        "#]],
    );
}

#[test]
fn an_operator_on_a_type_of_the_module_calls_its_impl() {
    check(
        "#[derive(Clone, Copy)]
enum V { I(i64), B(bool) }
impl std::ops::Add for V {
    type Output = Option<V>;
    fn add(self, o: V) -> Option<V> { match (self, o) { (V::I(a), V::I(b)) => Some(V::I(a + b)), _ => None } }
}
impl std::ops::Neg for V {
    type Output = V;
    fn neg(self) -> V { self }
}
fn f(a: V, b: V) -> Option<V> { let s = (a + b)?; Some(-s) }",
        expect![[r#"
            fn f -> Option<V>
            block0(a_0: V red, b_1: V red):
                R v2: Option<V> = call V::add(a_0, b_1)  [red call]
                R v3: u32 = enum_tag(v2)
                R v4: bool = eq(v3, Option::None)
                if v4 then block1() else block2()
            block1():
                G v5: Option<V> = Option::None()
                return v5
            block2():
                R s_6: V = enum_field.Some.0(v2)
                R v7: V = call V::neg(s_6)  [red call]
                R v8: Option<V> = Option::Some(v7)
                return v8

            fn V::add -> Option<V>
            block0(self_0: V red, o_1: V red):
                R v7: u32 = enum_tag(self_0)
                R v8: bool = eq(v7, V::I)
                if v8 then block3() else block2()
            block1(v4: Option<V> red):
                return v4
            block2():
                G v16: Option<V> = Option::None()
                goto block1(v16)
            block3():
                R a_9: i64 = enum_field.I.0(self_0)
                R v10: u32 = enum_tag(o_1)
                R v11: bool = eq(v10, V::I)
                if v11 then block4() else block2()
            block4():
                R b_12: i64 = enum_field.I.0(o_1)
                R v13: i64 = add(a_9, b_12)
                R v14: V = V::I(v13)
                R v15: Option<V> = Option::Some(v14)
                goto block1(v15)

            fn V::neg -> V
            block0(self_0: V red):
                return self_0
        "#]],
    );
}

/// A tuple struct of the module destructured by a pattern (`let P(a, ..) =
/// p;`) reads its fields, as a struct pattern does.
#[test]
fn a_tuple_struct_pattern_reads_its_fields() {
    check(
        "#[derive(Clone, Copy)]
struct P(i64, bool, i64);
fn f(p: P) -> i64 { let P(a, .., c) = p; let P(_, b, _) = p; if b { a } else { c } }",
        expect![[r#"
            fn f -> i64
            block0(p_0: P red):
                R v1: i64 = getfield.0(p_0)
                R v2: bool = getfield.1(p_0)
                R v3: i64 = getfield.2(p_0)
                R v4: P = new.P(v1, v2, v3)
                R a_5: i64 = getfield.0(v4)
                R c_6: i64 = getfield.2(v4)
                R v7: i64 = getfield.0(p_0)
                R v8: bool = getfield.1(p_0)
                R v9: i64 = getfield.2(p_0)
                R v10: P = new.P(v7, v8, v9)
                R b_11: bool = getfield.1(v10)
                if b_11 then block1(a_5) else block1(c_6)
            block1(v16: i64 red):
                return v16
        "#]],
    );
}
