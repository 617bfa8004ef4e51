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
//! thread's flag: [`due`] is one compare of a count of raised flags at a
//! fixed address (then of the thread's own byte, where any is raised), which
//! no visit writes, and the clock raises the flag at its next tick. A loop that
//! looks at every visit (counting visits down in its cold path, or testing
//! its entry filter) keeps the flag raised ([`look_every_visit`]), and a
//! portal call that begins or ends raises it for the loop around it, unless
//! that loop waits for a tick (`Sampler::joins_wait`).
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

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
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
    /// This thread's loop looks at its next visit (raised by each portal
    /// call as it begins: [`look_every_visit`]).
    static DUE: AtomicBool = const { AtomicBool::new(false) };
    /// This thread's flag is in [`FLAGS`] (unlisted when the thread ends).
    static LISTED: Listing = const { Listing(std::cell::Cell::new(false)) };
    /// Lowers this thread's flag when the thread ends, so that [`RAISED`]
    /// counts live threads' flags only.
    static RAISER: Raiser = const { Raiser };
}

/// How many threads' flags are raised, and each annotated module's copy of
/// that count ([`DueCount`]), changed together under this lock. Each flag
/// counts once: every change of a flag is a swap, and only the swap that
/// changed it counts.
static RAISED: Mutex<(u32, Vec<&'static DueCount>)> = Mutex::new((0, Vec::new()));

/// An annotated module's copy of the number of threads whose flag is
/// raised (a static of its `jit` module). Its interpreter loops read it
/// before their own thread's flag ([`DueCount::any`]), and that flag only
/// where it is not 0. A static of the interpreter's own crate is read at
/// a fixed address: one compare per visit. A thread-local's address is
/// computed once per loop and kept in a register, which the interpreter's
/// values then push onto the stack, and the runtime's own statics are
/// reached through the global offset table: either way a visit loaded an
/// address, then the flag.
pub struct DueCount {
    raised: AtomicU32,
    listed: AtomicBool,
}

impl DueCount {
    /// A count not listed yet ([`DueCount::list`] at each portal call).
    #[allow(clippy::new_without_default)]
    pub const fn new() -> DueCount {
        DueCount { raised: AtomicU32::new(0), listed: AtomicBool::new(false) }
    }

    /// Whether any thread's flag is raised: where not, no visit of this
    /// module's loops looks ([`due`] would say false).
    #[inline(always)]
    pub fn any(&'static self) -> bool {
        self.raised.load(Ordering::Relaxed) != 0
    }

    /// How many threads' flags are raised, as this count has it.
    pub fn raised(&self) -> u32 {
        self.raised.load(Ordering::Relaxed)
    }

    /// Keeps this count with the others from now on; at the start of each
    /// portal call, before its loop reads the count.
    #[inline(always)]
    pub fn list(&'static self) {
        if !self.listed.load(Ordering::Relaxed) {
            self.list_now();
        }
    }

    #[cold]
    fn list_now(&'static self) {
        let mut raised = RAISED.lock().unwrap_or_else(|e| e.into_inner());
        if !self.listed.load(Ordering::Relaxed) {
            self.raised.store(raised.0, Ordering::Relaxed);
            raised.1.push(self);
            self.listed.store(true, Ordering::Relaxed);
        }
    }
}

/// Adds `by` (wrapping) to the number of raised flags and to each listed
/// module's copy.
fn count_raised(by: u32) {
    let mut raised = RAISED.lock().unwrap_or_else(|e| e.into_inner());
    raised.0 = raised.0.wrapping_add(by);
    for c in &raised.1 {
        c.raised.fetch_add(by, Ordering::Relaxed);
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
    DUE.with(|d| d.load(Ordering::Relaxed))
}

/// This thread's loop looks at every visit from now on (until it waits).
#[inline]
pub fn look_every_visit() {
    if !DUE.with(|d| d.load(Ordering::Relaxed)) {
        raise_own();
    }
}

/// Raises this thread's flag, counted in [`RAISED`].
#[cold]
fn raise_own() {
    // Where the thread is ending, its flag stays as it is (and uncounted).
    let _ = RAISER.try_with(|_| {
        if let Ok(d) = DUE.try_with(|d| d as *const AtomicBool) {
            // SAFETY: this thread's own flag, alive while the thread is.
            unsafe { raise(d) };
        }
    });
}

/// Raises a flag and counts it if it was lowered.
///
/// # Safety
/// `flag` is a live thread's [`DUE`].
unsafe fn raise(flag: *const AtomicBool) {
    // SAFETY: as the caller says.
    if !unsafe { (*flag).swap(true, Ordering::Relaxed) } {
        count_raised(1);
    }
}

/// Lowers this thread's flag, counted in [`RAISED`].
fn lower_own() {
    if DUE.try_with(|d| d.swap(false, Ordering::Relaxed)).unwrap_or(false) {
        count_raised(u32::MAX);
    }
}

/// Lowers a thread's flag as the thread ends.
struct Raiser;

impl Drop for Raiser {
    fn drop(&mut self) {
        lower_own();
    }
}

/// How many times the clock ticked so far.
pub fn ticks() -> u32 {
    TICKS.load(Ordering::Relaxed)
}

/// This thread's loop looks at its next visit after the clock's next tick:
/// false (and it looks at every visit) where the clock cannot run.
#[inline]
pub fn wait() -> bool {
    if !LISTED.with(|l| l.0.get()) && !list() {
        return false;
    }
    lower_own();
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

/// Raises this thread's flag from any thread, as a tick does, if the
/// thread is still listed then (the invariant): what the compiler's thread
/// calls when code it compiled for this thread is ready, so that the
/// thread's next visit installs it (`run::background`).
pub fn waker() -> impl FnOnce() + Send + 'static {
    let addr = DUE.try_with(|d| d as *const AtomicBool as usize).ok();
    move || {
        let Some(addr) = addr else { return };
        let flags = FLAGS.lock().unwrap_or_else(|e| e.into_inner());
        if flags.contains(&addr) {
            // SAFETY: a listed flag is a live thread's (see the invariant).
            unsafe { raise(addr as *const AtomicBool) };
        }
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
            l.0.set(true);
        })
        .is_ok()
}

/// Unlists its thread's flag when the thread ends.
struct Listing(std::cell::Cell<bool>);

impl Drop for Listing {
    fn drop(&mut self) {
        if self.0.get() {
            // The flag outlives this destructor (it has none of its own).
            if let Ok(addr) = DUE.try_with(|d| d as *const AtomicBool as usize) {
                let mut flags = FLAGS.lock().unwrap_or_else(|e| e.into_inner());
                flags.retain(|&a| a != addr);
                // Lowered under the lock: no tick raises it again, so it
                // is not left counted in `RAISED` whichever destructor
                // runs first.
                lower_own();
            }
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
        unsafe { raise(addr as *const AtomicBool) };
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
