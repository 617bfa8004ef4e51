//! The compile budget of a portal call's flexswitch cases.
//!
//! Cases compile at their switches' misses, on the time of the thread that
//! runs the code. A recursion of the interpreted program run as one long
//! portal call meets new states for as long as it runs; compiled at its
//! misses, their cases took several times the interpreter's time for the
//! whole call (PERFORMANCE.md). Where the portal turns the budget on ([`limit`]: `Config::case_budget`, [`START`] under the default
//! hot-spot policy), the outermost portal call under way spends on cases at
//! most that start plus one [`SHARE`]th of its other time so far. A miss past
//! that gets no case: the switch hands over, and [`take_exhausted`] tells
//! the portal why, so that the call interprets until the budget has
//! [`ROOM`] again (`Sampler::interpret_until_budget`) instead of entering
//! its code again at the next visit and handing over again (a hand-over
//! runs execute mode and rebuilds the spilled frames: a budget without
//! this handed over at nearly every visit). A program run as one long call
//! (a Lox script) so goes back to its code, handing over at most once per
//! `ROOM * SHARE` of interpreting. The next call has a budget of its own,
//! and compiles from where the last one stopped.
//!
//! The budget is a call's, not the thread's: held to a share of the
//! thread's whole run time, a program run again and again compiled half a
//! case per run, every run entering its code and handing over, and never
//! reached its compiled speed (PERFORMANCE.md).
//!
//! Invariant: the budget only withholds code; a miss it refuses continues
//! in the interpreter, exactly as a switch past its `max_cases` does.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// What a call may spend on cases before its spending is held to
/// [`SHARE`]: large enough that a short program's cases (TLC's recursive
/// fib's) are never refused.
pub const START: Duration = Duration::from_millis(10);

/// Past [`START`], a call's cases take at most one `SHARE`th of its other
/// time: as much as the call has run, so that compiling its cases at most
/// doubles a call's time (the rent-or-buy bound), while a program's tree of
/// cases is whole within its first runs. Held to a tenth of its time, a
/// stack VM's recursive fib(30), a tree of about 45 cases, ran 0.75x plain
/// for its first six runs in one thread, then 9-11x; held to its time,
/// 0.5x, 0.5-0.8x, 1.4-1.8x, then 8-12x from its fourth run
/// (PERFORMANCE.md).
pub const SHARE: u32 = 1;

/// The budget of the call under way in one thread.
#[derive(Clone, Copy, Default)]
struct Budget {
    /// What the call may spend before its spending is held to [`SHARE`];
    /// `None`: misses are not held to a budget ([`limit`]).
    start: Option<Duration>,
    /// When the call began (where the portal did not say: its first case).
    since: Option<Instant>,
    /// What its cases took so far.
    spent: Duration,
    /// A miss was refused since the portal last looked ([`take_exhausted`]).
    exhausted: bool,
    /// The `start` the call was last held to, kept when [`lift`] ends the
    /// holding, for [`has_room`].
    held: Option<Duration>,
}

thread_local! {
    static BUDGET: Cell<Budget> = Cell::new(Budget::default());
}

/// Whether `spent` on cases is within the budget that starts at `start`,
/// `elapsed` into the call: the call's time other than its cases' earns
/// the budget (its cases' own time would earn them more at once).
pub fn within(spent: Duration, elapsed: Duration, start: Duration) -> bool {
    spent < start + elapsed.saturating_sub(spent) / SHARE
}

/// Holds this thread's misses to a budget starting at `start`, or to none,
/// for the outermost portal call that began at `call`: a portal says so as
/// it enters its code (`Config::case_budget`: the default hot-spot policy
/// does; explicit thresholds and `jit::specialize` compile every case
/// unless a test asks otherwise). A call other than the last one starts
/// with nothing spent.
pub fn limit(start: Option<Duration>, call: Option<Instant>) {
    BUDGET.with(|b| {
        let mut x = b.get();
        x.start = start;
        x.held = start;
        x.exhausted = false;
        if call.is_none() || call != x.since {
            x.since = call;
            x.spent = Duration::ZERO;
        }
        b.set(x);
    });
}

/// No code of a portal runs any more: this thread's misses (those of
/// `jit::specialize`) are no longer held to a budget. A refusal already
/// noted stays for [`take_exhausted`].
pub fn lift() {
    BUDGET.with(|b| {
        let mut x = b.get();
        x.start = None;
        b.set(x);
    });
}

/// Whether a miss at `now` may compile a case; if not, the refusal is
/// noted for [`take_exhausted`].
pub fn allows(now: Instant) -> bool {
    BUDGET.with(|b| {
        let mut x = b.get();
        let since = *x.since.get_or_insert(now);
        let ok = x.start.is_none_or(|start| within(x.spent, now.saturating_duration_since(since), start));
        x.exhausted |= !ok;
        b.set(x);
        ok
    })
}

/// Whether the call under way may compile at least [`ROOM`] of cases
/// now: a call whose budget was spent interprets until then, then enters
/// its code again (`Sampler::budget_back`). Always where misses are not
/// held to a budget.
pub fn has_room() -> bool {
    has_room_at(Instant::now())
}

/// [`has_room`] at `now`.
fn has_room_at(now: Instant) -> bool {
    BUDGET.with(|b| {
        let x = b.get();
        let (Some(start), Some(since)) = (x.held, x.since) else { return true };
        x.spent + ROOM < start + now.saturating_duration_since(since).saturating_sub(x.spent) / SHARE
    })
}

/// What a call whose budget was spent waits to have again before it
/// enters its code: a few cases' worth, so that it hands over at most once
/// per `ROOM * SHARE` of interpreting.
pub const ROOM: Duration = Duration::from_millis(2);

/// Records what a case took to compile.
pub fn spend(took: Duration) {
    BUDGET.with(|b| {
        let mut x = b.get();
        x.spent += took;
        b.set(x);
    });
}

/// Whether a miss was refused since the last call (or since the portal
/// entered its code); clears it.
pub fn take_exhausted() -> bool {
    BUDGET.with(|b| {
        let mut x = b.get();
        let was = x.exhausted;
        x.exhausted = false;
        b.set(x);
        was
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_starts_full_and_grows_with_the_call() {
        assert!(within(Duration::ZERO, Duration::ZERO, START));
        assert!(within(START - Duration::from_micros(1), Duration::ZERO, START));
        assert!(!within(START, Duration::ZERO, START));
        // The call's other time earns the budget; its cases' own, nothing.
        let ms = Duration::from_millis;
        let other = ms(100) * SHARE;
        assert!(within(START + ms(99), other + START + ms(99), START));
        assert!(!within(START + ms(100), other + START + ms(100), START));
        assert!(!within(START, START, START), "a call that only compiled its cases has its start");
        assert!(!within(Duration::ZERO, Duration::ZERO, Duration::ZERO), "an empty budget refuses at once");
    }

    #[test]
    fn a_refused_miss_is_told_once_and_only_where_the_budget_is_on() {
        let t = Instant::now();
        limit(None, Some(t));
        spend(START * 2);
        assert!(allows(t), "off: every miss compiles");
        assert!(!take_exhausted());
        limit(Some(START), Some(t));
        assert!(!allows(t), "the same call: spent past the start with no time since");
        assert!(take_exhausted());
        assert!(!take_exhausted(), "told once");
        assert!(allows(t + START * 2 * (SHARE + 1)), "the call's time refills it");
        assert!(!allows(t));
        lift();
        assert!(take_exhausted(), "a refusal outlives the code that met it");
        assert!(allows(t), "lifted: every miss compiles");
        limit(Some(START), Some(t + START));
        assert!(allows(t + START), "a new call starts with nothing spent");
        limit(None, None);
    }

    #[test]
    fn a_call_past_its_budget_has_room_once_its_time_earned_it() {
        // (Times are given: a test paused past a millisecond would earn
        // the room it asserts the call has not.)
        let ms = Duration::from_millis;
        let t = Instant::now();
        limit(Some(Duration::ZERO), Some(t));
        assert!(!has_room_at(t + ROOM * SHARE / 2), "the call's time earned half of ROOM");
        lift();
        assert!(!has_room_at(t + ROOM * SHARE / 2), "its code returned, but the call is still held to its budget");
        let later = t + ROOM * SHARE + ms(1);
        limit(Some(Duration::ZERO), Some(t));
        assert!(has_room_at(later), "its time earned ROOM");
        spend(ms(1));
        assert!(!has_room_at(later), "the case's time earned nothing: less than ROOM left");
        limit(None, Some(t));
        assert!(has_room_at(later), "a call not held to a budget always has room");
        limit(None, None);
    }
}
