//! Unrolling of counted loops: a loop of one small block whose test compares
//! an induction variable (a parameter stepped by a constant) with a bound
//! that does not change in the loop runs [`UNROLL_TURNS`] turns per jump
//! when a guard at its entry shows that that many turns are left.
//!
//! ```text
//! B(p..):    body; c = iv' <= bound; branch c, B(next..), E(..)
//! ```
//!
//! becomes (the other predecessors of `B` now jumping to `G`)
//!
//! ```text
//! G(p..):    limit = bound - (k-1)*step; go = limit < bound && iv <= limit
//!            branch go, U(p.., limit), B(p..)
//! U(p.., limit): body x k (no tests between)
//!            branch iv_k <= limit, U(next_k.., limit), T()
//! T():       branch c_k, B(next_k..), E(..)_k
//! B:         unchanged: the turns left over, one at a time
//! ```
//!
//! A test `iv' != bound` counts too when the step is one (up or down, a
//! Brainfuck `[-]` once its cell is carried in a register): the turns left
//! are the distance to the bound modulo the type's width, which `G` and `U`
//! compare unsigned with `UNROLL_TURNS - 1` instead of comparing `iv` with
//! a limit. Ordered tests need 64-bit integers; `!=` takes any width, its
//! constant step read as a signed one of that width (`+ 255` in `u8`).
//!
//! In the copies, wrapping additions to a loop parameter are reassociated:
//! `x + a1 + a2` becomes `x + (a1 + a2)`, so the chain that carries `x` from
//! turn to turn has one addition per jump, not one per turn (TLC f1's
//! `x += i & j`), and an induction variable's copies add `step`, `2*step`..
//! to the same value. Wrapping addition is associative, so this is exact;
//! additions that check overflow are copied as they are.
//!
//! Architecture Invariant: the turns of `U` are exactly turns of the original loop, in
//! order: the guard proves, without overflow, that the tests between them
//! would all have passed. Errors (checked arithmetic, bounds checks) leave
//! at the same turn as before.

use crate::ir::function::{EntityRef, Inst, Label, RBlock, ResidualFunction, Terminator, Val};
use crate::ir::ops::{BinOp, CmpOp, Overflow, ValTy};
use rustc_hash::FxHashMap;

/// Turns of a counted loop run per jump of its unrolled version.
pub const UNROLL_TURNS: usize = 4;

/// The most operations a loop's block may have to be unrolled.
pub const MAX_UNROLLED_OPS: usize = 8;

/// A counted loop found in a block: it continues while
/// `iv' test bound`, where `iv' = param[iv] + step`.
struct Counted {
    iv: usize,
    step: i64,
    /// The comparison that continues the loop, with the stepped value on
    /// its left.
    test: CmpOp,
    bound: Val,
    ty: ValTy,
}

impl ResidualFunction {
    /// Unrolls each counted loop of one block (see the module doc).
    pub fn unroll_counted_loops(&mut self) {
        let mut consts: FxHashMap<Val, u64> = FxHashMap::default();
        for (_, b) in self.live_blocks() {
            for i in &b.insts {
                if let Inst::Const { dst, bits, .. } = i {
                    consts.insert(*dst, *bits);
                }
            }
        }
        for b in self.blocks.keys().skip(1) {
            if let Some(c) = self.counted_loop(b, &consts) {
                self.unroll(b, &c, &mut consts);
            }
        }
    }

    fn counted_loop(&self, me: Label, consts: &FxHashMap<Val, u64>) -> Option<Counted> {
        let blk = &self.blocks[me];
        let Some(Terminator::Branch { cond, if_true, if_false }) = &blk.term else { return None };
        let (on_true, next) = match (if_true.0 == me, if_false.0 == me) {
            (true, false) => (true, &if_true.1),
            (false, true) => (false, &if_false.1),
            _ => return None,
        };
        if blk.insts.len() > MAX_UNROLLED_OPS
            || blk.insts.iter().any(|i| matches!(i, Inst::Call { .. } | Inst::CallCode { .. }))
        {
            return None;
        }
        let def = |v: Val| blk.insts.iter().find(|i| i.defs().first() == Some(&v));
        let Some(Inst::Cmp { op, ty, a, b: rhs, .. }) = def(*cond) else { return None };
        // Ordered tests on 64-bit integers (a narrower bound could wrap
        // around within a turn's span); `!=` on any width.
        let wide = matches!(ty, ValTy::Int { bits: 64, .. });
        if !(wide || matches!(ty, ValTy::Int { .. }) && matches!(op, CmpOp::Ne | CmpOp::Eq)) {
            return None;
        }
        // `param[i] + step`, passed on as the next `param[i]`.
        let stepped = |v: Val| -> Option<(usize, i64)> {
            let (x, c, neg) = match def(v)? {
                Inst::Bin { op: BinOp::Add, ov: Overflow::Wrap, ty: t, a, b, .. } if t == ty => {
                    match (consts.get(a), consts.get(b)) {
                        (None, Some(c)) => (*a, *c, false),
                        (Some(c), None) => (*b, *c, false),
                        _ => return None,
                    }
                }
                Inst::Bin { op: BinOp::Sub, ov: Overflow::Wrap, ty: t, a, b, .. } if t == ty => {
                    (*a, *consts.get(b)?, true)
                }
                _ => return None,
            };
            let i = blk.params.iter().position(|p| *p == x)?;
            // The constant as a signed step of the type's width (`+ 255`
            // in `u8` steps down by one).
            let shift = 64 - ty.bits();
            let c = ((c << shift) as i64) >> shift;
            let step = if neg { c.wrapping_neg() } else { c };
            (next.get(i) == Some(&v)).then_some((i, step))
        };
        let flip = |op: CmpOp| match op {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        };
        let ((iv, step), test, bound) = match (stepped(*a), stepped(*rhs)) {
            (Some(s), _) => (s, *op, *rhs),
            (None, Some(s)) => (s, flip(*op), *a),
            (None, None) => return None,
        };
        let test = if on_true { test } else { test.negated() };
        let counts = match test {
            CmpOp::Lt | CmpOp::Le => step > 0 && wide,
            CmpOp::Gt | CmpOp::Ge => step < 0 && wide,
            // Stepping by one, a `!=` test meets its bound after a number
            // of turns that the guard computes (see `unroll`).
            CmpOp::Ne => step.unsigned_abs() == 1,
            CmpOp::Eq => false,
        };
        if !counts || step.unsigned_abs() > 1 << 20 {
            return None;
        }
        // The bound does not change: defined before the loop, or a
        // parameter passed on as it is.
        let invariant = match blk.params.iter().position(|p| *p == bound) {
            Some(q) => next.get(q) == Some(&bound),
            None => def(bound).is_none(),
        };
        if !invariant {
            return None;
        }
        Some(Counted { iv, step, test, bound, ty: *ty })
    }

    fn fresh(&mut self, like: Val) -> Val {
        self.vals.push(self.vals[like])
    }

    fn fresh_of(&mut self, ty: ValTy) -> Val {
        self.vals.push(ty)
    }

    fn unroll(&mut self, me: Label, c: &Counted, consts: &mut FxHashMap<Val, u64>) {
        let b = me;
        let next_label = |k: usize| Label::new(self.blocks.len() + k);
        let (g, u, t) = (next_label(0), next_label(1), next_label(2));
        // Values of the loop used after it (by its exit, which had only it
        // as predecessor) now have a second definition: in the last turn
        // of U, for the way out through T.
        let defs: Vec<Val> = {
            let blk = &self.blocks[b];
            blk.params.iter().chain(blk.insts.iter().flat_map(Inst::defs)).copied().collect()
        };
        let escaping = self.used_outside(b, &defs);
        // The loop's other ways in now pass the guard.
        for (i, blk) in self.blocks.iter_mut() {
            if i == b {
                continue;
            }
            match &mut blk.term {
                Some(Terminator::Jump(l, _)) if *l == me => *l = g,
                Some(Terminator::Branch { if_true, if_false, .. }) => {
                    for (l, _) in [if_true, if_false] {
                        if *l == me {
                            *l = g;
                        }
                    }
                }
                _ => {}
            }
        }
        let orig = self.blocks[b].clone();
        let ty = c.ty;
        let param_at =
            |params: &[Val], v: Val| orig.params.iter().position(|p| *p == v).map(|q| params[q]).unwrap_or(v);

        // G: the guard.
        let gp: Vec<Val> = orig.params.iter().map(|p| self.fresh(*p)).collect();
        let bound = param_at(&gp, c.bound);
        let go = self.fresh_of(ValTy::Bool);
        let up = c.step > 0;
        // The guard's operations, and the bound `U` tests against.
        let (guard, limit) = if c.test == CmpOp::Ne {
            // `iv' != bound`, stepping by one: the turns left before the
            // test fails are the distance from the induction variable to
            // the bound, modulo the width; at least `UNROLL_TURNS` of them
            // let `U` run its turns (and the last turn's test goes to `T`).
            (self.ne_turns_left(ty, up, gp[c.iv], bound, go), bound)
        } else {
            let (span, limit) = (self.fresh_of(ty), self.fresh_of(ty));
            let (fits, ahead) = (self.fresh_of(ValTy::Bool), self.fresh_of(ValTy::Bool));
            let span_bits = ((UNROLL_TURNS as i64 - 1) * c.step).unsigned_abs();
            let guard = vec![
                Inst::Const { dst: span, ty, bits: span_bits },
                Inst::Bin {
                    dst: limit,
                    op: if up { BinOp::Sub } else { BinOp::Add },
                    ty,
                    ov: Overflow::Wrap,
                    a: bound,
                    b: span,
                },
                // No wrap-around: then every turn's test up to the last
                // passes when the induction variable has not passed `limit`.
                Inst::Cmp { dst: fits, op: if up { CmpOp::Lt } else { CmpOp::Gt }, ty, a: limit, b: bound },
                Inst::Cmp { dst: ahead, op: c.test, ty, a: gp[c.iv], b: limit },
                Inst::Bin { dst: go, op: BinOp::And, ty: ValTy::Bool, ov: Overflow::Wrap, a: fits, b: ahead },
            ];
            (guard, limit)
        };
        let mut with_limit = gp.clone();
        with_limit.push(limit);
        let made = self.blocks.push(RBlock {
            params: gp.clone(),
            insts: guard,
            term: Some(Terminator::Branch { cond: go, if_true: (u, with_limit), if_false: (me, gp) }),
        });
        debug_assert_eq!(made, g);

        // U: the turns.
        let mut up_params: Vec<Val> = orig.params.iter().map(|p| self.fresh(*p)).collect();
        let u_limit = self.fresh_of(ty);
        let mut env: FxHashMap<Val, Val> = orig.params.iter().copied().zip(up_params.iter().copied()).collect();
        let mut insts: Vec<Inst> = Vec::new();
        // Values of U known to be `base + offset`, `base` a parameter of U.
        let mut sums: FxHashMap<Val, (Val, Val)> = FxHashMap::default();
        let Some(Terminator::Branch { if_true, if_false, .. }) = &orig.term else { unreachable!("a counted loop") };
        let next = if if_true.0 == me { if_true.1.clone() } else { if_false.1.clone() };
        // The values of the parameters at the start of the last turn.
        let mut last_start: Vec<Val> = up_params.clone();
        // For each operation, whether it accumulates into a parameter.
        let accumulates: Vec<Option<Side>> =
            orig.insts.iter().map(|i| accumulator(i, &orig.params, &next, consts)).collect();
        let mut first_consts: FxHashMap<Val, Val> = FxHashMap::default();
        for _ in 0..UNROLL_TURNS {
            last_start = orig.params.iter().map(|p| env[p]).collect();
            for (inst, side) in orig.insts.iter().zip(&accumulates) {
                // A constant of the loop is made once, by the first turn.
                if let Inst::Const { dst, .. } = inst {
                    if let Some(&made) = first_consts.get(dst) {
                        env.insert(*dst, made);
                        continue;
                    }
                }
                let mut i = inst.clone();
                i.map_uses(&|v| env.get(&v).copied().unwrap_or(v));
                let old = inst.defs().to_vec();
                let new: Vec<Val> = old.iter().map(|d| self.fresh(*d)).collect();
                let mut k = 0;
                i.map_defs(&mut |_| {
                    k += 1;
                    new[k - 1]
                });
                env.extend(old.into_iter().zip(new));
                match side {
                    Some(side) => self.push_reassociated(i, *side, &mut sums, consts, &mut insts),
                    None => {
                        if let (Inst::Const { dst, bits, .. }, Inst::Const { dst: orig_dst, .. }) = (&i, inst) {
                            consts.insert(*dst, *bits);
                            first_consts.insert(*orig_dst, *dst);
                        }
                        insts.push(i)
                    }
                }
            }
            let turned: Vec<Val> = next.iter().map(|v| env.get(v).copied().unwrap_or(*v)).collect();
            for (p, v) in orig.params.iter().zip(turned) {
                env.insert(*p, v);
            }
        }
        let after: Vec<Val> = orig.params.iter().map(|p| env[p]).collect();
        let again = self.fresh_of(ValTy::Bool);
        if c.test == CmpOp::Ne {
            let more = self.ne_turns_left(ty, c.step > 0, after[c.iv], u_limit, again);
            insts.extend(more);
        } else {
            insts.push(Inst::Cmp { dst: again, op: c.test, ty, a: after[c.iv], b: u_limit });
        }
        // A value of the loop in its last turn here (a parameter: its value
        // at the start of the turn).
        let last = |v: Val| match orig.params.iter().position(|p| *p == v) {
            Some(q) => last_start[q],
            None => env.get(&v).copied().unwrap_or(v),
        };
        // T ends as the loop did, with the last turn's values.
        let mut term_t = orig.term.clone().expect("a counted loop");
        term_t.map_uses(&last);
        let mut again_args = after.clone();
        again_args.push(u_limit);
        up_params.push(u_limit);
        let u_term = Terminator::Branch { cond: again, if_true: (u, again_args), if_false: (t, vec![]) };
        let repairs: Vec<(Val, Val)> = escaping.iter().map(|e| (*e, last(*e))).collect();
        let made = (
            self.blocks.push(RBlock { params: up_params, insts, term: Some(u_term) }),
            self.blocks.push(RBlock { params: vec![], insts: vec![], term: Some(term_t) }),
        );
        debug_assert_eq!(made, (u, t));
        if !repairs.is_empty() {
            let preds = self.pred_lists();
            for (e, e_last) in repairs {
                self.repair_after_copy(e, b, t, e_last, &preds);
            }
        }
        let then = self.blocks[t].term.clone().expect("made above");
        remove_dead(&mut self.blocks[u], &then);
    }

    /// Operations setting `go` to whether at least [`UNROLL_TURNS`] turns
    /// of a loop stepping `iv` by one (`up` or down) pass its test
    /// `iv' != bound`: the distance to the bound, modulo the width of `ty`,
    /// compared unsigned.
    fn ne_turns_left(&mut self, ty: ValTy, up: bool, iv: Val, bound: Val, go: Val) -> Vec<Inst> {
        let ValTy::Int { bits, .. } = ty else { unreachable!("an integer induction variable") };
        let unsigned = ValTy::Int { bits, signed: false };
        let (dist, du, most) = (self.fresh_of(ty), self.fresh_of(unsigned), self.fresh_of(unsigned));
        let (a, b) = if up { (bound, iv) } else { (iv, bound) };
        vec![
            Inst::Bin { dst: dist, op: BinOp::Sub, ty, ov: Overflow::Wrap, a, b },
            Inst::Cast { dst: du, from: ty, to: unsigned, a: dist },
            Inst::Const { dst: most, ty: unsigned, bits: UNROLL_TURNS as u64 - 1 },
            Inst::Cmp { dst: go, op: CmpOp::Gt, ty: unsigned, a: du, b: most },
        ]
    }

    /// Pushes `i`, a copy of an accumulating operation (`side` says which
    /// operand carries the accumulator) in an unrolled block, reassociated
    /// (see the module doc): with `sums[x] = (base, off)` meaning
    /// `x = base + off`, `base` the accumulator on entry to the block,
    /// `x + e` becomes `base + (off + e)`.
    fn push_reassociated(
        &mut self,
        i: Inst,
        side: Side,
        sums: &mut FxHashMap<Val, (Val, Val)>,
        consts: &mut FxHashMap<Val, u64>,
        out: &mut Vec<Inst>,
    ) {
        let Inst::Bin { dst, ty, a, b, .. } = i else { unreachable!("an accumulator is an addition") };
        let (acc, addend) = match side {
            Side::Left => (a, b),
            Side::Right => (b, a),
            Side::LessConst => {
                let v = self.fresh_of(ty);
                let bits = ty.canon(consts[&b].wrapping_neg());
                consts.insert(v, bits);
                out.push(Inst::Const { dst: v, ty, bits });
                (a, v)
            }
        };
        let add = |dst, a, b| Inst::Bin { dst, op: BinOp::Add, ty, ov: Overflow::Wrap, a, b };
        match sums.get(&acc).copied() {
            Some((base, off)) => {
                let sum = self.fresh_of(ty);
                match (consts.get(&off), consts.get(&addend)) {
                    (Some(x), Some(y)) => {
                        let bits = ty.canon(x.wrapping_add(*y));
                        consts.insert(sum, bits);
                        out.push(Inst::Const { dst: sum, ty, bits });
                    }
                    _ => out.push(add(sum, off, addend)),
                }
                out.push(add(dst, base, sum));
                sums.insert(dst, (base, sum));
            }
            None => {
                out.push(add(dst, acc, addend));
                sums.insert(dst, (acc, addend));
            }
        }
    }
}

/// Which operand of an accumulating operation is the accumulator.
#[derive(Clone, Copy)]
enum Side {
    /// `p + e`.
    Left,
    /// `e + p`.
    Right,
    /// `p - constant`.
    LessConst,
}

/// Whether `i` is `p' = p + e` (or `e + p`, or `p - constant`) with `p` a
/// parameter of the loop (`params`) and `p'` its next value (`next`),
/// wrapping integer arithmetic.
fn accumulator(i: &Inst, params: &[Val], next: &[Val], consts: &FxHashMap<Val, u64>) -> Option<Side> {
    let Inst::Bin { dst, op, ty: ValTy::Int { .. }, ov: Overflow::Wrap, a, b } = i else { return None };
    let q = next.iter().position(|n| n == dst)?;
    let p = params[q];
    match op {
        BinOp::Add if *a == p => Some(Side::Left),
        BinOp::Add if *b == p => Some(Side::Right),
        BinOp::Sub if *a == p && consts.contains_key(b) => Some(Side::LessConst),
        _ => None,
    }
}

/// Drops the operations of `blk` without effects whose values neither it
/// nor `then` (the only block it dominates) uses.
fn remove_dead(blk: &mut RBlock, then: &Terminator) {
    let mut used: rustc_hash::FxHashSet<Val> = rustc_hash::FxHashSet::default();
    then.for_each_use(&mut |v| {
        used.insert(v);
    });
    blk.term.iter().for_each(|t| {
        t.for_each_use(&mut |v| {
            used.insert(v);
        })
    });
    let mut keep = vec![true; blk.insts.len()];
    for (k, i) in blk.insts.iter().enumerate().rev() {
        let pure = match i {
            Inst::Const { .. } | Inst::Cmp { .. } | Inst::Cast { .. } => true,
            Inst::Bin { op, ov, .. } => *ov == Overflow::Wrap && !matches!(op, BinOp::Div | BinOp::Rem),
            Inst::Un { ov, .. } => *ov == Overflow::Wrap,
            _ => false,
        };
        if pure && i.defs().iter().all(|d| !used.contains(d)) {
            keep[k] = false;
            continue;
        }
        i.for_each_use(&mut |v| {
            used.insert(v);
        });
    }
    let mut k = 0;
    blk.insts.retain(|_| {
        k += 1;
        keep[k - 1]
    });
}
