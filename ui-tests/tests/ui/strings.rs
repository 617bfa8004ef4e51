// Strings, as a tutorial VM uses them for errors and output, are refused at
// each construct with what to write instead, and nothing cascades from them
// (the `?`s on a string error, the uses of the refused output buffer).
use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn run(code: &[u8]) -> Result<String, String> {
        let mut out = String::new();
        let mut stack: Vec<i64> = Vec::new();
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => stack.push(pc as i64),
                1 => {
                    let a = stack.pop().ok_or("stack underflow")?;
                    out.push_str(&a.to_string());
                }
                2 => return Err(format!("unknown op {op}")),
                _ => return Ok(out),
            }
        }
    }
}

fn main() {}
