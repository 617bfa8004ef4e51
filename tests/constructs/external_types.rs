//! Types defined outside the annotated module, as interpreters keep their
//! values beside their VM: the macro reads them from this file and models
//! the enum. Its method that only computes on its value, naming nothing
//! private to this module, is analyzed as the annotated module's own
//! methods are (inlined into compiled code); other methods are called as
//! Rust's own. A function of this module that only computes on its
//! arguments (a decoder, `Op::from_byte`) runs at compile time on green
//! arguments; one with an effect never does. Results are compared with
//! `jit::plain`, through the portal and `jit::specialize`.

use jitgen::prelude::*;

/// A value of the machine, defined outside the annotated module.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Pair(i32, i32),
    Nothing,
}

impl Value {
    /// The value's weight: a method of this module that only computes on
    /// its value, inlined into compiled code.
    pub fn weight(self) -> i64 {
        match self {
            Value::Int(n) => n,
            Value::Pair(a, b) => a as i64 + b as i64,
            Value::Nothing => 0,
        }
    }

    /// Whether the value weighs more than `floor`: a method reading
    /// through shared references, inlined too.
    pub fn above(&self, floor: &i64) -> bool {
        match *self {
            Value::Int(n) => n > *floor,
            Value::Pair(a, b) => a as i64 + b as i64 > *floor,
            Value::Nothing => false,
        }
    }

    /// Whether the value weighs at most `floor`: a call of an inlined
    /// method, inlined too.
    pub fn light(self, floor: i64) -> bool {
        !self.above(&floor)
    }

    /// The weight, at most `CAP`: a computation too, but naming a constant
    /// private to this module, so a call of Rust's own.
    pub fn capped(self) -> i64 {
        match self {
            Value::Int(n) if n > CAP => CAP,
            v => v.weight(),
        }
    }
}

/// What `Value::capped` caps at; private to this module.
const CAP: i64 = 1 << 40;

/// An operation, decoded from a byte as a bytecode VM's compiler wrote it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Add,
    Double,
    CountDown,
    Loop,
    Stop,
}

impl Op {
    /// The operation of a byte: only its argument and a constant table.
    pub fn from_byte(b: u8) -> Op {
        const ALL: [Op; 5] = [Op::Add, Op::Double, Op::CountDown, Op::Loop, Op::Stop];
        match b {
            0..=4 => ALL[b as usize],
            _ => Op::Stop,
        }
    }

    /// The same, counting its calls: an effect, so never run at compile
    /// time.
    pub fn from_byte_counted(b: u8) -> Op {
        DECODED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Op::from_byte(b)
    }
}

/// How many times `Op::from_byte_counted` ran.
pub static DECODED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A count whose field is private to this module: an opaque object to the
/// analysis, its method called as Rust's own.
pub struct Tally {
    count: i64,
}

impl Tally {
    /// Adds `by`; the new count.
    pub fn bump(&mut self, by: i64) -> i64 {
        self.count += by;
        self.count
    }
}

/// Values on a shelf whose field is private to this module: an opaque
/// object to the analysis, whose methods give a value by reference or by
/// value, as a Rust programmer writes a lookup.
pub struct Shelf {
    items: Vec<Value>,
}

impl Shelf {
    /// The value at `k`, by reference.
    pub fn at(&self, k: &i64) -> Option<&Value> {
        usize::try_from(*k).ok().and_then(|k| self.items.get(k))
    }

    /// The value at `k`, by value.
    pub fn taken(&self, k: i64) -> Option<Value> {
        self.at(&k).copied()
    }
}

/// A machine's state, defined outside the annotated module too: an enum
/// field read and written through the `&mut` the portal takes.
pub struct State {
    pub acc: Value,
    pub tally: Tally,
}

#[jit_interpreter]
mod decoding_vm {
    use super::Op;
    use jitgen::prelude::*;

    /// Bytes decoded by `Op::from_byte`: adds the counter, doubles, counts
    /// down, loops while positive, stops.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let (mut acc, mut i, mut pc) = (0i64, n, 0);
        loop {
            hint!(global_merge_point);
            let op = Op::from_byte(hint!(code[pc], concrete));
            pc += 1;
            match op {
                Op::Add => acc = acc.wrapping_add(i),
                Op::Double => acc = acc.wrapping_mul(2),
                Op::CountDown => i -= 1,
                Op::Loop => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Stop => return acc,
            }
        }
    }

    /// As `run`, with the byte made red (`variable`): where it is a
    /// constant while compiling (read from the green code), the decoder
    /// still runs at compile time, as promoted code's bytes do.
    pub fn run_red(code: &[u8], n: i64) -> i64 {
        let (mut acc, mut i, mut pc) = (0i64, n, 0);
        loop {
            hint!(global_merge_point);
            let known = hint!(code[pc], concrete);
            let byte = hint!(known, variable);
            let op = Op::from_byte(byte);
            pc += 1;
            match op {
                Op::Add => acc = acc.wrapping_add(i),
                Op::Double => acc = acc.wrapping_mul(2),
                Op::CountDown => i -= 1,
                Op::Loop => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Stop => return acc,
            }
        }
    }

    /// As `run`, with the counted decoder.
    pub fn run_counted(code: &[u8], n: i64) -> i64 {
        let (mut acc, mut i, mut pc) = (0i64, n, 0);
        loop {
            hint!(global_merge_point);
            let op = Op::from_byte_counted(hint!(code[pc], concrete));
            pc += 1;
            match op {
                Op::Add => acc = acc.wrapping_add(i),
                Op::Double => acc = acc.wrapping_mul(2),
                Op::CountDown => i -= 1,
                Op::Loop => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Stop => return acc,
            }
        }
    }
}

#[test]
fn a_pure_decoder_of_another_module_runs_at_compile_time_and_one_with_an_effect_does_not() {
    use std::sync::atomic::Ordering::Relaxed;
    let code = [0u8, 1, 2, 3, 4];
    let r = decoding_vm::jit::specialize::run(&code);
    assert!(!r.listing().contains("from_byte"), "{}", r.listing());
    let g = decoding_vm::jit::graphs();
    assert!(g.function("run").expect("analyzed").to_text().contains("call_pure Op::from_byte("));
    let counted_text = g.function("run_counted").expect("analyzed").to_text();
    assert!(counted_text.contains("call_opaque Op::from_byte_counted("), "{counted_text}");
    let counted = decoding_vm::jit::specialize::run_counted(&code);
    for n in [0i64, 1, 5, 40] {
        let want = decoding_vm::jit::plain::run(&code, n);
        assert_eq!(r.call(n), want, "{n}");
        assert_eq!(decoding_vm::run(&code, n), want, "{n}");
        // The counted decoder runs in residual code once per byte run, as
        // in the interpreter.
        let before = DECODED.load(Relaxed);
        assert_eq!(decoding_vm::jit::plain::run_counted(&code, n), want);
        let plain_count = DECODED.load(Relaxed) - before;
        let before = DECODED.load(Relaxed);
        assert_eq!(counted.call(n), want, "{n}");
        assert_eq!(DECODED.load(Relaxed) - before, plain_count, "{n}");
    }
}

#[test]
fn a_pure_decoder_runs_at_compile_time_on_red_bytes_that_are_constants() {
    let code = [0u8, 1, 2, 3, 4];
    let r = decoding_vm::jit::specialize::run_red(&code);
    let listing = r.listing();
    // Decoded while compiling, each `match` on the operation folds to its
    // arm: no call, and no test of the operation's tag.
    assert!(!listing.contains("from_byte"), "{listing}");
    let text = decoding_vm::jit::graphs().function("run_red").expect("analyzed").to_text();
    assert!(text.contains("call_pure Op::from_byte("), "{text}");
    for n in [0i64, 1, 5, 40] {
        let want = decoding_vm::jit::plain::run_red(&code, n);
        assert_eq!(want, decoding_vm::jit::plain::run(&code, n));
        assert_eq!(r.call(n), want, "{n}");
        assert_eq!(decoding_vm::run_red(&code, n), want, "{n}");
    }
}

#[test]
fn random_programs_of_a_pure_decoder_agree_with_plain() {
    decoding_vm::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xdec0_de);
    for _ in 0..crate::common::how_many(300) {
        // No `Loop` before the count-down that ends it; bytes past the
        // table decode to `Stop` as well.
        let mut code: Vec<u8> = (0..rng.below(8)).map(|_| [0u8, 1, 2, 5, 6][rng.below(5) as usize]).collect();
        code.extend([2, 3, 4]);
        let n = rng.below(30) as i64;
        let want = decoding_vm::jit::plain::run(&code, n);
        assert_eq!(decoding_vm::run(&code, n), want, "{code:?} {n}");
        assert_eq!(decoding_vm::jit::specialize::run(&code).call(n), want, "{code:?} {n}");
        assert_eq!(decoding_vm::run_counted(&code, n), want, "{code:?} {n}");
        assert_eq!(decoding_vm::run_red(&code, n), want, "{code:?} {n}");
        assert_eq!(decoding_vm::jit::specialize::run_red(&code).call(n), want, "{code:?} {n}");
    }
}

#[jit_interpreter]
mod values_vm {
    use super::{Shelf, State, Value};
    use jitgen::prelude::*;

    /// As `run`, on a state of another module whose tally is bumped by op 6.
    pub fn run_state(code: &[u8], s: &mut State, n: i64) -> i64 {
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => s.acc = Value::Int(s.acc.weight().wrapping_add(i)),
                6 => {
                    let t = s.tally.bump(i);
                    s.acc = match s.acc {
                        Value::Pair(a, _) => Value::Pair(a, t as i32),
                        _ => Value::Pair(t as i32, 1),
                    };
                }
                4 => i -= 1,
                5 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return s.acc.weight(),
            }
        }
    }

    /// Ops on a shelf of another module: 0 adds the weight of the value
    /// at the counter (read by reference), 1 mixes in the weight of the
    /// value there (read by value) or adds 1, 2 and 3 read it by reference
    /// again (bound, copied), 4 counts down, 5 loops while
    /// positive, else returns the sum.
    pub fn run_shelf(code: &[u8], shelf: &Shelf, n: i64) -> i64 {
        let (mut acc, mut i, mut pc) = (0i64, n, 0);
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    if let Some(&v) = shelf.at(&i) {
                        acc = acc.wrapping_add(v.weight());
                    }
                }
                1 => match shelf.taken(i) {
                    Some(v) => acc = acc.wrapping_mul(3) ^ v.weight(),
                    None => acc += 1,
                },
                2 => {
                    if let Some(v) = shelf.at(&i) {
                        acc = acc.wrapping_sub(v.weight());
                    }
                }
                3 => acc ^= shelf.at(&i).copied().unwrap_or(Value::Int(11)).weight(),
                4 => i -= 1,
                5 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }

    /// Ops: 0 adds the counter, 1 makes a pair, 2 doubles the weight if it
    /// is above the counter (else takes one from it), 3 forgets a value no
    /// heavier than the counter, 4 counts down, 5 loops while positive, else
    /// returns the capped weight.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = Value::Int(0);
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    acc = match acc {
                        Value::Int(a) => Value::Int(a.wrapping_add(i)),
                        Value::Pair(a, _) => Value::Int(a as i64 + i),
                        Value::Nothing => Value::Int(i),
                    }
                }
                1 => acc = Value::Pair(i as i32, 1),
                2 => acc = Value::Int(if acc.above(&i) { acc.weight().wrapping_mul(2) } else { acc.weight() - 1 }),
                3 => {
                    if acc.light(i) {
                        acc = Value::Nothing;
                    }
                }
                4 => i -= 1,
                5 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc.capped(),
            }
        }
    }
}

fn check(code: &[u8], n: i64) {
    let want = values_vm::jit::plain::run(code, n);
    assert_eq!(values_vm::run(code, n), want, "{code:?} {n}");
    assert_eq!(values_vm::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn an_enum_of_another_module_is_modeled_and_its_method_called() {
    values_vm::jit::config().set_threshold(0);
    for n in [0i64, 1, 9, 300] {
        check(&[0, 3, 1, 0, 2, 3, 4, 5, 9], n);
    }
    assert!(values_vm::jit::stats().compilations > 0, "{:?}", values_vm::jit::left_to_rust());
    assert!(values_vm::jit::left_to_rust().is_empty(), "{:?}", values_vm::jit::left_to_rust());
    let g = values_vm::jit::graphs();
    let run = g.function("run").expect("the portal analyzed at run time too");
    // `weight` only computes on its argument, in terms this module can
    // name: analyzed as this module's own methods are, inlined into
    // compiled code.
    assert!(run.to_text().contains("call Value::weight(acc_6)  [red call]"), "{}", run.to_text());
    let listings = values_vm::jit::portal_listings().join("\n");
    assert!(!listings.contains("weight") && !listings.contains("above") && !listings.contains("light"), "{listings}");
    assert!(listings.contains("call Value::capped"), "{listings}");
}

#[test]
fn a_state_of_another_module_with_an_opaque_field_agrees_with_plain() {
    values_vm::jit::config().set_threshold(0);
    let state = || State { acc: Value::Nothing, tally: Tally { count: 0 } };
    for n in [0i64, 1, 7, 200] {
        let code = [0u8, 6, 4, 5, 9];
        let want = values_vm::jit::plain::run_state(&code, &mut state(), n);
        assert_eq!(values_vm::run_state(&code, &mut state(), n), want, "{n}");
        assert_eq!(values_vm::jit::specialize::run_state(&code).call(&mut state(), n), want, "{n}");
    }
    assert!(values_vm::jit::left_to_rust().is_empty(), "{:?}", values_vm::jit::left_to_rust());
}

#[test]
fn random_programs_over_values_of_another_module_agree_with_plain() {
    values_vm::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xe47e_12a1);
    for _ in 0..crate::common::how_many(400) {
        let mut code: Vec<u8> = (0..rng.below(8)).map(|_| rng.below(4) as u8).collect();
        code.extend([4, 5, 9]);
        check(&code, rng.below(40) as i64);
    }
}

#[test]
fn random_programs_over_a_state_of_another_module_agree_with_plain() {
    values_vm::jit::config().set_threshold(0);
    let state = |k: i32| State {
        acc: match k % 3 {
            0 => Value::Nothing,
            1 => Value::Int(k as i64),
            _ => Value::Pair(k, -k),
        },
        tally: Tally { count: k as i64 },
    };
    let mut rng = crate::common::Rng(0x57a7_e5ee);
    for _ in 0..crate::common::how_many(300) {
        let mut code: Vec<u8> = (0..rng.below(6)).map(|_| [0u8, 6][rng.below(2) as usize]).collect();
        code.extend([4, 5, 9]);
        let (k, n) = (rng.below(9) as i32, rng.below(30) as i64);
        // The whole final state: the result, the value and the tally.
        let whole = |r: i64, s: State| (r, s.acc, s.tally.count);
        let mut s = state(k);
        let want = whole(values_vm::jit::plain::run_state(&code, &mut s, n), s);
        let mut s = state(k);
        assert_eq!(whole(values_vm::run_state(&code, &mut s, n), s), want, "{code:?} {k} {n}");
        let mut s = state(k);
        let got = whole(values_vm::jit::specialize::run_state(&code).call(&mut s, n), s);
        assert_eq!(got, want, "{code:?} {k} {n}");
    }
}

#[test]
fn random_programs_reading_an_opaque_shelf_by_reference_and_by_value_agree_with_plain() {
    values_vm::jit::config().set_threshold(0);
    let shelf =
        Shelf { items: vec![Value::Int(5), Value::Pair(2, -9), Value::Nothing, Value::Int(-40), Value::Pair(7, 7)] };
    let mut rng = crate::common::Rng(0x5e1f_0001);
    for _ in 0..crate::common::how_many(300) {
        let mut code: Vec<u8> = (0..rng.below(6)).map(|_| rng.below(4) as u8).collect();
        code.extend([4, 5, 9]);
        let n = rng.below(9) as i64;
        let want = values_vm::jit::plain::run_shelf(&code, &shelf, n);
        assert_eq!(values_vm::run_shelf(&code, &shelf, n), want, "{code:?} {n}");
        assert_eq!(values_vm::jit::specialize::run_shelf(&code).call(&shelf, n), want, "{code:?} {n}");
    }
    assert!(values_vm::jit::left_to_rust().is_empty(), "{:?}", values_vm::jit::left_to_rust());
}
