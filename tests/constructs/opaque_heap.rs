//! A heap of objects behind a type whose fields are private (so the analysis
//! models it as an opaque object, as Lox's `Heap` is): its `get` and
//! `get_mut` hand out `&Obj` and `&mut Obj`, which compiled code holds as
//! addresses and matches in place, and accessors hand out `&i64`, `&Ref`
//! and `&Made` (a struct holding a `Vec`), read where they are; and values whose `==` is written by hand
//! (numbers as `f64`s, objects by handle), compared by Rust's own `==`.
//! Whole final states are compared with `jit::plain`, through the portal and
//! through `jit::specialize`, on random programs.

use jitgen::prelude::*;

/// An object's handle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ref(pub u32);

/// A value: `==` is Lox's (see the impl).
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Nil,
    Num(f64),
    Obj(Ref),
}

impl PartialEq for Value {
    /// Numbers by value (NaN differs from itself), objects by handle, and
    /// `Nil` equals only itself.
    fn eq(&self, other: &Value) -> bool {
        match (*self, *other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Num(a), Value::Num(b)) => a == b,
            (Value::Obj(a), Value::Obj(b)) => a == b,
            _ => false,
        }
    }
}

/// A heap object.
#[derive(Clone, Debug, PartialEq)]
pub enum Obj {
    /// A cell holding a value.
    Cell(Value),
    /// A name.
    Name(String),
    /// A pair of counts.
    Pair(i64, i64),
}

/// What a heap has made: a struct of the module that is not a value.
#[derive(Debug, Default, PartialEq)]
pub struct Made {
    pub names: Vec<String>,
    pub pairs: i64,
}

/// The objects; its field is private, so jitgen calls its methods as they are.
#[derive(Debug, Default, PartialEq)]
pub struct Heap {
    objects: Vec<Obj>,
    /// How many objects were allocated.
    allocated: i64,
    /// The newest object.
    newest: Ref,
    made: Made,
}

impl Heap {
    pub fn alloc(&mut self, o: Obj) -> Ref {
        match &o {
            Obj::Name(s) => self.made.names.push(s.clone()),
            Obj::Pair(..) => self.made.pairs += 1,
            Obj::Cell(_) => {}
        }
        self.objects.push(o);
        self.allocated += 1;
        self.newest = Ref(self.objects.len() as u32 - 1);
        self.newest
    }

    /// A count, by reference: read out where it is.
    pub fn allocated(&self) -> &i64 {
        &self.allocated
    }

    /// A struct, by reference: reached where it is.
    pub fn made(&self) -> &Made {
        &self.made
    }

    /// A handle, by reference: read out where it is.
    pub fn newest(&self) -> &Ref {
        &self.newest
    }

    pub fn get(&self, r: Ref) -> &Obj {
        &self.objects[r.0 as usize % self.objects.len()]
    }

    pub fn get_mut(&mut self, r: Ref) -> &mut Obj {
        let n = self.objects.len();
        &mut self.objects[r.0 as usize % n]
    }
}

#[jit_interpreter]
mod heap_vm {
    use super::{Heap, Made, Obj, Ref, Value};
    use jitgen::prelude::*;

    pub struct Vm {
        /// Pairs (op, k).
        pub code: Vec<u8>,
        pub stack: Vec<Value>,
        pub heap: Heap,
        pub fuel: u32,
    }

    impl Vm {
        fn pop(&mut self) -> Value {
            self.stack.pop().unwrap_or(Value::Nil)
        }

        /// What the object `r` weighs.
        fn weight(&self, r: Ref) -> f64 {
            match self.heap.get(r) {
                Obj::Cell(Value::Num(n)) => *n,
                Obj::Cell(_) => -1.0,
                Obj::Name(s) => s.len() as f64,
                Obj::Pair(a, b) => (*a + *b) as f64,
            }
        }

        /// Ops (op, k): 0 pushes k; 1 pushes a new cell holding the top;
        /// 2 pushes a new pair (k, k + 1); 3 replaces an object on top by
        /// its weight; 4 pushes whether the top two are `==`; 5 writes the
        /// top below it into the cell below (or bumps a pair's first count
        /// by k); 6 reads a cell's value onto the stack; 7 pushes NaN; 8
        /// pushes a name of k letters; 9 jumps to pair k while fuel lasts; 10
        /// pushes how many objects were made; 11 pushes the newest; 12
        /// pushes how many pairs and names were made.
        pub fn run(&mut self) -> usize {
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                let at = hint!(pc, concrete);
                if at + 1 >= self.code.len() || self.fuel == 0 {
                    return self.stack.len();
                }
                self.fuel -= 1;
                let op = self.code[at];
                let k = self.code[at + 1];
                pc = at + 2;
                match op {
                    0 => self.stack.push(Value::Num(k as f64)),
                    1 => {
                        let v = self.stack.last().copied().unwrap_or(Value::Nil);
                        let r = self.heap.alloc(Obj::Cell(v));
                        self.stack.push(Value::Obj(r));
                    }
                    2 => {
                        let r = self.heap.alloc(Obj::Pair(k as i64, k as i64 + 1));
                        self.stack.push(Value::Obj(r));
                    }
                    3 => {
                        if let Some(Value::Obj(r)) = self.stack.last().copied() {
                            let w = self.weight(r);
                            self.pop();
                            self.stack.push(Value::Num(w));
                        }
                    }
                    4 => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push(Value::Num(if a == b { 1.0 } else { 0.0 }));
                    }
                    5 => {
                        let v = self.pop();
                        if let Some(Value::Obj(r)) = self.stack.last().copied() {
                            match self.heap.get_mut(r) {
                                Obj::Cell(c) => *c = v,
                                Obj::Pair(a, _) => *a += k as i64,
                                Obj::Name(_) => {}
                            }
                        }
                    }
                    6 => {
                        if let Some(Value::Obj(r)) = self.stack.last().copied() {
                            if let Obj::Cell(v) = self.heap.get(r) {
                                let v = *v;
                                self.stack.push(v);
                            }
                        }
                    }
                    7 => self.stack.push(Value::Num(f64::NAN)),
                    8 => {
                        let r = self.heap.alloc(Obj::Name("x".repeat(k as usize)));
                        self.stack.push(Value::Obj(r));
                    }
                    9 => pc = (k as usize * 2) % self.code.len(),
                    10 => {
                        let n = *self.heap.allocated();
                        self.stack.push(Value::Num(n as f64));
                    }
                    11 => {
                        let r = *self.heap.newest();
                        self.stack.push(Value::Obj(r));
                    }
                    12 => {
                        let m: &Made = self.heap.made();
                        let n = m.pairs * 100 + m.names.len() as i64;
                        self.stack.push(Value::Num(n as f64));
                    }
                    _ => return usize::MAX,
                }
            }
        }
    }
}

use heap_vm::{jit, Vm};

fn fresh(code: &[u8], fuel: u32) -> Vm {
    let mut heap = Heap::default();
    heap.alloc(Obj::Pair(1, 2));
    Vm { code: code.to_vec(), stack: vec![], heap, fuel }
}

/// The result and the whole final state (NaN written as its bits).
fn whole(r: usize, vm: &Vm) -> String {
    let stack: Vec<String> = vm
        .stack
        .iter()
        .map(|v| match v {
            Value::Num(n) => format!("Num({:x})", n.to_bits()),
            other => format!("{other:?}"),
        })
        .collect();
    format!("{r} {stack:?} {:?} {}", vm.heap, vm.fuel)
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
fn objects_behind_an_opaque_heap_are_matched_in_place() {
    jit::config().set_threshold(0);
    // Cells made, read, written and weighed; pairs bumped; names; values
    // compared (NaN with itself, a cell with itself); a loop.
    let code = [
        0u8, 3, 1, 0, 6, 0, 4, 0, 2, 5, 0, 9, 5, 2, 3, 0, 7, 0, 7, 0, 4, 0, 8, 3, 10, 0, 11, 0, 12, 0, 3, 0, 1, 0, 1,
        0, 4, 0, 9, 0,
    ];
    for fuel in [1u32, 5, 9, 14, 60] {
        check(&code, fuel);
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    assert!(jit::last_decline().is_none(), "{:?}", jit::last_decline());
    // Writes through `get_mut`'s payload bindings are outlined; the reads
    // of the heap are compiled.
    let left = jit::left_to_rust();
    assert!(left.iter().all(|l| l.contains("(outlined)")), "{left:?}");
}

#[test]
fn random_programs_over_an_opaque_heap_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x0b_1ec7);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(16, 13);
        check(&code, 1 + rng.below(80) as u32);
    }
}
