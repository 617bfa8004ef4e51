//! The sampling clock: a thread that raises a flag of each thread whose
//! interpreter loop waits for it, so that a loop whose code is not hot pays
//! a test of that flag per visit of its merge point instead of a countdown.
//!
//! A countdown of visits kept in the interpreter loop is a store at every
//! visit. Where the interpreter's own values fill the registers, the
//! countdown lives in a stack slot, and each visit's decrement waits for the
//! last one's store: a chain through memory longer than a small dispatch
//! (the procedure VM's hooked loop ran 1.7-1.85x its plain time with nothing
//! to compile; PERFORMANCE.md). Between samples, a loop under the default
//! policy instead waits for the next tick ([`wait`]), which lowers its
//! thread's flag: [`due`] is one compare of a byte that no visit writes,
//! and the clock raises it at its next tick. That byte is process-wide
//! (`ANY_DUE`, raised while any thread's flag is), and the thread's own
//! flag is read only where it is raised. A loop that
//! looks at every visit (counting visits down in its cold path, or testing
//! its entry filter) keeps the flag raised ([`look_every_visit`]), and a
//! portal call that begins or ends raises it for the loop around it.
//!
//! The clock is a thread of its own, started by the first loop that waits,
//! ticking every [`PERIOD`], less often the longer it runs with no portal
//! call beginning ([`TICKS_PER_PERIOD`]). It stops after [`IDLE_TICKS`]
//! ticks in a row that no loop waited for, and the next loop to wait starts
//! it again (a loop sets `WAITING` before it reads whether the clock
//! stopped, the clock marks itself stopped before it reads `WAITING`
//! again, both sequentially consistent, so one of them sees the other; a
//! stopped clock also looks by itself every [`STOPPED_NAP`]). Where no
//! thread can be started, [`wait`] says so and the loop counts its visits
//! down instead.
//!
//! Invariant: the clock writes only the flags of threads that are alive: a
//! thread's flag is listed at its first wait and unlisted by a thread-local
//! destructor, both under the list's lock, which the clock holds while it
//! raises flags.
//! Invariant: `RAISED` counts the raised flags: a flag is raised and lowered
//! by a swap whose old value says whether to count, and a thread's end
//! lowers its flag after unlisting it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The time between two ticks when the clock starts: a loop skipping
/// between samples is sampled about this often.
pub const PERIOD: Duration = Duration::from_micros(250);

/// Ticks after which the clock, running since it started or since a
/// portal call began ([`call_begins`]), ticks half as often, down to
/// [`SLOWEST_PERIOD`]: loops are hot soon after they start (a warm-up's
/// worth), and a clock waking 4,000 times a second cost about 5% of a core
/// here. A stopped clock starts at [`PERIOD`] again.
pub const TICKS_PER_PERIOD: u32 = 80;

/// The longest time between two ticks.
pub const SLOWEST_PERIOD: Duration = Duration::from_millis(2);

/// Ticks in a row that no loop waited for, after which the clock stops: a
/// thread whose code runs waits for none, and each wakeup costs a core
/// about 10-15 µs here.
pub const IDLE_TICKS: u32 = 8;

/// How long a stopped clock sleeps before it looks again whether a loop
/// waits (a safety net: a loop that waits wakes it).
pub const STOPPED_NAP: Duration = Duration::from_millis(50);

thread_local! {
    /// This thread's loop looks at its next visit (counted in [`RAISED`]).
    static DUE: AtomicBool = const { AtomicBool::new(false) };
    /// This thread's flag is in [`FLAGS`], and may be raised: the thread's
    /// end unlists it and lowers it.
    static LISTED: Listing = const { Listing { listed: Cell::new(false), raises: Cell::new(false) } };
}

/// Raised while some thread's flag is ([`RAISED`] is not 0). A visit tests
/// this process-wide byte, which its loop addresses without a register, and
/// reads its thread's own flag only where this one is raised: the address
/// of a thread-local, hoisted out of the loop, held a register that a small
/// dispatch loop needed (the procedure VM's hooked loop ran 1.2x its plain
/// time with nothing to compile, 1.0x with this; PERFORMANCE.md).
static ANY_DUE: AtomicBool = AtomicBool::new(false);

/// How many threads' flags are raised.
static RAISED: AtomicUsize = AtomicUsize::new(0);

/// Raises `flag`, a thread's [`DUE`] (by the thread itself, or by the
/// clock for a listed thread), counting it where it was lowered.
fn raise(flag: &AtomicBool) {
    if !flag.load(Ordering::Relaxed) && !flag.swap(true, Ordering::AcqRel) {
        RAISED.fetch_add(1, Ordering::SeqCst);
        ANY_DUE.store(true, Ordering::SeqCst);
    }
}

/// Lowers this thread's `flag`. [`ANY_DUE`] is lowered with the last one,
/// and raised again where another was raised meanwhile (every step
/// sequentially consistent, so that a raise after the count's read stores
/// after the lowering).
fn lower(flag: &AtomicBool) {
    if flag.load(Ordering::Relaxed) && flag.swap(false, Ordering::AcqRel) && RAISED.fetch_sub(1, Ordering::SeqCst) == 1
    {
        ANY_DUE.store(false, Ordering::SeqCst);
        if RAISED.load(Ordering::SeqCst) > 0 {
            ANY_DUE.store(true, Ordering::SeqCst);
        }
    }
}

/// The flags the clock raises: addresses of threads' [`DUE`].
static FLAGS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// How many times the clock ticked.
static TICKS: AtomicU32 = AtomicU32::new(0);

/// Set by a loop that waits for the next tick; taken by the clock at each
/// tick.
static WAITING: AtomicBool = AtomicBool::new(false);

/// Set by the outermost call of a portal as it begins: its loops are new,
/// and the clock ticks at [`PERIOD`] again.
static FRESH: AtomicBool = AtomicBool::new(false);

/// The clock is not ticking (at first, or stopped while idle).
static STOPPED: AtomicBool = AtomicBool::new(true);

/// The clock's thread, once started (`None`: it could not be).
static THREAD: OnceLock<Option<std::thread::Thread>> = OnceLock::new();

/// Whether this thread's loop looks at this visit: the clock ticked since
/// it waited, or it looks at every visit.
#[inline(always)]
pub fn due() -> bool {
    ANY_DUE.load(Ordering::Relaxed) && due_here()
}

/// This thread's own flag, where some thread's is raised.
#[cold]
#[inline(never)]
fn due_here() -> bool {
    DUE.try_with(|d| d.load(Ordering::Relaxed)).unwrap_or(false)
}

/// This thread's loop looks at every visit from now on (until it waits).
#[inline]
pub fn look_every_visit() {
    // A thread that is ending raises nothing its end would not lower.
    if LISTED.try_with(|l| l.raises.set(true)).is_ok() {
        DUE.with(raise);
    }
}

/// How many threads' flags are raised (their loops look at their next
/// visit): while any is, every visit reads its own thread's flag too.
pub fn raised_flags() -> usize {
    RAISED.load(Ordering::SeqCst)
}

/// How many times the clock ticked so far.
pub fn ticks() -> u32 {
    TICKS.load(Ordering::Relaxed)
}

/// This thread's loop looks at its next visit after the clock's next tick:
/// false (and it looks at every visit) where the clock cannot run.
#[inline]
pub fn wait() -> bool {
    if !LISTED.with(|l| l.listed.get()) && !list() {
        return false;
    }
    DUE.with(lower);
    if !WAITING.load(Ordering::Relaxed) {
        WAITING.store(true, Ordering::SeqCst);
    }
    if STOPPED.load(Ordering::SeqCst) && !wake() {
        look_every_visit();
        return false;
    }
    true
}

/// The outermost call of a portal begins: the clock, if it runs, ticks at
/// [`PERIOD`] again.
#[inline]
pub fn call_begins() {
    if !FRESH.load(Ordering::Relaxed) {
        FRESH.store(true, Ordering::Relaxed);
    }
}

/// Lists this thread's flag for the clock; false where it cannot be (the
/// thread is ending).
#[cold]
fn list() -> bool {
    let Ok(addr) = DUE.try_with(|d| d as *const AtomicBool as usize) else { return false };
    LISTED
        .try_with(|l| {
            FLAGS.lock().unwrap_or_else(|e| e.into_inner()).push(addr);
            l.listed.set(true);
        })
        .is_ok()
}

/// Unlists its thread's flag when the thread ends, then lowers it.
struct Listing {
    listed: Cell<bool>,
    raises: Cell<bool>,
}

impl Drop for Listing {
    fn drop(&mut self) {
        if self.listed.get() {
            // The flag outlives this destructor (it has none of its own).
            if let Ok(addr) = DUE.try_with(|d| d as *const AtomicBool as usize) {
                FLAGS.lock().unwrap_or_else(|e| e.into_inner()).retain(|&a| a != addr);
            }
        }
        if self.raises.get() {
            // Unlisted: the clock raises it no more.
            let _ = DUE.try_with(lower);
        }
    }
}

/// Starts the clock, or wakes it; false where its thread cannot be started.
#[cold]
fn wake() -> bool {
    WAITING.store(true, Ordering::SeqCst);
    let thread = THREAD.get_or_init(|| {
        std::thread::Builder::new().name("jitgen-ticker".into()).spawn(run).ok().map(|h| h.thread().clone())
    });
    match thread {
        Some(t) => {
            t.unpark();
            true
        }
        None => false,
    }
}

/// One tick: every listed thread's loop looks at its next visit.
fn tick() {
    TICKS.fetch_add(1, Ordering::Relaxed);
    for &addr in FLAGS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        // SAFETY: a listed flag is a live thread's (see the invariant).
        raise(unsafe { &*(addr as *const AtomicBool) });
    }
}

/// The clock's thread.
fn run() {
    loop {
        while !WAITING.load(Ordering::SeqCst) {
            std::thread::park_timeout(STOPPED_NAP);
        }
        STOPPED.store(false, Ordering::SeqCst);
        let (mut idle, mut period, mut ticks) = (0, PERIOD, 0);
        while idle < IDLE_TICKS {
            std::thread::sleep(period);
            tick();
            idle = if WAITING.swap(false, Ordering::Relaxed) { 0 } else { idle + 1 };
            ticks += 1;
            if FRESH.swap(false, Ordering::Relaxed) {
                (period, ticks) = (PERIOD, 0);
            } else if ticks % TICKS_PER_PERIOD == 0 {
                period = (period * 2).min(SLOWEST_PERIOD);
            }
        }
        STOPPED.store(true, Ordering::SeqCst);
    }
}
