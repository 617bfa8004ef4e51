//! Fusing the pieces of a compiled tree that run often into one function:
//! when, which, and pointing the switches' tables at the fused code; where
//! a portal enters the root, or, in the one call of a root that is never
//! entered again, where a switch runs hot ([`flex_hot`]). And the thread's
//! backend that fusions and entries compile with ([`native_backend`]).
//!
//! Code compiled on the compiler's thread is fused there too: the fused
//! function is handed over by the `SubmitFn` the portal gives (the
//! compiler's thread's, which the run-time layer's `background` module
//! makes), the pieces run unfused meanwhile, and a later call of
//! [`ResidualFn::fuse_pieces`] installs it once it is ready (a portal's
//! entry, or a hot switch's report).

use crate::backend::cranelift::{CraneliftBackend, RuntimeHooks};
use crate::backend::Backend;
use crate::backend::BackendError;
use crate::ir::builder::ResidualFunction;
use crate::run::promotion::FlexTable;
use crate::run::residual::{Compiled, PendingFusion, ResidualFn, SubmitFn};

/// How often residual code took the cases of a tree's switches, per piece
/// they continue in (see [`crate::run::promotion::FlexTable::hits`]), and
/// the turns of the pieces' own loops (`ResidualFunction::turns`): a piece
/// entered seldom that loops is hot by its turns.
struct Heat<'a> {
    /// The tables of the root's and the pieces' switches.
    tables: Vec<&'a crate::run::promotion::FlexTable>,
    /// Per piece (by entry address), the cases taken into it.
    hits: std::collections::HashMap<usize, u64>,
    /// All cases taken.
    total: u64,
    /// Each piece's entry address, in the tree's order.
    entries: Vec<usize>,
}

impl<'a> Heat<'a> {
    fn of(root: &'a ResidualFunction, pieces: &'a [(usize, std::rc::Rc<ResidualFunction>)]) -> Heat<'a> {
        let tables: Vec<&crate::run::promotion::FlexTable> = std::iter::once(root)
            .chain(pieces.iter().map(|(_, f)| &**f))
            .flat_map(|f| f.switches.iter())
            .filter_map(|t| t.as_any().downcast_ref::<crate::run::promotion::FlexTable>())
            .collect();
        let mut hits: std::collections::HashMap<usize, u64> = std::collections::HashMap::new();
        for (entry, n) in tables.iter().flat_map(|t| t.hits()) {
            *hits.entry(entry).or_default() += n;
        }
        for (entry, f) in pieces {
            if let Some(turns) = f.turns.as_ref().map(|t| t.get()).filter(|&t| t > 0) {
                *hits.entry(*entry).or_default() += turns;
            }
        }
        let total = hits.values().sum();
        Heat { tables, hits, total, entries: pieces.iter().map(|(e, _)| *e).collect() }
    }

    /// The cases taken into pieces other than those at `fused` (sorted
    /// entries), and the turns of those pieces' loops: the heat outside
    /// the fused code.
    fn outside(&self, fused: &[usize]) -> u64 {
        self.hits.iter().filter(|(e, _)| fused.binary_search(e).is_err()).map(|(_, n)| n).sum()
    }

    /// Whether a tree fused with the pieces at `fused` (sorted entries)
    /// when its heat outside them was `at_fusion` is due for another
    /// fusion: the heat outside grew by [`HOT_AGAIN`] since, and a piece
    /// not copied is hot now (see `ResidualFn::hot_again`).
    fn calls_again(&self, fused: &[usize], at_fusion: u64) -> bool {
        self.outside(fused).saturating_sub(at_fusion) >= HOT_AGAIN
            && (0..self.entries.len()).any(|k| self.is_hot(k) && fused.binary_search(&self.entries[k]).is_err())
    }

    /// The operations a fusion of `root_ops` and its `pieces` compiles:
    /// the root's and its hot pieces' (those up to [`MAX_FUSED_OPS`]).
    fn fused_ops(&self, root_ops: usize, pieces: &[(usize, std::rc::Rc<ResidualFunction>)]) -> usize {
        let hot: usize =
            (pieces.iter().enumerate()).filter(|(k, _)| self.is_hot(*k)).map(|(_, (_, f))| f.op_count()).sum();
        root_ops + hot.min(MAX_FUSED_OPS)
    }

    /// Whether piece `k` is fused: residual code took the cases into it at
    /// least one time in [`HOT_SHARE`] (every piece, before it took any).
    fn is_hot(&self, k: usize) -> bool {
        self.total == 0 || self.hits.get(&self.entries[k]).copied().unwrap_or(0).saturating_mul(HOT_SHARE) >= self.total
    }
}

/// What [`ResidualFn::fuse_pieces`] did.
pub enum Fusion {
    /// Nothing to fuse: no new cases, or [`MAX_FUSIONS`] reached.
    Nothing,
    /// A fusion is due, but the root has not existed long enough yet, or
    /// the compiler's thread is compiling it.
    Postponed,
    /// The fusion was handed to the compiler's thread: a later call
    /// installs it ([`Fusion::Fused`]) once it is compiled.
    Submitted,
    /// The fused code, what fusing took on this thread and on the
    /// compiler's, and the residual operations it compiled.
    Fused(ResidualFn, std::time::Duration, usize, std::time::Duration),
}

/// A root is fused once it has existed this many times as long as its
/// fusions took and the next is expected to take (see
/// [`ResidualFn::fuse_pieces`]); `Config::set_fusion_patience` changes it.
pub const FUSION_PATIENCE: u32 = 1;

/// What fusing costs per residual operation before a module has fused
/// anything (a fusion's expected time): fusing compiles code already
/// simplified, without a generating extension (measured 1.5-3 µs, where
/// compiling costs 10-40: PERFORMANCE.md).
pub const NANOS_PER_FUSED_OP: u64 = 3_000;

/// How long a root's estimate of what its fusion would compile is kept
/// while no case is added (see [`ResidualFn::fuse_pieces`]).
pub const ESTIMATE_AGE: std::time::Duration = std::time::Duration::from_millis(5);

/// The fewest operations a fusion compiles on the compiler's thread, where
/// its root was compiled there: a smaller one is compiled in place, where
/// it stops the interpreter briefly and its code runs at once, sooner than
/// the compiler's thread would give it back (PERFORMANCE.md has both
/// sides' figures).
pub const BACKGROUND_FUSED_OPS: usize = 1_000;

/// Cases taken through a fused tree's tables and turns of its unfused
/// pieces' loops after which the tree is fused again, though it took no
/// new case (see `ResidualFn::hot_again`): a few milliseconds of code run
/// outside the fused code.
pub const HOT_AGAIN: u64 = 100_000;

/// Fusions of one root's pieces at most: each compiles the whole tree again.
pub const MAX_FUSIONS: usize = 12;

/// Operations of pieces that one fusion copies at most (past them, a
/// switch's case is reached through the switch): Cranelift's time grows
/// faster than the function.
pub const MAX_FUSED_OPS: usize = 40_000;

/// A piece is fused when residual code took the cases that continue in it
/// at least one time in this many of all the cases it took (see
/// `ir::passes::fuse`).
pub const HOT_SHARE: u64 = 1000;

impl ResidualFn {
    /// The pieces below the function that run often, fused into one
    /// function (see `ir::passes::fuse`) and compiled, when its switches got
    /// cases since it was made, at most [`MAX_FUSIONS`] times. Every case
    /// table that continues in a fused piece then points at that piece's
    /// entry into the fused code (its reentry), so the code runs from one
    /// piece to the next through jumps instead of switches.
    ///
    /// The root is not fused: a path leaves it through a switch at most once
    /// per entry (a case never comes back into it), so its own code runs as
    /// compiled and enters the fused code at a piece's reentry. Nor are the
    /// pieces run rarely (the continuations of a recursion's first few
    /// levels, say): a piece is fused when residual code took the cases that
    /// continue in it at least one time in [`HOT_SHARE`]. So the fused code
    /// depends on what runs often, not on when the root was compiled.
    ///
    /// A fusion compiles the pieces again, which costs a program that
    /// runs its code briefly (a first run, a machine made afresh for each
    /// run) more than it gains. So it waits until the root has run
    /// `patience` times as long as its fusions took and the next is
    /// expected to take at most (the operations of the root and its hot
    /// pieces, those a fusion copies, at `nanos_per_op()`, what fusing has
    /// cost this module): code that keeps running is
    /// fused, code that runs once is not. The root has run for as long as
    /// it has existed, less what its module spent compiling since
    /// (`compiling()`, in nanoseconds, against [`ResidualFn::note_birth`]):
    /// compiling its cases is not running it. With `patience` 0, it fuses
    /// whenever cases were added.
    ///
    /// The handle returned is this one: the root's code runs as before, its
    /// tables now entering the fused code, and every handle of the root (a
    /// portal's cache, a hot switch's, see `promotion::flex_hot`) counts the
    /// fusion. The listing stays the root's with its cases. Values seen
    /// later get cases in the pieces, until the next fusion.
    /// [`Fusion::Nothing`] also when the backend fails. With `submit`, a
    /// fused function of [`BACKGROUND_FUSED_OPS`] operations or more is
    /// compiled elsewhere ([`Fusion::Submitted`]) and installed by a later
    /// call.
    pub fn fuse_pieces(
        &self,
        patience: u32,
        nanos_per_op: impl FnOnce() -> u64,
        compiling: impl FnOnce() -> u64,
        submit: Option<SubmitFn>,
    ) -> Fusion {
        let me = &*self.0;
        let Some(pieces) = me.pieces.as_ref() else { return Fusion::Nothing };
        if let Some(done) = self.install_fusion() {
            return done;
        }
        let n = pieces.cases();
        let (times, cases) = me.fused.get();
        if times >= MAX_FUSIONS || n == cases && !self.hot_again() {
            return Fusion::Nothing;
        }
        if patience > 0 {
            // The clock is read at every entry that finds a fusion due: a
            // recursion enters its code a few times per run, and reading it
            // at one entry in 16 left such code unfused (PERFORMANCE.md).
            //
            // What a fusion would compile: the root and its hot pieces
            // (before the code has taken any case, every piece). Counting
            // the tree's cold pieces too would make a root whose tree is
            // mostly cold wait long past what fusing it costs, its hot
            // pieces running unfused meanwhile. Which pieces are hot changes
            // as the code runs: the estimate is made again when cases were
            // added or [`ESTIMATE_AGE`] has passed, not at every entry
            // (it walks every table of the tree).
            let age = me.born.elapsed();
            let ops = match me.estimate.get() {
                (at, ops, when) if at == n && age.saturating_sub(when) < ESTIMATE_AGE => ops,
                _ => {
                    let functions = pieces.functions();
                    let ops = Heat::of(&me.function, &functions).fused_ops(me.ops, &functions);
                    me.estimate.set((n, ops, age));
                    ops
                }
            };
            let expected = std::time::Duration::from_nanos(nanos_per_op().saturating_mul(ops as u64));
            let compiled = compiling().saturating_sub(me.compiling_at_birth.get());
            let ran = age.saturating_sub(std::time::Duration::from_nanos(compiled));
            if ran < (me.fusing.get() + expected) * patience {
                return Fusion::Postponed;
            }
        }
        let t = std::time::Instant::now();
        let functions = pieces.functions();
        let index: std::collections::HashMap<usize, usize> =
            functions.iter().enumerate().map(|(k, (entry, _))| (*entry, k)).collect();
        // Function 0 is the base of the fused function: an entry that is
        // never taken, before the pieces' copies (every piece a reentry).
        let mut base = crate::ir::builder::ResidualBuilder::new(&me.function.name, &me.inputs, &me.outputs);
        base.error_exit(crate::ir::ops::ErrorKind::Abort(u32::MAX));
        let base = base.finish();
        let cases = |func: usize, switch: u32| -> Vec<(u64, usize)> {
            let f = if func == 0 { &base } else { &*functions[func - 1].1 };
            let Some(t) = f.switches.get(switch as usize) else { return vec![] };
            let Some(t) = t.as_any().downcast_ref::<crate::run::promotion::FlexTable>() else { return vec![] };
            t.entries().into_iter().filter_map(|(w, entry)| Some((w, *index.get(&entry)?))).collect()
        };
        let refs: Vec<&ResidualFunction> = functions.iter().map(|(_, f)| &**f).collect();
        let heat = Heat::of(&me.function, &functions);
        let hot = |k: usize| heat.is_hot(k);
        let (mut fused, copied) = base.fused(&refs, &cases, MAX_FUSED_OPS, &hot);
        if let Some(turns) = pieces.turns().filter(|_| !fused.calls_rust()) {
            // Fused code that calls no Rust is not measured (see
            // `ResidualFunction::drop_turn_checks`).
            if fused.drop_turn_checks(turns as *const _ as u64) {
                turns.set_partial();
            }
        }
        let fused = match submit.filter(|_| !copied.is_empty() && fused.op_count() >= BACKGROUND_FUSED_OPS) {
            // No one is woken when it is compiled: the next entry, or the
            // next hot switch, installs the code once it is ready.
            Some(submit) => {
                let ops = fused.op_count();
                match submit(fused) {
                    Ok(code) => {
                        let took = t.elapsed();
                        *me.pending_fusion.borrow_mut() =
                            Some(PendingFusion { code, functions, copied, cases: n, took, ops });
                        return Fusion::Submitted;
                    }
                    Err(fused) => fused,
                }
            }
            None => fused,
        };
        // Nothing to copy (every piece's outputs differ from the root's) is
        // a fusion done too: it is not tried again until cases are added.
        let native = (!copied.is_empty()).then(|| {
            HOST_BACKEND.with(|b| {
                // Not while this thread's backend is compiling already.
                let mut b = b.try_borrow_mut().ok()?;
                if b.is_none() {
                    *b = Some(native_backend().ok()?);
                }
                b.as_mut()?.compile(&fused).ok()
            })
        });
        let native = match native {
            Some(None) => return Fusion::Nothing,
            Some(Some(native)) => Some(native),
            None => None,
        };
        let ops = if native.is_some() { fused.op_count() } else { 0 };
        self.install(&functions, &copied, native.as_ref(), n, t.elapsed(), ops, std::time::Duration::ZERO)
    }

    /// Ends a fusion of the tree's `cases` (copying `copied` of its
    /// `functions` into `native`, which took `took` here and `elsewhere` on
    /// the compiler's thread): cases continuing in a copied piece now enter
    /// the fused code at its copy, wherever the switch is, and the tree
    /// keeps that code as long as its tables. The root's code is as it was;
    /// every handle of it (the portal's cache, a switch that fused it from
    /// inside a call) sees the fusion.
    #[allow(clippy::too_many_arguments)]
    fn install(
        &self,
        functions: &[(usize, std::rc::Rc<ResidualFunction>)],
        copied: &[usize],
        native: Option<&crate::backend::cranelift::NativeCode>,
        cases: usize,
        took: std::time::Duration,
        ops: usize,
        elsewhere: std::time::Duration,
    ) -> Fusion {
        let me = &*self.0;
        let to: std::collections::HashMap<usize, usize> = copied
            .iter()
            .enumerate()
            .filter_map(|(k, piece)| Some((functions[*piece].0, native?.reentry(k)? as usize)))
            .collect();
        let heat = Heat::of(&me.function, functions);
        for table in &heat.tables {
            table.redirect(&to);
        }
        if let (Some(native), Some(pieces)) = (native, &me.pieces) {
            pieces.keep(native.owner());
        }
        let (times, _) = me.fused.get();
        me.fused.set((times + 1, cases));
        let mut entries: Vec<usize> = copied.iter().map(|k| functions[*k].0).collect();
        entries.sort_unstable();
        me.heat_at_fusion.set((heat.outside(&entries), me.born.elapsed()));
        *me.fused_entries.borrow_mut() = entries;
        me.fusing.set(me.fusing.get() + took + elsewhere);
        me.estimate.set((usize::MAX, 0, std::time::Duration::ZERO));
        Fusion::Fused(self.clone(), took, ops, elsewhere)
    }

    /// Whether a fused tree that took no new case runs outside its fused
    /// code again: its tables took cases into pieces the last fusion did
    /// not copy, and those pieces' loops turned, [`HOT_AGAIN`] times since
    /// that fusion, and one of those pieces is hot now. Cases into copied
    /// pieces run fused code, and fusing for them would compile the same
    /// function again (a recursion whose calls and returns switch on
    /// promoted values takes its tables millions of times). A fusion copies
    /// the pieces hot then; a piece that gets hot later (the loop of a path
    /// the first runs took seldom) runs as its case was compiled, at
    /// Cranelift's lowest level, until another fusion copies it: with the
    /// case budget bound to the call's time, the enum VM's Ackermann(2,
    /// 2000) stayed at 3.3x plain in 3 processes of 10, 12-15x in the
    /// others (PERFORMANCE.md). The heat is taken at most once per
    /// [`ESTIMATE_AGE`].
    fn hot_again(&self) -> bool {
        let me = &*self.0;
        let Some(pieces) = me.pieces.as_ref() else { return false };
        if me.fused.get().0 == 0 {
            return false;
        }
        let (at_fusion, when) = me.heat_at_fusion.get();
        let age = me.born.elapsed();
        if age.saturating_sub(when) < ESTIMATE_AGE {
            return false;
        }
        me.heat_at_fusion.set((at_fusion, age));
        Heat::of(&me.function, &pieces.functions()).calls_again(&me.fused_entries.borrow(), at_fusion)
    }

    /// Installs the fusion the compiler's thread compiled, once it is
    /// ready: as a fusion in place ends, the tables that continue in a
    /// copied piece enter the fused code at its copy. `None` where no
    /// fusion is pending; [`Fusion::Postponed`] while it is compiled;
    /// [`Fusion::Nothing`] where the backend failed (the fusion counts as
    /// done, so that it is not tried again until cases are added).
    fn install_fusion(&self) -> Option<Fusion> {
        let me = &*self.0;
        let mut pending = me.pending_fusion.borrow_mut();
        let Some((code, elsewhere)) = pending.as_mut()?.code.poll() else { return Some(Fusion::Postponed) };
        let PendingFusion { functions, copied, cases, took, ops, .. } = pending.take()?;
        drop(pending);
        let t = std::time::Instant::now();
        let Ok(native) = code else {
            let (times, _) = me.fused.get();
            me.fused.set((times + 1, cases));
            return Some(Fusion::Nothing);
        };
        Some(self.install(&functions, &copied, Some(&native), cases, took + t.elapsed(), ops, elsewhere))
    }

    /// The tables of the function's own flexswitches.
    pub fn switches(&self) -> Vec<&crate::run::promotion::FlexTable> {
        self.0.native.switches().iter().filter_map(|t| t.as_any().downcast_ref()).collect()
    }
}

/// What residual code compiled by this crate calls at run time: the
/// flexswitch miss handler, the hot switch's report, a failed direct call's.
pub const HOOKS: RuntimeHooks = RuntimeHooks {
    flex_miss: crate::run::promotion::flex_miss,
    flex_hot,
    direct_failed: crate::run::direct::direct_failed,
};

/// A Cranelift backend whose code calls this crate's run-time hooks
/// ([`HOOKS`]): the one to compile residual code with.
pub fn native_backend() -> Result<CraneliftBackend, BackendError> {
    CraneliftBackend::new(HOOKS)
}

thread_local! {
    /// This thread's backend for the host, made on first use (entering
    /// code compiles with it, and so does a fusion).
    pub(crate) static HOST_BACKEND: std::cell::RefCell<Option<CraneliftBackend>> = const { std::cell::RefCell::new(None) };
}

/// How long the one call that entered a root's code must have run in it
/// for a switch of it that runs hot to fuse it ([`flex_hot`]).
pub const LONG_CALL: std::time::Duration = std::time::Duration::from_millis(50);

/// Whether code whose entries were `entered` (how many, the last when;
/// `Compiled::entered`) has run [`LONG_CALL`] since its last entry: then a
/// hot switch inside it fuses it ([`flex_hot`]). Not only its first entry:
/// a script that handed over while its budget for cases was spent, and
/// entered again, may stay in its code to its end.
fn in_code_long(entered: (u64, Option<std::time::Instant>)) -> bool {
    matches!(entered, (1.., Some(t)) if t.elapsed() >= LONG_CALL)
}

/// Called by residual code when a case of the switch at `table` has been
/// taken [`crate::backend::cranelift::HOT_HITS`] times more: fuses the root the switch belongs to
/// (`ResidualFn::fuse_pieces`, with the default patience), as a portal's
/// entry does, where the code's last entry was [`LONG_CALL`] ago, so that a
/// long call that never enters its code again (a whole program in one
/// call, or a script that entered again after interpreting while its budget
/// for cases was spent) runs fused too. The code running stays valid: fusion redirects the case
/// tables, and the code it replaces lives as long as the root. Returns 0.
///
/// # Safety
/// `buf` is the address of a live `FlexTable`'s `CaseTable` (residual code
/// passes the table it was compiled with, which its machine code keeps alive).
pub unsafe extern "C" fn flex_hot(buf: *mut u64) -> u64 {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: see above; the `CaseTable` is the `FlexTable`'s first field
        // (`repr(C)`), at the same address.
        let table = unsafe { &*(buf as *const FlexTable) };
        let Some(root) = table.tree().and_then(|t| t.root()) else { return };
        let Ok(root) = root.downcast::<Compiled>() else { return };
        // Code entered often is fused where it is entered.
        if !in_code_long(root.entered.get()) {
            return;
        }
        let stats = table.stats();
        let per_op = || stats.and_then(|s| s.nanos_per_fused_op()).unwrap_or(NANOS_PER_FUSED_OP);
        let compiling = || stats.map_or(0, |s| s.compile_nanos());
        let submit = root.elsewhere.get();
        match (ResidualFn(root).fuse_pieces(FUSION_PATIENCE, per_op, compiling, submit), stats) {
            (Fusion::Fused(_, took, ops, elsewhere), Some(s)) => s.fused_at(took, elsewhere, ops),
            (Fusion::Submitted, Some(s)) => s.submitted(),
            _ => {}
        }
    }));
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ops::{BinOp, Overflow, ValTy};

    #[test]
    fn a_hot_switch_fuses_code_whose_last_entry_has_lasted_a_long_call() {
        let now = std::time::Instant::now();
        let long_ago = now.checked_sub(LONG_CALL * 2).expect("a clock past its start");
        assert!(!in_code_long((0, None)), "never entered");
        assert!(!in_code_long((1, Some(now))), "entered just now");
        assert!(in_code_long((1, Some(long_ago))), "its one entry long ago");
        assert!(in_code_long((2, Some(long_ago))), "entered again, and that entry long ago");
        assert!(!in_code_long((40, Some(now))), "entered often, the last just now");
    }

    /// A piece of about `ops` operations (its input multiplied in, again
    /// and again).
    fn piece(ops: usize) -> std::rc::Rc<ResidualFunction> {
        let mut b = crate::ir::builder::ResidualBuilder::new("piece", &[ValTy::I64], &[ValTy::I64]);
        let x = b.inputs()[0];
        let mut v = x;
        for _ in 1..ops {
            v = b.bin(BinOp::Mul, ValTy::I64, Overflow::Wrap, v, x);
        }
        b.ret(&[v]);
        std::rc::Rc::new(b.finish())
    }

    /// A piece entered seldom whose loop turns often is hot by its turns.
    #[test]
    fn a_piece_is_hot_by_the_turns_of_its_loops_too() {
        let pieces = vec![(0x10, piece(3)), (0x20, piece(3)), (0x30, piece(3))];
        let root = piece(2);
        let set = |k: usize, n: u64| pieces[k].1.turns.as_ref().expect("a count").set(n);
        let hot = || {
            let h = Heat::of(&root, &pieces);
            (0..pieces.len()).map(|k| h.is_hot(k)).collect::<Vec<bool>>()
        };
        assert_eq!(hot(), [true, true, true], "nothing taken yet: every piece");
        set(0, 10_000);
        set(1, 2);
        assert_eq!(hot(), [true, false, false]);
        set(1, 5_000);
        assert_eq!(hot(), [true, true, false]);
        assert_eq!(Heat::of(&root, &pieces).total, 15_000);
    }

    /// A fused tree is fused again for the heat of the pieces it did not
    /// copy, once one of them is hot, not for cases taken into its copies
    /// (a recursion switching at every call and return).
    #[test]
    fn a_tree_is_fused_again_for_pieces_it_did_not_copy() {
        let pieces = vec![(0x10, piece(3)), (0x20, piece(3)), (0x30, piece(3))];
        let heat = |hits: &[(usize, u64)]| {
            let hits: std::collections::HashMap<usize, u64> = hits.iter().copied().collect();
            let total = hits.values().sum();
            Heat { tables: vec![], hits, total, entries: pieces.iter().map(|(e, _)| *e).collect() }
        };
        let fused = [0x10, 0x20];
        let only_copies = heat(&[(0x10, 50_000_000), (0x20, 9_000_000)]);
        assert!(!only_copies.calls_again(&fused, 0), "cases into its copies run fused code");
        let a_piece_left = heat(&[(0x10, 50_000_000), (0x30, 200_000)]);
        assert!(a_piece_left.calls_again(&fused, 0));
        assert!(!a_piece_left.calls_again(&fused, 150_000), "not HOT_AGAIN more since");
        let cold = heat(&[(0x10, 500_000_000), (0x30, 200_000)]);
        assert!(!cold.calls_again(&fused, 0), "hotter outside, but the piece is cold against the rest");
    }

    /// A fusion is expected to compile what it copies: the root and the
    /// pieces residual code entered often, every piece before it entered
    /// any; the cold bulk of a tree does not make a fusion wait.
    #[test]
    fn a_fusion_is_expected_to_compile_the_hot_pieces() {
        let pieces = vec![(0x10, piece(3)), (0x20, piece(400)), (0x30, piece(400))];
        let ops = |k: usize| pieces[k].1.op_count();
        assert!(ops(1) > 100 && ops(0) < 10, "{} {}", ops(0), ops(1));
        let heat = |hits: &[(usize, u64)]| {
            let hits: std::collections::HashMap<usize, u64> = hits.iter().copied().collect();
            let total = hits.values().sum();
            Heat { tables: vec![], hits, total, entries: pieces.iter().map(|(e, _)| *e).collect() }
        };
        assert_eq!(heat(&[]).fused_ops(5, &pieces), 5 + ops(0) + ops(1) + ops(2));
        assert_eq!(heat(&[(0x10, 10_000), (0x20, 1)]).fused_ops(5, &pieces), 5 + ops(0));
        assert_eq!(heat(&[(0x10, 10_000), (0x30, 9_000)]).fused_ops(5, &pieces), 5 + ops(0) + ops(2));
    }
}
