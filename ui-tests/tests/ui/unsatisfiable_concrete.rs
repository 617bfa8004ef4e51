use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn run(code: Vec<u8>, pc: usize) -> u8 {
        let op = hint!(code[pc], concrete);
        op
    }
}

fn main() {}
