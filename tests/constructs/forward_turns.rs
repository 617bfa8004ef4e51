//! The hook looks only at turns that may have jumped (`jitgen-macros`'
//! `forward`): each way this interpreter moves its position backward
//! (a plain assignment, one inside a macro of the portal, a compound one,
//! a `continue` that skips the step) must
//! still close a loop that compiles and is entered. Under an explicit
//! threshold the hook counts the visits it looks at; a loop whose backward
//! jump it missed would never be counted, never compiled. Results agree
//! with `jit::plain`, through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod turns {
    use jitgen::prelude::*;

    /// Ops, each with one operand byte `a`: 0 adds `a`; 1-4 jump to `a`
    /// while the counter lasts (1 by assignment, 2 through the macro
    /// `goto!`, 3 by `-=` of the distance, 4 by assignment after a
    /// destructuring one); 5 skips its operand with a `continue` that
    /// passes the loop's step when the accumulator is odd; anything else
    /// ends. Returns the whole state: the accumulator, counter and position.
    pub fn run(code: &[u8], n: i64) -> (i64, i64, usize) {
        let mut pc: usize = 0;
        let mut acc: i64 = 0;
        let mut ctr = n;
        macro_rules! goto {
            ($t:expr) => {
                pc = $t
            };
        }
        loop {
            hint!(global_merge_point);
            if pc + 1 >= code.len() {
                return (acc, ctr, pc);
            }
            let op = hint!(code[pc], concrete);
            let a = hint!(code[pc + 1], concrete) as usize;
            if op == 5 && acc % 2 != 0 {
                acc += 7;
                pc += 2;
                continue;
            }
            pc += 2;
            match op {
                0 => acc += a as i64,
                1..=4 if ctr > 0 => {
                    ctr -= 1;
                    if op == 1 {
                        pc = a;
                    } else if op == 2 {
                        goto!(a);
                    } else if op == 3 {
                        if a < pc {
                            pc -= pc - a;
                        }
                    } else {
                        // Rust the analysis does not model, outlined with
                        // what it writes passed by `&mut`.
                        (acc, ctr) = (acc ^ 1, ctr);
                        pc = a;
                    }
                }
                1..=4 => {}
                5 => acc += 1,
                _ => return (acc, ctr, pc),
            }
        }
    }
}

/// A random program of 1 to 8 ops below `ops`, each with an even operand
/// byte (a jump's target: the start of some op).
fn random_turns(rng: &mut crate::common::Rng, ops: u64) -> Vec<u8> {
    let len = 2 * (1 + rng.below(8) as usize);
    (0..len).map(|i| if i % 2 == 0 { rng.below(ops) as u8 } else { 2 * rng.below(len as u64 / 2) as u8 }).collect()
}

fn check(code: &[u8], n: i64) {
    let want = turns::jit::plain::run(code, n);
    assert_eq!(turns::run(code, n), want, "{code:?} {n}");
    assert_eq!(turns::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn loops_closed_by_every_kind_of_jump_compile_and_random_programs_agree_with_plain() {
    turns::jit::config().set_threshold(50);
    for jump in 1u8..=4 {
        // A first operation the loop does not come back to, then the loop
        // at position 2: its head is reached only by the jump.
        let program = [0u8, 3, 0, 1, 5, 0, jump, 2, 9, 0];
        let before = turns::jit::stats();
        for n in [0i64, 1, 7, 300] {
            check(&program, n);
        }
        let after = turns::jit::stats();
        assert!(after.compilations > before.compilations, "jump {jump}: {after:?}");
        assert!(after.entries > before.entries, "jump {jump}: {after:?}");
    }
    // Random programs of forward and backward turns (in the same test: the
    // counts above are the module's).
    turns::jit::config().set_threshold(3);
    let mut rng = crate::common::Rng(0xf0_4a4d);
    for _ in 0..crate::common::how_many(3000) {
        let code = random_turns(&mut rng, 7);
        check(&code, rng.below(40) as i64);
    }
}

/// A method portal whose position is a field: `self` splits, and each write
/// of `self.pc` becomes a block that also stores the field's cell. Its
/// forward steps skip the hook too (`jitgen-macros`' expansion tests), so
/// a jump the flag missed, by assignment or in a helper method, would never
/// compile.
#[jit_interpreter]
pub mod fields {
    use jitgen::prelude::*;

    /// The machine: its position, accumulator and counter.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Machine {
        pub pc: usize,
        pub acc: i64,
        pub ctr: i64,
    }

    impl Machine {
        /// Ops, each with one operand byte `a`: 0 adds `a`; 1 jumps to `a`
        /// while the counter lasts, 2 the same through a helper method;
        /// 3 skips its next op; anything else ends. Returns the accumulator.
        pub fn run(&mut self, code: &[u8]) -> i64 {
            loop {
                hint!(global_merge_point);
                if self.pc + 1 >= code.len() {
                    return self.acc;
                }
                let op = code[hint!(self.pc, concrete)];
                let a = code[self.pc + 1] as usize;
                self.pc += 2;
                match op {
                    0 => self.acc += a as i64,
                    1 | 2 if self.ctr > 0 => {
                        self.ctr -= 1;
                        if op == 1 {
                            self.pc = a;
                        } else {
                            self.jump(a);
                        }
                    }
                    1 | 2 => {}
                    3 => self.skip(),
                    _ => return self.acc,
                }
            }
        }

        fn jump(&mut self, to: usize) {
            self.pc = to;
        }

        fn skip(&mut self) {
            self.pc += 2;
        }
    }
}

fn check_fields(code: &[u8], n: i64) {
    use fields::Machine;
    let start = Machine { pc: 0, acc: 0, ctr: n };
    let mut want_m = start.clone();
    let want = fields::jit::plain::Machine::run(&mut want_m, code);
    let mut m = start.clone();
    assert_eq!((m.run(code), &m), (want, &want_m), "{code:?} {n}");
    let mut m = start;
    assert_eq!((fields::jit::specialize::Machine::run(&mut m, code), &m), (want, &want_m), "{code:?} {n}");
}

#[test]
fn a_fields_jumps_through_assignments_and_methods_compile_and_random_programs_agree() {
    fields::jit::config().set_threshold(50);
    for jump in 1u8..=2 {
        let program = [0u8, 3, 0, 1, 3, 0, 0, 9, jump, 2, 9, 0];
        // Through the portal alone (`jit::specialize` compiles too).
        let before = fields::jit::stats();
        for n in [0i64, 1, 7, 300] {
            fields::Machine { pc: 0, acc: 0, ctr: n }.run(&program);
        }
        let after = fields::jit::stats();
        assert!(after.compilations > before.compilations, "jump {jump}: {after:?}");
        assert!(after.entries > before.entries, "jump {jump}: {after:?}");
        for n in [0i64, 1, 7, 300] {
            check_fields(&program, n);
        }
    }
    fields::jit::config().set_threshold(3);
    let mut rng = crate::common::Rng(0xf1e1d5);
    for _ in 0..crate::common::how_many(3000) {
        let code = random_turns(&mut rng, 5);
        check_fields(&code, rng.below(40) as i64);
    }
}

/// A portal that steps its position inside the arms of its `match`, not
/// at the loop body's top level: each step sets a flag of its own, and a
/// turn that did not step (a jump, by assignment in a branch) looks. A
/// backward jump the flags missed would never be counted, never compiled.
#[jit_interpreter]
pub mod arm_steps {
    use jitgen::prelude::*;

    /// Ops, each with one operand byte `a` and stepping past itself in its
    /// own arm: 0 adds `a`; 1 jumps to `a` while the counter lasts, else
    /// steps; 2 steps (an arm that is the step); 3 skips the next op where
    /// the accumulator is even, else adds one; anything else ends. Returns
    /// the whole state: the accumulator, counter and position.
    pub fn run(code: &[u8], n: i64) -> (i64, i64, usize) {
        let mut pc: usize = 0;
        let mut acc: i64 = 0;
        let mut ctr = n;
        loop {
            hint!(global_merge_point);
            if pc + 1 >= code.len() {
                return (acc, ctr, pc);
            }
            let op = hint!(code[pc], concrete);
            let a = hint!(code[pc + 1], concrete) as usize;
            match op {
                0 => {
                    acc += a as i64;
                    pc += 2;
                }
                1 => {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = a;
                    } else {
                        pc += 2
                    }
                }
                2 => pc += 2,
                3 => {
                    if acc % 2 == 0 {
                        pc += 4;
                    } else {
                        acc += 1;
                        pc += 2;
                    }
                }
                _ => return (acc, ctr, pc),
            }
        }
    }
}

/// One of this file's portals that steps inside its arms: how it runs
/// (`jit::plain`, the portal, `jit::specialize`), its threshold and its
/// counts of compilations and entries.
struct Stepping {
    plain: fn(&[u8], i64) -> (i64, i64, usize),
    run: fn(&[u8], i64) -> (i64, i64, usize),
    specialized: fn(&[u8], i64) -> (i64, i64, usize),
    set_threshold: fn(u32),
    counts: fn() -> (u64, u64),
}

impl Stepping {
    /// The same whole state through the portal and `jit::specialize` as
    /// through `jit::plain`.
    fn check(&self, code: &[u8], n: i64) {
        let want = (self.plain)(code, n);
        assert_eq!((self.run)(code, n), want, "{code:?} {n}");
        assert_eq!((self.specialized)(code, n), want, "{code:?} {n}");
    }

    /// A loop reached only by a jump is counted, compiled and entered
    /// under an explicit threshold; random programs of `ops` kinds agree.
    fn finds_every_loop_and_agrees(&self, ops: u64, seed: u64) {
        (self.set_threshold)(50);
        // The loop at position 2, reached only by the jump; its ops step in
        // their arms.
        let program = [0u8, 2, 0, 1, 2, 0, 3, 0, 1, 2, 9, 0];
        let before = (self.counts)();
        for n in [0i64, 1, 7, 300] {
            self.check(&program, n);
        }
        let after = (self.counts)();
        assert!(after.0 > before.0 && after.1 > before.1, "{before:?} {after:?}");
        (self.set_threshold)(3);
        let mut rng = crate::common::Rng(seed);
        for _ in 0..crate::common::how_many(3000) {
            let code = random_turns(&mut rng, ops);
            self.check(&code, rng.below(40) as i64);
        }
    }
}

#[test]
fn steps_inside_the_arms_still_find_every_loop_and_random_programs_agree() {
    Stepping {
        plain: arm_steps::jit::plain::run,
        run: arm_steps::run,
        specialized: |c, n| arm_steps::jit::specialize::run(c).call(n),
        set_threshold: |t| arm_steps::jit::config().set_threshold(t),
        counts: || (arm_steps::jit::stats().compilations, arm_steps::jit::stats().entries),
    }
    .finds_every_loop_and_agrees(5, 0xa4_57e9);
}

/// `arm_steps` written as a `while let` over the program's bytes, as
/// `while let Some(&op) = code.get(pc)` VMs are: the inner loop carries
/// the pattern's binding from turn to turn and tests the pattern again at
/// its end. Its `continue` after a step, its `break` and its `return`
/// leave the inner loop as the user's loop.
#[jit_interpreter]
pub mod while_let_steps {
    use jitgen::prelude::*;

    /// Ops, each with one operand byte `a`: 0 adds `a`; 1 jumps to `a`
    /// while the counter lasts, else steps; 2 steps; 3 skips the next op
    /// with a `continue` where the accumulator is even, else adds one; 4
    /// leaves the loop by `break`; anything else returns. The whole state:
    /// the accumulator, counter and position (the counter marked where the
    /// loop ended).
    pub fn run(code: &[u8], n: i64) -> (i64, i64, usize) {
        let mut pc: usize = 0;
        let mut acc: i64 = 0;
        let mut ctr = n;
        while let Some(&op) = code.get(pc) {
            hint!(global_merge_point);
            hint!(code, deepfreeze);
            hint!(pc, concrete);
            let a = match code.get(pc + 1) {
                Some(&a) => a as usize,
                None => break,
            };
            match op {
                0 => {
                    acc += a as i64;
                    pc += 2;
                }
                1 => {
                    if ctr > 0 {
                        ctr -= 1;
                        pc = a;
                    } else {
                        pc += 2
                    }
                }
                2 => pc += 2,
                3 => {
                    if acc % 2 == 0 {
                        pc += 4;
                        continue;
                    }
                    acc += 1;
                    pc += 2;
                }
                4 => break,
                _ => return (acc, ctr, pc),
            }
        }
        (acc, ctr + 1000, pc)
    }
}

#[test]
fn a_while_let_skips_the_test_after_steps_and_still_finds_every_loop() {
    Stepping {
        plain: while_let_steps::jit::plain::run,
        run: while_let_steps::run,
        specialized: |c, n| while_let_steps::jit::specialize::run(c).call(n),
        set_threshold: |t| while_let_steps::jit::config().set_threshold(t),
        counts: || (while_let_steps::jit::stats().compilations, while_let_steps::jit::stats().entries),
    }
    .finds_every_loop_and_agrees(6, 0x3417_1e7);
}
