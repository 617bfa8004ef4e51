use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    /// `x` is declared, then given its value: one error, at the `let`, not
    /// one more at each use of `x`.
    pub fn f(a: i64) -> i64 {
        let x;
        x = a * 2;
        x + 1
    }
}

fn main() {}
