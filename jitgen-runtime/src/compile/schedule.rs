//! One compilation: the scheduler of a generating extension's paths, and its
//! merge points.
//!
//! The generating extension runs one path at a time. At a red split it asks
//! [`Compilation::split`], which emits a conditional branch, queues the state
//! of the other side and lets the extension continue on one side. At a merge
//! point (the entry of a join block) it hands its state to
//! [`Compilation::merge`], which freezes it and looks it up among the states
//! already compiled for the same key (function, block, greens):
//!
//! - a compiled state at least as general (each red the same constant, or a
//!   run-time value there): jump to its residual code; the path ends;
//! - otherwise a new version: constants that differ from the most general
//!   version so far become run-time values (widening), a label is made for it
//!   and the path continues there.
//!
//! When a path ends (a return, a jump to existing code), the extension asks
//! [`Compilation::next_pending`] for the next queued state.
//!
//! Termination: one key has at most [`Limits::max_versions`] versions that
//! keep constants (the last of them only those that every version and its
//! own state agree on), then the fully general one, which matches every later
//! arrival; and every compilation has a budget of residual operations, past
//! which it is declined.
//!
//! ## States, splits and merges in detail
//!
//! **States, splits and merges.** A generating extension runs one path at a time.
//! `Compilation::split` on a red condition emits a branch, queues the other side's state
//! (its frames cloned) and continues on one side; on a constant condition it folds.
//! `Compilation::merge` at the entry of a join block freezes the state into its key (the
//! frames' function, block and greens) and the shape of its reds (each a constant, or a
//! run-time value). If a compiled version of that key covers the shape (each red the
//! same constant, or a run-time value there), the path jumps to it and ends. Otherwise a
//! new version is made. At a forward join it keeps its constants (up to
//! `max_versions`); at a loop head the first two shapes are kept exact (the first turn
//! of a loop often differs from the steady state: a stack slot written during the turn
//! is a constant from the second turn on) and a third is widened against the most
//! general version so far: reds that differ become run-time values (and the known fields,
//! see below, are intersected). A version gets a
//! label whose parameters are its run-time reds, and the path continues there. When the
//! current block has recorded nothing since it began and its parameters hold every value
//! the new version passes (two merge points in a row with no operation between them:
//! TLC's PICK, PUSH, POP), that block is the version's label too, and the version keeps
//! where its values sit among the block's parameters (`Version::perm`; a jump to it
//! passes zeros for the others, which the code after it no longer reads). It is the
//! same code either way: what the extension did between the two merge points depended
//! only on the first one's key and shape. It spares the labels and jumps that
//! simplification removed again (155 of the 180 blocks TLC factorial recorded).
//! `MergeKind::LoopHeadGeneral` makes every red a run-time value at the first arrival. Values reach a label
//! only as its parameters, so SSA dominance holds by construction.
//!
//! Architecture Invariant: compilation terminates. A key has at most
//! `Limits::max_versions` versions that keep constants, the last of them only those
//! that every version so far and its own state agree on (an enum tag that never
//! varied: making it a run-time value too compiled every case of every `match` on it,
//! 1259 residual operations and 4.9 ms for TLC factorial's first pass instead of 74
//! and 2.5 ms), then the fully general one (it covers every later arrival), a compilation has a budget of `Limits::max_ops` residual
//! operations (past it, what is left is deferred, see below; a hard limit of twice the
//! budget declines), and `Limits::max_steps` stops a green loop that never emits.
//! Architecture Invariant: `ops.rs` is the single definition of operation semantics;
//! the conformance suite checks Cranelift's code against it on every integer type and
//! f64, and checks `ops.rs` against Rust's own operators.
//! Architecture Invariant: machine code is owned by `NativeCode` handles and freed with
//! the last of them (`live_code_modules` counts it).
//!
//! ## Entry promotion and jump threading
//!
//! *Entry promotion of loop-invariant divisors* (`schedule.rs`, `ir/function.rs`, the
//! portal's generated compile function). A hardware division costs 20-40 cycles; by a
//! constant, Cranelift makes it a multiplication. The portal's hook gathers the inputs
//! of residual code before it compiles and hands them to the compile function. After
//! the first (general) compilation, `Compilation::entry_facts` looks at the versions of
//! the first merge point it reached (the loop head):
//! `ResidualFunction::invariant_divisors` picks the label parameters that every back
//! edge passes back unchanged (directly or through parameters that only ever receive
//! them) and that an integer division or remainder divides by, in the function as
//! recorded (simplification may jump over a head that only forwards its parameters to
//! the next merge point; factorial then lost its promotion, 7.6 ns per turn instead of
//! 4.2), through `Version::perm` for a version that shares another merge point's label.
//! If there are any, the entry state is built a second time in execute mode from those
//! inputs, which reads the current values (TLC's `M`, an element of the operand stack),
//! and `Compilation::version_entry` versions the code just recorded: at the place where
//! the extension started (`Compilation::mark_entry`, after the entry's loads) it puts a
//! guard per value, the general entry state as each guard's false side, compiled when
//! first taken (a lazily compiled side, so a loop always entered with the same divisor
//! compiles once more, not twice), and behind the guards every use of the value in the
//! recorded code becomes the constant. Simplification then carries the constant into
//! the loop (`ResidualFunction::propagate`: a parameter that every edge gives one
//! value, itself aside, becomes that value; operations on constants and branches on
//! them fold), and Cranelift turns the division into a multiplication. The guard makes
//! it sound whatever the analysis picked. Measured on TLC (`tlc FILE 90000000`):
//! factorial 697 -> 440 ms, fibonacci 623 -> 385 ms. The same pass also makes one value
//! of *copies*: pairs of head parameters that every back edge gives the same value
//! (`ResidualFunction::copied_params`), as when a loop is entered where the
//! interpreter's stack held a picked copy, which the entry loads apart. Behind a guard
//! that they are equal (made only where they are equal now), the recorded code uses one
//! value for both, and simplification makes the loop's two parameters one (`propagate`
//! merges the parameters of a block that every edge gives equal values) (`EntryFacts`
//! carries both kinds). TLC f1 compiled at such a key: 1.5 ms per call of f1(2117)
//! instead of 2.2. `jit::specialize` compiles without inputs, so without entry
//! promotion. Architecture Invariant: a value the compiler read from the interpreter's
//! state is a constant of residual code only behind a guard that compares it at run
//! time.
//!
//! *Jump threading* (`ResidualFunction::simplify`). A block that only branches on one of
//! its parameters, reached by a jump that passes a constant there, is skipped by that
//! jump; with `x != false` folded to `x` when recorded, the joins that `&&` and `||`
//! leave (TLC's floor-division fix-up in every loop turn) disappear. Only when no code
//! outside that block uses its parameters directly (code it dominates may): they
//! would be undefined on the new path.
//!
//! Each case is entered by a tail call with its live values passed through the frame (a
//! store and a load per value).
//!
//! ## Execute mode
//!
//! **Execute mode** (the blackhole interpreter of DESIGN.md section 3).
//! `Compilation::executing(inputs, words, outputs)` runs the same generating extension
//! on known inputs: every red box is a constant, so red operations fold; loads,
//! stores, bounds checks and callbacks (`red_call`) happen at once instead of being
//! recorded; branches follow their constant conditions; merge points let every state
//! through; the first return is the result (`Compilation::execute`), and an error the
//! interpreter would raise comes back as the same `ResidualError`. So residual code
//! that hands over continues in the interpreter from the very state it stopped in,
//! with the interpreter's semantics by construction (one description of the
//! interpreter, the flow graphs, serves both). Tests: `jitgen-runtime/tests/exec.rs`,
//! `tests/promotion.rs`, `tests/lazy.rs`.
//!
//! Entry reads in place gave the most (0.25 ms); then one key lookup per merge, the
//! unscanned flexswitch on a constant, and dropping the first pass unsimplified (3-7%
//! each). Tried without a gain: restricting `invariant_divisors` to the blocks the head
//! reaches, and Cranelift's `enable_alias_analysis=false`. Later the same day,
//! versioning the recorded code at entry instead of compiling the entry again:
//! factorial 1.45 -> 1.33 ms, fibonacci 1.35 -> 1.22, f1 unchanged (about 1.19; it has
//! no entry facts, and pays for `propagate`). Cranelift's `opt_level=none` and
//! `regalloc_algorithm=single_pass` save 0.1-0.2 ms but made f1's loop 1.3x and 6x
//! slower. With the caches cold (256 MiB written between compilations) factorial took
//! 1.44-1.47 ms: the extension 0.6 ms and Cranelift 0.55-0.6 ms. That is the case the
//! harness measures (1.29-1.51 ms), and the one a program meets: its loop compiles
//! once, after running other code. The extension's code is large (TLC's `__run` is 2.4
//! MB of machine code: 482 frame variants; `Vec` clones, pushes and state drops at
//! every step; malloc and free were a fifth of a compiling thread's profile);
//! Cranelift's `unwind_info=false` saved nothing measurable. Counting merge points
//! showed where a third of factorial's went: TLC's `floor_mod` returned early with the
//! constant 0 for a divisor of -1, a forward join kept that constant, and the extension
//! compiled the rest of the loop for `f = 0` (58 of 165 merge points). With
//! `wrapping_rem` (and `wrapping_div` in `floor_div`) instead of the test for -1:
//! factorial 0.65 ms, fibonacci 0.68 ms steady state (extension 0.26 and 0.22 ms),
//! 1.24-1.26 ms with cold caches. A constant made on a rarely taken side of a branch
//! costs a copy of everything after it up to the next loop head; the interpreter's
//! author can avoid such branches, but the JIT does not see which side is rare.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::compile::redbox::RedBox;
use crate::compile::state::{Fact, Frame, JitState, StateKey};
use crate::ir::builder::{Label, ResidualBuilder, ResidualFunction, SymAddr, Val};
use crate::ir::ops::{ErrorKind, ValTy};
use crate::run::stats::Stats;

/// Limits of one compilation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Residual operations, past which the compilation is declined.
    pub max_ops: usize,
    /// Versions of one merge key before the fully general one.
    pub max_versions: usize,
    /// Steps of the generating extension (block transitions), past which
    /// the compilation is declined: green loops that never end emit nothing.
    pub max_steps: usize,
    /// Cases of one flexswitch; past them a promotion hands over to the
    /// interpreter.
    pub max_cases: usize,
    /// Cases compiled, in all, below one root compilation (its switches and
    /// theirs): past them every miss hands over to the interpreter.
    pub max_tree_cases: usize,
    /// Residual operations after which the other side of a red split is left
    /// to compile when first taken (a lazily compiled side).
    pub lazy_after_ops: usize,
}

impl Limits {
    /// The default limits.
    pub const DEFAULT: Limits = Limits {
        max_ops: 20_000,
        max_versions: 4,
        max_steps: 1_000_000,
        max_cases: 16,
        max_tree_cases: 1_000,
        lazy_after_ops: 2_000,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// What kind of join a merge point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The head of a loop: a new shape is widened against the most general
    /// version so far (constants that differ become run-time values), so that
    /// the loop closes after a turn or two.
    LoopHead,
    /// A loop head where every red becomes a run-time value at once.
    LoopHeadGeneral,
    /// A forward join (after an `if` or a `match`): a new shape gets its own
    /// version with its constants kept (up to `Limits::max_versions`), so that
    /// facts such as an enum's tag survive the join.
    Join,
}

/// Why a compilation gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Declined {
    /// More residual operations than [`Limits::max_ops`].
    Budget {
        /// Operations emitted when it gave up.
        ops: usize,
    },
    /// More steps than [`Limits::max_steps`].
    Steps,
    /// The generating extension met something it cannot compile yet.
    Unsupported(String),
}

/// What is worth knowing at a compilation's entry about the reds of its
/// entry state (indices into [`JitState::reds`] of that state, normalized),
/// found by compiling it generally ([`Compilation::entry_facts`]) and
/// used to version that code ([`Compilation::version_entry`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryFacts {
    /// Run-time values that the loop closed at the first merge point keeps
    /// unchanged and divides by (see
    /// [`ResidualFunction::invariant_divisors`]): made constants.
    pub divisors: Vec<usize>,
    /// Pairs of reds that the loop gives the same value on every back edge
    /// (see [`ResidualFunction::copied_params`]): made one value.
    pub copies: Vec<(usize, usize)>,
}

impl EntryFacts {
    /// Whether there is nothing to promote.
    pub fn is_empty(&self) -> bool {
        self.divisors.is_empty() && self.copies.is_empty()
    }
}

/// Counts of what one compilation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Red splits (conditional branches emitted).
    pub splits: usize,
    /// Merge points reached.
    pub merges: usize,
    /// Merge points that jumped to existing code.
    pub matches: usize,
    /// New, more general versions of a loop head already seen (widenings).
    pub widenings: usize,
    /// Red splits whose other side was left to compile when first taken.
    pub lazy_splits: usize,
    /// Flexswitches emitted (promotions and lazily compiled sides).
    pub flexswitches: usize,
    /// Merge points where virtual objects were forced to share code
    /// compiled for real ones.
    pub forced_at_merges: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    Const(ValTy, u64),
    Var(ValTy),
    /// The same run-time value as the red at this earlier position (a copy:
    /// one parameter serves both, so facts about one hold for the other).
    Same(usize),
}

impl Shape {
    fn covers(&self, r: &RedBox) -> bool {
        match (self, r) {
            (Shape::Var(t), r) => *t == r.ty(),
            (Shape::Const(t, c), RedBox::Const { ty, bits }) => t == ty && c == bits,
            _ => false,
        }
    }
}

/// Whether a version of this shape covers a state with these reds.
fn shape_covers(shape: &[Shape], reds: &[RedBox]) -> bool {
    shape.len() == reds.len()
        && shape.iter().zip(reds).all(|(s, r)| match s {
            Shape::Same(j) => reds[*j] == *r,
            s => s.covers(r),
        })
}

/// The exact shape of these reds: constants kept, copies of a run-time
/// value marked as such.
fn exact_shape(reds: &[RedBox]) -> Vec<Shape> {
    // The run-time values seen so far, with their first position.
    let mut seen: Vec<(Val, usize)> = Vec::with_capacity(reds.len());
    reds.iter()
        .enumerate()
        .map(|(i, r)| match r {
            RedBox::Const { ty, bits } => Shape::Const(*ty, *bits),
            RedBox::Var { ty, val } => match seen.iter().find(|(v, _)| v == val) {
                Some(&(_, j)) => Shape::Same(j),
                None => {
                    seen.push((*val, i));
                    Shape::Var(*ty)
                }
            },
        })
        .collect()
}

struct Version {
    label: Label,
    /// For a label made for an earlier version (see `Compilation::merge`):
    /// the position among its parameters of each value this version passes.
    perm: Option<Vec<u32>>,
    shape: Vec<Shape>,
    /// The fields this version knows (its label's last parameters are
    /// their run-time values).
    facts: Vec<FactDesc>,
}

/// Where a known field's root or index comes from at a merge point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FactRef {
    /// A red of the state (by position in [`JitState::core_reds`]).
    Core(usize),
    /// The value of an earlier known field.
    Fact(usize),
    /// A constant.
    Const(RedBox),
}

/// What a known field holds at a merge point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FactVal {
    Const(RedBox),
    /// The state's red at this position (the value, or its widening).
    Core(usize),
    /// A parameter of the merge point's label, of this type.
    Var(ValTy),
}

/// A known field ([`crate::compile::state::Fact`]) at a merge point, its values
/// named by where they are in the state.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FactDesc {
    root: FactRef,
    index: Option<(FactRef, u64)>,
    offset: i64,
    ty: ValTy,
    class: u32,
    field: i32,
    value: FactVal,
}

impl FactDesc {
    /// Whether this is the field `other` is, with `other`'s root and index
    /// named as `root` and `index` are.
    fn is_at(&self, root: FactRef, index: Option<(FactRef, u64)>, other: &FactDesc) -> bool {
        self.root == root
            && self.index == index
            && (self.offset, self.ty, self.class, self.field) == (other.offset, other.ty, other.class, other.field)
    }
}

/// The known fields of a state that a merge point can keep (those whose
/// root and index are reds of the state, constants or values of earlier
/// kept fields), with their values.
fn describe_facts(b: &ResidualBuilder, known: &[Fact], core: &[RedBox]) -> Vec<(FactDesc, RedBox)> {
    let mut out: Vec<(FactDesc, RedBox)> = vec![];
    for f in known {
        let refer = |r: &RedBox, out: &[(FactDesc, RedBox)]| -> Option<FactRef> {
            if r.is_const() {
                return Some(FactRef::Const(*r));
            }
            if let Some(j) = core.iter().position(|c| c == r) {
                return Some(FactRef::Core(j));
            }
            out.iter().position(|(_, v)| v == r).map(FactRef::Fact)
        };
        let Some(root) = refer(&f.at.root, &out) else { continue };
        let index = match f.at.index {
            None => None,
            Some((i, stride)) => match refer(&i, &out) {
                Some(r) => Some((r, stride)),
                None => continue,
            },
        };
        let value = if f.value.is_const() {
            FactVal::Const(f.value)
        } else if let Some(j) = core.iter().position(|c| *c == f.value || b.unwiden(c) == f.value) {
            FactVal::Core(j)
        } else {
            FactVal::Var(f.value.ty())
        };
        let desc = FactDesc { root, index, offset: f.at.offset, ty: f.ty, class: f.class, field: f.field, value };
        out.push((desc, f.value));
    }
    out
}

/// For each known field of a version, the state's known field it is
/// (same place, value covered), or `None` if the state lacks one.
fn match_facts(want: &[FactDesc], have: &[(FactDesc, RedBox)]) -> Option<Vec<usize>> {
    let mut map: Vec<usize> = Vec::with_capacity(want.len());
    for d in want {
        let remap = |r: FactRef| match r {
            FactRef::Fact(m) => FactRef::Fact(map[m]),
            other => other,
        };
        let (root, index) = (remap(d.root), d.index.map(|(i, s)| (remap(i), s)));
        let k = have.iter().position(|(e, v)| {
            e.is_at(root, index, d)
                && match d.value {
                    FactVal::Var(t) => v.ty() == t,
                    other => e.value == other,
                }
        })?;
        map.push(k);
    }
    Some(map)
}

/// The known fields of a widened version: those of `prev` that the state
/// also knows, their values run-time where the two differ.
fn widen_facts(prev: &[FactDesc], have: &[(FactDesc, RedBox)]) -> Vec<FactDesc> {
    let mut out: Vec<FactDesc> = vec![];
    // The state's fact for each of `prev`'s, and the kept fact for each of the state's.
    let mut in_have: Vec<Option<usize>> = vec![];
    let mut in_out: Vec<Option<usize>> = vec![None; have.len()];
    for d in prev {
        let to_have = |r: FactRef| match r {
            FactRef::Fact(m) => in_have[m].map(FactRef::Fact),
            other => Some(other),
        };
        let index = match d.index {
            None => Some(None),
            Some((i, s)) => to_have(i).map(|r| Some((r, s))),
        };
        let k = match (to_have(d.root), index) {
            (Some(root), Some(index)) => have.iter().position(|(e, _)| e.is_at(root, index, d)),
            _ => None,
        };
        in_have.push(k);
        let Some(k) = k else { continue };
        let (e, v) = &have[k];
        let to_out = |r: FactRef| match r {
            FactRef::Fact(j) => FactRef::Fact(in_out[j].expect("a root kept before")),
            other => other,
        };
        let value = if e.value == d.value { d.value } else { FactVal::Var(v.ty()) };
        out.push(FactDesc { root: to_out(e.root), index: e.index.map(|(i, s)| (to_out(i), s)), value, ..d.clone() });
        in_out[k] = Some(out.len() - 1);
    }
    out
}

/// The known fields of a version, made of the label's reds (`core`) and
/// parameters.
fn rebuild_facts(descs: &[FactDesc], core: &[RedBox], params: &mut impl Iterator<Item = Val>) -> Vec<Fact> {
    let mut out: Vec<Fact> = vec![];
    for d in descs {
        let get = |r: FactRef, out: &[Fact]| match r {
            FactRef::Core(j) => core[j],
            FactRef::Fact(m) => out[m].value,
            FactRef::Const(c) => c,
        };
        let root = get(d.root, &out);
        let index = d.index.map(|(i, s)| (get(i, &out), s));
        let value = match d.value {
            FactVal::Const(c) => c,
            FactVal::Core(j) => core[j],
            FactVal::Var(ty) => RedBox::Var { ty, val: params.next().expect("one parameter per run-time field") },
        };
        out.push(Fact {
            at: SymAddr { root, index, offset: d.offset },
            ty: d.ty,
            class: d.class,
            field: d.field,
            value,
        });
    }
    out
}

/// What a generating extension provides so that its states can be resumed
/// after the compilation that made them: by the compiler (a flexswitch case)
/// and by the interpreter (execute mode).
pub struct ResumeFns<F: Frame> {
    /// Runs the extension from a state (its `__run`).
    pub run: fn(&mut Compilation<F>, JitState<F>),
    /// Hands a promoted value to the innermost frame of a state.
    pub deliver: fn(&mut JitState<F>, u64),
    /// Ends the current path with a lazily compiled continuation of a state
    /// (see [`Compilation::set_defer`]).
    pub defer: fn(&mut Compilation<F>, JitState<F>),
}

impl<F: Frame> Clone for ResumeFns<F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F: Frame> Copy for ResumeFns<F> {}

/// What the compilations below one root compilation share.
struct Tree {
    name: String,
    stats: Option<&'static Stats>,
    /// Cases that may still be compiled below the root.
    cases_left: Cell<usize>,
    /// The code compiled for each state a case resumed (its key and the
    /// layout of its reds): a state met again reuses it, so a loop cut by
    /// the budget closes through tail calls instead of compiling anew.
    /// (A `CaseCache<G>`, typed by the extension's frame.)
    cases: RefCell<Option<Box<dyn std::any::Any>>>,
    /// The pieces compiled so far: listing and code. The root function owns
    /// the tree (so the pieces); switches refer to it weakly, and to pieces
    /// by entry address, so that pieces can jump to each other in loops.
    pieces: RefCell<Vec<(String, crate::backend::cranelift::NativeCode)>>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tree({}, {} pieces)", self.name, self.pieces.borrow().len())
    }
}

impl crate::run::promotion::Pieces for Tree {
    fn describe(&self, out: &mut String) {
        for (listing, code) in self.pieces.borrow().iter() {
            out.push_str(listing);
            for (i, t) in code.switches().iter().enumerate() {
                out.push_str(&format!("switch #{i}:\n"));
                t.describe(out, 1);
            }
        }
    }
}

/// How a red of a resumed state is laid out: a constant, or an input.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Layout {
    Const(ValTy, u64),
    Input(usize, ValTy),
}

/// Resumed states (key, layout of reds) to the entry and name of their piece.
/// The promoted value is part of the key: a frame's key does not show the
/// value handed to it.
type CaseCache<G> = HashMap<(StateKey<<G as Frame>::Key>, FactsKey, Vec<Layout>, Option<u64>), (usize, String)>;
type FactsKey = Vec<(u32, i32, ValTy, Option<u64>, i64)>;

fn layout(reds: &[RedBox], inputs: &[RedBox]) -> Vec<Layout> {
    reds.iter()
        .map(|r| match r {
            RedBox::Const { ty, bits } => Layout::Const(*ty, *bits),
            RedBox::Var { ty, .. } => Layout::Input(inputs.iter().position(|i| i == r).unwrap_or(usize::MAX), *ty),
        })
        .collect()
}

/// How a red of a snapshot is rebuilt in a case: kept (a constant), an input
/// of the case, or the promoted value.
#[derive(Clone, Copy)]
enum Slot {
    Keep(RedBox),
    Input(usize),
    Promoted(ValTy),
}

fn rebuild(slots: &[Slot], inputs: &[RedBox], promoted: u64) -> Vec<RedBox> {
    slots
        .iter()
        .map(|s| match s {
            Slot::Keep(r) => *r,
            Slot::Input(i) => inputs[*i],
            Slot::Promoted(ty) => RedBox::constant(*ty, ty.canon(promoted)),
        })
        .collect()
}

/// One compilation of a generating extension, generic over its frame type.
pub struct Compilation<F: Frame> {
    /// The residual code being recorded.
    pub b: ResidualBuilder,
    outputs: Vec<ValTy>,
    tree: Rc<Tree>,
    defer: Option<fn(&mut Compilation<F>, JitState<F>)>,
    pending: VecDeque<(Label, JitState<F>)>,
    versions: rustc_hash::FxHashMap<StateKey<F::Key>, Vec<Version>>,
    limits: Limits,
    declined: Option<Declined>,
    stats: CompileStats,
    steps: usize,
    /// In execute mode: the input words, and the returned words once known.
    exec_inputs: Option<Vec<u64>>,
    exec_result: Option<Vec<u64>>,
    /// In execute mode: whether to stop at the portal's merge point, and
    /// the state stopped there.
    park_ok: bool,
    parked: Option<Box<dyn std::any::Any>>,
    /// The key of the first merge point reached (see
    /// [`Compilation::entry_facts`]).
    entry_key: Option<StateKey<F::Key>>,
    /// Where the extension started ([`Compilation::mark_entry`]).
    entry_mark: Option<(Label, usize)>,
}

impl<F: Frame> Compilation<F> {
    /// Starts compiling a residual function with these input and output types.
    pub fn new(name: &str, inputs: &[ValTy], outputs: &[ValTy], limits: Limits) -> Compilation<F> {
        Compilation {
            b: ResidualBuilder::new(name, inputs, outputs),
            outputs: outputs.to_vec(),
            tree: Rc::new(Tree {
                name: name.to_string(),
                stats: None,
                cases_left: Cell::new(limits.max_tree_cases),
                cases: RefCell::new(None),
                pieces: RefCell::new(vec![]),
            }),
            defer: None,
            pending: VecDeque::new(),
            versions: rustc_hash::FxHashMap::default(),
            limits,
            declined: None,
            stats: CompileStats::default(),
            steps: 0,
            exec_inputs: None,
            exec_result: None,
            park_ok: false,
            parked: None,
            entry_key: None,
            entry_mark: None,
        }
    }

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

    /// Red boxes for the inputs (constants in execute mode).
    pub fn inputs(&self) -> Vec<RedBox> {
        match &self.exec_inputs {
            Some(w) => self.b.inputs().iter().zip(w).map(|(v, w)| RedBox::constant(self.b.ty(*v), *w)).collect(),
            None => self.b.inputs().iter().map(|v| RedBox::Var { ty: self.b.ty(*v), val: *v }).collect(),
        }
    }

    /// What the compilation did so far.
    pub fn stats(&self) -> CompileStats {
        self.stats
    }

    /// Sets where the compilation's flexswitches count their cases and
    /// compilations, and how a path is deferred: when this is set, the other
    /// side of a red split is compiled lazily past
    /// [`Limits::lazy_after_ops`], and past [`Limits::max_ops`] every path
    /// still to compile is deferred at its next merge point instead of the
    /// compilation being declined (a hard limit of twice the budget, or of the budget and 1000, remains).
    pub fn set_defer(&mut self, stats: Option<&'static Stats>, defer: fn(&mut Compilation<F>, JitState<F>)) {
        Rc::get_mut(&mut self.tree).expect("set before any switch").stats = stats;
        self.defer = Some(defer);
    }

    /// Whether the budget is spent and paths should be deferred.
    fn deferring(&self) -> Option<fn(&mut Compilation<F>, JitState<F>)> {
        self.defer.filter(|_| self.b.op_count() > self.limits.max_ops)
    }

    fn over_budget(&mut self) -> bool {
        // With deferral, a path goes on to its next merge point past the
        // budget: the hard limit leaves room for that.
        let m = self.limits.max_ops;
        let max = if self.defer.is_some() { m.saturating_mul(2).max(m.saturating_add(1000)) } else { m };
        if self.declined.is_none() && self.b.op_count() > max {
            self.declined = Some(Declined::Budget { ops: self.b.op_count() });
        }
        self.declined.is_some()
    }

    /// A branch on `cond`. A constant condition folds: its side is returned and
    /// nothing is emitted. Otherwise a conditional branch is emitted, the state
    /// of the false side (made by `on_false`) is queued, and the extension
    /// continues on the true side (`true` is returned).
    pub fn split(&mut self, cond: &RedBox, on_false: &mut dyn FnMut() -> JitState<F>) -> bool {
        if let Some(c) = cond.as_const() {
            return c != 0;
        }
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                "a branch on a run-time value".into(),
            ));
        }
        let lazy = self.b.op_count() >= self.limits.lazy_after_ops.min(self.limits.max_ops);
        self.branch_off(cond, lazy, on_false());
        true
    }

    /// Emits a branch on `cond` (a run-time bool) and continues on its true
    /// side; the false side's state is queued, or (when `lazy` and the
    /// extension can defer) compiled when first taken.
    fn branch_off(&mut self, cond: &RedBox, lazy: bool, on_false: JitState<F>) {
        self.stats.splits += 1;
        let c = self.b.materialize(cond);
        let (t, _) = self.b.new_label(&[]);
        let (f, _) = self.b.new_label(&[]);
        self.b.branch(c, (t, &[]), (f, &[]));
        match self.defer {
            Some(defer) if lazy => {
                self.stats.lazy_splits += 1;
                self.b.switch_to(f);
                defer(self, on_false);
            }
            _ => self.pending.push_back((f, on_false)),
        }
        self.b.switch_to(t);
    }

    /// Ends the current path with a flexswitch on `value` (or, with no
    /// value, a single-case switch: a lazily compiled continuation) whose
    /// cases resume `st`, a state of the generating extension `fns` runs.
    ///
    /// The live values passed to the cases are the state's run-time reds;
    /// a case compiles `st` with them as inputs and the promoted value as a
    /// constant (delivered to the innermost frame, and replacing the reds
    /// that held it). When the switch is full or the case declined, residual
    /// code continues in the interpreter: the same extension in execute mode
    /// from `st`, with the values residual code held.
    ///
    /// Memory: the table keeps `st` (its frames: a few words per live
    /// variable), the case code (about a page each) and the case listings.
    pub fn flexswitch<G: Frame + 'static>(&mut self, st: JitState<G>, value: Option<&RedBox>, fns: ResumeFns<G>) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                "a flexswitch in execute mode".into(),
            ));
        }
        let mut st = st;
        st.sync_facts(&self.b);
        st.normalize();
        // The promoted value, and the narrower values it widens: each is
        // known in a case (a field loaded as `u32`, promoted as `usize`).
        let mut promoted: Vec<Val> = vec![];
        if let Some(RedBox::Var { val, .. }) = value {
            promoted.push(*val);
            while let Some(n) = self.b.widened_from(*promoted.last().expect("pushed")) {
                promoted.push(n);
            }
        }
        let mut live: Vec<Val> = vec![];
        let mut slots = vec![];
        for r in st.reds() {
            slots.push(match r {
                RedBox::Var { ty, val } if promoted.contains(&val) => Slot::Promoted(ty),
                RedBox::Var { val, .. } => match live.iter().position(|v| *v == val) {
                    Some(i) => Slot::Input(i),
                    None => {
                        live.push(val);
                        Slot::Input(live.len() - 1)
                    }
                },
                c => Slot::Keep(c),
            });
        }
        let live_tys: Vec<ValTy> = live.iter().map(|v| self.b.ty(*v)).collect();
        let max_cases = if value.is_some() { self.limits.max_cases } else { self.limits.max_cases.min(1) };
        let promoting = value.is_some();
        let snapshot = Rc::new((st, slots));
        let tree = self.tree.clone();
        if let Some(s) = tree.stats {
            s.flexswitch_made();
        }
        let (limits, outputs) = (self.limits, self.outputs.clone());
        let compile = {
            let (snapshot, weak, live_tys, outputs) =
                (snapshot.clone(), Rc::downgrade(&tree), live_tys.clone(), outputs.clone());
            Box::new(move |w: u64| -> Option<crate::run::promotion::Case> {
                let tree = weak.upgrade()?;
                let name = format!("{}_piece{}", tree.name, tree.pieces.borrow().len() + 1);
                let mut c: Compilation<G> = Compilation::new(&name, &live_tys, &outputs, limits);
                c.tree = tree.clone();
                c.defer = Some(fns.defer);
                let mut st = snapshot.0.clone();
                let inputs = c.inputs();
                let reds = rebuild(&snapshot.1, &inputs, w);
                st.set_reds(&reds);
                if promoting {
                    (fns.deliver)(&mut st, w);
                }
                st.epoch = c.b.calls;
                let key = (st.key(), st.facts_key(), layout(&reds, &inputs), promoting.then_some(w));
                {
                    let mut cache = tree.cases.borrow_mut();
                    let cache = cache.get_or_insert_with(|| Box::new(CaseCache::<G>::new()));
                    if let Some((entry, name)) = cache.downcast_ref::<CaseCache<G>>().and_then(|m| m.get(&key)) {
                        return Some(crate::run::promotion::Case::Shared(*entry as *const u8, name.clone()));
                    }
                }
                if tree.cases_left.get() == 0 {
                    return None;
                }
                tree.cases_left.set(tree.cases_left.get() - 1);
                let t0 = std::time::Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    (fns.run)(&mut c, st);
                    c.finish()
                }));
                let r = match r {
                    Ok(Ok(f)) => {
                        crate::run::residual::compile_native(&f).map(|c| (c, f.op_count())).map_err(|e| e.to_string())
                    }
                    Ok(Err(d)) => Err(format!("{d:?}")),
                    Err(_) => Err("the generating extension panicked".to_string()),
                };
                if let Some(s) = tree.stats {
                    s.compiled(r.as_ref().ok().map(|(_, n)| *n), t0.elapsed().as_nanos() as u64);
                    if let Err(why) = &r {
                        s.declined_because(&format!("{name}: {why}"));
                    }
                }
                let ((code, listing), _) = r.ok()?;
                let entry = code.tail_entry() as usize;
                if let Some(m) = tree.cases.borrow_mut().as_mut().and_then(|b| b.downcast_mut::<CaseCache<G>>()) {
                    m.insert(key, (entry, name.clone()));
                }
                tree.pieces.borrow_mut().push((format!("{name}:\n{listing}"), code));
                Some(crate::run::promotion::Case::Shared(entry as *const u8, name))
            })
        };
        let resume: crate::run::promotion::Resumer = {
            let (name, stats) = (tree.name.clone(), tree.stats);
            Rc::new(move |words: &[u64], w: u64| {
                if let Some(s) = stats {
                    s.resumed();
                }
                let mut c: Compilation<G> = Compilation::executing(&name, &live_tys, words, &outputs);
                c.park_ok = crate::run::residual::take_parking();
                c.execute(|c| {
                    let mut st = snapshot.0.clone();
                    st.set_reds(&rebuild(&snapshot.1, &c.inputs(), w));
                    if promoting {
                        (fns.deliver)(&mut st, w);
                    }
                    (fns.run)(c, st)
                })
            })
        };
        let table = crate::run::promotion::FlexTable::resumable(max_cases, compile, Some(resume), tree.stats);
        let v = match value {
            Some(r) => self.b.materialize(r),
            None => self.b.konst(ValTy::I64, 0),
        };
        self.stats.flexswitches += 1;
        self.b.flexswitch(v, &live, table);
    }

    /// A merge point: returns the state to continue with (its red boxes now
    /// the label's parameters and the constants kept), or `None` when the path
    /// jumped to existing code or the compilation is over budget.
    pub fn merge(&mut self, mut st: JitState<F>, kind: MergeKind) -> Option<JitState<F>> {
        if self.b.exec {
            return Some(st);
        }
        if let Some(defer) = self.deferring() {
            if !self.over_budget() {
                if let Some(f) = st.frames.last_mut() {
                    f.unmerge();
                }
                defer(self, st);
                return None;
            }
        }
        if self.over_budget() {
            if self.b.is_open() {
                self.b.error_exit(ErrorKind::Abort(u32::MAX));
            }
            return None;
        }
        self.stats.merges += 1;
        st.sync_facts(&self.b);
        st.normalize();
        let mut key = st.key();
        if !st.heap.objects.is_empty() && !self.versions.contains_key(&key) {
            // Code already exists for this state with its objects real: the
            // virtual objects are forced here, at the merge, and share it.
            if self.versions.contains_key(&st.forced_key()) {
                self.stats.forced_at_merges += 1;
                st.force_all(&mut self.b);
                key = st.key();
            }
        }
        let reds = st.core_reds();
        let facts = describe_facts(&self.b, &st.known, &reds);
        if self.entry_key.is_none() {
            self.entry_key = Some(key.clone());
        }
        // One lookup: the versions are borrowed until the new one is pushed
        // (keys are long; hashing and comparing them again showed up).
        let versions = self.versions.entry(key).or_default();
        // The first version of a merge point is often made on a path that
        // knows fewer fields than later ones (a loop entered in mid-turn, by
        // a flexswitch's case): one more, exact version keeps what they know.
        let one_more = versions.len() == 1;
        let found = versions.iter().find_map(|v| {
            if !shape_covers(&v.shape, &reds) || one_more && v.facts.len() < facts.len() {
                return None;
            }
            match_facts(&v.facts, &facts).map(|m| (v, m))
        });
        if let Some((v, map)) = found {
            let label = v.label;
            let mut passed: Vec<RedBox> =
                v.shape.iter().zip(&reds).filter(|(s, _)| matches!(s, Shape::Var(_))).map(|(_, r)| *r).collect();
            for (d, &k) in v.facts.iter().zip(&map) {
                if let FactVal::Var(_) = d.value {
                    passed.push(facts[k].1);
                }
            }
            let args: Vec<_> = passed.iter().map(|r| self.b.materialize(r)).collect();
            match &v.perm {
                None => self.b.jump(label, &args),
                Some(perm) => {
                    let args = self.b.args_at(label, perm, &args);
                    self.b.jump(label, &args);
                }
            }
            self.stats.matches += 1;
            return None;
        }
        let general = kind == MergeKind::LoopHeadGeneral || versions.len() >= self.limits.max_versions;
        let last_widening = versions.len() + 1 >= self.limits.max_versions;
        let exact = || exact_shape(&reds);
        let all_facts = || facts.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        let (shape, fact_descs): (Vec<Shape>, Vec<FactDesc>) = match (general, kind, versions.last()) {
            // The most general version knows no field: it covers every state.
            (true, _, _) => (reds.iter().map(|r| Shape::Var(r.ty())).collect(), vec![]),
            // The last version before it keeps only what every version so
            // far and this state agree on: a constant that never varied (an
            // enum's tag, most often) stays one. Making it a run-time value
            // too would compile every case of the code that tests it, which
            // nothing has reached; if something does, it gets the most
            // general version.
            (false, _, Some(_)) if last_widening => {
                self.stats.widenings += 1;
                let shape = exact()
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| match s {
                        Shape::Var(_) => s,
                        _ if versions.iter().all(|v| v.shape.get(i) == Some(&s)) => s,
                        _ => Shape::Var(reds[i].ty()),
                    })
                    .collect();
                (shape, vec![])
            }
            (false, MergeKind::Join, _) | (false, _, None) => (exact(), all_facts()),
            // The second shape of a loop head is kept exact too: the first
            // turn of a loop often differs from the steady state (a stack
            // slot written during the turn, a flag set once), and constants
            // that hold from the second turn on then survive. A third shape
            // widens.
            (false, _, Some(_)) if versions.len() == 1 => (exact(), all_facts()),
            (false, _, Some(prev)) => {
                self.stats.widenings += 1;
                let shape = prev
                    .shape
                    .iter()
                    .zip(&reds)
                    .map(|(s, r)| match s {
                        Shape::Same(j) if reds[*j] == *r => s.clone(),
                        Shape::Const(..) if s.covers(r) => s.clone(),
                        _ => Shape::Var(r.ty()),
                    })
                    .collect();
                (shape, widen_facts(&prev.facts, &facts))
            }
        };
        // (A new version's facts are the state's, so they match.)
        let (fact_descs, map) = match match_facts(&fact_descs, &facts) {
            Some(map) => (fact_descs, map),
            None => (vec![], vec![]),
        };
        let mut var_tys: Vec<ValTy> = shape
            .iter()
            .filter_map(|s| match s {
                Shape::Var(t) => Some(*t),
                Shape::Const(..) | Shape::Same(_) => None,
            })
            .collect();
        var_tys.extend(fact_descs.iter().filter_map(|d| match d.value {
            FactVal::Var(t) => Some(t),
            _ => None,
        }));
        let mut passed: Vec<RedBox> =
            shape.iter().zip(&reds).filter(|(s, _)| matches!(s, Shape::Var(_))).map(|(_, r)| *r).collect();
        for (d, &k) in fact_descs.iter().zip(&map) {
            if let FactVal::Var(_) = d.value {
                passed.push(facts[k].1);
            }
        }
        let args: Vec<_> = passed.iter().map(|r| self.b.materialize(r)).collect();
        // A block that has recorded nothing since it began, and whose
        // parameters hold every value passed, serves as this version's
        // label too: no block that only forwards its parameters is made
        // (most merge points of an interpreter's loop record nothing in
        // between: TLC's PICK, PUSH and POP).
        let (label, params, perm) = match self.b.forwarding_params(&args, &var_tys) {
            Some((label, perm)) => (label, args, Some(perm)),
            None => {
                let (label, params) = self.b.new_label(&var_tys);
                self.b.jump(label, &args);
                self.b.switch_to(label);
                (label, params, None)
            }
        };
        let mut params = params.into_iter();
        let mut new_reds: Vec<RedBox> = Vec::with_capacity(shape.len());
        for s in &shape {
            let r = match s {
                Shape::Const(ty, bits) => RedBox::Const { ty: *ty, bits: *bits },
                Shape::Var(ty) => RedBox::Var { ty: *ty, val: params.next().expect("one parameter per run-time red") },
                Shape::Same(j) => new_reds[*j],
            };
            new_reds.push(r);
        }
        st.known = rebuild_facts(&fact_descs, &new_reds, &mut params);
        for f in &st.known {
            f.reds_into(&mut new_reds);
        }
        st.epoch = self.b.calls;
        versions.push(Version { label, perm, shape, facts: fact_descs });
        st.set_reds(&new_reds);
        Some(st)
    }

    /// Gives up: the compilation will be declined with this reason (the
    /// current path ends; the extension should stop).
    pub fn decline(&mut self, reason: impl Into<String>) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(reason.into()));
        }
        if self.declined.is_none() {
            self.declined = Some(Declined::Unsupported(reason.into()));
        }
        if self.b.is_open() {
            self.b.error_exit(ErrorKind::Abort(u32::MAX));
        }
        self.pending.clear();
    }

    /// Counts one step of the generating extension; false when the
    /// compilation must stop (declined, or out of steps).
    pub fn step(&mut self) -> bool {
        if self.b.exec {
            // An interpreter runs as long as the program does.
            return self.exec_result.is_none() && self.parked.is_none();
        }
        self.steps += 1;
        if self.steps > self.limits.max_steps && self.declined.is_none() {
            self.declined = Some(Declined::Steps);
        }
        !self.over_budget()
    }

    /// Continues only where `ok` holds; elsewhere leaves residual code through
    /// `kind`. Returns false when `ok` is the constant false: the path ends.
    pub fn guard(&mut self, ok: &RedBox, kind: ErrorKind) -> bool {
        match ok.as_const() {
            Some(0) => {
                self.error_exit(kind);
                false
            }
            Some(_) => true,
            None => {
                let c = self.b.materialize(ok);
                let (good, _) = self.b.new_label(&[]);
                let (bad, _) = self.b.new_label(&[]);
                self.b.branch(c, (good, &[]), (bad, &[]));
                self.b.switch_to(bad);
                self.b.error_exit(kind);
                self.b.switch_to(good);
                true
            }
        }
    }

    /// Whether the compilation was declined.
    pub fn is_declined(&mut self) -> bool {
        self.over_budget()
    }

    /// Ends the path by returning these values.
    pub fn finish_return(&mut self, vals: &[RedBox]) {
        if self.b.exec {
            self.exec_result = Some(vals.iter().map(|r| r.as_const().unwrap_or(0)).collect());
            return;
        }
        let v: Vec<_> = vals.iter().map(|r| self.b.materialize(r)).collect();
        self.b.ret(&v);
    }

    /// Ends the path with an error exit (a `panic!` reached in residual code).
    pub fn error_exit(&mut self, kind: ErrorKind) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Error(kind, None));
        }
        self.b.error_exit(kind);
    }

    /// The next queued state, its residual block now current; `None` when
    /// every path is done (or the compilation was declined).
    pub fn next_pending(&mut self) -> Option<JitState<F>> {
        if self.b.exec || self.over_budget() {
            return None;
        }
        if let Some(defer) = self.deferring() {
            // Past the budget: what is left compiles when first reached.
            while let Some((label, st)) = self.pending.pop_front() {
                self.b.switch_to(label);
                defer(self, st);
            }
            return None;
        }
        let (label, st) = self.pending.pop_front()?;
        self.b.switch_to(label);
        Some(st)
    }

    /// What is worth knowing at entry about the reds of the state the
    /// compilation started from (indices into [`JitState::reds`] of that
    /// state, normalized): see [`EntryFacts`]. Called once the extension is
    /// done, before [`Compilation::version_entry`] and
    /// [`Compilation::finish`] (it reads the function as recorded).
    pub fn entry_facts(&mut self) -> EntryFacts {
        // The versions of that merge point: the loop may close on a later,
        // more general one than the entry's (its first turns specialized).
        // (Each version's label, and for each of the label's parameters the
        // red it holds, if any.)
        let heads: Vec<(Label, Vec<Option<usize>>)> = match self.entry_key.take().and_then(|k| self.versions.remove(&k))
        {
            Some(vs) => vs
                .into_iter()
                .map(|v| {
                    let vars = v.shape.iter().enumerate().filter(|(_, s)| matches!(s, Shape::Var(_)));
                    let vars: Vec<usize> = vars.map(|(i, _)| i).collect();
                    let held = match &v.perm {
                        None => vars.into_iter().map(Some).collect(),
                        Some(perm) => {
                            let n = self.b.function().blocks[v.label].params.len();
                            let mut held = vec![None; n];
                            for (&p, r) in perm.iter().zip(vars) {
                                held[p as usize] = Some(r);
                            }
                            held
                        }
                    };
                    (v.label, held)
                })
                .collect(),
            None => vec![],
        };
        // Found before simplification, which may jump over a head (one that
        // only forwards its parameters to the next merge point).
        let unsimplified = self.b.function();
        let mut slots: Vec<usize> = heads
            .iter()
            .flat_map(|(label, vars)| {
                unsimplified.invariant_divisors(*label).into_iter().filter_map(|k| vars.get(k).copied().flatten())
            })
            .collect();
        slots.sort_unstable();
        slots.dedup();
        // Copies only where the loop closes at the entry's own version: a
        // later version that keeps them one already has one parameter.
        let mut copies: Vec<(usize, usize)> = match heads.first() {
            Some((label, vars)) => unsimplified
                .copied_params(*label)
                .into_iter()
                .filter_map(|(a, b)| Some(((*vars.get(a)?)?, (*vars.get(b)?)?)))
                .collect(),
            None => vec![],
        };
        copies.sort_unstable();
        EntryFacts { divisors: slots, copies }
    }

    /// Marks where the generating extension starts: after the code that
    /// builds the entry state (loads of the interpreter's state), before the
    /// first merge point. [`Compilation::version_entry`] puts its guards
    /// there.
    pub fn mark_entry(&mut self) {
        self.entry_mark = self.b.mark();
    }

    /// Entry promotion, on the residual code already recorded: guards, at
    /// the mark ([`Compilation::mark_entry`]), that the reds at the divisor
    /// slots of `facts` in the entry state `entry` hold the values at the
    /// same slots of `now` (the reds of the same entry built in execute mode
    /// from the interpreter's state when the compilation started,
    /// normalized), and that the pairs of its copies hold one value (where
    /// they do in `now`); behind the guards, the code recorded from `entry`
    /// uses the constants and one value of each pair, and simplification
    /// ([`ResidualFunction::propagate`]) carries them into the loop. Where a
    /// guard fails, the general state continues, compiled when first taken.
    /// The facts are those [`Compilation::entry_facts`] found in the same
    /// code. Returns whether a guard was made.
    ///
    /// Compiling the entry a second time with the constants made TLC
    /// factorial's compilation run the generating extension twice (820 steps,
    /// then 505).
    pub fn version_entry(&mut self, entry: JitState<F>, facts: &EntryFacts, now: &[RedBox]) -> bool {
        let Some((at_label, at)) = self.entry_mark.take() else { return false };
        if self.over_budget() || self.b.is_open() {
            return false;
        }
        let before = self.b.function().blocks.next_key();
        let rest = self.b.split_block(at_label, at);
        let mut st = entry;
        st.forget_fields();
        st.normalize();
        let mut reds = st.reds();
        // Each use of a value of the first kind becomes one of the second
        // (the value kept for a pair may then become a constant).
        let mut subst: Vec<(Val, Val)> = vec![];
        for &(a, b) in &facts.copies {
            // One value behind a guard that they are equal, if they are now.
            let (Some(ra @ RedBox::Var { ty, val: va }), Some(rb @ RedBox::Var { val: vb, .. })) =
                (reds.get(a).copied(), reds.get(b).copied())
            else {
                continue;
            };
            let (Some(x), Some(y)) = (now.get(a).and_then(|v| v.as_const()), now.get(b).and_then(|v| v.as_const()))
            else {
                continue;
            };
            if x != y || ra == rb || ra.ty() != rb.ty() {
                continue;
            }
            let general = st.clone();
            let same = self.b.cmp(crate::ir::ops::CmpOp::Eq, ty, va, vb);
            self.branch_off(&RedBox::Var { ty: ValTy::Bool, val: same }, true, general);
            subst.push((vb, va));
            reds[b] = ra;
            st.set_reds(&reds);
        }
        for &k in &facts.divisors {
            let (Some(RedBox::Var { ty, val }), Some(bits)) =
                (reds.get(k).copied(), now.get(k).and_then(|v| v.as_const()))
            else {
                continue;
            };
            let general = st.clone();
            let c = self.b.konst(ty, bits);
            let same = self.b.cmp(crate::ir::ops::CmpOp::Eq, ty, val, c);
            self.branch_off(&RedBox::Var { ty: ValTy::Bool, val: same }, true, general);
            subst.push((val, c));
            reds[k] = RedBox::Const { ty, bits };
            st.set_reds(&reds);
        }
        self.b.jump(rest, &[]);
        // The code recorded from the entry state: the blocks that were there
        // (but the entry's own start) and the rest of the entry block.
        let subst: rustc_hash::FxHashMap<Val, Val> = subst.into_iter().collect();
        self.b.substitute(|l| l == rest || l < before && l != at_label, &subst);
        !subst.is_empty()
    }

    /// The residual function, or why the compilation was declined.
    pub fn finish(mut self) -> Result<ResidualFunction, Declined> {
        if self.over_budget() {
            return Err(self.declined.take().expect("set by over_budget"));
        }
        let mut f = self.b.finish();
        if cfg!(debug_assertions) {
            // Residual code must be SSA; checked where it is cheap to.
            if let Err(e) = f.check_dominance() {
                let text = crate::ir::builder::listing(&f);
                return Err(Declined::Unsupported(format!("jitgen bug: residual code is not SSA: {e}\n{text}")));
            }
        }
        if !f.switches.is_empty() {
            f.pieces = Some(self.tree.clone());
        }
        Ok(f)
    }
}
