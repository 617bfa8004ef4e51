//! The JIT state: what a paused compile-time process is.
//!
//! A state is a chain of virtual frames, the innermost last: one per inlined
//! call, each knowing where its function continues (its block), its green
//! values and its red boxes. The generating extension defines the frame type
//! (typically one enum over the blocks of all the module's functions, greens in
//! their Rust types); the runtime only needs the frame's merge key and its red
//! boxes. A state is plain data: it is cloned at a red split, frozen and
//! compared at a merge point, and queued until the scheduler resumes it.

use std::fmt::Debug;
use std::hash::Hash;

use crate::redbox::RedBox;

/// One virtual frame of a generating extension.
pub trait Frame: Clone {
    /// The function, block and green values: states whose keys are equal may
    /// share residual code.
    type Key: Clone + Eq + Hash + Debug;
    /// This frame's key.
    fn key(&self) -> Self::Key;
    /// The red boxes of the frame's live variables, in a fixed order.
    fn reds(&self) -> Vec<RedBox>;
    /// Replaces the red boxes, in the order of [`Frame::reds`].
    fn set_reds(&mut self, reds: &[RedBox]);
    /// For a frame at a merge point that already went through it: marks it
    /// as not merged yet, so that a compilation resuming it (a deferred
    /// path) registers the merge point first.
    fn unmerge(&mut self) {}
}

/// A compile-time state: a chain of virtual frames, the innermost last.
#[derive(Clone, Debug)]
pub struct JitState<F> {
    /// The frames, outermost first.
    pub frames: Vec<F>,
}

impl<F: Frame> JitState<F> {
    /// A state with one frame.
    pub fn new(frame: F) -> JitState<F> {
        JitState { frames: vec![frame] }
    }

    /// The innermost frame.
    pub fn top(&self) -> &F {
        self.frames.last().expect("a state has at least one frame")
    }

    /// The innermost frame, mutably.
    pub fn top_mut(&mut self) -> &mut F {
        self.frames.last_mut().expect("a state has at least one frame")
    }

    /// The merge key of the whole chain.
    pub fn key(&self) -> Vec<F::Key> {
        self.frames.iter().map(Frame::key).collect()
    }

    /// Every red box of the chain, outermost frame first.
    pub fn reds(&self) -> Vec<RedBox> {
        self.frames.iter().flat_map(Frame::reds).collect()
    }

    /// Replaces every red box, in the order of [`JitState::reds`].
    pub fn set_reds(&mut self, reds: &[RedBox]) {
        let mut at = 0;
        for f in &mut self.frames {
            let n = f.reds().len();
            f.set_reds(&reds[at..at + n]);
            at += n;
        }
    }
}
