//! The procedure VM (interpreters/procvm): a stack VM written as a new user
//! wrote one, whose procedures read and write their arguments through the
//! frame's stack offset and return below it. Every run compares the whole
//! final state with `jit::plain`: the operand stack and the output, where
//! `PrintStack` writes the whole stack, the depth and the top frame.

use crate::common;

use procvm_interp::asm::assemble;
use procvm_interp::programs;
use procvm_interp::vm::{interpret, jit, Instruction};
use std::sync::Mutex;

/// What a run leaves: the operand stack and everything printed.
#[derive(Debug, PartialEq)]
struct Final {
    stack: Vec<isize>,
    output: String,
}

fn finished(stack: Vec<isize>, output: Vec<u8>) -> Final {
    Final { stack, output: String::from_utf8(output).expect("the VM prints text") }
}

fn plain(code: &[Instruction]) -> Final {
    let mut out = vec![];
    let stack = jit::plain::interpret(code, &mut out);
    finished(stack, out)
}

fn portal(code: &[Instruction]) -> Final {
    let mut out = vec![];
    let stack = interpret(code, &mut out);
    finished(stack, out)
}

fn specialized(code: &[Instruction]) -> Final {
    let mut out = vec![];
    let stack = jit::specialize::interpret(code).call(&mut out);
    finished(stack, out)
}

/// The threshold is the module's: tests that set it run one at a time.
static THRESHOLD: Mutex<()> = Mutex::new(());

/// Runs `code` through the portal at thresholds 0 and 1000 and through
/// `jit::specialize`; each must leave what plain leaves. Where plain panics
/// (an addition overflows), each must panic too; the result is then None.
fn agree(code: &[Instruction], what: &dyn std::fmt::Display) -> Option<Final> {
    let want = agree_through_portal(code, what);
    let got = std::panic::catch_unwind(|| specialized(code)).ok();
    assert_eq!(got, want, "{what}: specialized");
    want
}

/// [`agree`] through the portal only: `jit::specialize` folds a recursion
/// on constants (`fib(30)`) while compiling, which takes long.
fn agree_through_portal(code: &[Instruction], what: &dyn std::fmt::Display) -> Option<Final> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let want = catch_unwind(|| plain(code)).ok();
    for threshold in [0, 1000] {
        jit::config().set_threshold(threshold);
        let got = catch_unwind(AssertUnwindSafe(|| portal(code))).ok();
        assert_eq!(got, want, "{what}: portal at threshold {threshold}; decline: {:?}", jit::last_decline());
    }
    want
}

#[test]
fn code_after_a_compiled_recursion_runs_once() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let code = assemble(&programs::fib(5, "Push 77\nPush 88")).unwrap();
    let want = agree(&code, &"fib(5); Push 77; Push 88");
    assert_eq!(want, Some(Final { stack: vec![8, 77, 88], output: String::new() }));
    // fib(0) = fib(1) = 1: fib(n) is the (n + 1)th Fibonacci number.
    for (n, fib) in [(25, 121393), (30, 1346269)] {
        let code = assemble(&programs::fib(n, "Push 10\nPrint")).unwrap();
        let want = agree_through_portal(&code, &format!("fib({n}); Push 10"));
        assert_eq!(want, Some(Final { stack: vec![fib, 10], output: "10\n".into() }));
    }
    assert!(jit::stats().entries > 0, "{:?} {:?}", jit::stats(), jit::last_decline());
}

/// The same with the default threshold and its warm-up, in a child process
/// (this test binary again): the threshold of a module cannot be unset.
#[test]
fn code_after_a_compiled_recursion_runs_once_at_the_default_threshold() {
    assert!(common::run_child("child_code_after_a_compiled_recursion_at_the_default_threshold", None));
}

#[test]
#[ignore = "run by code_after_a_compiled_recursion_runs_once_at_the_default_threshold in a child process"]
fn child_code_after_a_compiled_recursion_at_the_default_threshold() {
    for n in [5, 25, 30] {
        let code = assemble(&programs::fib(n, "Push 10")).unwrap();
        // Run again and again, as an embedder runs a program: the later
        // runs use what the earlier ones compiled.
        for _ in 0..4 {
            assert_eq!(portal(&code), plain(&code), "fib({n})");
        }
    }
    assert!(jit::stats().entries > 0, "{:?}", jit::stats());
}

/// With the default policy, a fusion is compiled on the compiler's thread
/// while the pieces it fuses go on running (or, where they ran slower than
/// interpreting, while the calls interpret: `jit::stats().fusion_waits`),
/// and a later entry installs it: every run before, between and after
/// leaves what plain leaves (a child process: the policy is the module's).
#[test]
fn a_fusion_compiled_on_the_compilers_thread_agrees_with_plain() {
    assert!(common::run_child("child_a_fusion_compiled_on_the_compilers_thread", None));
}

#[test]
#[ignore = "run by a_fusion_compiled_on_the_compilers_thread_agrees_with_plain in a child process"]
fn child_a_fusion_compiled_on_the_compilers_thread() {
    let code = assemble(&programs::ackermann(2, 40, "Push 10\nPrint")).unwrap();
    let want = plain(&code);
    let mut after = None;
    // The fusion takes its time on the compiler's thread (a debug build's
    // Cranelift is slow): the runs go on until it is installed.
    let start = std::time::Instant::now();
    let mut run = 0;
    while start.elapsed() < std::time::Duration::from_secs(300) {
        assert_eq!(portal(&code), want, "run {run}: {:?}", jit::stats());
        // Runs on, with the fused code, for as long again.
        match after {
            None if jit::stats().background_fusions > 0 => after = Some(2 * run + 10),
            Some(last) if run >= last => break,
            _ => {}
        }
        run += 1;
    }
    let s = jit::stats();
    eprintln!("{run} runs: {s:?}");
    assert!(s.background_fusions > 0 && s.entries > 0, "{s:?}");
}

/// Random programs whose returns hand over to the interpreter: with one
/// case per flexswitch, a return to a second address goes on in execute
/// mode up to the head of the VM's `while let` loop, whose body holds the
/// merge point, and then in the interpreter proper, with the operand stack
/// (a struct around a `Vec`) given back; it must not run again what
/// compiled code ran (a child process: the limit is the module's).
#[test]
fn random_procedure_programs_handing_over_agree_with_plain() {
    assert!(common::run_child("child_random_procedure_programs_handing_over", None));
}

#[test]
#[ignore = "run by random_procedure_programs_handing_over_agree_with_plain in a child process"]
fn child_random_procedure_programs_handing_over() {
    jit::config().set_max_cases(1);
    let mut rng = common::Rng(0x5eed_5758);
    for _ in 0..common::how_many(500) {
        let source = ProgramWriter::program(rng.next());
        let code = assemble(&source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        agree(&code, &source);
    }
    for n in [5, 12] {
        let code = assemble(&programs::fib(n, "Push 77\nPush 88")).unwrap();
        agree(&code, &format!("fib({n})"));
    }
    let s = jit::stats();
    assert!(s.resumptions > 0 && s.parked > 0 && s.spills > 0, "{s:?}");
}

/// Random programs whose flexswitch misses find the call's budget for
/// cases spent (`Config::set_case_budget`, empty here): each miss hands
/// over, and the portal call interprets instead of entering its code again
/// (to its end: these calls are too short to earn the budget back; a child
/// process: the budget is the module's).
#[test]
fn random_procedure_programs_past_the_case_budget_agree_with_plain() {
    assert!(common::run_child("child_random_procedure_programs_past_the_case_budget", None));
}

#[test]
#[ignore = "run by random_procedure_programs_past_the_case_budget_agree_with_plain in a child process"]
fn child_random_procedure_programs_past_the_case_budget() {
    jit::config().set_case_budget(Some(std::time::Duration::ZERO));
    let mut rng = common::Rng(0x5eed_b0d9);
    for _ in 0..common::how_many(300) {
        let source = ProgramWriter::program(rng.next());
        let code = assemble(&source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        agree(&code, &source);
    }
    for n in [5, 12, 20] {
        let code = assemble(&programs::fib(n, "Push 77\nPush 88")).unwrap();
        agree(&code, &format!("fib({n})"));
    }
    let s = jit::stats();
    assert!(s.cases_put_off > 0 && s.parked > 0, "{s:?}");
}

/// One long call whose budget for cases is spent at its first miss (empty
/// here) hands over and interprets until interpreting has earned the
/// budget room again (`run::case_budget::ROOM`), then enters its code
/// again and compiles cases: a program run as one call (a script) is not
/// left to the interpreter for the rest of its run. Each run is one portal
/// call, so a case compiled at all was compiled after a hand-over in its
/// call (a child process: the budget is the module's).
#[test]
fn a_long_call_past_its_case_budget_enters_its_code_again() {
    assert!(common::run_child("child_a_long_call_past_its_case_budget_enters_its_code_again", None));
}

#[test]
#[ignore = "run by a_long_call_past_its_case_budget_enters_its_code_again in a child process"]
fn child_a_long_call_past_its_case_budget_enters_its_code_again() {
    jit::config().set_threshold(0);
    jit::config().set_case_budget(Some(std::time::Duration::ZERO));
    let code = assemble(&programs::fib(22, "Push 10\nPrint")).unwrap();
    let want = plain(&code);
    let began = std::time::Instant::now();
    assert_eq!(portal(&code), want, "fib(22) through the portal");
    let s = jit::stats();
    // Only a call that runs past ROOM * SHARE (2 ms) earns the budget back.
    assert!(began.elapsed() > std::time::Duration::from_millis(40), "fib(22) ran too fast to show anything");
    assert!(s.cases_put_off > 0 && s.parked > 0, "the budget was spent: {s:?}");
    assert!(s.entries > 1 && s.flexswitch_cases > 1, "the call went back to its code: {s:?}");
    // It hands over at most once per ROOM * SHARE of its time (not at
    // every visit, entering its code only to find the budget spent).
    let most = began.elapsed().as_millis() as u64 / 2 + 2;
    assert!(s.parked <= most, "at most {most} hand-overs: {s:?}");
}

/// Calls deeper than a virtual list of frames holds, through procedures
/// each reached first at that depth (a chain, no recursion), and a mutual
/// recursion: `jit::specialize` puts the frames on the continuation stack
/// where they would overflow the list (it has no interpreter to leave them
/// to), and the code after each return runs once.
#[test]
fn calls_deeper_than_a_virtual_list_agree_with_plain() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let mut chain = String::new();
    for k in 0..7 {
        // p_k(x) = x + p_k+1(x + 1): the callee's result replaces its argument.
        chain.push_str(&format!("Proc p{k}\nGetArg 0\nIncr\nCall p{}\nAdd\nRet\nEnd\n", k + 1));
    }
    chain.push_str("Proc p7\nPush 100\nPrintStack\nSetArg 0\nPop\nRet\nEnd\nPush 1\nCall p0\nPush 5\nPrintStack");
    let code = assemble(&chain).unwrap();
    let want = agree(&code, &chain).expect("no overflow");
    assert_eq!(want.stack, vec![1 + 2 + 3 + 4 + 5 + 6 + 7 + 100, 5]);
    let parity = "Proc even\nGetArg 0\nJLE zero\nPop\nGetArg 0\nDecr\nCall odd\nSetArg 0\nPop\nRet\n\
                  label zero\nPush 1\nSetArg 0\nPop\nRet\nEnd\n\
                  Proc odd\nGetArg 0\nJLE zero2\nPop\nGetArg 0\nDecr\nCall even\nSetArg 0\nPop\nRet\n\
                  label zero2\nPush 0\nSetArg 0\nPop\nRet\nEnd\n\
                  Push 9\nCall even\nPush 77";
    let code = assemble(parity).unwrap();
    assert_eq!(agree(&code, &parity).map(|f| f.stack), Some(vec![0, 77]));
}

#[test]
fn a_loop_over_locals_agrees_with_plain() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let code = assemble(&programs::sum_loop(5000)).unwrap();
    let want = agree(&code, &"sum_loop(5000)");
    assert_eq!(want.map(|f| f.stack), Some(vec![5000 * 5001 / 2]));
}

#[test]
fn the_assembler_refuses_malformed_programs_at_their_line() {
    for (source, message) in [
        ("Push x", "line 1: `x` is not a number"),
        ("Push 1\nFoo", "line 2: unknown instruction `Foo`"),
        ("Jump nowhere", "line 1: no label or procedure `nowhere`"),
        ("Proc f\nRet", "line 1: `Proc` without `End`"),
        ("End", "line 1: `End` without `Proc`"),
        ("label a\nlabel a", "line 2: `a` is defined twice"),
        ("Get -1", "line 1: `-1` is negative"),
        ("Call", "line 1: `Call` needs an operand"),
    ] {
        assert_eq!(assemble(source), Err(message.to_string()), "{source}");
    }
}

/// Writes random programs of the VM's shape in its assembly language:
/// procedures that call themselves and each other (argument 0 is fuel,
/// one less at each call, so every recursion ends), arguments read and
/// written through the frame's offset, locals, loops, forward branches,
/// early returns, and straight-line code after every call. Heights are
/// tracked, so no program pops an empty stack or reads past it.
struct ProgramWriter {
    rng: common::Rng,
    lines: Vec<String>,
    labels: usize,
    /// Per procedure: its arity, and how many values it leaves above its
    /// arguments when it returns.
    procs: Vec<(usize, usize)>,
    /// Calls written so far in the procedure (or main code) being written:
    /// at most two per procedure, so that a call makes at most 2^fuel.
    calls: u32,
}

/// Where a block is written: in a procedure (its arity and what its
/// returns leave) or the main code, inside how many loops and branches.
#[derive(Clone, Copy)]
struct Place {
    arity: Option<usize>,
    leaves: usize,
    calls: bool,
    /// Values below this height may not be consumed: in a loop, its
    /// counter is the one below (and may not be written either).
    floor: usize,
    depth: u32,
    in_loop: bool,
}

impl ProgramWriter {
    fn line(&mut self, s: String) {
        self.lines.push(s);
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("L{}", self.labels)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// Moves the height from `h` to `to` with pushes or pops.
    fn settle(&mut self, h: &mut usize, to: usize) {
        while *h > to {
            self.line("Pop".into());
            *h -= 1;
        }
        while *h < to {
            let k = self.below(7) as isize - 2;
            self.line(format!("Push {k}"));
            *h += 1;
        }
    }

    /// A block starting at height `h` (above the frame's offset) that
    /// ends at height `end` (None: any); returns the height it ends at.
    fn block(&mut self, mut h: usize, place: Place, end: Option<usize>) -> usize {
        let n = self.below(9);
        for _ in 0..n {
            h = self.step(h, place);
        }
        if let Some(end) = end {
            self.settle(&mut h, end);
        }
        h
    }

    fn step(&mut self, mut h: usize, place: Place) -> usize {
        match self.below(20) {
            0 | 1 => {
                let k = self.below(9) as isize - 3;
                self.line(format!("Push {k}"));
                h += 1;
            }
            2 if h > place.floor => {
                self.line("Pop".into());
                h -= 1;
            }
            3 | 4 if h >= place.floor + 2 => {
                let op = if self.below(2) == 0 { "Add" } else { "Sub" };
                self.line(op.into());
                h -= 1;
            }
            5 if h > place.floor => {
                let op = if self.below(2) == 0 { "Incr" } else { "Decr" };
                self.line(op.into());
            }
            6 | 7 if place.arity.is_some() => {
                let i = self.below(place.arity.unwrap() as u64);
                self.line(format!("GetArg {i}"));
                h += 1;
            }
            8 if h > place.floor && place.arity.is_some() => {
                // Argument 0 is the fuel: it only goes down.
                let arity = place.arity.unwrap() as u64;
                if arity > 1 {
                    let i = 1 + self.below(arity - 1);
                    self.line(format!("SetArg {i}"));
                }
            }
            9 if h >= 1 => {
                let i = self.below(h as u64);
                self.line(format!("Get {i}"));
                h += 1;
            }
            10 if h > place.floor => {
                // Any local but a loop's counter (just below the floor).
                let mut i = self.below(h as u64) as usize;
                if place.in_loop && i + 1 == place.floor {
                    i = h - 1;
                }
                self.line(format!("Set {i}"));
            }
            11 if h >= 1 => self.line("Print".into()),
            12 => self.line("PrintStack".into()),
            13..=15 if place.calls && self.calls < 2 && !self.procs.is_empty() => {
                self.calls += 1;
                let q = self.below(self.procs.len() as u64) as usize;
                let (arity, leaves) = self.procs[q];
                // Argument 0, the fuel, is the last pushed (just below the
                // callee's offset).
                for _ in 1..arity {
                    let k = self.below(9) as isize - 3;
                    self.line(format!("Push {k}"));
                }
                match place.arity {
                    Some(_) => self.line("GetArg 0\nDecr".into()),
                    None => {
                        let fuel = self.below(8);
                        self.line(format!("Push {fuel}"));
                    }
                }
                self.line(format!("Call p{q}"));
                h += arity + leaves;
                // Straight-line code after the return.
                for _ in 0..self.below(3) {
                    let k = self.below(5);
                    self.line(format!("Push {k}"));
                    h += 1;
                }
                if self.below(2) == 0 {
                    self.line("PrintStack".into());
                }
            }
            16 | 17 if h > place.floor && place.depth < 2 => {
                // if (top passes) { pop; then } else { pop; else }
                let jump = ["JE", "JNE", "JGT", "JLT", "JGE", "JLE"][self.below(6) as usize];
                let (taken, join) = (self.label(), self.label());
                self.line(format!("{jump} {taken}"));
                self.line("Pop".into());
                let inner = Place { depth: place.depth + 1, ..place };
                self.block(h - 1, inner, Some(h - 1));
                self.line(format!("Jump {join}"));
                self.line(format!("label {taken}"));
                if place.arity.is_some() && self.below(3) == 0 {
                    // An early return.
                    let mut at = h - 1;
                    self.settle(&mut at, place.leaves);
                    self.line("Ret".into());
                } else {
                    self.block(h - 1, inner, Some(h - 1));
                }
                self.line(format!("label {join}"));
                h -= 1;
            }
            18 | 19 if place.depth < 2 && !place.in_loop => {
                // A counted loop: the counter on top, popped at the exit.
                let count = self.below(if place.arity.is_some() { 4 } else { 13 });
                let (head, exit) = (self.label(), self.label());
                self.line(format!("Push {count}\nlabel {head}\nJLE {exit}"));
                let inner = Place {
                    depth: place.depth + 1,
                    floor: h + 1,
                    in_loop: true,
                    calls: place.calls && place.arity.is_none(),
                    ..place
                };
                self.block(h + 1, inner, Some(h + 1));
                self.line(format!("Decr\nJump {head}\nlabel {exit}"));
            }
            _ => {}
        }
        h
    }

    fn program(seed: u64) -> String {
        let mut w = ProgramWriter { rng: common::Rng(seed | 1), lines: vec![], labels: 0, procs: vec![], calls: 0 };
        let nprocs = w.below(4) as usize;
        w.procs = (0..nprocs).map(|_| (1 + w.below(3) as usize, w.below(3) as usize)).collect();
        for (k, &(arity, leaves)) in w.procs.clone().iter().enumerate() {
            let base = w.label();
            w.line(format!("Proc p{k}\nGetArg 0\nJLE {base}\nPop"));
            w.calls = 0;
            let place = Place { arity: Some(arity), leaves, calls: true, floor: 0, depth: 0, in_loop: false };
            w.block(0, place, Some(leaves));
            w.line(format!("Ret\nlabel {base}"));
            w.block(0, Place { calls: false, ..place }, Some(leaves));
            w.line("Ret\nEnd".into());
        }
        let main = Place { arity: None, leaves: 0, calls: true, floor: 0, depth: 0, in_loop: false };
        w.calls = 0;
        let h = w.block(0, main, None);
        for _ in 0..w.below(3) {
            w.line(format!("Push {h}"));
        }
        if w.below(2) == 0 {
            w.line("PrintStack".into());
        }
        w.lines.join("\n")
    }
}

/// Random programs of the VM's shape agree with plain in their whole final
/// state, through the portal at thresholds 0 and 1000 and through
/// `jit::specialize`. `JITGEN_RANDOM_PROGRAMS` sets how many. Their returns
/// reach switches knowing different facts, so some cases resume their
/// state with its facts forgotten (`cases_forgetting`).
#[test]
fn random_procedure_programs_agree_with_plain() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let forgetting = jit::stats().cases_forgetting;
    let mut rng = common::Rng(0x5eed_5757);
    let (mut recursed, mut panicked, n) = (0, 0, common::how_many(1500));
    for _ in 0..n {
        let source = ProgramWriter::program(rng.next());
        let code = assemble(&source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        match agree(&code, &source) {
            Some(want) => recursed += want.output.contains("depth 3") as usize,
            None => panicked += 1,
        }
    }
    // Some programs print at a depth of three frames; few overflow.
    assert!(recursed > 0 && panicked * 10 < n, "{recursed} printed frames, {panicked} of {n} panicked");
    assert!(jit::stats().cases_forgetting > forgetting, "{:?}", jit::stats());
}

/// The same kind of VM with its stack and frames in `self`
/// (`procvm_interp::framed`): the whole final state (the result or error,
/// the stack, the frames) compared with `jit::plain` through the portal and
/// `jit::specialize`.
mod framed_vm {
    use crate::common;
    use procvm_interp::framed;
    use procvm_interp::framed::vm::Op::{self, *};

    /// The result, the stack and the frames after a run.
    type State = (Result<i64, String>, Vec<i64>, Vec<framed::vm::StackFrame>);

    fn check_framed(code: &[Op], fuel: usize) -> State {
        let state = |vm: framed::vm::Vm, r| (r, vm.stack, vm.frames);
        let mut vm = framed::vm::Vm::new();
        let r = framed::vm::jit::plain::Vm::run(&mut vm, code, fuel);
        let want = state(vm, r);
        let mut vm = framed::vm::Vm::new();
        let r = vm.run(code, fuel);
        assert_eq!(state(vm, r), want, "{code:?} {fuel}");
        let mut vm = framed::vm::Vm::new();
        let r = framed::vm::jit::specialize::Vm::run(&mut vm, code, fuel);
        assert_eq!(state(vm, r), want, "{code:?} {fuel}");
        want
    }

    #[test]
    fn frames_in_self_with_a_promoted_return_compile_and_agree_with_plain() {
        assert!(framed::vm::jit::left_to_rust().is_empty(), "{:?}", framed::vm::jit::left_to_rust());
        for t in [Some(0), Some(3), None] {
            if let Some(t) = t {
                framed::vm::jit::config().set_threshold(t);
            }
            for n in [0, 1, 2, 7, 15] {
                let (r, ..) = check_framed(&framed::programs::fib(n), 1_000_000);
                let want = (0..n).fold((0i64, 1i64), |(a, b), _| (b, a + b)).0;
                assert_eq!(r, Ok(want), "fib({n})");
            }
            let (r, ..) = check_framed(&framed::programs::fib(12), 500);
            assert!(r.is_err_and(|e| e.ends_with("after 500 steps")));
        }
        framed::vm::jit::config().set_threshold(0);
        assert_eq!(check_framed(&framed::programs::fib(10), 1_000_000).0, Ok(55));
        // Two locals per call, and returns landing at three places.
        fn ackermann(m: i64, n: i64) -> i64 {
            match (m, n) {
                (0, n) => n + 1,
                (m, 0) => ackermann(m - 1, 1),
                (m, n) => ackermann(m - 1, ackermann(m, n - 1)),
            }
        }
        for t in [0, 3] {
            framed::vm::jit::config().set_threshold(t);
            for (m, n) in [(0, 4), (1, 0), (1, 5), (2, 3), (3, 3)] {
                let (r, stack, frames) = check_framed(&framed::programs::ackermann(m, n), 1_000_000);
                assert_eq!((r, stack, frames), (Ok(ackermann(m, n)), vec![], vec![]), "A({m}, {n})");
            }
        }
        let s = framed::vm::jit::stats();
        assert!(s.entries > 0 && s.flexswitch_cases > 0, "{s:?}");
    }

    /// A random program of `procs` procedures of one argument each: `main`
    /// calls some of them and adds their results. Procedure `k` returns its
    /// argument below a random bound (`Lt`, `JumpIfFalse`), else computes on
    /// it with stack-safe operations, calling itself on a smaller argument and
    /// the procedures after it; one instruction in ten is replaced by a random
    /// one (errors, stray jumps).
    fn random_program(rng: &mut common::Rng, procs: usize) -> Vec<Op> {
        let mut code = vec![Jump(0)];
        let mut entries = vec![0; procs];
        // Procedures from the last, so that each knows the entries after it.
        let mut bodies: Vec<Vec<Op>> = vec![];
        for k in (0..procs).rev() {
            // Offsets are relative to the procedure's entry, fixed below.
            let mut b = vec![Get(0), Push(rng.below(4) as i64), Lt, JumpIfFalse(6), Get(0), Ret];
            let mut depth = 0;
            b.push(Get(0));
            depth += 1;
            for _ in 0..rng.below(8) {
                match rng.below(7) {
                    0 => {
                        b.push(Push(rng.below(5) as i64 - 1));
                        depth += 1;
                    }
                    1 => {
                        b.push(Get(0));
                        depth += 1;
                    }
                    2 | 3 if depth >= 2 => {
                        b.push([Add, Sub, Lt][rng.below(3) as usize]);
                        depth -= 1;
                    }
                    4 => b.push(Set(0)),
                    5 => b.extend([Get(0), Push(1 + rng.below(2) as i64), Sub, Call(usize::MAX - k, 1)]),
                    _ if k + 1 < procs => {
                        b.extend([Get(0), Call(usize::MAX - (k + 1 + rng.below((procs - k - 1) as u64) as usize), 1)])
                    }
                    _ => {}
                }
                depth += usize::from(b.last().is_some_and(|o| matches!(o, Call(..))));
            }
            for _ in 1..depth {
                b.push(Add);
            }
            b.push(Ret);
            bodies.push(b);
        }
        bodies.reverse();
        let mut main = vec![];
        for j in 0..1 + rng.below(3) {
            // Some calls pass a second local, which the callee's return drops.
            let locals = 1 + rng.below(2) as usize;
            main.push(Push(rng.below(9) as i64));
            if locals == 2 {
                main.push(Push(rng.below(9) as i64 - 4));
            }
            main.push(Call(usize::MAX - rng.below(procs as u64) as usize, locals));
            if j > 0 {
                main.push(Add);
            }
        }
        main.push(Halt);
        for (k, b) in bodies.iter().enumerate() {
            entries[k] = code.len();
            code.extend(b.iter().map(|op| match op {
                JumpIfFalse(t) => JumpIfFalse(entries[k] + t),
                op => *op,
            }));
        }
        code[0] = Jump(code.len());
        code.extend(main);
        for op in &mut code {
            if let Call(p, n) = op {
                // A procedure's number, counted down from `usize::MAX`.
                if *p > usize::MAX / 2 {
                    *op = Call(entries[usize::MAX - *p], *n);
                }
            }
        }
        let len = code.len();
        for op in &mut code {
            if rng.below(10) == 0 {
                let at = rng.below(len as u64) as usize;
                *op = [Push(2), Add, Sub, Lt, JumpIfFalse(at), Jump(at), Get(1), Set(1), Call(at, 1), Ret, Pop, Halt]
                    [rng.below(12) as usize];
            }
        }
        code
    }

    #[test]
    fn random_call_programs_agree_with_plain() {
        let mut rng = common::Rng(0x5e1f_f4a3);
        // Programs that halted with a value, and that failed.
        let (mut halted, mut failed) = (0, 0);
        let n = common::how_many(200);
        for i in 0..n {
            framed::vm::jit::config().set_threshold([0, 1, 4][i % 3]);
            let procs = 1 + rng.below(3) as usize;
            let code = random_program(&mut rng, procs);
            let (r, ..) = check_framed(&code, 1 + rng.below(3000) as usize);
            halted += usize::from(r.is_ok());
            failed += usize::from(r.is_err());
        }
        assert!(halted * 5 >= n && failed * 5 >= n, "{halted} halted, {failed} failed of {n}");
    }
}

/// The same shape as a new user first writes it (`procvm_interp::indexed`):
/// `self.stack[off + i]` with `off` from `self.frames.last()`, no checks of
/// its own, panicking on a bad program. The whole final state (the result,
/// the stack, the frames, what was printed) or the panic is compared with
/// `jit::plain` through the portal and `jit::specialize`.
mod indexed_vm {
    use crate::common;
    use procvm_interp::indexed::vm::Instr::{self, *};
    use procvm_interp::indexed::{programs, vm};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::Mutex;

    /// The result, the stack, the frames and what was printed.
    type State = (Option<i64>, Vec<i64>, Vec<vm::StackFrame>, Vec<i64>);

    /// The threshold is the module's: tests that set it run one at a time.
    static THRESHOLD: Mutex<()> = Mutex::new(());

    /// Runs `code` in plain, through the portal and through
    /// `jit::specialize`, each on a new machine; `None` where plain panics,
    /// and then each must panic too.
    fn check(code: &[Instr]) -> Option<State> {
        let state = |m: vm::Vm, r| (r, m.stack, m.frames, m.out);
        let run = |f: &dyn Fn(&mut vm::Vm) -> Option<i64>| {
            catch_unwind(AssertUnwindSafe(|| {
                let mut m = vm::Vm::new();
                let r = f(&mut m);
                state(m, r)
            }))
            .ok()
        };
        let want = run(&|m| vm::jit::plain::Vm::run(m, code));
        assert_eq!(run(&|m| m.run(code)), want, "portal: {code:?}");
        assert_eq!(run(&|m| vm::jit::specialize::Vm::run(m, code)), want, "specialize: {code:?}");
        want
    }

    fn fib(n: i64) -> i64 {
        (0..n).fold((0, 1), |(a, b), _| (b, a + b)).0
    }

    fn ackermann(m: i64, n: i64) -> i64 {
        match (m, n) {
            (0, n) => n + 1,
            (m, 0) => ackermann(m - 1, 1),
            (m, n) => ackermann(m - 1, ackermann(m, n - 1)),
        }
    }

    #[test]
    fn indexing_its_stack_compiles_and_agrees_with_plain() {
        let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
        assert!(vm::jit::left_to_rust().is_empty(), "{:?}", vm::jit::left_to_rust());
        for t in [0, 3] {
            vm::jit::config().set_threshold(t);
            for n in [0, 1, 2, 7, 15] {
                let s = check(&programs::fib(n));
                assert_eq!(s, Some((Some(fib(n)), vec![], vec![], vec![])), "fib({n})");
            }
            for (m, n) in [(0, 4), (1, 0), (1, 5), (2, 3), (3, 3)] {
                let s = check(&programs::ackermann(m, n));
                assert_eq!(s, Some((Some(ackermann(m, n)), vec![], vec![], vec![])), "A({m}, {n})");
            }
        }
        // A callee reads the arguments its caller pushed below the tail
        // (`stack[off + i]`, the index computed after the field is read):
        // the caller's part comes back from the continuation stack, rather
        // than the whole stack moving into its `Vec` (27 times in this
        // test's code when the index was not known before the read). What
        // is left is where a widened merge point lost what the frame's
        // offset is relative to the hidden part (3).
        let listings = vm::jit::portal_listings().join("\n");
        let moved = listings.matches("cont_materialize").count();
        assert!(moved <= 5, "{moved} moves of the stack into its `Vec`");
        // A return with no frame panics at its `unwrap`, in each.
        assert_eq!(check(&[Const(1), Ret]), None);
        let s = vm::jit::stats();
        assert!(s.entries > 0 && s.flexswitch_cases > 0 && s.spills > 0, "{s:?}");
    }

    /// A random program of `procs` procedures: `main` calls some of them
    /// (with one or two locals) and prints or adds their results. Procedure
    /// `k` returns its local 0 below a random bound, else computes on it,
    /// calling itself on a smaller argument and the procedures after it,
    /// decrementing its local 0 (`Set(0)`) and printing. With `mutate`, one
    /// instruction in ten outside the procedures' base cases is replaced by
    /// one that may panic (an underflow, an index past the stack, a return
    /// with no frame) but never loops: there is no backward jump, no
    /// procedure runs into the code after it (its last `Ret` is kept), and
    /// each call of a procedure by itself still has a smaller local 0, which
    /// nothing else writes, so the programs end.
    fn random_program(rng: &mut common::Rng, procs: usize, mutate: bool) -> Vec<Instr> {
        const BASE: usize = 6;
        // Each body, and the positions in it a mutation leaves alone: its
        // base case, and what makes a smaller argument.
        let mut bodies: Vec<(Vec<Instr>, Vec<usize>)> = vec![];
        for k in (0..procs).rev() {
            // Jumps and calls are fixed below: relative to the procedure's
            // entry, and calls by procedure number from `usize::MAX`.
            let mut b = vec![Get(0), Const(rng.below(3) as i64), Lt, Jz(BASE), Get(0), Ret];
            let mut depth = 1;
            let mut kept: Vec<usize> = (0..BASE).collect();
            b.push(Get(0));
            for _ in 0..rng.below(8) {
                match rng.below(8) {
                    0 => {
                        b.push(Const(rng.below(7) as i64 - 3));
                        depth += 1;
                    }
                    1 => {
                        b.push(Get(rng.below(2) as usize));
                        depth += 1;
                    }
                    2 | 3 if depth >= 2 => {
                        b.push([Add, Sub, Lt][rng.below(3) as usize]);
                        depth -= 1;
                    }
                    4 => {
                        kept.extend(b.len()..b.len() + 4);
                        b.extend([Get(0), Const(1), Sub, Set(0)]);
                    }
                    5 => {
                        kept.extend(b.len()..b.len() + 4);
                        b.extend([Get(0), Const(1 + rng.below(2) as i64), Sub, Call(usize::MAX - k, 1)]);
                        depth += 1;
                    }
                    6 if depth >= 2 => {
                        b.push(Print);
                        depth -= 1;
                    }
                    _ if k + 1 < procs => {
                        let callee = k + 1 + rng.below((procs - k - 1) as u64) as usize;
                        b.extend([Get(0), Call(usize::MAX - callee, 1)]);
                        depth += 1;
                    }
                    _ => {}
                }
            }
            for _ in 1..depth {
                b.push(Add);
            }
            kept.push(b.len());
            b.push(Ret);
            bodies.push((b, kept));
        }
        bodies.reverse();
        let mut code = vec![Jmp(0)];
        let (mut entries, mut kept) = (vec![], vec![]);
        for (b, keep) in &bodies {
            entries.push(code.len());
            let at = code.len();
            kept.extend(keep.iter().map(|i| at + i));
            code.extend(b.iter().map(|op| match op {
                Jz(t) => Jz(at + t),
                op => *op,
            }));
        }
        code[0] = Jmp(code.len());
        for j in 0..1 + rng.below(3) {
            let locals = 1 + rng.below(2) as usize;
            code.push(Const(rng.below(7) as i64));
            if locals == 2 {
                code.push(Const(rng.below(9) as i64 - 4));
            }
            code.push(Call(usize::MAX - rng.below(procs as u64) as usize, locals));
            if j > 0 {
                code.push([Add, Print][rng.below(2) as usize]);
            }
        }
        code.push(Halt);
        for op in &mut code {
            if let Call(p, n) = op {
                if *p > usize::MAX / 2 {
                    *op = Call(entries[usize::MAX - *p], *n);
                }
            }
        }
        if mutate {
            for (i, op) in code.iter_mut().enumerate().skip(1) {
                if !kept.contains(&i) && rng.below(10) == 0 {
                    *op = [Add, Sub, Get(3), Set(2), Ret, Print, Halt][rng.below(7) as usize];
                }
            }
        }
        code
    }

    #[test]
    fn random_call_programs_agree_with_plain() {
        let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
        let mut rng = common::Rng(0x1d3e_a5c7);
        let (mut halted, mut panicked, mut printed) = (0, 0, 0);
        let n = common::how_many(300);
        for i in 0..n {
            vm::jit::config().set_threshold([0, 1, 4][i % 3]);
            let procs = 1 + rng.below(3) as usize;
            let code = random_program(&mut rng, procs, i % 2 == 1);
            match check(&code) {
                Some(s) => {
                    halted += 1;
                    printed += usize::from(!s.3.is_empty());
                }
                None => panicked += 1,
            }
        }
        assert!(halted * 3 >= n && panicked * 10 >= n && printed * 10 >= n, "{halted} {panicked} {printed} of {n}");
    }
}
