//! Panics in an interpreter, with the message Rust's own macros give:
//! `panic!`, `unreachable!`, `todo!`, `unimplemented!` with no message, a
//! literal or a formatted one (captured names too), and `assert!`,
//! `assert_eq!`, `assert_ne!` with and without messages of their own.
//! Compiled code raises the same panic, with the same message, as
//! `jit::plain`, through the portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod panics {
    use jitgen::prelude::*;

    /// Ops, each with one operand `k`: 0 add k; 1 panic!(); 2 a literal
    /// panic; 3 a formatted one; 4 unreachable!; 5 assert!; 6 assert! with
    /// a message; 7 assert_eq!; 8 assert_ne! with a message; 9 todo!();
    /// 10 unimplemented! formatted; 11 return acc; 12 double acc.
    pub fn run(code: &[u8], mut acc: i64) -> i64 {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            let k = hint!(code[pc + 1], concrete);
            pc += 2;
            match op {
                0 => acc = acc.wrapping_add(k as i64),
                1 => panic!(),
                2 => panic!("a plain message (no braces)"),
                3 => panic!("bad op {} at {pc}: acc {acc:>5}", k),
                4 => unreachable!("acc was {}", acc),
                5 => assert!(acc < 100),
                6 => assert!(acc < 50, "acc {} reached {}", acc, k),
                7 => assert_eq!(acc % 3, k as i64),
                8 => assert_ne!(acc, k as i64, "hit {}", k),
                9 => todo!(),
                10 => unimplemented!("op {} with {}", op, acc),
                11 => return acc,
                _ => acc = acc.wrapping_mul(2),
            }
        }
    }
}

type Outcome = Result<i64, String>;

fn outcome(f: impl FnOnce() -> i64) -> Outcome {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// The same result, or a panic with the same message, interpreted, through
/// the portal and through `jit::specialize`.
fn check(code: &[u8], acc: i64) -> Outcome {
    let want = outcome(|| panics::jit::plain::run(code, acc));
    assert_eq!(outcome(|| panics::run(code, acc)), want, "{code:?} {acc}");
    let r = panics::jit::specialize::run(code);
    assert_eq!(outcome(|| r.call(acc)), want, "{code:?} {acc}");
    want
}

#[test]
fn panics_of_compiled_code_carry_rusts_own_messages() {
    panics::jit::config().set_threshold(0);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let cases: &[(&[u8], i64, &str)] = &[
        (&[1, 0], 0, "explicit panic"),
        (&[2, 0], 0, "a plain message (no braces)"),
        (&[0, 4, 3, 7], 3, "bad op 7 at 4: acc     7"),
        (&[4, 0], -2, "internal error: entered unreachable code: acc was -2"),
        (&[5, 0], 100, "assertion failed: acc < 100"),
        (&[6, 9], 60, "acc 60 reached 9"),
        (&[7, 2], 4, "assertion `left == right` failed\n  left: 1\n right: 2"),
        (&[8, 5], 5, "assertion `left != right` failed: hit 5\n  left: 5\n right: 5"),
        (&[9, 0], 0, "not yet implemented"),
        (&[10, 0], 8, "not implemented: op 10 with 8"),
    ];
    let mut seen = vec![];
    for &(code, acc, msg) in cases {
        seen.push((check(code, acc), msg));
    }
    std::panic::set_hook(quiet);
    for (got, msg) in seen {
        assert_eq!(got, Err(msg.to_string()));
    }
    // Passing checks fall through.
    assert_eq!(check(&[5, 0, 6, 0, 7, 1, 8, 3, 11, 0], 4), Ok(4));
    assert!(panics::jit::left_to_rust().is_empty(), "{:?}", panics::jit::left_to_rust());
    assert!(panics::jit::stats().compilations > 0, "{:?}", panics::jit::last_decline());
}

#[test]
fn random_programs_that_panic_agree_with_plain() {
    panics::jit::config().set_threshold(0);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = crate::common::Rng(0x9a_41c);
    let mut panicked = 0;
    for _ in 0..crate::common::how_many(300) {
        let mut code = vec![];
        for _ in 0..rng.below(8) {
            // Mostly arithmetic; now and then a check or a panic.
            let op = if rng.below(4) == 0 { rng.below(13) as u8 } else { [0, 12][rng.below(2) as usize] };
            code.extend([op, rng.below(60) as u8]);
        }
        code.extend([11, 0]);
        panicked += check(&code, rng.below(120) as i64 - 60).is_err() as usize;
    }
    std::panic::set_hook(quiet);
    assert!(panicked > 0);
}
