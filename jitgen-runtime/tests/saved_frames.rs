//! A portal's saved frames in compiled code (`VPList::Over`): frames pushed
//! by calls stay virtual over the real `Vec`, the bottom ones move into
//! memory past `MAX_VIRTUAL_PTRS`, and a pop with none left pops memory and
//! says that the path returned below its entry.

use expect_test::{expect, Expect};
use jitgen_runtime::builder::{listing, ResidualBuilder};
use jitgen_runtime::ops::ValTy;
use jitgen_runtime::redbox::RedBox;
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
};

/// Runs `ops` on a list over the real `Vec` given as input: `p` pushes a
/// frame whose field is the next constant, `o` pops; checks the pops' origins
/// (`v` virtual, `m` memory, `b` below the entry), the key words and the
/// residual code.
fn check(ops: &str, want_pops: &str, want: Expect) {
    let mut b = ResidualBuilder::new("frames", &[ValTy::Ptr], &[]);
    let vec = RedBox::Var { ty: ValTy::Ptr, val: b.inputs()[0] };
    let mut heap = VHeap::default();
    let mut l = VPList::Over(vec, vec![]);
    let mut pops = String::new();
    for (k, op) in ops.chars().enumerate() {
        match op {
            'p' => {
                let x = heap.alloc(&FRAME, vec![RedBox::constant(ValTy::I64, k as u64)], vec![]);
                l.push(&mut b, &mut heap, &FRAME, x).expect("over a real list");
            }
            _ => {
                let (_, p, from) = l.pop(&mut b, &mut heap, &FRAME);
                pops.push(match from {
                    Popped::Virtual => 'v',
                    Popped::Memory => 'm',
                    Popped::BelowEntry => 'b',
                });
                assert!(from != Popped::Virtual || matches!(p, VPtr::Virtual(_)));
            }
        }
    }
    assert_eq!(pops, want_pops);
    let mut key = vec![];
    l.key_words(&mut key);
    b.ret(&[]);
    want.assert_eq(&format!("key {key:?}\n{}", listing(&b.finish())));
}

#[test]
fn calls_stay_virtual_over_the_saved_frames() {
    // Two calls and their returns: nothing emitted; the key counts them.
    check(
        "ppoo",
        "vv",
        expect![[r#"
            key [18446744073709551614, 0]
            entry(v0: ptr):
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
            entry(v0: ptr):
                v1, v2 = call vec_pop(v0)
                v3, v4 = call vec_pop(v0)
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
            entry(v0: ptr):
                v1 = const.i64 0
                call vec_push(v0, v1)
                v2 = const.i64 1
                call vec_push(v0, v2)
                v3 = const.i64 2
                call vec_push(v0, v3)
                v4 = const.i64 3
                call vec_push(v0, v4)
                v5, v6 = call vec_pop(v0)
                return 
        "#]],
    );
}
