use jitgen::prelude::*;

#[jit_interpreter(fast)]
mod m {
    pub fn f(x: i64) -> i64 {
        x
    }
}

fn main() {}
