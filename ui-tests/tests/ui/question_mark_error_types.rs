use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub enum A {
        Bad,
    }
    pub enum B {
        Worse,
    }

    fn step(x: i64) -> Result<i64, A> {
        if x < 0 { Err(A::Bad) } else { Ok(x) }
    }

    pub fn run(x: i64) -> Result<i64, B> {
        let y = step(x)?;
        Ok(y)
    }
}

fn main() {}
