use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn f(x: i64) -> i64 {
        hint!(x, constant)
    }
}

fn main() {}
