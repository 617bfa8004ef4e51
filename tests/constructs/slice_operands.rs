//! Operands read the way tutorials read them: a slice of the program
//! converted to an array, `u16::from_le_bytes(self.code[self.ip..self.ip +
//! 2].try_into().unwrap())`, inside a helper method on a borrowed program
//! (`code: &'a [u8]`). Such a read is the bytes written out before the
//! analysis, so the operand is known while compiling; a slice whose length
//! the range does not say runs as Rust (outlined) and the rest compiles.
//! Fixed and random programs agree with `jit::plain` on the whole final
//! machine, through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod operands {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Vm<'a> {
        pub code: &'a [u8],
        pub ip: usize,
        pub stack: Vec<i64>,
        /// Instructions left to run.
        pub fuel: u32,
    }

    impl<'a> Vm<'a> {
        fn read_u16(&mut self) -> u16 {
            let v = u16::from_le_bytes(self.code[self.ip..self.ip + 2].try_into().unwrap());
            self.ip += 2;
            v
        }

        fn read_i32(&mut self) -> i32 {
            let bytes: [u8; 4] = self.code[self.ip..=self.ip + 3].try_into().expect("four bytes");
            self.ip += 4;
            i32::from_be_bytes(bytes)
        }

        /// Ops: 0 pushes a `u16`; 1 decrements the top; 2 jumps to a `u16`
        /// while the top is not zero; 3 pushes a big-endian `i32`; 4 adds the
        /// top two; 5 pushes a `u16` read through a length the range does
        /// not say (outlined); else returns the top. Out of fuel, it gives
        /// `None`.
        pub fn run(&mut self) -> Option<i64> {
            loop {
                hint!(global_merge_point);
                let op = self.code[hint!(self.ip, concrete)];
                self.ip += 1;
                self.fuel = self.fuel.checked_sub(1)?;
                match op {
                    0 => {
                        let v = self.read_u16();
                        self.stack.push(v as i64);
                    }
                    1 => *self.stack.last_mut()? -= 1,
                    2 => {
                        let to = self.read_u16() as usize;
                        if *self.stack.last()? != 0 {
                            self.ip = to;
                        }
                    }
                    3 => {
                        let v = self.read_i32();
                        self.stack.push(v as i64);
                    }
                    4 => {
                        let b = self.stack.pop()?;
                        let a = self.stack.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    5 => {
                        let end = self.ip + 2;
                        let v = u16::from_le_bytes(self.code[self.ip..end].try_into().unwrap());
                        self.ip = end;
                        self.stack.push(v as i64);
                    }
                    _ => return self.stack.pop(),
                }
            }
        }
    }
}

use operands::{jit, Vm};

/// Runs `code` interpreted, through the portal and through
/// `jit::specialize`: the same result (or a panic in each) and the same
/// whole machine.
fn check(code: &[u8]) -> Option<Option<i64>> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let fresh = || Vm { code, ip: 0, stack: vec![], fuel: 200_000 };
    let mut plain = fresh();
    let want = catch_unwind(AssertUnwindSafe(|| jit::plain::Vm::run(&mut plain)));
    for specialize in [false, true] {
        let mut m = fresh();
        let got =
            catch_unwind(AssertUnwindSafe(|| if specialize { jit::specialize::Vm::run(&mut m) } else { m.run() }));
        match (&want, &got) {
            (Ok(w), Ok(g)) => assert_eq!(g, w, "{code:?}, specialize {specialize}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{code:?}, specialize {specialize}: one panicked, the other did not"),
        }
        assert_eq!(m, plain, "{code:?}, specialize {specialize}");
    }
    want.ok()
}

#[test]
fn operands_read_through_slices_are_known_while_compiling() {
    jit::config().set_threshold(0);
    // 500 + (-70000): push; count 50,000 down; push; add; return.
    let count = [0u8, 0x50, 0xc3, 1, 2, 3, 0, 3, 0xff, 0xfe, 0xee, 0x90, 0, 0xf4, 0x01, 4, 9];
    assert_eq!(check(&count), Some(Some(-70000 + 500)));
    // An operand past the program's end panics in each.
    assert_eq!(check(&[0, 7]), None);
    assert_eq!(check(&[3, 0, 0, 1]), None);
    assert_eq!(check(&[5, 7, 0, 9]), Some(Some(7)));
    let left = jit::left_to_rust();
    assert!(left.len() == 1 && left[0].contains("(outlined)") && left[0].contains("u16::from_le_bytes"), "{left:?}");
    let s = jit::stats();
    assert!(s.compilations > 0 && s.entries > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
    // The operands are constants of residual code: no byte of the program
    // is read, and the only call that is not a cold path's is op 5's
    // outlined read (beside the stack put back in order at the exit).
    let listing = jit::portal_listings().join("\n");
    assert!(!listing.contains("load.u8"), "{listing}");
    let calls: Vec<&str> = listing.lines().filter(|l| l.contains(" call ") && !l.contains("give_back_order")).collect();
    assert!(calls.len() == 1 && calls[0].contains("__jitgen_outlined"), "{listing}");
}

#[test]
fn random_programs_reading_slices_agree_with_plain() {
    let mut rng = crate::common::Rng(0x511ce);
    for threshold in [0, 3] {
        jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(300) {
            let len = 3 + rng.below(30) as usize;
            let mut c = vec![0u8, 1 + rng.below(40) as u8, 0];
            while c.len() < len {
                let op = rng.below(7) as u8;
                c.push(op);
                match op {
                    0 | 5 => c.extend((rng.below(300) as u16).to_le_bytes()),
                    2 => c.extend((rng.below(len as u64 + 3) as u16).to_le_bytes()),
                    3 => c.extend((rng.below(1 << 20) as i32 - (1 << 19)).to_be_bytes()),
                    _ => {}
                }
            }
            // Sometimes an operand runs past the end.
            if rng.below(4) != 0 {
                c.push(9);
            }
            check(&c);
        }
    }
}
