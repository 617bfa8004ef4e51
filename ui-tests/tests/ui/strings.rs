// Strings as a tutorial VM uses them: what jitgen knows of `String` (built,
// appended to, formatted, an error message) is accepted; the rest is refused
// at each construct with what to write instead, and nothing cascades from
// the refusals.
use jitgen::prelude::*;

#[jit_interpreter]
mod m {
    use super::*;

    pub fn run(code: &[u8], _name: &str) -> Result<String, String> {
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
                3 => {
                    if out == "done" {
                        return Ok(out);
                    }
                }
                4 => {
                    let greeting = "hi";
                    out.push_str(greeting);
                }
                5 => {
                    let n = out.chars().count();
                    stack.push(n as i64);
                }
                _ => return Ok(out),
            }
        }
    }
}

fn main() {}
