//! What a wrapper around the operand stack costs in compiled code: `cargo
//! run --release --example wrapper_cost [-- N] [--runs R]`.
//!
//! One stack machine written twice: its operand stack a bare `Vec<i64>`
//! local, and a tuple struct `Stack(Vec<i64>)` with `push`/`pop` methods.
//! Both run the same counted loop (locals on the stack) through their
//! portals; prints the medians, plain and JIT, and the ratio wrapper/bare.

#[path = "common/timing.rs"]
mod timing;

use std::time::Instant;

use jitgen::prelude::*;
use timing::{median, size_and_runs};

#[jit_interpreter]
mod machines {
    use super::*;

    /// The operand stack, wrapped.
    pub struct Stack(Vec<i64>);

    impl Stack {
        fn push(&mut self, v: i64) {
            self.0.push(v);
        }

        fn pop(&mut self) -> i64 {
            self.0.pop().unwrap_or(0)
        }

        fn get(&self, i: usize) -> i64 {
            self.0[i]
        }

        fn set(&mut self, i: usize, v: i64) {
            self.0[i] = v;
        }
    }

    /// Ops (each with an argument byte): 0 push the argument, 1 load local
    /// k, 2 store local k, 3 add, 4 sub, 5 jump if zero, 6 jump, 7 halt.
    pub fn bare(code: &[u8], n: i64) -> i64 {
        let mut stack: Vec<i64> = vec![n, 0];
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            let arg = code[pc + 1];
            pc += 2;
            match op {
                0 => stack.push(arg as i64),
                1 => {
                    let v = stack[arg as usize];
                    stack.push(v);
                }
                2 => {
                    let v = stack.pop().unwrap_or(0);
                    stack[arg as usize] = v;
                }
                3 => {
                    let b = stack.pop().unwrap_or(0);
                    let a = stack.pop().unwrap_or(0);
                    stack.push(a.wrapping_add(b));
                }
                4 => {
                    let b = stack.pop().unwrap_or(0);
                    let a = stack.pop().unwrap_or(0);
                    stack.push(a.wrapping_sub(b));
                }
                5 => {
                    if stack.pop().unwrap_or(0) == 0 {
                        pc = arg as usize;
                    }
                }
                6 => pc = arg as usize,
                _ => return stack[1],
            }
        }
    }

    /// `bare` with the stack in the wrapper.
    pub fn wrapped(code: &[u8], n: i64) -> i64 {
        let mut stack = Stack(vec![n, 0]);
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            let arg = code[pc + 1];
            pc += 2;
            match op {
                0 => stack.push(arg as i64),
                1 => {
                    let v = stack.get(arg as usize);
                    stack.push(v);
                }
                2 => {
                    let v = stack.pop();
                    stack.set(arg as usize, v);
                }
                3 => {
                    let b = stack.pop();
                    let a = stack.pop();
                    stack.push(a.wrapping_add(b));
                }
                4 => {
                    let b = stack.pop();
                    let a = stack.pop();
                    stack.push(a.wrapping_sub(b));
                }
                5 => {
                    if stack.pop() == 0 {
                        pc = arg as usize;
                    }
                }
                6 => pc = arg as usize,
                _ => return stack.get(1),
            }
        }
    }
}

fn main() {
    let (n, runs) = size_and_runs(10_000_000);
    // sum += i for i = n..1 (locals 0: i, 1: sum).
    let code: Vec<u8> =
        std::hint::black_box(vec![1, 0, 5, 22, 1, 1, 1, 0, 3, 0, 2, 1, 1, 0, 0, 1, 4, 0, 2, 0, 6, 0, 7, 0]);
    let want = machines::jit::plain::bare(&code, n);
    let mut t = [vec![], vec![], vec![], vec![]];
    for _ in 0..runs {
        let ways: [&dyn Fn() -> i64; 4] = [
            &|| machines::jit::plain::bare(&code, n),
            &|| machines::jit::plain::wrapped(&code, n),
            &|| machines::bare(&code, n),
            &|| machines::wrapped(&code, n),
        ];
        for (k, f) in ways.iter().enumerate() {
            let s = Instant::now();
            let r = f();
            t[k].push(s.elapsed());
            assert_eq!(r, want);
        }
    }
    let [pb, pw, jb, jw] = t.map(median);
    println!("a counted loop of {n} turns, median of {runs} runs");
    println!("plain: bare Vec {pb:>10.2?}, wrapper {pw:>10.2?}");
    println!("JIT:   bare Vec {jb:>10.2?}, wrapper {jw:>10.2?}");
    println!(
        "JIT over plain: bare {:.1}x, wrapper {:.1}x; wrapper / bare under the JIT: {:.2}x",
        pb.as_secs_f64() / jb.as_secs_f64(),
        pw.as_secs_f64() / jw.as_secs_f64(),
        jw.as_secs_f64() / jb.as_secs_f64()
    );
    let s = machines::jit::stats();
    println!(
        "compilations {}, entries {}, declined {}: {:?}",
        s.compilations,
        s.entries,
        s.declined,
        machines::jit::last_decline()
    );
}
