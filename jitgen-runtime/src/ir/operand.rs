//! The operands of residual operations as the compiler holds them: a red box
//! is a typed constant word or a residual value (PyPy's rvalue). The type is
//! plain data and lives here, with the IR it names values of; the operations
//! on red boxes that fold or emit are the compiler's (`compile::redbox`).

use crate::ir::function::Val;
use crate::ir::ops::ValTy;

/// A red value at compile time: a constant, or a value of residual code.
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
    /// `N` constants of the types `tys` and the words `words` (a flattened
    /// enum known while compiling).
    pub fn constants<const N: usize>(tys: &[ValTy], words: &[u64]) -> [RedBox; N] {
        let mut out = [RedBox::Const { ty: ValTy::U64, bits: 0 }; N];
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = RedBox::constant(tys[k], words[k]);
        }
        out
    }
    /// `N` zeros of the types `tys` (the unused slots of a flattened enum).
    pub fn zeros<const N: usize>(tys: &[ValTy]) -> [RedBox; N] {
        RedBox::constants(tys, &[0; N])
    }
    /// A flattened enum value of the slot types `tys`: variant `tag`, its
    /// payload's parts at their offsets, zeros elsewhere.
    pub fn enum_value<const N: usize>(tys: &[ValTy], tag: u64, parts: &[(usize, &[RedBox])]) -> [RedBox; N] {
        let mut e = RedBox::zeros::<N>(tys);
        e[0] = RedBox::constant(ValTy::U32, tag);
        for (off, part) in parts {
            e[*off..*off + part.len()].copy_from_slice(part);
        }
        e
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
