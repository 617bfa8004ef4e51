//! TLR through the generated JIT: specialized ahead of time, and through its
//! portal (compiled when hot); every result compared with `jit::plain`.

use crate::common;
use tlr_interp as interp;

use common::{how_many, Rng};

use interp::tlr::{self, jit, TlrError};

const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

#[test]
fn square_specializes_to_a_loop_without_dispatch() {
    let _tlr = crate::common::lock(&crate::common::TLR);
    let r = jit::specialize::interpret(SQUARE);
    let listing = r.listing();
    // No reads of the bytecode (its address never appears; no u8 is loaded),
    // no opcode comparisons (u8 compares), and a loop. The loads left are
    // those of the register Vec.
    assert!(!listing.contains(&format!("{:#x}", SQUARE.as_ptr() as usize)), "{listing}");
    assert!(!listing.contains("load.u8"), "{listing}");
    let opcode_compare =
        listing.lines().any(|l| ["eq.u8", "ne.u8", "lt.u8", "le.u8", "gt.u8", "ge.u8"].iter().any(|c| l.contains(c)));
    assert!(!opcode_compare, "{listing}");
    let labels: Vec<&str> =
        listing.lines().filter(|l| l.starts_with('L')).map(|l| l.split('(').next().unwrap()).collect();
    let back_jump = listing.lines().enumerate().any(|(i, l)| {
        (l.trim_start().starts_with("jump ") || l.trim_start().starts_with("branch "))
            && labels.iter().any(|lab| {
                l.contains(&format!("{lab}("))
                    && listing.lines().position(|x| x.starts_with(&format!("{lab}("))).is_some_and(|p| p < i)
            })
    });
    assert!(back_jump, "no residual loop:\n{listing}");
    for a in [1i64, 2, 3, 10, 77, 1000] {
        assert_eq!(r.call(a), jit::plain::interpret(SQUARE, a), "a={a}");
    }
}

/// Programs of tlr.md's error cases and a few more.
fn programs() -> Vec<Vec<u8>> {
    vec![
        SQUARE.to_vec(),
        vec![],                             // pc past the end at once
        vec![4, 5],                         // SET_A then no RETURN_A: pc out of range
        vec![7, 1, 1, 3, 6],                // MOV_A_R 3 with one register: bad register
        vec![2, 0, 6],                      // MOV_R_A before ALLOCATE: bad register
        vec![42],                           // unknown opcode, but its operand is missing first
        vec![42, 0],                        // unknown opcode
        vec![9, 8, 6],                      // DECR_A, NEG_A
        vec![4],                            // operand missing
        vec![3, 4, 4, 7, 6, 4, 9, 6],       // JUMP_IF_A forward
        vec![3, 200],                       // jump out of the code when a != 0
        vec![7, 2, 1, 1, 9, 3, 4, 2, 1, 6], // count down to 0 (a loop)
    ]
}

#[test]
fn specialized_programs_agree_with_the_interpreter() {
    let _tlr = crate::common::lock(&crate::common::TLR);
    for p in programs() {
        let r = jit::specialize::interpret(&p);
        for a in [0i64, 1, -1, 5, 13, i64::MAX, i64::MIN] {
            if p == SQUARE && !(1..=1000).contains(&a) {
                continue; // square loops "forever" on a < 1
            }
            if p == [7, 2, 1, 1, 9, 3, 4, 2, 1, 6] && !(1..=1000).contains(&a) {
                continue;
            }
            assert_eq!(r.call(a), jit::plain::interpret(&p, a), "program {p:?} a={a}\n{}", r.listing());
        }
    }
}

#[test]
fn portal_compiles_once_hot_and_agrees() {
    let _tlr = crate::common::lock(&crate::common::TLR);
    jit::config().set_threshold(5);
    let before = jit::stats();
    for p in programs() {
        for a in [0i64, 1, 3, 20, 200] {
            if (p == SQUARE || p == [7, 2, 1, 1, 9, 3, 4, 2, 1, 6]) && a < 1 {
                continue;
            }
            let want = jit::plain::interpret(&p, a);
            let got = tlr::interpret(&p, a);
            assert_eq!(got, want, "program {p:?} a={a}");
        }
    }
    let after = jit::stats();
    assert!(after.compilations > before.compilations, "{after:?}");
    assert!(after.entries > before.entries, "{after:?}");
    assert_eq!(after.declined, before.declined, "declined: {:?}", jit::last_decline());
    assert_eq!(tlr::interpret(SQUARE, 12345), Ok(12345 * 12345));
    // The interpreter reads the operand before it rejects an opcode.
    assert_eq!(tlr::interpret(&[42], 1), Err(TlrError::PcOutOfRange));
    assert_eq!(tlr::interpret(&[42, 0], 1), Err(TlrError::UnknownOpcode(42)));
}

/// Random TLR programs: a counted loop (register 0 counts down from `a`,
/// the body does random register and accumulator work that leaves register 0
/// alone) and random bytes whose jumps only go forward (so runs end).
fn random_program(r: &mut Rng) -> Vec<u8> {
    if r.below(2) == 0 {
        let nregs = 1 + r.below(4) as u8;
        let mut p = vec![tlr::ALLOCATE, nregs, tlr::MOV_A_R, 0];
        let head = p.len() as u8;
        for _ in 0..(1 + r.below(6)) {
            match r.below(6) {
                0 => p.extend([tlr::MOV_R_A, r.below(nregs as u64 + 1) as u8]), // may be a bad register
                1 => p.extend([tlr::ADD_R_TO_A, r.below(nregs as u64) as u8]),
                2 => p.extend([tlr::SET_A, r.below(50) as u8]),
                3 => p.push(tlr::NEG_A),
                4 => p.push(tlr::DECR_A),
                _ => p.extend([tlr::MOV_A_R, 1 + r.below(nregs as u64) as u8]), // never register 0
            }
        }
        // The counter: register 0 minus one, looped on while non-zero.
        p.extend([tlr::MOV_R_A, 0, tlr::DECR_A, tlr::MOV_A_R, 0, tlr::JUMP_IF_A, head]);
        p.extend([tlr::MOV_R_A, nregs - 1, tlr::RETURN_A]);
        p
    } else {
        let n = 1 + r.below(16) as usize;
        let mut p: Vec<u8> = (0..n).map(|_| r.below(11) as u8).collect();
        for i in 0..p.len() {
            if p[i] == tlr::JUMP_IF_A && i + 1 < p.len() {
                p[i + 1] = (i + 2 + r.below(4) as usize) as u8; // forward (maybe past the end)
            }
        }
        p
    }
}

#[test]
fn random_programs_agree() {
    let _tlr = crate::common::lock(&crate::common::TLR);
    jit::config().set_threshold(2);
    let n = how_many(1000);
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    let before = jit::stats();
    let mut last_decline = jit::last_decline();
    for i in 0..n {
        let p = random_program(&mut r);
        for a in [1i64, 2, 9, 40] {
            // (The counted loops count register 0 down from a, so a > 0.)
            assert_eq!(tlr::interpret(&p, a), jit::plain::interpret(&p, a), "random program {i}: {p:?} a={a}");
            // Declines are fine; a compiler that fails is not.
            let why = jit::last_decline();
            if why != last_decline {
                let broken = |d: &str| d.contains("panicked") || d.contains("jitgen bug");
                assert!(!why.as_deref().is_some_and(broken), "random program {i}: {p:?} a={a}: {why:?}");
                last_decline = why;
            }
        }
    }
    let after = jit::stats();
    assert!(after.entries > before.entries + n as u64 / 10, "{before:?} {after:?}");
}
