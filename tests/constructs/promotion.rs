//! Promotion through `#[jit_interpreter]`: `hint!(e, promote)` on a run-time
//! value ends compilation in a flexswitch whose cases are compiled per value
//! seen; full switches and declined cases continue in the interpreter.
//!
//! Each test that asserts exact `jit::stats()` counts has a module of its
//! own (stats are per module), so tests running in parallel cannot disturb
//! each other's counts.

use jitgen::prelude::*;

/// The report's example (D08.2 section 3.3), with one module per test.
macro_rules! report_example {
    ($m:ident) => {
        // Each test calls the module's generating extension, not always `f`.
        #[allow(dead_code)]
        #[jit_interpreter]
        pub mod $m {
            use jitgen::prelude::*;

            pub fn f(a: i64, y: i64) -> i64 {
                let b = a / 10;
                let c = hint!(b, promote);
                let d = c + 5;
                d + y
            }
        }
    };
}

report_example!(ten);
report_example!(bound);
report_example!(million);

/// The listing of the piece compiled for `value` (the first switch that has
/// a case for it), from a `listing_with_cases` text.
fn case_listing(all: &str, value: i64) -> String {
    let line = all.lines().find(|l| l.trim_start().starts_with(&format!("case {value}: "))).expect("a case");
    let name = line.rsplit(' ').next().unwrap();
    let body = all.split(&format!("{name}:\n")).nth(1).expect("the piece's listing");
    // Up to the next header: a switch's or a piece's (block labels have
    // parameters in parentheses).
    let header = |l: &str| !l.starts_with(' ') && l.ends_with(':') && !l.contains('(');
    body.lines().take_while(|l| !header(l)).collect::<Vec<_>>().join("\n")
}

#[test]
fn one_case_per_value_seen_with_d_a_constant() {
    let r = ten::jit::specialize::f();
    // The entry computes b and switches on it; nothing after the promotion.
    assert!(r.listing().contains("flexswitch"), "{}", r.listing());
    assert!(!r.listing().contains("add"), "{}", r.listing());
    for a in 0..100 {
        assert_eq!(r.call(a, 1000), ten::jit::plain::f(a, 1000));
    }
    let s = ten::jit::stats();
    assert_eq!(s.flexswitches, 1);
    assert_eq!(s.flexswitch_cases, 10, "{s:?}");
    assert_eq!(s.flexswitch_misses, 10);
    assert_eq!(s.resumptions, 0);
    // Every case adds y to a constant: d = c + 5 folded at compile time.
    let case7 = case_listing(&r.listing_with_cases(), 7);
    assert!(case7.contains("const.i64 12"), "{case7}");
    assert_eq!(case7.matches(" = ").count(), 2, "a constant and one add: {case7}");
    // Values already seen go straight to their case.
    for a in (0..100).rev() {
        assert_eq!(r.call(a, -3), ten::jit::plain::f(a, -3));
    }
    let s2 = ten::jit::stats();
    assert_eq!(s2.flexswitch_misses, 10);
    assert_eq!(s2.compilations, s.compilations);
}

#[test]
fn past_its_bound_a_switch_continues_in_the_interpreter() {
    bound::jit::config().set_max_cases(3);
    let r = bound::jit::specialize::f();
    // The values that get cases are the first three seen; every arrival of
    // another value goes to the interpreter.
    let (mut cased, mut handed_over) = (vec![], 0);
    for a in -50..150 {
        assert_eq!(r.call(a, 7), bound::jit::plain::f(a, 7), "a = {a}");
        if !cased.contains(&(a / 10)) && cased.len() < 3 {
            cased.push(a / 10);
        }
        handed_over += u64::from(!cased.contains(&(a / 10)));
    }
    let s = bound::jit::stats();
    assert_eq!(s.flexswitch_cases, 3);
    assert_eq!(r.function().switches()[0].cases(), 3);
    assert_eq!(r.function().switches()[0].values(), cased.iter().map(|v| *v as u64).collect::<Vec<_>>());
    assert_eq!(s.resumptions, handed_over);
    assert!(handed_over > 150);
}

fn resident_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4
}

/// Runs one ignored test of this binary alone in a child process (resident
/// memory is the whole process's).
#[track_caller]
fn run_alone(test: &str) {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([&crate::common::test_path(test), "--exact", "--ignored", "--nocapture"])
        .status()
        .unwrap();
    assert!(status.success(), "{test} failed in its child process");
}

#[test]
fn a_million_distinct_values_in_bounded_memory() {
    run_alone("a_million_distinct_values_alone");
}

#[test]
#[ignore = "run by a_million_distinct_values_in_bounded_memory in a child process"]
fn a_million_distinct_values_alone() {
    million::jit::config().set_max_cases(8);
    let r = million::jit::specialize::f();
    // Warm up (allocator, first cases), then measure.
    for a in 0..10_000i64 {
        assert_eq!(r.call(a * 10, 1), a + 6);
    }
    let before = resident_kib();
    let mut sum = 0i64;
    for a in 10_000..1_000_000i64 {
        sum = sum.wrapping_add(r.call(a * 10, 1));
    }
    assert_eq!(sum, (10_000..1_000_000i64).map(|a| a + 6).sum::<i64>());
    let s = million::jit::stats();
    assert_eq!(s.flexswitch_cases, 8);
    assert_eq!(s.resumptions, 1_000_000 - 8);
    let grown = resident_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "resident memory grew by {grown} KiB");
}

#[jit_interpreter]
mod constant {
    use jitgen::prelude::*;

    pub fn g(a: i64) -> i64 {
        // Red (it depends on a run-time condition), yet a constant on
        // each path: the join after the `if` keeps both versions.
        let z = if a > 0 { 4 } else { 5 };
        let c = hint!(z, promote);
        c * a
    }
}

#[test]
fn promoting_a_compile_time_constant_emits_nothing() {
    // z is red: a run-time value in general, a constant on these paths.
    assert_eq!(constant::jit::graphs().function("g").unwrap().color_of("z"), Some(Color::Red));
    let r = constant::jit::specialize::g();
    assert!(!r.listing().contains("flexswitch"), "{}", r.listing());
    assert_eq!(r.call(9), constant::jit::plain::g(9));
    assert_eq!(r.call(-9), constant::jit::plain::g(-9));
    assert_eq!(constant::jit::stats().flexswitches, 0);
}

#[jit_interpreter]
mod instructions {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        Inc,
        Double,
        Loop,
        Halt,
    }

    /// A machine whose program is a `Vec` of the module's enum in a field,
    /// its instruction promoted (`hint!(self.code[self.ip], promote)`, as
    /// a struct VM is written): the tag is switched on, the variant known.
    pub struct Machine {
        pub code: Vec<Op>,
        pub ip: usize,
        pub acc: i64,
        pub n: i64,
    }

    impl Machine {
        pub fn run(&mut self) -> i64 {
            loop {
                hint!(global_merge_point);
                let op = hint!(self.code[self.ip], promote);
                self.ip += 1;
                match op {
                    Op::Inc => self.acc += 1,
                    Op::Double => self.acc = (self.acc * 2) & 0xffff,
                    Op::Loop => {
                        self.n -= 1;
                        if self.n > 0 {
                            self.ip = 0;
                        }
                    }
                    Op::Halt => return self.acc,
                }
            }
        }
    }
}

#[test]
fn an_enum_promoted_is_known_in_its_cases_and_agrees_with_plain() {
    use instructions::{Machine, Op};
    instructions::jit::config().set_threshold(0);
    let fresh = |code: &[Op], n: i64| Machine { code: code.to_vec(), ip: 0, acc: 0, n };
    let whole = |r: i64, m: Machine| (r, m.ip, m.acc, m.n);
    let mut rng = crate::common::Rng(0xe4a);
    let mut programs = vec![vec![Op::Inc, Op::Double, Op::Loop, Op::Halt]];
    for _ in 0..crate::common::how_many(100) {
        let mut code: Vec<Op> = (0..rng.below(6)).map(|_| [Op::Inc, Op::Double][rng.below(2) as usize]).collect();
        code.extend([Op::Loop, Op::Halt]);
        programs.push(code);
    }
    for code in &programs {
        let n = 1 + rng.below(300) as i64;
        let mut m = fresh(code, n);
        let want = whole(instructions::jit::plain::Machine::run(&mut m), m);
        let mut m = fresh(code, n);
        assert_eq!(whole(m.run(), m), want, "{code:?} {n}");
        let mut m = fresh(code, n);
        assert_eq!(whole(instructions::jit::specialize::Machine::run(&mut m), m), want, "{code:?} {n}");
    }
    let st = instructions::jit::stats();
    assert!(st.flexswitch_cases > 0 && st.declined == 0, "{st:?} {:?}", instructions::jit::last_decline());
}
