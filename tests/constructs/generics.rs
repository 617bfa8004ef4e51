//! Generic helpers, as VMs write them: `fn fail<T>(f: Fault) -> Result<T,
//! Fault>` for every error path, `fn larger<T: PartialOrd>(a: T, b: T)`,
//! and a generic method `fn pop_as<T: From<i64>>(&mut self)`. The analysis
//! never looks inside them: each call is a residual call of the function as
//! it is, whose type arguments Rust infers from the call's types (a type
//! parameter stands for a fresh inference variable at each call). Results
//! and whole final states are compared with `jit::plain`, through the
//! portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod helpers {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Fault {
        Underflow(usize),
        Unknown(u8),
    }

    /// Generic in its result only: Rust infers `T` from where it is used.
    fn fail<T>(fault: Fault) -> Result<T, Fault> {
        Err(fault)
    }

    /// Generic in its arguments.
    fn larger<T: PartialOrd + Copy>(a: T, b: T) -> T {
        if a > b {
            a
        } else {
            b
        }
    }

    /// Ops: 0 pushes the counter, 1 pops two and pushes the larger plus
    /// one, 2 pops one (`Underflow` when empty), 3 loops while the counter
    /// stays positive, 4 returns the top, others fail with `Unknown`.
    pub fn run(code: &[u8], stack: &mut Vec<i64>, n: i64) -> Result<i64, Fault> {
        let mut pc = 0;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            match hint!(code[pc], concrete) {
                0 => stack.push(i),
                1 => {
                    let (Some(a), Some(b)) = (stack.pop(), stack.pop()) else {
                        return fail(Fault::Underflow(pc));
                    };
                    stack.push(larger(a, b) + 1);
                }
                2 => {
                    if stack.pop().is_none() {
                        return fail(Fault::Underflow(pc));
                    }
                }
                3 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                        continue;
                    }
                }
                4 => {
                    return match stack.last() {
                        Some(v) => Ok(larger(*v, -1)),
                        None => fail(Fault::Underflow(pc)),
                    }
                }
                op => return fail(Fault::Unknown(op)),
            }
            pc += 1;
        }
    }

    /// A machine whose generic method pops a value as any type made from
    /// an `i64`.
    pub struct Machine {
        pub stack: Vec<i64>,
        pub popped: i64,
    }

    impl Machine {
        fn pop_as<T: From<i64>>(&mut self, at: usize) -> Result<T, Fault> {
            match self.stack.pop() {
                Some(v) => {
                    self.popped += 1;
                    Ok(T::from(v))
                }
                None => fail(Fault::Underflow(at)),
            }
        }

        /// The ops of [`run`], popping through [`Machine::pop_as`].
        pub fn run(&mut self, code: &[u8], n: i64) -> Result<i64, Fault> {
            let mut pc = 0;
            let mut i = n;
            loop {
                hint!(global_merge_point);
                match hint!(code[pc], concrete) {
                    0 => self.stack.push(i),
                    1 => {
                        let a: i64 = self.pop_as(pc)?;
                        let b: i64 = self.pop_as(pc)?;
                        self.stack.push(larger(a, b) + 1);
                    }
                    2 => {
                        let _: i128 = self.pop_as(pc)?;
                    }
                    3 => {
                        i -= 1;
                        if i > 0 {
                            pc = 0;
                            continue;
                        }
                    }
                    4 => return self.pop_as(pc),
                    op => return fail(Fault::Unknown(op)),
                }
                pc += 1;
            }
        }
    }
}

use helpers::{jit, Fault, Machine};

fn check(code: &[u8], n: i64) {
    let mut plain_stack = vec![7];
    let want = jit::plain::run(code, &mut plain_stack, n);
    let mut stack = vec![7];
    assert_eq!(helpers::run(code, &mut stack, n), want, "{code:?} {n}");
    assert_eq!(stack, plain_stack, "{code:?} {n}");
    let mut stack = vec![7];
    assert_eq!(jit::specialize::run(code).call(&mut stack, n), want, "{code:?} {n}");
    assert_eq!(stack, plain_stack, "{code:?} {n}");

    let mut plain = Machine { stack: vec![7], popped: 0 };
    let want = jit::plain::Machine::run(&mut plain, code, n);
    let mut m = Machine { stack: vec![7], popped: 0 };
    assert_eq!(m.run(code, n), want, "{code:?} {n}");
    assert_eq!((m.stack, m.popped), (plain.stack.clone(), plain.popped), "{code:?} {n}");
    let mut m = Machine { stack: vec![7], popped: 0 };
    assert_eq!(jit::specialize::Machine::run(code).call(&mut m, n), want, "{code:?} {n}");
    assert_eq!((m.stack, m.popped), (plain.stack, plain.popped), "{code:?} {n}");
}

#[test]
fn generic_helpers_are_residual_calls_and_agree_with_plain() {
    jit::config().set_threshold(0);
    for n in [1, 3, 40] {
        check(&[0, 0, 1, 3, 4], n);
        check(&[0, 2, 2, 2, 3, 4], n);
        check(&[0, 9], n);
    }
    assert_eq!(jit::plain::run(&[2, 2, 4], &mut vec![], 1), Err(Fault::Underflow(0)));
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    // The generic helper is called, never looked into.
    let listing = jit::specialize::run(&[0, 0, 1, 4]).listing().to_string();
    assert!(listing.contains("larger"), "{listing}");
    // The generic method too, on the machine whole (a method the split
    // cannot inline keeps `self` one object).
    let listing = jit::specialize::Machine::run(&[0, 0, 1, 4]).listing().to_string();
    assert!(listing.contains("pop_as") && listing.contains("larger"), "{listing}");
}

#[test]
fn random_programs_with_generic_helpers_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x6e_4e41c);
    for _ in 0..crate::common::how_many(200) {
        let len = rng.below(8) as usize;
        let mut code: Vec<u8> = (0..len).map(|_| rng.below(6) as u8).collect();
        code.extend([3, 4]);
        check(&code, 1 + rng.below(20) as i64);
    }
}
