//! The register VM (interpreters/regvm): one register file shared by
//! windowed calls, the depth checked at each call (`frames.len()`), the
//! register file grown past its end, `Ret` promoting. Every run compares
//! the result and the whole final machine with `jit::plain`: registers,
//! frames, program counter, base and the count of steps.

use crate::common;

use regvm_interp::programs;
use regvm_interp::vm::{jit, Op, Vm, VmError};
use std::sync::Mutex;

type Final = (Result<i64, VmError>, String);

fn machine(code: &[Op], pc: usize, max_depth: usize) -> Vm {
    Vm::new(code.to_vec(), pc, max_depth)
}

/// The threshold is the module's: tests that set it run one at a time.
static THRESHOLD: Mutex<()> = Mutex::new(());

/// Runs `code` through the portal at thresholds 0 and 1000 and through
/// `jit::specialize`; each must leave what plain leaves.
fn agree(code: &[Op], pc: usize, max_depth: usize, what: &dyn std::fmt::Display) -> Final {
    let want = common::whole(machine(code, pc, max_depth), jit::plain::Vm::run);
    for threshold in [0, 1000] {
        jit::config().set_threshold(threshold);
        let got = common::whole(machine(code, pc, max_depth), Vm::run);
        assert_eq!(got, want, "{what}: portal at threshold {threshold}; decline: {:?}", jit::last_decline());
    }
    let got = common::whole(machine(code, pc, max_depth), jit::specialize::Vm::run);
    assert_eq!(got, want, "{what}: specialized");
    want
}

/// Random programs: functions of one argument (register 0, never written,
/// so that it decreases along every chain of calls) that return at once
/// below 1 and otherwise compute, call random functions (themselves
/// included) on the argument less one or two in a window 3 to 6 registers
/// on, and run counted loops without calls; an entry that calls them. The
/// depth limit is random, so that some runs overflow.
struct ProgramWriter {
    rng: common::Rng,
    code: Vec<Op>,
    /// Calls to patch: (index, callee).
    calls: Vec<(usize, usize)>,
}

impl ProgramWriter {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// A register other than the argument and the loop counter.
    fn scratch(&mut self) -> u8 {
        1 + self.below(5) as u8
    }

    fn any(&mut self) -> u8 {
        self.below(8) as u8
    }

    fn simple(&mut self) {
        let (d, a, b) = (self.scratch(), self.any(), self.any());
        let op = match self.below(5) {
            0 => Op::LoadI(d, self.below(7) as i64 - 3),
            1 => Op::Mov(d, a),
            2 => Op::Add(d, a, b),
            3 => Op::Sub(d, a, b),
            _ => Op::Lt(d, a, b),
        };
        self.code.push(op);
    }

    fn call(&mut self, callee: usize, less: i64) {
        let base = 3 + self.below(4) as u8;
        self.code.push(Op::LoadI(1, less));
        self.code.push(Op::Sub(base, 0, 1));
        self.calls.push((self.code.len(), callee));
        self.code.push(Op::Call { target: 0, base });
        // The result, kept where later calls' windows do not reach.
        if self.below(2) == 0 {
            self.code.push(Op::Add(2, 2, base));
        }
    }

    fn counted_loop(&mut self) {
        // r6 counts down; the body neither calls nor writes r6.
        let turns = 1 + self.below(4) as i64;
        self.code.push(Op::LoadI(6, turns));
        let head = self.code.len();
        for _ in 0..1 + self.below(3) {
            self.simple();
        }
        self.code.push(Op::LoadI(1, 1));
        self.code.push(Op::Sub(6, 6, 1));
        let exit = self.code.len();
        self.code.push(Op::Jz(6, 0));
        self.code.push(Op::Jmp(head));
        let after = self.code.len();
        self.code[exit] = Op::Jz(6, after);
    }

    fn function(&mut self, nfuns: usize) {
        // if !(0 < n) go to the leaf.
        self.code.push(Op::LoadI(1, 0));
        self.code.push(Op::Lt(2, 1, 0));
        let test = self.code.len();
        self.code.push(Op::Jz(2, 0));
        self.code.push(Op::LoadI(2, 0));
        for _ in 0..1 + self.below(4) {
            match self.below(4) {
                0 | 1 => {
                    let (callee, less) = (self.below(nfuns as u64) as usize, 1 + self.below(2) as i64);
                    self.call(callee, less)
                }
                2 => self.counted_loop(),
                _ => self.simple(),
            }
        }
        let r = self.any();
        self.code.push(Op::Ret(r));
        let leaf = self.code.len();
        self.code[test] = Op::Jz(2, leaf);
        for _ in 0..self.below(3) {
            self.simple();
        }
        let r = self.below(3) as u8;
        self.code.push(Op::Ret(r));
    }

    /// The program, where it starts, and its depth limit.
    fn program(seed: u64) -> (Vec<Op>, usize, usize) {
        let mut w = ProgramWriter { rng: common::Rng(seed | 1), code: vec![], calls: vec![] };
        let nfuns = 1 + w.below(3) as usize;
        let mut starts = vec![];
        for _ in 0..nfuns {
            starts.push(w.code.len());
            w.function(nfuns);
        }
        let entry = w.code.len();
        let n = 1 + w.below(9) as i64;
        w.code.push(Op::LoadI(0, n));
        for _ in 0..1 + w.below(2) {
            let callee = w.below(nfuns as u64) as usize;
            w.call(callee, 0);
        }
        let r = w.any();
        w.code.push(Op::Ret(r));
        for (at, callee) in std::mem::take(&mut w.calls) {
            if let Op::Call { base, .. } = w.code[at] {
                w.code[at] = Op::Call { target: starts[callee], base };
            }
        }
        let max_depth = 2 + w.below(12) as usize;
        (w.code, entry, max_depth)
    }
}

/// Random programs of the VM's shape agree with plain in their whole final
/// state, through the portal at thresholds 0 and 1000 and through
/// `jit::specialize`. `JITGEN_RANDOM_PROGRAMS` sets how many.
#[test]
fn random_windowed_calls_agree_with_plain() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = common::Rng(0x5eed_7e91);
    let (mut overflowed, mut deep, n) = (0, 0, common::how_many(1500));
    for _ in 0..n {
        let (code, pc, max_depth) = ProgramWriter::program(rng.next());
        let what = format!("{code:?} from {pc}, at most {max_depth} frames");
        let (result, _) = agree(&code, pc, max_depth, &what);
        match result {
            Err(VmError::StackOverflow { .. }) => overflowed += 1,
            Ok(_) => deep += (max_depth > 6) as usize,
            Err(e) => panic!("{what}: {e:?}"),
        }
    }
    // Some runs overflow, most do not.
    assert!(overflowed > 0 && overflowed * 2 < n && deep > 0, "{overflowed} of {n} overflowed, {deep} deep");
    let s = jit::stats();
    assert!(s.spills > 0 && s.flexswitch_cases > 0, "{s:?}");
}

/// Recursions whose calls check the depth compile (their frames spilled,
/// `frames.len()` counted on the continuation stack) and agree with plain:
/// fibonacci, a recursion as deep as the limit, and one a frame deeper,
/// whose error leaves compiled code through a side compiled when first
/// taken.
#[test]
fn depth_checked_recursions_agree_with_plain() {
    let _one = THRESHOLD.lock().unwrap_or_else(|e| e.into_inner());
    let (before, lazy) = (jit::stats().spills, jit::stats().lazy_sides);
    let (code, pc) = programs::fib(15);
    assert_eq!(agree(&code, pc, 64, &"fib(15)").0, Ok(610));
    let (code, pc) = programs::sum(40);
    assert_eq!(agree(&code, pc, 41, &"sum(40)").0, Ok(820));
    assert_eq!(agree(&code, pc, 40, &"sum(40) past the limit").0, Err(VmError::StackOverflow { depth: 40 }));
    let (code, pc) = programs::sum_loop(1000);
    assert_eq!(agree(&code, pc, 1, &"a loop").0, Ok(499_500));
    let s = jit::stats();
    assert!(s.spills > before && s.lazy_sides > lazy, "{s:?}");
}
