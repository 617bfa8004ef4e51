//! The measured layout of plain enums (`heap::enum_layout`): found for an
//! enum like an interpreter's values, and reading values in place with it
//! gives their flattened words.

mod common;

use common::{FlatValue, Value, RANGES, TYS};
use jitgen_runtime::heap::{enum_layout, Flat};
use jitgen_runtime::ops::ValTy;

#[test]
fn a_value_enum_is_read_in_place_as_its_words() {
    let l = enum_layout::<FlatValue>(&TYS, &RANGES).expect("a layout for this enum");
    assert_eq!(l.size, std::mem::size_of::<Value>() as u64);
    assert_eq!(l.slot_variant, vec![0, 2, 3]);
    for v in [Value::Int(-5), Value::Int(i64::MAX), Value::Nil, Value::Cons(7), Value::Flag(true)] {
        let mut want = [0u64; 4];
        FlatValue::flat(&v, &mut want);
        let p = &v as *const Value as *const u8;
        let read = |off: i32, ty: ValTy| {
            let n = (ty.bits() / 8) as usize;
            let mut w = [0u8; 8];
            // SAFETY: within the value; the tag and the active slot are initialized.
            unsafe { std::ptr::copy_nonoverlapping(p.add(off as usize), w.as_mut_ptr(), n) };
            ty.canon(u64::from_le_bytes(w))
        };
        assert_eq!(read(l.tag.0, l.tag.1), want[0], "{v:?}");
        for (j, (off, ty)) in l.slots.iter().enumerate() {
            if l.slot_variant[j] == want[0] as usize {
                assert_eq!(read(*off, *ty), want[j + 1], "{v:?} slot {}", j + 1);
            }
        }
    }
}

/// An enum whose tag hides in a payload's unused values (a niche) has no
/// separate tag: no layout, so residual code calls the helpers.
#[test]
fn a_niche_enum_gets_no_layout() {
    #[derive(Clone, Copy)]
    enum Small {
        A(bool),
        B,
    }
    struct FlatSmall;
    impl Flat for FlatSmall {
        type T = Small;
        const N: usize = 2;
        fn flat(v: &Small, out: &mut [u64]) {
            out[..2].copy_from_slice(&match *v {
                Small::A(b) => [0, b as u64],
                Small::B => [1, 0],
            });
        }
        fn unflat(w: &[u64]) -> Small {
            if w[0] == 0 {
                Small::A(w[1] != 0)
            } else {
                Small::B
            }
        }
    }
    assert_eq!(std::mem::size_of::<Small>(), 1);
    assert!(enum_layout::<FlatSmall>(&[ValTy::U32, ValTy::Bool], &[(1, 2), (2, 2)]).is_none());
}
