//! A heap of enum objects, as Rust VMs keep theirs: a `Vec` of an enum whose
//! variants hold structs inline, `Rc`s, a `Box<str>` and another enum,
//! matched through the `&Obj` a method returns. Compiled code reads each
//! object in place (its payloads by address) and fields through `Rc`s as
//! through shared references. Results and whole final states are compared
//! with `jit::plain`, through the portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod objects {
    use jitgen::prelude::*;
    use std::rc::Rc;

    /// A function's prototype, shared by its closures.
    pub struct Proto {
        pub arity: usize,
        pub consts: Vec<i64>,
    }

    /// A prototype and what it captured.
    pub struct Closure {
        pub proto: Rc<Proto>,
        pub captured: Vec<i64>,
    }

    /// A captured variable: still on the stack, or moved off it.
    pub enum Cell {
        Open(usize),
        Closed(i64),
    }

    /// An object of the heap.
    pub enum Obj {
        Name(Box<str>),
        Proto(Rc<Proto>),
        Closure(Closure),
        Cell(Cell),
    }

    /// The program and the heap it refers to (green: the program's data).
    pub struct Program {
        pub code: Vec<u8>,
        pub objects: Vec<Obj>,
    }

    impl Program {
        pub fn get(&self, r: usize) -> &Obj {
            &self.objects[r % self.objects.len()]
        }
    }

    /// What a run changes.
    pub struct Machine {
        pub stack: Vec<i64>,
        pub acc: i64,
    }

    /// The weight of an object, read through `&Obj`.
    fn weight(m: &Machine, o: &Obj) -> i64 {
        match o {
            Obj::Name(s) => s.len() as i64,
            Obj::Proto(p) => p.arity as i64 + p.consts[0],
            Obj::Closure(c) => c.captured[0] + c.proto.consts.len() as i64 * 100 + c.proto.arity as i64,
            Obj::Cell(Cell::Open(slot)) => match m.stack.get(*slot) {
                Some(v) => *v,
                None => -1,
            },
            Obj::Cell(Cell::Closed(v)) => *v,
        }
    }

    /// The size of an object: with a known object, known while compiling.
    fn size(o: &Obj) -> i64 {
        match o {
            Obj::Name(_) => 1,
            Obj::Proto(p) => (p.arity + p.consts.len()) as i64,
            Obj::Closure(c) => c.proto.arity as i64 * 10 + c.captured.len() as i64,
            Obj::Cell(_) => 2,
        }
    }

    /// Ops, each with one operand byte: 0 r mixes in the weight of object
    /// r, 1 mixes in the weight of the object the accumulator names (known
    /// only when running), 2 pushes the accumulator, 3 pops into it, 4
    /// counts down and loops while positive, 5 r adds the size of object r,
    /// else returns the accumulator.
    pub fn run(m: &mut Machine, prog: &Program, n: i64) -> i64 {
        let mut pc = 0;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let op = hint!(prog.code[pc], concrete);
            let arg = prog.code[pc + 1] as usize;
            pc += 2;
            match op {
                0 => {
                    let w = weight(m, prog.get(arg));
                    m.acc = m.acc.wrapping_mul(3).wrapping_add(w);
                }
                1 => {
                    let r = (m.acc & 0xff) as usize;
                    let w = weight(m, &prog.objects[r % prog.objects.len()]);
                    m.acc = m.acc.wrapping_mul(5).wrapping_add(w) & 0xffff_ffff;
                }
                2 => m.stack.push(m.acc),
                3 => {
                    if let Some(x) = m.stack.pop() {
                        m.acc = m.acc.wrapping_sub(x);
                    }
                }
                5 => m.acc += size(prog.get(arg)),
                4 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return m.acc,
            }
        }
    }
}

use objects::{Cell, Closure, Machine, Obj, Program, Proto};
use std::rc::Rc;

fn program(code: Vec<u8>) -> Program {
    let proto = Rc::new(Proto { arity: 2, consts: vec![7, 8, 9] });
    let other = Rc::new(Proto { arity: 5, consts: vec![-3] });
    Program {
        code,
        objects: vec![
            Obj::Name("fib".into()),
            Obj::Proto(proto.clone()),
            Obj::Closure(Closure { proto: proto.clone(), captured: vec![11, 12] }),
            Obj::Cell(Cell::Open(0)),
            Obj::Cell(Cell::Closed(-40)),
            Obj::Closure(Closure { proto: other.clone(), captured: vec![-6] }),
            Obj::Proto(other),
            Obj::Name("a longer name".into()),
            Obj::Cell(Cell::Open(3)),
        ],
    }
}

/// The whole final state: the result, the accumulator and the stack.
fn whole(r: i64, m: Machine) -> (i64, i64, Vec<i64>) {
    (r, m.acc, m.stack)
}

fn check(code: Vec<u8>, n: i64) {
    let prog = program(code);
    let fresh = || Machine { stack: vec![1, 2], acc: 0 };
    let mut m = fresh();
    let want = whole(objects::jit::plain::run(&mut m, &prog, n), m);
    let mut m = fresh();
    assert_eq!(whole(objects::run(&mut m, &prog, n), m), want, "{:?} {n}", prog.code);
    let mut m = fresh();
    let got = objects::jit::specialize::run(&prog).call(&mut m, n);
    assert_eq!(whole(got, m), want, "{:?} {n}", prog.code);
}

#[test]
fn objects_of_a_heap_are_matched_in_place_and_agree_with_plain() {
    objects::jit::config().set_threshold(0);
    let code = vec![0, 2, 0, 1, 2, 0, 0, 3, 1, 0, 0, 8, 3, 0, 0, 7, 0, 5, 0, 4, 4, 0, 9, 0];
    for n in [1i64, 2, 7, 50] {
        check(code.clone(), n);
    }
    assert!(objects::jit::left_to_rust().is_empty(), "{:?}", objects::jit::left_to_rust());
    assert!(objects::jit::stats().compilations > 0, "{:?}", objects::jit::last_decline());
    // An object known while compiling folds away, through its `Rc`s.
    let prog = program(vec![5, 2, 5, 1, 5, 5, 9, 0]);
    let listing = objects::jit::specialize::run(&prog).listing().to_string();
    let loads_only_the_machine = listing.lines().filter(|l| l.contains("load")).all(|l| l.contains(" v0+"));
    // (Where `+=` wraps, an optimized build, the three sizes add into one
    // constant; where it checks for overflow, each is added by itself.)
    let sizes = listing.contains("const.i64 51") || listing.contains("const.i64 78");
    assert!(!listing.contains("call") && loads_only_the_machine && sizes, "{listing}");
    // One known only when running is read in place by one helper, and
    // what its `Rc`s point to by loads, not calls (the names' lengths are
    // calls of Rust's own `len`).
    let prog = program(vec![1, 0, 9, 0]);
    let listing = objects::jit::specialize::run(&prog).listing().to_string();
    let calls: Vec<&str> = listing.lines().filter(|l| l.contains("call ")).collect();
    assert_eq!(calls.iter().filter(|l| l.contains("an enum in place")).count(), 1, "{listing}");
    assert!(calls.iter().all(|l| l.contains("an enum in place") || l.contains(".len()")), "{listing}");
}

#[test]
fn random_programs_over_a_heap_of_objects_agree_with_plain() {
    objects::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x0b1ec75);
    for _ in 0..crate::common::how_many(300) {
        let len = rng.below(10) as usize;
        let mut code = vec![];
        for _ in 0..len {
            code.push([0, 1, 2, 3, 5][rng.below(5) as usize]);
            code.push(rng.below(12) as u8);
        }
        code.extend([4, 0, 9, 0]);
        let n = rng.below(30) as i64 + 1;
        check(code, n);
    }
}
