//! TLC through the generated JIT: every shipped program, every error kind,
//! and random programs (well-formed and malformed) give the same result,
//! output and error under the JIT as under `jit::plain`; and, in a child
//! process under the default hot-spot policy, a loop whose compiled entry
//! lies a few merge points into a call compiles once over many calls.
//!
//! `JITGEN_RANDOM_PROGRAMS=N` runs N random programs of each kind instead of
//! the default.

use crate::common;

use tlc_interp as interp;
use tlc_interp::{asm, programs};

use common::{how_many, Rng};
use interp::tlc::{self, jit, Heap, Program};
use interp::{describe, Out};

/// What a run gives: the result (shown) or the error message, and the lines
/// printed.
type Outcome = (Result<String, String>, Vec<String>);

/// A run's outcome and the heap it leaves (every cell and object, in
/// order): the whole state `run` leaves behind (its stack and frames are
/// its own locals).
fn run(a: &asm::Assembled, input: i64, use_jit: bool) -> (Outcome, String) {
    let mut heap = Heap::default();
    let mut out = Out::default();
    let r = if use_jit {
        tlc::run(&a.program, input, &mut heap, &mut out)
    } else {
        jit::plain::run(&a.program, input, &mut heap, &mut out)
    };
    let outcome = (r.map(|v| interp::show(&heap, v)).map_err(|e| describe(&e, &a.strings)), out.lines);
    (outcome, format!("{heap:?}"))
}

/// Runs under both, asserts they agree (the heaps they leave too), and
/// returns the outcome.
fn both(a: &asm::Assembled, input: i64, what: &str) -> Outcome {
    let want = run(a, input, false);
    let got = run(a, input, true);
    assert_eq!(got, want, "{what} (input {input}) differs under the JIT");
    want.0
}

/// The tests set the module's threshold and read its statistics, which are
/// per module: they take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn program(name: &str) -> asm::Assembled {
    asm::assemble(programs::source(name).expect("shipped")).expect("shipped programs assemble")
}

#[test]
fn shipped_programs_agree_and_compute_what_the_peers_do() {
    let _turn = serial();
    jit::config().set_threshold(3);
    // The check sizes of shared/notes/peer-benchmarks.md.
    assert_eq!(both(&program("factorial"), 100_000, "factorial").0, Ok("77491000".into()));
    assert_eq!(both(&program("fibonacci"), 100_000, "fibonacci").0, Ok("28449233".into()));
    assert_eq!(both(&program("f1"), 300, "f1").0, Ok("2531490".into()));
    assert_eq!(both(&program("accumulator"), 2000, "accumulator").0, Ok("2001000".into()));
    assert_eq!(both(&program("accumulator"), -2000, "accumulator").0, Ok("2000".into()));
    assert_eq!(both(&program("fib_recursive"), 15, "fib_recursive").0, Ok("610".into()));
    let (r, lines) = both(&program("lists"), 5, "lists");
    assert_eq!(r, Ok("4".into()));
    assert_eq!(
        lines,
        vec![
            "[1, 2, 3, 4, 5]",
            "[1, 2, 3, 4, 5, 1, 2, 3, 4, 5]",
            "1",
            "2",
            "[[1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]]"
        ]
    );
    for name in ["factorial", "fibonacci", "f1", "accumulator", "fib_recursive", "lists"] {
        // (fibonacci and lists count their input down to 0: not from below;
        // the recursive fibonacci takes exponential time.)
        let inputs: &[i64] = match name {
            "fibonacci" | "lists" => &[0, 1, 2, 7, 40],
            "fib_recursive" => &[-3, 0, 1, 2, 7, 12],
            _ => &[-3, 0, 1, 2, 7, 40],
        };
        for n in inputs {
            let _ = both(&program(name), *n, name);
        }
    }
    // The loops of factorial, fibonacci and f1 were compiled.
    assert!(jit::stats().entries >= 3, "{:?}", jit::stats());
}

/// Each error kind of the spec, with a program that raises it.
#[test]
fn errors_are_the_same_under_the_jit() {
    let _turn = serial();
    // Threshold 0: each position compiles at its first visit, so even
    // straight-line programs raise their errors from compiled code.
    jit::config().set_threshold(0);
    let before = jit::stats();
    let cases: &[(&str, &str)] = &[
        ("PUSH 1\nNIL\nADD", "TypeError"),
        ("PUSH 1\nPUSH 0\nDIV", "ZeroDivisionError"),
        ("PUSH 1\nPUSH 0\nMOD", "ZeroDivisionError"),
        ("NIL\nPUSH 1\nCONS\nPUSH 5\nDIV", "IndexError"),
        ("PUSHARGN 3", "IndexError"),
        ("NEW x\nGETATTR y", "AttributeError"),
        ("NEW x\nSEND m/0", "AttributeError"),
        ("ADD", "StackUnderflow"),
        ("PUSH 1\nPICK 1", "StackUnderflow"),
        ("PUSH 1\nROLL 3", "StackUnderflow"),
        ("NOP", "StackUnderflow"),
        ("BR -5", "BadJump"),
        ("PUSH 1\nBR_COND 100", "BadJump"),
        ("PUSH 1\nPUSH 7\nBR_COND_STK", "BadJump"),
        ("INVALID", "UnknownOpcode"),
        ("PUSH 1\nCAR", "TypeError"),
        ("PUSH 1\nPUSH 2\nLT\nNIL\nLT", "TypeError"),
        ("PUSH 3\nGETATTR x", "TypeError"),
    ];
    for (src, kind) in cases {
        let a = asm::assemble(src).expect("assembles");
        for input in [0, 1] {
            let (r, _) = both(&a, input, src);
            let msg = r.expect_err(src);
            assert!(msg.starts_with(kind), "{src}: {msg}");
        }
    }
    // Malformed bytecode the assembler would not make.
    let raw: &[(&[u8], &str)] = &[
        (&[tlc::PUSH], "BadOperand"),
        (&[tlc::NEW, 0], "BadOperand"),
        (&[99], "UnknownOpcode"),
        (&[0], "UnknownOpcode"),
        (&[tlc::CALLARGS, 0], "BadOperand"),
    ];
    for (code, kind) in raw {
        let a = asm::Assembled { program: Program { code: code.to_vec(), classes: vec![] }, strings: vec![] };
        let msg = both(&a, 0, &format!("{code:?}")).0.expect_err("an error");
        assert!(msg.starts_with(kind), "{code:?}: {msg}");
    }
    // Compiled code ran and raised errors (entries), not only the interpreter.
    let after = jit::stats();
    assert!(after.entries > before.entries + 10, "{before:?} {after:?}");
    let e = asm::assemble("PUSH 1\nFOO 2").unwrap_err();
    assert_eq!(e.to_string(), "AssemblyError: line 2: unknown instruction `FOO`");
    let e = asm::assemble("PUSH 200").unwrap_err();
    assert_eq!(e.line, 1);
    let e = asm::assemble("BR nowhere").unwrap_err();
    assert_eq!(e.to_string(), "AssemblyError: line 1: unknown label `nowhere`");
}

/// Straight-line instructions, each an assembler line (some may fail at
/// run time, which is the point: errors must agree too).
fn straight(r: &mut Rng, out: &mut Vec<String>) {
    let ops = [
        "ADD", "SUB", "MUL", "DIV", "MOD", "AND", "EQ", "NE", "LT", "LE", "GT", "GE", "POP", "SWAP", "NIL", "CONS",
        "CAR", "CDR", "PUSHARG", "PRINT", "NOP",
    ];
    match r.below(10) {
        0..=2 => out.push(format!("PUSH {}", r.below(21) as i64 - 10)),
        3 => out.push(format!("PICK {}", r.below(4))),
        4 => out.push(format!("PUT {}", r.below(3) + 1)),
        5 => out.push(format!("ROLL {}", r.below(9) as i64 - 4)),
        _ => out.push(r.pick(&ops).to_string()),
    }
}

/// A well-formed random program: straight-line code, forward branches,
/// counted loops (the counter on top, bodies that leave it alone), calls of
/// functions and methods defined after the main code.
fn well_formed(r: &mut Rng) -> String {
    let mut lines: Vec<String> = vec!["PUSH 3".into(), "PUSH 5".into(), "PUSHARG".into()];
    let mut label = 0;
    let mut funcs: Vec<String> = vec![];
    for _ in 0..(2 + r.below(5)) {
        match r.below(6) {
            0 | 1 => {
                for _ in 0..(1 + r.below(4)) {
                    straight(r, &mut lines);
                }
            }
            2 => {
                // A counted loop: the counter stays on top; the body updates
                // the slot below it (a binary operation of two picked values).
                let l = label;
                label += 1;
                lines.push(format!("PUSH {}", r.below(12)));
                lines.push(format!("loop{l}:"));
                lines.push("PICK 0".into());
                lines.push(format!("BR_COND body{l}"));
                lines.push(format!("BR end{l}"));
                lines.push(format!("body{l}:"));
                for _ in 0..(1 + r.below(3)) {
                    lines.push(format!("PICK {}", 1 + r.below(3)));
                    lines.push(format!("PICK {}", 1 + r.below(3)));
                    lines.push(r.pick(&["ADD", "SUB", "MUL", "AND", "EQ", "LT", "MOD", "DIV"]).into());
                    lines.push(format!("PUT {}", 1 + r.below(2)));
                }
                lines.push("PUSH 1".into());
                lines.push("SUB".into());
                lines.push(format!("BR loop{l}"));
                lines.push(format!("end{l}:"));
                lines.push("POP".into());
            }
            3 => {
                // A forward branch over some code.
                let l = label;
                label += 1;
                lines.push(r.pick(&["PICK 0", "PUSH 0", "PUSH 1", "NIL"]).into());
                lines.push(format!("BR_COND skip{l}"));
                straight(r, &mut lines);
                lines.push(format!("skip{l}:"));
            }
            4 => {
                // A call of a function with arguments.
                let f = funcs.len();
                let n = r.below(3);
                lines.push(format!("CALLARGS fn{f}/{n}"));
                let mut body = vec![format!("fn{f}:")];
                for _ in 0..(1 + r.below(3)) {
                    body.push(format!("PUSHARGN {}", r.below(n + 1)));
                    straight(r, &mut body);
                }
                body.push("RETURN".into());
                funcs.push(body.join("\n"));
            }
            _ => {
                // An object: a field set and read, a method sent.
                let f = funcs.len();
                lines.push(format!("NEW v,w,m=fn{f}"));
                lines.push("PICK 0".into());
                lines.push(format!("PUSH {}", r.below(9)));
                lines.push("SETATTR v".into());
                lines.push("PICK 0".into());
                lines.push(format!("PUSH {}", r.below(9)));
                lines.push("SEND m/1".into());
                lines.push("POP".into());
                lines.push(r.pick(&["GETATTR v", "GETATTR w", "GETATTR x"]).into());
                funcs.push(format!("fn{f}:\nPUSHARGN 0\nGETATTR v\nPUSHARGN 1\nADD\nRETURN"));
            }
        }
    }
    lines.push("RETURN".into());
    lines.extend(funcs);
    lines.join("\n")
}

/// Random bytes where jumps can only go forward (so runs end): any opcode,
/// any operand, truncated instructions.
fn malformed(r: &mut Rng) -> Vec<u8> {
    let n = 1 + r.below(24) as usize;
    let mut code: Vec<u8> = (0..n).map(|_| (r.below(41)) as u8).collect();
    let mut pc = 0;
    while pc < code.len() {
        let op = code[pc];
        let nargs = asm::OPCODES.iter().find(|o| o.1 == op).map_or(0, |o| o.2);
        if op == tlc::BR_COND_STK {
            code[pc] = tlc::NOP; // its offset comes from the stack
        }
        if matches!(op, tlc::BR | tlc::BR_COND | tlc::CALL | tlc::CALLARGS) && pc + 1 < code.len() {
            code[pc + 1] %= 20; // forward
        }
        pc += 1 + nargs;
    }
    code
}

#[test]
fn random_programs_agree() {
    let _turn = serial();
    jit::config().set_threshold(2);
    let before = jit::stats();
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let n = how_many(600);
    let mut last_decline = jit::last_decline();
    for i in 0..n {
        // (A call or jump past TLC's signed-byte offsets: drawn again; the
        // first such program was number 9687 of this seed.)
        let src = loop {
            let src = well_formed(&mut r);
            match asm::assemble(&src) {
                Err(e) if e.to_string().contains("is too far") => continue,
                _ => break src,
            }
        };
        let a = asm::assemble(&src).unwrap_or_else(|e| panic!("generated program {i} does not assemble: {e}\n{src}"));
        for input in [0, 3, -2] {
            let _ = both(&a, input, &format!("random program {i}:\n{src}\n"));
            // Declines are fine; a compiler that fails is not.
            let why = jit::last_decline();
            if why != last_decline {
                let broken = |d: &str| d.contains("panicked") || d.contains("jitgen bug");
                assert!(!why.as_deref().is_some_and(broken), "random program {i} (input {input}): {why:?}\n{src}");
                last_decline = why;
            }
        }
    }
    for i in 0..n {
        let code = malformed(&mut r);
        let a = asm::Assembled { program: Program { code: code.clone(), classes: vec![] }, strings: vec![] };
        for input in [0, 1] {
            let _ = both(&a, input, &format!("random bytes {i}: {code:?}"));
        }
    }
    // Compiled code ran (the random loops are hot enough).
    let after = jit::stats();
    eprintln!("random programs: {after:?}, last decline {:?}", jit::last_decline());
    assert!(after.entries > before.entries + n as u64 / 10, "{before:?} {after:?}");
}

/// A method call inside a loop: SEND, the callee's frame and RETURN.
const CALLS: &str = "
    PUSHARG
    NEW value,accumulate=add
    PICK 0
    PUSH 0
    SETATTR value
    SWAP
loop:
    PICK 0
    PUSH 0
    GT
    BR_COND body
    BR end
body:
    PICK 1
    PICK 1
    SEND accumulate/1
    PUSH 1
    SUB
    BR loop
end:
    POP
    GETATTR value
    RETURN
add:
    PUSHARGN 0
    PICK 0
    GETATTR value
    PUSHARGN 1
    PUSH 3
    MOD
    ADD
    SETATTR value
    PUSH 7
    RETURN
";

#[test]
fn calls_compile_and_survive_hand_overs_inside_callees() {
    let _turn = serial();
    jit::config().set_threshold(3);
    // The accumulator's loop compiles whole: the call, the callee's frame
    // (a virtual object with virtual lists) and the return.
    let before = jit::stats();
    assert_eq!(both(&program("accumulator"), 3000, "accumulator").0, Ok("4501500".into()));
    let after = jit::stats();
    // Entered, and then it stayed: 3000 calls from a few entries (positions
    // inside the callee may decline: compiled code starts where no frames
    // are saved).
    let entries = after.entries - before.entries;
    assert!((1..20).contains(&entries), "{entries} entries: {before:?} {after:?}");
    // With few or no flexswitch cases, residual code hands over inside the
    // callee (the class and the return address are promoted there): the
    // interpreter goes on with the saved frames rebuilt from the state.
    let calls = asm::assemble(CALLS).expect("assembles");
    for max_cases in [0, 1, 16] {
        jit::config().set_max_cases(max_cases);
        for input in [0, 1, 5, 200, -4] {
            let _ = both(&calls, input, &format!("calls (max_cases {max_cases})"));
        }
        for input in [10, 300] {
            let _ = both(&program("accumulator"), input, &format!("accumulator (max_cases {max_cases})"));
            let _ = both(&program("fib_recursive"), input / 20, &format!("fib_recursive (max_cases {max_cases})"));
        }
    }
    jit::config().set_max_cases(16);
}

/// `f = f * i % n` for i = 1..1000, with the divisor `n` the argument: the
/// same loop, entered with different divisors.
const MOD_BY_ARG: &str = "
    PUSH 1
    PUSH 1
loop:
    PICK 0
    PUSH 100
    PUSH 10
    MUL
    GT
    BR_COND end
    PICK 1
    PICK 1
    MUL
    PUSHARG
    MOD
    PUT 1
    PUSH 1
    ADD
    BR loop
end:
    POP
";

#[test]
fn loop_invariant_divisors_are_promoted_at_entry() {
    let _turn = serial();
    jit::config().set_threshold(3);
    let a = asm::assemble(MOD_BY_ARG).expect("assembles");
    // The divisor the loop was entered with is a constant of the compiled
    // loop (a multiplication instead of a division), behind a guard at entry.
    let before = jit::stats();
    let _ = both(&a, 1_000_003, "mod by arg");
    // Every remainder of that code divides by the constant: none by the
    // run-time value is left in the loop.
    let divides_by_constant = |l: &str| {
        let consts: Vec<&str> = l.lines().filter_map(|x| x.trim().strip_suffix(" = const.i64 1000003")).collect();
        let divisors: Vec<&str> = l.lines().filter_map(|x| x.split(" = rem.i64 ").nth(1)?.split(", ").nth(1)).collect();
        !divisors.is_empty() && divisors.iter().all(|d| consts.contains(&d.trim()))
    };
    let promoted = jit::portal_listings().iter().any(|l| divides_by_constant(l));
    assert!(promoted, "{:#?}", jit::portal_listings());
    let mid = jit::stats();
    assert_eq!(mid.flexswitch_cases, before.flexswitch_cases, "{before:?} {mid:?}");
    // Other divisors fail the guard: the loop compiled for any divisor
    // (when first taken) runs them, with the interpreter's results.
    for n in [1_000_003, 7, -13, 1, 1_000_003, 99] {
        let _ = both(&a, n, &format!("mod by {n}"));
    }
    let after = jit::stats();
    assert_eq!(after.flexswitch_cases - mid.flexswitch_cases, 1, "{mid:?} {after:?}");
    // A zero divisor leaves the loop with an error: that side of the
    // general loop compiles when first taken, once.
    for n in [0, 0] {
        let _ = both(&a, n, &format!("mod by {n}"));
    }
    let last = jit::stats();
    assert_eq!(last.flexswitch_cases - after.flexswitch_cases, 1, "{after:?} {last:?}");
}

#[test]
fn f1s_inner_loop_runs_four_turns_per_jump() {
    let _turn = serial();
    jit::config().set_threshold(3);
    let a = program("f1");
    for n in [0, 1, 3, 5, 40, 300] {
        let _ = both(&a, n, "f1");
    }
    // Some compiled block does `i & j` four times: the unrolled inner loop.
    let listings = jit::portal_listings();
    let unrolled = listings
        .iter()
        .flat_map(|l| l.split("\nL"))
        .any(|blk| blk.lines().filter(|x| x.contains(" = and.i64 ")).count() == 4);
    assert!(unrolled, "{listings:#?}");
}

/// `i64::MIN` by doubling 1 sixty-three times (multiplication wraps), then
/// `MIN // a`, `MIN mod a`, `7 // a` and `-7 mod a` for the argument `a`,
/// printed, after the loop compiled.
const MIN_DIVIDED: &str = "
    PUSH 1
    PUSH 63
pow:
    PICK 0
    BR_COND body
    BR done
body:
    PICK 1
    PUSH 2
    MUL
    PUT 1
    PUSH 1
    SUB
    BR pow
done:
    POP
    PICK 0
    PUSHARG
    DIV
    PRINT
    PICK 0
    PUSHARG
    MOD
    PRINT
    PUSH 7
    PUSHARG
    DIV
    PRINT
    PUSH -7
    PUSHARG
    MOD
";

#[test]
fn floor_division_and_modulo_wrap_at_the_ends_of_the_range_under_the_jit() {
    let _turn = serial();
    jit::config().set_threshold(3);
    let a = asm::assemble(MIN_DIVIDED).expect("assembles");
    let before = jit::stats().entries;
    let (r, lines) = both(&a, -1, "MIN // -1");
    assert_eq!(r, Ok("0".into()));
    assert_eq!(lines, ["-9223372036854775808", "0", "-7"]);
    for d in [1, 2, -2, 3, -3, 7, -7, 8, 0] {
        let _ = both(&a, d, &format!("MIN // {d}"));
    }
    assert!(jit::stats().entries > before, "the loop compiled");
    // The division after it is compiled code's too: a wrapping one (TLC's
    // DIV and MOD use `wrapping_div` and `wrapping_rem`).
    let listings = jit::portal_listings();
    assert!(listings.iter().any(|l| l.contains(" = div.i64 ") && l.contains(" = rem.i64 ")), "{listings:#?}");
}

/// A loop entered with ten values on the stack: the deepest two are below
/// the ones whose variants the portal's key holds, and one is read each turn.
const DEEP_STACK: &str = "
    PUSH 1
    PUSH 2
    PUSH 3
    PUSH 4
    PUSH 5
    PUSH 6
    PUSH 7
    PUSH 8
    PUSHARG
    PUSH 0
loop:
    PICK 1
    PUSH 0
    GT
    BR_COND body
    BR end
body:
    PICK 8
    ADD
    SWAP
    PUSH 1
    SUB
    SWAP
    BR loop
end:
    RETURN
";

#[test]
fn the_entry_reads_the_operand_stack_in_place() {
    let _turn = serial();
    jit::config().set_threshold(3);
    // Where the layouts of `Vec` and of the values are known (measured),
    // compiled code reads the stack it starts from with loads, not a call
    // per element: one bounds check, then only the words of the variants
    // the key holds (and the tags of the deeper ones).
    let a = asm::assemble(DEEP_STACK).expect("assembles");
    for n in [0, 1, 10, 1000] {
        assert_eq!(both(&a, n, "deep stack").0, Ok((n * 2).to_string()));
    }
    let all = jit::portal_listings().join("\n");
    let entry = &all[..all.find("\nL").unwrap_or(all.len())];
    assert!(!entry.contains("vec_get") && entry.contains("load."), "{all}");
    // At most one check per vector (the stack, the arguments; an entry at
    // the program's start has an empty stack).
    assert!(entry.matches("bounds_check").count() <= 2, "{all}");
}

/// Objects made inside a loop (the heap's vector of objects grows and
/// moves) while an older object's attribute is read and written each turn.
const NEW_IN_LOOP: &str = "
    PUSHARG
    NEW value
    PICK 0
    PUSH 0
    SETATTR value
    SWAP
loop:
    PICK 0
    PUSH 0
    GT
    BR_COND body
    BR end
body:
    NEW value
    PUSH 5
    SETATTR value
    PICK 1
    PICK 0
    GETATTR value
    PUSH 1
    ADD
    SETATTR value
    PUSH 1
    SUB
    BR loop
end:
    POP
    GETATTR value
    RETURN
";

#[test]
fn known_fields_of_objects_survive_loops_but_not_calls() {
    let _turn = serial();
    jit::config().set_threshold(3);
    // The accumulator's loop promotes the object's class once: the class is
    // known in the loop's later turns (and at its head), so the loop runs
    // in the one piece compiled for that class.
    let before = jit::stats();
    let _ = both(&program("accumulator"), 100_000, "accumulator");
    let after = jit::stats();
    assert_eq!(after.flexswitch_cases - before.flexswitch_cases, 1, "{before:?} {after:?}");
    // That piece's loop reads no green data at run time (the class's
    // attribute table is read while compiling: the attribute's index is a
    // constant there) and checks the object's index against the heap's
    // length once, before the loop (a checked bound is known too).
    let all = jit::portal_listings().join("\n");
    let piece = &all[all.find("run_piece1:").expect("a piece for the class")..];
    // (Small pointer constants are field offsets; addresses are large.)
    let address = |l: &str| {
        l.split("const.ptr 0x").nth(1).is_some_and(|h| u64::from_str_radix(h.trim(), 16).is_ok_and(|a| a >= 1 << 16))
    };
    let green_addresses = piece.lines().filter(|l| address(l)).count();
    assert_eq!(green_addresses, 0, "{piece}");
    assert!(piece.matches("bounds_check").count() <= 1, "{piece}");
    // Its loop keeps the attribute's value in a register: no load.
    let body = common::cyclic_blocks(piece);
    assert!(!body.is_empty() && body.iter().all(|b| !b.contains("load.")), "{piece}");
    // A `push` onto the heap's objects (a call) may move them: what was
    // known of where they are is forgotten.
    let a = asm::assemble(NEW_IN_LOOP).expect("assembles");
    for n in [0, 1, 5, 100, 5000] {
        assert_eq!(both(&a, n, "new in loop").0, Ok(n.to_string()));
    }
}

/// `sum(n)` (0 + 1 + .. + n-1, in a loop) called twice: the loop runs in a
/// callee, while the interpreter has the caller's frame saved.
const CALLEE_LOOP: &str = "
    PUSHARG
    CALLARGS sum/1
    PUSHARG
    CALLARGS sum/1
    ADD
    RETURN
sum:
    PUSH 0
    PUSH 0
loop:
    PICK 0
    PUSHARGN 0
    LT
    BR_COND body
    POP
    RETURN
body:
    PICK 1
    PICK 1
    ADD
    PUT 1
    PUSH 1
    ADD
    BR loop
";

/// `down(n) = n + down(n - 1)`, `down(0) = 0`: recursion as deep as `n`.
const DEEP: &str = "
    PUSHARG
    CALLARGS down/1
    RETURN
down:
    PUSHARGN 0
    PUSH 0
    GT
    BR_COND more
    PUSH 0
    RETURN
more:
    PUSHARGN 0
    PUSHARGN 0
    PUSH 1
    SUB
    CALLARGS down/1
    ADD
    RETURN
";

#[test]
fn compiled_code_is_entered_with_saved_frames() {
    assert!(run_child("child_a_loop_in_a_callee_compiles_with_saved_frames"));
}

/// A call that recursed for a long time (its compilations declined because
/// of where the program was) still compiles the loop that follows in the
/// same call: it does not give its hook up in the recursion.
#[test]
fn a_loop_after_a_long_recursion_in_the_same_call_compiles() {
    assert!(run_child("child_a_loop_after_a_long_recursion_compiles"));
}

#[test]
#[ignore = "run by a_loop_after_a_long_recursion_in_the_same_call_compiles in a child process (recursion, once seen, is remembered per module)"]
fn child_a_loop_after_a_long_recursion_compiles() {
    jit::config().set_threshold(0);
    let a = program("recursion_then_loop");
    let _ = both(&a, 100_000, "recursion then a loop");
    let s = jit::stats();
    assert!(s.declined > 0, "the recursion declined: {s:?}");
    assert_eq!(s.unhooked, 0, "{s:?}");
    assert!(s.entries > 0 && s.compilations > s.declined, "the loop compiled and ran: {s:?} {:?}", jit::last_decline());
}

#[test]
#[ignore = "run by compiled_code_is_entered_with_saved_frames in a child process (recursion, once seen, is remembered per module)"]
fn child_a_loop_in_a_callee_compiles_with_saved_frames() {
    jit::config().set_threshold(3);
    let a = asm::assemble(CALLEE_LOOP).expect("assembles");
    // One run: the caller's code runs once, cold; the loop compiles where
    // the caller's frame is saved, runs, and its return (below where it was
    // entered) hands over to the interpreter.
    let _ = both(&a, 5000, "a loop in a callee");
    let s = jit::stats();
    assert_eq!(s.declined, 0, "{s:?}: {:?}", jit::last_decline());
    assert!(s.entries >= 1 && s.resumptions >= 1, "{s:?}");
    for n in [0, 1, 7, 5000] {
        let _ = both(&a, n, "a loop in a callee");
    }
    // Language-level recursion compiles: its saved frames are spilled onto
    // the continuation stack, on the heap, as deep as the recursion goes.
    let d = asm::assemble(DEEP).expect("assembles");
    let before = jit::stats();
    assert_eq!(both(&d, 100_000, "deep recursion").0, Ok("5000050000".into()));
    for n in [0, 1, 2, 50] {
        let _ = both(&d, n, "recursion");
    }
    let s = jit::stats();
    assert_eq!(s.declined, before.declined, "{s:?}: {:?}", jit::last_decline());
    assert!(s.entries > before.entries, "{s:?}");
    let _ = both(&a, 5000, "a loop in a callee, after a recursion");
}

/// A random program of calls: functions with loops called from loops,
/// nested calls, and (with `recursive`) recursion and mutual recursion as
/// deep as the input says, with type errors raised deep inside some.
fn call_program(r: &mut Rng, recursive: bool) -> String {
    let mut main: Vec<String> = vec!["PUSHARG".into()];
    let mut funcs: Vec<String> = vec![];
    let op = |r: &mut Rng| r.pick(&["ADD", "SUB", "MUL", "AND", "ADD"]).to_string();
    for seg in 0..(1 + r.below(3)) {
        let f = format!("f{seg}");
        let kinds = if recursive { 5 } else { 2 };
        let kind = r.below(kinds);
        match kind {
            0 => {
                // A loop in the function: s = s op i for i = a..1.
                let mut body = vec![format!("{f}:"), "PUSH 0".into(), "PUSHARGN 0".into(), format!("{f}loop:")];
                body.extend(["PICK 0".into(), "PUSH 0".into(), "GT".into(), format!("BR_COND {f}body")]);
                body.extend(["POP".into(), "RETURN".into(), format!("{f}body:")]);
                body.extend(["PICK 1".into(), "PICK 1".into(), op(r), "PUT 1".into()]);
                body.extend(["PUSH 1".into(), "SUB".into(), format!("BR {f}loop")]);
                funcs.push(body.join("\n"));
            }
            1 => {
                // A function calling another one (itself a leaf).
                let g = format!("{f}g");
                funcs.push(format!(
                    "{f}:\nPUSHARGN 0\nPUSH {}\nADD\nCALLARGS {g}/1\nPUSHARGN 0\n{}\nRETURN",
                    r.below(5),
                    op(r)
                ));
                let err = if r.below(4) == 0 {
                    format!("PUSHARGN 0\nPUSH {}\nEQ\nBR_COND {g}err\n", r.below(6))
                } else {
                    String::new()
                };
                funcs.push(format!(
                    "{g}:\n{err}PUSHARGN 0\nPUSH 3\n{}\nRETURN\n{g}err:\nNIL\nPUSH 1\nADD\nRETURN",
                    op(r)
                ));
            }
            4 => {
                // Recursion through SEND: a method m(self, a) = a op
                // self.m(a - 1) down to 0, a type error at one depth sometimes.
                let err = if r.below(3) == 0 {
                    format!("PUSHARGN 1\nPUSH {}\nEQ\nBR_COND {f}err\n", r.below(30))
                } else {
                    String::new()
                };
                funcs.push(format!(
                    "{f}:\nPUSHARGN 1\nPUSH 0\nGT\nBR_COND {f}more\nPUSH {}\nRETURN\n{f}more:\n{err}PUSHARGN 1\nPUSHARGN 0\nPUSHARGN 1\nPUSH 1\nSUB\nSEND m/1\n{}\nRETURN\n{f}err:\nNIL\nPUSH 1\nADD\nRETURN",
                    r.below(4),
                    op(r)
                ));
            }
            k => {
                // Recursion (k = 2) or mutual recursion (k = 3): r(a) = a op
                // r'(a - 1) down to 0, a type error at one depth sometimes.
                let other = if k == 2 { f.clone() } else { format!("{f}m") };
                for (me, next) in
                    [(f.clone(), other.clone()), (other.clone(), f.clone())].into_iter().take(k as usize - 1)
                {
                    let err = if r.below(3) == 0 {
                        format!("PUSHARGN 0\nPUSH {}\nEQ\nBR_COND {me}err\n", r.below(30))
                    } else {
                        String::new()
                    };
                    funcs.push(format!(
                        "{me}:\nPUSHARGN 0\nPUSH 0\nGT\nBR_COND {me}more\nPUSH {}\nRETURN\n{me}more:\n{err}PUSHARGN 0\nPUSHARGN 0\nPUSH 1\nSUB\nCALLARGS {next}/1\n{}\nRETURN\n{me}err:\nNIL\nPUSH 1\nADD\nRETURN",
                        r.below(4),
                        op(r)
                    ));
                }
            }
        }
        // The calls: in a counted loop (acc += f(i)) or once with the
        // accumulator, its depth kept small (acc mod 40); a method is sent
        // to an object made for it.
        if kind == 4 {
            main.extend([format!("NEW m={f}"), "PICK 1".into(), "PUSH 40".into(), "MOD".into()]);
            main.extend(["SEND m/1".into(), "ADD".into()]);
        } else if r.below(2) == 0 {
            let l = format!("m{seg}");
            main.extend([
                format!("PUSH {}", 1 + r.below(30)),
                format!("{l}loop:"),
                "PICK 0".into(),
                format!("BR_COND {l}body"),
            ]);
            main.extend([format!("BR {l}end"), format!("{l}body:"), "PICK 0".into(), format!("CALLARGS {f}/1")]);
            main.extend([
                "PICK 2".into(),
                "ADD".into(),
                "PUT 1".into(),
                "PUSH 1".into(),
                "SUB".into(),
                format!("BR {l}loop"),
            ]);
            main.extend([format!("{l}end:"), "POP".into()]);
        } else {
            main.extend(["PICK 0".into(), "PUSH 40".into(), "MOD".into(), format!("CALLARGS {f}/1"), "ADD".into()]);
        }
    }
    main.push("RETURN".into());
    main.extend(funcs);
    main.join("\n")
}

#[test]
fn random_call_programs_agree() {
    assert!(run_child("child_random_call_programs_agree"));
}

#[test]
#[ignore = "run by random_call_programs_agree in a child process (recursion, once seen, is remembered per module)"]
fn child_random_call_programs_agree() {
    jit::config().set_threshold(2);
    // Fused as soon as code gained cases: the fused code is tested too.
    jit::config().set_fusion_patience(0);
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    let n = how_many(150);
    // Programs without recursion first: compiled code entered in callees,
    // returns below the entry; then with recursion (compiled, its frames
    // spilled).
    for recursive in [false, true] {
        for i in 0..n {
            // (A call or jump past TLC's signed-byte offsets: drawn again.)
            let (src, a) = loop {
                let src = call_program(&mut r, recursive);
                match asm::assemble(&src) {
                    Err(e) if e.to_string().contains("is too far") => continue,
                    a => {
                        break (src.clone(), a.unwrap_or_else(|e| panic!("program {i} does not assemble: {e}\n{src}")))
                    }
                }
            };
            for input in [0, 5, 17, 39, -3] {
                let _ = both(&a, input, &format!("call program {i}:\n{src}\n"));
            }
        }
        // Compiled code ran, and some of it handed over (returns below
        // where it was entered among them); code run again on other inputs
        // had the pieces its switches reached fused in.
        let s = jit::stats();
        assert!(s.entries > 0 && s.resumptions > 0 && s.fusions > 0, "{s:?}");
    }
    let why = jit::last_decline().unwrap_or_default();
    assert!(!why.contains("panicked") && !why.contains("jitgen bug"), "{why}");
}

/// Language-level recursion compiles: the saved frames of a
/// recursion are spilled onto the continuation stack and the recursive call
/// runs the function's compiled code again. Fibonacci, recursion 10^5 deep,
/// and random programs with recursion, mutual recursion and type errors
/// raised deep inside it agree with plain; frames were spilled, and no
/// compilation declined because of a recursion.
#[test]
fn recursion_compiles() {
    assert!(run_child("child_recursion_compiles"));
}

#[test]
#[ignore = "run by recursion_compiles in a child process (the counts are the module's)"]
fn child_recursion_compiles() {
    jit::config().set_threshold(2);
    let fib = program("fib_recursive");
    for (n, want) in [(0, "0"), (1, "1"), (2, "1"), (10, "55"), (24, "46368")] {
        assert_eq!(both(&fib, n, "fib_recursive").0, Ok(want.into()));
    }
    let d = asm::assemble(DEEP).expect("assembles");
    assert_eq!(both(&d, 100_000, "deep recursion").0, Ok("5000050000".into()));
    let spilled = jit::stats().spills;
    assert!(spilled > 0, "{:?}", jit::stats());
    let mut r = Rng(0x0024_5eed_cafe_f00d);
    for i in 0..how_many(300) {
        let (src, a) = loop {
            let src = call_program(&mut r, true);
            if let Ok(a) = asm::assemble(&src) {
                break (src, a);
            }
        };
        for input in [0, 3, 26, 39, 200] {
            let _ = both(&a, input, &format!("recursive program {i}:\n{src}\n"));
        }
    }
    let s = jit::stats();
    assert!(s.spills > spilled && s.entries > 0, "{s:?}");
    // (A recursion whose arguments are known while compiling unrolls, up
    // to `MAX_VIRTUAL_PTRS` frames, then declines: that one the
    // interpreter runs.)
    let why = jit::last_decline().unwrap_or_default();
    assert!(!why.contains("language-level") && !why.contains("panicked") && !why.contains("jitgen bug"), "{why}");
}

/// Compiled recursion run again and again in one thread that has code for
/// other programs, under the default hot-spot policy, as the harness runs
/// it: its code, entered where the interpreter has saved frames, hands over
/// at the return below its entry at the end of each run, after a whole
/// subtree of calls in compiled code, and is still entered at every run
/// (a piece of code that hands over after little work may be retired).
#[test]
fn recursive_code_is_kept_over_many_runs() {
    assert!(run_child("child_recursive_code_is_kept_over_many_runs"));
}

#[test]
#[ignore = "run by recursive_code_is_kept_over_many_runs in a child process (the default policy)"]
fn child_recursive_code_is_kept_over_many_runs() {
    // As in the harness: the thread has code for other programs first.
    for (name, n) in [("f1", 300), ("factorial", 300_000), ("fibonacci", 300_000), ("accumulator", 300_000)] {
        let _ = run(&program(name), n, true);
    }
    let fib = program("fib_recursive");
    for _ in 0..8 {
        assert_eq!(run(&fib, 30, true).0 .0, Ok("832040".into()));
    }
    let before = jit::stats();
    assert!(before.spills > 0, "{before:?}");
    for _ in 0..4 {
        assert_eq!(run(&fib, 30, true).0 .0, Ok("832040".into()));
    }
    let s = jit::stats();
    assert!(s.entries - before.entries >= 4, "compiled code still runs each time: {s:?} {:?}", jit::last_decline());
}

/// Runs one ignored test of this binary in a child process: a fresh
/// process, whose hot-spot policy is the default one (the tests above set
/// explicit thresholds, which are exact and have no warm-up).
#[track_caller]
fn run_child(test: &str) -> bool {
    common::run_child(test, None)
}

#[test]
fn a_loop_entered_a_few_merge_points_in_compiles_once_over_many_calls() {
    assert!(run_child("child_f1_compiles_once_over_many_calls"));
}

#[test]
#[ignore = "run by a_loop_entered_a_few_merge_points_in_compiles_once_over_many_calls in a child process"]
fn child_f1_compiles_once_over_many_calls() {
    assert!(jit::config().hot_policy().warmup, "the default policy");
    let a = program("f1");
    let want = run(&a, 200, false);
    // f1's compiled loop nest starts about 17 merge points into a call.
    let start = std::time::Instant::now();
    while jit::stats().compilations == 0 {
        assert_eq!(run(&a, 200, true), want);
        assert!(start.elapsed() < std::time::Duration::from_secs(120), "never compiled");
    }
    // Each later call interprets up to that entry with its cold visits
    // sampled, and must still find the code there: missing it interprets
    // the loop and makes the loop's other merge points hot, which compiled
    // more copies of it.
    let entries = jit::stats().entries;
    for _ in 0..40 {
        assert_eq!(run(&a, 200, true), want);
    }
    let s = jit::stats();
    assert_eq!((s.compilations, s.declined), (1, 0), "{s:?}");
    assert!(s.entries >= entries + 40, "{s:?}");
}
