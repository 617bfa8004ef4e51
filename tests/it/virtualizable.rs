//! `#[virtualizable]` frames: TLR with its registers in a frame the caller
//! owns. Every run is compared with `jit::plain`, results and the frame
//! left behind.

use crate::common;
use tlr_interp as interp;

use common::cyclic_blocks;

use interp::tlr::{self, jit, Frame, TlrError};
use jitgen::prelude::*;

const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

fn both(code: &[u8], a: i64) -> ((Result<i64, TlrError>, Frame), (Result<i64, TlrError>, Frame)) {
    let mut f1 = Frame { a, ..Frame::default() };
    let r1 = tlr::run(&mut f1, code);
    let mut f2 = Frame { a, ..Frame::default() };
    let r2 = jit::plain::run(&mut f2, code);
    ((r1, f1), (r2, f2))
}

/// In a child process: it reads TLR's compiled code and counters, which
/// other modules' tests add to in this process.
#[test]
fn the_square_loop_keeps_the_frame_in_registers_and_writes_it_back() {
    assert!(crate::common::run_child("child_the_square_loop_keeps_the_frame_in_registers_and_writes_it_back", None));
}

#[test]
#[ignore = "run by the_square_loop_keeps_the_frame_in_registers_and_writes_it_back in a child process"]
fn child_the_square_loop_keeps_the_frame_in_registers_and_writes_it_back() {
    jit::config().set_threshold(50);
    for a in [3, 1000, 25, 1] {
        let (got, want) = both(SQUARE, a);
        assert_eq!(got, want, "a = {a}");
    }
    let listings = jit::portal_listings();
    let loops: Vec<String> = listings.iter().flat_map(|l| cyclic_blocks(l)).collect();
    assert!(!loops.is_empty(), "no loop compiled: {listings:?}");
    for body in &loops {
        assert!(!body.contains("load") && !body.contains("store") && !body.contains("call"), "{body}");
    }
    // Written back on return: the registers, the accumulator and the step
    // count are in memory when `run` returns.
    let all = listings.join("\n");
    assert!(all.contains("vec_store") && all.contains("store.i64") && all.contains("store.u64"), "{all}");
    assert_eq!(jit::stats().declined, 0, "{:?}", jit::last_decline());
}

#[test]
fn tlr_programs_leave_the_same_frame_behind() {
    let _tlr = crate::common::lock(&crate::common::TLR);
    jit::config().set_threshold(1);
    let programs: Vec<Vec<u8>> = vec![
        SQUARE.to_vec(),
        vec![],
        vec![4, 5],
        vec![7, 1, 1, 3, 6],
        vec![2, 0, 6],
        vec![42, 0],
        vec![9, 8, 6],
        vec![3, 4, 4, 7, 6, 4, 9, 6],
        vec![3, 200],
        vec![7, 2, 1, 1, 9, 3, 4, 2, 1, 6],
        vec![7, 2, 1, 1, 9, 7, 1, 3, 4, 2, 1, 6], // reallocates inside the loop
        vec![7, 100, 1, 99, 9, 3, 4, 2, 99, 6],   // more registers than stay virtual
    ];
    for p in &programs {
        for a in [1i64, 2, 7, 30] {
            let (got, want) = both(p, a);
            assert_eq!(got, want, "program {p:?} a = {a}");
        }
    }
}

#[jit_interpreter]
mod obs {
    use super::*;

    /// A frame whose history list grows past what stays virtual.
    #[virtualizable]
    #[derive(Debug, Default, PartialEq)]
    pub struct St {
        pub acc: i64,
        pub hist: Vec<i64>,
        pub n: u32,
    }

    /// Code residual code cannot see into: it reads the frame in memory.
    #[jit_opaque]
    pub fn peek(st: &St) -> i64 {
        st.acc * 1000 + st.hist.len() as i64 * 10 + st.n as i64
    }

    pub fn run(st: &mut St, code: &[u8]) -> i64 {
        let mut pc = 0;
        let mut out = 0i64;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return out;
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                st.acc += 1;
            } else if op == 1 {
                st.hist.push(st.acc);
            } else if op == 2 {
                out += peek(st);
            } else if op == 3 {
                if st.acc < 150 {
                    pc = 0;
                }
            } else if op == 4 {
                let x = st.hist.pop().unwrap_or(0);
                st.acc += x % 3;
            } else if op == 5 {
                let k = hint!(st.acc % 5, promote);
                st.n += k as u32;
            }
        }
    }
}

#[test]
fn frames_escaping_into_opaque_calls_and_hand_overs_agree() {
    let programs: [&[u8]; 5] = [&[0, 1, 3], &[0, 1, 2, 3], &[0, 1, 1, 4, 3], &[0, 5, 1, 3], &[0, 5, 2, 1, 4, 3]];
    // Fewest cases first: code compiled under a budget is kept for the rest.
    for max_cases in [0, 1, 16] {
        obs::jit::config().set_threshold(2);
        obs::jit::config().set_max_cases(max_cases);
        for p in programs {
            for acc in [0i64, 5, 149, 200] {
                let mut s1 = obs::St { acc, ..Default::default() };
                let mut s2 = obs::St { acc, ..Default::default() };
                let r1 = obs::run(&mut s1, p);
                let r2 = obs::jit::plain::run(&mut s2, p);
                assert_eq!((r1, &s1), (r2, &s2), "program {p:?} acc = {acc} max_cases = {max_cases}");
            }
        }
    }
    // Compiled code ran, and some runs were handed over to the interpreter
    // in the middle (at a full switch).
    let st = obs::jit::stats();
    assert!(st.entries > 0 && st.resumptions > 0 && st.flexswitch_cases > 0, "{st:?}");
}
