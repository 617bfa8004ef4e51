use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub struct Vm {
        pub code: Vec<u8>,
        pub ip: usize,
    }

    impl Vm {
        // A flexswitch switches on a value: the program counter, not the
        // program.
        pub fn run(&mut self) -> u8 {
            loop {
                hint!(global_merge_point);
                let code = hint!(&self.code, promote);
                let op = code[self.ip];
                self.ip += 1;
                if op == 0 {
                    return op;
                }
            }
        }
    }
}

fn main() {}
