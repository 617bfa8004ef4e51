//! The interpreter whose calls recurse in Rust (`interpreters/recursive`):
//! its portal calls itself once per call of the interpreted program (the
//! second of the two styles of calls an interpreter has). A call of the portal in compiled code calls the
//! code of the called function directly, never inlined. Random programs
//! with calls, mutual recursion, loops in callees, helpers given the stack
//! by `&mut`, and errors raised deep inside recursion agree with
//! `jit::plain`.

use crate::common;

/// Runs the method portal (`Machine::run`) and its plain copy on fresh
/// machines: the results and the machines' counts must agree.
fn machine_agrees(program: &[rec::Function], arg: i64, what: &str) {
    let fresh = || rec::Machine { calls: 0, depth: 0, deepest: 0 };
    let (mut m, mut plain) = (fresh(), fresh());
    let before = rec::jit::stats();
    let want = rec::jit::plain::Machine::run(&mut plain, program, 0, arg);
    // Plain all the way down: its calls of itself too.
    let after = rec::jit::stats();
    assert_eq!((after.compilations, after.entries), (before.compilations, before.entries), "{what}: plain");
    // The method's result is the function's.
    assert_eq!(want, rec::jit::plain::call(program, 0, arg), "{what}: the method runs the same language");
    assert_eq!(m.run(program, 0, arg), want, "{what}: the method");
    assert_eq!((m.calls, m.depth, m.deepest), (plain.calls, plain.depth, plain.deepest), "{what}: the machine");
}

use rec::Op::*;
use recursive_interp::programs::{down, fib, loop_in_callee, mutual};
use recursive_interp::rec;

/// A random function of `n` functions: a few statements on local 0 (the
/// result), each a mix, a call of a random function on `arg - d` when
/// `arg >= d` (so recursion, mutual or not, ends), a loop of `arg` turns,
/// or a test that fails.
fn random_function(rng: &mut common::Rng, n: usize) -> rec::Function {
    let mut code = vec![Const(rng.below(100) as i64), Set(0)];
    for _ in 0..1 + rng.below(4) {
        match rng.below(8) {
            0 => {
                let op = [Add, Sub, Mul][rng.below(3) as usize];
                code.extend([Get(0), Const(rng.below(50) as i64 - 20), op, Set(0)]);
            }
            1 | 2 => {
                let d = 1 + rng.below(2) as i64;
                let g = rng.below(n as u64) as usize;
                let at = code.len();
                // if !(arg < d) { r = r + g(arg - d) }
                code.extend([Arg, Const(d), Lt, JumpIfZero(at + 5), Jump(at + 13)]);
                code.extend([Get(0), Arg, Const(d), Sub, Call(g), Add, Set(0), Jump(at + 13)]);
            }
            3 => {
                let at = code.len();
                // i = arg; while 0 < i { r = r * 3 + i; i -= 1 }
                code.extend([Arg, Set(1)]);
                code.extend([Const(0), Get(1), Lt, JumpIfZero(at + 18)]);
                code.extend([Get(0), Const(3), Mul, Get(1), Add, Set(0)]);
                code.extend([Get(1), Const(1), Sub, Set(1), Jump(at + 2)]);
                code.push(Jump(at + 18));
            }
            4 => code.extend([Get(0), FailIf(rng.below(64) as i64)]),
            // The helpers that take the stack by `&mut`: r = r + c * (k + 1),
            // r - c, r + 1; an underflow deep inside sometimes.
            5 => {
                let k = rng.below(4) as usize;
                let extra = (rng.below(12) == 0) as usize * 3;
                code.extend([Get(0), Const(rng.below(9) as i64), Dup(k), Sum(k + 2 + extra), Set(0)]);
            }
            6 => code.extend([Get(0), Const(rng.below(9) as i64), Twice, Sub, Set(0)]),
            _ => code.extend([Get(0), Count, Add, Set(0)]),
        }
    }
    code.extend([Get(0), Ret]);
    rec::Function { code }
}

/// The module's counters are the process's: the tests that read them run
/// one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` in a thread with room for deep recursion of unoptimized frames.
fn with_deep_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(256 << 20).spawn(f).unwrap().join().unwrap();
}

#[test]
fn calls_that_recurse_in_rust_agree_with_plain() {
    let _serial = serial();
    with_deep_stack(calls_that_recurse_in_rust);
}

fn calls_that_recurse_in_rust() {
    rec::jit::config().set_threshold(0);
    let p = fib();
    let specialized = rec::jit::specialize::call(&p, 0);
    for n in 0..22 {
        let want = rec::jit::plain::call(&p, 0, n);
        assert_eq!(rec::call(&p, 0, n), want, "fib({n})");
        assert_eq!(specialized.call(n), want, "fib({n}), specialized");
        machine_agrees(&p, n, &format!("fib({n})"));
    }
    assert_eq!(rec::call(&fib(), 0, 20), Ok(6765));
    // Deep recursion: 2000 levels of Rust frames, as plain makes them.
    let p = loop_in_callee();
    let specialized = rec::jit::specialize::call(&p, 0);
    for n in [0, 1, 5, 300, 2000] {
        let want = rec::jit::plain::call(&p, 0, n);
        assert_eq!(rec::call(&p, 0, n), want, "loop in callee, {n}");
        assert_eq!(specialized.call(n), want, "loop in callee, {n}, specialized");
    }
    // The callee's loop compiled, and ran.
    let s = rec::jit::stats();
    assert!(s.entries > 0 && s.compilations > s.declined, "{s:?}");
    // The portal's call of itself is a residual call of the portal, not
    // inlined (inlined, compiling fib unrolled the interpreted recursion
    // until the compiler's budget ran out, then declined): compiled code
    // calls the portal specialized to the called function directly.
    let text = rec::jit::graphs().function("call").unwrap().to_text();
    assert!(text.contains("call_opaque call(program"), "{text}");
    assert!(specialized.listing().contains("call call (direct)"), "{}", specialized.listing());
    // The operand stack and the locals stay virtual, `pop(&mut stack)` and
    // all: a helper given the list by `&mut` works on it by value and
    // writes it back.
    assert!(!specialized.listing().contains("vec_"), "{}", specialized.listing());
    // Bad bytecode: the same error at any depth.
    let bad = vec![rec::Function { code: vec![Arg, Call(1), Ret] }, rec::Function { code: vec![Add, Ret] }];
    assert_eq!(rec::call(&bad, 0, 3), Err(rec::Trap::Underflow));
}

#[test]
fn compiled_code_calls_compiled_code_directly() {
    let _serial = serial();
    // A fresh thread: its own code and direct entries.
    std::thread::spawn(|| {
        rec::jit::config().set_threshold(0);
        let before = rec::jit::stats();
        let p = fib();
        for n in [15, 20, 22, 18] {
            assert_eq!(rec::call(&p, 0, n), rec::jit::plain::call(&p, 0, n), "fib({n})");
        }
        let s = rec::jit::stats();
        assert_eq!(s.declined, before.declined, "{s:?}");
        // The loop the portal entered, and fib specialized once, whose
        // recursive calls call that same code: not a compilation per call
        // or per depth.
        let compiled = s.compilations - before.compilations;
        assert!((2..=4).contains(&compiled), "{compiled} compilations: {s:?}");
        let listings = rec::jit::portal_listings().join("\n");
        assert!(listings.contains("call call (direct)"), "{listings}");
        // Native calls of the callee's code where it has some.
        assert!(listings.contains("call_code"), "{listings}");
        // The method: its calls of itself are direct calls too.
        let before = rec::jit::stats();
        for n in [15, 20, 22] {
            machine_agrees(&p, n, &format!("the method, fib({n})"));
        }
        let s = rec::jit::stats();
        assert_eq!(s.declined, before.declined, "{s:?}");
        assert!((1..=4).contains(&(s.compilations - before.compilations)), "{s:?}");
        let listings = rec::jit::portal_listings().join("\n");
        assert!(listings.contains("call __Machine_run (direct)"), "{listings}");
        // A mutual recursion: each function compiled once.
        let before = rec::jit::stats();
        let p = mutual();
        for n in [0, 1, 7, 300, 40] {
            assert_eq!(rec::call(&p, 0, n), rec::jit::plain::call(&p, 0, n), "mutual({n})");
        }
        let s = rec::jit::stats();
        assert_eq!(s.declined, before.declined, "{s:?}");
        assert!(s.compilations - before.compilations <= 5, "{s:?}");
    })
    .join()
    .unwrap();
}

/// The message of the panic `f` raises.
fn panic_message<T: std::fmt::Debug>(f: impl FnOnce() -> T) -> String {
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("a panic");
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
fn a_panic_deep_inside_compiled_calls_is_the_interpreters() {
    let _serial = serial();
    std::thread::spawn(|| {
        rec::jit::config().set_threshold(0);
        // Function 1 recurses down to 0, then jumps out of its code.
        let p = vec![
            rec::Function { code: vec![Arg, Call(1), Ret] },
            rec::Function { code: vec![Arg, JumpIfZero(8), Arg, Const(1), Sub, Call(1), Ret, Ret, Jump(40)] },
        ];
        let want = panic_message(|| rec::jit::plain::call(&p, 0, 30));
        assert!(want.contains("index out of bounds"), "{want}");
        for _ in 0..3 {
            assert_eq!(panic_message(|| rec::call(&p, 0, 30)), want);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn recursion_in_rust_a_hundred_thousand_deep_agrees_with_plain() {
    let _serial = serial();
    // Plain's Rust frames for 100,000 levels (unoptimized, they are large).
    std::thread::Builder::new()
        .stack_size(2 << 30)
        .spawn(|| {
            rec::jit::config().set_threshold(0);
            for fail in [false, true] {
                let p = down(fail);
                let want = rec::jit::plain::call(&p, 0, 100_000);
                assert_eq!(want, if fail { Err(rec::Trap::Fail(0)) } else { Ok(5_000_050_000) });
                // The compiled calls nest only within the stack budget;
                // deeper, the plain interpreter's frames, as plain.
                assert_eq!(rec::call(&p, 0, 100_000), want, "fail: {fail}");
                assert_eq!(rec::call(&p, 0, 100_000), want, "fail: {fail}, again");
                assert_eq!(rec::jit::specialize::call(&p, 0).call(100_000), want, "fail: {fail}, specialized");
                assert_eq!(rec::call(&p, 0, 50), rec::jit::plain::call(&p, 0, 50));
                machine_agrees(&p, 100_000, &format!("the method, fail: {fail}"));
                machine_agrees(&p, 100_000, &format!("the method, fail: {fail}, again"));
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn random_programs_with_calls_that_recurse_in_rust_agree_with_plain() {
    let _serial = serial();
    rec::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x0c0f_fee5_2400_0024);
    let mut failed = 0;
    for _ in 0..common::how_many(150) {
        let n = 1 + rng.below(4) as usize;
        let program: Vec<rec::Function> = (0..n).map(|_| random_function(&mut rng, n)).collect();
        let specialized = rec::jit::specialize::call(&program, 0);
        for arg in [0, 1, 3, 4 + rng.below(4) as i64] {
            let want = rec::jit::plain::call(&program, 0, arg);
            failed += want.is_err() as u32;
            let codes: Vec<&Vec<rec::Op>> = program.iter().map(|f| &f.code).collect();
            assert_eq!(rec::call(&program, 0, arg), want, "arg {arg}, {codes:?}");
            assert_eq!(specialized.call(arg), want, "arg {arg}, specialized, {codes:?}");
            machine_agrees(&program, arg, &format!("arg {arg}, {codes:?}"));
        }
    }
    // Errors were raised, some of them deep inside recursion.
    assert!(failed > 0);
}

/// An interpreter whose calls take their arguments as a slice.
#[jitgen::jit_interpreter]
pub mod sl {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Op {
        Arg(usize),
        Const(i64),
        Add,
        Sub,
        Lt,
        JumpIfZero(usize),
        /// Calls function `g` on the top `n` values.
        Call(usize, usize),
        Ret,
        /// Leaves the top as it is, made a constant of compiled code.
        Promote,
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Trap {
        Underflow,
    }

    pub struct Function {
        pub code: Vec<Op>,
    }

    fn pop(stack: &mut Vec<i64>) -> Result<i64, Trap> {
        stack.pop().ok_or(Trap::Underflow)
    }

    pub fn call(program: &[Function], f: usize, args: &[i64]) -> Result<i64, Trap> {
        let code = &program[f].code;
        let mut stack: Vec<i64> = Vec::new();
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Arg(i) => stack.push(args[i]),
                Op::Const(c) => stack.push(c),
                Op::Add => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_add(b));
                }
                Op::Sub => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_sub(b));
                }
                Op::Lt => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push((a < b) as i64);
                }
                Op::JumpIfZero(t) => {
                    if pop(&mut stack)? == 0 {
                        pc = t;
                    }
                }
                Op::Call(g, n) => {
                    // The arguments in order: the first is deepest.
                    let mut args: Vec<i64> = vec![0; n];
                    for k in 0..n {
                        args[n - 1 - k] = pop(&mut stack)?;
                    }
                    let r = call(program, g, &args)?;
                    stack.push(r);
                }
                Op::Ret => return pop(&mut stack),
                Op::Promote => {
                    let v = pop(&mut stack)?;
                    stack.push(hint!(v, promote));
                }
            }
        }
    }

    /// Runs `code` (no calls) on arguments given by value, as a `Vec` not
    /// declared `mut`.
    pub fn run_owned(code: &[Op], args: Vec<i64>) -> Result<i64, Trap> {
        let mut stack: Vec<i64> = Vec::new();
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Arg(i) => stack.push(args[i]),
                Op::Const(c) => stack.push(c),
                Op::Add => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_add(b));
                }
                Op::JumpIfZero(t) => {
                    if pop(&mut stack)? == 0 {
                        pc = t;
                    }
                }
                Op::Ret => return pop(&mut stack),
                _ => return Err(Trap::Underflow),
            }
        }
    }
}

#[test]
fn a_portal_taking_a_vec_by_value_agrees_with_plain() {
    use sl::Op::*;
    let _serial = serial();
    std::thread::spawn(|| {
        sl::jit::config().set_threshold(0);
        // args[0] == 0 ? args[1] + args[2] : args[1] + 7, or a read past the arguments.
        let code = [Arg(0), JumpIfZero(6), Arg(1), Const(7), Add, Ret, Arg(1), Arg(2), Add, Ret];
        for args in [vec![0, 5, 1], vec![3, 1, 2], vec![0, 2, 3], vec![1, 2]] {
            for _ in 0..3 {
                assert_eq!(
                    sl::run_owned(&code, args.clone()),
                    sl::jit::plain::run_owned(&code, args.clone()),
                    "{args:?}"
                );
            }
        }
        assert_eq!(
            panic_message(|| sl::run_owned(&code, vec![0])),
            panic_message(|| sl::jit::plain::run_owned(&code, vec![0]))
        );
    })
    .join()
    .unwrap();
}

/// A callee that hands over to the interpreter inside a native call:
/// compiled code calls `h` directly, `h`'s switch (one case at most) meets
/// another value, and the direct call's failure hook finishes `h` in the
/// interpreter; its caller goes on in compiled code.
#[test]
fn a_callee_handing_over_inside_a_native_call_returns_to_compiled_code() {
    use sl::Op::*;
    let _serial = serial();
    std::thread::spawn(|| {
        sl::jit::config().set_threshold(0);
        sl::jit::config().set_max_cases(1);
        // h(n) = promote(n) + 1; f(n) = n == 0 ? 0 : h(n) + f(n - 1).
        let h = sl::Function { code: vec![Arg(0), Promote, Const(1), Add, Ret] };
        let f = sl::Function {
            code: vec![
                Arg(0),
                JumpIfZero(10),
                Arg(0),
                Call(0, 1),
                Arg(0),
                Const(1),
                Sub,
                Call(1, 1),
                Add,
                Ret,
                Const(0),
                Ret,
            ],
        };
        let p = vec![h, f];
        let before = sl::jit::stats();
        for n in [5, 60, 100] {
            for _ in 0..3 {
                assert_eq!(sl::call(&p, 1, &[n]), sl::jit::plain::call(&p, 1, &[n]), "f({n})");
            }
        }
        assert_eq!(sl::call(&p, 1, &[100]), Ok(100 * 101 / 2 + 100));
        let s = sl::jit::stats();
        assert_eq!(s.declined, before.declined, "{s:?} {:?}", sl::jit::last_decline());
        assert!(s.resumptions > before.resumptions + 100, "{s:?}");
        sl::jit::config().set_max_cases(16);
    })
    .join()
    .unwrap();
}

#[test]
fn calls_passing_their_arguments_as_a_slice_agree_with_plain() {
    use sl::Op::*;
    let _serial = serial();
    std::thread::spawn(|| {
        sl::jit::config().set_threshold(0);
        // f(a, b) = a < 1 ? b : f(a - 1, b + a), and fib(n) through it:
        // g(n) = n < 2 ? n : g(n - 1) + f(n - 2, 0) - f(n - 2, 0) + g(n - 2).
        let f = sl::Function {
            code: vec![
                Arg(0),
                Const(1),
                Lt,
                JumpIfZero(6),
                Arg(1),
                Ret,
                Arg(0),
                Const(1),
                Sub,
                Arg(1),
                Arg(0),
                Add,
                Call(0, 2),
                Ret,
            ],
        };
        let g = sl::Function {
            code: vec![
                Arg(0),
                Const(2),
                Lt,
                JumpIfZero(6),
                Arg(0),
                Ret,
                Arg(0),
                Const(1),
                Sub,
                Call(1, 1),
                Arg(0),
                Const(2),
                Sub,
                Const(0),
                Call(0, 2),
                Add,
                Arg(0),
                Const(2),
                Sub,
                Const(0),
                Call(0, 2),
                Sub,
                Arg(0),
                Const(2),
                Sub,
                Call(1, 1),
                Add,
                Ret,
            ],
        };
        // A function reading an argument it was not given.
        let bad = sl::Function { code: vec![Arg(0), Call(3, 1), Ret] };
        let reads_past = sl::Function { code: vec![Arg(1), Ret] };
        let p = vec![f, g, bad, reads_past];
        for (fun, args) in [(0, vec![10, 5]), (1, vec![18]), (1, vec![1]), (0, vec![0, 3])] {
            for _ in 0..3 {
                assert_eq!(sl::call(&p, fun, &args), sl::jit::plain::call(&p, fun, &args), "{fun} {args:?}");
            }
        }
        assert_eq!(sl::call(&p, 1, &[18]), Ok(2584));
        let s = sl::jit::stats();
        assert_eq!(s.declined, 0, "{s:?} {:?}", sl::jit::last_decline());
        assert!(sl::jit::portal_listings().join("\n").contains("call_code"));
        // Reading past the slice: plain's panic, from compiled code too.
        let want = panic_message(|| sl::jit::plain::call(&p, 2, &[4]));
        for _ in 0..3 {
            assert_eq!(panic_message(|| sl::call(&p, 2, &[4])), want);
        }
        // A recursion that promotes its argument, with one case per switch:
        // other values hand over to the interpreter in the middle of calls
        // that compiled code made, and the results still agree.
        let h = sl::Function {
            code: vec![
                Arg(0),
                Promote,
                Const(1),
                Lt,
                JumpIfZero(6),
                Arg(0),
                Ret,
                Arg(0),
                Const(1),
                Sub,
                Call(4, 1),
                Arg(0),
                Add,
                Ret,
            ],
        };
        let p = vec![
            p.into_iter().next().unwrap(),
            sl::Function { code: vec![] },
            sl::Function { code: vec![] },
            sl::Function { code: vec![] },
            h,
        ];
        sl::jit::config().set_max_cases(1);
        let before = sl::jit::stats();
        for n in [3, 40, 100, 7] {
            for _ in 0..3 {
                assert_eq!(sl::call(&p, 4, &[n]), sl::jit::plain::call(&p, 4, &[n]), "h({n})");
            }
        }
        let s = sl::jit::stats();
        assert!(s.resumptions > before.resumptions, "hand-overs inside callees: {s:?}");
        sl::jit::config().set_max_cases(16);
    })
    .join()
    .unwrap();
}
