//! The subroutine machine: return addresses popped from a run-time stack
//! are promoted, so dispatch continues in compiled code per return site.
//! Every result and error is compared with `jit::plain`.

use subroutines_interp as interp;

use interp::sub::{self, jit, SubError, ADD, CALL, DECR, DOUBLE, HALT, JNZ, RET};

const COUNTDOWN: &[u8] = &[CALL, 6, JNZ, 0, HALT, HALT, CALL, 9, RET, DECR, RET];

/// Three call sites of one subroutine (a += 1) per turn, then a -= 4. The
/// subroutine's entry is reached with three different return addresses on
/// the stack: the first two are kept as constants (exact versions), the
/// third makes them run-time values, and RET promotes the one it pops.
const THREE_SITES: &[u8] = &[CALL, 14, CALL, 14, CALL, 14, DECR, DECR, DECR, DECR, JNZ, 0, HALT, HALT, ADD, 1, RET];

/// Inputs are at least 1: the loops count down to 0.
const PROGRAMS: &[(&str, &[u8])] = &[
    ("countdown", COUNTDOWN),
    ("three sites", THREE_SITES),
    ("doubling", &[DOUBLE, DOUBLE, HALT]),
    ("ret without call", &[RET]),
    ("return into the void", &[CALL, 4, HALT, HALT, 3, 100, RET]),
    ("recursion too deep", &[CALL, 0]),
    ("unknown opcode", &[9]),
    ("operand missing", &[CALL]),
];

#[test]
fn every_program_agrees_with_the_interpreter() {
    jit::config().set_threshold(0);
    for (name, code) in PROGRAMS {
        for a in [1, 5, 40] {
            let want = jit::plain::run(code, a);
            assert_eq!(sub::run(code, a), want, "{name} with a = {a} (portal)");
            assert_eq!(jit::specialize::run(code).call(a), want, "{name} with a = {a} (specialized)");
        }
    }
    assert_eq!(jit::plain::run(&[RET], 0), Err(SubError::StackUnderflow));
    assert_eq!(jit::plain::run(&[CALL, 0], 0), Err(SubError::StackOverflow));
}

#[test]
fn each_return_site_gets_a_case_that_knows_where_it_is() {
    let r = jit::specialize::run(THREE_SITES);
    assert_eq!(r.call(30), jit::plain::run(THREE_SITES, 30));
    // The subroutine's RET switches on the popped address once it is a
    // run-time value: the cases are return sites, each compiled once.
    let all = r.listing_with_cases();
    let mut sites: Vec<&str> = all
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("case "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    sites.sort();
    sites.dedup();
    assert!(!sites.is_empty() && sites.iter().all(|s| ["2", "4", "6"].contains(s)), "{all}");
    let s = jit::stats();
    assert_eq!(s.flexswitch_cases, s.flexswitch_misses, "{all}");
    // In the pieces, dispatch is gone: no reads of the bytecode.
    let pieces = &all[all.find("run_piece1:").expect("piece 1")..];
    assert!(!pieces.contains("load.u8"), "{pieces}");
    assert!(!pieces.contains(&format!("{:#x}", THREE_SITES.as_ptr() as usize)), "{pieces}");
}
