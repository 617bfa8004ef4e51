use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn f(x: i64) -> i64 {
        let add = |y: i64| y + 1;
        add(x)
    }
}

fn main() {}
