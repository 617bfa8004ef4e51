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
//! itself and the visits skipped before it (`PortalCache::visit_weighted`). Under the
//! default policy, skips of `TICKED_SKIPS` (32) or more last until the next tick of the
//! sampling clock instead (`portal::ticker`: a visit then tests its module's count of
//! raised flags, a static of the interpreter's crate, and stores nothing), and the visit
//! after the tick counts for the visits of the wait at
//! the pace of the `CALIBRATION` (64) visits counted after the tick
//! (`Sampler::take_weight`). A key a tick's sample makes warm is warm since the portal
//! call under way began (`warm_since`): ticks land on a loop's keys one after another,
//! and a key's own warm-up would wait for a tick to land on it again. Where the thread
//! has code, or under an explicit threshold, visits are counted (the flag stays
//! raised) and each key's warm-up is its own. The skips
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
//! to `MAX_SKIP` = 256). Under the default policy a thread's first visit waits for the
//! clock's next tick instead of going to the hook (`Sampler::ask`), so that a run
//! shorter than a tick builds no key map and counts no ramp of cold visits (about 1 µs
//! of a fresh thread's first call; PERFORMANCE.md). Two mistakes this design
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
//! dispatch paying the entry filter. A per-visit countdown alone cost a small dispatch loop a
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
//! compile times bounds that loss; the time counted is the interpreter's (`Clock`: not
//! the time in compiled code, nor compiling, nor outside the portal's calls), since
//! compiling saves only that. When counted visits were sampled once in 62, short runs
//! cost 1.2-1.45x and factorial(160,000) 1.4-1.9x. The cost of the warm-up: a long run
//! compiles later than it could.
//!
//! *Compiling beside the interpreter.* Under the default policy, a key that compiles runs
//! its generating extension on the interpreter's thread (it reads the interpreter's green
//! data), then hands the residual function to the compiler's thread (`run::background`)
//! and interprets on: the visit returns `None` and the key is pending
//! (`PortalCache::insert_pending`). The compiler's thread raises the thread's sampling
//! flag when the machine code is ready, and the next visit that reaches the hook installs
//! it (`PortalCache::install_ready`: the key's code, its word in the entry filter, the
//! compilation counted with both threads' time); that visit counts for itself only, as
//! visits do once a thread has code. While a key is pending no other key compiles (the
//! loop being compiled would make its other keys hot meanwhile), and a key that gets warm
//! then is warm from that moment, not from the call's start. So the thread pays only for
//! recording (about half of a root's compile time, PERFORMANCE.md), and later warm-ups
//! wait `WARMUP_FACTOR` times that. The first waits for `EXPECTED_COMPILE` still: what
//! recording costs varies too much by interpreter (0.3-0.6 ms for TLC's loops, 5 ms for
//! the stack VM's recursion) for a smaller guess to bound what a run pays. An explicit
//! threshold, `JITGEN_BACKGROUND=0`, flexswitch cases and fusions compile on the
//! interpreter's thread, which waits.
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
use std::hash::Hash;

use crate::ir::builder::ResidualFunction;
use crate::portal::slow::Verdict;
use crate::run::background::Ticket;
use crate::run::fusion::Fusion;
use crate::run::residual::{ResidualFn, SubmitFn};

pub use crate::portal::config::*;
pub use crate::portal::sampler::*;
pub use crate::portal::slow::{
    CallKind, TurnClock, TurnVerdict, FIRST_TURNS, MEASURED_SPAN, MEASURED_VISITS, TURNS_GROWTH, TURN_SLOWER, TURN_SPAN,
};
pub use crate::portal::ticker::DueCount;
use crate::run::fusion::NANOS_PER_FUSED_OP;
pub use crate::run::stats::{Stats, StatsSnapshot};

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
    /// The code's turn checks, where it makes any (`portal::slow`).
    turns: TurnClock,
}

/// A key whose residual function the compiler's thread is compiling
/// (`run::background`), with the content of its green data then, its
/// position's [`green_word`] and what recording it took this thread.
struct Pending<K> {
    key: K,
    content: Vec<Vec<u8>>,
    ticket: Ticket,
    word: u64,
    recorded_in: std::time::Duration,
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

/// The entry of a key counted for the first time, and what to do.
fn first_count(
    weight: u32,
    policy: HotPolicy,
    clock: &Clock,
    call_began: Option<std::time::Instant>,
    budget: u64,
) -> (Entry, Hot) {
    let past = weight > policy.threshold;
    let warm_at = if past && policy.warmup { warm_since(call_began, clock) } else { 0 };
    let hot = if past && (!policy.warmup || warmed_up(warm_at, clock, budget)) { Hot::Compile } else { Hot::Cold };
    (Entry::Counting(weight, warm_at), hot)
}

/// Whether a key warm since `warm_at` has waited its warm-up, `budget`
/// microseconds of the cache's clock.
fn warmed_up(warm_at: u32, clock: &Clock, budget: u64) -> bool {
    u64::from(clock.now_micros().wrapping_sub(warm_at)) >= budget
}

/// When a key getting warm now is warm since, in microseconds of the
/// cache's clock: now, or for a key made warm by a visit after a tick of the
/// sampling clock, when the portal call under way began (`call_began`). The
/// warm-up bounds what compiling costs a run against how long it has run.
/// Keys sampled at ticks are first seen one tick after another, a key past
/// the threshold after its first tick: with a warm-up from then, a key
/// waited for a later tick to land on it again. Not from the thread's first
/// visit: a VM made afresh for each run has new keys in each, and compiled
/// them all at once in every run (5.5x plain). Not for keys counted visit by
/// visit (a thread with code samples so): warm since the call began, keys
/// that the interpreter visits only between entries into code compiled at
/// once, TLC's recursive fib(32) 4-5 times instead of 3. A key getting
/// warm also starts the compiler's thread and its warm-up (`run::background::prewarm`, once per
/// process).
fn warm_since(call_began: Option<std::time::Instant>, clock: &Clock) -> u32 {
    crate::run::background::prewarm();
    let now = clock.now_micros();
    match call_began {
        Some(t) => now.saturating_sub(t.elapsed().as_micros() as u32).max(1),
        None => now,
    }
}

/// A portal cache's clock of warm-ups: the time its thread has spent
/// interpreting in outermost calls of the portal, without the time spent in
/// the portal's compiled code and in compiling.
///
/// A key warms while the interpreter runs it: compiling the key saves
/// nothing of the time spent in compiled code, nor of the time the thread
/// spends outside the portal, so neither counts toward its warm-up. On the
/// wall's clock, a position that each call interprets briefly before it
/// enters code warmed up while the code ran, and in time compiled a second
/// root of the same program, with all its cases again (PERFORMANCE.md).
struct Clock {
    /// The time of the outermost calls that ended.
    spent: std::time::Duration,
    /// When the outermost call under way began, as a visit saw it.
    call: Option<std::time::Instant>,
    /// Time in compiled code (outermost entries that returned) and
    /// compiling, within the calls.
    away: std::time::Duration,
    /// When the outermost entry into compiled code under way began.
    in_code: Option<std::time::Instant>,
    /// Entries into compiled code under way (a portal recursing in Rust
    /// enters code inside code).
    depth: u32,
}

impl Clock {
    const fn new() -> Clock {
        Clock { spent: std::time::Duration::ZERO, call: None, away: std::time::Duration::ZERO, in_code: None, depth: 0 }
    }

    /// Microseconds of the clock, never 0, never going back (but that it
    /// wraps after about 71 minutes: a warm key then waits its budget
    /// again).
    fn now_micros(&self) -> u32 {
        let since = |t: Option<std::time::Instant>| t.map_or(std::time::Duration::ZERO, |t| t.elapsed());
        let away = self.away + since(self.in_code);
        ((self.spent + since(self.call)).saturating_sub(away).as_micros() as u32).max(1)
    }

    /// The time spent in compiled code (and compiling) within calls so far.
    fn code_time(&self) -> std::time::Duration {
        self.away + self.in_code.map_or(std::time::Duration::ZERO, |t| t.elapsed())
    }

    /// `took` went to compiling, inside a call.
    fn compiled(&mut self, took: std::time::Duration) {
        if self.call.is_some() {
            self.away += took;
        }
    }
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
    /// The clock of warm-ups.
    clock: Clock,
    /// When the portal call under way began, as its site says before a
    /// visit (see `warm_since`).
    pub call_began: Option<std::time::Instant>,
    /// Keys the portal call under way entered (see `portal::slow`).
    entered: Vec<K>,
    /// Keys that calls starting at a position (its green word) entered.
    entered_from: FxHashMap<u64, Vec<K>>,
    /// The key being compiled on the compiler's thread, if any: no other
    /// key compiles meanwhile (see [`PortalCache::install_ready`]).
    pending: Option<Box<Pending<K>>>,
    /// Code just retired by its turn checks: its time per turn, the
    /// interpreter's, and how many keys (see [`PortalCache::take_turn_retired`]).
    turn_retired: Option<(std::time::Duration, std::time::Duration, usize)>,
    /// The key whose code is being measured against the interpreter.
    measuring_key: Option<K>,
}

/// The most keys kept per position in [`PortalCache`]'s record of what calls
/// starting there entered.
const ENTERED_KEYS: usize = 16;

impl<K> PortalCache<K> {
    /// An empty cache (a `const fn`: portals keep theirs in a thread-local
    /// initialized without a run-time check).
    pub const fn new() -> Self {
        PortalCache {
            keys: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            counting: 0,
            stale: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            expected_compile: EXPECTED_COMPILE,
            clock: Clock::new(),
            call_began: None,
            entered: Vec::new(),
            entered_from: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            pending: None,
            turn_retired: None,
            measuring_key: None,
        }
    }
}

impl<K: Hash + Eq + Clone> Default for PortalCache<K> {
    fn default() -> Self {
        PortalCache::new()
    }
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
        match self.visit_counted(key, content, policy, weight) {
            // One compilation at a time: the loop of the key being compiled
            // would make others of its keys hot meanwhile.
            Hot::Compile if self.pending.is_some() => Hot::Cold,
            hot => hot,
        }
    }

    #[inline]
    fn visit_counted(&mut self, key: &K, content: &[&[u8]], policy: HotPolicy, weight: u32) -> Hot {
        let HotPolicy { threshold, warmup } = policy;
        let weight = weight.max(1);
        if !self.stale.is_empty() {
            if let Some(hot) = self.revive(key, content) {
                return hot;
            }
        }
        let compiled = self.keys.len() - self.counting;
        let budget = (self.expected_compile * WARMUP_FACTOR).as_micros() as u64;
        let clock = &self.clock;
        // A key warm while another compiles on the compiler's thread is
        // warm from now: the thread is about to have code, and keys are
        // then warm by their own visits (see `warm_since`).
        let call_began = if self.pending.is_some() { None } else { self.call_began };
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
                    *warm_at = warm_since(call_began, clock);
                }
                // The clock is read once per `threshold` counts.
                let check = *n / threshold.max(1) != before / threshold.max(1);
                if check && warmed_up(*warm_at, clock, budget) {
                    Hot::Compile
                } else {
                    Hot::Cold
                }
            }
            Some(Entry::Compiled(c)) if same_content(&c.content, content) => {
                if c.turns.measuring() {
                    // Interpreted while the sampler measures it.
                    return Hot::Cold;
                }
                c.runs = c.runs.saturating_add(1);
                Hot::Run(c.code.clone())
            }
            // Declined code stays declined, whatever the content: no need to
            // compare it at every merge point.
            Some(Entry::Declined(k)) => Hot::Declined(*k),
            Some(e) => {
                // The green data changed under the same address: counted
                // afresh, the code kept for the content it was compiled for.
                let (fresh, hot) = first_count(weight, policy, clock, call_began, budget);
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
                let (fresh, hot) = first_count(weight, policy, &self.clock, call_began, budget);
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
        self.insert_owned(key, content, code)
    }

    fn insert_owned(&mut self, key: K, content: Vec<Vec<u8>>, code: Option<ResidualFn>) {
        let e = match code {
            Some(code) => {
                self.cool_warm_keys();
                Entry::Compiled(Box::new(Compiled {
                    code,
                    content,
                    runs: 0,
                    handovers: 0,
                    turns: TurnClock::default(),
                }))
            }
            None => Entry::Declined(DeclineKind::Construct),
        };
        if let Some(Entry::Counting(..)) = self.keys.insert(key, e) {
            self.counting -= 1;
        }
    }

    /// Restarts the counts of the keys that are warm (see
    /// [`PortalCache::insert`]).
    fn cool_warm_keys(&mut self) {
        for e in self.keys.values_mut() {
            if let Entry::Counting(n, warm_at) = e {
                if *warm_at != 0 {
                    *n = 0;
                }
            }
        }
    }

    /// Records that `key`'s residual function, recorded by this thread in
    /// `recorded_in`, is being compiled on the compiler's thread (`ticket`):
    /// the key keeps being interpreted until a visit finds its code ready
    /// ([`PortalCache::install_ready`]). Keys that are warm cool, as for
    /// new code.
    pub fn insert_pending(
        &mut self,
        key: K,
        content: &[&[u8]],
        ticket: Ticket,
        word: u64,
        recorded_in: std::time::Duration,
    ) {
        self.cool_warm_keys();
        let content = content.iter().map(|c| c.to_vec()).collect();
        self.pending = Some(Box::new(Pending { key, content, ticket, word, recorded_in }));
    }

    /// Whether a key is being compiled on the compiler's thread.
    #[inline]
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Installs the code of the pending key if the compiler's thread is
    /// done with it, recording the compilation in `stats` (its time: what
    /// recording took this thread and what compiling took the other).
    /// Returns the position's green word if the key has code now, for the
    /// entry filter.
    pub fn install_ready(&mut self, stats: &Stats) -> Option<u64> {
        let p = self.pending.take()?;
        let Pending { key, content, ticket, word, recorded_in } = *p;
        let (code, took) = match ticket.take() {
            Ok(done) => done,
            Err(ticket) => {
                self.pending = Some(Box::new(Pending { key, content, ticket, word, recorded_in }));
                return None;
            }
        };
        let ops = code.as_ref().ok().map(|f| f.op_count());
        stats.compiled(ops, (recorded_in + took).as_nanos() as u64);
        stats.compiled_elsewhere(took.as_nanos() as u64);
        match code {
            Ok(code) => {
                code.note_birth(stats.compile_nanos());
                code.fuse_elsewhere(crate::run::background::submit_fusion);
                self.insert_owned(key, content, Some(code));
                Some(word)
            }
            Err(e) => {
                let why = e.to_string();
                stats.declined_because(&why);
                self.insert_declined(key, &why);
                None
            }
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
        self.clock.compiled(took);
    }

    /// The outermost portal call under way began at `began` (none outside
    /// a call): its site says so before each visit. The cache's clock of
    /// warm-ups runs inside such calls only (see `Clock`).
    pub fn in_call(&mut self, began: Option<std::time::Instant>) {
        self.clock.call = began;
    }

    /// A fusion took `took`: time away from interpreting.
    pub fn fused_in(&mut self, took: std::time::Duration) {
        self.clock.compiled(took);
    }

    /// Compiled code is entered (in a call): its time, from the outermost
    /// entry to its return ([`PortalCache::left_code`]), does not count
    /// toward warm-ups.
    pub fn entering_code(&mut self) {
        self.clock.depth += 1;
        if self.clock.depth == 1 && self.clock.call.is_some() {
            self.clock.in_code = Some(std::time::Instant::now());
        }
    }

    /// Compiled code entered by [`PortalCache::entering_code`] returned;
    /// whether no code of the portal runs any more.
    pub fn left_code(&mut self) -> bool {
        self.clock.depth = self.clock.depth.saturating_sub(1);
        if self.clock.depth == 0 {
            if let Some(t) = self.clock.in_code.take() {
                self.clock.away += t.elapsed();
            }
        }
        self.clock.depth == 0
    }

    /// Records that the code of `key` handed over to the interpreter. Code
    /// that keeps doing so (at least [`RETIRE_AFTER`] hand-overs, in more than
    /// half of its runs: its switches are full of other values) is retired:
    /// the key is interpreted from then on. Returns whether it was retired.
    pub fn handed_over(&mut self, key: &K) -> bool {
        let Some(e) = self.keys.get_mut(key) else { return false };
        let Entry::Compiled(c) = e else { return false };
        c.handovers = c.handovers.saturating_add(1);
        c.handovers >= RETIRE_AFTER && c.handovers * 2 > c.runs && self.retire(key)
    }

    /// The code of `key` is entered, `compiled` nanoseconds having been
    /// spent compiling so far: a count of its turn checks is armed if it
    /// makes any and none is (see [`TurnClock`]).
    pub fn entering_turns(&mut self, key: &K, compiled: u64, word: u64, first: u32) {
        let code_time = self.clock.code_time();
        if let Some(Entry::Compiled(c)) = self.keys.get_mut(key) {
            if let Some(counter) = c.code.turns() {
                c.turns.word = word;
                c.turns.enter(counter, code_time, compiled, i64::from(first));
            }
        }
    }

    /// Whether the code of `key` handed over because its turn checks ran
    /// their count out (see [`TurnClock::ran_out`]): then the hand-over is
    /// not one that counts toward retiring the code, and where the key is
    /// to be measured now, its green word is inside.
    pub fn turns_ran_out(&mut self, key: &K, compiled: u64) -> Option<Option<u64>> {
        let code_time = self.clock.code_time();
        let Some(Entry::Compiled(c)) = self.keys.get_mut(key) else { return None };
        let counter = c.code.turns().filter(|t| t.ran_out())?;
        c.turns.ran_out(counter, code_time, compiled);
        if !c.turns.measuring() {
            return Some(None);
        }
        let word = c.turns.word;
        if let Some(old) = self.measuring_key.replace(key.clone()) {
            // One key is measured at a time.
            if let Some(Entry::Compiled(c)) = self.keys.get_mut(&old) {
                c.turns.abandon();
            }
        }
        Some(Some(word))
    }

    /// The interpreter's measure of the key whose code ran its turns out
    /// (see [`TurnClock::measured`]): `visits` of its word in `took`.
    pub fn measured(&mut self, visits: u32, took: std::time::Duration) {
        let Some(key) = self.measuring_key.take() else { return };
        let Some(Entry::Compiled(c)) = self.keys.get_mut(&key) else { return };
        let Some(counter) = c.code.turns() else { return };
        let verdict = c.turns.measured(counter, visits, took);
        let counter: *const crate::ir::function::TurnCounter = counter;
        if let TurnVerdict::Retire { compiled, interpreted } = verdict {
            // Every key whose code counts its turns with this counter (this
            // one too): the trees rooted at the position, measured together.
            let sharing: Vec<K> = self
                .keys
                .iter()
                .filter(|(_, e)| {
                    matches!(e, Entry::Compiled(c) if c.code.turns().is_some_and(|t| std::ptr::eq(t, counter)))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for k in &sharing {
                self.retire(k);
            }
            self.turn_retired = Some((compiled, interpreted, sharing.len()));
        }
    }

    /// Code that its turn checks just retired: its time per turn, the
    /// interpreter's per visit of its key, and how many keys shared it.
    pub fn take_turn_retired(&mut self) -> Option<(std::time::Duration, std::time::Duration, usize)> {
        self.turn_retired.take()
    }

    /// Retires the code of `key`: the key is interpreted from then on
    /// (declined as positional). Whether it had code.
    fn retire(&mut self, key: &K) -> bool {
        match self.keys.get_mut(key) {
            Some(e @ Entry::Compiled(_)) => {
                *e = Entry::Declined(DeclineKind::Positional);
                true
            }
            _ => false,
        }
    }

    /// Records that the portal call under way entered the code of `key`.
    fn entered(&mut self, key: &K) {
        if self.entered.len() < ENTERED_KEYS && !self.entered.contains(key) {
            self.entered.push(key.clone());
        }
    }

    /// The outermost portal call ended, having started at the position
    /// `green` (if it got that far): the keys it entered are kept for it.
    fn call_ended(&mut self, green: Option<u64>) {
        if let Some(t) = self.clock.call.take() {
            self.clock.spent += t.elapsed();
            // (Code entered in the call returned before it ended.)
            self.clock.in_code = None;
        }
        let entered = std::mem::take(&mut self.entered);
        let Some(green) = green else { return };
        let keys = self.entered_from.entry(green).or_default();
        for k in entered {
            if keys.len() < ENTERED_KEYS && !keys.contains(&k) {
                keys.push(k);
            }
        }
    }

    /// Retires the code of every key that calls starting at `green`
    /// entered (see `portal::slow`): those keys are interpreted from then
    /// on. Returns how many had code.
    fn retire_from(&mut self, green: u64) -> usize {
        let keys = self.entered_from.remove(&green).unwrap_or_default();
        keys.iter().filter(|k| self.retire(k)).count()
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
        let installed = self.install_ready();
        if let Some((visits, took)) = self.sampler.with(|s| s.take_measured()) {
            self.cache.with(|c| c.borrow_mut().measured(visits, took));
            self.turn_retired();
        }
        match self.sampler.with(|s| s.call_mode()) {
            CallMode::Normal => {}
            // Interpreted on purpose until it shows the code clearly
            // faster; then it counts and enters as any call.
            CallMode::Interpreting if self.sampler.with(|s| s.interpreted_past_code()) => {}
            // Its budget for cases was spent, and interpreting earned room
            // back (`run::case_budget`).
            CallMode::Interpreting if self.sampler.with(|s| s.budget_back()) => {}
            // Timed as the interpreter's (`portal::slow`): nothing entered,
            // nothing counted.
            CallMode::Interpreting => {
                self.sampler.with(|s| s.cold(self.config.hot_policy().threshold));
                return None;
            }
            // Goes on without its hook (`Sampler::gives_up`).
            CallMode::Retired => return None,
        }
        // The rest of a call interpreted on purpose that showed its code
        // clearly faster enters code but compiles none (`Sampler::past_code`).
        if self.sampler.with(|s| s.past_code()) && !self.has_code(key) {
            self.sampler.with(|s| s.cold(self.config.hot_policy().threshold));
            return None;
        }
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
        // A visit after a tick of the sampling clock: a key it makes warm
        // is warm since the call began (see `warm_since`).
        let (weight, began, call) = self.sampler.with(|s| {
            let ticked = s.after_tick();
            (s.take_weight(), if ticked { s.call_began() } else { None }, s.call_began())
        });
        // The visit that installed code counts for itself only: from now on
        // the thread has code and counts its visits one by one.
        let (weight, began) = if installed { (1, None) } else { (weight, began) };
        let per_key = self.stats.compile_per_key();
        let hot = self.cache.with(|c| {
            let mut c = c.borrow_mut();
            // What compiling a key costs this module, its flexswitch cases
            // included (a recursion's continuations compile as cases).
            if let Some(d) = per_key {
                c.expected_compile = c.expected_compile.max(d);
            }
            c.call_began = began;
            c.in_call(call);
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

    /// Installs the code the compiler's thread compiled for this thread, if
    /// it is ready (see [`PortalCache::install_ready`]).
    #[inline]
    fn install_ready(&self) -> bool {
        let installed = self.cache.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_pending() {
                c.install_ready(self.stats)
            } else {
                None
            }
        });
        if let Some(word) = installed {
            self.sampler.with(|s| s.add_entry(word));
        }
        installed.is_some()
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
        compile: &mut dyn FnMut(&[u64]) -> Result<ResidualFunction, String>,
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
                let per_op = || self.stats.nanos_per_fused_op().unwrap_or(NANOS_PER_FUSED_OP);
                // Pieces that run slower than interpreting are fused now.
                let patience =
                    if self.sampler.with(|s| s.unfused_slower()) { 0 } else { self.config.fusion_patience() };
                // Fused on the compiler's thread where the code was compiled
                // there (`run::background`).
                let background = self.config.hot_policy().warmup && self.config.compiles_in_background();
                let submit = background.then_some(crate::run::background::submit_fusion as SubmitFn);
                match code.fuse_pieces(patience, per_op, || self.stats.compile_nanos(), submit) {
                    Fusion::Fused(fused, took, ops, elsewhere) => {
                        self.stats.fused_at(took, elsewhere, ops);
                        self.cache.with(|c| c.borrow_mut().fused_in(took));
                        self.cache.with(|c| c.borrow_mut().replace_code(&key, &code, fused.clone()));
                        fused
                    }
                    f @ (Fusion::Postponed | Fusion::Submitted) => {
                        if matches!(f, Fusion::Submitted) {
                            self.stats.submitted();
                        } else {
                            self.stats.fusion_postponed();
                        }
                        // Unfused code slower than interpreting fuses at
                        // once (patience 0), so the fusion is being compiled
                        // elsewhere: the call interprets until it is in.
                        if patience == 0 && self.sampler.with(|s| s.unfused_slower()) {
                            self.stats.waited_for_fusion();
                            self.sampler.with(|s| s.interpret_rest());
                            return None;
                        }
                        self.sampler.with(|s| s.unsettled_code());
                        code
                    }
                    Fusion::Nothing => code,
                }
            }
            Hot::Compile => {
                let t = std::time::Instant::now();
                let r = match compile(words) {
                    // Under the default policy, compiled on the compiler's
                    // thread while this one interprets (`run::background`).
                    Ok(f) if self.config.hot_policy().warmup && self.config.compiles_in_background() => {
                        match crate::run::background::submit(f, Box::new(crate::portal::ticker::waker())) {
                            Ok(ticket) => {
                                let took = t.elapsed();
                                self.stats.submitted();
                                self.cache.with(|c| {
                                    let mut c = c.borrow_mut();
                                    c.compiled_in(took);
                                    c.insert_pending(key, content, ticket, entry_word(), took);
                                });
                                return None;
                            }
                            Err(f) => crate::run::enter::native(Ok(f)),
                        }
                    }
                    r => crate::run::enter::native(r),
                };
                let took = t.elapsed();
                self.stats.compiled(r.as_ref().ok().map(|f| f.op_count()), took.as_nanos() as u64);
                self.cache.with(|c| c.borrow_mut().compiled_in(took));
                if let Err(why) = &r {
                    self.stats.declined_because(why);
                }
                match r {
                    Ok(code) => {
                        code.note_birth(self.stats.compile_nanos());
                        self.sampler.with(|s| s.add_entry(entry_word()));
                        self.cache.with(|c| c.borrow_mut().insert(key.clone(), content, Some(code.clone())));
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
        self.sampler.with(|s| s.entered_code());
        // The cases its misses compile are held to the call's budget
        // (`run::case_budget`; by default, under the default policy only).
        let call = self.sampler.with(|s| s.call_began());
        crate::run::case_budget::limit(self.config.case_budget(), call);
        if code.turns().is_some() {
            let compiled = self.stats.compile_nanos();
            let word = entry_word();
            let first = self.config.turn_checks();
            self.cache.with(|c| c.borrow_mut().entering_turns(&key, compiled, word, first));
        }
        self.cache.with(|c| c.borrow_mut().entered(&key));
        code.note_entry();
        Some(code)
    }

    /// A portal call ends (the generated code calls this as the call
    /// returns or unwinds), having taken `took` where it was the outermost
    /// one: its time goes into its position's tally, and code found slower
    /// than interpreting is retired (see `portal::slow`).
    pub fn call_ended(&self, took: Option<std::time::Duration>) {
        let work = self.stats.compile_work();
        // (A nested call is part of the outermost one's work.)
        let Some((green, kind)) = self.sampler.with(|s| s.end_call(work)) else { return };
        self.cache.with(|c| c.borrow_mut().call_ended(green));
        let (Some(green), Some(took)) = (green, took.filter(|_| !std::thread::panicking())) else { return };
        let Some(Verdict::Retire { compiled, interpreted }) = self.sampler.with(|s| s.record_call(green, kind, took))
        else {
            return;
        };
        let n = self.cache.with(|c| c.borrow_mut().retire_from(green));
        self.stats.retired_slow(n as u64);
        self.stats.declined_because(&format!(
            "residual code retired: calls entering it took {:.3} ms, interpreted {:.3} ms (medians); \
             {n} keys interpreted from now on",
            compiled.as_secs_f64() * 1e3,
            interpreted.as_secs_f64() * 1e3
        ));
        if !self.cache.with(|c| c.borrow().has_any_code()) {
            self.sampler.with(|s| s.forget_entries());
        }
    }

    /// Records code that its turn checks just retired, if any (see
    /// [`TurnClock`]): in the stats, and the entry filter forgotten where
    /// the portal has no code left.
    #[cold]
    fn turn_retired(&self) {
        let Some((compiled, interpreted, n)) = self.cache.with(|c| c.borrow_mut().take_turn_retired()) else { return };
        self.stats.retired_slow(n as u64);
        let rest = if self.sampler.with(|s| s.turn_retired_in_call(compiled, interpreted)) {
            "; the rest of the call, and later calls starting where it did, are interpreted without their hook"
        } else {
            ""
        };
        self.stats.declined_because(&format!(
            "residual code retired: it took {:.1} ns a turn through its entry, the interpreter {:.1} ns{rest}",
            compiled.as_secs_f64() * 1e9,
            interpreted.as_secs_f64() * 1e9
        ));
        if !self.cache.with(|c| c.borrow().has_any_code()) {
            self.sampler.with(|s| s.forget_entries());
        }
    }

    /// Compiled code is entered (see [`PortalCache::entering_code`]).
    pub fn entering_code(&self) {
        self.cache.with(|c| c.borrow_mut().entering_code())
    }

    /// Compiled code entered returned (see [`PortalCache::left_code`]).
    /// Where no code of the portal runs any more, the thread's misses are
    /// no longer held to a call's budget (`jit::specialize`'s are not).
    pub fn left_code(&self) {
        if self.cache.with(|c| c.borrow_mut().left_code()) {
            crate::run::case_budget::lift();
        }
    }

    /// Records that the code of `key` handed over to the interpreter (see
    /// [`PortalCache::handed_over`]) after running for `ran` (measured where
    /// the interpreter has saved frames). Code entered with saved frames
    /// hands over at its return below its entry: where recursion compiles,
    /// that is how code running a whole call of the interpreted program
    /// ends, and only a hand-over after less than [`WORTH_A_HAND_OVER`]
    /// counts toward retiring it (the harness's `fib_recursive`, run again
    /// and again in one thread, retired its code after 64 runs and was
    /// interpreted from then on, at 2.2x the interpreter's time). A
    /// hand-over of code whose turn checks ran out is none of these: the
    /// key is measured or the count armed again (`portal::slow::TurnClock`).
    pub fn handed_over(&self, key: &K, ran: Option<std::time::Duration>) {
        self.stats.parked();
        if crate::run::case_budget::take_exhausted() {
            // A miss past the call's budget for cases: not the code's
            // fault; the call interprets until the budget has room again
            // rather than entering the code again to hand over again at
            // once (`run::case_budget`).
            self.sampler.with(|s| s.interpret_until_budget());
            return;
        }
        let compiled = self.stats.compile_nanos();
        if let Some(measure) = self.cache.with(|c| c.borrow_mut().turns_ran_out(key, compiled)) {
            // Its turn checks ran their count out (see `TurnClock`).
            self.stats.turn_checked();
            if let Some(word) = measure {
                self.sampler.with(|s| s.measure(word));
            }
            return;
        }
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
