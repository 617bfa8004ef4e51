//! A portal that writes a whole struct through a `&mut` parameter,
//! `*m = Machine { .. }`, where the struct owns a `Vec`: each field is
//! stored (the values computed first, so a field's value may read the old
//! struct). Before, the assignment left the whole module to Rust. The
//! result and the whole machine afterwards are compared with `jit::plain`
//! through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod counter {
    use jitgen::prelude::*;

    /// What a run leaves.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Machine {
        pub acc: i64,
        pub log: Vec<i64>,
        pub steps: u32,
    }

    /// Runs `code` (`+`, `-`, `l` logs the count, `j` starts again while it
    /// is below 100), then stores the run's state added to what `m` held.
    pub fn run(code: &[u8], m: &mut Machine) -> i64 {
        let mut acc = 0i64;
        let mut log = Vec::new();
        let mut pc = 0usize;
        let mut steps = 0u32;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            steps += 1;
            match op {
                b'+' => acc += 1,
                b'-' => acc -= 1,
                b'l' => log.push(acc),
                b'j' => {
                    if acc < 100 {
                        pc = 0;
                    }
                }
                _ => {}
            }
        }
        *m = Machine { steps: steps + m.steps, acc: acc + m.acc, log };
        acc
    }
}

#[test]
fn a_whole_struct_stored_through_a_reference_agrees_with_plain() {
    assert!(counter::jit::left_to_rust().is_empty(), "{:?}", counter::jit::left_to_rust());
    counter::jit::config().set_threshold(0);
    let start = || counter::Machine { acc: 7, log: vec![1, 2, 3], steps: 9 };
    for code in [&b"++l+j"[..], b"+-l", b"", b"+++++l-j"] {
        let mut want = start();
        let r = counter::jit::plain::run(code, &mut want);
        // The old log is dropped, the old counts added to.
        assert!(want.log != [1, 2, 3] && want.steps >= 9 + code.len() as u32, "{code:?} {want:?}");
        let mut got = start();
        assert_eq!((counter::run(code, &mut got), got), (r, want.clone()), "{code:?}");
        let mut got = start();
        assert_eq!((counter::jit::specialize::run(code).call(&mut got), got), (r, want), "{code:?}");
    }
    let s = counter::jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", counter::jit::last_decline());
}
