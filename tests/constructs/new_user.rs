//! Interpreters as a new user writes them, with Rust jitgen models only as
//! opaque values: a portal taking text (`name: &str`, `init: &str`) that
//! only Rust's own code reads (formatted, split, parsed), a local array
//! made by a repeat expression (`[0u8; 300]`, a Brainfuck tape), and a
//! `Vec` collected by Rust's iterators before the loop. Before, each of
//! these left the whole module to Rust. Both give back
//! `Result<Vec<_>, String>`, which compiled code could not return before
//! (the portal never compiled). Every result is the whole final
//! state (the output and a digest of the tape; the whole stack), compared
//! with `jit::plain` through the portal and `jit::specialize`, on fixed and
//! random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod bf_tape {
    use jitgen::prelude::*;

    /// Runs a Brainfuck program for at most `fuel` steps; gives its output,
    /// then a digest of the tape, the pointer and the steps left; or an
    /// error message naming `name`.
    pub fn run(program: &[u8], name: &str, fuel: u32) -> Result<Vec<u8>, String> {
        let mut tape = [0u8; 300];
        let mut ptr = 0usize;
        let mut pc = 0usize;
        let mut steps = fuel;
        let mut out = Vec::new();
        while pc < program.len() && steps > 0 {
            hint!(global_merge_point);
            steps -= 1;
            match hint!(program[pc], concrete) {
                b'>' => {
                    if ptr + 1 >= tape.len() {
                        return Err(format!("{name}: off the tape's end at {pc}"));
                    }
                    ptr += 1;
                }
                b'<' => {
                    if ptr == 0 {
                        return Err(format!("{name}: off the tape's start at {pc}"));
                    }
                    ptr -= 1;
                }
                b'+' => tape[ptr] = tape[ptr].wrapping_add(1),
                b'-' => tape[ptr] = tape[ptr].wrapping_sub(1),
                b'.' => out.push(tape[ptr]),
                b'[' => {
                    if tape[ptr] == 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc += 1;
                            match program[pc] {
                                b'[' => depth += 1,
                                b']' => depth -= 1,
                                _ => {}
                            }
                        }
                    }
                }
                b']' => {
                    if tape[ptr] != 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc -= 1;
                            match program[pc] {
                                b']' => depth += 1,
                                b'[' => depth -= 1,
                                _ => {}
                            }
                        }
                    }
                }
                _ => {}
            }
            pc += 1;
        }
        let mut digest: u8 = 0;
        let mut i = 0;
        while i < tape.len() {
            digest = digest.wrapping_mul(31).wrapping_add(tape[i]);
            i += 1;
        }
        out.push(digest);
        out.push(ptr as u8);
        out.push(steps as u8);
        out.push((steps >> 8) as u8);
        Ok(out)
    }
}

#[jit_interpreter]
mod text_stack {
    use jitgen::prelude::*;

    /// Ops: 0 k: push k, 1 add, 2 dup, 3 t: jump to t while the top, popped,
    /// is not zero, 4 decrement the top. The stack starts as `init`, comma-
    /// separated numbers. Gives the whole stack, then the steps left; an
    /// error names the operation that underflowed.
    pub fn run(code: &[u8], init: &str, fuel: i64) -> Result<Vec<i64>, String> {
        let mut stack: Vec<i64> =
            init.split(',').filter(|s| !s.trim().is_empty()).map(|s| s.trim().parse().unwrap_or(0)).collect();
        let mut pc = 0;
        let mut steps = fuel;
        while pc < code.len() && steps > 0 {
            hint!(global_merge_point);
            steps -= 1;
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 && pc < code.len() {
                let k = hint!(code[pc], concrete);
                pc += 1;
                stack.push(k as i64);
            } else if op == 1 {
                let b = stack.pop().ok_or(format!("add at {pc}: empty"))?;
                let a = stack.pop().ok_or(format!("add at {pc}: one value"))?;
                stack.push(a.wrapping_add(b));
            } else if op == 2 && !stack.is_empty() {
                let a = stack[stack.len() - 1];
                stack.push(a);
            } else if op == 3 && pc < code.len() {
                let t = hint!(code[pc], concrete);
                pc += 1;
                if let Some(top) = stack.pop() {
                    if top != 0 {
                        pc = t as usize;
                    }
                }
            } else if op == 4 && !stack.is_empty() {
                let n = stack.len();
                stack[n - 1] = stack[n - 1].wrapping_sub(1);
            }
        }
        stack.push(steps);
        Ok(stack)
    }
}

fn check_bf(program: &[u8], fuel: u32) {
    let want = bf_tape::jit::plain::run(program, "prog", fuel);
    assert_eq!(bf_tape::run(program, "prog", fuel), want, "{:?}", String::from_utf8_lossy(program));
    assert_eq!(
        bf_tape::jit::specialize::run(program).call("prog", fuel),
        want,
        "{:?}",
        String::from_utf8_lossy(program)
    );
}

fn check_stack(code: &[u8], init: &str, fuel: i64) {
    let want = text_stack::jit::plain::run(code, init, fuel);
    assert_eq!(text_stack::run(code, init, fuel), want, "{code:?} {init:?}");
    assert_eq!(text_stack::jit::specialize::run(code).call(init, fuel), want, "{code:?} {init:?}");
}

#[test]
fn text_parameters_and_local_arrays_compile_and_agree_with_plain() {
    assert!(
        bf_tape::jit::left_to_rust().iter().all(|l| !l.starts_with("the module")),
        "{:?}",
        bf_tape::jit::left_to_rust()
    );
    assert!(
        text_stack::jit::left_to_rust().iter().all(|l| !l.starts_with("the module")),
        "{:?}",
        text_stack::jit::left_to_rust()
    );
    for t in [Some(0), Some(1), Some(5), None] {
        if let Some(t) = t {
            bf_tape::jit::config().set_threshold(t);
            text_stack::jit::config().set_threshold(t);
        }
        for p in ["++++++++[>++++++++<-]>+.[-]++[>+++<-]>.", "<", "+[>+]", ">>>+++[<+>-]<.", "+++[>++[>+<-]<-]>>."] {
            check_bf(p.as_bytes(), 5000);
        }
        for init in ["", "3", " 5, 7 ,x", "1,2,3"] {
            check_stack(&[0, 4, 4, 2, 3, 2, 1], init, 1000);
            check_stack(&[2, 1, 2, 4, 2, 3, 3], init, 1000);
        }
    }
    bf_tape::jit::config().set_threshold(0);
    text_stack::jit::config().set_threshold(0);
    check_bf(b"++[>+++<-]>.", 100);
    check_stack(&[0, 9, 4, 2, 3, 2], "1", 100);
    assert!(bf_tape::jit::stats().entries > 0, "{:?}", bf_tape::jit::stats());
    assert!(text_stack::jit::stats().entries > 0, "{:?}", text_stack::jit::stats());
}

#[test]
fn random_programs_over_text_and_local_arrays_agree_with_plain() {
    let mut rng = crate::common::Rng(0x7e57_a11a);
    for i in 0..crate::common::how_many(300) {
        let t = [0, 1, 2, 5][i % 4];
        bf_tape::jit::config().set_threshold(t);
        text_stack::jit::config().set_threshold(t);
        // Brainfuck with balanced brackets.
        let mut p = vec![];
        let mut open = 0;
        for _ in 0..rng.below(24) {
            match rng.below(9) {
                0 => p.push(b'>'),
                1 => p.push(b'<'),
                2 | 3 => p.push(b'+'),
                4 => p.push(b'-'),
                5 => p.push(b'.'),
                6 => {
                    p.push(b'[');
                    open += 1;
                }
                7 if open > 0 => {
                    p.push(b']');
                    open -= 1;
                }
                _ => p.push(b'x'),
            }
        }
        p.extend(std::iter::repeat_n(b']', open));
        check_bf(&p, 1 + rng.below(3000) as u32);
        let len = 1 + rng.below(10) as usize;
        let mut code = vec![];
        while code.len() < len {
            match rng.below(5) {
                0 => code.extend([0, rng.below(7) as u8]),
                3 => code.extend([3, rng.below(len as u64) as u8]),
                op => code.push(op as u8),
            }
        }
        let init: Vec<String> = (0..rng.below(4)).map(|_| rng.below(9).to_string()).collect();
        check_stack(&code, &init.join(","), 1 + rng.below(500) as i64);
    }
}
