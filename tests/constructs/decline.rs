//! What the JIT cannot compile yet is declined, said why, and the interpreter
//! goes on with the same results.
//!
//! Each struct below that compiled code cannot make is made beside a
//! `return` no program takes: a statement that leaves its function cannot
//! run as Rust on its own (outlined), so the operation stays one whose
//! code declines.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod boxed {
    use super::*;

    pub struct Cell {
        pub value: i64,
        pub history: Vec<Vec<i64>>,
    }

    pub fn run(code: &[u8], x: i64) -> i64 {
        let mut acc = x;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            if op == 1 {
                // A struct with a field that is a list of lists: jitgen
                // cannot make it virtual yet.
                let c = Cell { value: acc, history: Vec::new() };
                if !c.history.is_empty() {
                    return c.value;
                }
                acc = c.value + 1;
            } else {
                acc -= 1;
            }
            pc += 1;
        }
        acc
    }
}

#[test]
fn declined_compilations_continue_in_the_interpreter() {
    boxed::jit::config().set_threshold(0);
    let program = [1, 0, 1, 1];
    assert_eq!(boxed::run(&program, 5), boxed::jit::plain::run(&program, 5));
    // The hook looks at a call's first visit, then only at turns that may
    // have jumped (`forward`), which a straight-line program has none of:
    // its first position was tried once, and declined.
    let first = boxed::jit::stats();
    assert_eq!((first.compilations, first.declined, first.entries), (1, 1, 0), "{first:?}");
    for x in 0..20 {
        assert_eq!(boxed::run(&program, x), boxed::jit::plain::run(&program, x));
    }
    // A declined key is remembered: no compiler runs again for it.
    assert_eq!(boxed::jit::stats().compilations, 1);
    let why = boxed::jit::last_decline().unwrap();
    assert!(why.contains("a Vec of non-scalars"), "{why}");
    // Programs without the allocation still compile (after declined keys a
    // portal skips up to `MAX_SKIP` visits: a few runs for this short one).
    for _ in 0..30 {
        assert_eq!(boxed::run(&[0, 0, 0], 10), 7);
    }
    let s = boxed::jit::stats();
    assert_eq!(s.declined, 1, "{s:?}");
    assert!(s.compilations > 1 && s.entries > 0, "{s:?}");
}

// Portals whose every compilation declines (each turn builds a `Cell`, which
// jitgen cannot make virtual yet) go on without their hook after a while
// (`jit::stats().unhooked`). Three loop forms, a method portal, and loops
// nested in an outer loop, as a function's value, in a branch of a labeled
// block, each with `break`s, `continue`s, `return`s and `?` that the
// hook-free copy must retarget, run random programs against `jit::plain`.
//
// Programs are pairs (op, arg): 0 mixes `arg` into `acc`, 1 counts down and
// jumps to pair `arg` while the counter lasts, 2 skips the next pair when
// `acc` is odd (a `continue`), 3 fails when `acc & 63 == arg` (a `return` or
// `?`), 4 ends the loop when `acc & 255 == arg` (a `break`, with a value
// where the loop has one); running off the end ends it too.

#[jit_interpreter]
pub mod forms {
    use super::*;

    pub struct Cell {
        pub value: i64,
        pub history: Vec<Vec<i64>>,
    }

    fn checked(acc: i64, arg: i64) -> Result<i64, i64> {
        if acc & 63 == arg {
            Err(acc)
        } else {
            Ok(acc)
        }
    }

    /// `loop` with `break value`, `continue`, `return` and `?`.
    pub fn with_loop(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut pc = 0;
        let r = loop {
            hint!(global_merge_point);
            let c = Cell { value: acc, history: Vec::new() };
            if !c.history.is_empty() {
                return Err(c.value);
            }
            acc = c.value;
            if pc >= code.len() {
                break acc + 1000;
            }
            let op = hint!(code[pc], concrete);
            let arg = hint!(code[pc + 1], concrete) as i64;
            pc += 2;
            match op {
                0 => acc = acc.wrapping_mul(31).wrapping_add(arg),
                1 => {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = 2 * arg as usize;
                    }
                }
                2 => {
                    if acc & 1 == 1 {
                        pc += 2;
                        continue;
                    }
                }
                3 => acc = checked(acc, arg)?,
                _ => {
                    if acc & 255 == arg {
                        break acc;
                    }
                }
            }
        };
        Ok(r.wrapping_sub(ctr))
    }

    /// `while` with a labeled loop, `continue 'l` from an inner loop,
    /// `break` and `return`.
    pub fn with_while(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut pc = 0;
        'l: while pc < code.len() {
            hint!(global_merge_point);
            let c = Cell { value: acc, history: Vec::new() };
            if !c.history.is_empty() {
                return Err(c.value);
            }
            acc = c.value;
            let op = hint!(code[pc], concrete);
            let arg = hint!(code[pc + 1], concrete) as i64;
            pc += 2;
            if op == 0 {
                acc = acc.wrapping_mul(31).wrapping_add(arg);
            } else if op == 1 {
                if ctr > 0 {
                    ctr -= 1;
                    pc = 2 * arg as usize;
                }
            } else if op == 2 {
                let mut k = 0;
                while k < 3 {
                    k += 1;
                    if acc & 1 == 1 && k == 2 {
                        pc += 2;
                        continue 'l;
                    }
                }
            } else if op == 3 {
                if acc & 63 == arg {
                    return Err(acc);
                }
            } else if acc & 255 == arg {
                break;
            }
        }
        Ok(acc.wrapping_sub(ctr))
    }

    /// The next pair's op, advancing `pc` past the pair.
    fn fetch(code: &[u8], pc: &mut usize) -> Option<u8> {
        if *pc < code.len() {
            *pc += 2;
            Some(code[*pc - 2])
        } else {
            None
        }
    }

    /// `while let` over a fetch that advances `pc` (a condition with an
    /// effect: the copy must not test it again for the turn under way),
    /// with `continue` and `break`.
    pub fn with_while_let(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut pc = 0;
        while let Some(op) = fetch(code, &mut pc) {
            hint!(global_merge_point);
            let c = Cell { value: acc, history: Vec::new() };
            if !c.history.is_empty() {
                return Err(c.value);
            }
            acc = c.value;
            let op = hint!(op, concrete);
            let arg = hint!(code[pc - 1], concrete) as i64;
            match op {
                0 => acc = acc.wrapping_mul(31).wrapping_add(arg),
                1 => {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = 2 * arg as usize;
                    }
                }
                2 => {
                    if acc & 1 == 1 {
                        pc += 2;
                        continue;
                    }
                }
                3 => acc = checked(acc, arg)?,
                _ => {
                    if acc & 255 == arg {
                        break;
                    }
                }
            }
        }
        Ok(acc.wrapping_sub(ctr))
    }

    /// The merge point's loop inside an outer loop over "frames", left by
    /// `continue 'frames` and `break 'frames` from inside.
    pub fn nested_in_a_loop(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut rounds = 0;
        let mut pc = 0;
        'frames: loop {
            rounds += 1;
            if rounds > 3 {
                break 'frames;
            }
            loop {
                hint!(global_merge_point);
                let c = Cell { value: acc, history: Vec::new() };
                if !c.history.is_empty() {
                    return Err(c.value);
                }
                acc = c.value;
                if pc >= code.len() {
                    pc = 0;
                    continue 'frames;
                }
                let op = hint!(code[pc], concrete);
                let arg = hint!(code[pc + 1], concrete) as i64;
                pc += 2;
                if op == 0 {
                    acc = acc.wrapping_mul(31).wrapping_add(arg);
                } else if op == 1 {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = 2 * arg as usize;
                    }
                } else if op == 3 {
                    acc = checked(acc, arg)?;
                } else if op == 4 && acc & 255 == arg {
                    break 'frames;
                }
            }
        }
        Ok(acc.wrapping_sub(ctr).wrapping_add(rounds))
    }

    /// The merge point's loop as the function's value: it only returns.
    pub fn loop_as_the_value(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let c = Cell { value: acc, history: Vec::new() };
            if !c.history.is_empty() {
                return Err(c.value);
            }
            acc = c.value;
            if pc >= code.len() {
                return Ok(acc.wrapping_sub(ctr));
            }
            let op = hint!(code[pc], concrete);
            let arg = hint!(code[pc + 1], concrete) as i64;
            pc += 2;
            match op {
                0 => acc = acc.wrapping_mul(31).wrapping_add(arg),
                1 => {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = 2 * arg as usize;
                    }
                }
                3 => acc = checked(acc, arg)?,
                4 => {
                    if acc & 255 == arg {
                        return Ok(acc);
                    }
                }
                _ => {}
            }
        }
    }

    /// The merge point's loop in a branch of an `if`, inside a labeled
    /// block whose value is the loop's; `while let` over a reference
    /// pattern, with a `continue` of it from a nested loop.
    pub fn in_a_branch(code: &[u8], n: i64) -> Result<i64, i64> {
        let mut acc = 1i64;
        let mut ctr = n;
        let mut pc = 0;
        let r = 'run: {
            if n < 0 {
                break 'run -1;
            } else {
                'ops: while let Some(&op) = code.get(pc) {
                    hint!(global_merge_point);
                    let c = Cell { value: acc, history: Vec::new() };
                    if !c.history.is_empty() {
                        return Err(c.value);
                    }
                    acc = c.value;
                    let op = hint!(op, concrete);
                    let arg = hint!(code[pc + 1], concrete) as i64;
                    pc += 2;
                    let mut k = 0;
                    while k < 2 {
                        k += 1;
                        if op == 2 && acc & 1 == 1 {
                            pc += 2;
                            continue 'ops;
                        }
                    }
                    if op == 0 {
                        acc = acc.wrapping_mul(31).wrapping_add(arg);
                    } else if op == 1 {
                        if ctr > 0 {
                            ctr -= 1;
                            pc = 2 * arg as usize;
                        }
                    } else if op == 3 {
                        acc = checked(acc, arg)?;
                    } else if op == 4 && acc & 255 == arg {
                        break 'run acc;
                    }
                }
            }
            acc.wrapping_sub(ctr)
        };
        Ok(r)
    }

    /// A machine whose portal is a method: `self` is split into its fields.
    pub struct Machine {
        pub code: Vec<u8>,
        pub pc: usize,
        pub acc: i64,
        pub ctr: i64,
    }

    impl Machine {
        pub fn run(&mut self) -> Result<i64, i64> {
            loop {
                hint!(global_merge_point);
                let c = Cell { value: self.acc, history: Vec::new() };
                if !c.history.is_empty() {
                    return Err(c.value);
                }
                self.acc = c.value;
                if self.pc >= self.code.len() {
                    return Ok(self.acc);
                }
                let op = self.code[self.pc];
                let arg = self.code[self.pc + 1] as i64;
                self.pc += 2;
                match op {
                    0 => self.acc = self.acc.wrapping_mul(31).wrapping_add(arg),
                    1 => {
                        if self.ctr > 0 {
                            self.ctr -= 1;
                            self.pc = 2 * arg as usize;
                        }
                    }
                    2 => {
                        if self.acc & 1 == 1 {
                            self.pc += 2;
                            continue;
                        }
                    }
                    3 => self.acc = checked(self.acc, arg)?,
                    _ => {
                        if self.acc & 255 == arg {
                            break Ok(self.acc);
                        }
                    }
                }
            }
        }
    }
}

/// A random program of `pairs` pairs (see `forms`), its jumps backwards.
fn random_form_program(seed: &mut u64, pairs: usize) -> Vec<u8> {
    let mut next = |m: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % m
    };
    let mut code = vec![];
    for i in 0..pairs {
        let op = next(5) as u8;
        let arg = match op {
            1 => next(i as u64 + 1) as u8,
            3 => next(64) as u8,
            4 => next(256) as u8,
            _ => next(256) as u8,
        };
        code.extend([op, arg]);
    }
    code
}

#[test]
fn portals_whose_compilations_all_decline_go_on_without_their_hook() {
    forms::jit::config().set_threshold(0);
    let count: usize = std::env::var("JITGEN_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    // Calls that gave up their hook, per portal (the test's calls run one
    // at a time, so each portal's share is the count's change over its call).
    let mut unhooked = [0u64; 7];
    let mut agree = |which: usize, what: &str, portal: &dyn Fn() -> Result<i64, i64>, plain: Result<i64, i64>| {
        let before = forms::jit::stats().unhooked;
        assert_eq!(portal(), plain, "{what}");
        unhooked[which] += forms::jit::stats().unhooked - before;
    };
    for i in 0..count {
        let code = random_form_program(&mut seed, 2 + i % 9);
        // Long enough for the hook to give up (a few thousand merge points)
        // at varying places, and short runs too.
        for n in [3, 700 + 37 * i as i64, 4000] {
            let what = format!("program {code:?}, n = {n}");
            let plain = forms::jit::plain::with_loop(&code, n);
            agree(0, &format!("loop, {what}"), &|| forms::with_loop(&code, n), plain);
            let plain = forms::jit::plain::with_while(&code, n);
            agree(1, &format!("while, {what}"), &|| forms::with_while(&code, n), plain);
            let plain = forms::jit::plain::with_while_let(&code, n);
            agree(2, &format!("while let, {what}"), &|| forms::with_while_let(&code, n), plain);
            let plain = forms::jit::plain::nested_in_a_loop(&code, n);
            agree(4, &format!("nested in a loop, {what}"), &|| forms::nested_in_a_loop(&code, n), plain);
            let plain = forms::jit::plain::loop_as_the_value(&code, n);
            agree(5, &format!("loop as the value, {what}"), &|| forms::loop_as_the_value(&code, n), plain);
            let plain = forms::jit::plain::in_a_branch(&code, n);
            agree(6, &format!("in a branch, {what}"), &|| forms::in_a_branch(&code, n), plain);
            let machine = || forms::Machine { code: code.clone(), pc: 0, acc: 1, ctr: n };
            let mut b = machine();
            let plain = forms::jit::plain::Machine::run(&mut b);
            let a = std::cell::RefCell::new(machine());
            agree(3, &format!("method, {what}"), &|| a.borrow_mut().run(), plain);
            let a = a.into_inner();
            assert_eq!((a.pc, a.acc, a.ctr), (b.pc, b.acc, b.ctr), "method's fields, {what}");
        }
    }
    let s = forms::jit::stats();
    assert_eq!(s.entries, 0, "{s:?}");
    assert_eq!(s.compilations, s.declined, "{s:?}");
    // Each portal gave up its hook in many calls.
    for (k, n) in unhooked.iter().enumerate() {
        assert!(*n >= count as u64 / 2, "portal {k}: {unhooked:?}");
    }
}

#[jit_interpreter]
pub mod promoted_ahead {
    use super::*;

    /// A struct with a list of lists: compiled code cannot make one yet.
    pub struct Nest {
        pub value: i64,
        pub history: Vec<Vec<i64>>,
    }

    /// Ops: 0 adds the counter, 1 promotes the sum's parity and, when odd,
    /// logs it and builds a `Nest` around it, 2 loops while the counter
    /// stays positive, else returns. Each value promoted is a flexswitch's
    /// case, compiled when first met.
    pub fn run(code: &[u8], log: &mut Vec<String>, n: i64) -> i64 {
        let mut pc = 0;
        let mut acc = 0i64;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc += i,
                1 => {
                    let odd = hint!(acc & 1, promote);
                    if odd == 1 {
                        log.push(format!("{acc}"));
                        let nest = Nest { value: acc, history: Vec::new() };
                        if !nest.history.is_empty() {
                            return nest.value;
                        }
                        acc = nest.value + nest.history.len() as i64;
                    }
                    acc += odd;
                }
                2 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }
}

/// A case compiled later that declines continues in the interpreter through
/// execute mode, which runs the same generating extension and so cannot do
/// what it could not compile: it stopped with the interpreter's state half
/// changed ("jitgen cannot continue in the interpreter here"), a panic in
/// the user's program. A compilation now makes no flexswitch ahead of such
/// an operation: it declines, says why, and the interpreter runs.
#[test]
fn a_switch_ahead_of_what_cannot_compile_declines_and_the_interpreter_runs() {
    promoted_ahead::jit::config().set_threshold(0);
    for code in [&[0u8, 0, 2, 9][..], &[0, 1, 2, 9], &[1, 0, 1, 0, 1, 2, 9]] {
        for n in [1, 3, 20] {
            let mut want_log = vec![];
            let want = promoted_ahead::jit::plain::run(code, &mut want_log, n);
            let mut log = vec![];
            assert_eq!(promoted_ahead::run(code, &mut log, n), want, "{code:?} {n}");
            assert_eq!(log, want_log, "{code:?} {n}");
        }
    }
    let why = promoted_ahead::jit::last_decline().unwrap_or_default();
    assert!(why.contains("flexswitch") && why.contains("line 513"), "{why}");
    let mut rng = crate::common::Rng(0xa4ead);
    for _ in 0..crate::common::how_many(100) {
        let len = rng.below(6) as usize;
        let mut code: Vec<u8> = (0..len).map(|_| rng.below(3) as u8).collect();
        code.extend([2, 9]);
        let n = 1 + rng.below(10) as i64;
        let (mut want_log, mut log) = (vec![], vec![]);
        let want = promoted_ahead::jit::plain::run(&code, &mut want_log, n);
        assert_eq!(promoted_ahead::run(&code, &mut log, n), want, "{code:?} {n}");
        assert_eq!(log, want_log, "{code:?} {n}");
    }
}
