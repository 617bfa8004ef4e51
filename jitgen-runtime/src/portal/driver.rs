//! What a portal needs at run time: settings, counters, a cache of compiled
//! code per position key, and statistics.
//!
//! Each annotated module has one [`Config`] and one [`Stats`] (statics in the
//! generated code). The environment is read once per process:
//! `JITGEN_THRESHOLD=N` (compile past N visits, 0 at first sight, no
//! warm-up) and `JITGEN_OFF=1`
//! (interpret only); explicit settings through [`Config`] win over it.
//!
//! ## Hand-over, the hot-spot policy and portal entry
//!
//! *Hand-over.* Past `max_cases`, or when a case declines, the switch returns
//! `Resume(n)` with the live values, the promoted value and its table's address in the
//! frame; `ResidualFn::call_words` finds the table's resumer and runs the generating
//! extension in execute mode (below) from the snapshot with those values. Called from a
//! portal (`residual::call_parking`), execute mode stops at the portal's merge point
//! and returns the state there (`ResidualError::Parked`); the portal hook writes it
//! back into the interpreter's variables (scalars, references, and an owned object
//! residual code made, moved out of the arena) and the interpreter proper goes on:
//! after a hand-over, at most one iteration of the interpreter loop runs in execute
//! mode, which is about two orders of magnitude slower than plain interpretation.
//! Portal code that keeps handing over (64 times, in more than half of its runs) is
//! retired: its key is interpreted from then on (code entered with saved frames only
//! when its runs were brief, see `PortalSite::handed_over`). A recursion the compiler
//! sees and cannot spill marks the module, so positions with saved frames decline from
//! then on; and a thread's portal left with no code forgets its entry filter
//! (`Sampler::forget_entries`).
//! Measured with `cargo run --release --example subroutines -- 1000000 --max-cases 0` (every return handed over): 139 ms
//! against 14 ms interpreted, most of it the portal hook's lookup at every merge point
//! of retired keys, not the hand-overs (384 of them). The hook's cold path is sampled:
//! after a cold visit the hook skips the next visits (a countdown the interpreter loop
//! keeps in a local, `Sampler::skip_many`), and the visit that reaches the hook next counts for
//! itself and the visits skipped before it (`PortalCache::visit_weighted`). The skips
//! ramp up (`skip_after_cold`): none for the first `COLD_RAMP` (8) cold visits since
//! residual code last ran, then 1, 2, 4, ... up to `sample_period(threshold) - 1` (a
//! quarter of the threshold, at most 256: 249 at the default threshold; thresholds
//! below 8, as in tests, never skip). So code that stays cold is sampled once in 250
//! visits, a key is sampled at least four times before it gets hot, and residual code
//! that returned to the interpreter is entered again at the next compiled key within a
//! few visits. A counted visit costs about 30 ns (the key built and hashed, the map
//! lookup, branches the interpreter loop seldom takes): sampled once in 62 visits, as
//! at first, the counted visits were most of the cold path's cost. Where compiled code
//! starts, a skipping portal still visits: `Sampler` (one thread-local per portal, in
//! `driver.rs`) keeps a 256-bit filter of the green words (`green_word` of the cheap
//! greens: scalars and addresses) of positions with code, consulted only once the
//! portal has code. Once it has, every visit makes that check, inline: the interpreter
//! loop keeps the filter folded to 64 bits in a local (`Sampler::entry_mask`) and calls
//! the portal's skip function (out of line, `Sampler::ask`) only where its countdown of
//! skips runs out or the visit's green word has its bit set (a call at every visit
//! made programs that do not compile run well behind plain in a thread with code for
//! another; figures in PERFORMANCE.md). Without the filter, TLC f1 called
//! 100 times in a thread passed its loop's entry unseen whenever the visit there fell
//! among the skipped ones, interpreted about 1400 merge points per call before a
//! counted visit landed on it, and credited the loop's other merge points with those
//! samples until they compiled two or three more copies of the loop. New code also
//! cools the keys that are warm (`PortalCache::insert`: their counts restart, their
//! warm-up clock is kept). Counts are exact per key, in one map that also holds each
//! key's code (`PortalCache`): a key compiles after its own visits, never another's.
//! After a visit meets a declined key the hook skips the next visits too (doubling up
//! to `MAX_SKIP` = 256). The first visit of a thread costs a few microseconds (that
//! table's 4096 buckets cost about 50 µs of page faults). Two mistakes this design
//! avoids, both seen on TLC: with a fixed sample weight, the first merge point of a
//! program that runs residual code once per call was sampled at every call and compiled
//! early, into slow code; and with a full sample period skipped after every cold visit,
//! compiled code a few merge points into a function was entered in one call of about
//! 15.
//!
//! A call that keeps meeting declined keys gives its hook up: after `GIVE_UP_AFTER`
//! (16) visits in a row that reached the hook and met keys declined because of a
//! construct compiled code cannot handle (not because of where the program was:
//! `decline_is_positional`), with no code for the portal in the thread, the call goes
//! on to its end in the portal's hook-free copy of its loop (`Sampler::gives_up`; the
//! copy is generated beside the loop, see `jitgen-macros`' `unhooked`). The count
//! survives the call, so the next call gives up at its first declined key unless it
//! meets a cold one first. Declines of a recursion the interpreter cannot compile (its
//! saved frames read in place: every position inside a call declines) give the hook
//! up even where the thread has code (`DeclineKind::Recursion`): the stack VM's
//! recursive fibonacci ran at 0.2x plain in a thread with code for its loops, each
//! dispatch paying the entry filter. The per-visit countdown alone cost a small dispatch loop a
//! fifth of its time (`cargo run --release --example portal_cost`; figures in
//! PERFORMANCE.md). The price: a later loop of the same call that could compile is
//! interpreted to the call's end.
//!
//! A position where the interpreter has saved frames (inside a called function of the
//! interpreted program) waits `NESTED_THRESHOLD_FACTOR` (4) times the threshold
//! (`PortalSite::nested`): code entered there hands over to the interpreter at each
//! return below its entry, so a loop that calls a small function should compile first,
//! with the call inside it. Without the factor, the stack VM's procedure loop compiled
//! the 4-instruction procedure alone and ran at 0.2x plain.
//!
//! Why the warm-up: compiling a loop takes 2-3 ms, about 60,000 turns of TLC's
//! factorial loop in the interpreter. With a bare threshold of 1000, a run that ends
//! soon after compiling paid for it in full: `tlc factorial.tlc 1000` took 2.1 ms
//! against 0.05 ms interpreted. Compiling only after the run has lasted four expected
//! compile times bounds that loss. When counted visits were sampled once in 62, short
//! runs cost 1.2-1.45x and factorial(160,000) 1.4-1.9x. The cost of the warm-up: a long
//! run compiles about 8 ms later than it could.
//!
//! Portal entry and types: for a portal's own list of enums (an operand stack of
//! values), the variants of its top 8 elements (4 bits each) are a key word; the
//! compiled entry makes their tags constants and the slots of other variants 0. So the
//! loop compiled for a stack of integers has no tag checks (TLC f1's inner loop:
//! compare, add, and, add), and a stack holding other types at the same position is a
//! different key with its own code. Computing the word costs the hook a few nanoseconds
//! per visit for deep stacks (only the top 8 are looked at). The entry reads the list
//! in place where the layouts of `Vec` and of the element enum are measured
//! (`heap::vec_layout`, `Flat::layout`): one bounds check, then loads of the words in
//! use (a known variant's slots; tag and all slots below the top 8), and `vec_get`
//! calls only where a layout is not known. `jit::stats()` counts `flexswitches`,
//! `flexswitch_cases`, `flexswitch_misses` (callbacks into the compiler), `declined`
//! and `resumptions`.

use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;

use crate::compile::schedule::Limits;
use crate::run::residual::{Fusion, ResidualFn, FUSION_PATIENCE};

/// What compiling costs per residual operation before a module has compiled
/// anything (a fusion's expected time; measured 5-8 µs, PERFORMANCE.md).
const NANOS_PER_OP: u64 = 5_000;
pub use crate::run::stats::{Stats, StatsSnapshot};

/// The default hot-spot threshold: iterations of one position key before it
/// is warm. Under the default policy a warm key compiles once the program
/// has also run for [`WARMUP_FACTOR`] times the expected compile time since
/// the key got warm (see [`HotPolicy`]); an explicit threshold compiles
/// right past it.
pub const DEFAULT_THRESHOLD: u32 = 1000;

/// How long a warm key keeps being interpreted, in expected compile times,
/// before it compiles (the default policy). Compiling only once the run has
/// lasted twice the compile time bounds what compiling costs a run that
/// ends just after: at most 1.5x its interpreted time.
pub const WARMUP_FACTOR: u32 = 4;

/// The compile time a portal cache expects before it has measured one
/// (about what a TLC loop costs: PERFORMANCE.md).
pub const EXPECTED_COMPILE: std::time::Duration = std::time::Duration::from_millis(2);

/// When a counted key compiles: past `threshold` visits, and, with
/// `warmup`, once the program has run [`WARMUP_FACTOR`] times the expected
/// compile time since the key passed the threshold (the clock is read when
/// its count passes each further multiple of the threshold, not at every
/// visit). A bare threshold (`u32`) is exact: no warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotPolicy {
    /// Visits (as counted: see [`sample_period`]) before a key is warm.
    pub threshold: u32,
    /// Whether a warm key also waits for run time before it compiles.
    pub warmup: bool,
}

impl From<u32> for HotPolicy {
    fn from(threshold: u32) -> HotPolicy {
        HotPolicy { threshold, warmup: false }
    }
}

struct Env {
    threshold: Option<u32>,
    off: bool,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        threshold: std::env::var("JITGEN_THRESHOLD").ok().and_then(|v| v.trim().parse().ok()),
        off: std::env::var("JITGEN_OFF").is_ok_and(|v| !v.is_empty() && v != "0"),
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
}

impl Config {
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
        }
    }

    /// How many times as long as fusing costs compiled code must have
    /// existed before the flexswitch cases it reached are fused into it
    /// (see `ResidualFn::fuse_pieces`); 0 fuses whenever it gained cases.
    pub fn set_fusion_patience(&self, n: u32) {
        self.fusion_patience.store(n, Ordering::Relaxed);
    }

    /// See [`Config::set_fusion_patience`].
    pub fn fusion_patience(&self) -> u32 {
        self.fusion_patience.load(Ordering::Relaxed)
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

/// What a portal cache holds for one key.
enum Entry {
    /// Counted visits (each sampled visit counts [`sample_period`]), not
    /// compiled yet, and since when the key is warm (past the threshold,
    /// under a policy with warm-up): microseconds of the cache's clock
    /// ([`now_micros`]; 0: not warm). Small: a cache may hold
    /// [`MAX_COUNTERS`] of them.
    Counting(u32, u32),
    Compiled(Box<Compiled>),
    /// Declined, or retired (see [`decline_kind`]).
    Declined(DeclineKind),
}

struct Compiled {
    code: ResidualFn,
    content: Vec<Vec<u8>>,
    runs: u32,
    handovers: u32,
}

/// Versions of a key's code compiled for content it no longer has, kept per
/// key (see `PortalCache::stale`).
pub const STALE_VERSIONS: usize = 4;

/// Compiled (or declined) keys of one portal, past which it compiles no more.
pub const MAX_ENTRIES: usize = 4096;

/// Hotness counters of one portal, past which counting starts afresh.
pub const MAX_COUNTERS: usize = 1 << 16;

/// Hand-overs after which code that mostly hands over is retired (see
/// [`PortalCache::handed_over`]).
pub const RETIRE_AFTER: u32 = 64;

/// What a portal should do at its merge point.
pub enum Hot {
    /// Keep interpreting.
    Cold,
    /// Keep interpreting: this key's compilation was declined (or its code
    /// retired). A portal may skip its next visits (see [`skip_after_declined`]);
    /// [`decline_kind`] of why.
    Declined(DeclineKind),
    /// Compile now (then call [`PortalCache::insert`]).
    Compile,
    /// Run this code.
    Run(ResidualFn),
}

/// The longest run of merge point visits a portal skips after meeting a
/// declined key.
pub const MAX_SKIP: u32 = 256;

/// How many visits that reach the hook must meet declined keys in a row
/// before a portal call goes on without its hook (see [`Sampler::gives_up`]).
pub const GIVE_UP_AFTER: u32 = 16;

/// Whether a compilation declined because of where the program was rather
/// than because of what the interpreter does: a recursion of the interpreted
/// program, saved frames at the position, a call of a portal, the budget,
/// or code retired for handing over. Such declines say nothing of the
/// program's other loops, so a call meeting them does not give its hook up
/// (a TLC program that recursed, then ran a loop, gave the hook up in the
/// recursion and interpreted the loop to its end: PERFORMANCE.md). Other
/// declines (a construct compiled code cannot handle yet, met on the
/// interpreter's paths) count.
pub fn decline_is_positional(why: &str) -> bool {
    decline_kind(why) == DeclineKind::Positional
}

/// Why a compilation declined, as the hot-spot policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclineKind {
    /// A construct compiled code cannot handle, met on the interpreter's
    /// paths: counts toward giving the hook up where the thread has no code.
    Construct,
    /// Where the program was ([`decline_is_positional`]): does not count.
    Positional,
    /// A language-level recursion of an interpreter whose recursion cannot
    /// compile (it reads its saved frames in place, so they cannot be
    /// spilled): every position inside a call declines, so it counts toward
    /// giving the hook up even where the thread has code for other
    /// positions. Such an interpreter's dispatch can be so cheap that the
    /// hook's countdown and entry filter cost more than it (the stack VM's
    /// recursive fibonacci ran at 0.2x plain in a thread with code).
    Recursion,
}

/// The [`DeclineKind`] of a decline's reason.
pub fn decline_kind(why: &str) -> DeclineKind {
    if why.contains("cannot be spilled") {
        DeclineKind::Recursion
    } else if ["recurs", "Budget", "a call of the portal", "retired"].iter().any(|w| why.contains(w)) {
        DeclineKind::Positional
    } else {
        DeclineKind::Construct
    }
}

/// How many visits to skip after a visit met a declined key, given how many
/// were skipped last time (`0` after a visit met anything else): doubling up
/// to [`MAX_SKIP`]. Interpreting through code jitgen declined then costs a
/// counter decrement per merge point; a hot key elsewhere is noticed within
/// `MAX_SKIP` visits of it, counted once per visit that is not skipped.
#[inline]
pub fn skip_after_declined(last: u32) -> u32 {
    (last.max(1) * 2).min(MAX_SKIP)
}

/// The entry of a key counted for the first time, and what to do.
fn first_count(weight: u32, policy: HotPolicy, epoch: &mut Option<std::time::Instant>) -> (Entry, Hot) {
    let past = weight > policy.threshold;
    let warm_at = if past && policy.warmup { now_micros(epoch) } else { 0 };
    let hot = if past && !policy.warmup { Hot::Compile } else { Hot::Cold };
    (Entry::Counting(weight, warm_at), hot)
}

/// Microseconds since a portal cache's `epoch` (set now if unset), never 0;
/// wraps after about 71 minutes (a warm key then waits its budget again).
fn now_micros(epoch: &mut Option<std::time::Instant>) -> u32 {
    let t = epoch.get_or_insert_with(std::time::Instant::now);
    (t.elapsed().as_micros() as u32).max(1)
}

fn same_content(stored: &[Vec<u8>], now: &[&[u8]]) -> bool {
    stored.len() == now.len() && stored.iter().zip(now).all(|(a, b)| a.as_slice() == *b)
}

/// Hotness counters and compiled code of one portal, per position key.
///
/// A key identifies green values by address; `content` is the bytes of the
/// green data behind them, compared (not copied) whenever compiled code is
/// about to be reused, so that code compiled for a buffer is not reused after
/// the caller put another program into the same buffer (DESIGN.md section 6):
/// a changed content recompiles. The code for the content before is kept
/// (a few versions per key, `stale`) and runs again when that content comes
/// back: a machine built afresh for each run often finds its program's
/// buffer at an address an earlier run had. While a key is only being
/// counted, the content is not looked at, unless it has such versions.
///
/// One exact map (hashed with `rustc-hash`) holds each key's count, then its
/// code: a visit is one lookup. The cold path stays cheap because portals
/// sample it (see [`sample_period`]), not by approximating the counts: a key
/// compiles after its own visits, never another's. (A direct-mapped table
/// of shared counters came before the sampling; its 4096 buckets cost each
/// thread about 50 µs of page faults at its first visit, and a bucket shared
/// by keys made them compile early.)
pub struct PortalCache<K> {
    keys: FxHashMap<K, Entry>,
    /// How many entries of `keys` are [`Entry::Counting`].
    counting: usize,
    /// Code of a key compiled for other content than its entry's now, at
    /// most [`STALE_VERSIONS`] per key, newest last: a caller that builds a
    /// fresh machine for each run often gets its program's buffer at one of
    /// a few addresses in turn, and code kept for each is reused when that
    /// content comes back instead of compiling again.
    stale: FxHashMap<K, Vec<Box<Compiled>>>,
    /// The compile time expected next (see [`PortalCache::compiled_in`]).
    expected_compile: std::time::Duration,
    /// The origin of the cache's clock (set when a first key gets warm).
    epoch: Option<std::time::Instant>,
}

impl<K> PortalCache<K> {
    /// An empty cache (a `const fn`: portals keep theirs in a thread-local
    /// initialized without a run-time check).
    pub const fn new() -> Self {
        PortalCache {
            keys: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            counting: 0,
            stale: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            expected_compile: EXPECTED_COMPILE,
            epoch: None,
        }
    }
}

impl<K: Hash + Eq + Clone> Default for PortalCache<K> {
    fn default() -> Self {
        PortalCache::new()
    }
}

/// Cold visits in a row, since residual code last ran, that a portal makes
/// before it starts skipping (see [`skip_after_cold`]).
pub const COLD_RAMP: u32 = 8;

/// How many visits a portal skips after a cold visit, the `streak`-th in a
/// row since residual code last ran (or since the thread began): none for
/// the first [`COLD_RAMP`], then 1, 2, 4, ... up to `sample_period - 1`.
/// So residual code that returns to the interpreter is entered again at the
/// next compiled key within a few visits, not a sample period later (when
/// every cold visit skipped a full period, a function whose compiled loop
/// began a few merge points into it ran compiled in one call of about 15),
/// while code that stays cold is soon sampled at the full period.
#[inline]
pub fn skip_after_cold(streak: u32, threshold: u32) -> u32 {
    let most = sample_period(threshold) - 1;
    if streak < COLD_RAMP {
        0
    } else {
        (1u32 << (streak - COLD_RAMP).min(16)).min(most)
    }
}

/// Visits of one portal call that test the entry mask with no code entered
/// since the call began or code last ran: past them the call samples its
/// visits as where the portal has no code ([`LoopSampler::visits_hook`]).
/// A program the thread has no code for (a fresh one, code being kept for
/// its buffers' addresses) paid the mask test at every visit: the stack
/// VM's recursive fibonacci ran at 3.2x plain's time (PERFORMANCE.md). Code
/// a call reaches within this many visits is entered by the filter as
/// before; later, at a sampled visit.
pub const QUIET_VISITS: u32 = 1 << 14;

/// What the interpreter loop keeps of its portal's [`Sampler`] in locals
/// (registers): a countdown of visits to skip, and once the thread has code
/// for the portal, the entry filter folded to 64 bits
/// ([`Sampler::entry_mask`]) with the countdown kept beside it. Without
/// code a visit costs one subtraction and its borrow (a fused `sub; jb`);
/// with code the first countdown stays at 0 and each visit tests its green
/// word against the mask in the countdown's cold block, for at most
/// [`QUIET_VISITS`] visits in a row that enter no code.
pub struct LoopSampler {
    skips: u32,
    counted: u32,
    quiet: u32,
    /// [`Sampler::entry_mask`], taken again after each visit of the hook.
    pub mask: u64,
}

impl LoopSampler {
    /// At the start of a portal call, given [`Sampler::entry_mask`].
    #[inline(always)]
    pub fn new(mask: u64) -> LoopSampler {
        LoopSampler { skips: 0, counted: 0, quiet: 0, mask }
    }

    /// The hook ran compiled code, which handed back to the interpreter:
    /// the mask is tested at every visit again.
    #[inline(always)]
    pub fn entered(&mut self) {
        self.quiet = 0;
    }

    /// Whether this visit leaves the countdown (the cold path follows).
    #[inline(always)]
    pub fn due(&mut self) -> bool {
        let (left, due) = self.skips.overflowing_sub(1);
        self.skips = left;
        due
    }

    /// After [`LoopSampler::due`]: whether the visit at a position with
    /// green word `green` goes to the hook, asking `ask` (the portal's
    /// [`Sampler::ask`], out of line) where the countdown ran out or the
    /// mask says code may start.
    #[inline(always)]
    pub fn visits_hook(&mut self, green: u64, ask: impl FnOnce(bool, u32, u64) -> Option<u32>) -> bool {
        self.skips = 0;
        if self.mask == 0 || self.quiet >= QUIET_VISITS {
            return match ask(true, 0, green) {
                Some(n) => {
                    self.skips = n;
                    false
                }
                None => true,
            };
        }
        self.quiet += 1;
        let (left, due) = self.counted.overflowing_sub(1);
        self.counted = left;
        if !due && self.mask & Sampler::mask_bit(green) == 0 {
            return false;
        }
        match ask(due, left, green) {
            Some(n) => {
                self.counted = n;
                false
            }
            None => {
                self.counted = 0;
                true
            }
        }
    }
}

/// Bit of [`Sampler`]'s skip counter: the portal has code in this thread
/// (so a call keeps its hook, see [`Sampler::gives_up`]).
const FILTERED: u32 = 1 << 31;

/// The sampling state of one portal in one thread: how many merge point
/// visits it still skips, what the next visit that reaches the hook stands
/// for, and where compiled code may start.
///
/// The entry filter is approximate: 256 bits, one per [`green_word`] of a
/// position with code. A skipping portal still visits where the filter says
/// code may start. Otherwise a function whose compiled loop begins a few
/// merge points in passes its entry unseen whenever the visit there falls
/// among the skipped ones: it interprets the loop until a counted visit
/// lands on the entry (about 1400 merge points per call in TLC's f1), and
/// credits the loop's other merge points with those visits until they
/// compile a second copy of the loop. A visit the filter lets through that
/// meets a declined key (retired code, most often) clears its bit, and code
/// entered sets its word's bit again: a word is shared by keys that differ
/// in other greens (the types on an operand stack) and by collisions, and a
/// declined position left in the filter reached the hook at every visit and
/// restarted the skip there, so that where it is visited once per call (TLC's
/// `fib_recursive` with the code of one call site retired) no other key was
/// counted again and each call paid a lookup (3.6-11x the interpreter's
/// time in a debug build). The interpreter loop keeps the filter folded to
/// 64 bits in a local ([`Sampler::entry_mask`]; 0 without code) and tests
/// each visit's green word against it with no memory access; only a visit
/// whose bit is set asks the 256-bit filter ([`Sampler::entry_hit`]).
/// Testing the thread-local filter itself in the loop was slower (see
/// PERFORMANCE.md).
pub struct Sampler {
    /// Visits still to skip, and [`FILTERED`].
    skip: Cell<u32>,
    /// The last run of visits skipped after a declined key.
    period: Cell<u32>,
    /// How many visits the next one that reaches the hook stands for.
    weight: Cell<u32>,
    /// Cold visits in a row since residual code last ran.
    streak: Cell<u32>,
    /// Visits that reached the hook and met a declined key, in a row.
    declined_run: Cell<u32>,
    /// Of those, the last that met a recursion that cannot compile.
    recursion_run: Cell<u32>,
    /// The green word of the visit let through by the entry filter, until
    /// the hook says what it met there.
    through: Cell<Option<u64>>,
    entries: [Cell<u64>; 4],
}

impl Sampler {
    /// Nothing skipped, no code (a `const fn`, for thread-locals).
    pub const fn new() -> Sampler {
        Sampler {
            skip: Cell::new(0),
            period: Cell::new(0),
            weight: Cell::new(1),
            streak: Cell::new(0),
            declined_run: Cell::new(0),
            recursion_run: Cell::new(0),
            through: Cell::new(None),
            entries: [const { Cell::new(0) }; 4],
        }
    }

    /// Whether the portal skips this visit of its merge point, for an
    /// interpreter loop that counts skipped visits down in a local (a
    /// register, where this thread-local costs a few instructions per
    /// visit), called when that countdown runs out: `None` when this visit
    /// goes to the hook, else how many visits after it to skip without
    /// asking again. Where the portal has code, the loop also asks at
    /// visits its copy of [`Sampler::entry_mask`] says code may start
    /// (see [`Sampler::ask`]).
    #[inline(always)]
    pub fn skip_many(&self) -> Option<u32> {
        let s = self.skip.get();
        let left = s & !FILTERED;
        if left == 0 {
            return None;
        }
        self.skip.set(s & FILTERED);
        Some(left - 1)
    }

    /// A visit, with `left` visits still to skip after it, whose green word
    /// `word` has its bit in the loop's [`Sampler::entry_mask`]: `None` when
    /// the entry filter says code may start there (the visit goes to the
    /// hook and stands for the visits skipped before it), else
    /// `Some(left)`: a collision of the mask, the countdown goes on.
    #[inline]
    pub fn entry_hit(&self, word: u64, left: u32) -> Option<u32> {
        if !self.may_enter(word) {
            return Some(left);
        }
        let skipped = left.saturating_add(1);
        self.weight.set(self.weight.get().saturating_sub(skipped).max(1));
        self.through.set(Some(word));
        None
    }

    /// What the interpreter loop does at a visit that leaves its countdown
    /// of skips (`due`: the countdown ran out; else `left` visits are still
    /// to skip after it) or whose green word `word` has its bit in the
    /// loop's [`Sampler::entry_mask`]: `None` when the visit goes to the
    /// hook, else how many visits after it to skip.
    #[inline]
    pub fn ask(&self, due: bool, left: u32, word: u64) -> Option<u32> {
        let left = if due { self.skip_many()? } else { left };
        self.entry_hit(word, left)
    }

    /// The entry filter folded to 64 bits, for the interpreter loop to keep
    /// in a local and test each visit's green word against
    /// ([`Sampler::mask_bit`]) with no memory access; 0 while the portal
    /// has no code. The loop takes it again after each visit of the hook.
    #[inline]
    pub fn entry_mask(&self) -> u64 {
        self.entries.iter().fold(0, |m, e| m | e.get())
    }

    /// The bit of a [`green_word`] in [`Sampler::entry_mask`].
    #[inline(always)]
    pub fn mask_bit(word: u64) -> u64 {
        1 << (Self::hash(word) & 63)
    }

    /// The visits this one stands for (the count starts again at 1).
    #[inline]
    pub fn take_weight(&self) -> u32 {
        self.weight.replace(1)
    }

    /// After a visit that got [`Hot::Cold`]: skips as [`skip_after_cold`]
    /// says, and the visit after them stands for them.
    #[inline]
    pub fn cold(&self, threshold: u32) {
        self.through.set(None);
        self.period.set(0);
        self.declined_run.set(0);
        let streak = self.streak.get();
        self.streak.set(streak.saturating_add(1));
        let skip = skip_after_cold(streak, threshold);
        self.set_skip(skip);
        self.weight.set(skip + 1);
    }

    /// After a visit that met a declined key: skips as
    /// [`skip_after_declined`] says (the visit after them stands for itself).
    /// A key declined because of where the program was
    /// ([`DeclineKind::Positional`]) does not count toward giving the hook
    /// up, and ends the run of those that do.
    #[inline]
    pub fn declined(&self, kind: DeclineKind) {
        if let Some(word) = self.through.take() {
            let (i, b) = Self::bit(word);
            self.entries[i].set(self.entries[i].get() & !b);
        }
        let counts = kind != DeclineKind::Positional;
        self.declined_run.set(if counts { self.declined_run.get().saturating_add(1) } else { 0 });
        let hopeless = kind == DeclineKind::Recursion;
        self.recursion_run.set(if hopeless { self.recursion_run.get().saturating_add(1) } else { 0 });
        let p = skip_after_declined(self.period.get());
        self.period.set(p);
        self.set_skip(p);
    }

    /// Residual code runs (or compiles) now: the cold streak is over.
    #[inline]
    pub fn ran(&self) {
        self.through.set(None);
        self.streak.set(0);
        self.declined_run.set(0);
        self.recursion_run.set(0);
    }

    /// Whether the portal call that just met a declined key should go on
    /// without its hook, to its end: the portal has no code in this thread,
    /// and the last [`GIVE_UP_AFTER`] visits that reached the hook all met
    /// declined keys (with the skips between them, a few thousand merge
    /// points); or they all met a recursion that cannot compile
    /// ([`DeclineKind::Recursion`]), code or not. The count is not reset by
    /// giving up, so the next call gives up at its first declined key,
    /// unless it meets a cold one first.
    pub fn gives_up(&self) -> bool {
        self.skip.get() & FILTERED == 0 && self.declined_run.get() >= GIVE_UP_AFTER
            || self.recursion_run.get() >= GIVE_UP_AFTER
    }

    /// Records that code starts at positions with this green word.
    pub fn add_entry(&self, word: u64) {
        let (i, b) = Self::bit(word);
        self.entries[i].set(self.entries[i].get() | b);
        self.skip.set(self.skip.get() | FILTERED);
    }

    /// Forgets where code starts: the portal has none left in this thread
    /// (its last code was retired), and skipping costs again what it costs
    /// before any code (see [`Sampler::add_entry`]).
    pub fn forget_entries(&self) {
        for e in &self.entries {
            e.set(0);
        }
        self.skip.set(self.skip.get() & !FILTERED);
    }

    /// Whether code may start at positions with this green word.
    pub fn may_enter(&self, word: u64) -> bool {
        let (i, b) = Self::bit(word);
        self.entries[i].get() & b != 0
    }

    fn bit(word: u64) -> (usize, u64) {
        let h = Self::hash(word);
        (h >> 6, 1 << (h & 63))
    }

    #[inline(always)]
    fn hash(word: u64) -> usize {
        (word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize
    }

    fn set_skip(&self, n: u32) {
        self.skip.set(n | (self.skip.get() & FILTERED));
    }
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler::new()
    }
}

/// One word of the green values of a position that are cheap to read where
/// a portal decides whether to skip a visit (scalars, addresses of green
/// data), for its [`Sampler`]'s entry filter.
#[inline(always)]
pub fn green_word(greens: &[u64]) -> u64 {
    // Independent rotations, so that the words combine in parallel; the
    // filter's multiply mixes them.
    greens.iter().enumerate().fold(0u64, |w, (i, &g)| w ^ g.rotate_left(i as u32 * 23))
}

/// The longest run of visits a portal samples with one: after a visit gets
/// [`Hot::Cold`], a portal skips up to `sample_period - 1` visits (no
/// hashing, no counting; see [`skip_after_cold`]), and the visit after them
/// counts for them ([`PortalCache::visit_weighted`]; [`PortalCache::visit`]
/// counts each visit as a full period). Code that is not hot yet runs nearly
/// at the plain interpreter's speed. A quarter of the threshold, so that a
/// key is sampled at least four times before it gets hot: 250 at the
/// default threshold, at most 256; thresholds below 8 (tests, small
/// `JITGEN_THRESHOLD`s) count every visit.
///
/// A counted visit costs about 30 ns (the key built and hashed, a map
/// lookup, branches the interpreter loop rarely takes): sampling one visit
/// in 62, TLC's interpreter loop ran at 1.2x its plain time; one in 250,
/// at 1.07x (factorial(3e6), a threshold never reached, one pinned core).
#[inline]
pub fn sample_period(threshold: u32) -> u32 {
    (threshold / 4).clamp(1, 256)
}

impl<K: Hash + Eq + Clone> PortalCache<K> {
    /// Counts one iteration at `key` (as [`sample_period`] visits) and says
    /// what to do under `policy` (a bare threshold, or a [`HotPolicy`]).
    #[inline]
    pub fn visit(&mut self, key: &K, content: &[&[u8]], policy: impl Into<HotPolicy>) -> Hot {
        let policy = policy.into();
        self.visit_weighted(key, content, policy, sample_period(policy.threshold))
    }

    /// Counts `weight` iterations at `key`: the visit that reaches the hook
    /// stands for itself and the visits the portal skipped before it (a
    /// visit right after residual code ran, or after a declined key's skips,
    /// stands for itself only: weighting it as a sample would count the
    /// first merge point of a program that runs residual code once per call
    /// a sample period at each call).
    #[inline]
    pub fn visit_weighted(&mut self, key: &K, content: &[&[u8]], policy: HotPolicy, weight: u32) -> Hot {
        let HotPolicy { threshold, warmup } = policy;
        let weight = weight.max(1);
        if !self.stale.is_empty() {
            if let Some(hot) = self.revive(key, content) {
                return hot;
            }
        }
        let compiled = self.keys.len() - self.counting;
        let expected_compile = self.expected_compile;
        let epoch = &mut self.epoch;
        match self.keys.get_mut(key) {
            Some(Entry::Counting(n, warm_at)) => {
                let before = *n;
                *n = n.saturating_add(weight);
                if *n <= threshold || compiled >= MAX_ENTRIES {
                    return Hot::Cold;
                }
                if !warmup {
                    return Hot::Compile;
                }
                if *warm_at == 0 {
                    *warm_at = now_micros(epoch);
                    return Hot::Cold;
                }
                // The clock is read once per `threshold` counts.
                let check = *n / threshold.max(1) != before / threshold.max(1);
                let budget = (expected_compile * WARMUP_FACTOR).as_micros() as u64;
                if check && u64::from(now_micros(epoch).wrapping_sub(*warm_at)) >= budget {
                    Hot::Compile
                } else {
                    Hot::Cold
                }
            }
            Some(Entry::Compiled(c)) if same_content(&c.content, content) => {
                c.runs = c.runs.saturating_add(1);
                Hot::Run(c.code.clone())
            }
            // Declined code stays declined, whatever the content: no need to
            // compare it at every merge point.
            Some(Entry::Declined(k)) => Hot::Declined(*k),
            Some(e) => {
                // The green data changed under the same address: counted
                // afresh, the code kept for the content it was compiled for.
                let (fresh, hot) = first_count(weight, policy, epoch);
                if let Entry::Compiled(c) = std::mem::replace(e, fresh) {
                    let versions = self.stale.entry(key.clone()).or_default();
                    if versions.len() == STALE_VERSIONS {
                        versions.remove(0);
                    }
                    versions.push(c);
                }
                self.counting += 1;
                hot
            }
            // A program whose green state never repeats: stop compiling
            // (and counting).
            None if compiled >= MAX_ENTRIES => Hot::Cold,
            None => {
                if self.counting >= MAX_COUNTERS {
                    // Bounded memory for counters too: start counting afresh.
                    self.keys.retain(|_, e| !matches!(e, Entry::Counting(..)));
                    self.counting = 0;
                }
                let (fresh, hot) = first_count(weight, policy, &mut self.epoch);
                self.keys.insert(key.clone(), fresh);
                self.counting += 1;
                hot
            }
        }
    }

    /// The code kept for `key` and this content, made the key's code again
    /// (its code for other content kept in its place), unless the key's
    /// code is for this content already. A declined key stays declined.
    #[inline(never)]
    fn revive(&mut self, key: &K, content: &[&[u8]]) -> Option<Hot> {
        let versions = self.stale.get_mut(key)?;
        let current = self.keys.get_mut(key)?;
        match current {
            Entry::Compiled(c) if same_content(&c.content, content) => return None,
            Entry::Declined(..) => return None,
            Entry::Compiled(..) | Entry::Counting(..) => {}
        }
        let i = versions.iter().position(|c| same_content(&c.content, content))?;
        let mut c = versions.remove(i);
        c.runs = c.runs.saturating_add(1);
        let code = c.code.clone();
        match std::mem::replace(current, Entry::Compiled(c)) {
            Entry::Compiled(other) => versions.push(other),
            Entry::Counting(..) => self.counting -= 1,
            // Not reached: declined keys return above.
            Entry::Declined(..) => {}
        }
        if versions.is_empty() {
            self.stale.remove(key);
        }
        Some(Hot::Run(code))
    }

    /// Whether `key` has code: the only keys whose visits compare the content
    /// of green data (see [`PortalSite::has_code`]). Code kept for other
    /// content counts: a visit must bring the content for it to be found
    /// again.
    pub fn has_code(&self, key: &K) -> bool {
        matches!(self.keys.get(key), Some(Entry::Compiled(_))) || self.stale.contains_key(key)
    }

    /// Records the outcome of a compilation for `key` (the content is copied now).
    ///
    /// New code cools the keys that are warm (waiting for their warm-up):
    /// their counts start again from 0, their warm-up clock kept. They got
    /// warm while the loop just compiled was interpreted, most often, and
    /// are its other merge points: from now on the interpreter visits them
    /// only on its way into that code (once per call of a function whose
    /// loop is compiled), and compiling them too would make a second copy
    /// of the loop. A key of another hot loop earns its threshold again
    /// within a threshold's visits and then compiles at once if its warm-up
    /// is over. (Under an exact threshold no key is ever warm.)
    pub fn insert(&mut self, key: K, content: &[&[u8]], code: Option<ResidualFn>) {
        let content = content.iter().map(|c| c.to_vec()).collect();
        let e = match code {
            Some(code) => {
                for e in self.keys.values_mut() {
                    if let Entry::Counting(n, warm_at) = e {
                        if *warm_at != 0 {
                            *n = 0;
                        }
                    }
                }
                Entry::Compiled(Box::new(Compiled { code, content, runs: 0, handovers: 0 }))
            }
            None => Entry::Declined(DeclineKind::Construct),
        };
        if let Some(Entry::Counting(..)) = self.keys.insert(key, e) {
            self.counting -= 1;
        }
    }

    /// Makes `new` the code of `key` where `old` is (see
    /// [`ResidualFn::fuse_pieces`]).
    pub fn replace_code(&mut self, key: &K, old: &ResidualFn, new: ResidualFn) {
        if let Some(Entry::Compiled(c)) = self.keys.get_mut(key) {
            if c.code.same_code(old) {
                c.code = new;
            }
        }
    }

    /// Records that the compilation of `key` was declined, and why.
    pub fn insert_declined(&mut self, key: K, why: &str) {
        let e = Entry::Declined(decline_kind(why));
        if let Some(Entry::Counting(..)) = self.keys.insert(key, e) {
            self.counting -= 1;
        }
    }

    /// Records how long a compilation took: the warm-up of later keys waits
    /// for [`WARMUP_FACTOR`] times the mean of this and the previous
    /// expectation.
    pub fn compiled_in(&mut self, took: std::time::Duration) {
        self.expected_compile = (self.expected_compile + took) / 2;
    }

    /// Records that the code of `key` handed over to the interpreter. Code
    /// that keeps doing so (at least [`RETIRE_AFTER`] hand-overs, in more than
    /// half of its runs: its switches are full of other values) is retired:
    /// the key is interpreted from then on. Returns whether it was retired.
    pub fn handed_over(&mut self, key: &K) -> bool {
        let Some(e) = self.keys.get_mut(key) else { return false };
        let Entry::Compiled(c) = e else { return false };
        c.handovers = c.handovers.saturating_add(1);
        if c.handovers >= RETIRE_AFTER && c.handovers * 2 > c.runs {
            *e = Entry::Declined(DeclineKind::Positional);
            return true;
        }
        false
    }

    /// Whether any key has code.
    pub fn has_any_code(&self) -> bool {
        self.keys.values().any(|e| matches!(e, Entry::Compiled(_)))
    }

    /// The listings (with their flexswitch cases) of the code compiled so far.
    pub fn listings(&self) -> Vec<String> {
        self.keys
            .values()
            .filter_map(|e| match e {
                Entry::Compiled(c) => Some(c.code.listing_with_cases()),
                Entry::Counting(..) | Entry::Declined { .. } => None,
            })
            .collect()
    }

    /// Keys being counted (not compiled yet).
    pub fn counters(&self) -> usize {
        self.counting
    }

    /// Compiled (or declined) keys.
    pub fn len(&self) -> usize {
        self.keys.len() - self.counting
    }

    /// Whether nothing was compiled yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One portal's run-time state, as its hook sees it: the thread-local code
/// cache and sampler, and the module's settings and counters. The hook is
/// generated; the hot-spot policy it follows is these methods.
pub struct PortalSite<K: 'static> {
    /// The code cache per position key (this thread's).
    pub cache: &'static std::thread::LocalKey<std::cell::RefCell<PortalCache<K>>>,
    /// Which visits to skip (this thread's).
    pub sampler: &'static std::thread::LocalKey<Sampler>,
    /// The module's settings.
    pub config: &'static Config,
    /// The module's counters.
    pub stats: &'static Stats,
    /// The interpreter has saved frames here (a position inside a called
    /// function of the interpreted program): its visits count toward
    /// compiling at `1 / NESTED_THRESHOLD_FACTOR` of the rate, so that a loop
    /// calling a function compiles from the loop, with the call inside it,
    /// before the function compiles alone (code entered in the function
    /// hands over to the interpreter at each return below its entry).
    pub nested: bool,
}

/// How long code entered with saved frames runs before its hand-over is
/// worth it: a hand-over runs the interpreter in execute mode up to its next
/// merge point, some microseconds (see [`PortalSite::handed_over`]).
pub const WORTH_A_HAND_OVER: std::time::Duration = std::time::Duration::from_micros(100);

/// How many times the threshold a position with saved frames waits (see
/// [`PortalSite::nested`]).
pub const NESTED_THRESHOLD_FACTOR: u32 = 4;

impl<K: Hash + Eq + Clone> PortalSite<K> {
    /// Counts a visit of the merge point at `key`, for the visits skipped
    /// before it too, and says whether to compile or run (`Some`) or to keep
    /// interpreting (`None`: the next visits are skipped, see [`Sampler`]).
    pub fn visit(&self, key: &K, content: &[&[u8]]) -> Option<Hot> {
        if self.nested && self.stats.recursion_seen() {
            // Saved frames here, and a recursion whose frames cannot be
            // spilled was seen: the entry would decline, so this visit
            // declines without counting towards it (a short recursive run
            // in a fresh thread gives the hook up before any key is hot).
            self.sampler.with(|s| s.declined(DeclineKind::Recursion));
            return None;
        }
        let mut policy = self.config.hot_policy();
        if self.nested {
            policy.threshold = policy.threshold.saturating_mul(NESTED_THRESHOLD_FACTOR);
        }
        let weight = self.sampler.with(|s| s.take_weight());
        let per_key = self.stats.compile_per_key();
        let hot = self.cache.with(|c| {
            let mut c = c.borrow_mut();
            // What compiling a key costs this module, its flexswitch cases
            // included (a recursion's continuations compile as cases).
            if let Some(d) = per_key {
                c.expected_compile = c.expected_compile.max(d);
            }
            c.visit_weighted(key, content, policy, weight)
        });
        match hot {
            Hot::Cold => {
                // The next visits go uncounted; the one after them counts for them.
                self.sampler.with(|s| s.cold(policy.threshold));
                None
            }
            Hot::Declined(kind) => {
                self.sampler.with(|s| s.declined(kind));
                None
            }
            Hot::Compile | Hot::Run(_) => {
                self.sampler.with(|s| s.ran());
                Some(hot)
            }
        }
    }

    /// Whether `key` has code in this thread. A visit of a key without code
    /// reads no content, so a portal whose content is costly to take (the
    /// bytes of a deep program, taken once per call: a Rust-recursive
    /// interpreter calls its portal once per call of the interpreted
    /// program) takes it only for keys with code, and once it compiles.
    pub fn has_code(&self, key: &K) -> bool {
        self.cache.with(|c| c.borrow().has_code(key))
    }

    /// The code to run for `hot` (what [`PortalSite::visit`] said): the cached
    /// code, or a new compilation by `compile` of the residual code's inputs
    /// `words`, timed and recorded in the cache, declined (`None`) or not.
    /// `entry_word` is the position's [`green_word`], which the sampler lets
    /// through once code starts there.
    pub fn code(
        &self,
        hot: Hot,
        key: K,
        content: &[&[u8]],
        words: &[u64],
        compile: &mut dyn FnMut(&[u64]) -> Result<ResidualFn, String>,
        entry_word: &dyn Fn() -> u64,
    ) -> Option<ResidualFn> {
        let code = match hot {
            Hot::Cold | Hot::Declined { .. } => return None,
            Hot::Run(code) => {
                // Its word may have been cleared by a declined key sharing it.
                self.sampler.with(|s| s.add_entry(entry_word()));
                // Pieces compiled since it last ran are fused into it, once
                // it has run long enough.
                // (What compiling costs is read only where the clock is.)
                let per_op = || self.stats.nanos_per_op().unwrap_or(NANOS_PER_OP);
                match code.fuse_pieces(self.config.fusion_patience(), per_op) {
                    Fusion::Fused(fused, took) => {
                        self.stats.fused(took.as_nanos() as u64);
                        self.cache.with(|c| c.borrow_mut().replace_code(&key, &code, fused.clone()));
                        fused
                    }
                    Fusion::Postponed => {
                        self.stats.fusion_postponed();
                        code
                    }
                    Fusion::Nothing => code,
                }
            }
            Hot::Compile => {
                let t = std::time::Instant::now();
                let r = compile(words);
                let took = t.elapsed();
                self.stats.compiled(r.as_ref().ok().map(|f| f.op_count()), took.as_nanos() as u64);
                self.cache.with(|c| c.borrow_mut().compiled_in(took));
                if let Err(why) = &r {
                    self.stats.declined_because(why);
                }
                match r {
                    Ok(code) => {
                        self.sampler.with(|s| s.add_entry(entry_word()));
                        self.cache.with(|c| c.borrow_mut().insert(key, content, Some(code.clone())));
                        code
                    }
                    Err(why) => {
                        self.cache.with(|c| c.borrow_mut().insert_declined(key, &why));
                        return None;
                    }
                }
            }
        };
        self.stats.entered();
        Some(code)
    }

    /// Records that the code of `key` handed over to the interpreter (see
    /// [`PortalCache::handed_over`]) after running for `ran` (measured where
    /// the interpreter has saved frames). Code entered with saved frames
    /// hands over at its return below its entry: where recursion compiles,
    /// that is how code running a whole call of the interpreted program
    /// ends, and only a hand-over after less than [`WORTH_A_HAND_OVER`]
    /// counts toward retiring it (the harness's `fib_recursive`, run again
    /// and again in one thread, retired its code after 64 runs and was
    /// interpreted from then on, at 2.2x the interpreter's time).
    pub fn handed_over(&self, key: &K, ran: Option<std::time::Duration>) {
        if self.nested && ran.is_some_and(|d| d >= WORTH_A_HAND_OVER) {
            return;
        }
        if self.cache.with(|c| c.borrow_mut().handed_over(key)) {
            self.stats.declined_because("residual code retired: it kept handing over to the interpreter");
            if !self.cache.with(|c| c.borrow().has_any_code()) {
                // No code left: visits need not consult the entry filter.
                self.sampler.with(|s| s.forget_entries());
            }
        }
    }
}

/// The bytes of a slice of plain values, for content checks.
pub fn content_bytes<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: any initialized memory can be viewed as bytes; T: Copy has no
    // interior pointers to own. Padding bytes would be uninitialized, so this
    // is only called for integer, bool, char and float element types.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}
