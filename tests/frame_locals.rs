//! The stack VM whose frames own their locals (`interpreters/framevm`:
//! `Vec<StackFrame>` with a `locals: Vec<i64>` in each frame, filled from
//! the operand stack at each call, the operand stack a field of the machine
//! that every call shares). Every result and error is
//! compared with `jit::plain`, through the portal and through
//! `jit::specialize`; recursion (fibonacci, Ackermann, mutual, 100,000 levels
//! deep, errors at the bottom) and random programs with calls.

mod common;

use framevm_interp::programs::{ackermann, down, even_odd, fib, sums};
use framevm_interp::vm::{jit, Error, Machine, Op, Op::*};

fn plain(code: &[Op]) -> Result<i64, Error> {
    jit::plain::Machine::run(&mut Machine::new(code.to_vec()))
}

fn portal(code: &[Op]) -> Result<i64, Error> {
    Machine::new(code.to_vec()).run()
}

fn specialized(code: &[Op]) -> Result<i64, Error> {
    jit::specialize::Machine::run(&mut Machine::new(code.to_vec()))
}

#[test]
fn recursive_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut programs: Vec<(String, Vec<Op>)> = vec![];
    for n in 0..=18 {
        programs.push((format!("fib({n})"), fib(n)));
    }
    for (m, n) in [(0, 0), (1, 3), (2, 3), (3, 3)] {
        programs.push((format!("ack({m}, {n})"), ackermann(m, n)));
    }
    for n in [0, 1, 7, 1000] {
        programs.push((format!("even({n})"), even_odd(n)));
    }
    for n in [0, 5, 1000] {
        programs.push((format!("sums({n})"), sums(n)));
    }
    for (n, bottom) in [(0, 0), (10, 0), (100_000, 0), (100_000, 1), (3, 2)] {
        programs.push((format!("down({n}), local {bottom} at the bottom"), down(n, bottom)));
    }
    programs.push(("a call with too few values".into(), vec![Const(1), CallInOrder(3, 2), Halt, Return]));
    programs.push(("a return with no frame left".into(), vec![Return, Return]));
    for (name, code) in &programs {
        let want = plain(code);
        assert_eq!(portal(code), want, "{name}");
        assert_eq!(specialized(code), want, "{name}, specialized");
    }
    assert_eq!(plain(&fib(18)), Ok(2584));
    assert_eq!(plain(&ackermann(3, 3)), Ok(61));
    assert_eq!(plain(&even_odd(7)), Ok(0));
    assert_eq!(plain(&down(100_000, 0)), Ok(5_000_050_000));
    assert_eq!(plain(&down(100_000, 1)), Err(Error::BadLocal));
    assert_eq!(plain(&sums(5)), Ok(15));
    let s = jit::stats();
    assert!(s.entries > 0 && s.spills > 0, "{s:?}");
}

/// Random procedures of one or two arguments that call each other (and
/// themselves) on their first argument minus one while it is positive, with
/// instructions between the calls that change only the running value on
/// top; some read a local the frame may not have (an error as deep as the
/// recursion goes).
fn random_recursive_program(rng: &mut common::Rng) -> Vec<Op> {
    let nprocs = 1 + rng.below(3) as usize;
    let argcs: Vec<usize> = (0..nprocs).map(|_| 1 + rng.below(2) as usize).collect();
    let mut bodies: Vec<Vec<(Op, Option<usize>)>> = vec![];
    for _ in 0..nprocs {
        let mut b = vec![(Const(rng.below(9) as i64), None)];
        for _ in 0..rng.below(3) {
            let callee = rng.below(nprocs as u64) as usize;
            // The callee's arguments: the depth minus one, then anything.
            b.extend([(GetLocal(0), None), (Const(1), None), (Sub, None)]);
            if argcs[callee] == 2 {
                b.push((Const(rng.below(9) as i64 - 4), None));
            }
            b.push((Return, Some(callee)));
            b.push((Add, None));
            if rng.below(3) == 0 {
                let first = match rng.below(3) {
                    0 => GetLocal(rng.below(3) as usize),
                    _ => Const(rng.below(9) as i64 - 4),
                };
                b.push((first, None));
                b.push(([Add, Sub, Less, Eq][rng.below(4) as usize], None));
            }
        }
        b.push((Return, None));
        bodies.push(b);
    }
    // Each procedure: `GetLocal(0), Const(0), Less, JumpIfFalse(body)`, the
    // base case `Const(c), Return`, then its body. Arguments in order when
    // two (local 0 is the depth either way).
    let mut starts = vec![];
    let mut at = 4;
    for b in &bodies {
        starts.push(at);
        at += 6 + b.len();
    }
    let call = |k: usize, at: usize| if argcs[k] == 2 { CallInOrder(at, 2) } else { Call(at, 1) };
    let mut code = vec![Const(rng.below(9) as i64), Const(rng.below(5) as i64), call(0, starts[0]), Halt];
    if argcs[0] == 1 {
        code[1] = Const(rng.below(9) as i64);
        code[0] = Const(0);
    }
    for (k, b) in bodies.iter().enumerate() {
        code.extend([GetLocal(0), Const(1), Less, JumpIfFalse(starts[k] + 6), Const(rng.below(5) as i64), Return]);
        for (op, callee) in b {
            code.push(match callee {
                Some(j) => call(*j, starts[*j]),
                None => *op,
            });
        }
    }
    code
}

#[test]
fn random_recursive_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_1ca1);
    let (mut calls, mut failed) = (0, 0);
    for _ in 0..common::how_many(300) {
        let code = random_recursive_program(&mut rng);
        let want = plain(&code);
        calls += code.iter().filter(|op| matches!(op, Call(..) | CallInOrder(..))).count();
        failed += want.is_err() as u32;
        assert_eq!(portal(&code), want, "{code:?}");
        assert_eq!(specialized(&code), want, "{code:?}");
    }
    assert!(calls > 300 && failed > 0, "{calls} calls, {failed} failed");
}

/// Recursions under the default policy, run a few times each, as an
/// embedder runs them: the frames' locals stay virtual in compiled code (a
/// `Vec` allocated per call made Ackermann 2-3x slower than the
/// interpreter), and what compiles stays bounded (the operand stack's
/// length in the key, or a piece per constant an argument took, made
/// hundreds of compilations). A child process: the counts are the module's.
#[test]
fn recursions_compile_a_bounded_amount_of_code() {
    let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["child_recursions_compile_a_bounded_amount_of_code", "--exact", "--ignored", "--nocapture"])
        .env("JITGEN_THRESHOLD", "50")
        .status()
        .expect("the child runs");
    assert!(status.success());
}

#[test]
#[ignore = "run by recursions_compile_a_bounded_amount_of_code in a child process"]
fn child_recursions_compile_a_bounded_amount_of_code() {
    for (name, code) in [("fib(18)", fib(18)), ("ack(2, 40)", ackermann(2, 40)), ("ack(3, 4)", ackermann(3, 4))] {
        let want = plain(&code);
        let mut machine = Machine::new(code.clone());
        for _ in 0..4 {
            machine.restart();
            assert_eq!(machine.run(), want, "{name}");
        }
        let s = jit::stats();
        assert!(s.entries > 0, "{name}: {s:?} {:?}", jit::last_decline());
        assert!(s.compilations <= 80, "{name}: {s:?}");
        let listings = jit::portal_listings().join("\n");
        assert!(!listings.contains("vec_new_repeat"), "{name}: a frame's locals allocated:\n{listings}");
    }
}
