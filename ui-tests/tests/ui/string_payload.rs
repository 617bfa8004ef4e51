// A string payload is refused at its type and at each literal, and its
// variant's uses add no errors of their own.
use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub enum Error {
        Type(&'static str),
        Underflow,
    }

    pub fn run(code: &[u8]) -> Result<i64, Error> {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => return Err(Error::Type("expected an int")),
                1 => return Err(Error::Underflow),
                _ => {}
            }
        }
    }
}

fn main() {}
