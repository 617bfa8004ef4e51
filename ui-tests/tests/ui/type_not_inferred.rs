use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn f() -> usize {
        let stack = Vec::new();
        stack.len()
    }
}

fn main() {}
