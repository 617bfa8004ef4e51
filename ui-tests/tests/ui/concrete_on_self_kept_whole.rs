use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    #[derive(Clone, PartialEq)]
    pub enum Mode {
        Run,
        Stop,
    }

    pub struct Vm {
        pub code: Vec<u8>,
        pub pc: usize,
        pub mode: Mode,
    }

    impl Vm {
        // A field of an enum neither `Copy` nor `Default` keeps `self`
        // whole: the message says so where the counter is read.
        pub fn run(&mut self) -> usize {
            while self.mode == Mode::Run {
                hint!(global_merge_point);
                let op = hint!(self.code[self.pc], concrete);
                self.pc += 1;
                if op == 0 {
                    self.mode = Mode::Stop;
                }
            }
            self.pc
        }
    }
}

fn main() {}
