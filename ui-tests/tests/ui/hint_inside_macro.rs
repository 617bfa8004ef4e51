use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn f(x: i64) -> i64 {
        debug_assert!(hint!(x, promote) > 0);
        x
    }
}

fn main() {}
