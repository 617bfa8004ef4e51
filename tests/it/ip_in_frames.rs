//! The stack VM whose frames hold their function and instruction pointer
//! (`interpreters/funcvm`: a table of functions, `Vec<Frame>` with the
//! function, `ip` and base of each, one shared operand stack; the dispatch
//! loop promotes the top frame's function and `ip`). Every result and error
//! is compared with `jit::plain`, through the portal and through
//! `jit::specialize`: recursion (fibonacci, Ackermann, mutual, 100,000
//! levels deep, errors at the bottom), a loop calling a function, and
//! random programs of functions calling each other.

use crate::common;

use funcvm_interp::programs::{ackermann, down, even_odd, fib, sum_of_squares};
use funcvm_interp::vm::{jit, Error, Function, Op, Op::*, Vm};

fn run_with(functions: &[Function], args: &[i64], run: fn(&mut Vm) -> Result<i64, Error>) -> Result<i64, Error> {
    let mut vm = Vm::new(functions.to_vec());
    vm.prepare(0, args);
    run(&mut vm)
}

fn plain(f: &[Function], args: &[i64]) -> Result<i64, Error> {
    run_with(f, args, jit::plain::Vm::run)
}

fn portal(f: &[Function], args: &[i64]) -> Result<i64, Error> {
    run_with(f, args, Vm::run)
}

fn specialized(f: &[Function], args: &[i64]) -> Result<i64, Error> {
    run_with(f, args, jit::specialize::Vm::run)
}

/// The result and the machine left behind (see [`common::whole`]).
fn whole(functions: &[Function], args: &[i64], run: fn(&mut Vm) -> Result<i64, Error>) -> (Result<i64, Error>, String) {
    let mut vm = Vm::new(functions.to_vec());
    vm.prepare(0, args);
    common::whole(vm, run)
}

fn one(arity: usize, code: Vec<Op>) -> Vec<Function> {
    vec![Function { arity, code }]
}

#[test]
fn recursive_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut programs: Vec<(String, Vec<Function>, Vec<i64>)> = vec![];
    for n in 0..=if common::deep() { 18 } else { 13 } {
        programs.push((format!("fib({n})"), fib(), vec![n]));
    }
    for (m, n) in [(0, 0), (1, 3), (2, 3), (3, 3)] {
        programs.push((format!("ack({m}, {n})"), ackermann(), vec![m, n]));
    }
    for n in [0, 1, 7, 1000] {
        programs.push((format!("even({n})"), even_odd(), vec![n]));
    }
    for n in [0, 5, 1000] {
        programs.push((format!("sum of squares({n})"), sum_of_squares(), vec![n]));
    }
    for (n, bottom) in [(0, 0), (10, 0), (100_000, 0), (100_000, 1), (3, 2)] {
        programs.push((format!("down({n}), local {bottom} at the bottom"), down(bottom), vec![n]));
    }
    programs.push(("a call of a missing function".into(), one(0, vec![Push(1), Call(7), Ret]), vec![]));
    let too_few =
        vec![Function { arity: 0, code: vec![Call(1), Ret] }, Function { arity: 2, code: vec![Push(0), Ret] }];
    programs.push(("a call with too few values".into(), too_few, vec![]));
    programs.push(("a function without a return".into(), one(0, vec![Push(1)]), vec![]));
    programs.push(("a pop of an empty stack".into(), one(0, vec![Pop, Ret]), vec![]));
    for (name, f, args) in &programs {
        let want = plain(f, args);
        assert_eq!(portal(f, args), want, "{name}");
        assert_eq!(specialized(f, args), want, "{name}, specialized");
    }
    assert_eq!(plain(&fib(), &[18]), Ok(2584));
    assert_eq!(plain(&ackermann(), &[3, 3]), Ok(61));
    assert_eq!(plain(&even_odd(), &[7]), Ok(0));
    assert_eq!(plain(&sum_of_squares(), &[5]), Ok(55));
    assert_eq!(plain(&down(0), &[100_000]), Ok(5_000_050_000));
    assert_eq!(plain(&down(1), &[100_000]), Err(Error::BadLocal(1)));
    let s = jit::stats();
    assert!(s.entries > 0 && s.spills > 0 && s.flexswitch_cases > 0, "{s:?}");
    // A call's `callee` borrowed out of the table of functions is not
    // dropped where its block ends: no callback per call.
    let listings = jit::portal_listings().join("\n");
    assert!(listings.contains("flexswitch") && !listings.contains("call drop("), "{listings}");
}

/// Random functions of one or two arguments that call each other (and
/// themselves) on their first argument minus one while it is positive,
/// with instructions between the calls that change the running value on
/// top, read or write locals the frame may not have, or call a function the
/// program does not have (errors as deep as the recursion goes).
fn random_program(rng: &mut common::Rng) -> (Vec<Function>, Vec<i64>) {
    let n = 1 + rng.below(3) as usize;
    let arities: Vec<usize> = (0..n).map(|_| 1 + rng.below(2) as usize).collect();
    let mut functions = vec![];
    for _ in 0..n {
        // `n < 1`: the base case, else the body at 6.
        let mut code = vec![Load(0), Push(1), Lt, Jz(6), Push(rng.below(5) as i64), Ret];
        code.push(Push(rng.below(9) as i64));
        for _ in 0..rng.below(3) {
            // Now and then a function the program does not have.
            let missing = (rng.below(20) == 0) as u64;
            let callee = rng.below(n as u64 + missing) as u32;
            code.extend([Load(0), Push(1), Sub]);
            if arities.get(callee as usize) == Some(&2) {
                code.push(Push(rng.below(9) as i64 - 4));
            }
            code.extend([Call(callee), Add]);
            match rng.below(4) {
                0 => code.extend([Load(rng.below(3) as u32), [Add, Sub, Mul, Lt][rng.below(4) as usize]]),
                1 => code.extend([Push(rng.below(9) as i64 - 4), [Add, Sub, Mul, Lt][rng.below(4) as usize]]),
                // (Never local 0: the depth, which bounds the recursion.)
                2 if rng.below(3) == 0 => code.extend([Push(rng.below(9) as i64), Store(1 + rng.below(2) as u32)]),
                _ => {}
            }
        }
        code.push(Ret);
        functions.push(Function { arity: 0, code });
    }
    for (f, a) in functions.iter_mut().zip(&arities) {
        f.arity = *a;
    }
    let args = (0..arities[0]).map(|k| if k == 0 { rng.below(9) as i64 } else { rng.below(9) as i64 - 4 }).collect();
    (functions, args)
}

#[test]
fn random_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0xf0c5_1a7e);
    let (mut calls, mut failed) = (0, 0);
    let n = common::how_many(200);
    for _ in 0..n {
        let (f, args) = random_program(&mut rng);
        let want = whole(&f, &args, jit::plain::Vm::run);
        calls += f.iter().flat_map(|f| &f.code).filter(|op| matches!(op, Call(..))).count();
        failed += want.0.is_err() as u32;
        assert_eq!(whole(&f, &args, Vm::run), want, "{f:?} {args:?}");
        assert_eq!(whole(&f, &args, jit::specialize::Vm::run), want, "{f:?} {args:?}");
    }
    assert!(calls > n && failed > 0, "{calls} calls, {failed} failed");
}

/// A recursion whose calls come back to its entry without calling Rust is
/// timed per turn only where every turn counts: its code, entered by many
/// calls in one thread with the first turn check after one turn, stays
/// (`TurnCounter::partial`). Counting only the turns of compilations that
/// call Rust made fib's code seem to take a whole call per turn, and it was
/// retired (a child process: the turn checks are the module's).
#[test]
fn a_recursion_whose_turns_do_not_all_count_keeps_its_code() {
    assert!(common::run_child("child_a_recursion_whose_turns_do_not_all_count", None));
}

#[test]
#[ignore = "run by a_recursion_whose_turns_do_not_all_count_keeps_its_code in a child process"]
fn child_a_recursion_whose_turns_do_not_all_count() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let f = fib();
    for run in 0..40 {
        assert_eq!(whole(&f, &[14], Vm::run), whole(&f, &[14], jit::plain::Vm::run), "run {run}");
    }
    let s = jit::stats();
    assert!(s.entries > 0 && s.retired_slow == 0, "{s:?} {:?}", jit::last_decline());
}
