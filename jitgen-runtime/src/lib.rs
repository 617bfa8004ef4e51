//! jitgen-runtime: the support code that generating extensions call at compile
//! time (red boxes, JIT state, splits and merges, promotion) and the
//! machine-code backend under it (Cranelift, and a text backend for tests).
//!
//! Not written yet: this crate is the subject of issue 3. It exists now so that
//! the workspace has the layout of DESIGN.md section 2.
//!
//! Architecture Invariant: this crate knows nothing of `syn`; generating
//! extensions reach it only through `::jitgen::__private`.
