//! Red boxes (PyPy's `rvalue`): where a red value will be at run time.
//!
//! A red box is a compile-time constant or a run-time value of residual code,
//! with its type. Operations on red boxes fold when every operand is a
//! constant and the operation cannot fail; otherwise they emit one residual
//! operation. An operation that would panic in Rust on its constant operands
//! (a division by zero) is emitted too, so that its check fires when, and
//! only if, residual code reaches it.
//!
//! ## Folding
//!
//! **Red boxes** are `Copy`: a typed constant word or a residual value. Operations
//! fold when every operand is constant and the operation cannot fail in Rust;
//! integer identities (`x + 0`, `x * 1`, ...) fold too. An operation that would panic
//! on its constant operands is emitted, so that its check fires when, and only if,
//! residual code reaches it.

use crate::ir::builder::{CallbackFn, ResidualBuilder, SymAddr, Val};
use crate::ir::ops::{fold_bin, fold_cast, fold_cmp, fold_un, BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

/// How an execution in execute mode stopped early: the error the interpreter
/// would have raised (carried as a panic payload to the caller of the
/// execution, through Rust frames only).
#[derive(Debug)]
pub enum ExecStop {
    /// A check failed (with the index and length for bounds).
    Error(ErrorKind, Option<(u64, u64)>),
    /// A Rust function called by the interpreter panicked.
    Panicked(Box<dyn std::any::Any + Send>),
    /// The generating extension cannot execute this operation.
    Unsupported(String),
}

/// Stops an execution (see [`ExecStop`]).
pub fn exec_stop(why: ExecStop) -> ! {
    std::panic::resume_unwind(Box::new(why))
}

fn known(r: &RedBox) -> u64 {
    match r.as_const() {
        Some(w) => w,
        None => exec_stop(ExecStop::Unsupported("a run-time value in execute mode".into())),
    }
}

/// Reads a value of type `ty` at an address.
///
/// # Safety
/// `addr` must be valid for a read of `ty`.
unsafe fn read(ty: ValTy, addr: u64) -> u64 {
    let p = addr as usize;
    // SAFETY: guaranteed by the caller.
    unsafe {
        match ty.bits() {
            8 => ty.canon(*(p as *const u8) as u64),
            16 => ty.canon(*(p as *const u16) as u64),
            32 => ty.canon(*(p as *const u32) as u64),
            _ => *(p as *const u64),
        }
    }
}

/// Writes a value of type `ty` at an address.
///
/// # Safety
/// `addr` must be valid for a write of `ty`.
unsafe fn write(ty: ValTy, addr: u64, w: u64) {
    let p = addr as usize;
    // SAFETY: guaranteed by the caller.
    unsafe {
        match ty.bits() {
            8 => *(p as *mut u8) = w as u8,
            16 => *(p as *mut u16) = w as u16,
            32 => *(p as *mut u32) = w as u32,
            _ => *(p as *mut u64) = w,
        }
    }
}

pub use crate::ir::operand::RedBox;

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
            match fold_bin(op, ty, ov, x, y) {
                Ok(r) => return RedBox::Const { ty, bits: r },
                Err(k) if self.exec => exec_stop(ExecStop::Error(k, None)),
                Err(_) => {}
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
        // The wrapping difference of two integers of one root is the
        // difference of their offsets (`len - (len - 2)` is 2).
        if let (BinOp::Sub, Overflow::Wrap, true, false) = (op, ov, ty.is_int(), b.is_const()) {
            if let Some(d) = self.difference(b, a) {
                return RedBox::Const { ty, bits: ty.canon(d as u64) };
            }
        }
        let ov = if ov == Overflow::Check && self.steps_within_u64(op, a, b) { Overflow::Wrap } else { ov };
        // An integer plus or minus a constant is known as its root (a value
        // not computed so) plus an offset, so that indices computed twice
        // (`sp + 1`, then `sp + 2 - 1`) are seen to be equal, and one that
        // comes back to its root (`sp + 1 - 1`) is the root itself. Offsets
        // are kept modulo the type's width: two values of one root and
        // offset are equal (a checked step that did not leave through an
        // error exit is exact). Coming back to the root emits nothing only
        // for wrapping steps: a checked one may overflow where the offsets
        // met only modulo the width (`x +% 200`, then `x + 56`, in `u8`).
        let step = match (op, b.as_const(), ty.is_int()) {
            (BinOp::Add, Some(k), true) => Some(k as i64),
            (BinOp::Sub, Some(k), true) => Some((k as i64).wrapping_neg()),
            _ => None,
        };
        let linear = step.and_then(|k| {
            let (root, o) = self.linear_form(a)?;
            Some(SymAddr { root, index: None, offset: ty.canon(o.wrapping_add(k) as u64) as i64 })
        });
        if let Some(s) = linear {
            if s.offset == 0 && s.root.ty() == ty && ov == Overflow::Wrap {
                return s.root;
            }
        }
        let (x, y) = (self.materialize(a), self.materialize(b));
        let v = self.bin(op, ty, ov, x, y);
        if let Some(s) = linear {
            self.addrs.insert(v, s);
        }
        self.var(v)
    }

    /// Whether `a op b` cannot overflow as a `u64` because `a` is a length
    /// (below 2^62) plus a constant `c` in `0..2^62`: `- k` for `k <= c`
    /// (`len() - 1` where `len()` counts a virtual element over a length),
    /// `+ k` for `k` below 2^62. Such a checked step is a wrapping one.
    fn steps_within_u64(&self, op: BinOp, a: &RedBox, b: &RedBox) -> bool {
        let (ValTy::Int { signed: false, bits: 64 }, Some(k)) = (a.ty(), b.as_const()) else { return false };
        self.length_plus(a).is_some_and(|c| match op {
            BinOp::Sub => k <= c,
            BinOp::Add => k < 1 << 62,
            _ => false,
        })
    }

    /// `c` where `a` is a known length plus a constant `c` in `0..2^62`.
    fn length_plus(&self, a: &RedBox) -> Option<u64> {
        let s = self.sym_addr(a);
        (self.is_length(&s.root) && s.index.is_none() && (0..1 << 62).contains(&s.offset)).then_some(s.offset as u64)
    }

    /// `m + k` for a list's length `m` below `k` more elements: known to be
    /// `m` plus `k` (see [`ResidualBuilder::sym_addr`]), and never zero
    /// when `k` is positive.
    pub fn red_length_plus(&mut self, m: &RedBox, k: u64) -> RedBox {
        if let RedBox::Var { val, .. } = m {
            self.lengths.insert(*val);
        }
        let r = self.red_bin(BinOp::Add, Overflow::Wrap, m, &RedBox::u64(k));
        if let (RedBox::Var { val, .. }, false) = (r, m.is_const()) {
            // Where `m` was computed from `r` (`m` is `r - k`, and the sum
            // gave `r` back), `r` keeps its own form: the two naming each
            // other would make a cycle, and neither would have a root.
            if self.root_form(m, Some(&r)).0 != r {
                self.addrs.insert(val, SymAddr { root: *m, index: None, offset: k as i64 });
            }
        }
        r
    }

    /// `op a`.
    pub fn red_un(&mut self, op: UnOp, ov: Overflow, a: &RedBox) -> RedBox {
        let ty = a.ty();
        if let Some(x) = a.as_const() {
            match fold_un(op, ty, ov, x) {
                Ok(r) => return RedBox::Const { ty, bits: r },
                Err(k) if self.exec => exec_stop(ExecStop::Error(k, None)),
                Err(_) => {}
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
        if a.ty() == ValTy::Bool {
            // `x != false` and `x == true` are `x` (as `&&` and `||` of a
            // comparison with a constant side leave them).
            let (var, k) = if b.as_const().is_some() { (a, b.as_const()) } else { (b, a.as_const()) };
            match (op, k) {
                (CmpOp::Ne, Some(0)) | (CmpOp::Eq, Some(1)) => return *var,
                _ => {}
            }
        }
        // A length plus a positive constant is not zero.
        if let (CmpOp::Eq | CmpOp::Ne, Some(0)) = (op, b.as_const()) {
            if self.length_plus(a).is_some_and(|c| c > 0) {
                return RedBox::bool(op == CmpOp::Ne);
            }
        }
        // A length plus a constant `c` below 2^62 is at least `c`, so it is
        // at least any `k <= c` (`checked_sub`'s test of `len + 2 >= 1`).
        if let (ValTy::Int { signed: false, bits: 64 }, CmpOp::Ge | CmpOp::Lt, Some(k)) = (a.ty(), op, b.as_const()) {
            if self.length_plus(a).is_some_and(|c| k <= c) {
                return RedBox::bool(op == CmpOp::Ge);
            }
        }
        // Two unsigned integers that are one length plus constants below
        // 2^62 compare as the constants do (neither sum wraps).
        if let (ValTy::Int { signed: false, bits: 64 }, Some((x, y))) = (a.ty(), self.over_one_length(a, b)) {
            return RedBox::Const { ty: ValTy::Bool, bits: fold_cmp(op, a.ty(), x as u64, y as u64) };
        }
        if let Some(r) = self.ordered_cmp(op, a, b, &self.path_intervals()) {
            return r;
        }
        let (x, y) = (self.materialize(a), self.materialize(b));
        let v = self.cmp(op, a.ty(), x, y);
        if let (ValTy::Int { signed: false, bits: 64 }, false) = (a.ty(), self.exec) {
            self.cmps.insert(v, (op, *a, *b));
        }
        self.var(v)
    }

    /// Marks `r` as the length of a list (see [`ResidualBuilder::red_cmp`]).
    pub fn know_length(&mut self, r: &RedBox) {
        if let RedBox::Var { val, ty: ValTy::Int { signed: false, bits: 64 } } = r {
            self.lengths.insert(*val);
        }
    }

    /// The intervals that comparisons taken true on this path since its
    /// last merge point show do not wrap ([`ResidualBuilder::path_conds`]):
    /// `m + j < m + k` (unsigned, `j < k`) holds only where no value from
    /// `m + j` to `m + k` wraps. As `(m, j, k)`.
    pub(crate) fn path_intervals(&self) -> Vec<(RedBox, i64, i64)> {
        let mut out = vec![];
        for c in &self.path_conds {
            let Some((op, x, y)) = self.cmps.get(c) else { continue };
            let (lo, hi) = match op {
                CmpOp::Lt | CmpOp::Le => (x, y),
                CmpOp::Gt | CmpOp::Ge => (y, x),
                _ => continue,
            };
            // `c <= x` for a constant `c`: nothing from `x - c` to `x` wraps.
            if let (Some(c), false) = (lo.as_const(), hi.is_const()) {
                if let (Ok(c), Some(&(m, k))) = (i64::try_from(c), self.offset_chain(hi).last()) {
                    if SMALL_OFFSETS.contains(&c) && SMALL_OFFSETS.contains(&k) && c > 0 {
                        out.push((m, k - c, k));
                    }
                }
                continue;
            }
            let ch = self.offset_chain(hi);
            // The deepest root the two share.
            if let Some((m, j, k)) = self
                .offset_chain(lo)
                .into_iter()
                .rev()
                .find_map(|(m, j)| ch.iter().find(|(n, _)| *n == m).map(|&(_, k)| (m, j, k)))
            {
                if j < k && SMALL_OFFSETS.contains(&j) && SMALL_OFFSETS.contains(&k) {
                    out.push((m, j, k));
                }
            }
        }
        out
    }

    /// Whether `r` is known to be a length ([`ResidualBuilder::know_length`]).
    pub(crate) fn is_length(&self, r: &RedBox) -> bool {
        matches!(r, RedBox::Var { val, .. } if self.lengths.contains(val))
    }

    /// `a op b` folded where `a` and `b` are one root plus offsets that
    /// compare as the values do (see [`ResidualBuilder::ordered_within`]).
    pub(crate) fn ordered_cmp(
        &self,
        op: CmpOp,
        a: &RedBox,
        b: &RedBox,
        intervals: &[(RedBox, i64, i64)],
    ) -> Option<RedBox> {
        let (j, k) = self.ordered_within(a, b, intervals)?;
        Some(RedBox::Const { ty: ValTy::Bool, bits: fold_cmp(op, ValTy::I64, j as u64, k as u64) })
    }

    /// `a` and `b` as one root plus the offsets `(j, k)` where they compare
    /// as their offsets do: within an interval of `intervals` (see
    /// [`ResidualBuilder::path_intervals`]), or, for a root that is a length
    /// (below 2^62), from its interval's start up to 2^62. An index checked
    /// below a stack's length (`base - 1 < len + 1`, by `Vec::get`) makes
    /// the checks of the indices near it fold.
    fn ordered_within(&self, a: &RedBox, b: &RedBox, intervals: &[(RedBox, i64, i64)]) -> Option<(i64, i64)> {
        if intervals.is_empty() || a.is_const() || b.is_const() || a.ty() != ValTy::U64 {
            return None;
        }
        let (ca, cb) = (self.offset_chain(a), self.offset_chain(b));
        intervals.iter().rev().find_map(|&(m, jl, kh)| {
            let (&(_, j), &(_, k)) = (ca.iter().find(|(n, _)| *n == m)?, cb.iter().find(|(n, _)| *n == m)?);
            if !SMALL_OFFSETS.contains(&j) || !SMALL_OFFSETS.contains(&k) {
                return None;
            }
            // A length plus `kh >= 0` is below 2^63: the interval did not
            // wrap below either, and nothing up to 2^62 wraps above.
            let length = self.is_length(&m) && kh >= 0;
            let within = jl <= j.min(k) && (j.max(k) <= kh || length);
            within.then_some((j, k))
        })
    }

    /// `r` and the values it is known as plus a constant (its linear forms,
    /// followed a few steps, as [`ResidualBuilder::root_form`]), each with
    /// that constant: `r` itself first, with 0.
    fn offset_chain(&self, r: &RedBox) -> Vec<(RedBox, i64)> {
        let (mut at, mut off, mut out) = (*r, 0i64, vec![]);
        for _ in 0..8 {
            out.push((at, off));
            match self.linear_form(&at) {
                Some((next, k)) if next != at => {
                    off = off.wrapping_add(k);
                    at = next;
                }
                _ => break,
            }
        }
        out
    }

    /// `(j, k)` where `a` is `m + j` and `b` is `m + k` for a length `m`
    /// and `j`, `k` in `0..2^62`: a value on the way from each to its root
    /// ([`ResidualBuilder::offset_chain`]).
    fn over_one_length(&self, a: &RedBox, b: &RedBox) -> Option<(i64, i64)> {
        if self.lengths.is_empty() || a.is_const() || b.is_const() {
            return None;
        }
        let small = |k: i64| (0..1 << 62).contains(&k);
        let (ca, cb) = (self.offset_chain(a), self.offset_chain(b));
        ca.iter().find_map(|&(m, j)| {
            if !self.is_length(&m) || !small(j) {
                return None;
            }
            cb.iter().find(|(n, k)| *n == m && small(*k)).map(|&(_, k)| (j, k))
        })
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
        if a.ty().is_int() && to.is_int() && to.bits() > a.ty().bits() {
            // Widening is one-to-one: the narrow value is the wide one truncated.
            self.widened.insert(v, x);
        }
        self.var(v)
    }

    /// How the address (or integer) in `r` was computed: itself as the
    /// root if it was not computed by [`ResidualBuilder::red_offset`],
    /// [`ResidualBuilder::red_index_addr`] or by adding a constant.
    pub fn sym_addr(&self, r: &RedBox) -> SymAddr {
        match r {
            RedBox::Var { val, .. } => self.addrs.get(val).copied(),
            RedBox::Const { .. } => None,
        }
        .unwrap_or(SymAddr { root: *r, index: None, offset: 0 })
    }

    /// An index as a root and a constant added to it: `sp + 1` computed
    /// twice gives one pair. The root is looked through widening casts
    /// when nothing is added (a narrow index plus `k` may wrap where the
    /// widened one does not).
    pub fn index_form(&self, index: &RedBox) -> (RedBox, i64) {
        let s = self.sym_addr(index);
        match (s.index, s.offset) {
            (None, 0) | (Some(_), _) => (self.unwiden(index), 0),
            (None, k) if s.root.ty() == index.ty() => (s.root, k),
            (None, _) => (self.unwiden(index), 0),
        }
    }

    /// `r` as a root and a constant added to it ([`ResidualBuilder::red_bin`]):
    /// an integer that is a run-time value.
    pub fn linear_form(&self, r: &RedBox) -> Option<(RedBox, i64)> {
        let s = self.sym_addr(r);
        (r.ty().is_int() && !r.is_const() && s.index.is_none()).then_some((s.root, s.offset))
    }

    /// Sets what `v` is known as: a root plus a constant, or (`None`) itself.
    pub fn set_linear_form(&mut self, v: Val, form: Option<(RedBox, i64)>) {
        match form {
            Some((root, k)) => self.addrs.insert(v, SymAddr { root, index: None, offset: k }),
            None => self.addrs.remove(&v),
        };
    }

    /// `r` as a root and a constant added to it, the roots of forms
    /// followed (a few steps) until one with no form of its own, or `stop`.
    pub fn root_form(&self, r: &RedBox, stop: Option<&RedBox>) -> (RedBox, i64) {
        let (mut root, mut off) = (*r, 0i64);
        for _ in 0..8 {
            if Some(&root) == stop {
                break;
            }
            match self.linear_form(&root) {
                Some((next, k)) if next != root => {
                    off = off.wrapping_add(k);
                    root = next;
                }
                _ => break,
            }
        }
        (root, off)
    }

    /// `d` such that `c` is `a + d`, when that is known: both constants, or
    /// both computed from one root by adding constants.
    pub fn difference(&self, a: &RedBox, c: &RedBox) -> Option<i64> {
        let ty = a.ty();
        if ty != c.ty() || !ty.is_int() {
            return None;
        }
        if let (Some(x), Some(y)) = (a.as_const(), c.as_const()) {
            return Some(ty.canon(y.wrapping_sub(x)) as i64);
        }
        // `c` known as `a` plus a constant, or both from one root. A form
        // stops at a root that has a form of its own (`red_length_plus`):
        // the roots are followed (`c`'s up to `a` on the way).
        self.linear_form(c)?;
        let (rc, oc) = self.root_form(c, Some(a));
        if rc == *a {
            return Some(ty.canon(oc as u64) as i64);
        }
        let (ra, oa) = self.root_form(a, None);
        (ra == rc).then(|| ty.canon(oc.wrapping_sub(oa) as u64) as i64)
    }

    /// The value `r` widens (through any number of widening casts), or `r`.
    pub fn unwiden(&self, r: &RedBox) -> RedBox {
        let mut r = *r;
        while let RedBox::Var { val, .. } = r {
            match self.widened.get(&val) {
                Some(&n) => r = self.var(n),
                None => break,
            }
        }
        r
    }

    /// The value `v` was widened from, if it was.
    pub fn widened_from(&self, v: Val) -> Option<Val> {
        self.widened.get(&v).copied()
    }

    /// A load of type `ty` at `base + offset` (always residual: reads that may
    /// happen at compile time are done by the generating extension itself).
    pub fn red_load(&mut self, ty: ValTy, base: &RedBox, offset: i32) -> RedBox {
        if self.exec {
            let a = known(base).wrapping_add(offset as i64 as u64);
            // SAFETY: the interpreter reads here now; residual code would have.
            return RedBox::Const { ty, bits: unsafe { read(ty, a) } };
        }
        let p = self.materialize(base);
        let v = self.load(ty, p, offset);
        self.var(v)
    }

    /// A store of `value` at `base + offset`.
    pub fn red_store(&mut self, base: &RedBox, offset: i32, value: &RedBox) {
        if self.exec {
            let a = known(base).wrapping_add(offset as i64 as u64);
            // SAFETY: the interpreter writes here now; residual code would have.
            unsafe { write(value.ty(), a, known(value)) };
            return;
        }
        let (p, x) = (self.materialize(base), self.materialize(value));
        self.store(value.ty(), p, offset, x);
    }

    /// A call of a Rust callback with red arguments: recorded, or (in
    /// execute mode) made now.
    pub fn red_call(&mut self, func: CallbackFn, name: &str, args: &[RedBox], rets: &[ValTy]) -> Vec<RedBox> {
        if self.exec {
            let mut buf = vec![0u64; args.len().max(rets.len()).max(1)];
            for (k, a) in args.iter().enumerate() {
                buf[k] = known(a);
            }
            // SAFETY: the buffer holds the most of the arguments and results
            // (at least one word), and the addresses among the arguments are
            // of live objects: in execute mode they are the interpreter's
            // own, read from its state.
            let status = unsafe { func(buf.as_mut_ptr()) };
            if status != 0 {
                match crate::run::residual::take_callback_panic(status) {
                    Some(p) => exec_stop(ExecStop::Panicked(p)),
                    None => exec_stop(ExecStop::Error(
                        ErrorKind::from_code(status).unwrap_or(ErrorKind::Abort(u32::MAX)),
                        None,
                    )),
                }
            }
            return rets.iter().enumerate().map(|(k, t)| RedBox::constant(*t, buf[k])).collect();
        }
        self.recorded_call(args, |b, a| b.call(func, name, a, rets))
    }

    /// A call recorded in residual code: `record` gets the arguments as
    /// run-time values and returns the call's results, which become red
    /// boxes.
    fn recorded_call(
        &mut self,
        args: &[RedBox],
        record: impl FnOnce(&mut Self, &[(Val, ValTy)]) -> Vec<Val>,
    ) -> Vec<RedBox> {
        let a: Vec<(Val, ValTy)> = args.iter().map(|r| (self.materialize(r), r.ty())).collect();
        let v = record(self, &a);
        v.into_iter().map(|val| self.var(val)).collect()
    }

    /// [`ResidualBuilder::red_call`] of a runtime helper that writes only
    /// what its caller forgets itself (a `Vec` it grows, the continuation
    /// stack): the facts about other memory stay.
    pub fn red_call_private(&mut self, func: CallbackFn, name: &str, args: &[RedBox], rets: &[ValTy]) -> Vec<RedBox> {
        let calls = self.calls;
        let r = self.red_call(func, name, args, rets);
        self.calls = calls;
        r
    }

    /// [`ResidualBuilder::red_call_private`] of a helper without effects that
    /// residual code sees (see [`ResidualBuilder::call_pure`]): the call is
    /// dropped when its results are unused.
    pub fn red_call_pure(&mut self, func: CallbackFn, name: &str, args: &[RedBox], rets: &[ValTy]) -> Vec<RedBox> {
        if self.exec {
            return self.red_call_private(func, name, args, rets);
        }
        self.recorded_call(args, |b, a| b.call_pure(func, name, a, rets))
    }

    /// A call of a function of the interpreter's without effects (`#[jit_pure]`)
    /// whose arguments and results are values: run now where every argument
    /// is a constant, its results constants, as an operation on constant red
    /// boxes folds; else (or where it panics now: then it is left to fail
    /// at run time, as the interpreter would) a [`ResidualBuilder::red_call`].
    /// Also whether it ran now.
    pub fn red_call_folding(
        &mut self,
        func: CallbackFn,
        name: &str,
        args: &[RedBox],
        rets: &[ValTy],
    ) -> (Vec<RedBox>, bool) {
        let consts: Option<Vec<u64>> = args.iter().map(RedBox::as_const).collect();
        if let (Some(consts), false) = (consts, self.exec) {
            let mut buf = vec![0u64; args.len().max(rets.len()).max(1)];
            buf[..consts.len()].copy_from_slice(&consts);
            // SAFETY: the buffer holds the most of the arguments and results
            // (at least one word), and the arguments are values, no addresses.
            let status = unsafe { func(buf.as_mut_ptr()) };
            if status == 0 {
                return (rets.iter().enumerate().map(|(k, t)| RedBox::constant(*t, buf[k])).collect(), true);
            }
            // The panic's payload is not kept: the call is made again at
            // run time.
            drop(crate::run::residual::take_callback_panic(status));
        }
        (self.red_call(func, name, args, rets), false)
    }

    /// Branches to a side that calls `func` (a [`ResidualBuilder::red_call_private`])
    /// when `cond` holds and then reads the fields `reread` (type, address,
    /// offset) again, and back: the current block goes on after it with
    /// those values, or `kept` where the call was not made (returned in
    /// `reread`'s order). Not counted as a run-time branch of the
    /// interpreted program.
    pub fn red_call_if(
        &mut self,
        cond: &RedBox,
        func: CallbackFn,
        name: &str,
        args: &[RedBox],
        reread: &[(ValTy, RedBox, i32)],
        kept: &[RedBox],
    ) -> Vec<RedBox> {
        debug_assert_eq!(reread.len(), kept.len());
        if cond.as_const() == Some(0) {
            return kept.to_vec();
        }
        let call_and_read = |b: &mut Self| {
            // Taken rarely: a call that clobbers no register.
            b.cold = true;
            b.red_call_private(func, name, args, &[]);
            b.cold = false;
            reread.iter().map(|(ty, addr, off)| b.red_load(*ty, addr, *off)).collect::<Vec<_>>()
        };
        if cond.as_const().is_some() || self.exec {
            return call_and_read(self);
        }
        let c = self.materialize(cond);
        let tys: Vec<ValTy> = reread.iter().map(|(ty, _, _)| *ty).collect();
        let (call, _) = self.new_label(&[]);
        let (go, params) = self.new_label(&tys);
        let kept: Vec<Val> = kept.iter().map(|r| self.materialize(r)).collect();
        self.branch(c, (call, &[]), (go, &kept));
        // (Not a branch of the interpreted program: see `Lineage`.)
        self.branches -= 1;
        self.switch_to(call);
        let read = call_and_read(self);
        let read: Vec<Val> = read.iter().map(|r| self.materialize(r)).collect();
        self.jump(go, &read);
        self.switch_to(go);
        params.into_iter().map(|val| self.var(val)).collect()
    }

    /// `*dst = (*src).clone()` for a field of type `T`, which the analysis
    /// does not model, in two places of one struct (a frame's `Rc`, cloned
    /// with the frame). Where `T` is an `Rc` whose counts residual code may
    /// change ([`crate::run::heap::rc_counts_in_place`]), in place: the
    /// strong count of `src`'s `Rc` raised, its word stored at `dst`, then
    /// the count of the `Rc` that `dst` held lowered, and the `Rc` dropped
    /// by Rust where that was its last count. The raise comes first, so a
    /// place cloned into itself, or two places of one `Rc`, keep their
    /// count. Else, and in execute mode, Rust's own `clone` called
    /// ([`crate::run::heap::clone_into`]).
    pub fn red_clone_into<T: Clone + 'static>(&mut self, dst: &RedBox, src: &RedBox) {
        use crate::run::heap::{clone_into, rc_counts_in_place, rc_drop_last};
        if self.exec || !rc_counts_in_place::<T>() {
            self.red_call(clone_into::<T>, "clone_into", &[*dst, *src], &[]);
            return;
        }
        let one = RedBox::u64(1);
        let new = self.red_load(ValTy::Ptr, src, 0);
        let old = self.red_load(ValTy::Ptr, dst, 0);
        let count = self.red_load(ValTy::U64, &new, 0);
        let raised = self.red_bin(BinOp::Add, Overflow::Wrap, &count, &one);
        self.red_store(&new, 0, &raised);
        self.red_store(dst, 0, &new);
        let count = self.red_load(ValTy::U64, &old, 0);
        let lowered = self.red_bin(BinOp::Sub, Overflow::Wrap, &count, &one);
        self.red_store(&old, 0, &lowered);
        let last = self.red_cmp(CmpOp::Eq, &lowered, &RedBox::u64(0));
        self.red_call_if(&last, rc_drop_last::<T>, "rc_drop_last", &[old], &[], &[]);
    }

    /// `*dst = *src` for a `Copy` value of type `T` that the analysis keeps
    /// whole (a handle, a struct of values): its bytes copied in words, or
    /// in the widest pieces its alignment allows.
    pub fn red_copy_into<T: Copy>(&mut self, dst: &RedBox, src: &RedBox) {
        let (size, align) = (std::mem::size_of::<T>(), std::mem::align_of::<T>());
        let mut at = 0;
        while at < size {
            let ty = match (size - at).min(align).min(8) {
                8.. => ValTy::U64,
                4..=7 => ValTy::U32,
                2 | 3 => ValTy::U16,
                _ => ValTy::U8,
            };
            let x = self.red_load(ty, src, at as i32);
            self.red_store(dst, at as i32, &x);
            at += ty.bits() as usize / 8;
        }
    }

    /// A direct call of a portal's code specialized to its greens (see
    /// `run::direct`): where the entry at `entry` has code and fewer than
    /// `MAX_NATIVE_DEPTH` direct calls are under way, a call of that code
    /// with its inputs `fast` (the count raised during it, and what the call
    /// left in the arena freed after it); else, and in execute mode, the
    /// callback `slow` with `slow_args` (it compiles the entry, keeps to the
    /// stack budget, or calls the portal). Results of types `rets` either way.
    /// Not counted as run-time branches of the interpreted program.
    pub fn red_call_direct(
        &mut self,
        entry: u64,
        fast: &[RedBox],
        slow: CallbackFn,
        name: &str,
        slow_args: &[RedBox],
        rets: &[ValTy],
    ) -> Vec<RedBox> {
        use crate::run::direct::{depth_cell, MAX_NATIVE_DEPTH};
        use crate::run::heap::{arena_len_cell, arena_release_to};
        if self.exec {
            return self.red_call(slow, name, slow_args, rets);
        }
        let (ptr, word) = (ValTy::Ptr, ValTy::Int { bits: 64, signed: false });
        let fast: Vec<(Val, ValTy)> = fast.iter().map(|r| (self.materialize(r), r.ty())).collect();
        let slow_args: Vec<(Val, ValTy)> = slow_args.iter().map(|r| (self.materialize(r), r.ty())).collect();
        let e = self.konst(ptr, entry);
        let code = self.load(ptr, e, 0);
        let depth_at = self.konst(ptr, depth_cell() as usize as u64);
        let depth = self.load(word, depth_at, 0);
        let null = self.konst(ptr, 0);
        let has_code = self.cmp(CmpOp::Ne, ptr, code, null);
        let limit = self.konst(word, MAX_NATIVE_DEPTH);
        let room = self.cmp(CmpOp::Lt, word, depth, limit);
        let go = self.bin(BinOp::And, ValTy::Bool, Overflow::Wrap, has_code, room);
        let (fast_l, _) = self.new_label(&[]);
        let (slow_l, _) = self.new_label(&[]);
        let (join, params) = self.new_label(rets);
        self.branch(go, (fast_l, &[]), (slow_l, &[]));
        self.branches -= 1;
        self.switch_to(fast_l);
        let arena_at = self.konst(ptr, arena_len_cell() as usize as u64);
        let mark = self.load(word, arena_at, 0);
        let one = self.konst(word, 1);
        let deeper = self.bin(BinOp::Add, word, Overflow::Wrap, depth, one);
        self.store(word, depth_at, 0, deeper);
        let out = self.call_code(code, entry, &fast, rets);
        self.store(word, depth_at, 0, depth);
        let now = self.load(word, arena_at, 0);
        let grew = self.cmp(CmpOp::Ne, word, now, mark);
        let (free, _) = self.new_label(&[]);
        self.branch(grew, (free, &[]), (join, &out));
        self.branches -= 1;
        self.switch_to(free);
        self.call(arena_release_to, "arena_release", &[(mark, word)], &[]);
        self.jump(join, &out);
        self.switch_to(slow_l);
        let out = self.call(slow, name, &slow_args, rets);
        self.jump(join, &out);
        self.switch_to(join);
        params.into_iter().map(|val| self.var(val)).collect()
    }

    /// The address `offset` bytes past `addr` (a field inside an object).
    pub fn red_offset(&mut self, addr: &RedBox, offset: u64) -> RedBox {
        let s = self.sym_addr(addr);
        let r = self.red_bin(BinOp::Add, Overflow::Wrap, addr, &RedBox::constant(ValTy::Ptr, offset));
        if let (RedBox::Var { val, .. }, false) = (r, r == *addr) {
            self.addrs.insert(val, s.plus(offset as i64));
        }
        r
    }

    /// The address of element `index` (elements of `size` bytes) of the
    /// buffer at `buf`, no check made.
    pub fn red_index_addr(&mut self, buf: &RedBox, index: &RedBox, size: u64) -> RedBox {
        if let Some(k) = index.as_const() {
            return self.red_offset(buf, k.wrapping_mul(size));
        }
        let s = self.sym_addr(buf);
        let off = self.red_bin(BinOp::Mul, Overflow::Wrap, index, &RedBox::u64(size));
        let off = self.red_cast(&off, ValTy::Ptr);
        let r = self.red_bin(BinOp::Add, Overflow::Wrap, buf, &off);
        if let RedBox::Var { val, .. } = r {
            let (i, k) = self.index_form(index);
            let at = match s.index {
                None => {
                    SymAddr { index: Some((i, size)), offset: s.offset.wrapping_add(k.wrapping_mul(size as i64)), ..s }
                }
                Some(_) => SymAddr { root: *buf, index: Some((i, size)), offset: k.wrapping_mul(size as i64) },
            };
            self.addrs.insert(val, at);
        }
        r
    }

    /// `v.len()` of a `Vec<T>` at `addr`, its fields at the probed offsets
    /// ([`crate::run::heap::vec_layout`]).
    pub fn red_vec_len(&mut self, addr: &RedBox, layout: (i32, i32)) -> RedBox {
        let len = self.red_load(ValTy::U64, addr, layout.1);
        self.know_length(&len);
        len
    }

    /// The address of element `index` of a `Vec<T>` at `addr` (elements of
    /// `size` bytes), after Rust's bounds check.
    pub fn red_vec_elem(&mut self, addr: &RedBox, index: &RedBox, size: u64, layout: (i32, i32)) -> RedBox {
        let len = self.red_vec_len(addr, layout);
        self.red_bounds_check(index, &len);
        let buf = self.red_load(ValTy::Ptr, addr, layout.0);
        self.red_index_addr(&buf, index, size)
    }

    /// Checks `index < len` (both `usize`); folds away when both are known and in bounds.
    pub fn red_bounds_check(&mut self, index: &RedBox, len: &RedBox) {
        if let (Some(i), Some(n)) = (index.as_const(), len.as_const()) {
            if i < n {
                return;
            }
            if self.exec {
                exec_stop(ExecStop::Error(ErrorKind::IndexOutOfBounds, Some((i, n))));
            }
        }
        let (i, n) = (self.materialize(index), self.materialize(len));
        self.bounds_check(i, n);
    }
}

/// The first `N` red boxes of `v` (a flattened enum read out of a longer
/// layout). One function per `N`, not one per call site of generated code.
pub fn first_n<const N: usize>(v: &[RedBox]) -> [RedBox; N] {
    let mut out = [RedBox::Const { ty: ValTy::U64, bits: 0 }; N];
    out.copy_from_slice(&v[..N]);
    out
}

/// The next `N` red boxes of `it` (the inputs of a compilation).
pub fn next_n<const N: usize>(it: &mut dyn Iterator<Item = RedBox>) -> [RedBox; N] {
    let mut out = [RedBox::Const { ty: ValTy::U64, bits: 0 }; N];
    for slot in &mut out {
        *slot = it.next().expect("an input");
    }
    out
}

/// The constant words of `v`, 0 where a box is not constant (a flattened
/// enum handed to a function run at compile time).
pub fn const_words<const N: usize>(v: &[RedBox; N]) -> [u64; N] {
    let mut out = [0; N];
    for (w, b) in out.iter_mut().zip(v) {
        *w = b.as_const().unwrap_or(0);
    }
    out
}

/// The offsets from a root that orderings are kept for ([`ResidualBuilder::ordered_within`]):
/// small enough that their differences and sums with a length never overflow.
const SMALL_OFFSETS: std::ops::Range<i64> = -(1 << 40)..1 << 40;
