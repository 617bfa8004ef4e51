use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn run(code: &[u8], regs: &mut Vec<i64>) -> i64 {
        let mut pc = 0;
        let r = &mut regs[0];
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            *r += op as i64;
            pc += 1;
        }
        *r
    }
}

fn main() {}
