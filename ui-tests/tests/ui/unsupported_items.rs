use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    static mut COUNTER: i64 = 0;

    pub fn generic<T: Copy>(x: T) -> T {
        x
    }

    pub fn text(s: String) -> usize {
        s.len()
    }
}

fn main() {}
