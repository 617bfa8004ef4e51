//! Retiring code that runs slower than the interpreter.
//!
//! Compiled code can lose to the interpreter it came from: a recursion whose
//! frames go to the continuation stack and back at each call, callbacks into
//! the runtime on its hot path. Such code is found by timing whole portal
//! calls, per the green word of the position each call starts at (its
//! program and entry point): calls that entered compiled code and compiled
//! nothing ("compiled calls") against calls that entered none ("interpreted
//! calls"). A call that entered code whose fusion was due but postponed
//! ran its pieces unfused, slower than they will run: it does not count as
//! a compiled call (`Sampler::unsettled_code`), so that code is judged as it
//! stays. Such calls are timed apart ([`CallKind::Unfused`]): where the
//! latest ones ran slower than the interpreted calls before the code
//! (`Tally::unfused_slower`), waiting to fuse costs more with each call than
//! not having compiled, and the code fuses at once; while the compiler's
//! thread compiles that fusion, calls that reach the code interpret instead
//! (`Sampler::interpret_rest`) and are not timed ([`CallKind::Waited`]).
//! The procedure VM's fib ran its pieces unfused at 2-3x its plain time for
//! the 100-300 ms its fusion took. After [`SAMPLES`] compiled calls:
//! - compiled calls [`CLEARLY`] faster than the interpreted calls made
//!   before the code existed (which also paid for counting toward
//!   compiling): the code stays, and nothing more is measured;
//! - else the code is *suspect*: the position's next [`SAMPLES`] calls are
//!   interpreted on purpose, so that both kinds are measured on the same
//!   work at the same time; then compiled calls slower than [`SLOWER`] times
//!   the interpreted ones (medians) retire the keys the compiled calls
//!   entered (interpreted from then on, with the reason in `jit::stats()`
//!   and `JITGEN_LOG`), and later calls starting at that position go on
//!   without their hook; once the last two calls started there, the next
//!   ones run the plain interpreter's own function, out of line, but for
//!   one in 16 that goes through the hook (`Sampler::runs_plain`).
//!
//! A call interpreted on purpose that runs past [`CLEARLY`] times the
//! compiled calls' median keeps the code and enters it from then on, but
//! its visits elsewhere count nothing toward compiling
//! (`Sampler::past_code`).
//!
//! A call interpreted on purpose, or at a retired position, enters no code,
//! so it tests no entry filter: it samples its visits as where the portal
//! has no code (`Sampler::entry_mask`). That loop still ran 1.25-1.4x the
//! plain interpreter's own function in the function VM, so after the first
//! such call (which may find the code clearly faster and stop comparing,
//! [`Tally::interpreted_past_code`]) the next ones run that function,
//! timed for the position the last calls started at
//! (`Sampler::runs_plain_timed`), and the comparison is with that.
//!
//! Calls shorter than [`SHORTEST`] are not counted. Code compiled in the
//! first call of its position has no interpreted calls before it: it is
//! compared with the calls that compiled it instead, which interpreted
//! until the code came and then waited for it, a baseline that flatters
//! the code still more ([`CLEARLY_THAN_COMPILING`]; where none took
//! [`SHORTEST`], the code stays). The
//! comparison needs calls that do the same work: interpreted calls whose
//! times spread by more than [`SPREAD`] (a caller running the same program on
//! growing inputs) leave the verdict to the code. Only the outermost
//! call of a portal is timed; calls it makes of the portal (an interpreter
//! recursing in Rust) are part of its work.
//!
//! A single long call has no other call to compare with: code that stays
//! in it is timed by its *turn checks* instead ([`TurnClock`]). Where a
//! path that called Rust comes back to the merge point the code was
//! entered at, the code counts the turn down in memory; at zero it leaves
//! to the interpreter, and the portal compares its time per turn with the
//! interpreter's per visit of the same position, measured right after.
//! (A dynamic VM whose values own `String`s, each push and pop of its
//! operand stack a residual call, ran a whole loop in one call several
//! times slower than plain before: PERFORMANCE.md.)
//!
//! Invariant: a retired position never enters compiled code again in that
//! thread; its keys are declined (`DeclineKind::Positional`, "retired").

use std::time::Duration;

/// Calls of each kind that decide a position's verdict.
pub const SAMPLES: usize = 3;

/// How much slower than interpreted calls compiled calls may be before
/// their code is retired (their medians' ratio).
pub const SLOWER: f64 = 1.25;

/// The most that interpreted calls of one position may spread (longest over
/// shortest) for them to stand for the same work.
pub const SPREAD: f64 = 1.5;

/// How many times faster than the interpreted calls before it compiled
/// calls must be for their code to stay without interpreting calls on
/// purpose: those calls paid for counting toward compiling (the procedure
/// VM's Ackermann: 2.2x its plain time), so code only somewhat faster than
/// them may still be slower than the plain interpreter.
pub const CLEARLY: f64 = 2.0;

/// How many times faster than the calls that compiled it code compiled in
/// its position's first call must be to stay without interpreting calls on
/// purpose: those calls interpreted, waited for the code and recorded it,
/// and took 1.8-2.7x the plain interpreter's time in the function VM's
/// Ackermann, whose code at 20 ms against plain's 15 passed [`CLEARLY`].
pub const CLEARLY_THAN_COMPILING: f64 = 4.0;

/// Calls shorter than this are not timed: the clock and the cost of
/// entering code would be most of what is measured.
pub const SHORTEST: Duration = Duration::from_micros(50);

/// What a portal call did, for its position's [`Tally`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// It entered no compiled code.
    Interpreted,
    /// It entered compiled code and compiled nothing.
    Compiled,
    /// It compiled something (its time is mostly the compiler's).
    Compiling,
    /// It entered code whose fusion was due but postponed, and compiled
    /// nothing: its pieces ran unfused.
    Unfused,
    /// It interpreted where its code waited for a fusion
    /// ([`Tally::unfused_slower`]): its time may include handing the
    /// fusion over, and it does not count.
    Waited,
}

/// What is known of a position's code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Not measured enough yet.
    Open,
    /// The code is no slower than interpreting, or the calls differ too
    /// much to tell.
    Keep,
    /// The code is slower: medians of compiled and interpreted calls.
    Retire {
        /// Compiled calls' median.
        compiled: Duration,
        /// Interpreted calls' median.
        interpreted: Duration,
    },
}

/// The timed calls of one position.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Interpreted calls before any compiled one.
    before: Vec<Duration>,
    /// Calls that compiled before any compiled one (the latest
    /// [`SAMPLES`]): the baseline where no interpreted call came first.
    compiling: Vec<Duration>,
    /// Interpreted calls since (on purpose, once the code is suspect).
    interpreted: Vec<Duration>,
    compiled: Vec<Duration>,
    /// Calls that ran code waiting to be fused (the latest [`SAMPLES`]).
    unfused: Vec<Duration>,
    /// The compiled calls were no faster than those before them: the
    /// position's calls are interpreted on purpose to compare.
    suspect: bool,
    /// The verdict so far.
    pub verdict: Verdict,
}

impl Tally {
    /// Code entered from this position was retired by its turn checks
    /// inside one call, twice (see `Sampler::turn_retired_in_call`): later
    /// calls starting here run as after a verdict of calls, interpreted,
    /// then the plain interpreter's own function.
    pub fn retire_by_turns(&mut self, compiled: Duration, interpreted: Duration) {
        self.verdict = Verdict::Retire { compiled, interpreted };
    }
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            before: vec![],
            compiling: vec![],
            interpreted: vec![],
            compiled: vec![],
            unfused: vec![],
            suspect: false,
            verdict: Verdict::Open,
        }
    }
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}

/// Pushes `d` onto `v`, keeping the latest [`SAMPLES`].
fn push_latest(v: &mut Vec<Duration>, d: Duration) {
    if v.len() == SAMPLES {
        v.remove(0);
    }
    v.push(d);
}

impl Tally {
    /// Whether code waiting to be fused runs slower than interpreting did:
    /// the latest [`SAMPLES`] calls that ran it took longer (median) than
    /// the interpreted calls before any code (which also paid for counting
    /// toward compiling). Then waiting to fuse costs more with each call
    /// than not having compiled at all: the code fuses at once, and until
    /// the fusion is installed calls reaching the code interpret instead
    /// (`PortalSite::code`). A call that ran the code as it stays
    /// ([`CallKind::Compiled`]) forgets these samples. One call [`CLEARLY`]
    /// slower than that decides at once: where a call is a whole program,
    /// each more call that waits is one more run at that cost (a new user's
    /// stack VM ran three calls of recursive fib unfused at 0.3x its plain
    /// interpreter's speed before fusing; mistaken, this only fuses sooner).
    pub fn unfused_slower(&self) -> bool {
        if self.before.is_empty() {
            return false;
        }
        let before = median(&self.before);
        let clearly_slower = self.unfused.last().is_some_and(|u| u.as_secs_f64() > CLEARLY * before.as_secs_f64());
        clearly_slower || (self.unfused.len() == SAMPLES && median(&self.unfused) > before)
    }

    /// Whether the next call starting here should be interpreted on
    /// purpose: the code is suspect and the verdict open.
    pub fn wants_interpreted(&self) -> bool {
        self.verdict == Verdict::Open && self.suspect && self.interpreted.len() < SAMPLES
    }

    /// Whether the next call interpreted on purpose may run the plain
    /// interpreter's own function, untested by the hook: one such call went
    /// through the hook already, where it could find the code clearly
    /// faster ([`Tally::interpreted_past_code`]) and did not.
    pub fn wants_plain_interpreted(&self) -> bool {
        self.wants_interpreted() && !self.interpreted.is_empty()
    }

    /// Whether a call interpreted on purpose that has run `took` so far
    /// shows the code clearly faster: it took [`CLEARLY`] times the
    /// compiled calls' median already. Then the code stays
    /// ([`Tally::keep`]) and the call enters it from there, so that
    /// comparing never costs more than that (a Brainfuck loop's code ran
    /// 40x faster than its interpreter: three whole calls interpreted on
    /// purpose would have cost a hundred compiled ones).
    pub fn interpreted_past_code(&self, took: Duration) -> bool {
        self.wants_interpreted()
            && self.compiled.len() == SAMPLES
            && took.as_secs_f64() > CLEARLY * median(&self.compiled).as_secs_f64()
    }

    /// Keeps the code: a call interpreted on purpose ran past
    /// [`Tally::interpreted_past_code`].
    pub fn keep(&mut self) {
        self.verdict = Verdict::Keep;
    }

    /// Records a call of `kind` that took `took`; returns the verdict when
    /// this call decided it.
    pub fn record(&mut self, kind: CallKind, took: Duration) -> Option<Verdict> {
        match kind {
            CallKind::Unfused if took >= SHORTEST => push_latest(&mut self.unfused, took),
            // The code ran as it stays: how it ran unfused is past.
            CallKind::Compiled => self.unfused.clear(),
            _ => {}
        }
        // A call interpreted on purpose counts however short: were it left
        // out, the position would stay suspect and be interpreted on purpose
        // for good (a recursion in Rust's short calls ran plain from then on).
        let on_purpose = kind == CallKind::Interpreted && self.suspect;
        if self.verdict != Verdict::Open || (took < SHORTEST && !on_purpose) {
            return None;
        }
        match kind {
            CallKind::Compiling if self.compiled.is_empty() => {
                push_latest(&mut self.compiling, took);
                return None;
            }
            CallKind::Compiling | CallKind::Unfused | CallKind::Waited => return None,
            CallKind::Interpreted if self.compiled.is_empty() => push_latest(&mut self.before, took),
            CallKind::Interpreted => push_latest(&mut self.interpreted, took),
            CallKind::Compiled => push_latest(&mut self.compiled, took),
        }
        if self.compiled.len() < SAMPLES {
            return None;
        }
        let compiled = median(&self.compiled);
        if !self.suspect {
            // Clearly faster than the calls before it (which also counted
            // toward compiling, with cold caches: a baseline that flatters
            // the code), or, by more, than the calls that compiled it where
            // none came before (funcvm's Ackermann, its code compiled in its first
            // call, now and then fused into code slower than its
            // interpreter and kept it): the code stays, and no call is
            // interpreted on purpose. With neither, nothing to compare.
            let (baseline, clearly) = if self.before.is_empty() {
                (&self.compiling, CLEARLY_THAN_COMPILING)
            } else {
                (&self.before, CLEARLY)
            };
            if baseline.is_empty() || compiled.as_secs_f64() * clearly <= median(baseline).as_secs_f64() {
                self.verdict = Verdict::Keep;
                return Some(self.verdict);
            }
            self.suspect = true;
        }
        if self.interpreted.len() < SAMPLES {
            return None;
        }
        let (lo, hi) = (self.interpreted.iter().min().copied(), self.interpreted.iter().max().copied());
        let (Some(lo), Some(hi)) = (lo, hi) else { return None };
        let interpreted = median(&self.interpreted);
        self.verdict = if hi.as_secs_f64() > SPREAD * lo.as_secs_f64() {
            Verdict::Keep
        } else if compiled.as_secs_f64() > SLOWER * interpreted.as_secs_f64() {
            Verdict::Retire { compiled, interpreted }
        } else {
            Verdict::Keep
        };
        Some(self.verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn code_waiting_to_be_fused_is_slower_after_three_calls_slower_than_interpreted_ones_or_one_clearly_slower() {
        let mut t = Tally::default();
        for _ in 0..SAMPLES {
            t.record(CallKind::Interpreted, ms(6));
        }
        t.record(CallKind::Compiling, ms(50));
        // Unfused calls as fast as interpreting, then slower.
        for k in 0..SAMPLES {
            assert_eq!(t.record(CallKind::Unfused, ms(5)), None, "not part of the verdict");
            assert!(!t.unfused_slower(), "call {k}");
        }
        t.record(CallKind::Unfused, ms(9));
        assert!(!t.unfused_slower(), "two of the latest three were faster than interpreting");
        t.record(CallKind::Unfused, ms(9));
        assert!(t.unfused_slower(), "the median of the latest three is slower");
        // One call more than twice as slow as interpreting decides alone.
        let mut once = Tally::default();
        once.record(CallKind::Interpreted, ms(6));
        once.record(CallKind::Unfused, ms(12));
        assert!(!once.unfused_slower(), "twice as slow is not clearly slower");
        once.record(CallKind::Unfused, ms(13));
        assert!(once.unfused_slower(), "more than twice as slow");
        once.record(CallKind::Unfused, ms(5));
        assert!(once.unfused_slower(), "the median of the latest three (12 ms) is slower");
        once.record(CallKind::Unfused, ms(5));
        assert!(!once.unfused_slower(), "the latest call was fast, and so is the median of three");
        // Calls that interpreted while the fusion was compiled do not count,
        // neither as interpreted calls nor as unfused ones.
        for _ in 0..SAMPLES {
            assert_eq!(t.record(CallKind::Waited, ms(20)), None);
        }
        assert!(t.unfused_slower(), "waiting calls change nothing");
        assert_eq!((t.before.len(), t.interpreted.len(), t.compiled.len()), (SAMPLES, 0, 0));
        // A call that ran the code as it stays (fused): the unfused calls are past.
        t.record(CallKind::Compiled, ms(2));
        assert!(!t.unfused_slower(), "forgotten once the code ran fused");
        // Nothing interpreted before the code: nothing to compare with.
        let mut fresh = Tally::default();
        for _ in 0..SAMPLES {
            fresh.record(CallKind::Unfused, ms(9));
        }
        assert!(!fresh.unfused_slower());
    }

    #[test]
    fn code_slower_than_interpreting_is_retired_after_three_calls_of_each() {
        let mut t = Tally::default();
        assert!(!t.wants_interpreted(), "no code yet");
        for _ in 0..SAMPLES {
            assert_eq!(t.record(CallKind::Interpreted, ms(6)), None);
        }
        assert_eq!(t.record(CallKind::Compiling, ms(50)), None);
        for _ in 0..SAMPLES {
            assert!(!t.wants_interpreted(), "not suspect yet");
            assert_eq!(t.record(CallKind::Compiled, ms(9)), None);
        }
        // Slower than the calls before it: suspect. Interpreted on purpose,
        // the same work takes 4 ms.
        let mut v = None;
        for _ in 0..SAMPLES {
            assert!(t.wants_interpreted());
            v = t.record(CallKind::Interpreted, ms(4));
        }
        assert_eq!(v, Some(Verdict::Retire { compiled: ms(9), interpreted: ms(4) }));
        assert!(!t.wants_interpreted());
        assert_eq!(t.record(CallKind::Compiled, ms(9)), None, "decided once");
    }

    #[test]
    fn code_faster_than_the_calls_before_it_stays_and_is_never_interpreted_on_purpose() {
        let mut t = Tally::default();
        for _ in 0..SAMPLES {
            t.record(CallKind::Interpreted, ms(40));
        }
        let mut v = None;
        for _ in 0..SAMPLES {
            assert!(!t.wants_interpreted());
            v = t.record(CallKind::Compiled, ms(4));
        }
        assert_eq!(v, Some(Verdict::Keep));
        assert!(!t.wants_interpreted());
    }

    #[test]
    fn suspect_code_as_fast_as_interpreting_stays() {
        for compiled in [4, 5] {
            let mut t = Tally::default();
            t.record(CallKind::Interpreted, ms(3));
            for _ in 0..SAMPLES {
                t.record(CallKind::Compiled, ms(compiled));
            }
            assert!(t.wants_interpreted(), "slower than the call before it: suspect");
            let mut v = None;
            for _ in 0..SAMPLES {
                v = t.record(CallKind::Interpreted, ms(4));
            }
            assert_eq!(v, Some(Verdict::Keep), "{compiled} ms against 4");
        }
    }

    #[test]
    fn code_compiled_in_a_first_call_is_compared_with_the_calls_that_compiled_it() {
        // Clearly faster than the calls that compiled it: kept at once.
        let mut fast = Tally::default();
        fast.record(CallKind::Compiling, ms(50));
        fast.record(CallKind::Compiling, ms(12));
        let mut v = None;
        for _ in 0..SAMPLES {
            v = fast.record(CallKind::Compiled, ms(10));
        }
        assert_eq!(v, Some(Verdict::Keep), "the median of 50 and 12 ms is 50: more than 4x 10 ms");
        assert!(!fast.wants_interpreted());
        // Not clearly faster: calls interpreted on purpose decide.
        for (interpreted, verdict) in
            [(100, Verdict::Keep), (20, Verdict::Retire { compiled: ms(40), interpreted: ms(20) })]
        {
            let mut t = Tally::default();
            t.record(CallKind::Compiling, ms(60));
            let mut v = None;
            for _ in 0..SAMPLES {
                v = t.record(CallKind::Compiled, ms(40));
            }
            assert_eq!(v, None, "suspect: nothing decided yet");
            t.record(CallKind::Compiling, ms(30));
            for _ in 0..SAMPLES {
                assert!(t.wants_interpreted());
                v = t.record(CallKind::Interpreted, ms(interpreted));
            }
            assert_eq!(v, Some(verdict), "{interpreted} ms interpreted");
        }
    }

    #[test]
    fn a_call_interpreted_on_purpose_past_twice_the_codes_time_keeps_it() {
        let mut t = Tally::default();
        t.record(CallKind::Compiling, ms(12));
        for _ in 0..SAMPLES {
            t.record(CallKind::Compiled, ms(10));
        }
        assert!(t.wants_interpreted(), "not clearly faster than the call that compiled it");
        assert!(!t.interpreted_past_code(ms(20)), "not past twice 10 ms yet");
        assert!(t.interpreted_past_code(ms(21)));
        t.keep();
        assert!(!t.wants_interpreted() && !t.interpreted_past_code(ms(100)));
        assert_eq!(t.verdict, Verdict::Keep);
    }

    #[test]
    fn calls_interpreted_on_purpose_count_however_short() {
        let mut t = Tally::default();
        t.record(CallKind::Interpreted, ms(1));
        for _ in 0..SAMPLES {
            t.record(CallKind::Compiled, ms(1));
        }
        let short = Duration::from_micros(10);
        let mut v = None;
        for _ in 0..SAMPLES {
            assert!(t.wants_interpreted());
            v = t.record(CallKind::Interpreted, short);
        }
        assert_eq!(v, Some(Verdict::Retire { compiled: ms(1), interpreted: short }));
    }

    #[test]
    fn code_with_nothing_to_compare_with_or_calls_too_short_to_time_stay() {
        let mut t = Tally::default();
        let mut v = None;
        for _ in 0..SAMPLES {
            v = t.record(CallKind::Compiled, ms(40));
        }
        assert_eq!(v, Some(Verdict::Keep), "no call before the code");
        let mut t = Tally::default();
        for _ in 0..10 {
            t.record(CallKind::Interpreted, Duration::from_micros(10));
            assert_eq!(t.record(CallKind::Compiled, Duration::from_micros(40)), None);
        }
        assert!(!t.wants_interpreted());
    }

    #[test]
    fn calls_of_different_work_leave_the_code() {
        // A caller running the program on growing inputs: the interpreted
        // calls spread too far to stand for the compiled ones' work.
        let mut t = Tally::default();
        t.record(CallKind::Interpreted, ms(1));
        for _ in 0..SAMPLES {
            t.record(CallKind::Compiled, ms(40));
        }
        let mut v = None;
        for x in [1, 2, 4] {
            v = t.record(CallKind::Interpreted, ms(x));
        }
        assert_eq!(v, Some(Verdict::Keep));
    }
}

/// Turns of the first count a portal arms a tree's
/// [`TurnCounter`](crate::ir::function::TurnCounter) with.
pub const FIRST_TURNS: i64 = 1 << 10;

/// The most turns a counter is armed with.
pub const MOST_TURNS: i64 = 1 << 40;

/// The code time a count of turns must span to be compared with the
/// interpreter: shorter, the count is armed again with more turns.
pub const TURN_SPAN: Duration = Duration::from_millis(2);

/// What the interpreter must run of a key being measured, in visits of it
/// and in time, before its time per visit is compared with the code's.
pub const MEASURED_VISITS: u32 = 16;
/// See [`MEASURED_VISITS`].
pub const MEASURED_SPAN: Duration = Duration::from_micros(100);

/// How many times more turns a count is armed with after code was found
/// [`CLEARLY`] faster than interpreting (twice, where it won narrowly):
/// checks get rarer as the code proves itself.
pub const TURNS_GROWTH: i64 = 8;

/// How much slower than the interpreter's time per visit a turn of code
/// may be before its turn checks retire it. The interpreter is measured
/// with its hook looking at every visit (see `Sampler::measure`), which
/// costs a few nanoseconds per visit more than the plain interpreter
/// (PERFORMANCE.md): its measure is already above what interpreting costs
/// once the code is gone, so code no faster than it is retired.
pub const TURN_SLOWER: f64 = 1.0;

/// What the portal knows of the turn checks of one key's code, for code
/// that makes them (see [`crate::ir::function::TurnCounter`]): code that
/// stays inside one long portal call (a whole run in one loop) is timed per
/// turn through its entry, and compared with the interpreter's time per
/// visit of the same position, measured right after on the same work.
/// Code [`TURN_SLOWER`] than that is retired, as calls found slower are.
///
/// A count is *armed* at an entry of the code (`enter`): the counter gets
/// the turns, and the code time and compile time so far are kept with it.
/// Every key rooted at one position shares its counter, so a count spans
/// the turns of all their code, as the code time spans its time; whichever
/// key's code runs it out (`ran_out`) takes the measure. Their code time,
/// less what was compiled meanwhile (cases compile from inside code), is
/// the code's time for that many turns; under [`TURN_SPAN`] it is armed
/// again with more turns, else the key is *measured*: its code is not
/// entered, and the sampler counts the interpreter's visits of its green
/// word (`Sampler::measure`) until [`MEASURED_VISITS`] and
/// [`MEASURED_SPAN`] have passed (`measured`). Code found slower is
/// retired with every key sharing the counter. Where the code is no
/// slower, the next count is [`TURNS_GROWTH`] times longer, so that code
/// that stays pays for fewer and fewer measures; each costs
/// [`MEASURED_SPAN`] of interpreting and one hand-over.
#[derive(Clone, Debug, Default)]
pub struct TurnClock {
    /// The green word of the key's position (what the sampler measures).
    pub word: u64,
    /// The code's time per turn, while its key is measured.
    measuring: Option<Duration>,
}

/// What the measure of a key decides (see [`TurnClock::measured`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnVerdict {
    /// The code is no slower: it runs again, and is checked after more turns.
    Keep,
    /// The code is slower: its time per turn, and the interpreter's.
    Retire {
        /// The code's time per turn.
        compiled: Duration,
        /// The interpreter's time per visit.
        interpreted: Duration,
    },
}

impl TurnClock {
    /// Whether the key is being measured (its code is not entered).
    #[inline]
    pub fn measuring(&self) -> bool {
        self.measuring.is_some()
    }

    /// Gives up measuring (another key is measured): the code is entered
    /// again, and its next count decides.
    pub fn abandon(&mut self) {
        self.measuring = None;
    }

    /// The code is entered with `code_time` spent in code and `compiled`
    /// nanoseconds compiling so far: arms a count unless one is (the
    /// counter's: every key rooted at the position shares it), of `first`
    /// turns the first time.
    pub fn enter(
        &mut self,
        counter: &crate::ir::function::TurnCounter,
        code_time: Duration,
        compiled: u64,
        first: i64,
    ) {
        if counter.partial.get() {
            // Not every turn counts: a time per counted turn is not one per
            // visit (see `TurnCounter`).
            counter.armed.set(None);
            return;
        }
        if counter.turns.get() == 0 {
            counter.turns.set(first.max(1));
        }
        if counter.ran_out() {
            // It left where execute mode did not stop at the portal's merge
            // point, so no hand-over told the portal: armed again, for more.
            counter.armed.set(None);
            counter.turns.set(counter.turns.get().saturating_mul(2).min(MOST_TURNS));
        }
        if counter.armed.get().is_none() && self.measuring.is_none() {
            counter.left.set(counter.turns.get());
            counter.armed.set(Some((code_time, compiled)));
        }
    }

    /// The code left with its count run out, at `code_time` and `compiled`
    /// (as for [`TurnClock::enter`]): armed again with more turns if the
    /// count spanned too little code time, else the key is measured from
    /// its next visit.
    pub fn ran_out(&mut self, counter: &crate::ir::function::TurnCounter, code_time: Duration, compiled: u64) {
        counter.left.set(i64::MAX);
        let Some((at, compiled_at)) = counter.armed.take().filter(|_| !counter.partial.get()) else { return };
        let spent =
            code_time.saturating_sub(at).saturating_sub(Duration::from_nanos(compiled.saturating_sub(compiled_at)));
        let turns = counter.turns.get();
        if spent < TURN_SPAN {
            let grow = (TURN_SPAN.as_nanos() / spent.as_nanos().max(1)).clamp(2, 1024) as i64;
            counter.turns.set(turns.saturating_mul(grow).min(MOST_TURNS));
        } else {
            let per_turn = Duration::from_nanos((spent.as_nanos() / turns.max(1) as u128) as u64);
            self.measuring = Some(per_turn);
        }
    }

    /// The interpreter's measure (see `Sampler::measure`): `visits` of the
    /// key's green word in `took`.
    pub fn measured(&mut self, counter: &crate::ir::function::TurnCounter, visits: u32, took: Duration) -> TurnVerdict {
        let Some(compiled) = self.measuring.take() else { return TurnVerdict::Keep };
        let interpreted = took / visits.max(1);
        if compiled.as_secs_f64() > TURN_SLOWER * interpreted.as_secs_f64() {
            TurnVerdict::Retire { compiled, interpreted }
        } else {
            // Code that won narrowly is checked again sooner: the measure
            // flatters the interpreter's rival (see `TURN_SLOWER`).
            let clearly = compiled.as_secs_f64() * CLEARLY <= interpreted.as_secs_f64();
            let growth = if clearly { TURNS_GROWTH } else { 2 };
            counter.turns.set(counter.turns.get().saturating_mul(growth).min(MOST_TURNS));
            TurnVerdict::Keep
        }
    }
}
