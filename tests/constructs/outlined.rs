//! Rust the analysis does not model, written inside a portal: an iterator
//! chain, a trait method call, a `&str` comparison, an array of string
//! slices joined, a map of the standard library's with a hasher, its
//! `entry` API, a closure, a `for` over an iterator, a `Vec` made through a
//! type alias. Each statement using them (or, where the statement leaves
//! the loop, its condition or scrutinee) is outlined (one residual call of
//! the statement as written), so the portal still compiles around them.
//! Results and whole final states are compared with `jit::plain`, through
//! the portal and through `jit::specialize`, on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod machine {
    use jitgen::prelude::*;
    use std::collections::BTreeMap;
    use std::fmt::Write as _;

    /// What can be measured.
    pub trait Measure {
        /// Its size.
        fn size(&self) -> i64;
    }

    /// A square of a side.
    #[derive(Clone, Copy)]
    pub struct Square(pub i64);

    impl Measure for Square {
        fn size(&self) -> i64 {
            self.0 * self.0
        }
    }

    /// A stack, through an alias.
    pub type Stack = Vec<i64>;

    /// A machine with objects of its own.
    pub struct Machine {
        /// The operand stack.
        pub stack: Vec<i64>,
        /// Names, grown by joining.
        pub names: Vec<String>,
        /// Counts by key, in a map the analysis does not model.
        pub counts: BTreeMap<i64, i64>,
        /// What was written.
        pub out: String,
    }

    impl Machine {
        /// Runs `code` with the counter `n`: op 9 loops while the counter,
        /// decremented, stays positive; 10 (and any op not below) returns
        /// the top of the stack.
        pub fn run(&mut self, code: &[u8], n: i64) -> i64 {
            let mut pc = 0;
            let mut i = n;
            loop {
                hint!(global_merge_point);
                match hint!(code[pc], concrete) {
                    0 => self.stack.push(i),
                    1 => {
                        let s: i64 = self.stack.iter().map(|v| v * 2).filter(|v| v % 3 != 0).sum();
                        self.stack.push(s % 1000);
                    }
                    2 => {
                        let sq = Square(i % 7);
                        self.stack.push(sq.size());
                        // A `Copy` struct given by outlined Rust.
                        let big = [sq, Square(3)].iter().copied().max_by_key(|s| s.0).unwrap_or(sq);
                        self.stack.push(big.0);
                    }
                    3 => {
                        let k = (i as usize) % self.names.len();
                        let b = self.names[k].as_str() == "b";
                        self.stack.push(b as i64);
                    }
                    4 => {
                        let joined = [self.names[0].as_str(), "x"].concat();
                        if joined.len() < 12 {
                            self.names.push(joined);
                        }
                    }
                    5 => {
                        *self.counts.entry(i % 5).or_insert(0) += 1;
                    }
                    6 => {
                        let mut t: Stack = Stack::new();
                        t.push(i);
                        t.push(i * 3);
                        let top = t.last().copied().unwrap_or(0);
                        self.stack.push(top);
                    }
                    7 => {
                        let mut total = 0;
                        for (k, v) in self.counts.iter() {
                            total += k * v;
                        }
                        self.stack.push(total);
                    }
                    8 => {
                        let top = self.stack.last().copied().unwrap_or(-1);
                        let _ = write!(self.out, "{top};");
                    }
                    11 => {
                        // The condition alone: the `if` returns.
                        if self.names.iter().any(|n| n.len() > 7) {
                            return -(self.names.len() as i64);
                        }
                    }
                    12 => {
                        // The scrutinee alone: an arm continues the loop.
                        match self.names.iter().position(|n| n.ends_with("xx")) {
                            Some(p) => {
                                self.stack.push(p as i64);
                                pc += 1;
                                continue;
                            }
                            None => self.stack.push(-5),
                        }
                    }
                    13 => {
                        // Outlined Rust changing the stack compiled code holds.
                        self.stack.extend([i, i * 2].iter().rev());
                        let n = self.stack.len();
                        self.stack.swap(0, n - 1);
                    }
                    14 => {
                        // An integer literal's type, told by a later use.
                        let k = if self.names.iter().any(|n| n.len() > 2) { 10 } else { 20 };
                        self.stack.push(k + i);
                    }
                    9 => {
                        i -= 1;
                        if i > 0 {
                            pc = 0;
                            continue;
                        }
                    }
                    _ => return self.stack.last().copied().unwrap_or(0),
                }
                pc += 1;
            }
        }
    }
}

/// Statements over a set that change several locals: two (outlined, the
/// second read back from the call's stash), and five (too many: the module
/// interprets).
#[jit_interpreter]
mod changing {
    use jitgen::prelude::*;
    use std::collections::BTreeSet;

    /// Sums and counts the members of `set` at each 0 of `code`, and
    /// counts the odd ones at each 1, in one loop over the set each.
    pub fn distinct(code: &[u8], set: &BTreeSet<u8>) -> i64 {
        let mut pc = 0;
        let mut sum = 0i64;
        let mut n = 0i64;
        let mut odd = 0u8;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return sum * 1000 + n * 10 + odd as i64;
            }
            match hint!(code[pc], concrete) {
                0 => {
                    for x in set.iter() {
                        sum += *x as i64;
                        n += 1;
                    }
                }
                1 => {
                    for x in set.iter() {
                        if *x % 2 == 1 {
                            odd = odd.wrapping_add(1);
                            sum -= 1;
                        }
                    }
                }
                _ => n -= 1,
            }
            pc += 1;
        }
    }
}

#[test]
fn a_statement_changing_two_locals_is_outlined_with_a_stash_and_agrees_with_plain() {
    use changing::jit;
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let left = jit::left_to_rust();
    assert!(left.len() >= 2 && left.iter().all(|l| l.contains("(outlined)")), "{left:#?}");
    let mut rng = crate::common::Rng(0x5e7);
    for _ in 0..crate::common::how_many(60) {
        let code: Vec<u8> = (0..rng.below(12)).map(|_| rng.below(3) as u8).collect();
        let set: std::collections::BTreeSet<u8> = code.iter().map(|c| c * 3 + 1).collect();
        let want = jit::plain::distinct(&code, &set);
        assert_eq!(changing::distinct(&code, &set), want, "{code:?}");
        assert_eq!(jit::specialize::distinct(&code).call(&set), want, "{code:?}");
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
}

/// A statement that changes five locals: more than an outlined call gives
/// back, so the module interprets and says why.
#[jit_interpreter]
mod written {
    use jitgen::prelude::*;
    use std::collections::BTreeSet;

    /// Five counts over `set`, at each 0 of `code`.
    pub fn five(code: &[u8], set: &BTreeSet<u8>) -> i64 {
        let mut pc = 0;
        let (mut a, mut b, mut c, mut d, mut e) = (0i64, 0i64, 0i64, 0i64, 0i64);
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return a + 10 * b + 100 * c + 1000 * d + 10000 * e;
            }
            if hint!(code[pc], concrete) == 0 {
                for x in set.iter() {
                    a += 1;
                    b += 2;
                    c += 3;
                    d += 4;
                    e += *x as i64;
                }
            }
            pc += 1;
        }
    }
}

#[test]
fn a_statement_changing_five_locals_is_not_outlined_and_its_module_interprets() {
    written::jit::config().set_threshold(0);
    written::jit::config().set_turn_checks(1);
    let left = written::jit::left_to_rust();
    assert!(left.iter().all(|l| l.starts_with("the module")), "{left:#?}");
    assert!(left.iter().any(|l| l.contains("changes more than 4 locals")), "{left:#?}");
    let mut rng = crate::common::Rng(0xf17e);
    for _ in 0..crate::common::how_many(40) {
        let code: Vec<u8> = (0..rng.below(12)).map(|_| rng.below(4) as u8).collect();
        let set: std::collections::BTreeSet<u8> = code.iter().map(|c| c * 3).collect();
        assert_eq!(written::five(&code, &set), written::jit::plain::five(&code, &set));
    }
}

/// The write through a `&mut` parameter alone: outlined, and the portal
/// compiles.
#[jit_interpreter]
mod written_alone {
    use jitgen::prelude::*;

    /// Counts the ops of `code` over 1 into `*acc`, then doubles it
    /// through the reference.
    pub fn count(code: &[u8], acc: &mut i64) -> i64 {
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            if hint!(code[pc], concrete) > 1 {
                *acc += 1;
            }
            pc += 1;
        }
        *acc *= 2;
        *acc
    }
}

#[test]
fn a_write_through_a_mut_parameter_of_a_portal_is_outlined_and_agrees_with_plain() {
    use written_alone::jit;
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let left = jit::left_to_rust();
    assert!(left.len() == 2 && left.iter().all(|l| l.contains("(outlined)")), "{left:#?}");
    let mut rng = crate::common::Rng(0xacc);
    for _ in 0..crate::common::how_many(60) {
        let code: Vec<u8> = (0..rng.below(12)).map(|_| rng.below(4) as u8).collect();
        let start = rng.below(50) as i64;
        let (mut a, mut b, mut c) = (start, start, start);
        let want = jit::plain::count(&code, &mut b);
        assert_eq!(written_alone::count(&code, &mut a), want, "{code:?}");
        assert_eq!(jit::specialize::count(&code).call(&mut c), want, "{code:?}");
        assert_eq!((a, c), (b, b), "{code:?}");
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
}

/// A portal method whose `self` stays whole (a helper takes it whole):
/// outlined Rust gets `self`, reads and writes its fields in memory.
#[jit_interpreter]
mod whole {
    use jitgen::prelude::*;

    /// A counter with a log.
    pub struct Counter {
        /// The count.
        pub n: i64,
        /// What was logged.
        pub log: Vec<i64>,
    }

    fn bump(c: &mut Counter) {
        c.n += 3;
    }

    impl Counter {
        /// Runs `code`, `turns` times over: 0 counts, 1 adds the log's sum
        /// mod 7, 2 logs the count twice by outlined Rust, 3 bumps through
        /// the helper; the count is returned at the end.
        pub fn run(&mut self, code: &[u8], turns: i64) -> i64 {
            let mut pc = 0;
            let mut left = turns;
            loop {
                hint!(global_merge_point);
                if pc == code.len() {
                    left -= 1;
                    if left <= 0 {
                        return self.n;
                    }
                    pc = 0;
                    continue;
                }
                match hint!(code[pc], concrete) {
                    0 => self.n += 1,
                    1 => {
                        let s: i64 = self.log.iter().sum();
                        self.n += s % 7;
                    }
                    2 => self.log.extend([self.n, -self.n / 2].iter()),
                    _ => bump(self),
                }
                pc += 1;
            }
        }
    }
}

#[test]
fn outlined_rust_reads_and_writes_a_whole_self_and_agrees_with_plain() {
    use whole::{jit, Counter};
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let left = jit::left_to_rust();
    assert!(left.len() >= 2 && left.iter().all(|l| l.contains("(outlined)")), "{left:?}");
    let mut rng = crate::common::Rng(0x5e1f);
    for _ in 0..crate::common::how_many(100) {
        let code: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.below(4) as u8).collect();
        let turns = 1 + rng.below(6) as i64;
        let mut p = Counter { n: 1, log: vec![2] };
        let want = jit::plain::Counter::run(&mut p, &code, turns);
        let mut c = Counter { n: 1, log: vec![2] };
        assert_eq!(c.run(&code, turns), want, "{code:?}");
        assert_eq!((c.n, &c.log), (p.n, &p.log), "{code:?}");
        let mut c = Counter { n: 1, log: vec![2] };
        assert_eq!(jit::specialize::Counter::run(&code).call(&mut c, turns), want, "{code:?}");
        assert_eq!((c.n, &c.log), (p.n, &p.log), "{code:?}");
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
}

/// A struct local that is an object (it holds a `Vec`) with the position
/// in it, under a hint: outlined Rust would get the frame by `&mut`, which
/// makes the position red and the hint unsatisfiable, so the module
/// interprets, as it did before outlining (never an error).
#[jit_interpreter]
mod frame_local {
    use jitgen::prelude::*;

    /// A frame holding its position.
    pub struct Positioned {
        /// Where it is.
        pub ip: usize,
        /// What it logged.
        pub log: Vec<i64>,
    }

    /// Runs `code` once: 0 logs the position, 1 adds the log's largest.
    pub fn run_positioned(code: &[u8]) -> i64 {
        let mut frame = Positioned { ip: 0, log: vec![2] };
        let mut sum = 0i64;
        loop {
            hint!(global_merge_point);
            if frame.ip == code.len() {
                return sum;
            }
            match hint!(code[frame.ip], concrete) {
                0 => frame.log.push(frame.ip as i64),
                _ => sum += frame.log.iter().copied().max().unwrap_or(0),
            }
            frame.ip += 1;
        }
    }
}

#[test]
fn a_struct_local_holding_a_vec_goes_to_outlined_rust_by_reference_unless_a_hint_needs_it() {
    use frame_local::jit;
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    // The hint on `code[frame.ip]` cannot hold once the frame is handed
    // to outlined Rust: the module is left to Rust, not refused.
    let left = jit::left_to_rust();
    assert!(!left.is_empty() && left.iter().all(|l| l.starts_with("the module")), "{left:#?}");
    let mut rng = crate::common::Rng(0xf4a3e);
    for _ in 0..crate::common::how_many(80) {
        let code: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.below(4) as u8).collect();
        assert_eq!(frame_local::run_positioned(&code), jit::plain::run_positioned(&code), "{code:?}");
    }
}

/// A struct local holding a `Vec`, the position a local of its own: the
/// frame goes to outlined Rust by reference, and the portal compiles.
#[jit_interpreter]
mod frame_alone {
    use jitgen::prelude::*;

    /// What the program keeps.
    pub struct Frame {
        /// What it logged.
        pub log: Vec<i64>,
        /// How many times it looked.
        pub looks: i64,
    }

    /// Runs `code` `turns` times over: 0 logs the turn, 1 adds the log's
    /// largest to the sum (outlined), 2 replaces the log by its reverse
    /// (outlined), others add the position.
    pub fn run(code: &[u8], turns: i64) -> i64 {
        let mut frame = Frame { log: vec![1], looks: 0 };
        let mut pc = 0;
        let mut sum = 0i64;
        let mut left = turns;
        loop {
            hint!(global_merge_point);
            if pc == code.len() {
                left -= 1;
                if left <= 0 {
                    return sum * 1000 + frame.log.len() as i64 * 10 + frame.looks;
                }
                pc = 0;
                continue;
            }
            match hint!(code[pc], concrete) {
                0 => frame.log.push(left),
                1 => sum += frame.log.iter().copied().max().unwrap_or(0),
                2 => frame.log = frame.log.iter().rev().copied().collect(),
                _ => {
                    sum += pc as i64;
                    frame.looks += 1;
                }
            }
            pc += 1;
        }
    }
}

#[test]
fn a_struct_local_holding_a_vec_is_passed_to_outlined_rust_and_the_portal_compiles() {
    use frame_alone::jit;
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let left = jit::left_to_rust();
    assert!(left.len() >= 2 && left.iter().all(|l| l.contains("(outlined)")), "{left:#?}");
    let mut rng = crate::common::Rng(0xa10e);
    for _ in 0..crate::common::how_many(80) {
        let code: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.below(4) as u8).collect();
        let turns = 1 + rng.below(6) as i64;
        let want = jit::plain::run(&code, turns);
        assert_eq!(frame_alone::run(&code, turns), want, "{code:?}");
        assert_eq!(jit::specialize::run(&code).call(turns), want, "{code:?}");
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
}

use machine::{jit, Machine};

fn fresh() -> Machine {
    Machine {
        stack: vec![1],
        names: vec!["a".to_string(), "b".to_string()],
        counts: Default::default(),
        out: String::new(),
    }
}

fn state(m: Machine) -> (Vec<i64>, Vec<String>, Vec<(i64, i64)>, String) {
    (m.stack, m.names, m.counts.into_iter().collect(), m.out)
}

fn check(code: &[u8], n: i64) {
    let mut plain = fresh();
    let want = jit::plain::Machine::run(&mut plain, code, n);
    let want_state = state(plain);
    let mut m = fresh();
    assert_eq!(m.run(code, n), want, "{code:?} {n}");
    assert_eq!(state(m), want_state, "{code:?} {n}");
    let mut m = fresh();
    assert_eq!(jit::specialize::Machine::run(&mut m, code, n), want, "{code:?} {n}");
    assert_eq!(state(m), want_state, "{code:?} {n}");
}

#[test]
fn rust_the_analysis_does_not_model_is_outlined_and_the_portal_compiles() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    // Each outlined statement is reported, with why, and nothing else is
    // left to Rust.
    let left = jit::left_to_rust();
    assert!(left.len() >= 5 && left.iter().all(|l| l.contains("(outlined)")), "{left:#?}");
    assert!(left.iter().any(|l| l.contains("an array literal")), "{left:#?}");
    // A condition and a scrutinee alone, where their statements leave.
    assert_eq!(left.iter().filter(|l| l.contains("`iter` on `Vec<String>`")).count(), 3, "{left:#?}");
    for n in [1, 4, 30] {
        check(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], n);
        check(&[4, 4, 4, 12, 11, 4, 12, 11, 9, 10], n);
        check(&[0, 13, 8, 0, 13, 1, 8, 9, 10], n);
        check(&[14, 4, 4, 14, 9, 10], n);
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    // The outlined statements are residual calls; the rest is compiled.
    let listings = jit::portal_listings().join("\n");
    assert!(listings.contains("__jitgen_outlined"), "{listings}");
}

#[test]
fn random_programs_with_outlined_rust_agree_with_plain() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let mut rng = crate::common::Rng(0x07_1e5);
    for _ in 0..crate::common::how_many(150) {
        let len = rng.below(10) as usize;
        let mut code: Vec<u8> =
            (0..len).map(|_| [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14][rng.below(13) as usize]).collect();
        code.extend([9, 10]);
        check(&code, 1 + rng.below(12) as i64);
    }
}
