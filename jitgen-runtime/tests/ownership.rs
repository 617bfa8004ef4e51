//! Residual code is owned by its handles and freed with the last of them.

use jitgen_runtime::backend::cranelift::live_code_modules;
use jitgen_runtime::builder::ResidualBuilder;
use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::{Residual, ResidualFn};

fn adder(k: i64) -> Residual<(i64,), i64> {
    let mut b = ResidualBuilder::new("adder", &[ValTy::I64], &[ValTy::I64]);
    let x = b.inputs()[0];
    let c = b.konst(ValTy::I64, k as u64);
    let r = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, x, c);
    b.ret(&[r]);
    Residual::new(ResidualFn::compile(&b.finish(), &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap())
        .unwrap()
}

/// Held by the tests that compile code: the count of live code modules is
/// the process's, and a test compiling beside another changes it.
static COMPILING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn machine_code_is_freed_with_its_owner() {
    let _alone = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    let before = live_code_modules();
    let fns: Vec<_> = (0..50).map(adder).collect();
    assert_eq!(live_code_modules(), before + 50);
    assert_eq!(fns[7].call((1,)).unwrap(), 8);
    let keep = fns[3].function().clone();
    drop(fns);
    assert_eq!(live_code_modules(), before + 1, "a clone keeps its code alive");
    assert_eq!(keep.call_words(&[4]).unwrap(), [7]);
    drop(keep);
    assert_eq!(live_code_modules(), before);
    // A handle with the wrong signature is refused, not miscalled.
    let f = adder(1).function().clone();
    assert!(Residual::<(i64, i64), i64>::new(f).is_err());
}

#[test]
fn vec_layout_is_found_and_right() {
    let _alone = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    use jitgen_runtime::heap::vec_layout;
    let (p, l) = vec_layout::<i64>().expect("the probe works on this build");
    let v: Vec<i64> = vec![5, 6, 7];
    let base = &v as *const Vec<i64> as *const u8;
    // SAFETY: reading two words inside the Vec object.
    let (ptr, len) = unsafe { (*(base.add(p as usize) as *const usize), *(base.add(l as usize) as *const usize)) };
    assert_eq!(ptr, v.as_ptr() as usize);
    assert_eq!(len, 3);
    assert_eq!(vec_layout::<u8>().is_some(), true);
    assert_eq!(vec_layout::<()>(), None, "zero-sized elements have no buffer to read");
}

/// A value that counts its drops.
struct Tracked(std::rc::Rc<std::cell::Cell<u32>>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// `*dst = (*src).clone()` compiled for two places of type `T`, by
/// `clone`, a `ResidualBuilder` method taking the builder and the places.
fn place_to_place(clone: impl FnOnce(&mut ResidualBuilder, &RedBox, &RedBox)) -> ResidualFn {
    let mut b = ResidualBuilder::new("place_to_place", &[ValTy::Ptr, ValTy::Ptr], &[]);
    let (dst, src) =
        (RedBox::Var { ty: ValTy::Ptr, val: b.inputs()[0] }, RedBox::Var { ty: ValTy::Ptr, val: b.inputs()[1] });
    clone(&mut b, &dst, &src);
    b.ret(&[]);
    ResidualFn::compile(&b.finish(), &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap()
}

/// An `Rc` cloned into a place by residual code that changes its counts
/// (`red_clone_into`): the clone's count raised, the old `Rc`'s lowered,
/// and the old value dropped by Rust where that was its last count; a
/// place cloned into itself, or two places of one `Rc`, keep the count.
#[test]
fn an_rc_cloned_into_a_place_by_residual_code_keeps_rusts_counts() {
    let _alone = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    use std::rc::Rc;
    assert!(jitgen_runtime::heap::rc_counts_in_place::<Rc<Tracked>>(), "this build of std's `Rc` is checked");
    assert!(!jitgen_runtime::heap::rc_counts_in_place::<Rc<str>>(), "an `Rc` of two words is Rust's to clone");
    assert!(!jitgen_runtime::heap::rc_counts_in_place::<Box<u64>>(), "not an `Rc`");
    let f = place_to_place(|b, dst, src| b.red_clone_into::<Rc<Tracked>>(dst, src));
    let drops = Rc::new(std::cell::Cell::new(0));
    let a = Rc::new(Tracked(drops.clone()));
    let mut place = Rc::new(Tracked(drops.clone()));
    let run = |dst: *mut Rc<Tracked>, src: *const Rc<Tracked>| f.call_words(&[dst as u64, src as u64]).unwrap();
    run(&mut place, &a);
    assert!(Rc::ptr_eq(&place, &a) && Rc::strong_count(&a) == 2, "the clone is `a`, counted");
    assert_eq!(drops.get(), 1, "the `Rc` the place held had its last count: dropped");
    let p: *mut Rc<Tracked> = &mut place;
    run(p, p);
    assert!(Rc::strong_count(&a) == 2 && drops.get() == 1, "cloned into itself");
    run(&mut place, &a);
    assert!(Rc::strong_count(&a) == 2 && drops.get() == 1, "a place of the same `Rc`");
    let mut other = Rc::new(Tracked(drops.clone()));
    let shared = other.clone();
    run(&mut other, &a);
    assert!(Rc::strong_count(&a) == 3 && Rc::strong_count(&shared) == 1 && drops.get() == 1, "not its last count");
    drop((place, other, shared));
    assert_eq!(drops.get(), 2);
    assert_eq!(Rc::strong_count(&a), 1);
}

/// A `Copy` value kept whole (a handle) copied from place to place
/// (`red_copy_into`), in the widest pieces its alignment allows.
#[test]
fn a_copy_value_is_copied_byte_for_byte() {
    let _alone = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Handle {
        index: u32,
        generation: u16,
        flag: bool,
    }
    let f = place_to_place(|b, dst, src| b.red_copy_into::<Handle>(dst, src));
    let src = Handle { index: 0xdead_beef, generation: 0x1234, flag: true };
    let mut dst = Handle { index: 1, generation: 2, flag: false };
    f.call_words(&[&mut dst as *mut Handle as u64, &src as *const Handle as u64]).unwrap();
    assert_eq!(dst, src);
    let f = place_to_place(|b, dst, src| b.red_copy_into::<[u8; 3]>(dst, src));
    // Three bytes, the fourth left as it was.
    let (src, mut dst) = ([7u8, 8, 9, 10], [0u8, 0, 0, 0xaa]);
    f.call_words(&[dst.as_mut_ptr() as u64, src.as_ptr() as u64]).unwrap();
    assert_eq!(dst, [7, 8, 9, 0xaa]);
}
