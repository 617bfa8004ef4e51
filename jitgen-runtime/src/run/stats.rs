//! Counters of one annotated module, shared by all its threads: compilations,
//! declines and why, residual operations, entries into residual code,
//! flexswitches and their cases, hand-overs. `jit::stats()` is a snapshot.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Counters of one annotated module (all threads).
#[derive(Default)]
pub struct Stats {
    compilations: AtomicU64,
    declined: AtomicU64,
    residual_ops: AtomicU64,
    entries: AtomicU64,
    compile_nanos: AtomicU64,
    flexswitches: AtomicU64,
    flexswitch_cases: AtomicU64,
    flexswitch_misses: AtomicU64,
    resumptions: AtomicU64,
    parked: AtomicU64,
    unhooked: AtomicU64,
    spills: AtomicU64,
    case_compilations: AtomicU64,
    case_ops: AtomicU64,
    case_nanos: AtomicU64,
    elsewhere_nanos: AtomicU64,
    submitted: AtomicU64,
    fused_elsewhere: AtomicU64,
    fusions: AtomicU64,
    fusion_nanos: AtomicU64,
    fused_ops: AtomicU64,
    fusions_postponed: AtomicU64,
    fusion_waits: AtomicU64,
    retired_slow: AtomicU64,
    turn_checks: AtomicU64,
    lazy_sides: AtomicU64,
    cases_put_off: AtomicU64,
    cases_forgetting: AtomicU64,
    recursion: AtomicBool,
    last_decline: Mutex<Option<String>>,
}

/// A snapshot of [`Stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Times the compiler ran (declined runs included).
    pub compilations: u64,
    /// Compilations that gave up (budget, unsupported construct, panic).
    pub declined: u64,
    /// Residual operations in the code compiled so far.
    pub residual_ops: u64,
    /// Times residual code was entered from the interpreter.
    pub entries: u64,
    /// Time spent compiling, in nanoseconds.
    pub compile_nanos: u64,
    /// Flexswitches emitted: promotions of run-time values, and sides of
    /// red splits left to compile when first taken.
    pub flexswitches: u64,
    /// Flexswitch cases compiled (each is also counted in `compilations`).
    pub flexswitch_cases: u64,
    /// Times residual code called back into the compiler (a value, or a
    /// lazily compiled side, seen for the first time).
    pub flexswitch_misses: u64,
    /// Times residual code handed over to the interpreter (a full switch,
    /// a declined case), which then continued from the state it left.
    pub resumptions: u64,
    /// Hand-overs after which the interpreter proper went on from the
    /// portal's merge point (or from the head of the loop whose body holds
    /// it), the rest of the call interpreted at plain speed. A resumption
    /// that does not park runs the rest of its call in execute mode.
    pub parked: u64,
    /// Portal calls that went on without their merge point's hook, having
    /// met only positions whose compilation was declined for a while (see
    /// `Sampler::gives_up`): the rest of such a call is interpreted at
    /// plain speed.
    pub unhooked: u64,
    /// Merge points where compiled code met a language-level recursion and
    /// spilled the interpreter's saved frames onto the continuation stack
    /// (compiled recursion, see `compile::spill`).
    pub spills: u64,
    /// Times compiled code was compiled again with the pieces its
    /// flexswitches reached fused in (see `ResidualFn::fuse_pieces`).
    pub fusions: u64,
    /// Time spent fusing, in nanoseconds (not in `compile_nanos`).
    pub fusion_nanos: u64,
    /// Residual operations compiled by fusions (not in `residual_ops`).
    pub fused_ops: u64,
    /// Of `residual_ops`, those of flexswitch cases.
    pub case_residual_ops: u64,
    /// Of `compile_nanos`, the time spent compiling flexswitch cases.
    pub case_compile_nanos: u64,
    /// Of `compile_nanos`, the time the compiler's thread spent compiling
    /// while the interpreter went on (`run::background`).
    pub background_compile_nanos: u64,
    /// Residual functions handed to the compiler's thread (each counted in
    /// `compilations` once its code is installed, or in `fusions`; one
    /// whose thread ended first never is).
    pub background_submissions: u64,
    /// Of `fusions`, those compiled on the compiler's thread while the
    /// pieces they fuse went on running.
    pub background_fusions: u64,
    /// Entries into compiled code that found a fusion due and postponed it
    /// (the code had not run long enough yet, or the compiler's thread was
    /// compiling the fusion). A run that adds to neither
    /// this, `fusions` nor `compilations` runs the code as it will stay.
    pub fusions_postponed: u64,
    /// Portal calls that reached code with a fusion due and interpreted
    /// instead of entering it: run unfused, it was slower than
    /// interpreting, and its fusion was being compiled on the compiler's
    /// thread (`portal::slow`, `Tally::unfused_slower`). Each is also one
    /// of `fusions_postponed` or `background_submissions`.
    pub fusion_waits: u64,
    /// Keys whose code was retired because calls entering it ran slower
    /// than interpreted calls of the same position, or its turns through
    /// its entry slower than the interpreter's (`portal::slow`).
    pub retired_slow: u64,
    /// Times compiled code left to the interpreter because its turn checks
    /// ran their count out (`portal::slow::TurnClock`).
    pub turn_checks: u64,
    /// The flexswitches among `flexswitches` that are paths left to compile
    /// when first taken (a side that leaves the interpreter's loop, a side
    /// past the lazy budget), not promotions.
    pub lazy_sides: u64,
    /// Flexswitch misses that got no case because the portal call had spent its
    /// budget for compiling cases (`run::case_budget`): each handed over,
    /// and the portal call interpreted to its end. A run that adds to none
    /// of this, `compilations` and `fusions` runs the code as it will stay.
    pub cases_put_off: u64,
    /// Flexswitch cases that resumed their state without the facts about
    /// memory its path knew of run-time values, because the same state had
    /// been resumed knowing other facts before (`compile::schedule::resume`'s
    /// `KNOWLEDGE_VARIANTS`): compiled so, or reusing such a case.
    pub cases_forgetting: u64,
}

impl Stats {
    /// No counts yet.
    pub const fn new() -> Stats {
        Stats {
            compilations: AtomicU64::new(0),
            declined: AtomicU64::new(0),
            residual_ops: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
            flexswitches: AtomicU64::new(0),
            flexswitch_cases: AtomicU64::new(0),
            flexswitch_misses: AtomicU64::new(0),
            resumptions: AtomicU64::new(0),
            parked: AtomicU64::new(0),
            unhooked: AtomicU64::new(0),
            spills: AtomicU64::new(0),
            case_compilations: AtomicU64::new(0),
            case_ops: AtomicU64::new(0),
            case_nanos: AtomicU64::new(0),
            elsewhere_nanos: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
            fused_elsewhere: AtomicU64::new(0),
            fusions: AtomicU64::new(0),
            fusion_nanos: AtomicU64::new(0),
            fused_ops: AtomicU64::new(0),
            fusions_postponed: AtomicU64::new(0),
            fusion_waits: AtomicU64::new(0),
            retired_slow: AtomicU64::new(0),
            turn_checks: AtomicU64::new(0),
            lazy_sides: AtomicU64::new(0),
            cases_put_off: AtomicU64::new(0),
            cases_forgetting: AtomicU64::new(0),
            recursion: AtomicBool::new(false),
            last_decline: Mutex::new(None),
        }
    }

    /// Records why a compilation was declined (and prints it when `JITGEN_LOG` is set).
    pub fn declined_because(&self, why: &str) {
        if std::env::var_os("JITGEN_LOG").is_some() {
            eprintln!("jitgen: compilation declined: {why}");
        }
        *self.last_decline.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_string());
    }

    /// Records that a compilation met a language-level recursion (which
    /// is not compiled yet): from then on, portals of this module do not
    /// compile code entered while the interpreter has saved frames, since
    /// such code mostly returns into a caller that recurses.
    pub fn saw_recursion(&self) {
        self.recursion.store(true, Ordering::Relaxed);
    }

    /// Whether [`Stats::saw_recursion`] was called.
    pub fn recursion_seen(&self) -> bool {
        self.recursion.load(Ordering::Relaxed)
    }

    /// Why the last declined compilation gave up.
    pub fn last_decline(&self) -> Option<String> {
        self.last_decline.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records one run of the compiler.
    pub fn compiled(&self, ops: Option<usize>, nanos: u64) {
        self.compilations.fetch_add(1, Ordering::Relaxed);
        self.compile_nanos.fetch_add(nanos, Ordering::Relaxed);
        match ops {
            Some(n) => {
                self.residual_ops.fetch_add(n as u64, Ordering::Relaxed);
            }
            None => {
                self.declined.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records a flexswitch emitted into residual code: a promotion, or a
    /// path left to compile when first taken (`lazy`).
    pub fn flexswitch_made(&self, lazy: bool) {
        self.flexswitches.fetch_add(1, Ordering::Relaxed);
        if lazy {
            self.lazy_sides.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a flexswitch miss refused by the call's budget for cases
    /// (`run::case_budget`).
    pub fn case_put_off(&self) {
        self.flexswitch_misses.fetch_add(1, Ordering::Relaxed);
        self.cases_put_off.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a flexswitch case that resumed its state with the facts its
    /// path knew forgotten.
    pub fn case_forgetting(&self) {
        self.cases_forgetting.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a callback from a flexswitch into the compiler, and whether
    /// it produced a case.
    pub fn flexswitch_missed(&self, got_case: bool) {
        self.flexswitch_misses.fetch_add(1, Ordering::Relaxed);
        if got_case {
            self.flexswitch_cases.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a portal call that goes on without its hook.
    pub fn unhooked(&self) {
        self.unhooked.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a hand-over from residual code to the interpreter.
    pub fn resumed(&self) {
        self.resumptions.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a hand-over that parked: the interpreter proper goes on.
    pub fn parked(&self) {
        self.parked.fetch_add(1, Ordering::Relaxed);
    }

    /// What compiling one position key has cost the threads that asked for
    /// it on average: the time of all compilations, flexswitch cases
    /// included, less what the compiler's thread did for them, per
    /// compilation that was not a case; `None` before the first.
    pub fn compile_per_key(&self) -> Option<std::time::Duration> {
        let all = self.compilations.load(Ordering::Relaxed);
        let keys = all.saturating_sub(self.case_compilations.load(Ordering::Relaxed));
        let here =
            self.compile_nanos.load(Ordering::Relaxed).saturating_sub(self.elsewhere_nanos.load(Ordering::Relaxed));
        (keys > 0).then(|| std::time::Duration::from_nanos(here / keys))
    }

    /// Records a residual function handed to the compiler's thread.
    pub fn submitted(&self) {
        self.submitted.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a fusion that took `here` on this thread and `elsewhere` on
    /// the compiler's ([`Stats::fused`] of both; one of
    /// `background_fusions` where `elsewhere` is not zero).
    pub fn fused_at(&self, here: std::time::Duration, elsewhere: std::time::Duration, ops: usize) {
        self.fused((here + elsewhere).as_nanos() as u64, ops);
        if !elsewhere.is_zero() {
            self.fused_elsewhere.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records that `nanos` of the last compilation's time
    /// ([`Stats::compiled`]) were the compiler thread's (`run::background`).
    pub fn compiled_elsewhere(&self, nanos: u64) {
        self.elsewhere_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Records that the last compilation ([`Stats::compiled`], with the
    /// same `ops` and `nanos`) was a flexswitch case's.
    pub fn case_compiled(&self, ops: Option<usize>, nanos: u64) {
        self.case_compilations.fetch_add(1, Ordering::Relaxed);
        self.case_ops.fetch_add(ops.unwrap_or(0) as u64, Ordering::Relaxed);
        self.case_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Records a merge point that spilled saved frames (compiled recursion).
    pub fn spilled(&self) {
        self.spills.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a fusion of compiled code with its pieces that took `nanos`
    /// and compiled `ops` residual operations.
    pub fn fused(&self, nanos: u64, ops: usize) {
        self.fusions.fetch_add(1, Ordering::Relaxed);
        self.fusion_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.fused_ops.fetch_add(ops as u64, Ordering::Relaxed);
    }

    /// What fusing has cost per residual operation it compiled so far;
    /// `None` before any fusion. Fusing copies code already simplified
    /// and compiles it, without a generating extension: a fraction of
    /// what compiling costs per operation.
    pub fn nanos_per_fused_op(&self) -> Option<u64> {
        let ops = self.fused_ops.load(Ordering::Relaxed);
        (ops > 0).then(|| self.fusion_nanos.load(Ordering::Relaxed) / ops)
    }

    /// Records an entry into residual code that postponed a fusion.
    pub fn fusion_postponed(&self) {
        self.fusions_postponed.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a portal call that interprets instead of entering code
    /// waiting for its fusion (see [`StatsSnapshot::fusion_waits`]).
    pub fn waited_for_fusion(&self) {
        self.fusion_waits.fetch_add(1, Ordering::Relaxed);
    }

    /// Time spent compiling so far, in nanoseconds.
    pub fn compile_nanos(&self) -> u64 {
        self.compile_nanos.load(Ordering::Relaxed)
    }

    /// What compiling has cost per residual operation so far; `None`
    /// before any code was compiled.
    pub fn nanos_per_op(&self) -> Option<u64> {
        let ops = self.residual_ops.load(Ordering::Relaxed);
        (ops > 0).then(|| self.compile_nanos.load(Ordering::Relaxed) / ops)
    }

    /// Records an entry into residual code.
    pub fn entered(&self) {
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// Records that `n` keys' code was retired for running slower than
    /// interpreting (`portal::slow`).
    pub fn retired_slow(&self, n: u64) {
        self.retired_slow.fetch_add(n, Ordering::Relaxed);
    }

    /// Records that compiled code left because its turn checks ran out.
    pub fn turn_checked(&self) {
        self.turn_checks.fetch_add(1, Ordering::Relaxed);
    }

    /// A count that grows with every compilation and fusion, whatever the
    /// thread: a portal call during which it changed was compiling, and its
    /// time is not the code's (`portal::slow`).
    pub fn compile_work(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed) + self.fusions.load(Ordering::Relaxed)
    }

    /// The counts now.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            compilations: self.compilations.load(Ordering::Relaxed),
            declined: self.declined.load(Ordering::Relaxed),
            residual_ops: self.residual_ops.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            compile_nanos: self.compile_nanos.load(Ordering::Relaxed),
            flexswitches: self.flexswitches.load(Ordering::Relaxed),
            flexswitch_cases: self.flexswitch_cases.load(Ordering::Relaxed),
            flexswitch_misses: self.flexswitch_misses.load(Ordering::Relaxed),
            resumptions: self.resumptions.load(Ordering::Relaxed),
            parked: self.parked.load(Ordering::Relaxed),
            unhooked: self.unhooked.load(Ordering::Relaxed),
            spills: self.spills.load(Ordering::Relaxed),
            fusions: self.fusions.load(Ordering::Relaxed),
            fusion_nanos: self.fusion_nanos.load(Ordering::Relaxed),
            fused_ops: self.fused_ops.load(Ordering::Relaxed),
            case_residual_ops: self.case_ops.load(Ordering::Relaxed),
            case_compile_nanos: self.case_nanos.load(Ordering::Relaxed),
            background_compile_nanos: self.elsewhere_nanos.load(Ordering::Relaxed),
            background_submissions: self.submitted.load(Ordering::Relaxed),
            background_fusions: self.fused_elsewhere.load(Ordering::Relaxed),
            fusions_postponed: self.fusions_postponed.load(Ordering::Relaxed),
            fusion_waits: self.fusion_waits.load(Ordering::Relaxed),
            retired_slow: self.retired_slow.load(Ordering::Relaxed),
            turn_checks: self.turn_checks.load(Ordering::Relaxed),
            lazy_sides: self.lazy_sides.load(Ordering::Relaxed),
            cases_put_off: self.cases_put_off.load(Ordering::Relaxed),
            cases_forgetting: self.cases_forgetting.load(Ordering::Relaxed),
        }
    }
}
