//! Entry promotion: the code recorded from a compilation's entry state,
//! versioned at its entry on values the loop keeps.
//!
//! A hardware division costs 20-40 cycles; by a constant, Cranelift makes it
//! a multiplication. The portal's hook gathers the inputs of residual code
//! before it compiles and hands them to the compile function. After the first
//! (general) compilation, [`Compilation::entry_facts`] looks at the versions
//! of the first merge point it reached (the loop head):
//! [`ResidualFunction::invariant_divisors`](crate::ir::function::ResidualFunction::invariant_divisors) picks the label parameters that
//! every back edge passes back unchanged (directly or through parameters
//! that only ever receive them) and that an integer division or remainder
//! divides by, in the function as recorded (simplification may jump over a
//! head that only forwards its parameters), through `Version::perm` for a
//! version that shares another merge point's label.
//!
//! If there are any, the entry state is built a second time in execute mode
//! from those inputs, which reads the current values (TLC's `M`, an element of
//! the operand stack), and [`Compilation::version_entry`] versions the code
//! just recorded: at the place where the extension started
//! ([`Compilation::mark_entry`], after the entry's loads) it puts a guard per
//! value, the general entry state as each guard's false side, compiled when
//! first taken (so a loop always entered with the same divisor compiles once
//! more, not twice), and behind the guards every use of the value in the
//! recorded code becomes the constant. Propagation then carries the constant
//! into the loop, and Cranelift turns the division into a multiplication. The
//! guard makes it sound whatever the analysis picked.
//!
//! The same pass makes one value of *copies*: pairs of head parameters that
//! every back edge gives the same value
//! ([`ResidualFunction::copied_params`](crate::ir::function::ResidualFunction::copied_params)), as when a loop is entered where the
//! interpreter's stack held a picked copy, which the entry loads apart.
//! Behind a guard that they are equal (made only where they are equal now),
//! the recorded code uses one value for both, and propagation makes the
//! loop's two parameters one. `jit::specialize` compiles without inputs, so
//! without entry promotion.
//!
//! Architecture Invariant: a value the compiler read from the interpreter's
//! state is a constant of residual code only behind a guard that compares it
//! at run time.

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState};
use crate::ir::builder::{Label, Val};
use crate::ir::ops::ValTy;

use super::Compilation;

/// What is worth knowing at a compilation's entry about the reds of its
/// entry state (indices into [`JitState::reds`] of that state, normalized),
/// found by compiling it generally ([`Compilation::entry_facts`]) and
/// used to version that code ([`Compilation::version_entry`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryFacts {
    /// Run-time values that the loop closed at the first merge point keeps
    /// unchanged and divides by (see
    /// [`ResidualFunction::invariant_divisors`](crate::ir::function::ResidualFunction::invariant_divisors)): made constants.
    pub divisors: Vec<usize>,
    /// Pairs of reds that the loop gives the same value on every back edge
    /// (see [`ResidualFunction::copied_params`](crate::ir::function::ResidualFunction::copied_params)): made one value.
    pub copies: Vec<(usize, usize)>,
}

impl EntryFacts {
    /// Whether there is nothing to promote.
    pub fn is_empty(&self) -> bool {
        self.divisors.is_empty() && self.copies.is_empty()
    }
}

impl<F: Frame> Compilation<F> {
    /// What is worth knowing at entry about the reds of the state the
    /// compilation started from (indices into [`JitState::reds`] of that
    /// state, normalized): see [`EntryFacts`]. Called once the extension is
    /// done, before [`Compilation::version_entry`] and
    /// [`Compilation::finish`] (it reads the function as recorded).
    pub fn entry_facts(&mut self) -> EntryFacts {
        // The versions of that merge point: the loop may close on a later,
        // more general one than the entry's (its first turns specialized).
        // (Each version's label, and for each of the label's parameters the
        // red it holds, if any.)
        let heads: Vec<(Label, Vec<Option<usize>>)> = match self.entry_key.take().and_then(|k| self.versions.remove(&k))
        {
            Some(vs) => vs
                .into_iter()
                .map(|v| {
                    let vars = v.shape.iter().enumerate().filter(|(_, s)| s.is_param());
                    let vars: Vec<usize> = vars.map(|(i, _)| i).collect();
                    let held = match &v.perm {
                        None => vars.into_iter().map(Some).collect(),
                        Some(perm) => {
                            let n = self.b.function().blocks[v.label].params.len();
                            let mut held = vec![None; n];
                            for (&p, r) in perm.iter().zip(vars) {
                                held[p as usize] = Some(r);
                            }
                            held
                        }
                    };
                    (v.label, held)
                })
                .collect(),
            None => vec![],
        };
        // Found before simplification, which may jump over a head (one that
        // only forwards its parameters to the next merge point).
        let unsimplified = self.b.function();
        let mut slots: Vec<usize> = heads
            .iter()
            .flat_map(|(label, vars)| {
                unsimplified.invariant_divisors(*label).into_iter().filter_map(|k| vars.get(k).copied().flatten())
            })
            .collect();
        slots.sort_unstable();
        slots.dedup();
        // Copies only where the loop closes at the entry's own version: a
        // later version that keeps them one already has one parameter.
        let mut copies: Vec<(usize, usize)> = match heads.first() {
            Some((label, vars)) => unsimplified
                .copied_params(*label)
                .into_iter()
                .filter_map(|(a, b)| Some(((*vars.get(a)?)?, (*vars.get(b)?)?)))
                .collect(),
            None => vec![],
        };
        copies.sort_unstable();
        EntryFacts { divisors: slots, copies }
    }

    /// Marks where the generating extension starts: after the code that
    /// builds the entry state (loads of the interpreter's state), before the
    /// first merge point. [`Compilation::version_entry`] puts its guards
    /// there.
    pub fn mark_entry(&mut self) {
        self.entry_mark = self.b.mark();
    }

    /// Entry promotion, on the residual code already recorded: guards, at
    /// the mark ([`Compilation::mark_entry`]), that the reds at the divisor
    /// slots of `facts` in the entry state `entry` hold the values at the
    /// same slots of `now` (the reds of the same entry built in execute mode
    /// from the interpreter's state when the compilation started,
    /// normalized), and that the pairs of its copies hold one value (where
    /// they do in `now`); behind the guards, the code recorded from `entry`
    /// uses the constants and one value of each pair, and simplification
    /// ([`ResidualFunction::propagate`](crate::ir::function::ResidualFunction::propagate)) carries them into the loop. Where a
    /// guard fails, the general state continues, compiled when first taken.
    /// The facts are those [`Compilation::entry_facts`] found in the same
    /// code. Returns whether a guard was made.
    ///
    /// Compiling the entry a second time with the constants made TLC
    /// factorial's compilation run the generating extension twice (820 steps,
    /// then 505).
    pub fn version_entry(&mut self, entry: JitState<F>, facts: &EntryFacts, now: &[RedBox]) -> bool {
        let Some((at_label, at)) = self.entry_mark.take() else { return false };
        if self.over_budget() || self.b.is_open() {
            return false;
        }
        let before = self.b.function().blocks.next_key();
        let rest = self.b.split_block(at_label, at);
        let mut st = entry;
        st.forget_fields();
        st.normalize();
        let mut reds = st.reds();
        // Each use of a value of the first kind becomes one of the second
        // (the value kept for a pair may then become a constant).
        let mut subst: Vec<(Val, Val)> = vec![];
        for &(a, b) in &facts.copies {
            // One value behind a guard that they are equal, if they are now.
            let (Some(ra @ RedBox::Var { ty, val: va }), Some(rb @ RedBox::Var { val: vb, .. })) =
                (reds.get(a).copied(), reds.get(b).copied())
            else {
                continue;
            };
            let (Some(x), Some(y)) = (now.get(a).and_then(|v| v.as_const()), now.get(b).and_then(|v| v.as_const()))
            else {
                continue;
            };
            if x != y || ra == rb || ra.ty() != rb.ty() {
                continue;
            }
            let general = st.clone();
            let same = self.b.cmp(crate::ir::ops::CmpOp::Eq, ty, va, vb);
            self.branch_off(&RedBox::Var { ty: ValTy::Bool, val: same }, true, general);
            subst.push((vb, va));
            reds[b] = ra;
            st.set_reds(&reds);
        }
        for &k in &facts.divisors {
            let (Some(RedBox::Var { ty, val }), Some(bits)) =
                (reds.get(k).copied(), now.get(k).and_then(|v| v.as_const()))
            else {
                continue;
            };
            let general = st.clone();
            let c = self.b.konst(ty, bits);
            let same = self.b.cmp(crate::ir::ops::CmpOp::Eq, ty, val, c);
            self.branch_off(&RedBox::Var { ty: ValTy::Bool, val: same }, true, general);
            subst.push((val, c));
            reds[k] = RedBox::Const { ty, bits };
            st.set_reds(&reds);
        }
        self.b.jump(rest, &[]);
        // The code recorded from the entry state: the blocks that were there
        // (but the entry's own start) and the rest of the entry block.
        let subst: rustc_hash::FxHashMap<Val, Val> = subst.into_iter().collect();
        self.b.substitute(|l| l == rest || l < before && l != at_label, &subst);
        !subst.is_empty()
    }
}
