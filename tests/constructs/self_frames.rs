//! A stack VM as a new user writes one, with its operand stack and its call
//! frames (`stack_offset`, return `ip`) as fields of `self`: `Ret` promotes
//! the popped return address and truncates the stack to the frame's offset,
//! `Get(i)` / `Set(i)` address `stack[offset + i]`, and `Lt` pushes
//! `if a < b { 1 } else { 0 }`. A push whose argument branches used to carry
//! the stack read before the branch into its join, which wrote the whole
//! stack back into `self` at every comparison of compiled code. Every result
//! is the whole final state (the result or error, the stack, the frames),
//! compared with `jit::plain` through the portal and `jit::specialize`, on
//! recursive programs and random call programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod self_vm {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Sub,
        Lt,
        JumpIfFalse(usize),
        Jump(usize),
        Get(usize),
        Set(usize),
        Call(usize, usize),
        Ret,
        Pop,
        Halt,
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct StackFrame {
        pub stack_offset: usize,
        pub ip: usize,
    }

    pub struct Vm {
        pub stack: Vec<i64>,
        pub frames: Vec<StackFrame>,
    }

    impl Vm {
        pub fn new() -> Vm {
            Vm { stack: Vec::new(), frames: Vec::new() }
        }

        fn pop(&mut self) -> Result<i64, String> {
            self.stack.pop().ok_or_else(|| "stack underflow".to_string())
        }

        /// Runs `code` from its first instruction for at most `fuel` steps.
        pub fn run(&mut self, code: &[Op], fuel: usize) -> Result<i64, String> {
            let mut ip = 0;
            let mut steps = 0;
            loop {
                hint!(global_merge_point);
                if ip >= code.len() || steps == fuel {
                    return Err(format!("stopped at {ip} after {steps} steps"));
                }
                steps += 1;
                let op = hint!(code[ip], concrete);
                ip += 1;
                match op {
                    Op::Push(v) => self.stack.push(v),
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    Op::Sub => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(b));
                    }
                    Op::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(if a < b { 1 } else { 0 });
                    }
                    Op::JumpIfFalse(t) => {
                        if self.pop()? == 0 {
                            ip = t;
                        }
                    }
                    Op::Jump(t) => ip = t,
                    Op::Get(i) => {
                        let offset = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = *self.stack.get(offset + i).ok_or_else(|| format!("no local {i}"))?;
                        self.stack.push(v);
                    }
                    Op::Set(i) => {
                        let offset = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = *self.stack.last().ok_or_else(|| "stack underflow".to_string())?;
                        if offset + i >= self.stack.len() {
                            return Err(format!("no local {i}"));
                        }
                        self.stack[offset + i] = v;
                    }
                    Op::Call(target, nargs) => {
                        if nargs > self.stack.len() {
                            return Err("too few arguments".to_string());
                        }
                        let stack_offset = self.stack.len() - nargs;
                        self.frames.push(StackFrame { stack_offset, ip });
                        ip = target;
                    }
                    Op::Ret => {
                        let v = self.pop()?;
                        let frame = self.frames.pop().ok_or_else(|| "return outside a call".to_string())?;
                        self.stack.truncate(frame.stack_offset);
                        self.stack.push(v);
                        ip = hint!(frame.ip, promote);
                    }
                    Op::Pop => {
                        self.pop()?;
                    }
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

use self_vm::Op::{self, *};

/// The result, the stack and the frames after a run.
type State = (Result<i64, String>, Vec<i64>, Vec<self_vm::StackFrame>);

fn check(code: &[Op], fuel: usize) -> State {
    let state = |vm: self_vm::Vm, r| (r, vm.stack, vm.frames);
    let mut vm = self_vm::Vm::new();
    let r = self_vm::jit::plain::Vm::run(&mut vm, code, fuel);
    let want = state(vm, r);
    let mut vm = self_vm::Vm::new();
    let r = vm.run(code, fuel);
    assert_eq!(state(vm, r), want, "{code:?} {fuel}");
    let mut vm = self_vm::Vm::new();
    let r = self_vm::jit::specialize::Vm::run(&mut vm, code, fuel);
    assert_eq!(state(vm, r), want, "{code:?} {fuel}");
    want
}

/// Recursive fib(n) (fib(0) = 0, fib(1) = 1): the shape of the outside VM
/// of issue 59.
fn fib(n: i64) -> Vec<Op> {
    vec![
        Push(n),
        Call(4, 1),
        Halt,
        Halt,
        Get(0),
        Push(2),
        Lt,
        JumpIfFalse(10),
        Get(0),
        Ret,
        Get(0),
        Push(1),
        Sub,
        Call(4, 1),
        Get(0),
        Push(2),
        Sub,
        Call(4, 1),
        Add,
        Ret,
    ]
}

#[test]
fn frames_in_self_with_a_promoted_return_compile_and_agree_with_plain() {
    assert!(self_vm::jit::left_to_rust().is_empty(), "{:?}", self_vm::jit::left_to_rust());
    for t in [Some(0), Some(3), None] {
        if let Some(t) = t {
            self_vm::jit::config().set_threshold(t);
        }
        for n in [0, 1, 2, 7, 15] {
            let (r, ..) = check(&fib(n), 1_000_000);
            let want = (0..n).fold((0i64, 1i64), |(a, b), _| (b, a + b)).0;
            assert_eq!(r, Ok(want), "fib({n})");
        }
        let (r, ..) = check(&fib(12), 500);
        assert!(r.is_err_and(|e| e.ends_with("after 500 steps")));
    }
    self_vm::jit::config().set_threshold(0);
    assert_eq!(check(&fib(10), 1_000_000).0, Ok(55));
    let s = self_vm::jit::stats();
    assert!(s.entries > 0 && s.flexswitch_cases > 0, "{s:?}");
}

/// A random program of `procs` procedures of one argument each: `main`
/// calls some of them and adds their results. Procedure `k` returns its
/// argument below a random bound (`Lt`, `JumpIfFalse`), else computes on
/// it with stack-safe operations, calling itself on a smaller argument and
/// the procedures after it; one instruction in ten is replaced by a random
/// one (errors, stray jumps).
fn random_program(rng: &mut crate::common::Rng, procs: usize) -> Vec<Op> {
    let mut code = vec![Jump(0)];
    let mut entries = vec![0; procs];
    // Procedures from the last, so that each knows the entries after it.
    let mut bodies: Vec<Vec<Op>> = vec![];
    for k in (0..procs).rev() {
        // Offsets are relative to the procedure's entry, fixed below.
        let mut b = vec![Get(0), Push(rng.below(4) as i64), Lt, JumpIfFalse(6), Get(0), Ret];
        let mut depth = 0;
        b.push(Get(0));
        depth += 1;
        for _ in 0..rng.below(8) {
            match rng.below(7) {
                0 => {
                    b.push(Push(rng.below(5) as i64 - 1));
                    depth += 1;
                }
                1 => {
                    b.push(Get(0));
                    depth += 1;
                }
                2 | 3 if depth >= 2 => {
                    b.push([Add, Sub, Lt][rng.below(3) as usize]);
                    depth -= 1;
                }
                4 => b.push(Set(0)),
                5 => b.extend([Get(0), Push(1 + rng.below(2) as i64), Sub, Call(usize::MAX - k, 1)]),
                _ if k + 1 < procs => b.extend([Get(0), Call(usize::MAX - (k + 1 + rng.below((procs - k - 1) as u64) as usize), 1)]),
                _ => {}
            }
            depth += usize::from(b.last().is_some_and(|o| matches!(o, Call(..))));
        }
        for _ in 1..depth {
            b.push(Add);
        }
        b.push(Ret);
        bodies.push(b);
    }
    bodies.reverse();
    let mut main = vec![];
    for j in 0..1 + rng.below(3) {
        main.extend([Push(rng.below(9) as i64), Call(usize::MAX - rng.below(procs as u64) as usize, 1)]);
        if j > 0 {
            main.push(Add);
        }
    }
    main.push(Halt);
    for (k, b) in bodies.iter().enumerate() {
        entries[k] = code.len();
        code.extend(b.iter().map(|op| match op {
            JumpIfFalse(t) => JumpIfFalse(entries[k] + t),
            op => *op,
        }));
    }
    code[0] = Jump(code.len());
    code.extend(main);
    for op in &mut code {
        if let Call(p, n) = op {
            // A procedure's number, counted down from `usize::MAX`.
            if *p > usize::MAX / 2 {
                *op = Call(entries[usize::MAX - *p], *n);
            }
        }
    }
    let len = code.len();
    for op in &mut code {
        if rng.below(10) == 0 {
            let at = rng.below(len as u64) as usize;
            *op = [Push(2), Add, Sub, Lt, JumpIfFalse(at), Jump(at), Get(1), Set(1), Call(at, 1), Ret, Pop, Halt]
                [rng.below(12) as usize];
        }
    }
    code
}

#[test]
fn random_call_programs_agree_with_plain() {
    let mut rng = crate::common::Rng(0x5e1f_f4a3);
    // Programs that halted with a value, and that failed.
    let (mut halted, mut failed) = (0, 0);
    let n = crate::common::how_many(200);
    for i in 0..n {
        self_vm::jit::config().set_threshold([0, 1, 4][i % 3]);
        let procs = 1 + rng.below(3) as usize;
        let code = random_program(&mut rng, procs);
        let (r, ..) = check(&code, 1 + rng.below(3000) as usize);
        halted += usize::from(r.is_ok());
        failed += usize::from(r.is_err());
    }
    assert!(halted * 5 >= n && failed * 5 >= n, "{halted} halted, {failed} failed of {n}");
}
