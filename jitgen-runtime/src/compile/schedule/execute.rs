//! Execute mode (the blackhole interpreter of DESIGN.md section 3).
//!
//! [`Compilation::executing`] runs the same generating extension on known
//! inputs: every red box is a constant, so red operations fold; loads,
//! stores, bounds checks and callbacks (`red_call`) happen at once instead of
//! being recorded; branches follow their constant conditions; merge points
//! let every state through; the first return is the result
//! ([`Compilation::execute`]), and an error the interpreter would raise comes
//! back as the same `ResidualError`. So residual code that hands over
//! continues in the interpreter from the very state it stopped in, with the
//! interpreter's semantics by construction: one description of the
//! interpreter, the flow graphs, serves both. Tests:
//! `jitgen-runtime/tests/exec.rs`, `tests/promotion.rs`, `tests/lazy.rs`.

use crate::compile::state::Frame;
use crate::ir::ops::{ErrorKind, ValTy};

use super::{Compilation, Limits};

impl<F: Frame> Compilation<F> {
    /// Execute mode, the blackhole interpreter: the same generating extension,
    /// run on inputs that are all known (`words`), executes the interpreter's
    /// flow graphs instead of compiling them. Red operations fold, loads,
    /// stores and calls happen at once, branches follow their constant
    /// conditions, merge points let every state through, and the first
    /// `finish_return` gives the result ([`Compilation::execute`]). It is how
    /// residual code that gives up (a full flexswitch, a declined case)
    /// continues in the interpreter from where it stopped.
    pub fn executing(name: &str, inputs: &[ValTy], words: &[u64], outputs: &[ValTy]) -> Compilation<F> {
        let mut c = Compilation::new(name, inputs, outputs, Limits::default());
        c.b.exec = true;
        c.exec_inputs = Some(words.to_vec());
        c
    }

    /// Runs `body` (which drives this compilation in execute mode) and returns
    /// what the interpreter returned, or the error it raised.
    pub fn execute(
        mut self,
        body: impl FnOnce(&mut Compilation<F>),
    ) -> Result<Vec<u64>, crate::run::residual::ResidualError> {
        use crate::compile::redbox::ExecStop;
        use crate::run::residual::ResidualError;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut self)));
        match r {
            Ok(()) if self.parked.is_some() => Err(ResidualError::Parked(self.parked.take().expect("checked"))),
            Ok(()) => self.exec_result.take().ok_or_else(|| ResidualError::Exit {
                kind: ErrorKind::Abort(crate::run::residual::message_id(
                    "jitgen: the interpreter stopped without returning",
                )),
                detail: None,
            }),
            Err(p) => match p.downcast::<ExecStop>() {
                Ok(stop) => Err(match *stop {
                    ExecStop::Error(kind, detail) => ResidualError::Exit { kind, detail },
                    ExecStop::Panicked(p) => ResidualError::Panicked(p),
                    ExecStop::Unsupported(why) => ResidualError::Panicked(Box::new(format!(
                        "jitgen cannot continue in the interpreter here: {why}"
                    ))),
                }),
                Err(p) => Err(ResidualError::Panicked(p)),
            },
        }
    }

    /// Whether the generating extension should stop at the portal's merge
    /// point ([`Compilation::park`]): in execute mode, when the portal can
    /// continue in the interpreter proper from there.
    pub fn parking(&self) -> bool {
        self.park_ok && self.parked.is_none()
    }

    /// Stops execution with this state (a `JitState` at the portal's merge
    /// point), which [`Compilation::execute`] returns as
    /// [`crate::run::residual::ResidualError::Parked`].
    pub fn park(&mut self, state: Box<dyn std::any::Any>) {
        self.parked = Some(state);
    }
}
