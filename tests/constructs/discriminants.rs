//! Enums with explicit discriminants (`#[repr(u8)] enum Op { Push = 1, .. }`,
//! as bytecode VMs number their instructions) and `as` casts of enum values,
//! known while compiling and known only when running: the discriminants in
//! order (the tag plus the first) and in any order (looked up). Results are
//! compared with `jit::plain`, through the portal and through
//! `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod numbered {
    use jitgen::prelude::*;

    pub const LAST: u8 = 7;

    /// Numbered out of order, as an encoding fixes them.
    #[derive(Clone, Copy, PartialEq, Debug)]
    #[repr(u8)]
    pub enum Op {
        Push = 1,
        Double = 2,
        Loop = 5,
        Halt = LAST,
    }

    /// Numbered in order from 10, with a negative one before.
    #[derive(Clone, Copy, PartialEq, Debug)]
    #[repr(i16)]
    pub enum Kind {
        Low = -3,
        Ten = 10,
        Eleven,
        Twelve,
    }

    /// A byte as an operation, as a decoder writes it.
    pub fn decode(b: u8) -> Op {
        match b {
            1 => Op::Push,
            2 => Op::Double,
            5 => Op::Loop,
            _ => Op::Halt,
        }
    }

    pub fn run(code: &[u8], mut acc: i64, n: i64) -> i64 {
        let mut pc = 0;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let op = decode(hint!(code[pc], concrete));
            pc += 1;
            acc = acc.wrapping_mul(3).wrapping_add(op as i64);
            // Enum values known only when running, cast.
            let chosen = if acc % 3 == 0 {
                Op::Double
            } else if acc % 3 == 1 {
                Op::Loop
            } else {
                Op::Halt
            };
            let kind = if acc % 4 == 0 {
                Kind::Low
            } else if acc % 4 == 1 {
                Kind::Eleven
            } else {
                Kind::Twelve
            };
            acc = (acc + chosen as u8 as i64 * 100 + kind as i16 as i64 * 7) & 0xffff_ffff;
            match op {
                Op::Push => acc += Kind::Ten as i64,
                Op::Double => acc *= 2,
                Op::Loop => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Halt => return acc,
            }
        }
    }
}

fn check(code: &[u8], n: i64) {
    let want = numbered::jit::plain::run(code, 1, n);
    assert_eq!(numbered::run(code, 1, n), want, "{code:?} {n}");
    assert_eq!(numbered::jit::specialize::run(code).call(1, n), want, "{code:?} {n}");
}

#[test]
fn casts_of_enums_with_explicit_discriminants_agree_with_plain() {
    numbered::jit::config().set_threshold(0);
    assert_eq!(numbered::Op::Halt as u8, 7);
    for n in [1i64, 3, 20] {
        check(&[1, 2, 1, 5, 7], n);
    }
    assert!(numbered::jit::left_to_rust().is_empty(), "{:?}", numbered::jit::left_to_rust());
    assert!(numbered::jit::stats().compilations > 0, "{:?}", numbered::jit::last_decline());
    // A known operation's discriminant is a constant; the run-time ones in
    // order are one addition, the others one lookup of a tag not known.
    let listing = numbered::jit::specialize::run(&[1, 7]).listing().to_string();
    let constants: Vec<&str> =
        listing.lines().filter_map(|l| l.trim().split_once(" = const.")).map(|(v, _)| v).collect();
    let lookups: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_once("call an enum's discriminant(").map(|(_, a)| a.trim_end_matches(')')))
        .collect();
    assert!(!lookups.is_empty() && lookups.iter().all(|a| !constants.contains(a)), "{listing}");
}

#[test]
fn random_programs_casting_enums_agree_with_plain() {
    numbered::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xd15c);
    for _ in 0..crate::common::how_many(200) {
        let len = rng.below(8) as usize;
        let mut code: Vec<u8> = (0..len).map(|_| [1, 2, 5, 7][rng.below(4) as usize]).collect();
        code.extend([5, 7]);
        check(&code, 1 + rng.below(20) as i64);
    }
}
