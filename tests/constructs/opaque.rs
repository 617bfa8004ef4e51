//! Objects of types the analysis does not model, as fields of a machine:
//! compiled code holds their addresses and calls their methods as residual
//! calls of Rust's own. Results are compared with `jit::plain`, through the
//! portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod tallies {
    use jitgen::prelude::*;
    use std::collections::BTreeMap;
    use std::io::Write;

    /// A counter, a map the analysis does not model, a boxed closure, and
    /// an output written as bytes.
    pub struct Machine {
        pub acc: i64,
        pub seen: BTreeMap<i64, u32>,
        pub weigh: Box<dyn Fn(i64) -> i64>,
        pub out: std::io::Cursor<Vec<u8>>,
    }

    impl Machine {
        /// Ops: 0 adds the counter, 1 adds how many keys were seen, 2
        /// records the counter mod 7, 3 adds whether 3 was seen, 4 adds the
        /// counter weighed, 5 counts down, 6 loops while positive, else
        /// returns the sum.
        pub fn run(&mut self, code: &[u8], n: i64) -> i64 {
            let mut pc = 0;
            let mut i = n;
            loop {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                pc += 1;
                match op {
                    0 => self.acc = self.acc.wrapping_add(i),
                    1 => self.acc += self.seen.len() as i64,
                    2 => {
                        self.seen.insert(i % 7, 1);
                    }
                    3 => {
                        let k = 3i64;
                        if self.seen.contains_key(&k) {
                            self.acc += 100;
                        }
                    }
                    4 => self.acc = self.acc.wrapping_add((self.weigh)(i)),
                    5 => i -= 1,
                    6 => {
                        if i > 0 {
                            pc = 0;
                        }
                    }
                    7 => {
                        let s = format!("{};", self.acc);
                        let _ = self.out.write_all(s.as_bytes());
                    }
                    _ => return self.acc,
                }
            }
        }
    }
}

/// The whole final state of a run: the result, the counter, the map and
/// the output.
fn whole(r: i64, m: tallies::Machine) -> (i64, i64, Vec<(i64, u32)>, Vec<u8>) {
    (r, m.acc, m.seen.into_iter().collect(), m.out.into_inner())
}

/// `run` on a fresh machine in each of the three ways, compared whole.
fn check(code: &[u8], n: i64) {
    let mut m = machine();
    let want = whole(tallies::jit::plain::Machine::run(&mut m, code, n), m);
    let mut m = machine();
    assert_eq!(whole(m.run(code, n), m), want, "{code:?} {n}");
    let mut m = machine();
    assert_eq!(whole(tallies::jit::specialize::Machine::run(&mut m, code, n), m), want, "{code:?} {n}");
}

fn machine() -> tallies::Machine {
    tallies::Machine { acc: 0, seen: Default::default(), weigh: Box::new(|x| x * 3 - 1), out: Default::default() }
}

#[test]
fn methods_of_opaque_fields_are_residual_calls_and_agree_with_plain() {
    tallies::jit::config().set_threshold(0);
    tallies::jit::config().set_turn_checks(1);
    let code = [0u8, 1, 2, 3, 7, 5, 6, 9];
    for n in [0i64, 1, 5, 40, 1000] {
        check(&code, n);
    }
    assert!(tallies::jit::stats().compilations > 0, "{:?}", tallies::jit::left_to_rust());
    assert!(tallies::jit::left_to_rust().is_empty(), "{:?}", tallies::jit::left_to_rust());
    let listing = tallies::jit::portal_listings().join("\n");
    for call in [".len()", ".insert(,)", ".contains_key(&)", ".write_all(as_bytes)"] {
        assert!(listing.contains(call), "{call} in\n{listing}");
    }
}

#[test]
fn random_programs_over_opaque_fields_agree_with_plain() {
    tallies::jit::config().set_threshold(0);
    tallies::jit::config().set_turn_checks(1);
    let mut rng = crate::common::Rng(0x0dd_f1e1d);
    for _ in 0..crate::common::how_many(400) {
        let len = rng.below(8) as usize;
        let mut code: Vec<u8> = (0..len).map(|_| [0, 1, 2, 3, 4, 7][rng.below(6) as usize]).collect();
        code.extend([5, 6, 9]);
        let n = rng.below(60) as i64;
        check(&code, n);
    }
}

#[jit_interpreter]
mod lookups {
    use jitgen::prelude::*;
    use std::collections::BTreeSet;

    /// A program with a set the analysis does not model beside its code.
    pub struct Program {
        pub code: Vec<u8>,
        pub marked: BTreeSet<i64>,
    }

    /// Ops: 0 adds 10 if the counter is marked, 1 adds the number of
    /// marks, 2 counts down, 3 loops while positive, else returns the sum.
    pub fn run(prog: &Program, n: i64) -> i64 {
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(prog.code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    if prog.marked.contains(&i) {
                        acc += 10;
                    }
                }
                1 => acc += prog.marked.len() as i64,
                2 => i -= 1,
                3 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }
}

#[test]
fn methods_of_opaque_objects_in_green_data_agree_with_plain() {
    lookups::jit::config().set_threshold(0);
    lookups::jit::config().set_turn_checks(1);
    let prog = lookups::Program { code: vec![0, 1, 2, 3, 9], marked: [2, 3, 5, 7, 11].into_iter().collect() };
    for n in [0i64, 1, 6, 12, 500] {
        let want = lookups::jit::plain::run(&prog, n);
        assert_eq!(lookups::run(&prog, n), want, "{n}");
        assert_eq!(lookups::jit::specialize::run(&prog).call(n), want, "{n}");
    }
    assert!(lookups::jit::stats().compilations > 0, "{:?}", lookups::jit::left_to_rust());
}
