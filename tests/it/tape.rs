//! The Brainfuck interpreter on a `&mut [u8]` tape (`interpreters/tape`):
//! random programs agree with plain, and what residual code does with the
//! tape's cells.

use tape_interp::bf as tape_bf;

use crate::common;

fn jumps(code: &[u8]) -> Vec<usize> {
    tape_interp::jumps(code).expect("balanced brackets")
}

const CELLS: usize = 8;

/// A random program that stays on the tape and ends: the pointer moves
/// within it, and a loop decrements the cell it tests once a turn, its body
/// working only on the cells to its right and coming back; or it is `[-]`
/// or `[+]` (a loop over one cell, which compiled code keeps in a register).
fn random_program(rng: &mut common::Rng, ptr: usize, depth: u32, out: &mut Vec<u8>) {
    for _ in 0..rng.below(8) + 1 {
        match rng.below(8) {
            0 | 1 => out.extend(std::iter::repeat_n(b'+', rng.below(5) as usize + 1)),
            2 => out.push(b'-'),
            3 => out.push(b'.'),
            4 if ptr + 1 < CELLS => {
                // Over to a cell on the right and back.
                let k = rng.below((CELLS - 1 - ptr) as u64) as usize + 1;
                out.extend(std::iter::repeat_n(b'>', k));
                random_program(rng, ptr + k, depth + 1, out);
                out.extend(std::iter::repeat_n(b'<', k));
            }
            5 if depth < 3 && ptr + 1 < CELLS => {
                out.push(b'[');
                let k = rng.below((CELLS - 1 - ptr) as u64) as usize + 1;
                out.extend(std::iter::repeat_n(b'>', k));
                random_program(rng, ptr + k, depth + 1, out);
                out.extend(std::iter::repeat_n(b'<', k));
                out.extend(b"-]");
            }
            6 => out.extend_from_slice(if rng.below(2) == 0 { b"[-]" } else { b"[+]" }),
            _ => out.push(b'.'),
        }
    }
}

/// The tape and output `code` leaves, interpreted.
fn plain(code: &[u8], cells: [u8; CELLS]) -> ([u8; CELLS], Vec<u8>) {
    let (mut tape, mut out) = (cells, vec![]);
    tape_bf::jit::plain::run(code, &jumps(code), &mut tape, &mut out);
    (tape, out)
}

/// Random programs leave the tape and output the interpreter leaves, through
/// the portal (compiled at once) and through `jit::specialize`.
#[test]
fn random_tape_programs_agree_with_plain() {
    tape_bf::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x7a9e);
    for _ in 0..common::how_many(100) {
        let mut code = vec![];
        random_program(&mut rng, 0, 0, &mut code);
        let cells = [rng.below(4) as u8, 3, 0, 1, 0, 2, 0, 250];
        let want = plain(&code, cells);
        let shown = String::from_utf8_lossy(&code).into_owned();
        let (mut tape, mut out) = (cells, vec![]);
        tape_bf::run(&code, &jumps(&code), &mut tape, &mut out);
        assert_eq!((tape, out), want, "portal: {shown}");
        let js = jumps(&code);
        let f = tape_bf::jit::specialize::run(&code, &js);
        let (mut tape, mut out) = (cells, vec![]);
        f.call(&mut tape, &mut out);
        assert_eq!((tape, out), want, "specialize: {shown}\n{}", f.listing());
    }
}

/// `+++>++<-.` specializes to one check and one load per cell (a check, a
/// load and a store per instruction before, every address computed anew).
#[test]
fn a_straight_line_checks_and_loads_each_cell_once() {
    let code = b"+++>++<-.";
    let js = jumps(code);
    let f = tape_bf::jit::specialize::run(code, &js);
    let (mut tape, mut out) = ([0u8; CELLS], vec![]);
    f.call(&mut tape, &mut out);
    assert_eq!((tape, out), plain(code, [0; CELLS]));
    // (The `.` pushes onto `out`, a real `Vec`: its loads are `u64`s and a
    // pointer.)
    let listing = f.listing();
    let count = |what: &str| listing.lines().filter(|l| l.contains(what)).count();
    assert_eq!((count("load.u8"), count("bounds_check")), (2, 2), "{listing}");
}

/// The harness's nested loops, smaller: what they leave agrees with plain,
/// through the portal.
#[test]
fn nested_loops_agree_with_plain() {
    for (depth, turns) in [(2, 7), (3, 5), (4, 3)] {
        let code = tape_interp::programs::nested_loops(depth, turns);
        let want = plain(&code, [0; CELLS]);
        let (mut tape, mut out) = ([0u8; CELLS], vec![]);
        tape_bf::run(&code, &jumps(&code), &mut tape, &mut out);
        assert_eq!((tape, out), want, "{}", String::from_utf8_lossy(&code));
    }
}

/// The innermost `[-]` of the nested loops, compiled, carries its cell in a
/// register and runs four turns per jump: its unrolling guard compares the
/// cell's distance to zero as a `u8` (`keep_loop_places`, then a counted
/// loop on a `!=` test).
#[test]
fn the_innermost_loop_carries_its_cell_and_unrolls() {
    let code = tape_interp::programs::nested_loops(2, 30);
    let js = jumps(&code);
    let f = tape_bf::jit::specialize::run(&code, &js);
    let (mut tape, mut out) = ([0u8; CELLS], vec![]);
    f.call(&mut tape, &mut out);
    assert_eq!((tape, out), plain(&code, [0; CELLS]));
    assert!(f.listing().contains(" = gt.u8 "), "{}", f.listing());
}
