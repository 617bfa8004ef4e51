//! What the JIT cannot compile yet is declined, said why, and the interpreter
//! goes on with the same results.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod boxed {
    use super::*;

    pub struct Cell {
        pub value: i64,
        pub history: Vec<Vec<i64>>,
    }

    pub fn run(code: &[u8], x: i64) -> i64 {
        let mut acc = x;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            if op == 1 {
                // A struct with a field that is a list of lists: jitgen
                // cannot make it virtual yet.
                let c = Cell { value: acc, history: Vec::new() };
                acc = c.value + 1;
            } else {
                acc -= 1;
            }
            pc += 1;
        }
        acc
    }
}

#[test]
fn declined_compilations_continue_in_the_interpreter() {
    boxed::jit::config().set_threshold(0);
    let program = [1, 0, 1, 1];
    assert_eq!(boxed::run(&program, 5), boxed::jit::plain::run(&program, 5));
    // Each of the four positions was tried once, and declined.
    let first = boxed::jit::stats();
    assert_eq!((first.compilations, first.declined, first.entries), (4, 4, 0), "{first:?}");
    for x in 0..20 {
        assert_eq!(boxed::run(&program, x), boxed::jit::plain::run(&program, x));
    }
    // A declined key is remembered: no compiler runs again for it.
    assert_eq!(boxed::jit::stats().compilations, 4);
    let why = boxed::jit::last_decline().unwrap();
    assert!(why.contains("a Vec of non-scalars"), "{why}");
    // Programs without the allocation still compile (after declined keys a
    // portal skips up to `MAX_SKIP` visits: a few runs for this short one).
    for _ in 0..30 {
        assert_eq!(boxed::run(&[0, 0, 0], 10), 7);
    }
    let s = boxed::jit::stats();
    assert_eq!(s.declined, 4, "{s:?}");
    assert!(s.compilations > 4 && s.entries > 0, "{s:?}");
}
