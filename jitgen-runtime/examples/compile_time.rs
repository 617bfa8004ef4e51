//! Compile time per residual operation (a benchmark, not a test):
//! `cargo run --release -p jitgen-runtime --example compile_time`.
//!
//! A generating extension unrolls a program of N operations on two red inputs
//! (an interpreter loop whose pc is green): a merge point per step, one residual
//! operation per step. It prints the time spent in the extension and the
//! scheduler, in Cranelift, and per residual operation, as medians of several runs.

use std::time::{Duration, Instant};

use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::ResidualFn;
use jitgen_runtime::schedule::{Compilation, Limits, MergeKind};
use jitgen_runtime::state::{Frame, JitState};

#[derive(Clone)]
struct Step {
    pc: usize,
    acc: RedBox,
    y: RedBox,
}

impl Frame for Step {
    type Key = usize;
    fn key(&self) -> usize {
        self.pc
    }
    fn reds(&self) -> Vec<RedBox> {
        vec![self.acc, self.y]
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        self.acc = r[0];
        self.y = r[1];
    }
}

const OPS: [BinOp; 4] = [BinOp::Add, BinOp::Sub, BinOp::Xor, BinOp::Mul];

fn record(program: &[u8]) -> jitgen_runtime::builder::ResidualFunction {
    let limits = Limits { max_ops: usize::MAX, ..Limits::default() };
    let mut c: Compilation<Step> = Compilation::new("unrolled", &[ValTy::I64; 2], &[ValTy::I64], limits);
    let ins = c.inputs();
    let mut next = Some(JitState::new(Step { pc: 0, acc: ins[0], y: ins[1] }));
    while let Some(s) = next.take() {
        let Some(s) = c.merge(s, MergeKind::Join) else { break };
        let Step { pc, acc, y } = s.top().clone();
        if pc == program.len() {
            c.finish_return(&[acc]);
            break;
        }
        let op = OPS[program[pc] as usize % OPS.len()];
        let acc = c.b.red_bin(op, Overflow::Wrap, &acc, &y);
        next = Some(JitState::new(Step { pc: pc + 1, acc, y }));
    }
    c.finish().expect("no budget")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut backend = jitgen_runtime::residual::native_backend().expect("host supported");
    // The first compilation in a process pays for warming up: not counted.
    let _ = ResidualFn::compile(&record(&[0, 1]), &mut backend).unwrap();
    println!(
        "{:>6} {:>6} {:>14} {:>14} {:>14} {:>12}",
        "N", "ops", "extension us", "cranelift us", "total us", "us per op"
    );
    for n in [10usize, 100, 1000, 3000] {
        let program: Vec<u8> = (0..n).map(|i| (i * 7 % 11) as u8).collect();
        let (mut rec, mut cl) = (vec![], vec![]);
        let mut ops = 0;
        for _ in 0..9 {
            let t = Instant::now();
            let f = record(&program);
            rec.push(t.elapsed());
            ops = f.op_count();
            let t = Instant::now();
            let code = ResidualFn::compile(&f, &mut backend).unwrap();
            cl.push(t.elapsed());
            assert!(code.call_words(&[3, 5]).is_ok());
        }
        let (r, c) = (median(rec), median(cl));
        let total = (r + c).as_secs_f64() * 1e6;
        println!(
            "{n:>6} {ops:>6} {:>14.1} {:>14.1} {total:>14.1} {:>12.3}",
            r.as_secs_f64() * 1e6,
            c.as_secs_f64() * 1e6,
            total / ops as f64
        );
    }
}
