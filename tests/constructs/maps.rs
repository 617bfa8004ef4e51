//! Maps as VMs keep them: globals in a `HashMap` keyed by a newtype of the
//! module and holding an enum of values, fields in a map with a hasher of
//! its own (an alias, as `FxHashMap<K, V>` is), a `BTreeMap`, and names in a
//! `HashMap<String, i64>`. Maps of scalars are virtual dicts in compiled
//! code; these are real objects whose methods are residual calls of Rust's
//! own, values read out by copy. Results and whole final states are
//! compared with `jit::plain`, through the portal and through
//! `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod globals {
    use jitgen::prelude::*;
    use std::collections::{BTreeMap, HashMap};

    /// A map with a hasher of its own, as `rustc_hash::FxHashMap` is.
    pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>>;

    /// An interned name.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
    pub struct Name(pub u32);

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Value {
        Nil,
        Num(i64),
        Flag(bool),
    }

    #[derive(Debug, PartialEq, Default)]
    pub struct Machine {
        pub globals: HashMap<Name, Value>,
        pub fields: FastMap<Name, Value>,
        pub order: BTreeMap<u8, i64>,
        pub named: HashMap<String, i64>,
        pub label: String,
        pub misses: u64,
    }

    impl Machine {
        /// Ops with an operand byte `k`: 0 defines global `k` as the
        /// counter, 1 adds global `k` (a miss counted), 2 removes it, 3
        /// adds whether it is defined, 4 copies global `k` into field `k`
        /// and adds the field's old number, 5 records the sum under the
        /// label and adds what was there, 6 orders the sum by `k` and adds
        /// how many are ordered, 7 loops while the counter stays positive,
        /// 8 adds the sum to global `k` in place (`get_mut`), 9 sets field
        /// `k` in place, else returns the sum.
        pub fn run(&mut self, code: &[u8], n: i64) -> i64 {
            let mut pc = 0;
            let mut acc = 0i64;
            let mut i = n;
            loop {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                let k = code[pc + 1];
                pc += 2;
                match op {
                    0 => {
                        let old = self.globals.insert(Name(k as u32), Value::Num(i));
                        if let Some(Value::Num(x)) = old {
                            acc += x & 7;
                        }
                    }
                    1 => match self.globals.get(&Name(k as u32)) {
                        Some(&Value::Num(x)) => acc = acc.wrapping_add(x),
                        Some(&Value::Flag(true)) => acc += 1,
                        Some(_) => {}
                        None => self.misses += 1,
                    },
                    2 => {
                        if self.globals.remove(&Name(k as u32)).is_none() {
                            self.globals.insert(Name(k as u32), Value::Flag(i % 2 == 0));
                        }
                    }
                    3 => acc += self.globals.contains_key(&Name(k as u32)) as i64,
                    4 => {
                        let name = Name(k as u32);
                        let v = self.globals.get(&name).copied().unwrap_or(Value::Nil);
                        if let Some(Value::Num(x)) = self.fields.insert(name, v) {
                            acc = acc.wrapping_add(x);
                        }
                        if let Some(Value::Nil) = self.fields.get(&name).copied() {
                            self.misses += 1;
                        }
                    }
                    5 => {
                        if let Some(&x) = self.named.get(&self.label) {
                            acc = acc.wrapping_add(x);
                        }
                        self.named.insert(self.label.clone(), acc & 0xffff);
                    }
                    6 => {
                        self.order.insert(k, acc);
                        acc += self.order.len() as i64;
                    }
                    7 => {
                        i -= 1;
                        if i > 0 {
                            pc = 0;
                        }
                    }
                    8 => match self.globals.get_mut(&Name(k as u32)) {
                        Some(slot) => {
                            if let Value::Num(x) = *slot {
                                *slot = Value::Num(x.wrapping_add(acc & 0xff));
                            } else {
                                *slot = Value::Num(1);
                            }
                        }
                        None => self.misses += 2,
                    },
                    9 => {
                        if let Some(v) = self.fields.get_mut(&Name(k as u32)) {
                            *v = Value::Flag(acc % 3 == 0);
                        }
                    }
                    _ => return acc,
                }
            }
        }
    }
}

use globals::{jit, Machine, Name, Value};

fn machine() -> Machine {
    let mut m = Machine { label: "sum".to_string(), ..Machine::default() };
    m.globals.insert(Name(1), Value::Num(40));
    m.globals.insert(Name(2), Value::Flag(true));
    m.named.insert("sum".to_string(), 5);
    m
}

fn check(code: &[u8], n: i64) {
    let mut plain = machine();
    let want = jit::plain::Machine::run(&mut plain, code, n);
    let mut m = machine();
    assert_eq!(m.run(code, n), want, "{code:?} {n}");
    assert_eq!(m, plain, "{code:?} {n}");
    let mut m = machine();
    assert_eq!(jit::specialize::Machine::run(&mut m, code, n), want, "{code:?} {n}");
    assert_eq!(m, plain, "{code:?} {n}");
}

#[test]
fn maps_of_objects_are_residual_calls_and_agree_with_plain() {
    jit::config().set_threshold(0);
    let code = [0, 3, 1, 3, 1, 1, 1, 2, 1, 9, 2, 3, 3, 3, 4, 1, 4, 9, 5, 0, 6, 4, 8, 1, 8, 5, 9, 1, 7, 0, 10, 0];
    for n in [1, 2, 30] {
        check(&code, n);
    }
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    assert_eq!(jit::stats().declined, 0, "{:?}", jit::last_decline());
    let listing = jit::portal_listings().join("\n");
    for call in ["insert", "get", "remove", "contains_key", "len"] {
        assert!(listing.contains(call), "{call}: {listing}");
    }
}

#[test]
fn random_programs_on_maps_of_objects_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x3a95);
    for _ in 0..crate::common::how_many(200) {
        let len = rng.below(10) as usize;
        let mut code: Vec<u8> = vec![];
        for _ in 0..len {
            code.extend([rng.below(10) as u8, rng.below(4) as u8]);
        }
        code.extend([7, 0, 10, 0]);
        check(&code, 1 + rng.below(20) as i64);
    }
}
