//! Values holding a `Copy` newtype handle (`Value::Obj(Handle)`, a
//! `Handle(u32)` into a heap, as Lox's `ObjRef` and most Rust VMs' object
//! handles are), and a struct of two scalars as a payload: the enum is plain
//! (its handle is words of the value, not an address into the place it was
//! read from), so it is pushed, popped, copied out of a `Vec` that is then
//! overwritten, kept in a map by Rust's own calls (as a value, and a handle
//! read out of a map by copy), read from the program's constants and
//! matched. Whole final states are compared with `jit::plain`,
//! through the portal and through `jit::specialize`, on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod handles {
    use jitgen::prelude::*;
    use std::collections::HashMap;

    /// An object's handle: an index into the heap.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Handle(pub u32);

    /// A span of the heap, as a payload of two fields.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Span {
        pub start: u16,
        pub len: u16,
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Value {
        Nil,
        Num(i64),
        Obj(Handle),
        Range(Span),
    }

    pub struct Vm {
        /// The program: pairs (op, k).
        pub code: Vec<u8>,
        /// Constants the program names by index.
        pub consts: Vec<Value>,
        pub stack: Vec<Value>,
        /// The objects' weights.
        pub heap: Vec<i64>,
        pub globals: HashMap<Handle, Value>,
        /// Links between objects: handles read out of a map by copy.
        pub links: HashMap<Handle, Handle>,
        pub fuel: u32,
    }

    impl Vm {
        fn pop(&mut self) -> Value {
            self.stack.pop().unwrap_or(Value::Nil)
        }

        fn weight(&self, v: Value) -> i64 {
            match v {
                Value::Nil => 0,
                Value::Num(n) => n,
                Value::Obj(h) => self.heap.get(h.0 as usize).copied().unwrap_or(-1),
                Value::Range(s) => s.start as i64 * 100 + s.len as i64,
            }
        }

        /// Ops (op, k): 0 pushes constant k; 1 pushes a new object of
        /// weight k; 2 adds the weights of the top two; 3 sets global
        /// (constant k names it, an object) to the top; 4 pushes global k;
        /// 5 pushes whether the top two are the same object; 6 copies slot
        /// k to the top; 7 overwrites slot k with nil, after copying it out
        /// (the copy is pushed); 8 pushes a range of the top's handle and
        /// k; 9 jumps to pair k while fuel lasts; 10 swaps the top two; 11
        /// links the top's object to constant k's; 12 pushes the object the
        /// top's is linked to.
        pub fn run(&mut self) -> i64 {
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                let at = hint!(pc, concrete);
                if at + 1 >= self.code.len() || self.fuel == 0 {
                    return self.stack.len() as i64;
                }
                self.fuel -= 1;
                let op = self.code[at];
                let k = self.code[at + 1] as usize;
                pc = at + 2;
                match op {
                    0 => {
                        let v = self.consts[k % self.consts.len()];
                        self.stack.push(v);
                    }
                    1 => {
                        self.heap.push(k as i64);
                        let h = Handle(self.heap.len() as u32 - 1);
                        self.stack.push(Value::Obj(h));
                    }
                    2 => {
                        let b = self.pop();
                        let a = self.pop();
                        let w = self.weight(a) + self.weight(b);
                        self.stack.push(Value::Num(w));
                    }
                    3 => {
                        if let Value::Obj(name) = self.consts[k % self.consts.len()] {
                            let v = self.stack.last().copied().unwrap_or(Value::Nil);
                            self.globals.insert(name, v);
                        }
                    }
                    4 => {
                        let v = match self.consts[k % self.consts.len()] {
                            Value::Obj(name) => self.globals.get(&name).copied().unwrap_or(Value::Nil),
                            other => other,
                        };
                        self.stack.push(v);
                    }
                    5 => {
                        let b = self.pop();
                        let a = self.pop();
                        let same = match (a, b) {
                            (Value::Obj(x), Value::Obj(y)) => x == y,
                            _ => false,
                        };
                        self.stack.push(Value::Num(same as i64));
                    }
                    6 => {
                        if k < self.stack.len() {
                            let v = self.stack[k];
                            self.stack.push(v);
                        }
                    }
                    7 => {
                        if k < self.stack.len() {
                            let v = self.stack[k];
                            self.stack[k] = Value::Nil;
                            self.stack.push(v);
                        }
                    }
                    8 => {
                        let v = self.pop();
                        if let Value::Obj(h) = v {
                            self.stack.push(Value::Range(Span { start: h.0 as u16, len: k as u16 }));
                        }
                    }
                    9 => pc = (k * 2) % self.code.len(),
                    10 => {
                        let n = self.stack.len();
                        if n >= 2 {
                            self.stack.swap(n - 1, n - 2);
                        }
                    }
                    11 => {
                        let top = self.stack.last().copied().unwrap_or(Value::Nil);
                        if let (Value::Obj(a), Value::Obj(b)) = (top, self.consts[k % self.consts.len()]) {
                            self.links.insert(a, b);
                        }
                    }
                    12 => {
                        if let Some(Value::Obj(a)) = self.stack.last().copied() {
                            if let Some(&b) = self.links.get(&a) {
                                self.stack.push(Value::Obj(b));
                            }
                        }
                    }
                    _ => return -1,
                }
            }
        }
    }
}

use handles::{jit, Handle, Value, Vm};

fn fresh(code: &[u8], fuel: u32) -> Vm {
    let consts = vec![Value::Obj(Handle(0)), Value::Num(7), Value::Obj(Handle(1)), Value::Nil, Value::Obj(Handle(2))];
    let (globals, links) = Default::default();
    Vm { code: code.to_vec(), consts, stack: vec![], heap: vec![3, 5, 8], globals, links, fuel }
}

/// The result and the whole final state (globals in key order).
fn whole(r: i64, vm: &Vm) -> String {
    let mut globals: Vec<_> = vm.globals.iter().collect();
    globals.sort_by_key(|(h, _)| h.0);
    let mut links: Vec<_> = vm.links.iter().collect();
    links.sort_by_key(|(h, _)| h.0);
    format!("{r} {:?} {:?} {globals:?} {links:?} {}", vm.stack, vm.heap, vm.fuel)
}

fn check(code: &[u8], fuel: u32) {
    let mut vm = fresh(code, fuel);
    let want = whole(jit::plain::Vm::run(&mut vm), &vm);
    let mut vm = fresh(code, fuel);
    assert_eq!(whole(vm.run(), &vm), want, "portal {code:?} {fuel}");
    let mut vm = fresh(code, fuel);
    assert_eq!(whole(jit::specialize::Vm::run(&mut vm), &vm), want, "specialize {code:?} {fuel}");
}

#[test]
fn values_holding_handles_are_plain_and_compile() {
    jit::config().set_threshold(0);
    // Objects made, named as globals, read back, compared, copied out of
    // slots that are then overwritten, turned into ranges; a loop.
    let code = [1u8, 4, 3, 0, 4, 0, 1, 9, 5, 0, 0, 2, 6, 0, 7, 0, 11, 2, 12, 0, 8, 3, 2, 0, 10, 0, 4, 2, 9, 0];
    for fuel in [1u32, 4, 9, 13, 60] {
        check(&code, fuel);
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    assert!(jit::last_decline().is_none(), "{:?}", jit::last_decline());
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
}

#[test]
fn random_programs_over_values_holding_handles_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x4a_d1e);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(14, 13);
        check(&code, 1 + rng.below(80) as u32);
    }
}

/// A handle some code writes through a payload binding (`h.0 += k` in a
/// `&mut` match): not held as words, where a write to the binding would be
/// lost, but by address, and the module agrees with plain.
#[jit_interpreter]
mod written {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Slot(pub u32);

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Value {
        Nil,
        Obj(Slot),
    }

    /// Ops (op, k): 0 pushes `Obj(k)`; 1 adds k to the handle in slot 0
    /// in place, and 2k to the one on top, popped and pushed again; 2 pushes a copy of slot 0; else pushes nil.
    pub fn run(code: &[u8], stack: &mut Vec<Value>) -> usize {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let at = hint!(pc, concrete);
            if at + 1 >= code.len() {
                return stack.len();
            }
            let (op, k) = (code[at], code[at + 1] as u32);
            pc = at + 2;
            match op {
                0 => stack.push(Value::Obj(Slot(k))),
                1 => {
                    if let Some(Value::Obj(h)) = stack.first_mut() {
                        h.0 += k;
                    }
                    let mut top = stack.pop().unwrap_or(Value::Nil);
                    if let Value::Obj(h) = &mut top {
                        h.0 += 2 * k;
                    }
                    stack.push(top);
                }
                2 => {
                    if let Some(&v) = stack.first() {
                        stack.push(v);
                    }
                }
                _ => stack.push(Value::Nil),
            }
        }
    }
}

/// `written::run` on `code` agrees with plain through the portal (its
/// `Value` holds a handle by address, so it is not plain: compiled code
/// declines at its pushes, and `jit::specialize` would panic).
fn check_written(code: &[u8]) {
    let (mut want, mut got) = (vec![], vec![]);
    let r = written::jit::plain::run(code, &mut want);
    assert_eq!((written::run(code, &mut got), &got), (r, &want), "{code:?}");
}

#[test]
fn a_handle_written_in_place_agrees_with_plain() {
    written::jit::config().set_threshold(0);
    check_written(&[0, 1, 1, 2, 2, 0]);
    check_written(&[0, 3, 0, 1, 1, 1, 2, 0, 1, 3, 2, 0]);
    let mut rng = crate::common::Rng(0x5107);
    for _ in 0..crate::common::how_many(100) {
        let code: Vec<u8> = (0..2 * (1 + rng.below(10))).map(|_| rng.below(4) as u8).collect();
        check_written(&code);
    }
}
