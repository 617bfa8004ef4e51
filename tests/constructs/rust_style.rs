//! Interpreters as Rust programmers write them: wrapper structs (named and
//! tuple), their methods, references as values. Every result is compared with
//! `jit::plain`, through `jit::specialize` and through the portal.

use crate::common;

use jitgen::prelude::*;

#[jit_interpreter]
mod wrapped {
    use jitgen::prelude::*;

    /// A tuple-struct operand stack.
    pub struct Stack(Vec<i64>);

    impl Stack {
        pub fn push(&mut self, v: i64) {
            self.0.push(v);
        }
        pub fn pop(&mut self) -> i64 {
            self.0.pop().unwrap()
        }
        /// Accessors through `&self` returning references, as a tutorial
        /// writes them.
        pub fn peek(&self) -> Option<&i64> {
            self.0.last()
        }
        pub fn get(&self, i: usize) -> Option<&i64> {
            self.0.get(i)
        }
        pub fn len(&self) -> usize {
            self.0.len()
        }
    }

    pub const PUSH: u8 = 0;
    pub const DEC: u8 = 1;
    pub const JNZ: u8 = 2;
    pub const HALT: u8 = 3;
    pub const DUP: u8 = 4;
    pub const ADD: u8 = 5;

    /// A little stack machine whose stack is a wrapper around a `Vec`.
    pub fn run(code: &[u8]) -> i64 {
        let mut stack = Stack(Vec::new());
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == PUSH {
                stack.push(code[pc] as i64);
                pc += 1;
            } else if op == DEC {
                let v = stack.pop();
                stack.push(v - 1);
            } else if op == DUP {
                let v = *stack.peek().unwrap();
                let w = *stack.get(stack.len() - 1).unwrap();
                stack.push(v + w - v);
            } else if op == ADD {
                let b = stack.pop();
                let a = stack.pop();
                stack.push(a + b);
            } else if op == JNZ {
                let target = code[pc] as usize;
                pc += 1;
                if stack.pop() != 0 {
                    pc = target;
                }
            } else {
                return stack.pop();
            }
        }
    }
}

#[jit_interpreter]
mod machine {
    use jitgen::prelude::*;

    /// One instruction; `DecJnz(r, t)` decrements register r and jumps to t
    /// while it is not zero.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Insn {
        Push(i64),
        Pop,
        Dup,
        Swap,
        Add,
        Mul,
        Load(usize),
        Store(usize),
        DecJnz(usize, usize),
        Halt,
    }

    /// The machine's state: two `Vec`s inside one struct.
    pub struct Machine {
        pub stack: Vec<i64>,
        pub regs: Vec<i64>,
    }

    impl Machine {
        pub fn push(&mut self, v: i64) {
            self.stack.push(v);
        }
        pub fn pop(&mut self) -> i64 {
            match self.stack.pop() {
                Some(v) => v,
                None => 0,
            }
        }
    }

    pub fn drain(a: i64) -> i64 {
        let mut m = Machine { stack: Vec::new(), regs: vec![0; 4] };
        m.push(a);
        m.push(2);
        let mut s = 0;
        while let Some(v) = m.stack.pop() {
            s += v;
        }
        s
    }

    pub fn drain2(a: i64) -> i64 {
        let mut m = Machine { stack: Vec::new(), regs: vec![0; 4] };
        m.stack.push(a);
        m.stack.push(2);
        let mut s = 0;
        while let Some(v) = m.stack.pop() {
            s += v;
        }
        s
    }

    /// Runs `code` from a fresh machine; returns the sum of what is left on
    /// the stack and in the registers, each weighted by its position.
    pub fn exec(code: &[Insn]) -> i64 {
        let mut m = Machine { stack: Vec::new(), regs: vec![0; 4] };
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let insn = hint!(code[pc], concrete);
            pc += 1;
            match insn {
                Insn::Push(k) => m.push(k),
                Insn::Pop => {
                    m.pop();
                }
                Insn::Dup => {
                    let v = m.pop();
                    m.push(v);
                    m.push(v);
                }
                Insn::Swap => {
                    let b = m.pop();
                    let a = m.pop();
                    m.push(b);
                    m.push(a);
                }
                Insn::Add => {
                    let b = m.pop();
                    let a = m.pop();
                    m.push(a.wrapping_add(b));
                }
                Insn::Mul => {
                    let b = m.pop();
                    let a = m.pop();
                    m.push(a.wrapping_mul(b));
                }
                Insn::Load(r) => {
                    let v = m.regs[r];
                    m.push(v);
                }
                Insn::Store(r) => {
                    let v = m.pop();
                    m.regs[r] = v;
                }
                Insn::DecJnz(r, t) => {
                    m.regs[r] -= 1;
                    if m.regs[r] != 0 {
                        pc = t;
                    }
                }
                Insn::Halt => {
                    let mut sum: i64 = 0;
                    let mut weight: i64 = 1;
                    while let Some(v) = m.stack.pop() {
                        sum = sum.wrapping_add(v.wrapping_mul(weight));
                        weight += 1;
                    }
                    let mut r = 0;
                    while r < m.regs.len() {
                        sum = sum.wrapping_add(m.regs[r].wrapping_mul(100 + r as i64));
                        r += 1;
                    }
                    return sum;
                }
            }
        }
    }
}

/// A random program of `machine`: straight-line code and counted loops
/// (nested, each on its own register), the stack never popped empty.
fn random_machine_program(rng: &mut common::Rng) -> Vec<machine::Insn> {
    use machine::Insn::*;
    fn block(
        rng: &mut common::Rng,
        code: &mut Vec<machine::Insn>,
        depth: &mut usize,
        busy: &mut Vec<usize>,
        nest: u32,
    ) {
        for _ in 0..1 + rng.below(6) {
            match rng.below(10) {
                0 | 1 => {
                    code.push(Push(rng.below(7) as i64 - 2));
                    *depth += 1;
                }
                2 if *depth > 0 => {
                    code.push(Pop);
                    *depth -= 1;
                }
                3 if *depth > 0 => {
                    code.push(Dup);
                    *depth += 1;
                }
                4 if *depth > 1 => code.push(Swap),
                5 if *depth > 1 => {
                    code.push(if rng.below(2) == 0 { Add } else { Mul });
                    *depth -= 1;
                }
                6 => {
                    code.push(Load(rng.below(4) as usize));
                    *depth += 1;
                }
                7 if *depth > 0 => {
                    let free: Vec<usize> = (0..4).filter(|r| !busy.contains(r)).collect();
                    if let Some(&r) = free.get(rng.below(4) as usize % free.len().max(1)) {
                        code.push(Store(r));
                        *depth -= 1;
                    }
                }
                8 | 9 if nest < 2 && busy.len() < 3 => {
                    let r = (0..4).find(|r| !busy.contains(r)).unwrap();
                    code.push(Push(1 + rng.below(4) as i64));
                    code.push(Store(r));
                    let head = code.len();
                    busy.push(r);
                    block(rng, code, depth, busy, nest + 1);
                    busy.pop();
                    code.push(DecJnz(r, head));
                }
                _ => {}
            }
        }
    }
    let mut code = vec![];
    let (mut depth, mut busy) = (0, vec![]);
    block(rng, &mut code, &mut depth, &mut busy, 0);
    code.push(Halt);
    code
}

/// `m.stack.pop()` and `m.stack.push(x)` on a struct local act on the
/// struct's own list (they once acted on a copy: pushes were lost and a
/// `while let` over pops never ended).
#[test]
fn list_methods_on_a_field_of_a_struct_local_act_on_the_field() {
    let drain = machine::jit::specialize::drain();
    let drain2 = machine::jit::specialize::drain2();
    for a in [-3, 0, 1, 40] {
        assert_eq!(drain.call(a), machine::jit::plain::drain(a), "{}", drain.listing());
        assert_eq!(drain2.call(a), machine::jit::plain::drain2(a), "{}", drain2.listing());
    }
    // (Arithmetic overflows are checked as the build checks them.)
    let add = if cfg!(debug_assertions) { "add_checked" } else { "add" };
    assert_eq!(
        drain2.listing(),
        format!("entry(v0: i64):\n    v1 = const.i64 2\n    v2 = {add}.i64 v1, v0\n    return v2\n")
    );
}

#[test]
fn random_programs_specialized_with_every_input_green_agree_with_plain() {
    let mut rng = common::Rng(0x5eed_2301);
    for _ in 0..common::how_many(300) {
        let code = random_machine_program(&mut rng);
        let plain = machine::jit::plain::exec(&code);
        let r = machine::jit::specialize::exec(&code);
        assert_eq!(r.call(), plain, "{code:?}\n{}", r.listing());
    }
}

#[test]
fn random_programs_through_the_portal_agree_with_plain() {
    machine::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_2302);
    for _ in 0..common::how_many(300) {
        let code = random_machine_program(&mut rng);
        assert_eq!(machine::exec(&code), machine::jit::plain::exec(&code), "{code:?}");
    }
}

#[jit_interpreter]
mod refilled {
    use jitgen::prelude::*;

    pub const ADD: u8 = 0;
    pub const DEC: u8 = 1;
    pub const JNZ: u8 = 2;

    /// A program in a `Vec` the caller refills between runs: `ADD k` adds
    /// k to the result, `DEC` counts `n` down, `JNZ t` jumps while it is not
    /// zero, anything else stops.
    pub fn run(code: &Vec<u8>, n: i64) -> i64 {
        let (mut acc, mut left, mut pc) = (0i64, n, 0usize);
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            if op == ADD {
                acc += code[pc + 1] as i64;
                pc += 2;
            } else if op == DEC {
                left -= 1;
                pc += 1;
            } else if op == JNZ {
                pc = if left != 0 { code[pc + 1] as usize } else { pc + 2 };
            } else {
                return acc;
            }
        }
    }
}

/// A buffer refilled with one program, another, then the first again (same
/// address, other content each time): the first program's code is found
/// again instead of compiled again, and never runs on the second.
#[test]
fn code_is_kept_for_each_program_a_buffer_held() {
    use refilled::{ADD, DEC, JNZ};
    refilled::jit::config().set_threshold(0);
    let (first, second) = (vec![ADD, 3, DEC, JNZ, 0, 255], vec![ADD, 5, DEC, JNZ, 0, 255]);
    let mut code = first.clone();
    let run = |code: &Vec<u8>| {
        let before = refilled::jit::stats();
        let r = refilled::run(code, 1000);
        assert_eq!(r, refilled::jit::plain::run(code, 1000), "{code:?}");
        assert_eq!(refilled::jit::specialize::run(code).call(7), refilled::jit::plain::run(code, 7));
        let after = refilled::jit::stats();
        (r, after.compilations - before.compilations, after.entries - before.entries)
    };
    let (r, compiled, entered) = run(&code);
    assert!(r == 3000 && compiled > 0 && entered > 0, "{r} {compiled} {entered}");
    code.copy_from_slice(&second);
    let (r, compiled, _) = run(&code);
    assert!(r == 5000 && compiled > 0, "the second program compiles: {r} {compiled}");
    code.copy_from_slice(&first);
    let (r, compiled, entered) = run(&code);
    assert!(r == 3000 && compiled == 1 && entered > 0, "only `specialize` compiles: {r} {compiled} {entered}");
    code.copy_from_slice(&second);
    let (r, compiled, entered) = run(&code);
    assert!(r == 5000 && compiled == 1 && entered > 0, "{r} {compiled} {entered}");
}

#[jit_interpreter]
mod owned {
    use jitgen::prelude::*;

    /// A portal returning an owned `Vec`: the stack left at the end.
    pub fn leftover(code: &[u8], n: i64) -> Vec<i64> {
        let mut stack: Vec<i64> = Vec::new();
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                stack.push(n);
            } else if op == 1 {
                let v = stack.pop().unwrap();
                stack.push(v * 2);
            }
        }
        stack
    }
}

#[test]
fn a_portal_returns_an_owned_vec() {
    owned::jit::config().set_threshold(0);
    let long: Vec<u8> = (0..200).map(|i| (i % 3 != 0) as u8).collect();
    for code in [&[0u8, 1, 0, 1, 1][..], &[], &[0, 0, 0, 1], &long] {
        for n in [0, 3, -7] {
            let want = owned::jit::plain::leftover(code, n);
            assert_eq!(owned::leftover(code, n), want);
            assert_eq!(owned::jit::specialize::leftover(code).call(n), want);
        }
    }
    // Residual code hands the `Vec` back (a virtual one made real, or a
    // real one moved out of the arena).
    let s = owned::jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", owned::jit::last_decline());
}

#[jit_interpreter]
mod stdlib {

    /// `checked_*` on signed and unsigned integers, overflow and zero
    /// divisors included: each result, or -1 for `None`, mixed into one.
    pub fn checked(a: i64, b: i64, x: u8, y: u8) -> i64 {
        let mut h: i64 = 17;
        h = mix(h, a.checked_add(b));
        h = mix(h, a.checked_sub(b));
        h = mix(h, a.checked_mul(b));
        h = mix(h, a.checked_div(b));
        h = mix(h, a.checked_rem(b));
        h = mix(h, x.checked_add(y).map(|v| v as i64));
        h = mix(h, x.checked_sub(y).map(|v| v as i64));
        h = mix(h, x.checked_mul(y).map(|v| v as i64));
        h = mix(h, x.checked_div(y).map(|v| v as i64));
        mix(h, x.checked_rem(y).map(|v| v as i64))
    }

    fn mix(h: i64, v: Option<i64>) -> i64 {
        h.wrapping_mul(31).wrapping_add(v.unwrap_or(-1))
    }

    /// The `Vec` and slice methods interpreters use.
    pub fn vec_methods(a: i64, b: i64, i: usize, extra: &[i64]) -> i64 {
        let mut v: Vec<i64> = vec![a, b, 3];
        let g = match v.get(i) {
            Some(x) => *x,
            None => -1,
        };
        let f = v.first().map_or(0, |x| *x * 2);
        let l = *v.last().unwrap();
        v.swap(0, 2);
        v.insert(1, a + b);
        let r = v.remove(0);
        v.extend_from_slice(extra);
        let len1 = v.len() as i64;
        v.reverse();
        let rev = v[0] * 17 + v[v.len() - 1];
        let tail = v.split_off(v.len() - extra.len().min(2));
        let rest = v.split_off(v.len());
        let split = tail.len() as i64 * 23 + tail.first().map_or(0, |x| *x) + rest.len() as i64 * 29;
        v.truncate(2);
        let s = v[0] * 10 + v[1];
        v.clear();
        v.reverse();
        g + f * 3 + l * 5 + r * 7 + len1 * 11 + s * 13 + v.len() as i64 + rev * 19 + split * 31
    }

    /// The `Option` and `Result` combinators, with closures that capture.
    pub fn option_methods(a: i64, k: i64) -> i64 {
        let o = if a > 0 { Some(a) } else { None };
        let m = o.map(|x| x + k).unwrap_or(0);
        let n = o.and_then(|x| if x > 5 { Some(x * k) } else { None }).unwrap_or(-1);
        let p = o.map_or_else(|| k * 3, |x| x - 1);
        let q = o.unwrap_or_else(|| k + 100);
        let r: Result<i64, i64> = o.ok_or_else(|| k);
        let s = match r {
            Ok(x) => x,
            Err(e) => -e,
        };
        let t = o.unwrap_or_default();
        let u: Result<i64, i64> = if k > 0 { Ok(k) } else { Err(a) };
        let w = u.map(|x| x * 2).unwrap_or_else(|e| e - 7);
        m + n * 3 + p * 5 + q * 7 + s * 11 + t * 13 + w * 17
    }
}

#[test]
fn vec_and_slice_methods_agree_with_plain() {
    let f = stdlib::jit::specialize::vec_methods();
    for (a, b, i) in [(1, 2, 0), (5, -3, 1), (0, 0, 2), (9, 4, 3), (-2, 7, 100)] {
        for extra in [&[][..], &[4], &[6, -1, 2]] {
            assert_eq!(
                f.call(a, b, i, extra),
                stdlib::jit::plain::vec_methods(a, b, i, extra),
                "{a} {b} {i} {extra:?}"
            );
        }
    }
}

/// The overflow tests of `checked_*`, at and around every boundary.
#[test]
fn checked_arithmetic_agrees_with_plain() {
    let f = stdlib::jit::specialize::checked();
    let edges = [i64::MIN, i64::MIN + 1, -3, -1, 0, 1, 2, 3, 1 << 32, i64::MAX - 1, i64::MAX];
    for a in edges {
        for b in edges {
            for (x, y) in [(0u8, 0u8), (1, 0), (200, 100), (100, 200), (16, 16), (255, 1), (7, 3), (15, 17)] {
                assert_eq!(f.call(a, b, x, y), stdlib::jit::plain::checked(a, b, x, y), "{a} {b} {x} {y}");
            }
        }
    }
}

#[test]
fn option_and_result_combinators_agree_with_plain() {
    let f = stdlib::jit::specialize::option_methods();
    for a in [-3, 0, 1, 5, 6, 40] {
        for k in [-2, 0, 3] {
            assert_eq!(f.call(a, k), stdlib::jit::plain::option_methods(a, k), "{a} {k}");
        }
    }
}

#[jit_interpreter]
mod imports {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Inc,
        Dec,
        Double,
        Jnz(usize),
        Halt,
    }

    pub type Acc = Vec<i64>;

    /// Variants imported inside the function, a `Vec` made through an alias.
    pub fn run(code: &[Op], a: i64) -> i64 {
        use Op::*;
        let mut acc = Acc::new();
        acc.push(a);
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Inc => acc[0] += 1,
                Dec => acc[0] -= 1,
                Double => acc[0] *= 2,
                Jnz(t) => {
                    if acc[0] != 0 {
                        pc = t;
                    }
                }
                Halt => return acc[0],
            }
        }
    }
}

#[test]
fn variants_imported_in_a_function_and_alias_constructors() {
    use imports::Op::*;
    imports::jit::config().set_threshold(0);
    let programs: [&[imports::Op]; 3] =
        [&[Double, Inc, Halt], &[Dec, Jnz(0), Inc, Halt], &[Dec, Dec, Inc, Jnz(0), Double, Halt]];
    for code in programs {
        let f = imports::jit::specialize::run(code);
        for a in [1, 2, 5, 30] {
            let plain = imports::jit::plain::run(code, a);
            assert_eq!(f.call(a), plain, "{code:?} {a}\n{}", f.listing());
            assert_eq!(imports::run(code, a), plain, "{code:?} {a}");
        }
    }
}

use wrapped::{ADD, DEC, DUP, HALT, JNZ, PUSH};

/// A counted loop whose whole state is known when compiling.
const COUNT_DOWN: &[u8] = &[PUSH, 0, PUSH, 10, DUP, DEC, DUP, JNZ, 4, ADD, HALT];
/// A counted loop whose stack has the same length at every turn.
const COUNTER: &[u8] = &[PUSH, 10, DEC, DUP, JNZ, 2, PUSH, 7, ADD, HALT];

#[test]
fn a_loop_with_all_state_green_specializes_to_a_terminating_function() {
    for code in [COUNT_DOWN, COUNTER] {
        let plain = wrapped::jit::plain::run(code);
        let r = wrapped::jit::specialize::run(code);
        assert_eq!(r.call(), plain, "{}", r.listing());
        assert_eq!(wrapped::run(code), plain);
    }
}

#[jit_interpreter]
mod tuples {
    use jitgen::prelude::*;

    /// Instructions with payloads, not `Copy`: matched through a reference.
    #[derive(Clone, Debug, PartialEq)]
    pub enum Ins {
        Push(i64),
        Add,
        Sub,
        DivMod,
        Swap,
        Fib,
        Cmp,
        Jnz(usize),
        Dup,
        Rot,
        Halt,
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Sign {
        Neg,
        Zero,
        Pos,
    }

    fn sign(x: i64) -> Sign {
        if x < 0 {
            Sign::Neg
        } else if x == 0 {
            Sign::Zero
        } else {
            Sign::Pos
        }
    }

    fn top(stack: &Vec<i64>) -> Option<&i64> {
        stack.last()
    }

    /// A tuple returned, with an early return of another one.
    fn div_mod(a: i64, b: i64) -> (i64, i64) {
        if b == 0 {
            return (0, a);
        }
        (a.wrapping_div(b), a.wrapping_rem(b))
    }

    /// A tuple taken and returned.
    fn swapped(p: (i64, i64)) -> (i64, i64) {
        let (x, y) = p;
        (y, x)
    }

    /// Tuples as Rust programmers use them in a dispatch loop.
    pub fn run(code: &[Ins], input: i64) -> i64 {
        let mut stack: Vec<i64> = vec![input];
        let mut pc = 0;
        // A reference to a value, live across the merge point.
        let bias = &input;
        // A tuple live across the merge point, assigned whole and in part.
        let mut acc = (0i64, 0i64);
        loop {
            hint!(global_merge_point);
            let ins = hint!(&code[pc], concrete);
            pc += 1;
            match ins {
                Ins::Push(d) => stack.push(*d),
                Ins::Add | Ins::Sub => {
                    let (b, a) = (stack.pop().unwrap_or(0), stack.pop().unwrap_or(0));
                    stack.push(if *ins == Ins::Add { a.wrapping_add(b) } else { a.wrapping_sub(b) });
                }
                Ins::DivMod => {
                    let (b, a) = (stack.pop().unwrap_or(1), stack.pop().unwrap_or(0));
                    let (r, q) = swapped(div_mod(a, b));
                    stack.push(q);
                    stack.push(r);
                }
                Ins::Swap => {
                    let pair = (stack.pop().unwrap_or(0), stack.pop().unwrap_or(0));
                    stack.push(pair.0);
                    stack.push(pair.1);
                }
                Ins::Fib => {
                    let n = stack.pop().unwrap_or(0) % 50;
                    let mut fib = (0i64, 1i64);
                    let mut k = 0;
                    while k < n {
                        fib = (fib.1, fib.0.wrapping_add(fib.1));
                        k += 1;
                    }
                    let mut acc = (fib.0, 0);
                    acc.1 += 3;
                    acc.1 *= 2;
                    stack.push(acc.0 + acc.1);
                }
                Ins::Cmp => {
                    let (b, a) = (stack.pop().unwrap_or(0), stack.pop().unwrap_or(0));
                    let r = match (sign(a), sign(b)) {
                        (Sign::Zero, Sign::Zero) => 0,
                        (Sign::Neg, _) | (_, Sign::Neg) => -1,
                        (x, y) if x == y => 2,
                        (_, ..) => 1,
                    };
                    stack.push(r);
                }
                Ins::Jnz(t) => {
                    if stack.pop().unwrap_or(0) != 0 {
                        pc = *t;
                    }
                }
                Ins::Rot => {
                    acc = (acc.1, acc.0.wrapping_add(stack.pop().unwrap_or(0)));
                    acc.0 += 1;
                }
                Ins::Dup => {
                    let t = *top(&stack).unwrap_or(&0);
                    stack.push(t);
                }
                Ins::Halt => return *top(&stack).unwrap_or(&-1) - *bias + acc.0 * 3 + acc.1,
            }
        }
    }
}

#[test]
fn tuples_and_references_to_values_agree_with_plain() {
    use tuples::Ins::*;
    tuples::jit::config().set_threshold(0);
    let programs: Vec<Vec<tuples::Ins>> = vec![
        vec![Push(7), Add, Push(3), DivMod, Sub, Halt],
        vec![Push(-4), Swap, Sub, Push(0), DivMod, Halt],
        vec![Fib, Push(9), Fib, Add, Halt],
        vec![Push(3), Cmp, Push(-2), Push(5), Cmp, Add, Halt],
        // A counted loop: six turns of acc += 3 over [counter, acc].
        vec![Push(6), Swap, Push(3), Add, Swap, Push(1), Sub, Dup, Jnz(1), Add, Halt],
        vec![Push(6), Swap, Dup, Rot, Push(3), Add, Swap, Push(1), Sub, Dup, Jnz(1), Add, Halt],
    ];
    for code in &programs {
        let f = tuples::jit::specialize::run(code);
        for input in [-5, 0, 1, 7, 20] {
            let plain = tuples::jit::plain::run(code, input);
            assert_eq!(f.call(input), plain, "{code:?} {input}\n{}", f.listing());
            assert_eq!(tuples::run(code, input), plain, "{code:?} {input}");
        }
    }
    // The portal compiled code and entered it, tuples and references live.
    let stats = tuples::jit::stats();
    assert!(stats.entries > 0, "{stats:?} {:?}", tuples::jit::last_decline());
}

/// Random programs of `tuples`: every instruction, jumps forward only (so each
/// program ends), then `Halt`.
#[test]
fn random_tuple_programs_agree_with_plain() {
    use tuples::Ins::*;
    tuples::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_2303);
    for _ in 0..common::how_many(200) {
        let n = 1 + rng.below(14) as usize;
        let mut code = vec![];
        for pc in 0..n {
            code.push(match rng.below(11) {
                0 | 1 => Push(rng.below(9) as i64 - 4),
                2 => Add,
                3 => Sub,
                4 => DivMod,
                5 => Swap,
                6 => Fib,
                7 => Cmp,
                8 => Dup,
                9 => Rot,
                _ => Jnz(pc + 1 + rng.below((n - pc) as u64) as usize),
            });
        }
        code.push(Halt);
        let f = tuples::jit::specialize::run(&code);
        for input in [-3, 0, 5] {
            let plain = tuples::jit::plain::run(&code, input);
            assert_eq!(f.call(input), plain, "{code:?} {input}\n{}", f.listing());
            assert_eq!(tuples::run(&code, input), plain, "{code:?} {input}");
        }
    }
}

#[jit_interpreter]
mod mutrefs {
    use jitgen::prelude::*;

    /// Registers behind a tuple struct, reached through `&mut` accessors.
    pub struct Regs(Vec<i64>);

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Fault {
        Empty,
    }

    impl Regs {
        fn slot(&mut self, i: usize) -> Option<&mut i64> {
            self.0.get_mut(i)
        }

        fn top(&mut self) -> Result<&mut i64, Fault> {
            self.0.last_mut().ok_or(Fault::Empty)
        }
    }

    fn bump(x: &mut i64, by: i64) {
        *x = x.wrapping_add(by);
    }

    fn step(regs: &mut Regs, acc: &mut i64, op: u8) -> Result<(), Fault> {
        match op % 8 {
            0 => {
                if let Some(r) = regs.slot((op / 8) as usize % 5) {
                    *r += 1;
                }
            }
            1 => bump(acc, 3),
            2 => match regs.top() {
                Ok(t) => *t = t.wrapping_mul(2),
                Err(_) => *acc += 100,
            },
            3 => *regs.top()? -= *acc,
            4 => match regs.0.len().checked_sub(5) {
                Some(n) => *acc += n as i64,
                None => *acc -= 1,
            },
            5 => {
                if let Some(v) = regs.0.get_mut(1) {
                    bump(v, *acc);
                }
            }
            6 => regs.0.push(*acc),
            _ => {
                let x = regs.0.pop().unwrap_or(0);
                *acc = acc.wrapping_add(x);
            }
        }
        Ok(())
    }

    /// `&mut` references to values: accessors returning them, `get_mut`,
    /// `last_mut`, `&mut` of a local passed on, assignment through them.
    pub fn run(code: &[u8], input: i64) -> i64 {
        let mut regs = Regs(vec![input, 0, 0, 0]);
        let mut acc = 0i64;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if step(&mut regs, &mut acc, op).is_err() {
                return -1;
            }
            if let Some(first) = regs.0.first_mut() {
                *first = first.wrapping_add(pc as i64);
            }
        }
        let mut sum = acc;
        let mut k = 0;
        while k < regs.0.len() {
            sum = sum.wrapping_add(regs.0[k]);
            k += 1;
        }
        sum
    }
}

/// `&mut` to values through accessors, `get_mut`/`last_mut`/`first_mut`,
/// `checked_sub` and `?` on random straight-line programs: specialized and
/// through the portal, against plain.
#[test]
fn mut_references_to_values_agree_with_plain() {
    mutrefs::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_2304);
    let mut programs: Vec<Vec<u8>> = vec![vec![0, 8, 16, 24, 32, 1, 5, 2, 3, 7, 7, 7, 7, 7, 2, 3, 4, 6, 6, 4]];
    for _ in 0..common::how_many(200) {
        let n = rng.below(30) as usize;
        programs.push((0..n).map(|_| rng.below(256) as u8).collect());
    }
    for code in &programs {
        let f = mutrefs::jit::specialize::run(code);
        for input in [-7, 0, 9] {
            let plain = mutrefs::jit::plain::run(code, input);
            assert_eq!(f.call(input), plain, "{code:?} {input}\n{}", f.listing());
            assert_eq!(mutrefs::run(code, input), plain, "{code:?} {input}");
        }
    }
    let stats = mutrefs::jit::stats();
    assert!(stats.entries > 0, "{stats:?} {:?}", mutrefs::jit::last_decline());
}

#[jit_interpreter]
mod method_portal {
    use jitgen::prelude::*;

    /// A user's trait whose methods change a number in place.
    pub trait Tally {
        /// Adds one; says whether the count is now even.
        fn tally(&mut self) -> bool;
        /// Halves it, rounding down.
        fn halve(&mut self);
    }

    impl Tally for u32 {
        fn tally(&mut self) -> bool {
            *self += 1;
            *self % 2 == 0
        }
        fn halve(&mut self) {
            *self /= 2;
        }
    }

    impl Tally for i64 {
        fn tally(&mut self) -> bool {
            *self += 1;
            *self % 2 == 0
        }
        fn halve(&mut self) {
            *self = self.div_euclid(2);
        }
    }

    /// A machine whose dispatch loop is a method.
    #[derive(Debug, Default, Clone, PartialEq)]
    pub struct Acc {
        pub acc: i64,
        pub steps: u32,
        pub evens: u32,
        pub log: Vec<i64>,
    }

    impl Acc {
        fn bump(&mut self, by: i64) {
            self.acc = self.acc.wrapping_add(by);
        }

        /// `code` is green (a parameter); `pc` a local. Ops: 0 add the
        /// next byte, 1 double, 2 log the accumulator, 3 jump back by the
        /// next byte while the accumulator is below 1000, 4 halt.
        pub fn run(&mut self, code: &[u8]) -> i64 {
            let mut pc = 0;
            while pc < code.len() {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                // A trait's `&mut self` method on a field and on a local:
                // their changes are the field's and the local's.
                if self.steps.tally() {
                    self.evens.tally();
                }
                match op {
                    0 => {
                        self.bump(code[pc + 1] as i64);
                        pc += 2;
                    }
                    1 => {
                        let a = self.acc;
                        self.bump(a);
                        pc += 1;
                    }
                    2 => {
                        let mut half = self.acc;
                        half.halve();
                        self.log.push(self.acc);
                        self.log.push(half);
                        pc += 1;
                    }
                    3 => {
                        if self.acc < 1000 {
                            pc -= code[pc + 1] as usize;
                        } else {
                            pc += 2;
                        }
                    }
                    _ => return self.acc,
                }
            }
            -1
        }
    }
}

/// A portal that is a method (`impl Acc { fn run(&mut self, ..) }`): named
/// `jit::plain::Acc::run` and `jit::specialize::Acc::run`, compiled, and
/// leaving `self` as the interpreter does.
#[test]
fn a_method_portal_compiles_and_leaves_self_as_plain_does() {
    use method_portal::{jit, Acc};
    jit::config().set_threshold(0);
    let programs: Vec<Vec<u8>> = vec![
        vec![0, 3, 1, 2, 3, 3, 4],
        vec![0, 1, 1, 3, 1, 2, 4],
        vec![2, 0, 7, 2, 1, 1, 3, 4, 2, 4],
        vec![4],
        vec![0, 5],
    ];
    for code in &programs {
        for start in [1i64, 5, 999, 5000] {
            let mut want = Acc { acc: start, ..Acc::default() };
            let r_plain = jit::plain::Acc::run(&mut want, code);
            let mut got = Acc { acc: start, ..Acc::default() };
            assert_eq!(got.run(code), r_plain, "{code:?} {start}");
            assert_eq!(got, want, "{code:?} {start}");
            let mut spec = Acc { acc: start, ..Acc::default() };
            assert_eq!(jit::specialize::Acc::run(&mut spec, code), r_plain, "{code:?} {start}");
            assert_eq!(spec, want, "{code:?} {start}");
        }
    }
    let s = jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
}

/// Random straight-line programs of `method_portal` (a trait's `&mut self`
/// methods on a field and on a local at every step, outlined) agree with
/// `jit::plain` on the whole machine, through the portal and
/// `jit::specialize`.
#[test]
fn random_method_portal_programs_agree_with_plain() {
    use method_portal::{jit, Acc};
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x7a11);
    for _ in 0..crate::common::how_many(200) {
        let mut code = vec![];
        for _ in 0..rng.below(14) {
            match rng.below(3) {
                0 => code.extend([0, rng.below(256) as u8]),
                k => code.push(k as u8),
            }
        }
        if rng.below(4) > 0 {
            code.push(4);
        }
        let start = rng.below(4001) as i64 - 2000;
        let steps = rng.below(5) as u32;
        let mut want = Acc { acc: start, steps, ..Acc::default() };
        let r_plain = jit::plain::Acc::run(&mut want, &code);
        let mut got = Acc { acc: start, steps, ..Acc::default() };
        assert_eq!(got.run(&code), r_plain, "{code:?} {start}");
        assert_eq!(got, want, "{code:?} {start}");
        let mut spec = Acc { acc: start, steps, ..Acc::default() };
        assert_eq!(jit::specialize::Acc::run(&mut spec, &code), r_plain, "{code:?} {start}");
        assert_eq!(spec, want, "{code:?} {start}");
    }
}

#[jit_interpreter]
mod tape {
    use jitgen::prelude::*;

    /// A tape machine as tutorials write one: the tape is the caller's
    /// `&mut [u8]`, written in the loop. Ops: `+`, `-`, `>`, `<`, `[`/`]`
    /// (loops), `.` (adds the cell to the checksum).
    pub fn run(code: &[u8], tape: &mut [u8]) -> u64 {
        let mut pc = 0;
        let mut ptr = 0usize;
        let mut sum = 0u64;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            match op {
                b'+' => tape[ptr] = tape[ptr].wrapping_add(1),
                b'-' => tape[ptr] = tape[ptr].wrapping_sub(1),
                b'>' => ptr = (ptr + 1) % tape.len(),
                b'<' => ptr = (ptr + tape.len() - 1) % tape.len(),
                b'.' => sum = sum.wrapping_mul(31).wrapping_add(tape[ptr] as u64),
                b'[' => {
                    if tape[ptr] == 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc += 1;
                            if code[pc] == b'[' {
                                depth += 1;
                            } else if code[pc] == b']' {
                                depth -= 1;
                            }
                        }
                    }
                }
                b']' => {
                    if tape[ptr] != 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc -= 1;
                            if code[pc] == b']' {
                                depth += 1;
                            } else if code[pc] == b'[' {
                                depth -= 1;
                            }
                        }
                    }
                }
                _ => {}
            }
            pc += 1;
        }
        sum
    }

    /// A portal returning an owned `Vec`: the cells it touched.
    pub fn trace(code: &[u8], n: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut pc = 0;
        let mut acc = 0i64;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            acc += op as i64;
            if out.len() < n {
                out.push(acc);
            }
            pc += 1;
        }
        out
    }
}

/// `tape: &mut [u8]` written in residual code, and a portal returning a
/// `Vec`: specialized and through the portal, results and tapes as plain.
#[test]
fn a_tape_written_through_a_mut_slice_agrees_with_plain() {
    tape::jit::config().set_threshold(0);
    let programs: [&[u8]; 4] = [b"+++[>++<-]>.", b"++>+++[<+>-]<.>.", b"-[>+<-]>.", b"+.+.[-]."];
    for code in programs {
        let mut want = vec![0u8; 8];
        let r = tape::jit::plain::run(code, &mut want);
        let mut got = vec![0u8; 8];
        assert_eq!(tape::run(code, &mut got), r, "{:?}", std::str::from_utf8(code));
        assert_eq!(got, want);
        let mut spec = vec![0u8; 8];
        assert_eq!(tape::jit::specialize::run(code).call(&mut spec), r);
        assert_eq!(spec, want);
        for n in [0, 3] {
            assert_eq!(tape::trace(code, n), tape::jit::plain::trace(code, n));
            assert_eq!(tape::jit::specialize::trace(code).call(n), tape::jit::plain::trace(code, n));
        }
    }
    // Random programs: moves, increments, checksums and `[-]`/`[->+<]` loops.
    let mut rng = common::Rng(0x5eed_2306);
    for _ in 0..common::how_many(60) {
        let mut code = vec![];
        for _ in 0..rng.below(24) {
            let piece: &[u8] = match rng.below(8) {
                0 | 1 => b"+",
                2 => b"-",
                3 => b">",
                4 => b"<",
                5 => b".",
                6 => b"[-]",
                _ => b"[->+<]",
            };
            code.extend_from_slice(piece);
        }
        let mut want = vec![3u8; 5];
        let r = tape::jit::plain::run(&code, &mut want);
        let (mut got, mut spec) = (vec![3u8; 5], vec![3u8; 5]);
        assert_eq!(tape::run(&code, &mut got), r, "{:?}", String::from_utf8_lossy(&code));
        assert_eq!(tape::jit::specialize::run(&code).call(&mut spec), r, "{:?}", String::from_utf8_lossy(&code));
        assert_eq!((&got, &spec), (&want, &want), "{:?}", String::from_utf8_lossy(&code));
        assert_eq!(tape::jit::specialize::trace(&code).call(5), tape::jit::plain::trace(&code, 5));
    }
    let s = tape::jit::stats();
    assert!(s.entries > 0, "{s:?} {:?}", tape::jit::last_decline());
}

#[jit_interpreter]
mod mutstack {
    use jitgen::prelude::*;

    /// A machine whose locals live in the caller's stack. Ops (each with
    /// one argument byte): 0 push 3, 1 push 0, 2 load k, 3 store k, 4 add,
    /// 5 sub 1, 6 jz t, 7 jump t, 8 halt.
    pub fn run(code: &[u8], stack: &mut Vec<i64>) -> i64 {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            let arg = code[pc + 1] as usize;
            pc += 2;
            match op {
                0 => stack.push(3),
                1 => stack.push(0),
                2 => {
                    let v = stack[arg];
                    stack.push(v);
                }
                3 => {
                    let v = stack.pop().unwrap();
                    stack[arg] = v;
                }
                4 => {
                    let b = stack.pop().unwrap();
                    let a = stack.pop().unwrap();
                    stack.push(a + b);
                }
                5 => {
                    let a = stack.pop().unwrap();
                    stack.push(a - 1);
                }
                6 => {
                    if stack.pop().unwrap() == 0 {
                        pc = arg;
                    }
                }
                7 => pc = arg,
                _ => return stack.pop().unwrap_or(-1),
            }
        }
    }
}

/// Locals kept in a `&mut Vec<i64>` the caller owns, in a counted loop:
/// the portal's result and the stack it leaves agree with plain.
#[test]
fn a_counted_loop_over_a_mut_vec_parameter_agrees_with_plain() {
    mutstack::jit::config().set_threshold(0);
    // [3, 0]; loop: load 0; jz end; load 1; load 0; add; store 1; load 0; sub1; store 0; jump loop; end: load 1; halt
    let code: Vec<u8> = vec![0, 0, 1, 0, 2, 0, 6, 24, 2, 1, 2, 0, 4, 0, 3, 1, 2, 0, 5, 0, 3, 0, 7, 4, 2, 1, 8, 0];
    let mut s1 = vec![];
    let want = mutstack::jit::plain::run(&code, &mut s1);
    let mut s2 = vec![];
    assert_eq!(mutstack::run(&code, &mut s2), want);
    assert_eq!(s1, s2);
    let mut s3 = vec![];
    assert_eq!(mutstack::jit::specialize::run(&code).call(&mut s3), want);
    assert_eq!(s1, s3);
    assert!(mutstack::jit::stats().entries > 0, "{:?}", mutstack::jit::last_decline());
}

/// A struct local live at the merge point (the wrapper `Stack(Vec<i64>)`)
/// has its fields in registers in compiled code, as a `#[virtualizable]`
/// frame does, with no marker: the loop pushes, pops and reads through
/// `&self` accessors (`peek`, `get`) without calls.
#[test]
fn a_wrapper_struct_local_lives_in_registers_in_compiled_loops() {
    wrapped::jit::config().set_threshold(0);
    for code in [COUNT_DOWN, COUNTER] {
        assert_eq!(wrapped::run(code), wrapped::jit::plain::run(code));
    }
    let listings = wrapped::jit::portal_listings();
    let loops: Vec<String> = listings.iter().flat_map(|l| common::cyclic_blocks(l)).collect();
    assert!(!loops.is_empty(), "no loop compiled: {listings:?}");
    for body in &loops {
        assert!(!body.contains("call"), "{body}");
    }
}

/// A Brainfuck machine as a new user writes one: the program, its jump
/// table and the tape are fields of `self`; the opcode has no hint (the
/// program, only read, is green); the output is returned with `.clone()`.
#[jit_interpreter]
mod brainfuck {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct Machine {
        pub code: Vec<u8>,
        pub jumps: Vec<usize>,
        pub pc: usize,
        pub tape: Vec<u8>,
        pub ptr: usize,
        pub output: Vec<u8>,
        pub fuel: u64,
    }

    impl Machine {
        pub fn run(&mut self) -> Vec<u8> {
            while self.pc < self.code.len() {
                hint!(global_merge_point);
                if self.fuel == 0 {
                    break;
                }
                self.fuel -= 1;
                let pc = hint!(self.pc, concrete);
                match self.code[pc] {
                    b'+' => self.tape[self.ptr] = self.tape[self.ptr].wrapping_add(1),
                    b'-' => self.tape[self.ptr] = self.tape[self.ptr].wrapping_sub(1),
                    b'>' => self.ptr = (self.ptr + 1) % 16,
                    b'<' => self.ptr = (self.ptr + 15) % 16,
                    b'.' => self.output.push(self.tape[self.ptr]),
                    b'[' => {
                        if self.tape[self.ptr] == 0 {
                            self.pc = self.jumps[pc];
                        }
                    }
                    b']' => {
                        if self.tape[self.ptr] != 0 {
                            self.pc = self.jumps[pc];
                        }
                    }
                    _ => {}
                }
                self.pc += 1;
            }
            self.output.clone()
        }
    }
}

fn brainfuck_machine(code: &[u8], fuel: u64) -> brainfuck::Machine {
    let mut jumps = vec![0; code.len()];
    let mut open = vec![];
    for (i, c) in code.iter().enumerate() {
        if *c == b'[' {
            open.push(i);
        } else if *c == b']' {
            let o = open.pop().expect("balanced");
            jumps[i] = o;
            jumps[o] = i;
        }
    }
    brainfuck::Machine { code: code.to_vec(), jumps, pc: 0, tape: vec![0; 16], ptr: 0, output: vec![], fuel }
}

fn random_brainfuck(rng: &mut common::Rng, depth: u32, out: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(6) {
        match rng.below(if depth < 2 { 8 } else { 7 }) {
            0 | 1 => out.extend(std::iter::repeat_n(b'+', 1 + rng.below(5) as usize)),
            2 => out.push(b'-'),
            3 => out.push(b'>'),
            4 => out.push(b'<'),
            5 => out.push(b'.'),
            6 => out.extend_from_slice(b"[-]"),
            _ => {
                out.push(b'[');
                random_brainfuck(rng, depth + 1, out);
                out.push(b']');
            }
        }
    }
}

/// Random Brainfuck programs (nested loops, fuel running out) leave the
/// same machine behind and print the same under the JIT; a program's loops
/// compile a few times, not once per instruction.
#[test]
fn brainfuck_programs_agree_with_plain() {
    brainfuck::jit::config().set_threshold(0);
    let mut rng = common::Rng(0xbf);
    // Each compiles the whole program, its tape known at entry: slow in a
    // debug build (JITGEN_RANDOM_PROGRAMS runs more).
    for _ in 0..common::how_many(8) {
        let mut code = vec![];
        random_brainfuck(&mut rng, 0, &mut code);
        for fuel in [5, 3000] {
            let mut want_m = brainfuck_machine(&code, fuel);
            let want = brainfuck::jit::plain::Machine::run(&mut want_m);
            let mut m = brainfuck_machine(&code, fuel);
            assert_eq!((m.run(), &m), (want.clone(), &want_m), "{}", String::from_utf8_lossy(&code));
            let mut m = brainfuck_machine(&code, fuel);
            let got = brainfuck::jit::specialize::Machine::run(&mut m);
            assert_eq!((got, &m), (want, &want_m), "{}", String::from_utf8_lossy(&code));
        }
    }
    let before = brainfuck::jit::stats().compilations;
    let code = b"++++++++[>++++++++[>++++[-]<-]<-]>>+.";
    let mut m = brainfuck_machine(code, u64::MAX);
    assert_eq!(m.run(), vec![1]);
    let st = brainfuck::jit::stats();
    assert!(st.entries > 0 && st.compilations - before <= 8, "{st:?}");
    // Output growing in loops (inner, outer after inner ones): the output
    // is forced once its loop turns, not compiled once per length (1341
    // compilations, 1330 declined, before).
    for code in [&b"++++++++[>++++++++<-]>[>+++++[.-]<-]"[..], b"++++++++[>++++++++<-]>[>+++[>++++[>+<-]<-]>.<<-]"] {
        let before = brainfuck::jit::stats();
        let mut want_m = brainfuck_machine(code, u64::MAX);
        let want = brainfuck::jit::plain::Machine::run(&mut want_m);
        let mut m = brainfuck_machine(code, u64::MAX);
        assert_eq!((m.run(), &m), (want, &want_m));
        let st = brainfuck::jit::stats();
        let (compiled, declined) = (st.compilations - before.compilations, st.declined - before.declined);
        assert!(compiled <= 4 && declined == 0, "{compiled} compilations, {declined} declined: {st:?}");
    }
}

/// Private portals (a method and a free function) build, compile, and are
/// named under `jit::plain` in the crate.
#[jit_interpreter]
mod private_portals {
    use jitgen::prelude::*;

    pub struct Vm {
        code: Vec<u8>,
        pc: usize,
        acc: i64,
    }

    impl Vm {
        fn run(&mut self) -> i64 {
            while self.pc < self.code.len() {
                hint!(global_merge_point);
                let pc = hint!(self.pc, concrete);
                self.acc += self.code[pc] as i64;
                self.pc += 1;
            }
            self.acc
        }

        pub fn sum(code: Vec<u8>, plain: bool) -> i64 {
            let mut vm = Vm { code, pc: 0, acc: 0 };
            if plain {
                super::private_portals::jit::plain::Vm::run(&mut vm)
            } else {
                vm.run()
            }
        }
    }

    fn sum_free(code: &[u8]) -> i64 {
        let mut pc = 0;
        let mut acc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            acc += hint!(code[pc], concrete) as i64;
            pc += 1;
        }
        acc
    }

    pub fn sums(code: &[u8]) -> (i64, i64) {
        (sum_free(code), jit::plain::sum_free(code))
    }
}

#[test]
fn private_portals_build_and_agree_with_plain() {
    private_portals::jit::config().set_threshold(0);
    let code: Vec<u8> = (0..200).map(|i| (i * 7 % 13) as u8).collect();
    let want: i64 = code.iter().map(|&b| b as i64).sum();
    assert_eq!(private_portals::Vm::sum(code.clone(), false), want);
    assert_eq!(private_portals::Vm::sum(code.clone(), true), want);
    assert_eq!(private_portals::sums(&code), (want, want));
    assert!(private_portals::jit::stats().entries > 0, "{:?}", private_portals::jit::last_decline());
}

/// `write!` and `writeln!` into a `Vec<u8>`: a parameter behind `&mut`, and
/// a field of a portal method's `self`; with `.unwrap()`, `.expect(..)`,
/// `let _ =` and a statement; and labeled blocks. Output and results agree
/// with plain.
#[jit_interpreter]
mod writes {
    use jitgen::prelude::*;
    use std::io::Write;

    /// Ops: 0 add 3 and write the sum, 1 subtract 1, 2 loop while positive,
    /// 3 write a line, anything else stop.
    pub fn run(code: &[u8], n: i64, out: &mut Vec<u8>) -> i64 {
        let mut acc = n;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                acc += 3;
                write!(out, "{acc} ").unwrap();
            } else if op == 1 {
                acc -= 1;
            } else if op == 2 {
                if acc > 0 {
                    pc = 0;
                }
            } else if op == 3 {
                writeln!(out, "at {}: {:>4}", pc, acc).expect("a Vec");
            } else {
                let _ = write!(out, "stop");
                return acc;
            }
        }
        acc
    }

    pub struct Machine {
        pub code: Vec<u8>,
        pub pc: usize,
        pub acc: i64,
        pub output: Vec<u8>,
    }

    /// A promotion while a list of 60 run-time values is live (a state too
    /// large to hand over in a frame: the list is made real first). Ops: 0
    /// build the list and read it at a promoted index, anything else
    /// count down.
    pub fn wide(code: &[u8], n: i64, m: i64) -> i64 {
        let mut acc = 0i64;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                let mut v: Vec<i64> = Vec::new();
                let mut i = 0;
                while i < 60 {
                    v.push(n.wrapping_mul(i + 1).wrapping_add(acc));
                    i += 1;
                }
                let k = hint!((m.wrapping_add(acc) % 60 + 60) % 60, promote);
                acc = acc.wrapping_add(v[k as usize]).wrapping_add(v.len() as i64);
            } else {
                acc -= 1;
            }
        }
        acc
    }

    /// Labeled blocks: a value given by `break 'label v` from inside a
    /// loop, an unlabeled `break` inside a block leaving the loop around
    /// it. Ops: 0 add the first power of two above acc's low byte, 1 halve,
    /// 2 loop while acc > 0 (counting down n), anything else stop.
    pub fn blocks(code: &[u8], n: i64) -> i64 {
        let mut acc = n;
        let mut left = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return acc;
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            let step = 'op: {
                if op == 0 {
                    let mut p = 1i64;
                    loop {
                        if p > (acc & 255) {
                            break 'op p;
                        }
                        p *= 2;
                    }
                }
                if op == 1 {
                    break 'op -(acc / 2);
                }
                if op == 2 {
                    left -= 1;
                    if left > 0 {
                        pc = 0;
                    }
                    0
                } else {
                    'inner: {
                        if acc > 1000 {
                            break 'inner;
                        }
                        acc += 1;
                    }
                    return acc;
                }
            };
            acc += step;
        }
    }

    impl Machine {
        pub fn run(&mut self) -> i64 {
            while self.pc < self.code.len() {
                hint!(global_merge_point);
                let op = self.code[hint!(self.pc, concrete)];
                self.pc += 1;
                match op {
                    0 => {
                        self.acc -= 1;
                        writeln!(self.output, "{}", self.acc).unwrap();
                    }
                    1 => {
                        if self.acc > 0 {
                            self.pc = 0;
                        }
                    }
                    _ => {
                        write!(self.output, "end").unwrap();
                    }
                }
            }
            self.acc
        }
    }
}

#[test]
fn write_into_a_vec_and_labeled_blocks_agree_with_plain() {
    writes::jit::config().set_threshold(0);
    let programs: [&[u8]; 4] = [&[0, 1, 1, 1, 1, 2], &[0, 3, 1, 1, 1, 1, 1, 2, 3, 9], &[3, 3, 0, 9, 0], &[]];
    for code in programs {
        for n in [-2, 0, 5, 40] {
            let mut want_out = vec![];
            let want = writes::jit::plain::run(code, n, &mut want_out);
            let mut out = vec![];
            assert_eq!((writes::run(code, n, &mut out), &out), (want, &want_out), "{code:?} {n}");
            let mut out = vec![];
            assert_eq!((writes::jit::specialize::run(code).call(n, &mut out), &out), (want, &want_out));
        }
    }
    for code in [&[0u8, 1, 0, 2][..], &[1, 0, 0, 2, 7], &[0, 9]] {
        for n in [-3, 1, 9, 300] {
            let want = writes::jit::plain::blocks(code, n);
            assert_eq!(writes::blocks(code, n), want, "{code:?} {n}");
            assert_eq!(writes::jit::specialize::blocks(code).call(n), want, "{code:?} {n}");
        }
    }
    let before = writes::jit::stats().entries;
    for n in [0, 1, 30] {
        let machine = || writes::Machine { code: vec![0, 1, 2], pc: 0, acc: n, output: b"> ".to_vec() };
        let mut want_m = machine();
        let want = writes::jit::plain::Machine::run(&mut want_m);
        let mut m = machine();
        assert_eq!((m.run(), &m.output, m.pc), (want, &want_m.output, want_m.pc), "{n}");
        let mut m = machine();
        assert_eq!(writes::jit::specialize::Machine::run(&mut m), want);
        assert_eq!(m.output, want_m.output);
    }
    let st = writes::jit::stats();
    assert!(st.entries > before && before > 0, "{st:?} {:?}", writes::jit::last_decline());
}

/// A promotion whose state holds a virtual list too large for a frame
/// makes the list real before the flexswitch; each promoted value's case
/// reads it; results agree with plain.
#[test]
fn a_promotion_with_a_large_virtual_list_live_agrees_with_plain() {
    writes::jit::config().set_threshold(0);
    for code in [&[0u8, 1, 0, 0][..], &[1, 0, 1, 0, 0, 1, 0]] {
        for (n, m) in [(3, 7), (-5, 0), (11, 59), (i64::MAX, -4)] {
            let want = writes::jit::plain::wide(code, n, m);
            assert_eq!(writes::wide(code, n, m), want, "{code:?} {n} {m}");
            let f = writes::jit::specialize::wide(code);
            assert_eq!(f.call(n, m), want, "{code:?} {n} {m}");
            assert!(f.listing_with_cases().contains("vec_new_repeat"), "{}", f.listing_with_cases());
        }
    }
}

/// Integer methods of the standard library desugared on the analysis's
/// operations: `rem_euclid`, `div_euclid`, `signum`, `is_positive`,
/// `is_negative`, on random programs against plain (portal and
/// `jit::specialize`), divisors of both signs.
#[jit_interpreter]
mod euclid {
    use jitgen::prelude::*;

    pub fn run(code: &[u8], x: i64) -> i64 {
        let mut acc = x;
        let mut flags = 0i64;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            let d = (hint!(code[pc + 1], concrete) as i64) - 8;
            pc += 2;
            let d = if d == 0 { 3 } else { d };
            match op {
                0 => acc = acc.rem_euclid(d),
                1 => acc = acc.div_euclid(d),
                2 => acc = acc.wrapping_mul(d).wrapping_sub(40),
                3 => flags = flags * 3 + acc.signum(),
                4 => {
                    if acc.is_negative() {
                        flags += 5;
                    } else if acc.is_positive() {
                        flags += 7;
                    }
                }
                _ => acc = (acc as i32).rem_euclid(d as i32) as i64 + (acc as i32).div_euclid(-(d as i32)) as i64,
            }
        }
        acc.wrapping_mul(1000).wrapping_add(flags)
    }
}

#[test]
fn euclidean_division_and_signs_agree_with_plain() {
    euclid::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x0e0c_11d0);
    for _ in 0..common::how_many(300) {
        let n = 1 + rng.below(8) as usize;
        let code: Vec<u8> = (0..n).flat_map(|_| [rng.below(6) as u8, rng.below(17) as u8]).collect();
        for x in [0, 1, -1, 7, -7, 100, -100, i64::MAX / 3, i64::MIN / 3] {
            let want = euclid::jit::plain::run(&code, x);
            assert_eq!(euclid::run(&code, x), want, "{code:?} {x}");
            assert_eq!(euclid::jit::specialize::run(&code).call(x), want, "{code:?} {x}");
        }
    }
    let s = euclid::jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", euclid::jit::last_decline());
}

/// A `Vec` written at run-time indices directly and through a `&mut [i64]`
/// a helper gets: a store through the slice overwrites what compiled code
/// knew of the element, which a read after it must not use.
#[jit_interpreter]
mod slice_alias {
    use super::*;

    fn poke(s: &mut [i64], i: usize, x: i64) {
        s[i] = x;
    }

    /// Ops: 0 `regs[acc & 1] = acc`, 1 the same through `poke` with
    /// `3 * acc`, 2 `sum += regs[acc & 1]`, 3 `acc -= 1` and loop while it
    /// is positive, 4 `sum -= 7`, 5 the store, the store through `poke` and
    /// the read in one instruction (no merge point between them).
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut regs = vec![0i64; 4];
        let mut pc = 0;
        let mut acc = n;
        let mut sum: i64 = 0;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return sum.wrapping_add(regs[0]).wrapping_add(regs[1]);
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => regs[(acc & 1) as usize] = acc,
                1 => poke(&mut regs, (acc & 1) as usize, acc.wrapping_mul(3)),
                2 => sum = sum.wrapping_add(regs[(acc & 1) as usize]),
                3 => {
                    acc -= 1;
                    if acc > 0 {
                        pc = 0;
                    }
                }
                5 => {
                    let i = (acc & 1) as usize;
                    regs[i] = acc;
                    poke(&mut regs, i, acc.wrapping_mul(5));
                    sum = sum.wrapping_add(regs[i]);
                }
                _ => sum -= 7,
            }
        }
    }
}

#[test]
fn a_store_through_a_slice_of_a_vec_is_seen_by_reads_of_the_vec() {
    slice_alias::jit::config().set_threshold(0);
    for code in [&[0u8, 1, 2, 3][..], &[1, 0, 2, 3], &[0, 2, 1, 2, 4, 3], &[0, 1, 1, 2, 2, 3], &[5, 3], &[0, 5, 2, 3]] {
        for n in [1, 5, 300] {
            let want = slice_alias::jit::plain::run(code, n);
            assert_eq!(slice_alias::run(code, n), want, "{code:?} from {n}");
            assert_eq!(slice_alias::jit::specialize::run(code).call(n), want, "{code:?} from {n}, specialized");
        }
    }
}
