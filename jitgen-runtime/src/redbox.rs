//! Red boxes (PyPy's `rvalue`): where a red value will be at run time.
//!
//! A red box is a compile-time constant or a run-time value of residual code,
//! with its type. Operations on red boxes fold when every operand is a
//! constant and the operation cannot fail; otherwise they emit one residual
//! operation. An operation that would panic in Rust on its constant operands
//! (a division by zero) is emitted too, so that its check fires when, and
//! only if, residual code reaches it.

use crate::builder::{ResidualBuilder, Val};
use crate::ops::{fold_bin, fold_cast, fold_cmp, fold_un, BinOp, CmpOp, Overflow, UnOp, ValTy};

/// A red value at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedBox {
    /// Known after all: a constant word (canonical for its type).
    Const {
        /// Its type.
        ty: ValTy,
        /// Its value.
        bits: u64,
    },
    /// A value of residual code.
    Var {
        /// Its type.
        ty: ValTy,
        /// The residual value.
        val: Val,
    },
}

#[allow(missing_docs)]
impl RedBox {
    /// A constant of any type.
    pub fn constant(ty: ValTy, bits: u64) -> RedBox {
        RedBox::Const { ty, bits: ty.canon(bits) }
    }
    pub fn i64(v: i64) -> RedBox {
        RedBox::constant(ValTy::I64, v as u64)
    }
    pub fn u64(v: u64) -> RedBox {
        RedBox::constant(ValTy::U64, v)
    }
    pub fn bool(v: bool) -> RedBox {
        RedBox::constant(ValTy::Bool, v as u64)
    }
    pub fn f64(v: f64) -> RedBox {
        RedBox::constant(ValTy::F64, v.to_bits())
    }

    /// Its type.
    pub fn ty(&self) -> ValTy {
        match self {
            RedBox::Const { ty, .. } | RedBox::Var { ty, .. } => *ty,
        }
    }

    /// The constant, if it is one.
    pub fn as_const(&self) -> Option<u64> {
        match self {
            RedBox::Const { bits, .. } => Some(*bits),
            RedBox::Var { .. } => None,
        }
    }

    /// Whether it is a compile-time constant.
    pub fn is_const(&self) -> bool {
        self.as_const().is_some()
    }
}

impl ResidualBuilder {
    /// The residual value of a red box (a constant is emitted).
    pub fn materialize(&mut self, r: &RedBox) -> Val {
        match r {
            RedBox::Const { ty, bits } => self.konst(*ty, *bits),
            RedBox::Var { val, .. } => *val,
        }
    }

    fn var(&self, val: Val) -> RedBox {
        RedBox::Var { ty: self.ty(val), val }
    }

    /// `a op b` (the type is `a`'s; shift amounts may have another).
    pub fn red_bin(&mut self, op: BinOp, ov: Overflow, a: &RedBox, b: &RedBox) -> RedBox {
        let ty = a.ty();
        debug_assert!(matches!(op, BinOp::Shl | BinOp::Shr) || b.ty() == ty, "operand types differ: {a:?} {b:?}");
        if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
            if let Ok(r) = fold_bin(op, ty, ov, x, y) {
                return RedBox::Const { ty, bits: r };
            }
        }
        // Identities that cannot fail (integers only: `-0.0 + 0.0` is `+0.0`).
        if ty.is_int() {
            let is = |r: &RedBox, k: u64| r.as_const() == Some(k);
            match op {
                BinOp::Add | BinOp::Or | BinOp::Xor if is(a, 0) => return *b,
                BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr if is(b, 0) => return *a,
                BinOp::Mul if is(a, 1) => return *b,
                BinOp::Mul | BinOp::Div if is(b, 1) => return *a,
                _ => {}
            }
        }
        let (x, y) = (self.materialize(a), self.materialize(b));
        let v = self.bin(op, ty, ov, x, y);
        self.var(v)
    }

    /// `op a`.
    pub fn red_un(&mut self, op: UnOp, ov: Overflow, a: &RedBox) -> RedBox {
        let ty = a.ty();
        if let Some(x) = a.as_const() {
            if let Ok(r) = fold_un(op, ty, ov, x) {
                return RedBox::Const { ty, bits: r };
            }
        }
        let x = self.materialize(a);
        let v = self.un(op, ty, ov, x);
        self.var(v)
    }

    /// `a op b`, a bool.
    pub fn red_cmp(&mut self, op: CmpOp, a: &RedBox, b: &RedBox) -> RedBox {
        debug_assert_eq!(a.ty(), b.ty());
        if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
            return RedBox::Const { ty: ValTy::Bool, bits: fold_cmp(op, a.ty(), x, y) };
        }
        let (x, y) = (self.materialize(a), self.materialize(b));
        let v = self.cmp(op, a.ty(), x, y);
        self.var(v)
    }

    /// `a as to`.
    pub fn red_cast(&mut self, a: &RedBox, to: ValTy) -> RedBox {
        if let Some(x) = a.as_const() {
            return RedBox::Const { ty: to, bits: fold_cast(a.ty(), to, x) };
        }
        if a.ty() == to {
            return *a;
        }
        let x = self.materialize(a);
        let v = self.cast(a.ty(), to, x);
        self.var(v)
    }

    /// A load of type `ty` at `base + offset` (always residual: reads that may
    /// happen at compile time are done by the generating extension itself).
    pub fn red_load(&mut self, ty: ValTy, base: &RedBox, offset: i32) -> RedBox {
        let p = self.materialize(base);
        let v = self.load(ty, p, offset);
        self.var(v)
    }

    /// A store of `value` at `base + offset`.
    pub fn red_store(&mut self, base: &RedBox, offset: i32, value: &RedBox) {
        let (p, x) = (self.materialize(base), self.materialize(value));
        self.store(value.ty(), p, offset, x);
    }

    /// `v.len()` of a `Vec<T>` at `addr`, its fields at the probed offsets
    /// ([`crate::heap::vec_layout`]).
    pub fn red_vec_len(&mut self, addr: &RedBox, layout: (i32, i32)) -> RedBox {
        self.red_load(ValTy::U64, addr, layout.1)
    }

    /// The address of element `index` of a `Vec<T>` at `addr` (elements of
    /// `size` bytes), after Rust's bounds check.
    pub fn red_vec_elem(&mut self, addr: &RedBox, index: &RedBox, size: u64, layout: (i32, i32)) -> RedBox {
        let len = self.red_vec_len(addr, layout);
        self.red_bounds_check(index, &len);
        let buf = self.red_load(ValTy::Ptr, addr, layout.0);
        let off = self.red_bin(BinOp::Mul, Overflow::Wrap, index, &RedBox::u64(size));
        let off = self.red_cast(&off, ValTy::Ptr);
        self.red_bin(BinOp::Add, Overflow::Wrap, &buf, &off)
    }

    /// Checks `index < len` (both `usize`); folds away when both are known and in bounds.
    pub fn red_bounds_check(&mut self, index: &RedBox, len: &RedBox) {
        if let (Some(i), Some(n)) = (index.as_const(), len.as_const()) {
            if i < n {
                return;
            }
        }
        let (i, n) = (self.materialize(index), self.materialize(len));
        self.bounds_check(i, n);
    }
}
