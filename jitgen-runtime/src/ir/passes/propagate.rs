//! Propagation over block parameters: parameters with one value become it,
//! equal parameters become one, and operations and branches on constants
//! fold.

use crate::ir::function::{Inst, Label, ResidualFunction, SecondaryMap, Terminator, Val};
use crate::ir::ops::ValTy;
use crate::ir::passes::ValMap;

impl ResidualFunction {
    /// Parameters that every edge gives one value (a loop-invariant value
    /// passed around its loop; a constant that a guard at entry established,
    /// the scheduler's `Compilation::version_entry`) become that value;
    /// parameters of a block that every edge gives equal values become one;
    /// operations on constants fold, and branches on constants jump. Again
    /// while anything changes (a folded branch removes an edge, which may
    /// leave a parameter one value), a few times at most.
    /// Returns whether anything changed.
    pub fn propagate(&mut self) -> bool {
        let mut any = false;
        for _ in 0..4 {
            let one = self.single_value_params();
            let equal = self.merge_equal_params();
            let folded = self.fold_constants();
            if !(one || equal || folded) {
                break;
            }
            any = true;
        }
        any
    }

    /// Removes the parameters `gone` maps (to what replaces them) from their
    /// blocks and the arguments for them from every edge, and replaces their
    /// uses.
    fn replace_params(&mut self, gone: &ValMap<Val>) {
        // For each block, which of its parameters stay.
        let mut keep: SecondaryMap<Label, Option<Vec<bool>>> = SecondaryMap::new();
        for (b, blk) in self.blocks.iter() {
            let params = &blk.params;
            if b != Label::ENTRY && params.iter().any(|p| gone.contains_key(p)) {
                keep[b] = Some(params.iter().map(|p| !gone.contains_key(p)).collect());
            }
        }
        let resolve = |v: Val| gone.get(&v).copied().unwrap_or(v);
        for b in self.blocks.keys() {
            if let Some(k) = &keep[b] {
                let mut it = k.iter();
                self.blocks[b].params.retain(|_| *it.next().expect("one flag per parameter"));
            }
            let blk = &mut self.blocks[b];
            for i in &mut blk.insts {
                i.map_uses(&resolve);
            }
            let Some(t) = &mut blk.term else { continue };
            t.map_uses(&resolve);
            let drop_args = |(l, args): &mut (Label, Vec<Val>)| {
                if let Some(k) = &keep[*l] {
                    let mut it = k.iter();
                    args.retain(|_| *it.next().expect("one argument per parameter"));
                }
            };
            match t {
                Terminator::Jump(l, args) => {
                    let mut e = (*l, std::mem::take(args));
                    drop_args(&mut e);
                    *args = e.1;
                }
                Terminator::Branch { if_true, if_false, .. } => {
                    drop_args(if_true);
                    drop_args(if_false);
                }
                _ => {}
            }
        }
    }

    /// Replaces each parameter that every edge into its block gives one
    /// value (itself aside, around a loop) by that value. Optimistic: a
    /// parameter counts as that value until an edge gives another.
    fn single_value_params(&mut self) -> bool {
        #[derive(Clone, Copy, PartialEq)]
        enum Flow {
            Unknown,
            One(Val),
            Many,
        }
        let reach = self.reachable();
        // For the parameters of reached blocks but the entry: what flows in.
        let mut flow: SecondaryMap<Val, Option<Flow>> = crate::ir::function::dense_for(self);
        let mut any = false;
        for (_, blk) in self.blocks.iter().skip(1).filter(|(b, _)| reach[*b]) {
            for p in &blk.params {
                flow[*p] = Some(Flow::Unknown);
                any = true;
            }
        }
        if !any {
            return false;
        }
        loop {
            let mut changed = false;
            for (_, blk) in self.blocks.iter().filter(|(b, _)| reach[*b]) {
                let Some(t) = &blk.term else { continue };
                for (l, args) in Self::edges(t) {
                    if l == Label::ENTRY {
                        continue;
                    }
                    for (p, a) in self.blocks[l].params.iter().zip(args) {
                        let incoming = match flow[*a] {
                            Some(Flow::Unknown) => continue,
                            Some(x) => x,
                            None => Flow::One(*a),
                        };
                        let Some(old) = flow[*p] else { continue };
                        let new = match (old, incoming) {
                            (Flow::Unknown, x) => x,
                            (Flow::One(x), Flow::One(y)) if x == y => old,
                            _ => Flow::Many,
                        };
                        if new != old {
                            flow[*p] = Some(new);
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut gone: ValMap<Val> = ValMap::for_values_of(self);
        for (p, f) in flow.iter() {
            if let Some(Flow::One(x)) = *f {
                if x != p {
                    gone.insert(p, x);
                }
            }
        }
        if gone.is_empty() {
            return false;
        }
        self.replace_params(&gone);
        true
    }

    /// Makes one the parameters of a block that every edge into it gives
    /// equal values (two parameters of a loop that every turn passes one
    /// value, once a guard at entry made them equal there too). An edge from
    /// the block to itself may pass the two parameters themselves.
    fn merge_equal_params(&mut self) -> bool {
        let reach = self.reachable();
        // The argument lists of the edges into each block.
        let mut incoming: SecondaryMap<Label, Vec<(Label, &[Val])>> = SecondaryMap::new();
        for (b, blk) in self.blocks.iter().filter(|(b, _)| reach[*b]) {
            for (l, args) in blk.term.iter().flat_map(Self::edges) {
                incoming[l].push((b, args));
            }
        }
        let mut gone: ValMap<Val> = ValMap::for_values_of(self);
        for (b, blk) in self.blocks.iter().skip(1).filter(|(b, _)| reach[*b]) {
            let params = &blk.params;
            for j in 1..params.len() {
                let ty = self.vals[params[j]];
                let same = (0..j).find(|&i| {
                    self.vals[params[i]] == ty
                        && !gone.contains_key(&params[i])
                        && incoming[b].iter().all(|(from, args)| {
                            args[i] == args[j] || *from == b && args[i] == params[i] && args[j] == params[j]
                        })
                });
                if let Some(i) = same {
                    gone.insert(params[j], params[i]);
                }
            }
        }
        if gone.is_empty() {
            return false;
        }
        self.replace_params(&gone);
        true
    }

    /// Folds operations whose operands are constants (those that cannot
    /// fail) into constants, and branches on constants into jumps.
    fn fold_constants(&mut self) -> bool {
        use crate::ir::ops::{fold_bin, fold_cast, fold_cmp, fold_un};
        let mut consts: ValMap<u64> = ValMap::for_values_of(self);
        let mut changed = false;
        for l in self.blocks_in_dominance_order() {
            let blk = &mut self.blocks[l];
            for i in &mut blk.insts {
                let c = |v: &Val| consts.get(v).copied();
                let folded = match i {
                    Inst::Const { dst, bits, .. } => {
                        consts.insert(*dst, *bits);
                        None
                    }
                    Inst::Cmp { dst, op, ty, a, b } => match (c(a), c(b)) {
                        (Some(x), Some(y)) => Some((*dst, ValTy::Bool, fold_cmp(*op, *ty, x, y))),
                        _ => None,
                    },
                    Inst::Bin { dst, op, ty, ov, a, b } => match (c(a), c(b)) {
                        (Some(x), Some(y)) => fold_bin(*op, *ty, *ov, x, y).ok().map(|r| (*dst, *ty, r)),
                        _ => None,
                    },
                    Inst::Un { dst, op, ty, ov, a } => {
                        c(a).and_then(|x| fold_un(*op, *ty, *ov, x).ok()).map(|r| (*dst, *ty, r))
                    }
                    Inst::Cast { dst, from, to, a } => c(a).map(|x| (*dst, *to, fold_cast(*from, *to, x))),
                    _ => None,
                };
                if let Some((dst, ty, bits)) = folded {
                    let bits = ty.canon(bits);
                    *i = Inst::Const { dst, ty, bits };
                    consts.insert(dst, bits);
                    changed = true;
                }
            }
            if let Some(Terminator::Branch { cond, if_true, if_false }) = &blk.term {
                if let Some(&c) = consts.get(cond) {
                    let (to, args) = if c != 0 { if_true.clone() } else { if_false.clone() };
                    blk.term = Some(Terminator::Jump(to, args));
                    changed = true;
                }
            }
        }
        changed
    }
}
