//! Calls through the generated JIT: green calls run at compile time, red,
//! gray and yellow calls are inlined, opaque calls stay residual calls; and
//! enums, `?` and loops inside callees. Every result is compared with
//! `jit::plain`.

use jitgen::prelude::*;

fn external_square(x: i64) -> i64 {
    x.wrapping_mul(x)
}

#[jit_interpreter]
pub mod calls {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Err {
        Negative(i64),
        TooBig,
    }

    /// Pure and green when its argument is: runs at compile time.
    fn decode(op: u8) -> u8 {
        op & 0x0f
    }

    /// Red: inlined.
    fn step(acc: i64, k: i64) -> Result<i64, Err> {
        if acc < 0 {
            return Err(Err::Negative(acc));
        }
        let mut i = 0;
        let mut r = acc;
        while i < k {
            r = r.wrapping_add(i);
            i += 1;
        }
        if r > 1_000_000 {
            Err(Err::TooBig)
        } else {
            Ok(r)
        }
    }

    /// Gray: no result, an effect.
    fn record(log: &mut Vec<i64>, v: i64) {
        log.push(v);
    }

    /// Two lists by `&mut` (virtual in the caller, written back): pushes
    /// `v` onto the shorter and moves the top of the longer onto the other.
    fn shuffle(a: &mut Vec<i64>, b: &mut Vec<i64>, v: i64) -> i64 {
        if a.len() <= b.len() {
            a.push(v);
        } else {
            b.push(v);
        }
        if a.len() > b.len() + 1 {
            let t = a.pop().unwrap_or(0);
            b.push(t);
        } else if b.len() > a.len() + 1 {
            let t = b.pop().unwrap_or(0);
            a.push(t);
        }
        let top = a.last().copied().unwrap_or(0);
        top.wrapping_add(b.len() as i64)
    }

    #[jit_opaque]
    fn opaque_twice(x: i64) -> i64 {
        x.wrapping_mul(2)
    }

    pub fn run(code: &[u8], x: i64, log: &mut Vec<i64>) -> Result<i64, Err> {
        let mut acc = x;
        let (mut a, mut b): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(decode(code[pc]), concrete);
            if op == 1 {
                acc = step(acc, 3)?;
            } else if op == 2 {
                acc = opaque_twice(acc);
            } else if op == 3 {
                record(log, acc);
            } else if op == 4 {
                acc = super::external_square(acc);
            } else if op == 5 {
                acc -= 100;
            } else if op == 6 {
                acc = shuffle(&mut a, &mut b, acc);
            } else if op == 7 {
                acc = shuffle(&mut b, &mut a, acc.wrapping_mul(3));
            }
            pc += 1;
        }
        Ok(acc)
    }
}

#[test]
fn every_kind_of_call_agrees_with_plain() {
    let g = calls::jit::graphs();
    let run = g.function("run").unwrap();
    let kinds: Vec<CallKind> = run.ops().into_iter().filter_map(|(_, op, _)| run.call_kind(op.result)).collect();
    assert!(kinds.contains(&CallKind::Green), "{kinds:?}");
    assert!(kinds.contains(&CallKind::Red), "{kinds:?}");
    assert!(kinds.contains(&CallKind::Gray), "{kinds:?}");

    let programs: [&[u8]; 7] = [
        &[1, 2, 3, 1],
        &[0x11, 0x22, 0x33],
        &[4, 3, 1, 5, 5, 1],
        &[5, 1, 3],
        &[2, 2, 2, 2, 4, 1],
        &[6, 6, 7, 6, 3, 7, 7, 7, 6, 3],
        &[6, 7, 5, 6, 6, 6, 7, 3, 2, 7],
    ];
    for p in programs {
        let r = calls::jit::specialize::run(p);
        for x in [-3i64, 0, 1, 7, 500, 999_000] {
            let (mut l1, mut l2) = (vec![], vec![]);
            let want = calls::jit::plain::run(p, x, &mut l1);
            let got = r.call(x, &mut l2);
            assert_eq!(got, want, "program {p:?} x={x}\n{}", r.listing());
            assert_eq!(l1, l2, "program {p:?} x={x}: the effects must be the same");
        }
    }
    // The opaque function is called, not inlined; the pure decode is gone.
    let listing = calls::jit::specialize::run(&[2, 1]).listing().to_string();
    assert!(listing.contains("call calls::opaque_twice") || listing.contains("call opaque_twice"), "{listing}");
    assert!(!listing.contains("decode"), "{listing}");
    // Lists given by `&mut` to a helper stay virtual: no `Vec` is made.
    let listing = calls::jit::specialize::run(&[6, 7, 6, 6, 7]).listing().to_string();
    assert!(!listing.contains("vec_"), "{listing}");
}

#[test]
fn the_portal_agrees_too() {
    calls::jit::config().set_threshold(2);
    for p in [&[1u8, 2, 3, 1][..], &[4, 3, 1, 5, 5, 1], &[6, 7, 6, 6, 3, 7, 6, 7, 7, 3]] {
        for x in 0..30 {
            let (mut l1, mut l2) = (vec![], vec![]);
            assert_eq!(calls::run(p, x, &mut l1), calls::jit::plain::run(p, x, &mut l2));
            assert_eq!(l1, l2);
        }
    }
    assert!(calls::jit::stats().entries > 0, "{:?} {:?}", calls::jit::stats(), calls::jit::last_decline());
}

#[test]
#[ignore = "prints a listing"]
fn show_listing() {
    println!("{}", calls::jit::specialize::run(&[2, 1, 3]).listing());
}
