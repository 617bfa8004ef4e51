use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub struct Vm {
        pub acc: i64,
    }

    impl Vm {
        pub fn run(mut self, code: &[u8]) -> i64 {
            let mut pc = 0;
            while pc < code.len() {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                self.acc += op as i64;
                pc += 1;
            }
            self.acc
        }
    }
}

fn main() {}
