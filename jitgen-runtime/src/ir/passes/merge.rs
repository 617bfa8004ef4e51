//! Block merging: forwarding blocks are jumped over, jumps that pass a
//! constant to a branch are threaded, blocks reached by one `jump` join
//! their predecessor, and unreachable blocks are dropped.

use crate::ir::function::{Inst, Label, ResidualFunction, SecondaryMap, Terminator, Val};
use crate::ir::passes::ValMap;

impl ResidualFunction {
    /// Jumps over forwarding blocks, threads jumps that pass a constant to
    /// a branch, merges blocks into their only predecessor, drops
    /// unreachable blocks.
    pub fn merge_blocks(&mut self) {
        let n = self.blocks.len();
        let mut subst: ValMap<Val> = ValMap::for_values_of(self);
        let mut threaded = 0;
        let mut forward_rounds = 0;
        // Constants, for jump threading (instructions move between blocks
        // below, but keep their values).
        let mut consts: ValMap<u64> = ValMap::for_values_of(self);
        for i in self.blocks.values().filter(|b| b.term.is_some()).flat_map(|b| &b.insts) {
            if let Inst::Const { dst, bits, .. } = i {
                consts.insert(*dst, *bits);
            }
        }
        loop {
            let mut preds: SecondaryMap<Label, usize> = SecondaryMap::new();
            let mut reach: SecondaryMap<Label, bool> = SecondaryMap::new();
            let mut stack = vec![Label::ENTRY];
            while let Some(b) = stack.pop() {
                if std::mem::replace(&mut reach[b], true) {
                    continue;
                }
                if let Some(t) = &self.blocks[b].term {
                    for l in t.targets() {
                        preds[l] += 1;
                        stack.push(l);
                    }
                }
            }
            for b in self.blocks.keys() {
                if !reach[b] {
                    self.blocks[b].term = None;
                    self.blocks[b].insts.clear();
                }
            }
            let mut changed = false;
            // Values used outside the block that defines them.
            let mut escaping: SecondaryMap<Val, bool> = crate::ir::function::dense_for(self);
            {
                let def_block = self.def_blocks();
                for (b, blk) in self.live_blocks() {
                    let mut note = |v: Val| {
                        // (Through the substitutions made so far: uses are
                        // rewritten only at the end.)
                        let mut v = v;
                        while let Some(n) = subst.get(&v) {
                            v = *n;
                        }
                        if def_block[v] != Some(b) {
                            escaping[v] = true;
                        }
                    };
                    for i in &blk.insts {
                        i.for_each_use(&mut note);
                    }
                    if let Some(t) = &blk.term {
                        t.for_each_use(&mut note);
                    }
                }
            }
            // Forwarding blocks (no instructions, a jump, parameters used
            // by that jump alone): their predecessors jump straight on, with
            // the parameters replaced by what they pass. The other forwarded
            // values dominate the forwarder, hence each of its predecessors.
            // (A loop's back edge through a block that reorders or copies its
            // parameters leaves one.)
            type Forward = (Label, Vec<Val>, Vec<Val>);
            let forward: rustc_hash::FxHashMap<Label, Forward> = (self.blocks.keys().skip(1))
                .filter_map(|f| match &self.blocks[f].term {
                    Some(Terminator::Jump(to, fwd))
                        if self.blocks[f].insts.is_empty()
                            && *to != f
                            && !self.blocks[f].params.iter().any(|q| escaping[*q]) =>
                    {
                        Some((f, (*to, fwd.clone(), self.blocks[f].params.clone())))
                    }
                    _ => None,
                })
                .collect();
            // (Bounded: a cycle of forwarders entered from outside would
            // move its entry edge around the cycle forever.)
            forward_rounds += 1;
            if !forward.is_empty() && forward_rounds <= n {
                let redirect = |t: &mut (Label, Vec<Val>)| -> bool {
                    // Follow a chain of forwarders (bounded: they may form a cycle).
                    let mut moved = false;
                    for _ in 0..n {
                        match forward.get(&t.0) {
                            Some((to, fwd, params)) if *to != t.0 => {
                                let args = fwd
                                    .iter()
                                    .map(|v| match params.iter().position(|q| q == v) {
                                        Some(j) => t.1[j],
                                        None => *v,
                                    })
                                    .collect();
                                *t = (*to, args);
                                moved = true;
                            }
                            _ => break,
                        }
                    }
                    moved
                };
                for p in self.blocks.keys() {
                    match &mut self.blocks[p].term {
                        Some(Terminator::Jump(l, args)) => {
                            let mut t = (*l, std::mem::take(args));
                            changed |= redirect(&mut t);
                            (*l, *args) = t;
                        }
                        Some(Terminator::Branch { if_true, if_false, .. }) => {
                            let a = redirect(if_true);
                            let b = redirect(if_false);
                            changed |= a || b;
                        }
                        _ => {}
                    }
                }
            }
            if changed {
                // Uses moved between blocks: recount what escapes.
                continue;
            }
            // Jump threading: a block that only branches on one of its
            // parameters, reached by a jump passing a constant there, is
            // skipped by that jump (a `&&` or `||` whose side is known on
            // one path leaves such blocks). Only when the blocks it branches
            // to get all they need as arguments: code dominated by the
            // skipped block may use its parameters directly, and they would
            // not be defined on the new path.
            for p in self.blocks.keys() {
                let Some(Terminator::Jump(l, args)) = &self.blocks[p].term else { continue };
                let target = &self.blocks[*l];
                let Some(Terminator::Branch { cond, if_true, if_false }) = &target.term else { continue };
                if !target.insts.is_empty() || *l == p || target.params.iter().any(|q| escaping[*q]) {
                    continue;
                }
                let Some(i) = target.params.iter().position(|q| q == cond) else { continue };
                let mut a = args[i];
                while let Some(n) = subst.get(&a) {
                    a = *n;
                }
                let Some(&bits) = consts.get(&a) else { continue };
                let (to, targs) = if bits != 0 { if_true } else { if_false };
                if *to == *l || threaded >= 4 * n {
                    // (bounded: empty blocks may branch around in a cycle)
                    continue;
                }
                threaded += 1;
                let mapped: Vec<Val> = targs
                    .iter()
                    .map(|v| match target.params.iter().position(|q| q == v) {
                        Some(j) => args[j],
                        None => *v,
                    })
                    .collect();
                self.blocks[p].term = Some(Terminator::Jump(*to, mapped));
                changed = true;
            }
            if changed {
                // Predecessor counts changed: recount before merging blocks.
                continue;
            }
            for p in self.blocks.keys() {
                // A chain of such blocks merges into `p` at once (one pass
                // per block of a chain made simplification quadratic).
                loop {
                    let Some(Terminator::Jump(l, args)) = &self.blocks[p].term else { break };
                    let b = *l;
                    if b == p || b == Label::ENTRY || preds[b] != 1 {
                        break;
                    }
                    let args = args.clone();
                    let target = std::mem::take(&mut self.blocks[b]);
                    for (param, arg) in target.params.iter().zip(&args) {
                        // Resolve now, so that chains of substitutions stay short.
                        let mut a = *arg;
                        while let Some(n) = subst.get(&a) {
                            a = *n;
                        }
                        subst.insert(*param, a);
                    }
                    self.blocks[p].insts.extend(target.insts);
                    self.blocks[p].term = target.term;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let resolve = |v: Val| {
            let mut v = v;
            while let Some(n) = subst.get(&v) {
                v = *n;
            }
            v
        };
        for b in self.blocks.values_mut() {
            for i in &mut b.insts {
                i.map_uses(&resolve);
            }
            if let Some(t) = &mut b.term {
                t.map_uses(&resolve);
            }
        }
    }
}
