//! A portal's saved frames in compiled code (`VPList::Over`): frames pushed
//! by calls stay virtual over the real `Vec`, the bottom ones move into
//! memory past `MAX_VIRTUAL_PTRS`, and a pop with none left pops memory and
//! says that the path returned below its entry. Spilled (compiled
//! recursion), they go onto the continuation stack as words, and a pop
//! with none left virtual says so, for the extension to resume there. A
//! switch of such a recursion forgets the elements its state knew.

use expect_test::{expect, Expect};
use jitgen_runtime::builder::{listing, ResidualBuilder};
use jitgen_runtime::ops::ValTy;
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::spill::{spill_list, template, unspill_top, Template};
use jitgen_runtime::virtuals::{Popped, VDesc, VHeap, VPList, VPtr, MAX_VIRTUAL_PTRS};

extern "C" fn never(_: *mut u64) -> u64 {
    unreachable!("compiled only")
}

/// A struct of one scalar field, moved by its field words.
static FRAME: VDesc = VDesc {
    name: "Frame",
    fields: &[ValTy::I64],
    alloc: never,
    offsets: &[0],
    lists: &[],
    push_moved: never,
    pop_moved: never,
    by_fields: Some((never, never)),
    in_memory: None,
    reads_in_place: false,
};

/// Runs `ops` on a list over the real `Vec` given as input: `p` pushes a
/// frame whose field is the next constant, `P` one whose field is a run-time
/// value (the input), `o` pops, `s` spills, `c` spills as for an
/// interpreter that reads its frames in place, `u` takes the continuation
/// stack's top entry back (of the last template spilled); checks the pops'
/// origins (`v` virtual, `m` memory, `b` below the entry, `s` on the
/// continuation stack), the key words and the residual code (the stack's
/// address shown as `STACK`).
fn check(ops: &str, want_pops: &str, want: Expect) {
    let mut b = ResidualBuilder::new("frames", &[ValTy::Ptr, ValTy::I64], &[]);
    let vec = RedBox::Var { ty: ValTy::Ptr, val: b.inputs()[0] };
    let x = RedBox::Var { ty: ValTy::I64, val: b.inputs()[1] };
    let mut templates = 0;
    let mut heap = VHeap::default();
    let mut l = VPList::Over(vec, vec![]);
    let mut pops = String::new();
    for (k, op) in ops.chars().enumerate() {
        match op {
            'p' => {
                let x = heap.alloc(&FRAME, vec![RedBox::constant(ValTy::I64, k as u64)], vec![]);
                l.push(&mut b, &mut heap, &FRAME, x).expect("over a real list");
            }
            'P' => {
                let p = heap.alloc(&FRAME, vec![x], vec![]);
                l.push(&mut b, &mut heap, &FRAME, p).expect("over a real list");
            }
            's' => assert!(spill_list(&mut l, &mut b, &heap, false, &[], false)),
            'c' => assert!(spill_list(&mut l, &mut b, &heap, true, &[], false)),
            'u' => {
                while template(templates).is_some() {
                    templates += 1;
                }
                assert!(unspill_top(&mut l, &mut b, &mut heap, templates - 1).is_some());
            }
            _ => {
                let (_, p, from) = l.pop(&mut b, &mut heap, &FRAME);
                pops.push(match from {
                    Popped::Virtual => 'v',
                    Popped::Memory => 'm',
                    Popped::BelowEntry => 'b',
                    Popped::Spilled => 's',
                    Popped::InPlace => 'i',
                });
                assert!(from != Popped::Virtual || matches!(p, VPtr::Virtual(_)));
            }
        }
    }
    assert_eq!(pops, want_pops);
    let mut key = jitgen_runtime::frame::KeyWords::new();
    l.key_words(&mut key);
    b.ret(&[]);
    let stack = format!("{:#x}", jitgen_runtime::contstack::Raw::address());
    want.assert_eq(&format!("key {key:?}\n{}", listing(&b.finish())).replace(&stack, "STACK"));
}

#[test]
fn calls_stay_virtual_over_the_saved_frames() {
    // Two calls and their returns: nothing emitted; the key counts them.
    check(
        "ppoo",
        "vv",
        expect![[r#"
            key [18446744073709551614, 0]
            entry(v0: ptr, v1: i64):
                return 
        "#]],
    );
}

#[test]
fn a_return_below_the_entry_pops_memory() {
    check(
        "pooo",
        "vbb",
        expect![[r#"
            key [18446744073709551614, 0]
            entry(v0: ptr, v1: i64):
                v2, v3 = call vec_pop(v0)
                v4, v5 = call vec_pop(v0)
                return 
        "#]],
    );
}

#[test]
fn past_the_limit_the_bottom_frames_move_into_memory() {
    assert_eq!(MAX_VIRTUAL_PTRS, 4);
    // The fifth push moves the four below it into memory, by their fields;
    // the last frame stays virtual, and popping past it pops memory (taken
    // as a return below the entry: frames moved there are not told apart
    // from those saved before, so such a path hands over, which is correct
    // and only slower).
    check(
        "pppppoo",
        "vb",
        expect![[r#"
            key [18446744073709551614, 0]
            entry(v0: ptr, v1: i64):
                v2 = const.i64 0
                call vec_push(v0, v2)
                v3 = const.i64 1
                call vec_push(v0, v3)
                v4 = const.i64 2
                call vec_push(v0, v4)
                v5 = const.i64 3
                call vec_push(v0, v5)
                v6, v7 = call vec_pop(v0)
                return 
        "#]],
    );
}

#[test]
fn spilled_frames_go_onto_the_continuation_stack_and_come_back() {
    // Two frames spilled: constants stay in their template, the run-time
    // field is a word; the list keeps no virtual frame, and its key says it
    // is spilled. A pop then finds none (the extension resumes on the
    // stack); taking the top entry back makes it virtual again, and the
    // pop takes it.
    check(
        "pPsouo",
        "sv",
        expect![[r#"
            key [18446744073709551612, 0]
            register STACK+8
            register STACK+16
            register STACK+0
            register STACK+32
            entry(v0: ptr, v1: i64):
                v2 = const.ptr STACK
                v3 = load.u64 v2+8
                v4 = load.u64 v2+16
                v5 = const.u64 1
                v6 = add.u64 v3, v5
                v7 = gt.u64 v6, v4
                branch v7, L1(), L2()
            L1():
                call.cold cont_reserve(v5)
                jump L2()
            L2():
                v8 = const.ptr STACK
                v9 = load.ptr v8+0
                v10 = const.u64 8
                v11 = mul.u64 v3, v10
                v12 = cast.u64.ptr v11
                v13 = add.ptr v9, v12
                v14 = const.u64 0
                store.u64 v13+0, v14
                store.u64 v8+8, v6
                v15 = load.u64 v8+32
                v16 = const.u64 1
                v17 = add.u64 v15, v16
                store.u64 v8+32, v17
                v18 = load.u64 v8+16
                v19 = const.u64 2
                v20 = const.u64 3
                v21 = add.u64 v3, v20
                v22 = gt.u64 v21, v18
                branch v22, L3(), L4()
            L3():
                call.cold cont_reserve(v19)
                jump L4()
            L4():
                v23 = const.ptr STACK
                v24 = load.ptr v23+0
                v25 = const.u64 8
                v26 = mul.u64 v6, v25
                v27 = cast.u64.ptr v26
                v28 = add.ptr v24, v27
                store.i64 v28+0, v1
                v29 = const.u64 1
                store.u64 v28+8, v29
                store.u64 v23+8, v21
                v30 = load.u64 v23+32
                v31 = add.u64 v30, v29
                store.u64 v23+32, v31
                v32 = add.u64 v3, v29
                store.u64 v23+8, v32
                v33 = const.u64 0
                v34 = add.u64 v30, v33
                store.u64 v23+32, v34
                return 
        "#]],
    );
    assert!(matches!(*template(0).expect("spilled"), Template::Object { ref words, .. } if words.is_empty()));
}

#[test]
fn frames_read_in_place_keep_the_current_one_virtual_when_spilled() {
    // The newest frame stays virtual (the interpreter's current frame, read
    // at every instruction); the one below goes onto the stack, counted in
    // its entries, and the key says the list counts them. Popping the
    // current frame takes it; the next pop finds none virtual.
    check(
        "pPcoo",
        "vs",
        expect![[r#"
            key [18446744073709551610, 0]
            register STACK+8
            register STACK+16
            register STACK+0
            register STACK+32
            entry(v0: ptr, v1: i64):
                v2 = const.ptr STACK
                v3 = load.u64 v2+8
                v4 = load.u64 v2+16
                v5 = const.u64 1
                v6 = add.u64 v3, v5
                v7 = gt.u64 v6, v4
                branch v7, L1(), L2()
            L1():
                call.cold cont_reserve(v5)
                jump L2()
            L2():
                v8 = const.ptr STACK
                v9 = load.ptr v8+0
                v10 = const.u64 8
                v11 = mul.u64 v3, v10
                v12 = cast.u64.ptr v11
                v13 = add.ptr v9, v12
                v14 = const.u64 0
                store.u64 v13+0, v14
                store.u64 v8+8, v6
                v15 = load.u64 v8+32
                v16 = const.u64 1
                v17 = add.u64 v15, v16
                store.u64 v8+32, v17
                return 
        "#]],
    );
}

#[test]
fn a_count_of_entries_is_a_load_dropped_where_unused() {
    // `frames.len()` of a list that counts its entries reads the stack's
    // count; where the count only located the current frame, nothing is
    // left.
    let mut b = ResidualBuilder::new("count", &[], &[ValTy::U64]);
    let _unused = jitgen_runtime::spill::entries(&mut b);
    let used = jitgen_runtime::spill::entries(&mut b);
    let used = b.materialize(&used);
    b.ret(&[used]);
    let mut f = b.finish();
    f.simplify();
    expect![[r#"
        register STACK+32
        entry():
            v0 = const.ptr STACK
            v1 = load.u64 v0+32
            return v1
    "#]]
    .assert_eq(&listing(&f).replace(&format!("{:#x}", jitgen_runtime::contstack::Raw::address()), "STACK"));
}

#[test]
fn compiled_pushes_count_the_entries_of_their_call() {
    use jitgen_runtime::contstack::{call_entries, enter, leave, push};
    use jitgen_runtime::spill::entries;
    // Three frames, the newest kept virtual: two entries pushed by compiled
    // code, counted in its call alone (not the outer call's entry).
    let mut b = ResidualBuilder::new("spills", &[ValTy::I64], &[ValTy::U64, ValTy::U64]);
    let x = RedBox::Var { ty: ValTy::I64, val: b.inputs()[0] };
    let mut heap = VHeap::default();
    let mut l = VPList::Virtual(vec![]);
    for _ in 0..3 {
        let v = heap.alloc(&FRAME, vec![x], vec![]);
        l.push(&mut b, &mut heap, &FRAME, v).expect("virtual");
    }
    let before = entries(&mut b);
    assert!(spill_list(&mut l, &mut b, &heap, true, &[], false));
    let after = entries(&mut b);
    let outs = [b.materialize(&before), b.materialize(&after)];
    b.ret(&outs);
    let mut f = b.finish();
    f.simplify();
    let code =
        jitgen_runtime::residual::ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap())
            .unwrap();
    let outer = enter();
    let one = (0..).take_while(|id| template(*id).is_some()).last().expect("a template");
    let mut buf = [1, 5, one];
    // SAFETY: n, n words and the template.
    assert_eq!(unsafe { push(buf.as_mut_ptr()) }, 0);
    assert_eq!(call_entries(), 1);
    assert_eq!(code.call_words(&[7]).unwrap(), [0, 2]);
    assert_eq!(call_entries(), 1);
    leave(outer);
    assert_eq!(call_entries(), 0);
}

#[test]
fn the_stack_counts_the_entries_of_the_current_call() {
    use jitgen_runtime::contstack::{self, enter, leave, peek, pop, push};
    // Templates of no word and of one word (the spills register them).
    let mut b = ResidualBuilder::new("frames", &[ValTy::I64], &[]);
    let x = RedBox::Var { ty: ValTy::I64, val: b.inputs()[0] };
    let mut heap = VHeap::default();
    let mut l = VPList::Virtual(vec![]);
    let c = heap.alloc(&FRAME, vec![RedBox::constant(ValTy::I64, 7)], vec![]);
    l.push(&mut b, &mut heap, &FRAME, c).expect("virtual");
    let v = heap.alloc(&FRAME, vec![x], vec![]);
    l.push(&mut b, &mut heap, &FRAME, v).expect("virtual");
    l.push(&mut b, &mut heap, &FRAME, c).expect("virtual");
    assert!(spill_list(&mut l, &mut b, &heap, true, &[], false));
    let ids: Vec<u64> = (0..).take_while(|id| template(*id).is_some()).collect();
    let (none, one) = (
        *ids.iter().find(|id| template(**id).unwrap().word_count() == 0).expect("a template of no word"),
        *ids.iter().find(|id| template(**id).unwrap().word_count() == 1).expect("a template of one word"),
    );
    let count = jitgen_runtime::contstack::call_entries;
    let top = || {
        let mut w = [0u64];
        // SAFETY: one word.
        unsafe { peek(w.as_mut_ptr()) };
        w[0]
    };
    let push_entry = |id: u64, words: &[u64]| {
        let mut buf = vec![words.len() as u64];
        buf.extend_from_slice(words);
        buf.push(id);
        // SAFETY: n, n words and the template.
        assert_eq!(unsafe { push(buf.as_mut_ptr()) }, 0);
    };
    let pop_entry = |n: u64| {
        let mut buf = [n, 0];
        // SAFETY: room for n words (at most one here).
        assert_eq!(unsafe { pop(buf.as_mut_ptr()) }, 0);
    };
    // An outer call's entries are not the inner call's.
    let outer = enter();
    push_entry(one, &[5]);
    let saved = enter();
    assert_eq!(count(), 0);
    push_entry(none, &[]);
    push_entry(one, &[9]);
    push_entry(none, &[]);
    assert_eq!(count(), 3);
    // The entries' words are what was pushed.
    assert_eq!(top(), none);
    contstack::with_call_words(|w| assert_eq!(w, [none, 9, one, none]));
    pop_entry(0);
    assert_eq!(count(), 2);
    push_entry(one, &[1]);
    push_entry(one, &[2]);
    assert_eq!(count(), 4);
    pop_entry(1);
    pop_entry(1);
    pop_entry(1);
    assert_eq!(count(), 1);
    pop_entry(0);
    assert_eq!(count(), 0);
    leave(saved);
    assert_eq!(count(), 1);
    leave(outer);
}

#[test]
fn materializing_moves_each_hidden_segment_once_and_seals_the_entries_it_passed() {
    use jitgen_runtime::contstack::{self, enter, leave, peek, push, template_of, SEALED};
    use jitgen_runtime::heap::{vec_extend, vec_header, vec_reserve_one};
    use jitgen_runtime::spill::{materialize, Segment};
    use jitgen_runtime::vlist::InPlace;
    static IN_PLACE: InPlace = InPlace {
        header: vec_header::<i64>,
        size: 8,
        ty: ValTy::I64,
        class: 0,
        reserve: vec_reserve_one::<i64>,
        extend: vec_extend::<i64>,
    };
    // Templates of a frame with no word: with a hidden segment of one word
    // (and its twin in memory), and without a segment.
    let mut b = ResidualBuilder::new("frames", &[ValTy::I64], &[]);
    let x = RedBox::Var { ty: ValTy::I64, val: b.inputs()[0] };
    let mut heap = VHeap::default();
    let mut l = VPList::Virtual(vec![]);
    for _ in 0..2 {
        let c = heap.alloc(&FRAME, vec![RedBox::constant(ValTy::I64, 7)], vec![]);
        l.push(&mut b, &mut heap, &FRAME, c).expect("virtual");
    }
    assert!(spill_list(&mut l, &mut b, &heap, false, &[vec![x], vec![]], false));
    let find = |want: fn(&Segment) -> bool| {
        (0..)
            .take_while(|id| template(*id).is_some())
            .find(|id| matches!(&*template(*id).unwrap(), Template::Object { segment, .. } if want(segment)))
            .expect("a template of that segment")
    };
    let hidden = find(|s| matches!(s, Segment::Hidden { words: 1, .. }));
    let in_memory = find(|s| matches!(s, Segment::InMemory { words: 1 }));
    let none = find(|s| matches!(s, Segment::None));
    let push_entry = |id: u64, words: &[u64]| {
        let mut buf = vec![words.len() as u64];
        buf.extend_from_slice(words);
        buf.push(id);
        // SAFETY: n, n words and the template.
        assert_eq!(unsafe { push(buf.as_mut_ptr()) }, 0);
    };
    let mut v: Vec<i64> = vec![100];
    let materialize_into = |v: &mut Vec<i64>| {
        let mut buf = [v as *mut Vec<i64> as u64, &IN_PLACE as *const InPlace as u64];
        // SAFETY: a live `Vec<i64>` and its `InPlace`.
        assert_eq!(unsafe { materialize(buf.as_mut_ptr()) }, 0);
    };
    let words = || contstack::with_call_words(|w| w.to_vec());
    let count = jitgen_runtime::contstack::call_entries;
    let saved = enter();
    // Bottom to top: no segment, 1, no segment, no segment, 2, no segment.
    push_entry(none, &[]);
    push_entry(hidden, &[1]);
    push_entry(none, &[]);
    push_entry(none, &[]);
    push_entry(hidden, &[2]);
    push_entry(none, &[]);
    materialize_into(&mut v);
    // The segments, oldest first, each moved into memory once; the hidden
    // entries are their twins now, every other entry passed is sealed.
    assert_eq!(v, [100, 1, 2]);
    let w = words();
    let lasts: Vec<u64> = [0, 2, 3, 4, 6, 7].iter().map(|&k| w[k]).collect();
    assert_eq!(
        lasts.iter().map(|&x| template_of(x)).collect::<Vec<_>>(),
        [none, in_memory, none, none, in_memory, none]
    );
    assert_eq!(lasts.iter().map(|&x| x & SEALED != 0).collect::<Vec<_>>(), [true, false, true, true, false, true]);
    // What a pop reads is the template alone, and counting sees through the seal.
    let mut t = [0u64];
    // SAFETY: one word.
    unsafe { peek(t.as_mut_ptr()) };
    assert_eq!(t[0], none);
    assert_eq!(count(), 6);
    // Nothing more to move.
    materialize_into(&mut v);
    assert_eq!(v, [100, 1, 2]);
    // A walk stops at the first sealed entry: a hidden entry below it (a
    // state the invariant rules out, made here to see where the walk
    // stops) stays hidden; the new one above moves.
    push_entry(hidden, &[3]);
    push_entry(none, &[]);
    contstack::with_call_words(|w| {
        let top = w.len() - 1;
        w[top] |= SEALED;
    });
    push_entry(hidden, &[4]);
    materialize_into(&mut v);
    assert_eq!(v, [100, 1, 2, 4]);
    let w = words();
    assert_eq!(template_of(w[w.len() - 4]), hidden);
    assert_eq!(template_of(w[w.len() - 1]), in_memory);
    assert_eq!(count(), 9);
    leave(saved);
}

/// A frame holding only its saved frames, for the state's own tests.
#[derive(Clone, Debug)]
struct CallsOnly(VPList);

impl jitgen_runtime::state::Frame for CallsOnly {
    type Key = ();
    fn key(&self) {}
    fn reds(&self) -> Vec<RedBox> {
        vec![]
    }
    fn set_reds(&mut self, _: &[RedBox]) {}
    fn lists_mut(&mut self, f: &mut dyn FnMut(jitgen_runtime::state::ListMut<'_>)) {
        f(jitgen_runtime::state::ListMut::Ptrs(&mut self.0));
    }
}

/// At a switch of a compiled recursion (saved frames spilled), the state
/// forgets the list elements it knew at run-time indices, and keeps what
/// it knew of headers; where nothing is spilled, it forgets nothing.
#[test]
fn a_recursions_switch_forgets_the_elements_it_knew() {
    use jitgen_runtime::builder::SymAddr;
    use jitgen_runtime::state::{Fact, JitState};
    let b = ResidualBuilder::new("facts", &[ValTy::Ptr, ValTy::U64, ValTy::I64], &[]);
    let ins = b.inputs();
    let stack = RedBox::Var { ty: ValTy::Ptr, val: ins[0] };
    let len = RedBox::Var { ty: ValTy::U64, val: ins[1] };
    let cell = RedBox::Var { ty: ValTy::I64, val: ins[2] };
    let header = Fact {
        at: SymAddr { root: stack, index: None, offset: 16 },
        ty: ValTy::U64,
        class: 0,
        field: 16,
        value: len,
        min: 1,
    };
    let element = Fact { at: SymAddr { root: stack, index: Some((len, 8)), offset: -8 }, value: cell, ..header };
    let state = |calls: VPList| {
        let mut st = JitState::new(CallsOnly(calls));
        st.known = vec![header, element];
        st
    };
    let mut spilled = state(VPList::Spilled { below: None, counted: false, items: vec![] });
    assert!(spilled.forget_elements_in_recursion());
    assert_eq!(spilled.known, vec![header]);
    let mut real = state(VPList::Real(RedBox::constant(ValTy::Ptr, 0x1000)));
    assert!(!real.forget_elements_in_recursion());
    assert_eq!(real.known, vec![header, element]);
}

/// A frame of two red pointers (two `Vec`s' headers), for the state's own
/// tests.
#[derive(Clone, Debug)]
struct TwoLists(RedBox, RedBox);

impl jitgen_runtime::state::Frame for TwoLists {
    type Key = ();
    fn key(&self) {}
    fn reds(&self) -> Vec<RedBox> {
        vec![self.0, self.1]
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        (self.0, self.1) = (r[0], r[1]);
    }
}

/// At a switch, facts learned in another order on another path are put in
/// one order: by where their address's root first appears among the
/// state's reds, then by offset; a fact whose root is no red of the state
/// comes after those whose root is one, and constant roots come last.
#[test]
fn a_switchs_state_orders_its_facts_by_what_they_say() {
    use jitgen_runtime::builder::SymAddr;
    use jitgen_runtime::state::{Fact, JitState};
    let b = ResidualBuilder::new("facts", &[ValTy::Ptr, ValTy::Ptr, ValTy::Ptr, ValTy::U64], &[]);
    let ins = b.inputs();
    let red = |i: usize, ty| RedBox::Var { ty, val: ins[i] };
    let (stack, frames, other, v) = (red(0, ValTy::Ptr), red(1, ValTy::Ptr), red(2, ValTy::Ptr), red(3, ValTy::U64));
    let fact = |root, offset| Fact {
        at: SymAddr { root, index: None, offset },
        ty: ValTy::U64,
        class: 0,
        field: offset as i32,
        value: v,
        min: 0,
    };
    let at_const = fact(RedBox::constant(ValTy::Ptr, 0x1000), 8);
    let want = vec![fact(stack, 8), fact(stack, 16), fact(frames, 8), fact(other, 8), at_const];
    for order in [[4, 3, 2, 1, 0], [2, 0, 4, 1, 3], [0, 1, 2, 3, 4]] {
        let mut st = JitState::new(TwoLists(stack, frames));
        st.known = order.iter().map(|&i| want[i]).collect();
        st.order_facts();
        assert_eq!(st.known, want, "{order:?}");
    }
    // The frame's order decides: with the lists swapped, so are their facts.
    let mut st = JitState::new(TwoLists(frames, stack));
    st.known = want.clone();
    st.order_facts();
    assert_eq!(st.known[..3], [fact(frames, 8), fact(stack, 8), fact(stack, 16)]);
}
