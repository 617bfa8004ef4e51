//! Residual value types, operations, and their exact Rust semantics.
//!
//! Constants are 64-bit words: integers sign- or zero-extended from their width,
//! bools 0 or 1, floats their IEEE bits, pointers their address. [`fold_bin`],
//! [`fold_un`], [`fold_cmp`] and [`fold_cast`] compute what Rust computes, so
//! that folding a constant at compile time and running the residual operation
//! give the same result; operations that panic in Rust return an [`ErrorKind`].
//!
//! Architecture Invariant: this file is the one definition of operation
//! semantics; the backends are tested against it (the conformance suite).

use std::fmt;

/// The type of a residual value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ValTy {
    /// An integer of 8, 16, 32 or 64 bits (`isize`/`usize` are 64-bit).
    Int {
        /// Width in bits.
        bits: u8,
        /// Signedness.
        signed: bool,
    },
    /// `bool`, 0 or 1.
    Bool,
    /// `f64`.
    F64,
    /// An address.
    Ptr,
}

#[allow(missing_docs)]
impl ValTy {
    pub const I8: ValTy = ValTy::Int { bits: 8, signed: true };
    pub const I16: ValTy = ValTy::Int { bits: 16, signed: true };
    pub const I32: ValTy = ValTy::Int { bits: 32, signed: true };
    pub const I64: ValTy = ValTy::Int { bits: 64, signed: true };
    pub const U8: ValTy = ValTy::Int { bits: 8, signed: false };
    pub const U16: ValTy = ValTy::Int { bits: 16, signed: false };
    pub const U32: ValTy = ValTy::Int { bits: 32, signed: false };
    pub const U64: ValTy = ValTy::Int { bits: 64, signed: false };
    pub const ALL_INTS: [ValTy; 8] =
        [ValTy::I8, ValTy::I16, ValTy::I32, ValTy::I64, ValTy::U8, ValTy::U16, ValTy::U32, ValTy::U64];

    /// Width in bits of the value (bools are 8 bits wide, as in Rust).
    pub fn bits(self) -> u32 {
        match self {
            ValTy::Int { bits, .. } => bits as u32,
            ValTy::Bool => 8,
            ValTy::F64 | ValTy::Ptr => 64,
        }
    }

    /// Whether this is a signed integer.
    pub fn signed(self) -> bool {
        matches!(self, ValTy::Int { signed: true, .. })
    }

    /// Whether this is an integer.
    pub fn is_int(self) -> bool {
        matches!(self, ValTy::Int { .. })
    }

    /// Brings a word into canonical form for the type: truncated to the width
    /// and sign- or zero-extended back to 64 bits.
    pub fn canon(self, w: u64) -> u64 {
        match self {
            ValTy::Int { bits: 64, .. } | ValTy::F64 | ValTy::Ptr => w,
            ValTy::Int { bits, signed: true } => {
                let s = 64 - bits as u32;
                (((w << s) as i64) >> s) as u64
            }
            ValTy::Int { bits, signed: false } => w & ((1u64 << bits) - 1),
            ValTy::Bool => (w != 0) as u64,
        }
    }

    fn min_signed(self) -> u64 {
        self.canon(1u64 << (self.bits() - 1))
    }
}

impl fmt::Display for ValTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValTy::Int { bits, signed } => write!(f, "{}{bits}", if *signed { 'i' } else { 'u' }),
            ValTy::Bool => f.write_str("bool"),
            ValTy::F64 => f.write_str("f64"),
            ValTy::Ptr => f.write_str("ptr"),
        }
    }
}

/// What happens on integer overflow: Rust's `+` panics with overflow checks
/// on (debug builds) and wraps without them; `wrapping_add` always wraps.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Overflow {
    /// Wrap around (and mask shift amounts; `MIN / -1` is `MIN` and
    /// `MIN % -1` is 0, as `wrapping_div` and `wrapping_rem` give).
    Wrap,
    /// Leave through an error exit, as Rust panics.
    Check,
}

/// Binary operations on two values of the same type (shift amounts may be any integer).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
}

impl BinOp {
    /// Every binary operation, in declaration order.
    pub const ALL: [BinOp; 12] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Min,
        BinOp::Max,
    ];

    /// The name in listings.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }
}

/// Unary operations.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(missing_docs)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
}

impl UnOp {
    /// Every unary operation, in declaration order.
    pub const ALL: [UnOp; 3] = [UnOp::Neg, UnOp::Not, UnOp::Abs];

    /// The name in listings.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
        }
    }
}

/// Comparisons (signedness from the operand type; floats are ordered as in Rust).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(missing_docs)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Every comparison, in declaration order.
    pub const ALL: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];

    /// The comparison that holds exactly where this one does not.
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }

    /// The name in listings.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// Why residual code left through an error exit: the conditions under which
/// the interpreter, run as plain Rust, would have panicked.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ErrorKind {
    /// Integer division by zero.
    DivideByZero,
    /// Integer remainder by zero.
    RemainderByZero,
    /// Arithmetic overflow of the given operation (with overflow checks, or
    /// `MIN / -1`, which always panics).
    Overflow(BinOp),
    /// Negation overflow (`-MIN` with overflow checks).
    NegOverflow,
    /// An index past the end: the index and the length are in the frame.
    IndexOutOfBounds,
    /// A Rust function called from residual code panicked; its payload is
    /// kept for the caller to resume.
    CallbackPanicked,
    /// `panic!`/`unreachable!` reached in residual code: the message's index.
    Abort(u32),
    /// Not an error: a flexswitch got no case for its value (bound reached or
    /// compilation declined); the frame holds this many words (the live values,
    /// then the promoted value) for the interpreter to continue from.
    Resume(u32),
}

impl ErrorKind {
    /// The status word residual code returns for this error (never 0).
    pub fn code(self) -> u64 {
        let (k, payload): (u64, u64) = match self {
            ErrorKind::DivideByZero => (1, 0),
            ErrorKind::RemainderByZero => (2, 0),
            ErrorKind::Overflow(op) => (3, op as u64),
            ErrorKind::NegOverflow => (4, 0),
            ErrorKind::IndexOutOfBounds => (5, 0),
            ErrorKind::CallbackPanicked => (6, 0),
            ErrorKind::Abort(i) => (7, i as u64),
            ErrorKind::Resume(n) => (8, n as u64),
        };
        k | (payload << 8)
    }

    /// Decodes a status word.
    pub fn from_code(c: u64) -> Option<ErrorKind> {
        let payload = c >> 8;
        Some(match c & 0xff {
            1 => ErrorKind::DivideByZero,
            2 => ErrorKind::RemainderByZero,
            3 => ErrorKind::Overflow(*BinOp::ALL.get(payload as usize)?),
            4 => ErrorKind::NegOverflow,
            5 => ErrorKind::IndexOutOfBounds,
            6 => ErrorKind::CallbackPanicked,
            7 => ErrorKind::Abort(payload as u32),
            8 => ErrorKind::Resume(payload as u32),
            _ => return None,
        })
    }

    /// The message Rust's own panic would carry.
    pub fn message(self) -> String {
        match self {
            ErrorKind::DivideByZero => "attempt to divide by zero".into(),
            ErrorKind::RemainderByZero => "attempt to calculate the remainder with a divisor of zero".into(),
            ErrorKind::Overflow(op) => match op {
                BinOp::Add => "attempt to add with overflow".into(),
                BinOp::Sub => "attempt to subtract with overflow".into(),
                BinOp::Mul => "attempt to multiply with overflow".into(),
                BinOp::Div => "attempt to divide with overflow".into(),
                BinOp::Rem => "attempt to calculate the remainder with overflow".into(),
                BinOp::Shl => "attempt to shift left with overflow".into(),
                BinOp::Shr => "attempt to shift right with overflow".into(),
                other => format!("attempt to {} with overflow", other.name()),
            },
            ErrorKind::NegOverflow => "attempt to negate with overflow".into(),
            ErrorKind::IndexOutOfBounds => "index out of bounds".into(),
            ErrorKind::CallbackPanicked => "a function called from residual code panicked".into(),
            ErrorKind::Abort(i) => format!("explicit panic (message {i})"),
            ErrorKind::Resume(_) => "residual code handed over to the interpreter".into(),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// `a op b` at type `ty`, with Rust's semantics.
pub fn fold_bin(op: BinOp, ty: ValTy, ov: Overflow, a: u64, b: u64) -> Result<u64, ErrorKind> {
    if ty == ValTy::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            // NaN operands give the other operand, as f64::min/max do; the
            // sign of equal zeros is unspecified in Rust: this picks `b`.
            BinOp::Min => {
                if x < y || y.is_nan() {
                    x
                } else {
                    y
                }
            }
            BinOp::Max => {
                if x > y || y.is_nan() {
                    x
                } else {
                    y
                }
            }
            _ => return Err(ErrorKind::Overflow(op)),
        };
        return Ok(r.to_bits());
    }
    let bits = ty.bits();
    let signed = ty.signed();
    let wide = |v: u64| -> i128 {
        if signed {
            v as i64 as i128
        } else {
            v as i128
        }
    };
    let (x, y) = (wide(a), wide(b));
    let checked = |r: i128| -> Result<u64, ErrorKind> {
        if ov == Overflow::Check && wide(ty.canon(r as u64)) != r {
            Err(ErrorKind::Overflow(op))
        } else {
            Ok(ty.canon(r as u64))
        }
    };
    match op {
        BinOp::Add => checked(x + y),
        BinOp::Sub => checked(x - y),
        BinOp::Mul if bits == 64 => {
            // The product of two 64-bit values may not fit an i128: use the native ops.
            let (r, over) = if signed {
                let (r, o) = (a as i64).overflowing_mul(b as i64);
                (r as u64, o)
            } else {
                a.overflowing_mul(b)
            };
            if over && ov == Overflow::Check {
                Err(ErrorKind::Overflow(op))
            } else {
                Ok(r)
            }
        }
        BinOp::Mul => checked(x * y),
        BinOp::Div | BinOp::Rem => {
            if y == 0 {
                return Err(if op == BinOp::Div { ErrorKind::DivideByZero } else { ErrorKind::RemainderByZero });
            }
            if signed && a == ty.min_signed() && y == -1 && ov == Overflow::Check {
                // `MIN / -1` and `MIN % -1` panic in Rust whatever the build
                // (`wrapping_div` and `wrapping_rem` give `MIN` and 0).
                return Err(ErrorKind::Overflow(op));
            }
            // (Computed wide, then wrapped: `MIN / -1` is `-MIN`, which wraps to `MIN`.)
            Ok(ty.canon((if op == BinOp::Div { x / y } else { x % y }) as u64))
        }
        BinOp::And => Ok(ty.canon(a & b)),
        BinOp::Or => Ok(ty.canon(a | b)),
        BinOp::Xor => Ok(ty.canon(a ^ b)),
        BinOp::Shl | BinOp::Shr => {
            // The amount is an unsigned count whatever its type.
            let amount = b as u32;
            if ov == Overflow::Check && (b >= bits as u64) {
                return Err(ErrorKind::Overflow(op));
            }
            let n = amount & (bits - 1);
            let r = if op == BinOp::Shl {
                a << n
            } else if signed {
                ((a as i64) >> n) as u64
            } else {
                ty.canon(a) >> n
            };
            Ok(ty.canon(r))
        }
        BinOp::Min => Ok(ty.canon(x.min(y) as u64)),
        BinOp::Max => Ok(ty.canon(x.max(y) as u64)),
    }
}

/// `op a` at type `ty`.
pub fn fold_un(op: UnOp, ty: ValTy, ov: Overflow, a: u64) -> Result<u64, ErrorKind> {
    match ty {
        ValTy::F64 => {
            let x = f64::from_bits(a);
            Ok(match op {
                UnOp::Neg => -x,
                UnOp::Abs => x.abs(),
                UnOp::Not => return Err(ErrorKind::NegOverflow),
            }
            .to_bits())
        }
        ValTy::Bool => Ok((a == 0) as u64),
        _ => match op {
            UnOp::Not => Ok(ty.canon(!a)),
            UnOp::Neg | UnOp::Abs => {
                let negate = op == UnOp::Neg || (ty.signed() && (a as i64) < 0);
                if !negate {
                    return Ok(a);
                }
                if ov == Overflow::Check && ty.signed() && a == ty.min_signed() {
                    return Err(ErrorKind::NegOverflow);
                }
                if ov == Overflow::Check && !ty.signed() && a != 0 {
                    return Err(ErrorKind::NegOverflow);
                }
                Ok(ty.canon(a.wrapping_neg()))
            }
        },
    }
}

/// `a op b` for a comparison at type `ty`: 0 or 1.
pub fn fold_cmp(op: CmpOp, ty: ValTy, a: u64, b: u64) -> u64 {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match ty {
        ValTy::F64 => f64::from_bits(a).partial_cmp(&f64::from_bits(b)),
        ValTy::Int { signed: true, .. } => Some((a as i64).cmp(&(b as i64))),
        _ => Some(a.cmp(&b)),
    };
    let r = match (op, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Eq, Some(o)) => o == Ordering::Equal,
        (CmpOp::Ne, Some(o)) => o != Ordering::Equal,
        (CmpOp::Lt, Some(o)) => o == Ordering::Less,
        (CmpOp::Le, Some(o)) => o != Ordering::Greater,
        (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
        (CmpOp::Ge, Some(o)) => o != Ordering::Less,
    };
    r as u64
}

/// `a as to`, from type `from`, with Rust's `as` semantics (floats to
/// integers saturate, NaN becomes 0).
pub fn fold_cast(from: ValTy, to: ValTy, a: u64) -> u64 {
    match (from, to) {
        (ValTy::F64, ValTy::F64) => a,
        (ValTy::F64, ValTy::Int { bits, signed }) => {
            // Rust's `as` saturates and maps NaN to 0.
            let x = f64::from_bits(a);
            let r = match (bits, signed) {
                (8, true) => x as i8 as u64,
                (16, true) => x as i16 as u64,
                (32, true) => x as i32 as u64,
                (_, true) => x as i64 as u64,
                (8, false) => x as u8 as u64,
                (16, false) => x as u16 as u64,
                (32, false) => x as u32 as u64,
                (_, false) => x as u64,
            };
            to.canon(r)
        }
        (_, ValTy::F64) => {
            let v = if from.signed() { a as i64 as f64 } else { a as f64 };
            v.to_bits()
        }
        (_, ValTy::Bool) => (a != 0) as u64,
        (_, t) => t.canon(a),
    }
}
