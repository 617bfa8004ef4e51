//! Types defined outside the annotated module, as interpreters keep their
//! values beside their VM: the macro reads them from this file, models the
//! enum, and calls its method as Rust's own. Results are compared with
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
    /// The value's weight: a method of this module, called from compiled
    /// code, never inlined.
    pub fn weight(self) -> i64 {
        match self {
            Value::Int(n) => n,
            Value::Pair(a, b) => a as i64 + b as i64,
            Value::Nothing => 0,
        }
    }
}

#[jit_interpreter]
mod machine {
    use super::Value;
    use jitgen::prelude::*;

    /// Ops: 0 adds the counter, 1 makes a pair, 2 doubles the weight, 3
    /// forgets, 4 counts down, 5 loops while positive, else returns the
    /// weight.
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
                2 => acc = Value::Int(acc.weight().wrapping_mul(2)),
                3 => acc = Value::Nothing,
                4 => i -= 1,
                5 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc.weight(),
            }
        }
    }
}

fn check(code: &[u8], n: i64) {
    let want = machine::jit::plain::run(code, n);
    assert_eq!(machine::run(code, n), want, "{code:?} {n}");
    assert_eq!(machine::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn an_enum_of_another_module_is_modeled_and_its_method_called() {
    machine::jit::config().set_threshold(0);
    for n in [0i64, 1, 9, 300] {
        check(&[0, 1, 0, 2, 4, 5, 9], n);
    }
    assert!(machine::jit::stats().compilations > 0, "{:?}", machine::jit::left_to_rust());
    assert!(machine::jit::left_to_rust().is_empty(), "{:?}", machine::jit::left_to_rust());
    let g = machine::jit::graphs();
    let run = g.function("run").expect("the portal analyzed at run time too");
    assert!(run.to_text().contains("call_opaque Value::weight"), "{}", run.to_text());
}

#[test]
fn random_programs_over_values_of_another_module_agree_with_plain() {
    machine::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xe47e_12a1);
    for _ in 0..crate::common::how_many(400) {
        let mut code: Vec<u8> = (0..rng.below(8)).map(|_| rng.below(4) as u8).collect();
        code.extend([4, 5, 9]);
        check(&code, rng.below(40) as i64);
    }
}
