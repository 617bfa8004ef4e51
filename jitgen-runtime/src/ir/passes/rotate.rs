//! Loops closed through small blocks (loop rotation), with the SSA repair
//! that copying a block needs.

use crate::ir::function::{EntityRef, Inst, Label, RBlock, ResidualFunction, SecondaryMap, Terminator, Val};

/// The most operations [`ResidualFunction::simplify`] copies to close a
/// loop through a small block.
pub const MAX_COPIED_OPS: usize = 4;

impl ResidualFunction {
    /// A loop whose back edge jumps into a small block that jumps or
    /// branches on (a loop entered in mid-turn: the rest of the turn heads
    /// the loop; or a `while` loop, whose head tests) gets a copy of that
    /// block for the back edge alone, which then joins the back edge's
    /// block: each turn runs one block fewer, and a `while`
    /// loop tests at its bottom (loop rotation). Only blocks of at most
    /// [`MAX_COPIED_OPS`] operations. Code elsewhere that used the copied
    /// block's values gets the original's or the copy's through new
    /// parameters (`repair_after_copy`).
    /// Returns whether it added parameters (some may have one value: see
    /// [`ResidualFunction::propagate`]).
    pub fn close_loops_through_small_blocks(&mut self) -> bool {
        let n = self.blocks.len();
        let mut preds: SecondaryMap<Label, usize> = SecondaryMap::new();
        for (_, b) in self.live_blocks() {
            for t in b.term.iter().flat_map(|t| t.targets()) {
                preds[t] += 1;
            }
        }
        // Copies end the way their originals do, so a copy may be a back
        // edge's block in turn: each is visited too, up to one copy per
        // original block.
        // (copy, the block that jumps to it)
        let mut copies: Vec<(Label, Label)> = Vec::new();
        let mut repaired = false;
        let mut next = 0;
        while next < self.blocks.len() && copies.len() < n {
            let p = Label::new(next);
            next += 1;
            let Some(Terminator::Jump(t, _)) = &self.blocks[p].term else { continue };
            let t = *t;
            let tb = t;
            let target = &self.blocks[tb];
            let Some(term) = &target.term else { continue };
            let onward = term.targets();
            if onward.is_empty()
                || onward.contains(&t)
                || tb == p
                || tb == Label::ENTRY
                || preds[tb] < 2
                || target.insts.len() > MAX_COPIED_OPS
                || !self.reached_from(t)[p]
            {
                continue;
            }
            let defs: Vec<Val> =
                target.params.iter().chain(target.insts.iter().flat_map(Inst::defs)).copied().collect();
            let escaping = self.users_outside(tb, &defs);
            let (params, mut insts, mut term) = (target.params.clone(), target.insts.clone(), term.clone());
            let mut map: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
            let vals = &mut self.vals;
            let mut fresh = |d: Val, map: &mut rustc_hash::FxHashMap<Val, Val>| {
                let f = vals.push(vals[d]);
                map.insert(d, f);
                f
            };
            let params: Vec<Val> = params.into_iter().map(|q| fresh(q, &mut map)).collect();
            for i in &mut insts {
                i.map_uses(&|v| map.get(&v).copied().unwrap_or(v));
                i.map_defs(&mut |d| fresh(d, &mut map));
            }
            term.map_uses(&|v| map.get(&v).copied().unwrap_or(v));
            let copy = self.blocks.push(RBlock { params, insts, term: Some(term) });
            if let Some(Terminator::Jump(to, _)) = &mut self.blocks[p].term {
                *to = copy;
            }
            preds[tb] -= 1;
            preds[copy] = 1;
            for u in onward {
                preds[u] += 1;
            }
            if !escaping.is_empty() {
                let preds = self.pred_lists();
                for (e, users) in escaping {
                    // (Repairing one value changes and adds uses of that
                    // value alone: the users found for the others stay.)
                    self.repair_uses(Defs { e, t: tb, copy, e_copy: map[&e] }, users, &preds);
                }
                repaired = true;
            }
            copies.push((copy, p));
        }
        // Each copy has one way in, a jump from the block it was made for:
        // it joins that block (or the block that one joined).
        // Its parameters become the jump's arguments everywhere (SSA repair
        // may have passed them on).
        let mut joined: rustc_hash::FxHashMap<Label, Label> = rustc_hash::FxHashMap::default();
        let mut subst: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
        for &(copy, p) in &copies {
            let into = joined.get(&p).copied().unwrap_or(p);
            let args = match &mut self.blocks[into].term {
                Some(Terminator::Jump(to, args)) if *to == copy => std::mem::take(args),
                // (Not expected: the copy then stays a block of its own.)
                _ => continue,
            };
            let RBlock { params, insts, term } = std::mem::take(&mut self.blocks[copy]);
            subst.extend(params.into_iter().zip(args));
            let blk = &mut self.blocks[into];
            blk.insts.extend(insts);
            blk.term = term;
            joined.insert(copy, into);
        }
        if !subst.is_empty() {
            let resolve = |mut v: Val| {
                while let Some(n) = subst.get(&v) {
                    v = *n;
                }
                v
            };
            for b in self.blocks.values_mut() {
                b.insts.iter_mut().for_each(|i| i.map_uses(&resolve));
                b.term.iter_mut().for_each(|t| t.map_uses(&resolve));
            }
        }
        repaired
    }

    /// SSA repair after block `t` was copied as block `copy`: `e`, defined
    /// in `t`, now has a second definition, `e_copy` in the copy. Each use
    /// of `e` outside the two becomes the value that reaches it: a block
    /// with several predecessors gets a parameter where they may bring
    /// different ones. Since `t` dominated every use, every path to one now
    /// passes `t` or the copy.
    /// (`preds`: [`ResidualFunction::pred_lists`]; repair adds arguments,
    /// never edges.)
    pub(crate) fn repair_after_copy(
        &mut self,
        e: Val,
        t: Label,
        copy: Label,
        e_copy: Val,
        preds: &SecondaryMap<Label, Vec<Label>>,
    ) {
        let mut users = Vec::new();
        for (b, blk) in self.live_blocks() {
            let mut uses = false;
            let mut note = |v: Val| uses |= v == e;
            blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
            blk.term.iter().for_each(|t| t.for_each_use(&mut note));
            if uses && b != t && b != copy {
                users.push(b);
            }
        }
        self.repair_uses(Defs { e, t, copy, e_copy }, users, preds);
    }

    /// [`ResidualFunction::repair_after_copy`] of the uses of `defs.e` in
    /// the blocks `users` (every block other than the two definitions' that
    /// uses it).
    fn repair_uses(&mut self, defs: Defs, users: Vec<Label>, preds: &SecondaryMap<Label, Vec<Label>>) {
        let e = defs.e;
        let mut at_start = rustc_hash::FxHashMap::default();
        for b in users {
            let r = self.value_at_start(b, &defs, preds, &mut at_start);
            let swap = |v: Val| if v == e { r } else { v };
            let blk = &mut self.blocks[b];
            blk.insts.iter_mut().for_each(|i| i.map_uses(&swap));
            blk.term.iter_mut().for_each(|t| t.map_uses(&swap));
        }
    }

    /// The value of a copied block's value (see
    /// [`ResidualFunction::repair_after_copy`]) on entry to block `b`;
    /// adds the parameters it needs.
    fn value_at_start(
        &mut self,
        b: Label,
        d: &Defs,
        preds: &SecondaryMap<Label, Vec<Label>>,
        at_start: &mut rustc_hash::FxHashMap<Label, Val>,
    ) -> Val {
        if let Some(v) = at_start.get(&b) {
            return *v;
        }
        let at_end = |s: &mut Self, q: Label, at_start: &mut rustc_hash::FxHashMap<Label, Val>| {
            if q == d.t {
                d.e
            } else if q == d.copy {
                d.e_copy
            } else {
                s.value_at_start(q, d, preds, at_start)
            }
        };
        match preds[b].as_slice() {
            _ if b == Label::ENTRY => {
                // Reached without passing either definition.
                debug_assert!(false, "{:?} used where its block {:?} does not dominate", d.e, d.t);
                d.e
            }
            [] => d.e,
            [q] => {
                let v = at_end(self, *q, at_start);
                at_start.insert(b, v);
                v
            }
            _ => {
                let phi = self.vals.push(self.vals[d.e]);
                self.blocks[b].params.push(phi);
                at_start.insert(b, phi);
                for &q in &preds[b] {
                    let v = at_end(self, q, at_start);
                    if let Some(term) = &mut self.blocks[q].term {
                        term.push_arg_to(b, v);
                    }
                }
                phi
            }
        }
    }
}

/// A value with two definitions after a block was copied: `e` in block
/// `t`, `e_copy` in block `copy`.
struct Defs {
    e: Val,
    t: Label,
    copy: Label,
    e_copy: Val,
}
