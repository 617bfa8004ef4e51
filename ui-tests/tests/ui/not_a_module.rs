use jitgen::prelude::*;

#[jit_interpreter]
fn f(x: i64) -> i64 {
    x
}

fn main() {}
