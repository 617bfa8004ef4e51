use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub struct Chunk {
        pub code: Vec<u8>,
    }

    pub struct Vm {
        pub chunk: Chunk,
        pub ip: usize,
        pub stack: Vec<i64>,
    }

    impl Vm {
        // `self` is split into its fields before the analysis: the message
        // still names them as written. The program is written to (a field
        // only read would be frozen, and the hint satisfied).
        pub fn run(&mut self) -> i64 {
            loop {
                hint!(global_merge_point);
                let op = hint!(self.chunk.code[self.ip], concrete);
                self.ip += 1;
                if op == 0 {
                    return self.stack.len() as i64;
                }
                self.stack.push(op as i64);
                self.chunk.code.push(op);
            }
        }
    }
}

fn main() {}
