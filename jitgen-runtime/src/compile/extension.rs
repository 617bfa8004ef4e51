//! The compiler's entry points that generating extensions call, at their
//! frame type ([`PointFrame`]).
//!
//! The compiler is generic over its frames (tests use frames of their own),
//! so each of its methods would be compiled again in every crate whose
//! generating extension calls it, and LLVM would optimize it there on every
//! rebuild of the interpreter. These functions are not generic (a lifetime
//! is no type parameter) and never inlined: they are compiled once, here,
//! and an interpreter's crate only calls them.
//!
//! Architecture Invariant: generated code reaches the scheduler's largest
//! methods (merges, splits, flexswitches, spilled frames, an entry's
//! versions, finishing) only through this module.

use crate::compile::frame::PointFrame;
use crate::compile::redbox::RedBox;
use crate::compile::schedule::{Compilation, Declined, EntryFacts, MergeKind, ResumeFns};
use crate::compile::state::JitState;
use crate::ir::function::ResidualFunction;

/// A generating extension's compilation.
pub type ExtCompilation<'a> = Compilation<PointFrame<'a>>;
/// A generating extension's state.
pub type ExtState<'a> = JitState<PointFrame<'a>>;

/// [`Compilation::merge`] at a join.
#[inline(never)]
pub fn join<'a>(c: &mut ExtCompilation<'a>, st: ExtState<'a>) -> Option<ExtState<'a>> {
    c.merge(st, MergeKind::Join)
}

/// [`Compilation::merge`] at a loop's head.
#[inline(never)]
pub fn loop_head<'a>(c: &mut ExtCompilation<'a>, st: ExtState<'a>) -> Option<ExtState<'a>> {
    c.merge(st, MergeKind::LoopHead)
}

/// [`Compilation::false_side`]: the state the false side of a split on
/// `cond` starts from, if it has one.
#[inline(never)]
pub fn false_side<'a>(c: &mut ExtCompilation<'a>, cond: &RedBox, st: &mut ExtState<'a>) -> Option<FalseSide<'a>> {
    c.false_side(cond, st).map(|st| FalseSide { st, cond: *cond })
}

/// The false side of a split ([`false_side`]): its state and the condition.
pub struct FalseSide<'a> {
    st: ExtState<'a>,
    cond: RedBox,
}

impl<'a> FalseSide<'a> {
    /// The false side going on at `frame` ([`Compilation::fork`]): `None`
    /// when it is forked off (the true side goes on), else the state the
    /// path goes on with.
    #[inline(never)]
    pub fn then(self, c: &mut ExtCompilation<'a>, frame: PointFrame<'a>) -> Option<ExtState<'a>> {
        c.fork(&self.cond, self.st.pushed(frame))
    }

    /// [`FalseSide::then`] where the false side leaves the interpreter's
    /// loop ([`Compilation::fork_exit`]).
    #[inline(never)]
    pub fn then_exit(self, c: &mut ExtCompilation<'a>, frame: PointFrame<'a>) -> Option<ExtState<'a>> {
        c.fork_exit(&self.cond, self.st.pushed(frame))
    }

    /// [`Compilation::split_exit`]: the false side going on at `frame`,
    /// queued, the true side (which leaves the interpreter's loop) at
    /// `exit`, compiled when first taken.
    #[inline(never)]
    pub fn split_exit(self, c: &mut ExtCompilation<'a>, exit: PointFrame<'a>, frame: PointFrame<'a>) {
        c.split_exit(&self.cond, self.st.clone().pushed(exit), self.st.pushed(frame))
    }
}

/// [`Compilation::exits_lazily`].
#[inline(never)]
pub fn exits_lazily(c: &ExtCompilation<'_>, cond: &RedBox) -> bool {
    c.exits_lazily(cond)
}

/// [`Compilation::flexswitch`].
#[inline(never)]
pub fn flexswitch(
    c: &mut ExtCompilation<'_>,
    st: ExtState<'static>,
    value: Option<&RedBox>,
    fns: ResumeFns<PointFrame<'static>>,
) {
    c.flexswitch(st, value, fns)
}

/// A promotion of a run-time value: [`Compilation::flexswitch_every_turn`]
/// where it runs on every turn of the portal's loop, else
/// [`Compilation::flexswitch`].
#[inline(never)]
pub fn promote(
    c: &mut ExtCompilation<'_>,
    st: ExtState<'static>,
    value: &RedBox,
    every_turn: bool,
    fns: ResumeFns<PointFrame<'static>>,
) {
    if every_turn {
        c.flexswitch_every_turn(st, value, fns)
    } else {
        c.flexswitch(st, Some(value), fns)
    }
}

/// [`Compilation::unspill`].
#[inline(never)]
pub fn unspill<'a>(
    c: &mut ExtCompilation<'a>,
    st: ExtState<'a>,
    forever: fn(ExtState<'a>) -> ExtState<'static>,
    fns: ResumeFns<PointFrame<'static>>,
) -> Option<ExtState<'a>> {
    c.unspill(st, forever, fns)
}

/// [`Compilation::entry_facts`].
#[inline(never)]
pub fn entry_facts(c: &mut ExtCompilation<'_>) -> EntryFacts {
    c.entry_facts()
}

/// [`Compilation::version_entry`].
#[inline(never)]
pub fn version_entry<'a>(c: &mut ExtCompilation<'a>, entry: ExtState<'a>, facts: &EntryFacts, now: &[RedBox]) -> bool {
    c.version_entry(entry, facts, now)
}

/// [`Compilation::finish`].
#[inline(never)]
pub fn finish(c: ExtCompilation<'_>) -> Result<ResidualFunction, Declined> {
    c.finish()
}
