//! Virtual lists: `Vec`s made while compiling stay red boxes (push, pop,
//! len and compile-time indices emit nothing), forced where their shape is
//! lost; a portal's own `Vec` locals live in registers inside residual code.
//! Every result is compared with `jit::plain`.

use crate::common;
use tlr_interp as interp;

use common::cyclic_blocks;

use jitgen::prelude::*;

#[jit_interpreter]
mod lists {
    use jitgen::prelude::*;

    /// A little stack machine's worth of pushes and pops.
    pub fn stack_ops(a: i64, b: i64) -> i64 {
        let mut s: Vec<i64> = Vec::new();
        s.push(a);
        s.push(b);
        s.push(a + b);
        let x = s.pop().unwrap();
        let y = s.pop().unwrap();
        s.push(x * y);
        let n = s.len() as i64;
        s[0] = s[0] + n;
        s[0] + s[1]
    }

    /// A list indexed at a run-time position: it must exist in memory.
    pub fn indexed(i: usize, a: i64) -> i64 {
        let mut v = vec![0i64; 4];
        v[1] = a;
        v[i] = v[i] + 7;
        v[0] + v[1] + v[2] + v[3]
    }

    /// A list that grows in a loop run at compile time (green bound).
    pub fn grow(a: i64) -> i64 {
        let mut v: Vec<i64> = Vec::new();
        let mut k = 0;
        while k < 10 {
            hint!(k, concrete);
            v.push(a + k);
            k += 1;
        }
        let mut sum = 0;
        while let Some(x) = v.pop() {
            sum += x;
        }
        sum
    }
}

#[test]
fn a_push_pop_sequence_emits_no_list_operations() {
    let r = lists::jit::specialize::stack_ops();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load") && !listing.contains("store"), "{listing}");
    for (a, b) in [(1, 2), (-5, 9), (0, 0), (1 << 20, 3)] {
        assert_eq!(r.call(a, b), lists::jit::plain::stack_ops(a, b));
    }
}

#[test]
fn a_run_time_index_forces_the_list() {
    let r = lists::jit::specialize::indexed();
    let listing = r.listing();
    assert!(listing.contains("call vec_new_repeat"), "{listing}");
    for i in 0..4 {
        assert_eq!(r.call(i, 5), lists::jit::plain::indexed(i, 5));
    }
    // Out of bounds: the same panic as the interpreter's.
    let jit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.call(9, 5))).unwrap_err();
    let plain = std::panic::catch_unwind(|| lists::jit::plain::indexed(9, 5)).unwrap_err();
    let msg = |p: &Box<dyn std::any::Any + Send>| {
        p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
    };
    assert_eq!(msg(&jit), msg(&plain));
}

#[test]
fn a_list_grown_and_emptied_at_compile_time_leaves_arithmetic_only() {
    let r = lists::jit::specialize::grow();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load"), "{listing}");
    for a in [0, 3, -100] {
        assert_eq!(r.call(a), lists::jit::plain::grow(a));
    }
}

const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

/// In a child process: it reads TLR's compiled code and counters, which
/// other modules' tests add to in this process.
#[test]
fn tlr_registers_live_in_registers_inside_the_portals_loop() {
    assert!(crate::common::run_child("child_tlr_registers_live_in_registers_inside_the_portals_loop", None));
}

#[test]
#[ignore = "run by tlr_registers_live_in_registers_inside_the_portals_loop in a child process"]
fn child_tlr_registers_live_in_registers_inside_the_portals_loop() {
    use interp::tlr::{self, jit};
    jit::config().set_threshold(100);
    for a in [3, 1000, 25] {
        assert_eq!(tlr::interpret(SQUARE, a), jit::plain::interpret(SQUARE, a));
    }
    // Compiled at the loop's head, where `regs` comes from the interpreter:
    // its elements are loaded once at entry, then kept in registers.
    let listings = jit::portal_listings();
    assert!(!listings.is_empty());
    let loops: Vec<String> = listings.iter().flat_map(|l| cyclic_blocks(l)).collect();
    assert!(!loops.is_empty(), "{listings:?}");
    for body in &loops {
        assert!(!body.contains("load") && !body.contains("store") && !body.contains("call"), "{body}");
    }
}

#[jit_interpreter]
mod objects {
    pub struct Obj {
        pub x: i64,
        pub y: i64,
    }

    /// `obj = MyClass(); obj.x = v; ... obj.x` (the report's example).
    pub fn field_roundtrip(v: i64, w: i64) -> i64 {
        let mut obj = Obj { x: 0, y: 1 };
        obj.x = v;
        let r = &mut obj;
        r.y = r.y + w;
        let b = Box::new(Obj { x: obj.x * 2, y: 3 });
        obj.x + obj.y + b.x + b.y
    }

    fn sum(o: &Obj) -> i64 {
        o.x + o.y
    }

    fn bump(o: &mut Obj, by: i64) {
        o.x += by;
    }

    /// Objects passed to inlined functions, by shared and mutable reference.
    pub fn through_calls(v: i64) -> i64 {
        let mut o = Obj { x: v, y: 10 };
        bump(&mut o, 5);
        let alias = &mut o;
        bump(alias, 1);
        sum(&o)
    }

    /// Takes `&mut`: the object escapes into it (a struct of scalars
    /// passed by `&` goes as its fields' words, and stays virtual).
    #[jit_opaque]
    fn peek(o: &mut Obj) -> i64 {
        o.x - o.y
    }

    /// Reads through `&` only.
    #[jit_opaque]
    fn look(o: &Obj) -> i64 {
        o.x * 3 - o.y
    }

    /// An object a call only reads (`&`): its fields are the call's
    /// arguments, and it is never allocated.
    pub fn read_only(v: i64) -> i64 {
        let mut o = Obj { x: v, y: 2 };
        let before = look(&o);
        o.y = 7;
        before + look(&o) + o.y
    }

    /// An object that escapes on one side of a branch only: at the join,
    /// the other side's virtual object is forced, and both share the code
    /// after it.
    pub fn join(c: i64, v: i64) -> i64 {
        let mut o = Obj { x: v, y: 1 };
        let mut seen = 0;
        if c > 0 {
            seen = peek(&mut o);
        }
        o.y = o.y + seen;
        o.x + o.y
    }

    /// An object that escapes into a call that is not inlined: forced there,
    /// and memory is the truth after that.
    pub fn escapes(v: i64) -> i64 {
        let mut o = Obj { x: v, y: 2 };
        let before = peek(&mut o);
        o.y = 7;
        before + peek(&mut o) + o.y
    }
}

#[test]
fn field_writes_and_reads_on_a_new_object_emit_nothing() {
    let r = objects::jit::specialize::field_roundtrip();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load") && !listing.contains("store"), "{listing}");
    for (v, w) in [(1, 2), (-7, 30), (0, 0)] {
        assert_eq!(r.call(v, w), objects::jit::plain::field_roundtrip(v, w));
    }
    let r = objects::jit::specialize::through_calls();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load") && !listing.contains("store"), "{listing}");
    for v in [3, -3] {
        assert_eq!(r.call(v), objects::jit::plain::through_calls(v));
    }
}

#[test]
fn an_escaping_object_is_allocated_where_it_escapes() {
    let r = objects::jit::specialize::escapes();
    let listing = r.listing();
    assert_eq!(listing.matches("call new Obj").count(), 1, "{listing}");
    let alloc = listing.find("call new Obj").unwrap();
    let first_peek = listing.find("peek").expect("the opaque call");
    assert!(alloc < first_peek, "{listing}");
    for v in [4, -11] {
        assert_eq!(r.call(v), objects::jit::plain::escapes(v));
    }
}

#[test]
fn an_object_a_call_only_reads_is_never_allocated() {
    let r = objects::jit::specialize::read_only();
    let listing = r.listing();
    assert_eq!(listing.matches("call new Obj").count(), 0, "{listing}");
    assert_eq!(listing.matches("look").count(), 2, "{listing}");
    for v in [4, -11] {
        assert_eq!(r.call(v), objects::jit::plain::read_only(v));
    }
}

#[test]
fn a_merge_of_a_virtual_and_a_real_object_forces_at_the_merge() {
    let r = objects::jit::specialize::join();
    let listing = r.listing();
    // One allocation where the object escapes (before `peek`), one on the
    // other side where it meets the real object at the join; the code
    // after the join exists once (one store of y).
    assert_eq!(listing.matches("call new Obj").count(), 2, "{listing}");
    assert_eq!(listing.matches("store.i64").count(), 1, "{listing}");
    let blocks: Vec<&str> = listing.split("\nL").collect();
    let forced_at_join = blocks.iter().find(|b| b.contains("call new Obj") && !b.contains("peek")).expect("a block");
    assert!(forced_at_join.trim_end().lines().last().unwrap().trim_start().starts_with("jump"), "{listing}");
    for (c, v) in [(1, 5), (0, 5), (-3, 8)] {
        assert_eq!(r.call(c, v), objects::jit::plain::join(c, v));
    }
}

#[jit_interpreter]
mod wint {
    use jitgen::prelude::*;

    pub const INT: u32 = 1;
    pub const STR: u32 = 2;

    /// An application-level object: a type and, for integers, a value
    /// (PyPy's `W_IntObject`).
    pub struct WObj {
        pub kind: u32,
        pub intval: i64,
    }

    fn add(w1: &WObj, w2: &WObj) -> Box<WObj> {
        // The dispatch promotes both types.
        let k1 = hint!(w1.kind, promote);
        let k2 = hint!(w2.kind, promote);
        if k1 == INT && k2 == INT {
            Box::new(WObj { kind: INT, intval: w1.intval.wrapping_add(w2.intval) })
        } else {
            panic!("unsupported operand types for +")
        }
    }

    /// Promotes an object's type, then reads it again.
    pub fn kind_twice(a: &WObj) -> i64 {
        let k = hint!(a.kind, promote);
        let again = a.kind;
        (k * 100 + again) as i64 + a.intval
    }

    /// Promotes an object's type before a loop that reads it again in
    /// every turn (past a join and the loop head) and writes another field
    /// of the same object.
    pub fn kind_in_loop(a: &mut WObj, n: i64) -> i64 {
        let k = hint!(a.kind, promote);
        let mut i = 0;
        let mut s = 0;
        while i < n {
            if a.kind == k {
                s += 1;
            } else {
                s += 1000;
            }
            a.intval = a.intval.wrapping_add(i);
            i += 1;
        }
        s + a.intval + a.kind as i64
    }

    /// Reads an object's type, writes the type of an object that may be
    /// the same one (`i == j`), and reads the first again.
    pub fn kinds_by_index(objs: &mut Vec<WObj>, i: usize, j: usize) -> i64 {
        let before = objs[i].kind;
        objs[j].kind = 7;
        let after = objs[i].kind;
        (before * 10 + after) as i64
    }

    /// Stores a type twice around a store to another field, then once more
    /// after storing the type of an object that may be the same one.
    pub fn kinds_stored_twice(objs: &mut Vec<WObj>, i: usize, j: usize) -> i64 {
        objs[i].kind = 7;
        objs[i].intval = 1;
        objs[i].kind = 7;
        objs[j].kind = 8;
        objs[i].kind = 7;
        objs[i].kind as i64 * 10 + objs[j].kind as i64
    }

    /// Reads and writes a vector's first element around a push, which may
    /// move its elements.
    pub fn push_moves(v: &mut Vec<i64>, n: i64) -> i64 {
        let mut i = 0;
        while i < n {
            let x = v[0];
            v.push(i);
            v[0] = x + 1;
            i += 1;
        }
        v[0]
    }

    /// Reads element `i` of a vector of enums, writes element `j` (which may
    /// be the same), reads element `i` again; then adds to element `i` in a
    /// loop.
    pub fn enums_by_index(s: &mut Slots, i: usize, j: usize, n: i64) -> i64 {
        let a = s.items[i].unwrap_or(-1);
        s.items[j] = Some(7);
        let b = s.items[i].unwrap_or(-1);
        let mut k = 0;
        while k < n {
            s.items[i] = Some(s.items[i].unwrap_or(0) + k);
            k += 1;
        }
        a * 100 + b
    }

    /// Optional values in a vector, behind a struct.
    pub struct Slots {
        pub items: Vec<Option<i64>>,
    }

    /// `a + b + c`.
    pub fn sum3(a: &WObj, b: &WObj, c: &WObj) -> i64 {
        let ab = add(a, b);
        let abc = add(&ab, c);
        abc.intval
    }
}

#[test]
fn a_plus_b_plus_c_allocates_nothing_and_switches_three_times() {
    use wint::{WObj, INT, STR};
    let r = wint::jit::specialize::sum3();
    let (a, b, c) = (WObj { kind: INT, intval: 40 }, WObj { kind: INT, intval: 2 }, WObj { kind: INT, intval: -7 });
    assert_eq!(r.call(&a, &b, &c), wint::jit::plain::sum3(&a, &b, &c));
    let all = r.listing_with_cases();
    // Three promotions of run-time types (a's, b's, c's); the intermediate
    // object's type is a constant, promoted for free; it is never allocated.
    assert_eq!(all.matches("flexswitch").count(), 3, "{all}");
    assert!(!all.contains("new WObj"), "{all}");
    assert_eq!(all.matches("add").count(), 2, "{all}");
    // Other values and other types: the same results and errors.
    let s = WObj { kind: STR, intval: 0 };
    assert_eq!(r.call(&c, &a, &b), wint::jit::plain::sum3(&c, &a, &b));
    let jit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.call(&a, &s, &c)));
    let plain = std::panic::catch_unwind(|| wint::jit::plain::sum3(&a, &s, &c));
    assert!(jit.is_err() && plain.is_err());
}

#[test]
fn a_promoted_field_of_a_real_object_is_known_afterwards() {
    use wint::{WObj, INT};
    let r = wint::jit::specialize::kind_twice();
    let a = WObj { kind: INT, intval: 5 };
    assert_eq!(r.call(&a), wint::jit::plain::kind_twice(&a));
    // The type is loaded once, promoted; the second read is the constant.
    let all = r.listing_with_cases();
    assert_eq!(all.matches("load.u32").count(), 1, "{all}");
    let b = WObj { kind: 9, intval: 5 };
    assert_eq!(r.call(&b), wint::jit::plain::kind_twice(&b));
}

#[test]
fn known_fields_survive_merge_points_and_stores_to_other_fields() {
    use wint::{WObj, INT};
    let r = wint::jit::specialize::kind_in_loop();
    for (kind, n) in [(INT, 10), (9, 0), (3, 1000)] {
        let (mut a, mut b) = (WObj { kind, intval: 5 }, WObj { kind, intval: 5 });
        assert_eq!(r.call(&mut a, n), wint::jit::plain::kind_in_loop(&mut b, n));
        assert_eq!(a.intval, b.intval);
    }
    // The type is loaded once, before the loop; the loop knows it.
    let all = r.listing_with_cases();
    assert_eq!(all.matches("load.u32").count(), 1, "{all}");
}

#[test]
fn a_store_forgets_what_it_may_overwrite() {
    use wint::WObj;
    let r = wint::jit::specialize::kinds_by_index();
    let objs = || vec![WObj { kind: 1, intval: 0 }, WObj { kind: 2, intval: 0 }];
    for (i, j) in [(0, 0), (0, 1), (1, 1), (1, 0)] {
        let (mut a, mut b) = (objs(), objs());
        assert_eq!(r.call(&mut a, i, j), wint::jit::plain::kinds_by_index(&mut b, i, j), "i {i} j {j}");
    }
    // `objs[j]` may be `objs[i]`: the type is loaded again after the store.
    let listing = r.listing();
    assert_eq!(listing.matches("load.u32").count(), 2, "{listing}");
}

#[test]
fn elements_of_a_vector_of_enums_are_known_until_a_store_may_overwrite_them() {
    use wint::Slots;
    let r = wint::jit::specialize::enums_by_index();
    let v = || Slots { items: vec![Some(1i64), None, Some(3)] };
    for (i, j, n) in [(0, 0, 5), (0, 1, 5), (1, 1, 0), (1, 2, 3), (2, 0, 100)] {
        let (mut a, mut b) = (v(), v());
        assert_eq!(r.call(&mut a, i, j, n), wint::jit::plain::enums_by_index(&mut b, i, j, n), "{i} {j} {n}");
        assert_eq!(a.items, b.items, "{i} {j} {n}");
    }
    // The loop keeps `v[i]` in a register: no block on a cycle loads.
    let listing = r.listing_with_cases();
    let blocks = cyclic_blocks(&listing);
    assert!(!blocks.is_empty(), "{listing}");
    assert!(blocks.iter().all(|b| !b.contains("load.")), "{listing}");
    // Nor does it store the tag `Some` again: only the payload.
    assert_eq!(blocks.iter().map(|b| b.matches("store.").count()).sum::<usize>(), 1, "{listing}");
}

#[test]
fn a_store_of_the_known_value_is_left_out_unless_a_store_between_may_have_changed_it() {
    use wint::WObj;
    let r = wint::jit::specialize::kinds_stored_twice();
    let objs = || vec![WObj { kind: 1, intval: 0 }, WObj { kind: 2, intval: 0 }];
    for (i, j) in [(0, 0), (0, 1), (1, 1), (1, 0)] {
        let (mut a, mut b) = (objs(), objs());
        assert_eq!(r.call(&mut a, i, j), wint::jit::plain::kinds_stored_twice(&mut b, i, j), "i {i} j {j}");
        assert_eq!((a[0].kind, a[1].kind, a[0].intval, a[1].intval), (b[0].kind, b[1].kind, b[0].intval, b[1].intval));
    }
    // Stores: kind 7, intval (the kind 7 after it is left out), kind 8,
    // kind 7 again (`objs[j]` may be `objs[i]`).
    let listing = r.listing();
    assert_eq!(listing.matches("store.u32").count(), 3, "{listing}");
    assert_eq!(listing.matches("store.i64").count(), 1, "{listing}");
}

#[test]
fn what_is_known_of_a_vector_does_not_survive_a_push() {
    let r = wint::jit::specialize::push_moves();
    for n in [0, 1, 2, 100, 3000] {
        let (mut a, mut b) = (vec![7i64], vec![7i64]);
        assert_eq!(r.call(&mut a, n), wint::jit::plain::push_moves(&mut b, n), "n {n}");
        assert_eq!(a, b, "n {n}");
    }
}

#[jit_interpreter]
mod dicts {
    use std::collections::HashMap;

    /// Attributes by name id, with constant keys: a virtual dict.
    pub fn attrs(x: i64, y: i64) -> i64 {
        let mut d: HashMap<u32, i64> = HashMap::new();
        d.insert(1, x);
        d.insert(2, y);
        let old = d.insert(1, x + y).unwrap();
        let had = d.contains_key(&2) as i64;
        let gone = d.remove(&2).unwrap();
        let missing = d.get(&2).copied().is_none() as i64;
        d.get(&1).copied().unwrap() + old + had + gone + missing + d.len() as i64
    }

    /// A key known only at run time: the dict becomes a real `HashMap`.
    pub fn lookup(k: u32, x: i64) -> i64 {
        let mut d: HashMap<u32, i64> = HashMap::new();
        d.insert(3, x);
        d.insert(4, x * 2);
        match d.get(&k).copied() {
            Some(v) => v,
            None => -1,
        }
    }
}

#[test]
fn a_dict_with_constant_keys_emits_nothing() {
    let r = dicts::jit::specialize::attrs();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load") && !listing.contains("store"), "{listing}");
    for (x, y) in [(1, 2), (-5, 40)] {
        assert_eq!(r.call(x, y), dicts::jit::plain::attrs(x, y));
    }
}

#[test]
fn a_dict_read_at_a_run_time_key_is_forced() {
    let r = dicts::jit::specialize::lookup();
    let listing = r.listing();
    assert!(listing.contains("call map_new") && listing.contains("call map_get"), "{listing}");
    for k in 0..6 {
        assert_eq!(r.call(k, 10), dicts::jit::plain::lookup(k, 10));
    }
}

#[jit_interpreter]
mod stackvm {
    use jitgen::prelude::*;

    /// A dynamic language's value: a boxed integer or nil.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Value {
        Int(i64),
        Nil,
    }

    /// DUP (0), ADD (1), NIL (2), DROP (3), DEC_JNZ t (4: decrements the
    /// integer on top, jumps to t unless it became 0).
    pub fn run(code: &[u8], x: i64) -> i64 {
        let mut stack: Vec<Value> = Vec::new();
        stack.push(Value::Int(0));
        stack.push(Value::Int(x));
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                let v = stack[stack.len() - 1];
                stack.push(v);
            } else if op == 1 {
                let a = stack.pop().unwrap();
                let b = stack.pop().unwrap();
                let r = match a {
                    Value::Int(x) => match b {
                        Value::Int(y) => Value::Int(x.wrapping_add(y)),
                        Value::Nil => Value::Nil,
                    },
                    Value::Nil => Value::Nil,
                };
                stack.push(r);
            } else if op == 2 {
                stack.push(Value::Nil);
            } else if op == 3 {
                stack.pop();
            } else {
                let target = code[pc] as usize;
                pc += 1;
                let n = stack.len();
                let top = stack[n - 1];
                if let Value::Int(v) = top {
                    stack[n - 1] = Value::Int(v - 1);
                    if v - 1 != 0 {
                        pc = target;
                    }
                }
            }
        }
        match stack.pop().unwrap() {
            Value::Int(v) => v,
            Value::Nil => -1,
        }
    }
}

#[test]
fn an_operand_stack_of_enum_values_stays_virtual() {
    // x DUP ADD NIL DROP: no stack traffic, no tags in memory.
    let r = stackvm::jit::specialize::run(&[0, 1, 2, 3]);
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load") && !listing.contains("store"), "{listing}");
    for x in [1, -9] {
        assert_eq!(r.call(x), stackvm::jit::plain::run(&[0, 1, 2, 3], x));
    }
    // A loop through the portal: the stack is loaded at entry, lives in
    // registers, and the results agree.
    stackvm::jit::config().set_threshold(3);
    let prog = [4, 0]; // count down the top
    for x in [5, 100, 1, 2] {
        assert_eq!(stackvm::run(&prog, x), stackvm::jit::plain::run(&prog, x), "x = {x}");
    }
    let loops: Vec<String> = stackvm::jit::portal_listings().iter().flat_map(|l| cyclic_blocks(l)).collect();
    assert!(!loops.is_empty(), "{:?}", stackvm::jit::portal_listings());
    for body in &loops {
        assert!(!body.contains("load") && !body.contains("store") && !body.contains("call"), "{body}");
    }
}

#[jit_interpreter]
mod options {
    /// `unwrap_or` and `ok_or(..)?` on a virtual list's pops.
    pub fn pops(a: i64, b: i64, n: usize) -> Result<i64, u32> {
        let mut s: Vec<i64> = Vec::new();
        s.push(a);
        s.push(b);
        let x = s.pop().unwrap_or(-1);
        let y = s.pop().unwrap_or(b);
        let w = s.pop().unwrap_or(100);
        let mut t: Vec<i64> = Vec::new();
        t.push(x + y + w);
        if n > 1 {
            t.pop();
        }
        let z = t.pop().ok_or(7u32)?;
        Ok(z)
    }
}

#[test]
fn unwrap_or_and_ok_or_on_virtual_values() {
    let r = options::jit::specialize::pops();
    let listing = r.listing();
    assert!(!listing.contains("call") && !listing.contains("load"), "{listing}");
    for (a, b, n) in [(1, 2, 0), (5, -3, 1), (0, 0, 2), (9, 9, 5)] {
        assert_eq!(r.call(a, b, n), options::jit::plain::pops(a, b, n));
    }
    assert_eq!(options::jit::plain::pops(1, 2, 2), Err(7));
}

#[jit_interpreter]
mod frozen {
    use super::*;

    /// A program whose code and constants never change once built.
    pub struct Prog {
        pub code: Vec<u8>,
        pub consts: Vec<i64>,
    }

    /// Adds (opcode 0) or multiplies by (opcode 1) the constant after each
    /// opcode: everything read through the frozen program folds.
    pub fn eval(p: &mut Prog, x: i64) -> i64 {
        let q = hint!(p, deepfreeze);
        let mut acc = x;
        let mut pc = 0;
        while pc < q.code.len() {
            let op = hint!(q.code[pc], concrete);
            let k = q.consts[q.code[pc + 1] as usize];
            if op == 0 {
                acc = acc.wrapping_add(k);
            } else {
                acc = acc.wrapping_mul(k);
            }
            pc += 2;
        }
        acc
    }
}

#[test]
fn reads_through_a_deep_frozen_pointer_happen_at_compile_time() {
    let mut p = frozen::Prog { code: vec![0, 0, 1, 1, 0, 2], consts: vec![7, 3, -5] };
    let r = frozen::jit::specialize::eval(&mut p);
    let listing = r.listing().to_string();
    // (x + 7) * 3 - 5: two constants folded in, no loads of code or constants.
    assert!(!listing.contains("load") && !listing.contains("call"), "{listing}");
    assert!(listing.contains("const.i64 7") && listing.contains("const.i64 3"), "{listing}");
    for x in [0, 1, -4, i64::MAX] {
        let want =
            frozen::jit::plain::eval(&mut frozen::Prog { code: vec![0, 0, 1, 1, 0, 2], consts: vec![7, 3, -5] }, x);
        assert_eq!(r.call(x), want);
    }
}
