use jitgen::prelude::*;

#[jit_interpreter]
mod interpreter;

fn main() {}
