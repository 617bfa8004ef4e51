//! A Brainfuck interpreter as the tutorials write one: the program and its
//! jump table are slices, the tape a `&mut [u8]` worked on in place, the
//! instruction read with `hint!(code[pc], concrete)`, the output pushed onto
//! a `Vec`. Residual code loads and stores the tape's cells: what it knows of
//! them between instructions is the residual passes' (`ir/passes/forward.rs`).

use jitgen::prelude::*;

#[jit_interpreter]
pub mod bf {
    use jitgen::prelude::*;

    /// Runs `code` (its brackets' partners in `jumps`) on `tape`, appending
    /// what it prints to `out`.
    pub fn run(code: &[u8], jumps: &[usize], tape: &mut [u8], out: &mut Vec<u8>) {
        let mut pc = 0usize;
        let mut ptr = 0usize;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            match op {
                b'+' => tape[ptr] = tape[ptr].wrapping_add(1),
                b'-' => tape[ptr] = tape[ptr].wrapping_sub(1),
                b'>' => ptr += 1,
                b'<' => ptr -= 1,
                b'.' => out.push(tape[ptr]),
                b'[' => {
                    if tape[ptr] == 0 {
                        pc = jumps[pc];
                    }
                }
                b']' => {
                    if tape[ptr] != 0 {
                        pc = jumps[pc];
                    }
                }
                _ => {}
            }
            pc += 1;
        }
    }
}

/// Where each bracket's partner is; `None` when the brackets do not balance.
pub fn jumps(code: &[u8]) -> Option<Vec<usize>> {
    let mut jumps = vec![0; code.len()];
    let mut open = vec![];
    for (i, c) in code.iter().enumerate() {
        if *c == b'[' {
            open.push(i);
        } else if *c == b']' {
            let o = open.pop()?;
            jumps[i] = o;
            jumps[o] = i;
        }
    }
    open.is_empty().then_some(jumps)
}

/// Programs for tests and the harness.
pub mod programs {
    /// Loops nested `depth` deep, each turning `turns` times; the innermost
    /// counts its cell down from `turns` (`turns^depth` decrements), and
    /// the last cell is printed.
    pub fn nested_loops(depth: usize, turns: u8) -> Vec<u8> {
        let set = "+".repeat(turns as usize);
        let mut code = String::new();
        for _ in 0..depth - 1 {
            code.push_str(&set);
            code.push_str("[>");
        }
        code.push_str(&set);
        code.push_str("[-]");
        for _ in 0..depth - 1 {
            code.push_str("<-]");
        }
        code.push('.');
        code.into_bytes()
    }
}
