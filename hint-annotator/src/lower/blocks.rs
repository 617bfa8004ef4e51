//! Building blocks while lowering: exits, joins and their arguments,
//! branches, and what each side and each join starts with (bindings, and
//! the fields a promotion made known, `known`).

#[allow(unused_imports)]
use super::*;

impl Lowering<'_, '_> {
    pub(super) fn set_exit(&mut self, exit: LExit) {
        let b = self.cur_block();
        let targets: Vec<usize> = match &exit {
            LExit::Goto(l) => vec![l.target],
            LExit::Branch(_, a, b) => vec![a.target, b.target],
            _ => vec![],
        };
        for &t in &targets {
            self.blocks[t].preds += 1;
        }
        // What every path into a join knows (see `known`).
        for t in targets {
            let here = self.known.carried(&self.env, self.blocks[t].join_depth.unwrap_or(0));
            let t = &mut self.blocks[t];
            match &mut t.known_in {
                None => t.known_in = Some(here),
                Some(k) => k.retain(|e| here.contains(e)),
            }
        }
        self.blocks[b].exit = Some(exit);
        self.cur = None;
    }

    /// A join block mirroring the first `depth` bindings, plus an optional result.
    pub(super) fn new_join(&mut self, depth: usize, result: Option<Ty>) -> usize {
        let mut inputargs = vec![];
        let mut shapes = vec![];
        for i in 0..depth {
            let (name, val) = self.env[i].clone();
            shapes.push(self.fresh_shape(Some(name), &val, &mut inputargs));
        }
        let has_result = result.is_some();
        if let Some(t) = result {
            // One variable; reshaped into a tuple's by the first value that
            // flows in (`link_to`), if it is a tuple.
            let var = self.new_var(None, t, self.span);
            inputargs.push(var);
            shapes.push(LVal::Var(var));
        }
        self.blocks.push(LBlock { inputargs, join_depth: Some(depth), has_result, shapes, ..Default::default() });
        self.blocks.len() - 1
    }

    pub(super) fn link_to(&mut self, target: usize, result: Option<LVal>) -> LLink {
        let depth = self.blocks[target].join_depth.unwrap_or(0);
        let mut args: Vec<LVal> = vec![];
        for (_, v) in &self.env[..depth] {
            v.flatten(&mut args);
        }
        let result_shape = result.clone();
        if self.blocks[target].has_result {
            let r = result.unwrap_or(LVal::Const(Const::Unit));
            let shape = self.blocks[target].shapes.last().cloned();
            if let (true, Some(LVal::Var(rv))) = (r.is_composite(), shape) {
                if self.blocks[target].preds == 0 {
                    let (want, have) = (self.vars[rv.0 as usize].ty.clone(), self.ty_of(&r));
                    let _ = self.u.unify(&want, &have);
                    let mut vars = vec![];
                    let shape = self.fresh_shape(None, &r, &mut vars);
                    let b = &mut self.blocks[target];
                    b.inputargs.pop();
                    b.inputargs.extend(vars);
                    *b.shapes.last_mut().unwrap() = shape;
                }
            }
            r.flatten(&mut args);
        }
        // Unify the types of the join's input arguments with what flows in.
        let same = {
            let shapes = &self.blocks[target].shapes;
            let mut incoming = self.env[..depth].iter().map(|(_, v)| v.clone()).collect::<Vec<_>>();
            if self.blocks[target].has_result {
                incoming.push(result_shape.clone().unwrap_or(LVal::Const(Const::Unit)));
            }
            shapes.len() == incoming.len() && shapes.iter().zip(&incoming).all(|(a, b)| a.same_shape(b))
        };
        if !same || args.len() != self.blocks[target].inputargs.len() {
            self.error(
                self.span,
                "values of different shapes meet here: a tuple and another value, or `&mut` references \
                 to different places (or an `Option<&mut _>` built in two ways); make both sides alike",
            );
            args.resize(self.blocks[target].inputargs.len(), LVal::Const(Const::Unit));
        }
        for (i, a) in args.iter().enumerate() {
            let (want, have) = (self.vars[self.blocks[target].inputargs[i].0 as usize].ty.clone(), self.ty_of(a));
            let _ = self.u.unify(&want, &have);
        }
        LLink { target, args }
    }

    /// Ends the current block with a jump to a join block.
    pub(super) fn jump(&mut self, target: usize, result: Option<LVal>) {
        if self.cur.is_none() {
            return;
        }
        let link = self.link_to(target, result);
        self.set_exit(LExit::Goto(link));
    }

    /// Continues in a join block; returns its result argument. With no
    /// predecessors, the code after it is unreachable.
    pub(super) fn enter(&mut self, b: usize) -> Option<LVal> {
        if self.blocks[b].preds == 0 {
            self.cur = None;
            return None;
        }
        let depth = self.blocks[b].join_depth.unwrap_or(0);
        for i in 0..depth {
            self.env[i].1 = self.blocks[b].shapes[i].clone();
        }
        // Paths meet: what each of them knows.
        let k = self.blocks[b].known_in.clone().unwrap_or_default();
        self.known.enter(&k, &self.blocks[b].shapes[..depth.min(self.blocks[b].shapes.len())]);
        self.cur = Some(b);
        if self.blocks[b].has_result {
            self.blocks[b].shapes.last().cloned()
        } else {
            None
        }
    }

    /// Continues in a loop's header: its back edges are not lowered yet,
    /// so no field is known there.
    pub(super) fn enter_loop_header(&mut self, b: usize) -> Option<LVal> {
        let v = self.enter(b);
        self.known.known.clear();
        v
    }

    /// Branches on `cond`; returns the (true, false) blocks. No block is current after.
    pub(super) fn branch(&mut self, cond: LVal) -> (usize, usize) {
        for _ in 0..2 {
            self.blocks.push(LBlock {
                env_at_entry: Some(self.env.clone()),
                known_at_entry: self.known.known.clone(),
                ..Default::default()
            });
        }
        let (t, f) = (self.blocks.len() - 2, self.blocks.len() - 1);
        let exit = LExit::Branch(cond, LLink { target: t, args: vec![] }, LLink { target: f, args: vec![] });
        self.set_exit(exit);
        (t, f)
    }

    /// Continues in one side of a branch, with the bindings as they were there.
    pub(super) fn resume(&mut self, b: usize) {
        if let Some(env) = &self.blocks[b].env_at_entry {
            self.env = env.clone();
            self.known.known = self.blocks[b].known_at_entry.clone();
        }
        self.cur = Some(b);
    }

    /// Continues only where `cond` holds; elsewhere jumps to the join `fail`.
    pub(super) fn test(&mut self, cond: LVal, fail: usize) {
        let (t, f) = self.branch(cond);
        self.resume(f);
        self.jump(fail, None);
        self.resume(t);
    }
}
