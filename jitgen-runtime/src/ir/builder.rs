//! The builder that records residual functions ([`crate::ir::function`]):
//! the scheduler and red boxes append instructions to the current block
//! and open, jump to and branch between labels; `finish` simplifies
//! ([`crate::ir::passes`]).

pub use crate::ir::function::{
    CallbackFn, CaseTable, EntityRef, Inst, Label, Pieces, PrimaryMap, RBlock, RegisterCell, ResidualFunction,
    SecondaryMap, SwitchTable, Terminator, Val,
};
pub use crate::ir::listing::listing;
pub use crate::ir::passes::{MAX_COPIED_OPS, MAX_UNROLLED_OPS, UNROLL_TURNS};

use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

/// Records a residual function. Values and labels are numbered in creation order.
#[derive(Debug)]
pub struct ResidualBuilder {
    f: ResidualFunction,
    cur: Option<Label>,
    ops: usize,
    /// Execute mode (the blackhole interpreter): red boxes are all
    /// constants and operations happen at once instead of being recorded.
    pub(crate) exec: bool,
    /// How addresses were computed (see [`SymAddr`]), and integers as a
    /// root plus a constant, for the values that are not roots.
    pub(crate) addrs: rustc_hash::FxHashMap<Val, SymAddr>,
    /// Integer values made by a widening cast, and what they widen.
    pub(crate) widened: rustc_hash::FxHashMap<Val, Val>,
    /// Values known to be lengths of lists (below `2^62`, so a positive
    /// constant added to one is never zero).
    pub(crate) lengths: rustc_hash::FxHashSet<Val>,
    /// Calls recorded so far (a call may change any `Vec`'s length or buffer).
    pub(crate) calls: u64,
    /// Calls of Rust recorded so far on paths commonly taken (not `cold`):
    /// where a portal's code may run slower than its interpreter.
    pub(crate) hot_calls: u64,
    /// Two-way branches recorded so far.
    pub(crate) branches: u64,
    /// Calls recorded now are on a path rarely taken ([`Inst::Call`]'s `cold`).
    pub(crate) cold: bool,
    /// Comparisons known to hold where code is recorded now: taken true by
    /// a branch on this path since its last merge point (see
    /// `ResidualBuilder::path_intervals`).
    pub(crate) path_conds: Vec<Val>,
    /// What [`ResidualBuilder::path_conds`] is where a queued label is taken
    /// up (the false side of a branch: what held before it).
    pub(crate) label_conds: rustc_hash::FxHashMap<Label, Vec<Val>>,
    /// The operands of the comparisons recorded.
    pub(crate) cmps: rustc_hash::FxHashMap<Val, (CmpOp, crate::ir::operand::RedBox, crate::ir::operand::RedBox)>,
}

/// An address as it was computed: `root + index * stride + offset`, `root`
/// being a value that was not computed so (an input, a load, a constant).
/// Two addresses with equal `SymAddr`s are equal, whatever residual values
/// computed them: this is what lets a known field be found again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SymAddr {
    /// Where the computation started.
    pub root: crate::ir::operand::RedBox,
    /// A run-time index (its root: through widening casts, or what
    /// constants were added to, their product with the stride being in
    /// `offset`) and its stride, if any.
    pub index: Option<(crate::ir::operand::RedBox, u64)>,
    /// Bytes added.
    pub offset: i64,
}

impl SymAddr {
    /// The address `offset` bytes further.
    pub fn plus(self, offset: i64) -> SymAddr {
        SymAddr { offset: self.offset.wrapping_add(offset), ..self }
    }
}

impl ResidualBuilder {
    /// Starts a function; the entry block is current and its parameters are the inputs.
    pub fn new(name: &str, inputs: &[ValTy], outputs: &[ValTy]) -> ResidualBuilder {
        let mut b = ResidualBuilder {
            f: ResidualFunction {
                name: name.to_string(),
                inputs: inputs.to_vec(),
                outputs: outputs.to_vec(),
                vals: PrimaryMap::new(),
                blocks: PrimaryMap::from(vec![RBlock::default()]),
                switches: vec![],
                pieces: None,
                cells: vec![],
                reentries: vec![],
                passes_pending: false,
                turns: Some(std::rc::Rc::new(std::cell::Cell::new(0))),
            },
            cur: Some(Label::ENTRY),
            ops: 0,
            exec: false,
            addrs: Default::default(),
            lengths: Default::default(),
            widened: Default::default(),
            calls: 0,
            hot_calls: 0,
            branches: 0,
            cold: false,
            path_conds: vec![],
            label_conds: Default::default(),
            cmps: Default::default(),
        };
        for t in inputs {
            let v = b.new_val(*t);
            b.f.blocks[Label::ENTRY].params.push(v);
        }
        b
    }

    fn new_val(&mut self, ty: ValTy) -> Val {
        self.f.vals.push(ty)
    }

    /// The entry block's parameters.
    pub fn inputs(&self) -> &[Val] {
        &self.f.blocks[Label::ENTRY].params
    }

    /// The type of a value.
    pub fn ty(&self, v: Val) -> ValTy {
        self.f.vals[v]
    }

    /// Residual instructions recorded so far.
    pub fn op_count(&self) -> usize {
        self.ops
    }

    /// Whether the builder executes instead of recording (the scheduler's execute mode, `Compilation::executing`).
    pub fn is_executing(&self) -> bool {
        self.exec
    }

    /// The function recorded so far (not simplified yet).
    pub fn function(&self) -> &ResidualFunction {
        &self.f
    }

    /// Says that `cell` stays in a register while the function runs (see
    /// [`RegisterCell`]: the caller promises what it says).
    pub fn keep_in_register(&mut self, cell: RegisterCell) {
        if !self.f.cells.contains(&cell) {
            self.f.cells.push(cell);
        }
    }

    /// Whether a block is being filled (false after a terminator, until `switch_to`).
    pub fn is_open(&self) -> bool {
        self.cur.is_some()
    }

    fn push(&mut self, inst: Inst) {
        let l = self.cur.expect("emitting into a terminated block");
        self.ops += 1;
        self.f.blocks[l].insts.push(inst);
    }

    fn push_def(&mut self, ty: ValTy, make: impl FnOnce(Val) -> Inst) -> Val {
        let dst = self.new_val(ty);
        self.push(make(dst));
        dst
    }

    /// A constant.
    pub fn konst(&mut self, ty: ValTy, bits: u64) -> Val {
        let bits = ty.canon(bits);
        self.push_def(ty, |dst| Inst::Const { dst, ty, bits })
    }

    /// `a op b`.
    pub fn bin(&mut self, op: BinOp, ty: ValTy, ov: Overflow, a: Val, b: Val) -> Val {
        self.push_def(ty, |dst| Inst::Bin { dst, op, ty, ov, a, b })
    }

    /// `op a`.
    pub fn un(&mut self, op: UnOp, ty: ValTy, ov: Overflow, a: Val) -> Val {
        self.push_def(ty, |dst| Inst::Un { dst, op, ty, ov, a })
    }

    /// `a op b` (a bool).
    pub fn cmp(&mut self, op: CmpOp, ty: ValTy, a: Val, b: Val) -> Val {
        self.push_def(ValTy::Bool, |dst| Inst::Cmp { dst, op, ty, a, b })
    }

    /// `a as to`.
    pub fn cast(&mut self, from: ValTy, to: ValTy, a: Val) -> Val {
        self.push_def(to, |dst| Inst::Cast { dst, from, to, a })
    }

    /// A load at `base + offset`.
    pub fn load(&mut self, ty: ValTy, base: Val, offset: i32) -> Val {
        self.push_def(ty, |dst| Inst::Load { dst, ty, base, offset })
    }

    /// A store at `base + offset`.
    pub fn store(&mut self, ty: ValTy, base: Val, offset: i32, value: Val) {
        self.push(Inst::Store { ty, base, offset, value });
    }

    /// Leaves with `IndexOutOfBounds` unless `index < len`.
    pub fn bounds_check(&mut self, index: Val, len: Val) {
        self.push(Inst::BoundsCheck { index, len });
    }

    /// A call of a Rust callback (see [`CallbackFn`]) returning values of the given types.
    pub fn call(&mut self, func: CallbackFn, name: &str, args: &[(Val, ValTy)], rets: &[ValTy]) -> Vec<Val> {
        self.calls += 1;
        self.hot_calls += u64::from(!self.cold);
        self.push_call(func, name, args, rets, false)
    }

    /// [`ResidualBuilder::call`] of a helper without effects that residual
    /// code sees: dropped when its results are unused ([`Inst::Call`]'s
    /// `pure`). Not counted as a call that may change a `Vec`.
    pub fn call_pure(&mut self, func: CallbackFn, name: &str, args: &[(Val, ValTy)], rets: &[ValTy]) -> Vec<Val> {
        self.push_call(func, name, args, rets, true)
    }

    fn push_call(
        &mut self,
        func: CallbackFn,
        name: &str,
        args: &[(Val, ValTy)],
        rets: &[ValTy],
        pure: bool,
    ) -> Vec<Val> {
        let dsts: Vec<Val> = rets.iter().map(|t| self.new_val(*t)).collect();
        let cold = self.cold;
        self.push(Inst::Call { dsts: dsts.clone(), func, name: name.to_string(), args: args.to_vec(), cold, pure });
        dsts
    }

    /// [`ResidualBuilder::call`] on a path rarely taken: made so that it
    /// clobbers no register ([`Inst::Call`]'s `cold`).
    pub fn call_cold(&mut self, func: CallbackFn, name: &str, args: &[(Val, ValTy)], rets: &[ValTy]) -> Vec<Val> {
        let was = std::mem::replace(&mut self.cold, true);
        let r = self.call(func, name, args, rets);
        self.cold = was;
        r
    }

    /// A direct call of compiled code at the address `code` (see
    /// [`Inst::CallCode`]) returning values of the given types.
    pub fn call_code(&mut self, code: Val, entry: u64, args: &[(Val, ValTy)], rets: &[ValTy]) -> Vec<Val> {
        let dsts: Vec<Val> = rets.iter().map(|t| self.new_val(*t)).collect();
        self.calls += 1;
        self.push(Inst::CallCode { dsts: dsts.clone(), code, entry, args: args.to_vec() });
        dsts
    }

    /// A new label with parameters of the given types (not current).
    pub fn new_label(&mut self, params: &[ValTy]) -> (Label, Vec<Val>) {
        let vals: Vec<Val> = params.iter().map(|t| self.new_val(*t)).collect();
        (self.f.blocks.push(RBlock { params: vals.clone(), insts: vec![], term: None }), vals)
    }

    /// If the current block has recorded nothing and `args` (of types
    /// `tys`) are distinct parameters of it: the block, and the position of
    /// each among its parameters. Jumping to the block with them there
    /// ([`ResidualBuilder::args_at`]) is then the same as continuing here.
    pub fn forwarding_params(&self, args: &[Val], tys: &[ValTy]) -> Option<(Label, Vec<u32>)> {
        let l = self.cur?;
        let blk = &self.f.blocks[l];
        if l == Label::ENTRY || !blk.insts.is_empty() || args.len() != tys.len() {
            return None;
        }
        let mut perm = Vec::with_capacity(args.len());
        for (a, t) in args.iter().zip(tys) {
            let p = blk.params.iter().position(|p| p == a)? as u32;
            if perm.contains(&p) || self.f.vals[*a] != *t {
                return None;
            }
            perm.push(p);
        }
        Some((l, perm))
    }

    /// The arguments of a jump to `l` that puts `args` at the positions
    /// `perm` among its parameters; the others get zeros (the code there
    /// no longer reads them).
    pub fn args_at(&mut self, l: Label, perm: &[u32], args: &[Val]) -> Vec<Val> {
        let params = self.f.blocks[l].params.clone();
        let mut out: Vec<Option<Val>> = vec![None; params.len()];
        for (&p, a) in perm.iter().zip(args) {
            out[p as usize] = Some(*a);
        }
        params.iter().zip(out).map(|(p, a)| a.unwrap_or_else(|| self.konst(self.f.vals[*p], 0))).collect()
    }

    /// Where the next instruction goes: the current block and its length.
    pub fn mark(&self) -> Option<(Label, usize)> {
        self.cur.map(|l| (l, self.f.blocks[l].insts.len()))
    }

    /// Moves the instructions of terminated block `l` from index `at` on,
    /// and its terminator, to a new block without parameters, which it
    /// returns; `l` is current again, open at its end.
    pub fn split_block(&mut self, l: Label, at: usize) -> Label {
        let (rest, _) = self.new_label(&[]);
        let blk = &mut self.f.blocks[l];
        let (insts, term) = (blk.insts.split_off(at), blk.term.take());
        let moved = &mut self.f.blocks[rest];
        (moved.insts, moved.term) = (insts, term);
        self.cur = Some(l);
        rest
    }

    /// Replaces the uses of values by others (`subst`, followed through
    /// chains) in the blocks `in_block` selects.
    pub fn substitute(&mut self, in_block: impl Fn(Label) -> bool, subst: &rustc_hash::FxHashMap<Val, Val>) {
        let resolve = |v: Val| {
            let mut v = v;
            // (Bounded: a cycle would be a caller's mistake.)
            for _ in 0..=subst.len() {
                match subst.get(&v) {
                    Some(n) => v = *n,
                    None => break,
                }
            }
            v
        };
        for (l, b) in self.f.blocks.iter_mut() {
            if !in_block(l) {
                continue;
            }
            for inst in &mut b.insts {
                inst.map_uses(&resolve);
            }
            if let Some(t) = &mut b.term {
                t.map_uses(&resolve);
            }
        }
    }

    /// Continues emitting into `l`.
    pub fn switch_to(&mut self, l: Label) {
        self.cur = Some(l);
    }

    fn terminate(&mut self, t: Terminator) {
        let l = self.cur.take().expect("terminating a terminated block");
        self.f.blocks[l].term = Some(t);
    }

    /// Ends the current block with a jump.
    pub fn jump(&mut self, l: Label, args: &[Val]) {
        self.terminate(Terminator::Jump(l, args.to_vec()));
    }

    /// Ends the current block with a two-way branch.
    pub fn branch(&mut self, cond: Val, if_true: (Label, &[Val]), if_false: (Label, &[Val])) {
        self.branches += 1;
        self.terminate(Terminator::Branch {
            cond,
            if_true: (if_true.0, if_true.1.to_vec()),
            if_false: (if_false.0, if_false.1.to_vec()),
        });
    }

    /// Ends the current block by returning the outputs.
    pub fn ret(&mut self, vals: &[Val]) {
        self.terminate(Terminator::Return(vals.to_vec()));
    }

    /// Ends the current block with an error exit.
    pub fn error_exit(&mut self, kind: ErrorKind) {
        self.terminate(Terminator::Error(kind));
    }

    /// Ends the current block with a flexswitch on `value` dispatching
    /// through `table` (see [`Terminator::FlexSwitch`]).
    pub fn flexswitch(&mut self, value: Val, live: &[Val], table: std::rc::Rc<dyn SwitchTable>) {
        self.f.switches.push(table);
        let switch = self.f.switches.len() as u32 - 1;
        self.terminate(Terminator::FlexSwitch { value, live: live.to_vec(), switch });
    }

    /// The finished function, simplified. Blocks left open are an error exit
    /// (they cannot be reached by a complete compilation).
    pub fn finish(self) -> ResidualFunction {
        let mut f = self.finish_as_recorded();
        f.run_pending_passes();
        f
    }

    /// The finished function as recorded, its residual passes pending
    /// ([`ResidualFunction::passes_pending`]).
    pub fn finish_as_recorded(mut self) -> ResidualFunction {
        for b in self.f.blocks.values_mut() {
            if b.term.is_none() && (!b.insts.is_empty() || !b.params.is_empty()) {
                b.term = Some(Terminator::Error(ErrorKind::Abort(u32::MAX)));
            }
        }
        let entry = &mut self.f.blocks[Label::ENTRY];
        if entry.term.is_none() {
            entry.term = Some(Terminator::Error(ErrorKind::Abort(u32::MAX)));
        }
        self.f.passes_pending = true;
        self.f
    }
}
