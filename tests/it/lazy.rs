//! Lazily compiled paths: the other side of a red split compiled only when
//! first taken, and compilations cut by their budget, which go on in pieces
//! compiled when reached, or in the interpreter. Every result is compared
//! with `jit::plain`; each module is used by one test (stats are per module).

use tlr_interp as interp;

use jitgen::prelude::*;

#[jit_interpreter]
mod split {
    pub fn pick(a: i64, b: i64) -> i64 {
        if a > 0 {
            a * 2
        } else {
            b * 3 + a
        }
    }
}

#[test]
fn a_side_never_taken_is_never_compiled() {
    split::jit::config().set_lazy_after_ops(0);
    let r = split::jit::specialize::pick();
    // The false side is a switch whose only case is compiled when first taken.
    assert!(r.listing().contains("flexswitch"), "{}", r.listing());
    assert!(!r.listing().contains("mul.i64 v1") && !r.listing().contains("mul_checked.i64 v1"), "{}", r.listing());
    for a in 1..100 {
        assert_eq!(r.call(a, 5), split::jit::plain::pick(a, 5));
    }
    let s = split::jit::stats();
    assert_eq!((s.flexswitches, s.flexswitch_misses, s.flexswitch_cases), (1, 0, 0), "{s:?}");
    // Taken once: compiled once, then entered directly.
    for a in -50..=0 {
        assert_eq!(r.call(a, 5), split::jit::plain::pick(a, 5));
    }
    let s = split::jit::stats();
    assert_eq!((s.flexswitch_misses, s.flexswitch_cases, s.resumptions), (1, 1, 0), "{s:?}");
    assert!(r.listing_with_cases().contains("case 0:"), "{}", r.listing_with_cases());
}

/// TLR's square: a loop of a few residual operations per turn (its
/// registers are a virtual list).
const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

/// In a child process: it sets TLR's budget, which other modules'
/// tests would compile under in this process, and reads its counters.
#[test]
fn compilations_cut_by_their_budget_finish_correctly() {
    assert!(crate::common::run_child("child_compilations_cut_by_their_budget_finish_correctly", None));
}

#[test]
#[ignore = "run by compilations_cut_by_their_budget_finish_correctly in a child process"]
fn child_compilations_cut_by_their_budget_finish_correctly() {
    use interp::tlr::{self, jit};
    jit::config().set_threshold(0);
    jit::config().set_max_ops(4);
    // Nothing compiled past the budget: the rest runs in the interpreter.
    jit::config().set_max_cases(0);
    assert_eq!(tlr::interpret(SQUARE, 40), jit::plain::interpret(SQUARE, 40));
    let s = jit::stats();
    // Each hand-over continues in the interpreter up to the next merge
    // point, where the portal goes on (entering code compiled for the
    // position reached, cut by the budget again).
    assert_eq!((s.declined, s.flexswitch_cases), (0, 0), "{s:?}");
    assert!(s.compilations >= 1 && s.resumptions >= 1, "{s:?}");
    assert!(jit::last_decline().is_none());
    // The same with cases allowed (another program, so another compilation):
    // the rest compiles in pieces when reached, and the loop, met again in
    // the same state, reuses its piece instead of compiling anew.
    jit::config().set_max_cases(16);
    let mut square2 = SQUARE.to_vec();
    square2.extend_from_slice(&[1, 1]); // unreachable padding: another key
    let before = jit::stats();
    assert_eq!(tlr::interpret(&square2, 40), jit::plain::interpret(&square2, 40));
    let after_40 = jit::stats();
    let pieces = after_40.flexswitch_cases - before.flexswitch_cases;
    assert!(pieces >= 1, "{after_40:?}");
    // The pieces are cut at merge points (one per instruction), so there
    // are at most as many as the states of the loop; they are all there
    // after 40 turns: 1000 turns compile nothing more.
    assert!(pieces as usize <= square2.len(), "{after_40:?}");
    for a in [1000, 7] {
        assert_eq!(tlr::interpret(&square2, a), jit::plain::interpret(&square2, a));
    }
    let s = jit::stats();
    assert_eq!(s.flexswitch_cases, after_40.flexswitch_cases, "{s:?}");
    assert_eq!((s.declined, s.resumptions), (0, before.resumptions), "{s:?}");
}
