//! A VM whose locals are a fixed array of its value enum (`locals: [Value;
//! 8]` in `self`), as a new user writes one: `self.locals[slot] = v` and
//! `let v = self.locals[slot]` read and write the enum's tag and payload in
//! place, as an element of a `Vec` of enums is. Before, each access ran as
//! a residual call of Rust ("an element of this type through a run-time
//! pointer"), and the code was no faster than interpreting. Whole final
//! states are compared with `jit::plain`, on random programs too.

#[jitgen::jit_interpreter]
pub mod enum_arrays {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub enum Value {
        Int(i64),
        Bool(bool),
        Pair(u8, i32),
        #[default]
        Nil,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        Push(i64),
        Flag(bool),
        Pair(u8, i32),
        Add,
        Less,
        Load(u8),
        Store(u8),
        JumpUnless(usize),
        Jump(usize),
        Halt,
    }

    #[derive(Debug, Default, PartialEq)]
    pub struct Vm {
        pub stack: Vec<Value>,
        pub locals: [Value; 8],
        pub fuel: u32,
    }

    impl Vm {
        fn pop(&mut self) -> Result<Value, String> {
            self.stack.pop().ok_or_else(|| String::from("stack underflow"))
        }

        pub fn run(&mut self, code: &[Op]) -> Result<Value, String> {
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                if self.fuel == 0 {
                    return Err("out of fuel".into());
                }
                self.fuel -= 1;
                match hint!(code[pc], concrete) {
                    Op::Push(v) => self.stack.push(Value::Int(v)),
                    Op::Flag(b) => self.stack.push(Value::Bool(b)),
                    Op::Pair(a, b) => self.stack.push(Value::Pair(a, b)),
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(match (a, b) {
                            (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_add(b)),
                            (Value::Pair(a, x), Value::Int(b)) => Value::Pair(a, x.wrapping_add(b as i32)),
                            _ => return Err(format!("cannot add {a:?} and {b:?}")),
                        });
                    }
                    Op::Less => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let (Value::Int(a), Value::Int(b)) = (a, b) else { return Err("compare ints".into()) };
                        self.stack.push(Value::Bool(a < b));
                    }
                    Op::Load(slot) => {
                        let v = self.locals[usize::from(slot)];
                        self.stack.push(v);
                    }
                    Op::Store(slot) => {
                        let v = self.pop()?;
                        self.locals[slot as usize] = v;
                    }
                    Op::JumpUnless(t) => {
                        if let Value::Bool(false) | Value::Nil = self.pop()? {
                            pc = t;
                            continue;
                        }
                    }
                    Op::Jump(t) => {
                        pc = t;
                        continue;
                    }
                    Op::Halt => return Ok(self.stack.last().copied().unwrap_or_default()),
                }
                pc += 1;
            }
        }
    }
}

use enum_arrays::Op::{self, *};
use enum_arrays::Vm;

/// The result and the whole machine, through `jit::plain`, the portal and
/// `jit::specialize`: the same.
fn check(code: &[Op], fuel: u32) -> String {
    let whole = |run: fn(&mut Vm, &[Op]) -> Result<enum_arrays::Value, String>| {
        let (r, vm) = crate::common::whole(Vm { fuel, ..Vm::default() }, |vm| run(vm, code));
        format!("{r:?} {vm}")
    };
    let want = whole(enum_arrays::jit::plain::Vm::run);
    assert_eq!(whole(Vm::run), want, "portal {code:?}");
    assert_eq!(whole(enum_arrays::jit::specialize::Vm::run), want, "specialize {code:?}");
    want
}

#[test]
fn an_array_of_enums_is_read_and_written_in_place_and_agrees_with_plain() {
    // s = 0; i = 100; while 0 < i { s = s + i; i = i + -1 }; s, in locals
    // 0 and 1; local 2 a pair counted up beside them.
    let sum = [
        Push(0),
        Store(0),
        Push(100),
        Store(1),
        Pair(7, -3),
        Store(2),
        Push(0),
        Load(1),
        Less,
        JumpUnless(23),
        Load(0),
        Load(1),
        Add,
        Store(0),
        Load(1),
        Push(-1),
        Add,
        Store(1),
        Load(2),
        Push(2),
        Add,
        Store(2),
        Jump(6),
        Load(2),
        Load(0),
        Halt,
    ];
    enum_arrays::jit::config().set_threshold(0);
    assert!(check(&sum, 10_000).starts_with("Ok(Int(5050))"));
    let s = enum_arrays::jit::stats();
    assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", enum_arrays::jit::last_decline());
    // No access of the array runs as Rust.
    let left = enum_arrays::jit::left_to_rust();
    assert!(left.iter().all(|l| !l.starts_with("Vm::run")), "{left:?}");
    let mut rng = crate::common::Rng(0xa77a_e5);
    let mut outcomes = [0usize; 2];
    for threshold in [0, 3] {
        enum_arrays::jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(300) {
            let len = 3 + rng.below(24) as usize;
            let mut c = vec![Push(5), Pair(1, i32::MAX), Store(3)];
            while c.len() < len {
                let to = rng.below(len as u64 + 1) as usize;
                c.push(match rng.below(12) {
                    0 => Push(rng.below(9) as i64 - 4),
                    1 => Flag(rng.below(2) == 0),
                    2 => Pair(rng.below(3) as u8, rng.below(5) as i32 - 2),
                    3 => Add,
                    4 => Less,
                    5 | 6 => Load(rng.below(8) as u8),
                    7 | 8 => Store(rng.below(8) as u8),
                    9 => JumpUnless(to),
                    10 => Jump(to),
                    _ => Halt,
                });
            }
            c.push(Halt);
            outcomes[usize::from(check(&c, 300).starts_with("Err"))] += 1;
        }
    }
    // Values and errors both come back.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
