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

/// A random program of `+`, `-`, `l` and `j`, after as many `+` as it has
/// `-` and one more: every pass up to a `j` counts up, so its `j`s end.
fn random_program(rng: &mut crate::common::Rng) -> Vec<u8> {
    let body: Vec<u8> = (0..rng.below(12)).map(|_| b"+-lj"[rng.below(4) as usize]).collect();
    let down = body.iter().filter(|&&c| c == b'-').count();
    std::iter::repeat_n(b'+', down + 1).chain(body).collect()
}

#[test]
fn a_whole_struct_stored_through_a_reference_agrees_with_plain() {
    assert!(counter::jit::left_to_rust().is_empty(), "{:?}", counter::jit::left_to_rust());
    counter::jit::config().set_threshold(0);
    let start = || counter::Machine { acc: 7, log: vec![-1000, -2000, -3000], steps: 9 };
    let mut rng = crate::common::Rng(0x5_7a_c7);
    let random: Vec<Vec<u8>> = (0..crate::common::how_many(200)).map(|_| random_program(&mut rng)).collect();
    let fixed = [&b"++l+j"[..], b"+-l", b"", b"+++++l-j"];
    for code in fixed.into_iter().chain(random.iter().map(|c| &c[..])) {
        let mut want = start();
        let r = counter::jit::plain::run(code, &mut want);
        // The old log is dropped, the old counts added to.
        assert!(want.log != [-1000, -2000, -3000] && want.steps >= 9 + code.len() as u32, "{code:?} {want:?}");
        let mut got = start();
        assert_eq!((counter::run(code, &mut got), got), (r, want.clone()), "{code:?}");
        let mut got = start();
        assert_eq!((counter::jit::specialize::run(code).call(&mut got), got), (r, want), "{code:?}");
    }
    let s = counter::jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", counter::jit::last_decline());
}
