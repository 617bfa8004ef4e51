//! What a portal needs at run time: settings, counters, a cache of compiled
//! code per position key, and statistics.
//!
//! Each annotated module has one [`Config`] and one [`Stats`] (statics in the
//! generated code). The environment is read once per process:
//! `JITGEN_THRESHOLD=N` (0 compiles at first sight) and `JITGEN_OFF=1`
//! (interpret only); explicit settings through [`Config`] win over it.

use rustc_hash::FxHashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::residual::ResidualFn;
use crate::schedule::Limits;

/// The default hot-spot threshold: iterations of one position key before it compiles.
pub const DEFAULT_THRESHOLD: u32 = 1000;

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
            ..Limits::DEFAULT
        }
    }

    /// Iterations of a position key before it compiles (0: at first sight).
    pub fn set_threshold(&self, n: u32) {
        self.threshold.store(n, Ordering::Relaxed);
        self.explicit_threshold.store(true, Ordering::Relaxed);
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

    /// Records a flexswitch emitted into residual code.
    pub fn flexswitch_made(&self) {
        self.flexswitches.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a callback from a flexswitch into the compiler, and whether
    /// it produced a case.
    pub fn flexswitch_missed(&self, got_case: bool) {
        self.flexswitch_misses.fetch_add(1, Ordering::Relaxed);
        if got_case {
            self.flexswitch_cases.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a hand-over from residual code to the interpreter.
    pub fn resumed(&self) {
        self.resumptions.fetch_add(1, Ordering::Relaxed);
    }

    /// Records an entry into residual code.
    pub fn entered(&self) {
        self.entries.fetch_add(1, Ordering::Relaxed);
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
        }
    }
}

enum Entry {
    Compiled { code: ResidualFn, content: Vec<Vec<u8>>, runs: u32, handovers: u32 },
    Declined,
}

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
    /// retired). A portal may skip its next visits (see [`skip_after_declined`]).
    Declined,
    /// Compile now (then call [`PortalCache::insert`]).
    Compile,
    /// Run this code.
    Run(ResidualFn),
}

/// The longest run of merge point visits a portal skips after meeting a
/// declined key.
pub const MAX_SKIP: u32 = 64;

/// How many visits to skip after a visit met a declined key, given how many
/// were skipped last time (`0` after a visit met anything else): doubling up
/// to [`MAX_SKIP`]. Interpreting through code jitgen declined then costs a
/// counter decrement per merge point; a hot key elsewhere is noticed within
/// `MAX_SKIP` visits of it, counted once per visit that is not skipped.
#[inline]
pub fn skip_after_declined(last: u32) -> u32 {
    (last.max(1) * 2).min(MAX_SKIP)
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
/// a changed content recompiles. While a key is only being counted, the
/// content is not looked at.
///
/// The cold path is what an interpreted merge point pays: a key first counts
/// in a small direct-mapped table of buckets (a hash, an increment, a
/// compare); only keys whose bucket is hot, or holds compiled or declined
/// code, are looked up exactly (hashed with `rustc-hash`). A bucket shared by
/// several keys gets hot sooner, which only makes its keys compile sooner; a
/// key whose bucket holds another key's code is counted from zero.
pub struct PortalCache<K> {
    counts: FxHashMap<K, u32>,
    entries: FxHashMap<K, Entry>,
    /// Allocated on first use (so that a cache can be made in a `const`).
    buckets: Vec<Bucket>,
}

/// Direct-mapped buckets of a portal cache.
const BUCKET_BITS: u32 = 12;
const BUCKETS: usize = 1 << BUCKET_BITS;

#[derive(Clone, Copy, Default)]
struct Bucket {
    count: u32,
    /// Compiled or declined keys that hash here.
    entries: u32,
    /// When the only entry here is declined: its key's full hash, so that
    /// visits of that key stay cold without comparing keys (a different key
    /// with the same 64-bit hash would stay cold too: not compiled, never
    /// wrong).
    declined_hash: Option<u64>,
}

/// The hash of a key: each word multiplied by its own odd constant and the
/// products summed (independent multiplies, no chain through the words as
/// in a streaming hasher: this runs at every interpreted merge point), then
/// mixed once.
#[inline]
fn hash_of<K: AsRef<[u64]>>(key: &K) -> u64 {
    const C: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93];
    let mut h = 0u64;
    for (i, w) in key.as_ref().iter().enumerate() {
        h = h.wrapping_add((w ^ (i as u64)).wrapping_mul(C[i % 4]).rotate_left(i as u32 * 7));
    }
    (h ^ (h >> 31)).wrapping_mul(0x94D0_49BB_1331_11EB)
}

fn bucket_of<K: AsRef<[u64]>>(key: &K) -> usize {
    // The high bits: a multiplicative hash mixes its input into them.
    (hash_of(key) >> (64 - BUCKET_BITS)) as usize
}

impl<K> PortalCache<K> {
    /// An empty cache (a `const fn`: portals keep theirs in a thread-local
    /// initialized without a run-time check).
    pub const fn new() -> Self {
        PortalCache {
            counts: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            entries: FxHashMap::with_hasher(rustc_hash::FxBuildHasher),
            buckets: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> Default for PortalCache<K> {
    fn default() -> Self {
        PortalCache::new()
    }
}

/// How many merge point visits one counted visit stands for. A portal that
/// gets [`Hot::Cold`] skips the next `sample_period - 1` visits (no hashing,
/// no counting), and [`PortalCache::visit`] counts each visit it sees that
/// many times: code that is not hot yet runs nearly at the plain
/// interpreter's speed. Small thresholds (tests, `JITGEN_THRESHOLD`) count
/// every visit.
pub fn sample_period(threshold: u32) -> u32 {
    (threshold / 64).clamp(1, 8)
}

impl<K: Hash + Eq + Clone + AsRef<[u64]>> PortalCache<K> {
    /// Counts one iteration at `key` (as [`sample_period`] visits) and says
    /// what to do.
    #[inline]
    pub fn visit(&mut self, key: &K, content: &[&[u8]], threshold: u32) -> Hot {
        if self.buckets.is_empty() {
            self.buckets = vec![Bucket::default(); BUCKETS];
        }
        let h = hash_of(key);
        let b = &mut self.buckets[(h >> (64 - BUCKET_BITS)) as usize];
        if b.declined_hash == Some(h) {
            return Hot::Declined;
        }
        let weight = sample_period(threshold);
        if b.entries == 0 && b.count <= threshold {
            b.count = b.count.saturating_add(weight);
            if b.count <= threshold {
                return Hot::Cold;
            }
        }
        // Hot because the bucket counted past the threshold (this key's
        // visits among them), or because it holds another key's code (then
        // this key has not been counted yet).
        let counted = b.entries == 0;
        if b.entries > 0 {
            match self.entries.get_mut(key) {
                Some(Entry::Compiled { code, content: c, runs, .. }) if same_content(c, content) => {
                    *runs = runs.saturating_add(1);
                    return Hot::Run(code.clone());
                }
                // Declined code stays declined, whatever the content: no
                // need to compare it at every merge point.
                Some(Entry::Declined) => return Hot::Declined,
                Some(_) => {
                    // The green data changed under the same address.
                    self.entries.remove(key);
                    let b = &mut self.buckets[bucket_of(key)];
                    b.entries -= 1;
                    b.declined_hash = None;
                    self.counts.remove(key);
                }
                None => {}
            }
        }
        if self.entries.len() >= MAX_ENTRIES {
            // A program whose green state never repeats: stop compiling.
            return Hot::Cold;
        }
        if self.counts.len() >= MAX_COUNTERS && !self.counts.contains_key(key) {
            // Bounded memory for counters too: start counting afresh.
            self.counts.clear();
        }
        // The bucket got hot: count this key exactly from there.
        let n = self.counts.entry(key.clone()).or_insert(if counted { threshold } else { 0 });
        *n = n.saturating_add(weight);
        if *n > threshold {
            Hot::Compile
        } else {
            Hot::Cold
        }
    }

    /// Records the outcome of a compilation for `key` (the content is copied now).
    pub fn insert(&mut self, key: K, content: &[&[u8]], code: Option<ResidualFn>) {
        self.counts.remove(&key);
        if self.buckets.is_empty() {
            self.buckets = vec![Bucket::default(); BUCKETS];
        }
        let h = hash_of(&key);
        let b = &mut self.buckets[(h >> (64 - BUCKET_BITS)) as usize];
        if !self.entries.contains_key(&key) {
            b.entries += 1;
        }
        b.declined_hash = (code.is_none() && b.entries == 1).then_some(h);
        let content = content.iter().map(|c| c.to_vec()).collect();
        let e = match code {
            Some(code) => Entry::Compiled { code, content, runs: 0, handovers: 0 },
            None => Entry::Declined,
        };
        self.entries.insert(key, e);
    }

    /// Records that the code of `key` handed over to the interpreter. Code
    /// that keeps doing so (at least [`RETIRE_AFTER`] hand-overs, in more than
    /// half of its runs: its switches are full of other values) is retired:
    /// the key is interpreted from then on. Returns whether it was retired.
    pub fn handed_over(&mut self, key: &K) -> bool {
        let Some(Entry::Compiled { runs, handovers, .. }) = self.entries.get_mut(key) else { return false };
        *handovers = handovers.saturating_add(1);
        if *handovers >= RETIRE_AFTER && *handovers * 2 > *runs {
            self.entries.insert(key.clone(), Entry::Declined);
            let h = hash_of(key);
            let b = &mut self.buckets[(h >> (64 - BUCKET_BITS)) as usize];
            b.declined_hash = (b.entries == 1).then_some(h);
            return true;
        }
        false
    }

    /// The listings (with their flexswitch cases) of the code compiled so far.
    pub fn listings(&self) -> Vec<String> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Compiled { code, .. } => Some(code.listing_with_cases()),
                Entry::Declined => None,
            })
            .collect()
    }

    /// Keys being counted (not compiled yet).
    pub fn counters(&self) -> usize {
        self.counts.len()
    }

    /// Compiled (or declined) keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was compiled yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The bytes of a slice of plain values, for content checks.
pub fn content_bytes<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: any initialized memory can be viewed as bytes; T: Copy has no
    // interior pointers to own. Padding bytes would be uninitialized, so this
    // is only called for integer, bool, char and float element types.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}
