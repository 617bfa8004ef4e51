//! A portal's settings ([`Config`], one per annotated module) and the
//! hot-spot policy they choose ([`HotPolicy`]): the threshold, the warm-up,
//! the budgets of a compilation, read once per process from the environment
//! (`JITGEN_THRESHOLD`, `JITGEN_OFF`, `JITGEN_BACKGROUND`) unless set
//! explicitly.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Once, OnceLock};

use crate::compile::schedule::Limits;
use crate::run::fusion::FUSION_PATIENCE;

/// The default hot-spot threshold: iterations of one position key before it
/// is warm. Under the default policy a warm key compiles once the program
/// has also run for [`WARMUP_FACTOR`] times the expected compile time since
/// the key got warm (see [`HotPolicy`]); an explicit threshold compiles
/// right past it.
pub const DEFAULT_THRESHOLD: u32 = 1000;

/// How long a warm key keeps being interpreted, in expected compile times,
/// before it compiles (the default policy). Compiling only once the run has
/// lasted four expected compile times bounds what compiling costs a run
/// that ends just after: at most 1.25x its interpreted time, where the
/// expectation holds.
pub const WARMUP_FACTOR: u32 = 4;

/// The compile time a portal cache expects before it has measured one
/// (about what a TLC loop costs, 1.0-1.4 ms: PERFORMANCE.md).
pub const EXPECTED_COMPILE: std::time::Duration = std::time::Duration::from_micros(1250);

/// When a counted key compiles: past `threshold` visits, and, with
/// `warmup`, once the program has run [`WARMUP_FACTOR`] times the expected
/// compile time in the interpreter (time in compiled code and compiling does
/// not count) since the key passed the threshold (the clock is read when
/// its count passes each further multiple of the threshold, not at every
/// visit). A bare threshold (`u32`) is exact: no warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotPolicy {
    /// Visits (as counted: see [`crate::portal::sampler::sample_period`]) before a key is warm.
    pub threshold: u32,
    /// Whether a warm key also waits for run time before it compiles.
    pub warmup: bool,
}

impl From<u32> for HotPolicy {
    fn from(threshold: u32) -> HotPolicy {
        HotPolicy { threshold, warmup: false }
    }
}

/// [`Config::case_budget`] stored: no budget.
const NO_CASE_BUDGET: u64 = u64::MAX;

/// [`Config::case_budget`] stored: the hot-spot policy's budget.
const POLICY_CASE_BUDGET: u64 = u64::MAX - 1;

struct Env {
    threshold: Option<u32>,
    off: bool,
    background: bool,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        threshold: std::env::var("JITGEN_THRESHOLD").ok().and_then(|v| v.trim().parse().ok()),
        off: std::env::var("JITGEN_OFF").is_ok_and(|v| !v.is_empty() && v != "0"),
        background: std::env::var("JITGEN_BACKGROUND").map_or(true, |v| v.trim() != "0"),
    })
}

/// Settings of one annotated module.
pub struct Config {
    threshold: AtomicU32,
    enabled: AtomicBool,
    explicit_threshold: AtomicBool,
    explicit_enabled: AtomicBool,
    max_cases: AtomicU32,
    max_ops: AtomicU32,
    lazy_after_ops: AtomicU32,
    fusion_patience: AtomicU32,
    background: AtomicBool,
    turn_checks: AtomicU32,
    /// The budget for flexswitch cases in nanoseconds, [`NO_CASE_BUDGET`]
    /// for none, [`POLICY_CASE_BUDGET`] for the policy's (see
    /// [`Config::case_budget`]).
    case_budget: AtomicU64,
    /// Why a module that compiles nothing unless asked interprets (see
    /// [`Config::interpreting`]).
    interprets_because: Option<&'static str>,
    told: Once,
}

impl Config {
    /// Settings of a module whose portals have nothing to specialize (no
    /// green variable at a merge point, nothing promoted): compiled code
    /// would be the interpreter again, only compiled by Cranelift instead
    /// of rustc. It interprets (as with `JITGEN_OFF`) unless compiling is
    /// switched on explicitly ([`Config::set_enabled`]), and says `why`
    /// once where `JITGEN_LOG` is set ([`Config::tell_off`]).
    pub const fn interpreting(why: &'static str) -> Config {
        let mut c = Config::new();
        c.enabled = AtomicBool::new(false);
        c.explicit_enabled = AtomicBool::new(true);
        c.interprets_because = Some(why);
        c
    }

    /// Where the module interprets for a reason of its own and `JITGEN_LOG`
    /// is set: prints it, once per process.
    #[inline]
    pub fn tell_off(&self) {
        if let Some(why) = self.interprets_because {
            self.told.call_once(|| {
                if std::env::var_os("JITGEN_LOG").is_some() {
                    eprintln!("jitgen: {why}");
                }
            });
        }
    }

    /// Settings from the environment (read on first use).
    pub const fn new() -> Config {
        Config {
            threshold: AtomicU32::new(DEFAULT_THRESHOLD),
            enabled: AtomicBool::new(true),
            explicit_threshold: AtomicBool::new(false),
            explicit_enabled: AtomicBool::new(false),
            max_cases: AtomicU32::new(Limits::DEFAULT.max_cases as u32),
            max_ops: AtomicU32::new(Limits::DEFAULT.max_ops as u32),
            lazy_after_ops: AtomicU32::new(Limits::DEFAULT.lazy_after_ops as u32),
            fusion_patience: AtomicU32::new(FUSION_PATIENCE),
            background: AtomicBool::new(true),
            turn_checks: AtomicU32::new(crate::portal::slow::FIRST_TURNS as u32),
            case_budget: AtomicU64::new(POLICY_CASE_BUDGET),
            interprets_because: None,
            told: Once::new(),
        }
    }

    /// How many times as long as fusing costs compiled code must have
    /// existed before the flexswitch cases it reached are fused into it
    /// (see `ResidualFn::fuse_pieces`); 0 fuses whenever it gained cases.
    pub fn set_fusion_patience(&self, n: u32) {
        self.fusion_patience.store(n, Ordering::Relaxed);
    }

    /// Whether, under the default policy (a warm-up), a key's code is
    /// compiled to machine code on the compiler's thread while the
    /// interpreter goes on (`run::background`; on by default), or on the
    /// interpreter's thread while it waits (also where `JITGEN_BACKGROUND=0`).
    /// An explicit threshold always compiles on the interpreter's thread, at
    /// the visit that passes it.
    pub fn set_background(&self, on: bool) {
        self.background.store(on, Ordering::Relaxed);
    }

    /// See [`Config::set_background`].
    pub fn compiles_in_background(&self) -> bool {
        self.background.load(Ordering::Relaxed) && env().background
    }

    /// Turns through the entry of compiled code that makes turn checks
    /// before it first checks its speed against the interpreter's (see
    /// `portal::slow::TurnClock`; [`crate::portal::slow::FIRST_TURNS`] by
    /// default). Tests make it small, so that code leaves and is measured
    /// often.
    pub fn set_turn_checks(&self, turns: u32) {
        self.turn_checks.store(turns.max(1), Ordering::Relaxed);
    }

    /// See [`Config::set_turn_checks`].
    pub fn turn_checks(&self) -> u32 {
        self.turn_checks.load(Ordering::Relaxed)
    }

    /// See [`Config::set_fusion_patience`].
    pub fn fusion_patience(&self) -> u32 {
        self.fusion_patience.load(Ordering::Relaxed)
    }

    /// What the outermost portal call may spend compiling flexswitch cases
    /// before its spending is held to a share of its run time
    /// (`run::case_budget`); past it, a miss hands over instead of
    /// compiling. `None`: no budget.
    /// By default the default hot-spot policy has one and an explicit
    /// threshold none; tests set an empty one to take that path at once.
    pub fn set_case_budget(&self, start: Option<std::time::Duration>) {
        let nanos = start.map_or(NO_CASE_BUDGET, |d| (d.as_nanos() as u64).min(POLICY_CASE_BUDGET - 1));
        self.case_budget.store(nanos, Ordering::Relaxed);
    }

    /// The budget for flexswitch cases in force (see
    /// [`Config::set_case_budget`]).
    pub fn case_budget(&self) -> Option<std::time::Duration> {
        match self.case_budget.load(Ordering::Relaxed) {
            NO_CASE_BUDGET => None,
            POLICY_CASE_BUDGET => self.hot_policy().warmup.then_some(crate::run::case_budget::START),
            nanos => Some(std::time::Duration::from_nanos(nanos)),
        }
    }

    /// Cases per flexswitch: past this many distinct values, a promotion
    /// hands over to the interpreter instead of compiling another case.
    pub fn set_max_cases(&self, n: u32) {
        self.max_cases.store(n, Ordering::Relaxed);
    }

    /// Residual operations per compilation (the budget): past it, the paths
    /// still to compile are left to compile when first taken.
    pub fn set_max_ops(&self, n: u32) {
        self.max_ops.store(n, Ordering::Relaxed);
    }

    /// Residual operations a compilation emits before it compiles the other
    /// side of each red split only when first taken (0: every split lazily).
    pub fn set_lazy_after_ops(&self, n: u32) {
        self.lazy_after_ops.store(n, Ordering::Relaxed);
    }

    /// The limits of the compilations of this module.
    pub fn limits(&self) -> Limits {
        Limits {
            max_cases: self.max_cases.load(Ordering::Relaxed) as usize,
            max_ops: self.max_ops.load(Ordering::Relaxed) as usize,
            lazy_after_ops: self.lazy_after_ops.load(Ordering::Relaxed) as usize,
            // A root compiled on the compiler's thread is simplified there.
            passes_elsewhere: self.hot_policy().warmup && self.compiles_in_background(),
            ..Limits::DEFAULT
        }
    }

    /// Iterations of a position key before it compiles (0: at first sight),
    /// exactly: with an explicit threshold there is no warm-up (see
    /// [`HotPolicy`]).
    pub fn set_threshold(&self, n: u32) {
        self.threshold.store(n, Ordering::Relaxed);
        self.explicit_threshold.store(true, Ordering::Relaxed);
    }

    /// The hot-spot policy in force: the default threshold with warm-up, or
    /// an explicit threshold ([`Config::set_threshold`], `JITGEN_THRESHOLD`)
    /// without.
    #[inline]
    pub fn hot_policy(&self) -> HotPolicy {
        let explicit = self.explicit_threshold.load(Ordering::Relaxed) || env().threshold.is_some();
        HotPolicy { threshold: self.threshold(), warmup: !explicit }
    }

    /// The threshold in force.
    #[inline]
    pub fn threshold(&self) -> u32 {
        if self.explicit_threshold.load(Ordering::Relaxed) {
            self.threshold.load(Ordering::Relaxed)
        } else {
            env().threshold.unwrap_or(DEFAULT_THRESHOLD)
        }
    }

    /// Switches compilation on or off (off: interpret only).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
        self.explicit_enabled.store(true, Ordering::Relaxed);
    }

    /// Whether compilation is on.
    #[inline]
    pub fn enabled(&self) -> bool {
        if self.explicit_enabled.load(Ordering::Relaxed) {
            self.enabled.load(Ordering::Relaxed)
        } else {
            !env().off
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}
