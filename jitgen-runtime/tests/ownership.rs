//! Residual code is owned by its handles and freed with the last of them.

use jitgen_runtime::backend::cranelift::live_code_modules;
use jitgen_runtime::builder::ResidualBuilder;
use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
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

#[test]
fn machine_code_is_freed_with_its_owner() {
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
