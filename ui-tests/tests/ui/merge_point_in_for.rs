use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn run(code: &[u8], mut acc: i64) -> i64 {
        for pc in 0..code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            acc += op as i64;
        }
        acc
    }
}

fn main() {}
