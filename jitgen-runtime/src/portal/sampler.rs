//! How often a portal hook looks at a visit: the skips after cold and
//! declined visits, the filter of positions with code ([`Sampler`]), giving
//! a call's hook up after declines ([`GIVE_UP_AFTER`], [`decline_kind`]),
//! the sampler of a loop's own hook ([`LoopSampler`]), and the portal call
//! under way that `portal::slow` times ([`Sampler::begin_call`]). The policy,
//! and the figures behind it, are in the module doc of `portal::driver`.

use std::cell::Cell;

use crate::portal::slow::{CallKind, Tally, Verdict, MEASURED_SPAN, MEASURED_VISITS};
use crate::portal::ticker;

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
    } else if ["recurs", "Budget", "a call of the portal", "retired", "the rest of a call"]
        .iter()
        .any(|w| why.contains(w))
    {
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

/// What [`Sampler::ask`] answers for "skip until the sampling clock's next
/// tick" (see [`crate::portal::ticker`]), and the `left` the loop then asks
/// with at the visit after the tick (with `due` false: a countdown that
/// ran out asks with `due` true).
pub const NEXT_TICK: u32 = u32::MAX;

/// The `left` of [`Sampler::ask`] (with `due` true) from a loop whose
/// countdown ran out and that tests no entry filter although the portal has
/// code in its thread: it entered none for [`QUIET_VISITS`] visits, and
/// may wait for ticks (the mask's countdown, running out, asks with
/// `u32::MAX`).
pub const QUIET_ASK: u32 = u32::MAX - 1;

/// What [`Sampler::ask`] answers a loop that samples as where the portal
/// has no code ([`QUIET_ASK`], or after a tick) while a word is measured
/// ([`Sampler::measure`]): test the entry filter at every visit again, so
/// that the measured word's visits are each counted and other words' cost
/// only the filter's test.
pub const LOOK_AGAIN: u32 = u32::MAX - 2;

/// Skips at least this long wait for the sampling clock's next tick
/// instead of being counted down, under the default policy where the
/// portal has no code in the thread ([`Sampler::set_ticks`]).
pub const TICKED_SKIPS: u32 = 32;

/// Visits counted down after a tick before the visit that goes to the
/// hook: their time, against the time the loop waited for the tick, says
/// how many visits the wait stood for ([`Sampler::take_weight`]).
pub const CALIBRATION: u32 = 64;

/// Keys retired by turn checks in one portal call after which the call
/// goes on without its hook (see [`Sampler::turn_retired_in_call`]).
pub const TURN_RETIREMENTS: usize = 2;

/// Outermost portal calls in a row that started at a position whose code
/// was retired, after which the next calls run the plain interpreter out of
/// line (see [`Sampler::runs_plain`]).
pub const PLAIN_AFTER: u32 = 2;

/// Of the calls that run the plain interpreter because the last ones
/// started at retired positions, one in this many goes through the hook
/// instead, so that a call starting elsewhere is seen.
pub const PROBE_EVERY: u32 = 16;

/// Visits a loop whose clock cannot run counts down where it would wait
/// for a tick.
const NO_CLOCK_SKIPS: u32 = 255;

/// The most visits one sample stands for.
const MAX_WEIGHT: u32 = 1 << 20;

/// Address words of green data, and of the canonical copies standing for
/// them: the two latest ([`Sampler::canonical`]).
pub type Aliases = [(u64, u64); 2];

/// No aliases.
pub const NO_ALIASES: Aliases = [(0, 0); 2];

/// The word standing for the address word `w` under `aliases`.
#[inline(always)]
pub fn alias(aliases: &Aliases, w: u64) -> u64 {
    let [(a, ca), (b, cb)] = *aliases;
    if w == a {
        ca
    } else if w == b {
        cb
    } else {
        w
    }
}

/// What the interpreter loop keeps of its portal's [`Sampler`] in locals: a
/// countdown of visits to skip, and once the thread has code for the
/// portal, the entry filter folded to 64 bits ([`Sampler::entry_mask`])
/// with a second countdown beside it. A visit tests its thread's flag of
/// the sampling clock ([`ticker::due`]), one compare of a thread-local byte
/// and no store, and goes to the cold path only where it is raised. Between
/// samples, a loop under the default policy waits for the clock's next tick
/// ([`NEXT_TICK`]), which lowers the flag; a loop that counts visits (an
/// explicit threshold, the short skips of [`skip_after_cold`]'s ramp, the
/// calibration after a tick) keeps it raised and counts down in the cold
/// path. With code, each visit tests its green word against the mask in the
/// cold path, for at most [`QUIET_VISITS`] visits in a row that enter no
/// code; then it samples as where the portal has no code ([`QUIET_ASK`]).
pub struct LoopSampler {
    after_tick: bool,
    skips: u32,
    counted: u32,
    quiet: u32,
    /// [`Sampler::entry_mask`], taken again after each visit of the hook.
    pub mask: u64,
    /// [`Sampler::aliases`], taken with the mask.
    pub aliases: Aliases,
    /// For a call that reports its end ([`LoopSampler::begin`]): when it
    /// began (the outermost call of its portal only), and what to call at
    /// its end with how long it took.
    call: Option<(Option<std::time::Instant>, fn(Option<std::time::Duration>))>,
    /// The thread's flag was lowered where this loop began: the loop
    /// around this call, if any, waits for the clock's next tick, and
    /// waits on after it (the flag is left as this loop leaves it).
    outer_waits: bool,
}

impl LoopSampler {
    /// At the start of a portal call, given [`Sampler::entry_mask`]: its
    /// first visits look.
    #[inline(always)]
    pub fn new(mask: u64) -> LoopSampler {
        let outer_waits = !ticker::due();
        ticker::look_every_visit();
        LoopSampler { after_tick: false, outer_waits, ..LoopSampler::waiting(mask) }
    }

    /// A loop's sampler that waits for the clock's next tick, as the loop
    /// around it does; the flag left as it is.
    #[inline(always)]
    fn waiting(mask: u64) -> LoopSampler {
        LoopSampler {
            after_tick: true,
            skips: 0,
            counted: 0,
            quiet: 0,
            mask,
            aliases: NO_ALIASES,
            call: None,
            outer_waits: true,
        }
    }

    /// The word standing for the address word `w` of green data in the
    /// entry filter's green words: its canonical copy's, where the hook
    /// made that data canonical (see [`Sampler::canonical`]).
    #[inline(always)]
    pub fn canonical(&self, w: u64) -> u64 {
        alias(&self.aliases, w)
    }

    /// At the start of a portal call that reports its end to `end` (with
    /// how long it took since `started`, for the outermost call of its
    /// portal: [`Sampler::call_began`]), as the portal's generated code
    /// makes it; `end` runs when the call returns or unwinds.
    ///
    /// With `joins_wait` ([`Sampler::joins_wait`]), the loop around this
    /// call waits for the clock's next tick, and this loop waits with it:
    /// it does not look at its first visits, and its visit after the tick
    /// stands for the visits of the wait, as that loop's would.
    #[inline]
    pub fn begin(
        mask: u64,
        started: Option<std::time::Instant>,
        end: fn(Option<std::time::Duration>),
        joins_wait: bool,
    ) -> LoopSampler {
        let call = Some((started, end));
        if joins_wait {
            return LoopSampler { call, ..LoopSampler::waiting(mask) };
        }
        LoopSampler { call, ..LoopSampler::new(mask) }
    }

    /// The hook ran compiled code, which handed back to the interpreter:
    /// the mask is tested at every visit again.
    #[inline(always)]
    pub fn entered(&mut self) {
        self.quiet = 0;
    }

    /// The loop is entered again at the merge point it left for the hook
    /// (see the runtime's `outlined`): the visit the hook ran at is not
    /// counted again. Where the flag is lowered then, the next visit that
    /// finds it raised is the one passed over.
    #[inline(always)]
    pub fn resumed(&mut self) {
        self.skips = self.skips.saturating_add(1);
    }

    /// A visit of a call that gave its hook up: nothing to count, and the
    /// loop looks again at the clock's next tick only.
    #[cold]
    pub fn idle(&mut self) {
        ticker::wait();
    }

    /// Whether this visit goes to the cold path (see [`ticker::due`]).
    #[inline(always)]
    pub fn due(&mut self) -> bool {
        ticker::due()
    }

    /// After [`LoopSampler::due`]: whether the visit at a position with
    /// green word `green` goes to the hook, asking `ask` (the portal's
    /// [`Sampler::ask`], out of line) where the countdown ran out or the
    /// mask says code may start.
    #[inline(always)]
    pub fn visits_hook(&mut self, green: u64, ask: impl FnOnce(bool, u32, u64) -> Option<u32>) -> bool {
        if self.skips != 0 {
            self.skips -= 1;
            return false;
        }
        if self.mask == 0 || self.quiet >= QUIET_VISITS {
            // After a tick, `(false, NEXT_TICK)`, which the mask's
            // countdown never asks with.
            let after_tick = std::mem::take(&mut self.after_tick);
            let quiet = if self.mask == 0 { 0 } else { QUIET_ASK };
            let (due, left) = if after_tick { (false, NEXT_TICK) } else { (true, quiet) };
            return match ask(due, left, green) {
                Some(NEXT_TICK) => {
                    self.wait_for_tick();
                    false
                }
                Some(LOOK_AGAIN) => {
                    self.quiet = 0;
                    false
                }
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

    /// Skips visits until the clock's next tick (or, where it cannot run,
    /// [`NO_CLOCK_SKIPS`] of them); the visit after them asks with
    /// [`NEXT_TICK`].
    #[cold]
    fn wait_for_tick(&mut self) {
        self.after_tick = true;
        if !ticker::wait() {
            self.skips = NO_CLOCK_SKIPS;
        }
    }
}

impl Drop for LoopSampler {
    /// The loop of an outer call, if any, looks at its next visit, unless
    /// it was waiting for a tick: then it waits on (a call of an
    /// interpreter recursing in Rust neither raises nor lowers the flag
    /// again as it returns).
    fn drop(&mut self) {
        if !self.outer_waits {
            ticker::look_every_visit();
        }
        if let Some((started, end)) = self.call.take() {
            end(started.map(|t| t.elapsed()));
        }
    }
}

/// How the outermost portal call under way treats compiled code (see
/// `portal::slow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallMode {
    /// Entered where it is hot.
    Normal,
    /// Not entered: this call is timed as the interpreter's, against the
    /// code's calls.
    Interpreting,
    /// Not entered, and the call goes on without its hook: the position
    /// it started at has code slower than interpreting.
    Retired,
}

/// What the outermost portal call under way did so far.
#[derive(Clone, Copy, Debug)]
struct CallState {
    /// The green word of the position it started at (none before its first
    /// visit reaches the sampler).
    green: Option<u64>,
    mode: CallMode,
    /// It entered compiled code.
    entered: bool,
    /// It entered code whose fusion was due but postponed: code not in its
    /// final form, which its time does not judge ([`Sampler::unsettled_code`]).
    unsettled: bool,
    /// It interprets where its code waits for a fusion
    /// ([`Sampler::interpret_rest`]).
    waited: bool,
    /// It interprets because its budget for cases is spent, until the
    /// budget has room again ([`Sampler::interpret_until_budget`]).
    budget_spent: bool,
    /// It was interpreted on purpose and ran long enough to show its
    /// position's code clearly faster ([`Sampler::interpreted_past_code`]):
    /// it enters code that exists but counts no visit toward compiling.
    past_code: bool,
    /// The module's count of compilations and fusions when it began (see
    /// [`Sampler::begin_call`]).
    compile_work: u64,
    /// Keys its turn checks retired ([`Sampler::turn_retired_in_call`]).
    turns_retired: u8,
}

impl CallState {
    const IDLE: CallState = CallState {
        green: None,
        mode: CallMode::Normal,
        entered: false,
        unsettled: false,
        waited: false,
        budget_spent: false,
        past_code: false,
        compile_work: 0,
        turns_retired: 0,
    };
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
    /// Whether long skips wait for the sampling clock's ticks (the
    /// default policy: [`Sampler::set_ticks`]).
    ticks: Cell<bool>,
    /// No visit of this thread has asked yet: under the default policy,
    /// the first waits for the sampling clock's next tick.
    fresh: Cell<bool>,
    /// When the loop began to wait for a tick ([`NEXT_TICK`]).
    waiting_since: Cell<Option<std::time::Instant>>,
    /// After a tick: when the loop noticed it, and how long it waited.
    calibrating: Cell<Option<(std::time::Instant, std::time::Duration)>>,
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
    /// Address words of green data the hook last made canonical, and their
    /// copies' (see [`Sampler::canonical`]).
    aliases: Cell<Aliases>,
    /// Portal calls under way (an interpreter recursing in Rust nests them).
    depth: Cell<u32>,
    /// The outermost call under way.
    call: Cell<CallState>,
    /// When the outermost call under way began.
    call_began: Cell<Option<std::time::Instant>>,
    /// Outermost calls in a row that started at a retired position.
    retired_calls: Cell<u32>,
    /// Calls run plain since the last that went through the hook.
    plain_calls: Cell<u32>,
    /// The position the last outermost call started at, and how many
    /// outermost calls in a row started there.
    last_start: Cell<(Option<u64>, u32)>,
    /// The position the next outermost call is timed for while it runs the
    /// plain interpreter (see [`Sampler::runs_plain_timed`]).
    plain_next: Cell<Option<u64>>,
    /// Timed calls per position (see `portal::slow`).
    tallies: std::cell::RefCell<rustc_hash::FxHashMap<u64, Tally>>,
    /// The green word of a key whose code is measured against the
    /// interpreter (`portal::slow::TurnClock`), when that began, and the
    /// visits of the word since (see [`Sampler::measure`]).
    measured: Cell<Option<(u64, std::time::Instant, u32)>>,
}

impl Sampler {
    /// Nothing skipped, no code (a `const fn`, for thread-locals).
    pub const fn new() -> Sampler {
        Sampler {
            skip: Cell::new(0),
            period: Cell::new(0),
            weight: Cell::new(1),
            ticks: Cell::new(false),
            fresh: Cell::new(true),
            waiting_since: Cell::new(None),
            calibrating: Cell::new(None),
            streak: Cell::new(0),
            declined_run: Cell::new(0),
            recursion_run: Cell::new(0),
            through: Cell::new(None),
            entries: [const { Cell::new(0) }; 4],
            aliases: Cell::new(NO_ALIASES),
            depth: Cell::new(0),
            call: Cell::new(CallState::IDLE),
            call_began: Cell::new(None),
            retired_calls: Cell::new(0),
            plain_calls: Cell::new(0),
            last_start: Cell::new((None, 0)),
            plain_next: Cell::new(None),
            tallies: std::cell::RefCell::new(rustc_hash::FxHashMap::with_hasher(rustc_hash::FxBuildHasher)),
            measured: Cell::new(None),
        }
    }

    /// A portal call begins (`compile_work`: the module's compile time so
    /// far, `Stats::compile_work`): whether it is the outermost one, which
    /// is timed against the interpreter (`portal::slow`).
    #[inline]
    pub fn begin_call(&self, compile_work: u64) -> bool {
        let d = self.depth.get();
        self.depth.set(d + 1);
        if d == 0 {
            // A call that runs the plain interpreter for its position's
            // comparison (`runs_plain_timed`) is that position's,
            // interpreted on purpose.
            let (green, mode) = match self.plain_next.take() {
                Some(g) => (Some(g), CallMode::Interpreting),
                None => (None, CallMode::Normal),
            };
            self.call.set(CallState { compile_work, green, mode, ..CallState::IDLE });
            self.call_began.set(Some(std::time::Instant::now()));
            // No loop of the portal waits in this thread now.
            self.waiting_since.set(None);
            if self.ticks.get() {
                ticker::call_begins();
            }
        }
        d == 0
    }

    /// A portal call ends (`compile_work` as at [`Sampler::begin_call`]):
    /// for the outermost, the position it started at (none where it never
    /// reached its merge point) and what it did.
    pub fn end_call(&self, compile_work: u64) -> Option<(Option<u64>, CallKind)> {
        let d = self.depth.get().saturating_sub(1);
        self.depth.set(d);
        if d != 0 {
            return None;
        }
        let c = self.call.replace(CallState::IDLE);
        let (last, n) = self.last_start.get();
        self.last_start.set((c.green, if last == c.green { n.saturating_add(1) } else { 1 }));
        let retired = c.mode == CallMode::Retired;
        self.retired_calls.set(if retired { self.retired_calls.get().saturating_add(1) } else { 0 });
        let kind = if c.compile_work != compile_work {
            CallKind::Compiling
        } else if c.waited {
            CallKind::Waited
        } else if c.unsettled {
            CallKind::Unfused
        } else if c.entered && c.mode == CallMode::Normal {
            CallKind::Compiled
        } else {
            CallKind::Interpreted
        };
        Some((c.green, kind))
    }

    /// Whether a portal call beginning now runs the plain interpreter, out
    /// of line and with no hook, as where compiling is off: it is an
    /// outermost call, the last [`PLAIN_AFTER`] started at positions whose
    /// code was retired, and it is not the one in [`PROBE_EVERY`] that goes
    /// through the hook. A call that goes on without its hook from its
    /// first visit runs a copy of the interpreter's loop in the portal's
    /// function, laid out anew, which ran the procedure VM's retired fib
    /// 1.46x slower than the plain interpreter's own function.
    #[inline]
    pub fn runs_plain(&self) -> bool {
        if self.depth.get() != 0 || self.retired_calls.get() < PLAIN_AFTER {
            return false;
        }
        let n = self.plain_calls.get() + 1;
        self.plain_calls.set(n % PROBE_EVERY);
        n < PROBE_EVERY
    }

    /// Whether a portal call beginning now runs the plain interpreter, out
    /// of line and with no hook, timed as a call interpreted on purpose
    /// (`portal::slow`): it is an outermost call, the last [`PLAIN_AFTER`]
    /// started at one position, whose code is suspect and has had one
    /// call interpreted on purpose through the hook already (which may
    /// have found the code clearly faster, `Tally::interpreted_past_code`).
    /// The portal's loop interpreting with its hook idle ran the function
    /// VM's Ackermann 1.25-1.4x slower than the plain interpreter's own
    /// function, and code that much slower than plain was compared with
    /// that and kept. The call is taken to start where the last ones did,
    /// as for retired positions (`runs_plain`).
    pub fn runs_plain_timed(&self) -> bool {
        let (Some(green), n) = self.last_start.get() else { return false };
        if self.depth.get() != 0 || n < PLAIN_AFTER {
            return false;
        }
        let plain = self.tallies.borrow().get(&green).is_some_and(Tally::wants_plain_interpreted);
        if plain {
            self.plain_next.set(Some(green));
        }
        plain
    }

    /// When the outermost call under way began (none outside a call).
    pub fn call_began(&self) -> Option<std::time::Instant> {
        if self.depth.get() == 0 {
            return None;
        }
        self.call_began.get()
    }

    /// How the call under way treats compiled code.
    pub fn call_mode(&self) -> CallMode {
        self.call.get().mode
    }

    /// The call under way entered compiled code.
    pub fn entered_code(&self) {
        let mut c = self.call.get();
        c.entered = true;
        self.call.set(c);
    }

    /// Records that the call entered code whose fusion is due but was
    /// postponed: the pieces run unfused, slower than they will, so the
    /// call is not timed against the interpreter (as a call that compiled
    /// is not): code is judged once it is as it will stay.
    pub fn unsettled_code(&self) {
        let mut c = self.call.get();
        c.unsettled = true;
        self.call.set(c);
    }

    /// The call under way interprets from here to its end: its position's
    /// code waits for a fusion the compiler's thread is compiling, and ran
    /// slower unfused than interpreting ([`Sampler::unfused_slower`]), or
    /// the call's budget for cases is spent (`run::case_budget`). It
    /// enters no code, and its time does not count ([`CallKind::Waited`]:
    /// it may include handing the fusion over, or compiling).
    pub fn interpret_rest(&self) {
        let mut c = self.call.get();
        if c.mode == CallMode::Normal {
            c.mode = CallMode::Interpreting;
            c.waited = true;
        }
        self.call.set(c);
    }

    /// The call under way interprets until its budget for cases
    /// (`run::case_budget`) has room again: a miss past the budget handed
    /// over. Its time does not count ([`CallKind::Waited`]). A program run
    /// as one long call (a script) enters its code again once interpreting
    /// has earned the budget back ([`Sampler::budget_back`]), instead of
    /// interpreting to its end.
    pub fn interpret_until_budget(&self) {
        let mut c = self.call.get();
        if c.mode == CallMode::Normal {
            c.mode = CallMode::Interpreting;
            c.waited = true;
            c.budget_spent = true;
        }
        self.call.set(c);
    }

    /// Whether the call under way, interpreting since its budget for cases
    /// was spent, has room in the budget again: then it counts and enters
    /// code as any call from this visit on.
    pub fn budget_back(&self) -> bool {
        let mut c = self.call.get();
        if c.mode != CallMode::Interpreting || !c.budget_spent || !crate::run::case_budget::has_room() {
            return false;
        }
        c.mode = CallMode::Normal;
        c.budget_spent = false;
        self.call.set(c);
        true
    }

    /// Whether the call under way, interpreted on purpose, has run long
    /// enough to show its position's code clearly faster
    /// (`Tally::interpreted_past_code`): then the code stays, and the call
    /// may enter it from its next visit on; its time does not count.
    pub fn interpreted_past_code(&self) -> bool {
        let mut c = self.call.get();
        let (Some(green), Some(began)) = (c.green, self.call_began()) else { return false };
        if c.mode != CallMode::Interpreting || c.waited {
            return false;
        }
        let mut tallies = self.tallies.borrow_mut();
        let Some(t) = tallies.get_mut(&green) else { return false };
        if !t.interpreted_past_code(began.elapsed()) {
            return false;
        }
        t.keep();
        c.mode = CallMode::Normal;
        c.waited = true;
        c.past_code = true;
        self.call.set(c);
        true
    }

    /// Whether the call under way was interpreted on purpose and then
    /// showed its position's code clearly faster: it enters code that
    /// exists, but its visits elsewhere do not count toward compiling.
    /// Deep in its program's recursion by then, such a call counted the
    /// positions it reached as roots: a new user's stack VM compiled 9-20
    /// keys more after that call, entered them in later calls, and ran
    /// them 1.3-2x slower than its first tree.
    pub fn past_code(&self) -> bool {
        self.call.get().past_code
    }

    /// Whether the call under way started at a position whose calls ran
    /// code waiting to be fused slower than interpreting (see
    /// [`Tally::unfused_slower`]).
    pub fn unfused_slower(&self) -> bool {
        let Some(green) = self.call.get().green else { return false };
        self.tallies.borrow().get(&green).is_some_and(Tally::unfused_slower)
    }

    /// Records a timed call of the position `green`; the verdict if this
    /// call decided it.
    pub fn record_call(&self, green: u64, kind: CallKind, took: std::time::Duration) -> Option<Verdict> {
        self.tallies.borrow_mut().entry(green).or_default().record(kind, took)
    }

    /// The first visit of the call under way, at the position `green`:
    /// how the call treats code (see [`CallMode`]).
    fn first_visit(&self, green: u64) -> CallMode {
        let mut c = self.call.get();
        c.green = Some(green);
        c.mode = match self.tallies.borrow().get(&green) {
            Some(t) if matches!(t.verdict, Verdict::Retire { .. }) => CallMode::Retired,
            Some(t) if t.wants_interpreted() => CallMode::Interpreting,
            _ => CallMode::Normal,
        };
        self.call.set(c);
        c.mode
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
        // A call that interprets to its end enters no code: its visits where
        // code starts skip the hook too (it would only count them cold).
        if !self.may_enter(word) || self.call.get().mode == CallMode::Interpreting {
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
        if let Some((w, began, n)) = self.measured.get() {
            if w == word {
                self.measured.set(Some((w, began, n + 1)));
                // The clock is read once in 64 visits.
                if (n + 1).is_multiple_of(64) && measure_done(n + 1, began).is_some() {
                    return self.entry_hit(word, left);
                }
            }
            return Some(measuring_answer(due, left));
        }
        // A call's first visit goes to the hook where the call gives it up.
        let fresh = self.depth.get() > 0 && self.call.get().green.is_none();
        if fresh && self.first_visit(word) == CallMode::Retired {
            return None;
        }
        if !due && left == NEXT_TICK {
            let now = std::time::Instant::now();
            let waited = self.waiting_since.take().map_or(std::time::Duration::ZERO, |t| now - t);
            self.calibrating.set(Some((now, waited)));
            return self.entry_hit(word, CALIBRATION - 1);
        }
        if self.fresh.replace(false) && self.ticks.get() && self.skip.get() == 0 {
            self.wait_begins();
            return Some(NEXT_TICK);
        }
        let quiet = due && left == QUIET_ASK;
        let left = if due { self.skip_many()? } else { left };
        let no_filter = self.skip.get() & FILTERED == 0 || quiet || !self.enters_code();
        if left >= TICKED_SKIPS && self.ticks.get() && no_filter {
            self.wait_begins();
            return Some(NEXT_TICK);
        }
        self.entry_hit(word, left)
    }

    /// Whether a call beginning now (not the outermost) waits for the
    /// clock's next tick with the loop around it instead of looking at its
    /// first visits: that loop is the portal's, it waits (the thread's flag
    /// is lowered), and no visit is being measured. An interpreter
    /// recursing in Rust (one portal call per call of its program) then
    /// neither raises nor lowers the flag per call before anything compiles.
    pub fn joins_wait(&self) -> bool {
        self.depth.get() > 1
            && self.ticks.get()
            && self.waiting_since.get().is_some()
            && self.measured.get().is_none()
            && !ticker::due()
    }

    /// A loop of the portal waits for the clock's next tick. The thread
    /// waits since the first of its loops did: a call inside a waiting
    /// loop (an interpreter recursing in Rust, one portal call per call of
    /// its program) waits for the same tick, and reads no clock.
    fn wait_begins(&self) {
        if self.waiting_since.get().is_none() {
            self.waiting_since.set(Some(std::time::Instant::now()));
        }
    }

    /// Measures the interpreter's visits of the green word `word` from now
    /// on: its code is not entered meanwhile, and [`Sampler::ask`] counts
    /// each visit and lets it go on without the hook, as cheaply as it
    /// can, until [`MEASURED_VISITS`] and [`MEASURED_SPAN`] have passed;
    /// the visit after that goes to the hook, which takes the count
    /// ([`Sampler::take_measured`]).
    pub fn measure(&self, word: u64) {
        self.measured.set(Some((word, std::time::Instant::now(), 0)));
        // Every visit is looked at while it lasts: the loop's flag raised,
        // none skipped uncounted (see `measuring_answer`).
        ticker::look_every_visit();
    }

    /// The visits of the measured word and the time they took, once the
    /// measure is done (see [`Sampler::measure`]).
    #[inline]
    pub fn take_measured(&self) -> Option<(u32, std::time::Duration)> {
        let (_, began, n) = self.measured.get()?;
        let took = measure_done(n, began)?;
        self.measured.set(None);
        Some((n, took))
    }

    /// The entry filter folded to 64 bits, for the interpreter loop to keep
    /// in a local and test each visit's green word against
    /// ([`Sampler::mask_bit`]) with no memory access; 0 while the portal
    /// has no code, and in a call that enters none (`Sampler::enters_code`).
    /// The loop takes it again after each visit of the hook.
    #[inline]
    pub fn entry_mask(&self) -> u64 {
        if !self.enters_code() {
            return 0;
        }
        self.entries.iter().fold(0, |m, e| m | e.get())
    }

    /// Whether the call under way may enter compiled code: not where
    /// `portal::slow` interprets it on purpose or its position's code was
    /// retired. A call that enters none samples its visits as where the
    /// portal has no code (the clock's ticks, no entry filter): interpreted
    /// on purpose with the filter tested at each visit, the procedure VM's
    /// fib ran 2.4x its plain time, and its slow code was compared with that
    /// and kept.
    #[inline]
    fn enters_code(&self) -> bool {
        self.depth.get() == 0 || self.call.get().mode == CallMode::Normal
    }

    /// The bit of a [`green_word`] in [`Sampler::entry_mask`].
    #[inline(always)]
    pub fn mask_bit(word: u64) -> u64 {
        1 << (Self::hash(word) & 63)
    }

    /// The visits this one stands for (the count starts again at 1). After
    /// a tick, the [`CALIBRATION`] visits counted since, and the visits of
    /// the wait for the tick at their pace.
    #[inline]
    pub fn take_weight(&self) -> u32 {
        let counted = self.weight.replace(1);
        match self.calibrating.take() {
            Some((noticed, waited)) => {
                let counting = noticed.elapsed().as_nanos().max(1);
                let n = u128::from(CALIBRATION) * (1 + waited.as_nanos() / counting);
                n.min(u128::from(MAX_WEIGHT)) as u32
            }
            None => counted,
        }
    }

    /// Whether the visit going to the hook now came after a tick of the
    /// sampling clock (before [`Sampler::take_weight`]).
    #[inline]
    pub fn after_tick(&self) -> bool {
        let c = self.calibrating.take();
        self.calibrating.set(c);
        c.is_some()
    }

    /// Whether long skips wait for the sampling clock (the default policy,
    /// set at each call's start), rather than being counted down.
    #[inline]
    pub fn set_ticks(&self, ticks: bool) {
        self.ticks.set(ticks);
    }

    /// After a visit that got `Hot::Cold`: skips as [`skip_after_cold`]
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

    /// Turn checks retired a key's code during the outermost call under
    /// way: the [`TURN_RETIREMENTS`]th such key in one call makes it go on
    /// without its hook (returns true). A loop whose code lost to the
    /// interpreter at one position would compile and lose again at its
    /// others, one key after another (a byte-code VM of ten instructions a
    /// turn retired ten keys, each after its first checks: PERFORMANCE.md).
    /// Later calls starting where it started are retired too (as by a
    /// verdict of calls), with the last retired code's time per turn, and
    /// the interpreter's, as `compiled` and `interpreted`.
    pub fn turn_retired_in_call(&self, compiled: std::time::Duration, interpreted: std::time::Duration) -> bool {
        let mut c = self.call.get();
        c.turns_retired = c.turns_retired.saturating_add(1);
        let gives_up = usize::from(c.turns_retired) >= TURN_RETIREMENTS && self.depth.get() > 0;
        if gives_up {
            c.mode = CallMode::Retired;
            if let Some(green) = c.green {
                self.tallies.borrow_mut().entry(green).or_default().retire_by_turns(compiled, interpreted);
            }
        }
        self.call.set(c);
        gives_up
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
            || self.call_mode() == CallMode::Retired
    }

    /// The hook made the green data of its visit canonical
    /// (`portal::canonical`): the address words of the data it was given
    /// (`given`) stand for those of their copies (`copies`), whose green
    /// words key the entry filter. The interpreter loop goes on with the
    /// data it has, so its green words are taken through these aliases
    /// ([`LoopSampler::canonical`]); else a program in a new buffer would
    /// pass the filter only where the words happen to collide, and its
    /// interpreter would reach the hook at a position with no code. The
    /// call's position and the visit let through, as the loop took them
    /// (`loop_word`: the visit's green word under the aliases so far), are
    /// renamed to the copy's (`word`): calls given new buffers of one
    /// program are timed as one position, and a buffer whose alias is
    /// stale (freed, and another program's now) is not timed as the
    /// program it held.
    pub fn canonical(&self, loop_word: u64, word: u64, given: &[u64], copies: &[u64]) {
        if loop_word == word {
            return;
        }
        let mut a = self.aliases.get();
        for (&g, &c) in given.iter().zip(copies).filter(|(g, c)| g != c) {
            if !a.contains(&(g, c)) {
                a = [(g, c), a[0]];
            }
        }
        self.aliases.set(a);
        let mut c = self.call.get();
        if c.green == Some(loop_word) {
            c.green = Some(word);
            self.call.set(c);
        }
        if self.through.get() == Some(loop_word) {
            self.through.set(Some(word));
        }
    }

    /// What [`Sampler::canonical`] recorded, for the interpreter loop.
    #[inline]
    pub fn aliases(&self) -> Aliases {
        self.aliases.get()
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
/// `Hot::Cold`, a portal skips up to `sample_period - 1` visits (no
/// hashing, no counting; see [`skip_after_cold`]), and the visit after them
/// counts for them (`PortalCache::visit_weighted`; `PortalCache::visit`
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

/// What [`Sampler::ask`] answers a visit while a word is measured and the
/// measure goes on (see [`Sampler::measure`]): no visit goes to the hook,
/// and the loop tests its entry filter, where the measured word has its bit,
/// at every visit, so that each of that word's visits is counted. (Visits
/// that reached the hook made the interpreter seem many times slower than
/// it is; visits skipped uncounted while the loop waited for a tick, one
/// counted per tick, did too: PERFORMANCE.md.)
fn measuring_answer(due: bool, left: u32) -> u32 {
    match (due, left) {
        // Sampling as where the portal has no code: the filter again.
        (true, QUIET_ASK) | (false, NEXT_TICK) => LOOK_AGAIN,
        // No filter to test (a call that enters no code): every visit asks.
        (true, 0) => 0,
        // The filter's countdown ran out: another.
        (true, _) => MAX_SKIP - 1,
        // A hit of the filter: the countdown goes on.
        (false, left) => left,
    }
}

/// The time a measure of `n` visits begun at `began` took, once it has
/// lasted [`MEASURED_VISITS`] and [`MEASURED_SPAN`] (see `Sampler::measure`).
fn measure_done(n: u32, began: std::time::Instant) -> Option<std::time::Duration> {
    let took = began.elapsed();
    (n >= MEASURED_VISITS && took >= MEASURED_SPAN).then_some(took)
}
