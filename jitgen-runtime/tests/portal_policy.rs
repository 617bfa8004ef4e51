//! The hot-spot policy where the interpreter has saved frames: when code
//! that hands over at its return below its entry is retired, and what the
//! warm-up expects compiling to cost.

use std::cell::RefCell;
use std::time::Duration;

use jitgen_runtime::builder::{ResidualBuilder, ResidualFunction};
use jitgen_runtime::driver::{
    Config, Hot, LoopSampler, PortalCache, PortalSite, Sampler, Stats, QUIET_VISITS, RETIRE_AFTER, WORTH_A_HAND_OVER,
};
use jitgen_runtime::ops::ValTy;
use jitgen_runtime::residual::{compile_host, ResidualFn};

thread_local! {
    static CACHE: RefCell<PortalCache<[u64; 1]>> = RefCell::new(PortalCache::default());
    static SAMPLER: Sampler = const { Sampler::new() };
}
static CONFIG: Config = Config::new();

/// Some code to keep in the cache at key `[7]` (a fresh entry, no runs yet).
fn fresh_code() {
    let mut b = ResidualBuilder::new("code", &[], &[ValTy::I64]);
    let r = b.konst(ValTy::I64, 7);
    b.ret(&[r]);
    let f: ResidualFn = compile_host(&b.finish()).expect("compiles");
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        *c = PortalCache::default();
        c.insert([7], &[b"code"], Some(f));
    });
}

/// Runs the code at `[7]` again and again, each run handing over after
/// `ran`; whether it was retired.
fn retired_after_runs(site: &PortalSite<[u64; 1]>, ran: Duration) -> bool {
    for _ in 0..4 * RETIRE_AFTER {
        if !matches!(CACHE.with(|c| c.borrow_mut().visit(&[7], &[b"code"], 0)), Hot::Run(_)) {
            return true;
        }
        site.handed_over(&[7], Some(ran));
    }
    false
}

fn site(stats: &'static Stats) -> PortalSite<[u64; 1]> {
    PortalSite { cache: &CACHE, sampler: &SAMPLER, config: &CONFIG, stats, nested: true }
}

/// A hand-over after a long run with saved frames (a whole call of the
/// interpreted program in compiled code) does not count toward retiring
/// the code, and retiring code that ran briefly leaves the other positions
/// with saved frames alone.
#[test]
fn saved_frames_code_is_retired_only_for_brief_runs() {
    static COMPILED: Stats = Stats::new();
    fresh_code();
    assert!(!retired_after_runs(&site(&COMPILED), WORTH_A_HAND_OVER), "long runs keep their code");
    fresh_code();
    assert!(retired_after_runs(&site(&COMPILED), WORTH_A_HAND_OVER / 10), "brief runs do not");
    assert!(!COMPILED.recursion_seen());
}

/// What compiling a key has cost: all compilations' time, flexswitch cases
/// included, per compilation that was not a case (the warm-up's expectation).
#[test]
fn compile_time_per_key_counts_the_cases() {
    let s = Stats::new();
    assert_eq!(s.compile_per_key(), None);
    s.compiled(Some(100), 3_000_000);
    s.compiled(Some(50), 4_000_000);
    s.case_compiled(Some(50), 4_000_000);
    s.compiled(Some(30), 5_000_000);
    s.case_compiled(Some(30), 5_000_000);
    assert_eq!(s.compile_per_key(), Some(Duration::from_millis(12)));
    // The cases' own share, which the harness prints per operation.
    let snap = s.snapshot();
    assert_eq!((snap.case_residual_ops, snap.case_compile_nanos), (80, 9_000_000));
    assert_eq!((snap.residual_ops, snap.compile_nanos), (180, 12_000_000));
}

/// What fusing has cost per operation it compiled, kept apart from what
/// compiling costs (a fusion's wait is estimated from it).
#[test]
fn fusing_cost_per_operation_is_its_own() {
    let s = Stats::new();
    assert_eq!(s.nanos_per_fused_op(), None);
    s.compiled(Some(100), 2_000_000);
    s.fused(600_000, 200);
    s.fused(400_000, 300);
    assert_eq!(s.nanos_per_fused_op(), Some(2_000));
    assert_eq!(s.nanos_per_op(), Some(20_000));
    let snap = s.snapshot();
    assert_eq!((snap.fusions, snap.fusion_nanos, snap.fused_ops), (2, 1_000_000, 500));
    assert_eq!(s.compile_nanos(), 2_000_000);
}

/// A position whose key declined (its code retired) but whose green word
/// the entry filter holds for code elsewhere (keys that differ in other
/// greens share a word) is skipped again after its first visit, so the
/// other positions are still counted; code entered at the word sets its
/// bit again.
#[test]
fn a_declined_position_sharing_a_word_with_code_is_skipped_again() {
    use jitgen_runtime::driver::green_word;
    static STATS: Stats = Stats::new();
    static SPARSE: Config = Config::new();
    SPARSE.set_threshold(1 << 20);
    fresh_code();
    CACHE.with(|c| c.borrow_mut().insert_declined([8], "residual code retired: it kept handing over"));
    let site = PortalSite { cache: &CACHE, sampler: &SAMPLER, config: &SPARSE, stats: &STATS, nested: false };
    let shared = green_word(&[0x5000, 3]);
    SAMPLER.with(|s| s.add_entry(shared));
    // The interpreter loop, as the portal's generated code.
    let mut sampler = LoopSampler::new(SAMPLER.with(|s| s.entry_mask()));
    let mut visit = |key: u64, word: u64| -> Option<Hot> {
        let ask = |due, left, word| SAMPLER.with(|s| s.ask(due, left, word));
        if !sampler.due() || !sampler.visits_hook(word, ask) {
            return None;
        }
        let content: &[&[u8]] = if key == 7 { &[b"code"] } else { &[] };
        let hot = site.visit(&[key], content).unwrap_or(Hot::Cold);
        sampler.mask = SAMPLER.with(|s| s.entry_mask());
        Some(hot)
    };
    let (mut declined_visits, mut others) = (0, 0);
    for _call in 0..1000 {
        declined_visits += usize::from(visit(8, shared).is_some());
        for i in 0..20 {
            others += usize::from(visit(100 + i, green_word(&[0x5000, 100 + i])).is_some());
        }
    }
    assert!(declined_visits <= 20, "the declined position reached the hook {declined_visits} times in 1000");
    assert!(others >= 20, "the other positions were counted {others} times");
    assert!(!SAMPLER.with(|s| s.may_enter(shared)));
    // The code at the shared word is entered when a visit reaches it.
    let hot = (0..10_000).find_map(|_| visit(7, shared).filter(|h| matches!(h, Hot::Run(_))));
    let hot = hot.expect("a visit reaches the code");
    let mut never = |_: &[u64]| -> Result<ResidualFunction, String> { unreachable!("the code is there") };
    assert!(site.code(hot, [7], &[], &[], &mut never, &|| shared).is_some());
    assert!(SAMPLER.with(|s| s.may_enter(shared)), "entered code sets its word again");
}

/// A call whose visits all pass the entry mask (a collision at each) and
/// enter no code asks the portal at every visit for `QUIET_VISITS` visits,
/// then samples them as where the portal has no code: one ask per sample
/// period. Code entered makes it test the mask at every visit again.
#[test]
fn a_call_entering_no_code_stops_testing_the_mask() {
    let mut sampler = LoopSampler::new(u64::MAX);
    let run = |sampler: &mut LoopSampler, visits: u32| {
        let mut asked = 0u32;
        for _ in 0..visits {
            let ask = |due: bool, left: u32, _word: u64| {
                asked += 1;
                Some(if due { 99 } else { left })
            };
            assert!(!(sampler.due() && sampler.visits_hook(1234, ask)), "nothing lets a visit through");
        }
        asked
    };
    assert_eq!(run(&mut sampler, QUIET_VISITS), QUIET_VISITS);
    let sampled = run(&mut sampler, 10_000);
    assert!((90..=110).contains(&sampled), "{sampled} asks in 10,000 visits");
    sampler.entered();
    assert_eq!(run(&mut sampler, 100), 100);
    // Quiet again, a sample answered `LOOK_AGAIN` (a word is measured)
    // makes it test the mask at every visit again too.
    run(&mut sampler, QUIET_VISITS + 200);
    let mut answered = false;
    for _ in 0..1000 {
        let look_again = |_: bool, _: u32, _: u64| {
            answered = true;
            Some(jitgen_runtime::driver::LOOK_AGAIN)
        };
        assert!(!(sampler.due() && sampler.visits_hook(1234, look_again)));
        if answered {
            break;
        }
    }
    assert!(answered, "a quiet loop asks within a sample period");
    assert_eq!(run(&mut sampler, 100), 100, "the mask tested at every visit");
}

/// A fresh portal site at the thread's cache and sampler, compiling at
/// first sight, whose calls are timed (see `portal_call`).
fn timed_site(stats: &'static Stats, config: &'static Config) -> PortalSite<[u64; 1]> {
    config.set_threshold(0);
    CACHE.with(|c| *c.borrow_mut() = PortalCache::default());
    PortalSite { cache: &CACHE, sampler: &SAMPLER, config, stats, nested: false }
}

/// One call of the portal, as its generated code makes it: begins, its
/// first visit at key `[9]` (green word `word`), entering or compiling there
/// as the site says, and ends having taken `took`. Whether it entered code,
/// and its mode.
fn portal_call(
    site: &PortalSite<[u64; 1]>,
    stats: &Stats,
    word: u64,
    took: Duration,
    code: bool,
) -> (bool, jitgen_runtime::driver::CallMode) {
    use jitgen_runtime::driver::CallMode;
    let timed = SAMPLER.with(|s| s.begin_call(stats.compile_work()));
    assert!(timed, "the outermost call");
    let goes = SAMPLER.with(|s| s.ask(true, 0, word)).is_none();
    let mode = SAMPLER.with(|s| s.call_mode());
    let mut entered = false;
    if goes || mode != CallMode::Normal {
        if let Some(hot) = site.visit(&[9], &[]) {
            let mut compile = |_: &[u64]| -> Result<ResidualFunction, String> {
                let mut b = ResidualBuilder::new("code", &[], &[ValTy::I64]);
                let r = b.konst(ValTy::I64, 9);
                b.ret(&[r]);
                Ok(b.finish())
            };
            entered = code && site.code(hot, [9], &[], &[], &mut compile, &|| word).is_some();
        }
    }
    site.call_ended(Some(took));
    (entered, mode)
}

/// Code whose calls run slower than interpreted calls of the same position
/// is retired (`portal::slow`): after three compiled calls slower than the
/// calls before them, three calls are interpreted on purpose; compiled
/// calls slower than those retire the keys they entered, and later calls
/// starting at that position give their hook up. The calls' durations are
/// given here (the generated code measures them), so the test does not
/// depend on this machine's speed.
#[test]
fn code_slower_than_interpreting_is_retired_and_its_calls_go_unhooked() {
    use jitgen_runtime::driver::{green_word, CallMode};
    static STATS: Stats = Stats::new();
    static DENSE: Config = Config::new();
    let site = timed_site(&STATS, &DENSE);
    let word = green_word(&[0x7000, 0]);
    let call = |took: Duration, code: bool| portal_call(&site, &STATS, word, took, code);
    let ms = Duration::from_millis;
    // Interpreted calls before the code, then one that compiles (its time
    // is the compiler's), then compiled calls twice as slow.
    assert_eq!(call(ms(10), false), (false, CallMode::Normal));
    let (compiled, _) = call(ms(50), true);
    assert!(compiled && STATS.snapshot().compilations == 1);
    for _ in 0..3 {
        assert_eq!(call(ms(20), true), (true, CallMode::Normal));
    }
    // Suspect: three calls interpreted on purpose, 10 ms each. Such a call
    // tests no entry filter, and waits for the clock between samples as
    // where the portal has no code.
    assert!(SAMPLER.with(|s| s.entry_mask()) != 0, "the thread has code");
    for _ in 0..2 {
        assert_eq!(call(ms(10), true), (false, CallMode::Interpreting));
    }
    SAMPLER.with(|s| {
        s.set_ticks(true);
        s.begin_call(STATS.compile_work());
        assert!(s.entry_mask() != 0, "before its first visit, a call may enter code");
        assert_eq!(s.ask(true, 0, word), None, "its first visit goes to the hook");
    });
    assert!(site.visit(&[9], &[]).is_none(), "interpreted on purpose");
    SAMPLER.with(|s| {
        assert_eq!(s.call_mode(), CallMode::Interpreting);
        assert_eq!(s.entry_mask(), 0, "an interpreted call tests no filter");
        // Cold visits until the skips are long (past the ramp).
        for _ in 0..20 {
            s.cold(1000);
        }
        assert_eq!(s.ask(true, 0, word), Some(jitgen_runtime::driver::NEXT_TICK));
        s.set_ticks(false);
    });
    site.call_ended(None);
    assert_eq!(call(ms(10), true), (false, CallMode::Interpreting));
    assert_eq!(STATS.snapshot().retired_slow, 1, "{:?}", STATS.last_decline());
    assert!(STATS.last_decline().is_some_and(|w| w.contains("20.000 ms, interpreted 10.000 ms")));
    // From then on calls starting there go on without their hook, and the
    // key is interpreted.
    let (entered, mode) = call(ms(10), true);
    assert_eq!((entered, mode), (false, CallMode::Retired));
    SAMPLER.with(|s| {
        s.begin_call(STATS.compile_work());
        s.ask(true, 0, word);
        assert!(s.gives_up(), "a retired position's call gives its hook up");
    });
    site.call_ended(None);
    assert!(!CACHE.with(|c| c.borrow().has_any_code()));
    // After `PLAIN_AFTER` (2) calls in a row that started at the retired
    // position, the next ones run the plain interpreter, but for one in
    // `PROBE_EVERY`.
    use jitgen_runtime::driver::{PLAIN_AFTER, PROBE_EVERY};
    assert_eq!(PLAIN_AFTER, 2);
    let plain: Vec<bool> = (0..2 * PROBE_EVERY).map(|_| SAMPLER.with(|s| s.runs_plain())).collect();
    assert_eq!(plain.iter().filter(|p| !**p).count(), 2, "{plain:?}");
    // A probe that starts elsewhere ends the run of retired calls.
    SAMPLER.with(|s| {
        s.begin_call(STATS.compile_work());
        s.ask(true, 0, green_word(&[0x7000, 5]));
    });
    site.call_ended(Some(ms(10)));
    assert!(!SAMPLER.with(|s| s.runs_plain()));
}

/// A thread's first visit under the default policy waits for the sampling
/// clock instead of going to the hook (a run shorter than a tick pays no
/// key and no count); under an explicit threshold it goes to the hook, and
/// a thread's later calls begin as before.
#[test]
fn a_threads_first_visit_waits_for_the_clock_under_the_default_policy() {
    use jitgen_runtime::driver::{green_word, CALIBRATION, NEXT_TICK};
    let word = green_word(&[0xa000, 1]);
    let s = Sampler::new();
    s.set_ticks(true);
    s.begin_call(0);
    assert_eq!(s.ask(true, 0, word), Some(NEXT_TICK), "the first visit waits");
    assert_eq!(s.ask(false, NEXT_TICK, word), Some(CALIBRATION - 1), "after the tick, visits are counted");
    s.end_call(0);
    s.begin_call(0);
    assert_eq!(s.ask(true, 0, word), None, "a later call's first visit goes to the hook");
    let counted = Sampler::new();
    counted.set_ticks(false);
    counted.begin_call(0);
    assert_eq!(counted.ask(true, 0, word), None, "under a threshold, the first visit goes to the hook");
}

/// A call that stops testing the entry filter (it entered no code for
/// `QUIET_VISITS` visits) says so when its countdown runs out, and under
/// the default policy waits for the sampling clock between samples, as
/// where the portal has no code; a loop that tests the filter counts.
#[test]
fn a_quiet_call_with_code_in_its_thread_waits_for_ticks() {
    use jitgen_runtime::driver::{green_word, NEXT_TICK, QUIET_ASK};
    let word = green_word(&[0x9000, 1]);
    // The loop: QUIET_VISITS visits testing the mask, then asks with
    // QUIET_ASK.
    let mut sampler = LoopSampler::new(u64::MAX);
    let mut asked = vec![];
    for _ in 0..QUIET_VISITS + 3 {
        let ask = |due: bool, left: u32, _word: u64| {
            asked.push((due, left));
            Some(if due { 0 } else { left })
        };
        assert!(!(sampler.due() && sampler.visits_hook(1234, ask)));
    }
    assert_eq!(asked.last(), Some(&(true, QUIET_ASK)), "{:?}", &asked[asked.len() - 3..]);
    // The portal's sampler: code in the thread, long skips after cold
    // visits.
    thread_local!(static S: Sampler = const { Sampler::new() });
    S.with(|s| {
        s.set_ticks(true);
        s.add_entry(green_word(&[0x9000, 7]));
        for _ in 0..20 {
            s.cold(1000);
        }
        assert_ne!(s.ask(true, 0, word), Some(NEXT_TICK), "a loop testing the filter counts");
        s.cold(1000);
        assert_eq!(s.ask(true, QUIET_ASK, word), Some(NEXT_TICK), "a quiet one waits for the clock");
        s.cold(1000);
        s.set_ticks(false);
        assert_ne!(s.ask(true, QUIET_ASK, word), Some(NEXT_TICK), "an explicit threshold counts");
    });
}

/// A call that entered code whose fusion was due but postponed ran the
/// pieces unfused, slower than they will run: it is not timed against the
/// interpreter as compiled code (as a call that compiled is not), so that
/// code is judged as it will stay; it is timed as unfused code, which fuses
/// at once where it runs slower than interpreting (`Tally::unfused_slower`).
#[test]
fn calls_entering_code_not_fused_yet_are_not_timed() {
    use jitgen_runtime::driver::CallKind;
    let s = Sampler::new();
    s.begin_call(7);
    s.entered_code();
    assert_eq!(s.end_call(7).map(|(_, k)| k), Some(CallKind::Compiled));
    s.begin_call(7);
    s.entered_code();
    s.unsettled_code();
    assert_eq!(s.end_call(7).map(|(_, k)| k), Some(CallKind::Unfused));
    s.begin_call(7);
    s.entered_code();
    s.unsettled_code();
    assert_eq!(s.end_call(8).map(|(_, k)| k), Some(CallKind::Compiling), "it compiled too");
    // The next call is judged again.
    s.begin_call(7);
    s.entered_code();
    assert_eq!(s.end_call(7).map(|(_, k)| k), Some(CallKind::Compiled));
}

/// A call whose code waits for a fusion, and ran slower unfused than
/// interpreting, interprets to its end (`PortalSite::code`,
/// `Sampler::interpret_rest`): it enters no code, its visits test no entry
/// filter, and its time is not counted (it may include handing the fusion
/// over). The next call may enter code again.
#[test]
fn a_call_that_waits_for_a_fusion_interprets_to_its_end_untimed() {
    use jitgen_runtime::driver::{green_word, CallKind, CallMode};
    let s = Sampler::new();
    let word = green_word(&[0x7100, 0]);
    s.add_entry(word);
    assert_ne!(s.entry_mask(), 0, "the portal has code");
    s.begin_call(7);
    assert_eq!(s.call_mode(), CallMode::Normal);
    s.interpret_rest();
    assert_eq!(s.call_mode(), CallMode::Interpreting);
    assert_eq!(s.entry_mask(), 0, "no entry filter while it interprets");
    assert_eq!(s.end_call(7).map(|(_, k)| k), Some(CallKind::Waited));
    s.begin_call(7);
    assert_eq!(s.call_mode(), CallMode::Normal, "the next call is a call like any");
    assert_ne!(s.entry_mask(), 0);
    s.entered_code();
    assert_eq!(s.end_call(7).map(|(_, k)| k), Some(CallKind::Compiled));
}

/// A key warms up while the interpreter runs it: time spent in compiled
/// code, or outside the portal's calls, does not count toward its warm-up;
/// time interpreting in a call does.
#[test]
fn a_key_warms_up_only_while_interpreting() {
    use jitgen_runtime::driver::{HotPolicy, EXPECTED_COMPILE, WARMUP_FACTOR};
    let policy = HotPolicy { threshold: 1, warmup: true };
    let warm_up = EXPECTED_COMPILE * WARMUP_FACTOR;
    let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
    let visit = |c: &mut PortalCache<[u64; 1]>| matches!(c.visit(&[3], &[], policy), Hot::Compile);
    // Outside the portal's calls the clock stands still.
    assert!(!visit(&mut cache), "first seen: counted");
    assert!(!visit(&mut cache), "past the threshold: warm");
    std::thread::sleep(warm_up * 2);
    assert!(!visit(&mut cache), "time outside calls does not warm the key up");
    // In a call.
    cache = PortalCache::default();
    cache.in_call(Some(std::time::Instant::now()));
    assert!(!visit(&mut cache), "first seen: counted");
    assert!(!visit(&mut cache), "past the threshold: warm, not warmed up");
    // Compiled code (of another key) runs for twice the warm-up, and
    // enters code again inside (a portal recursing in Rust).
    cache.entering_code();
    std::thread::sleep(warm_up);
    cache.entering_code();
    cache.left_code();
    assert!(!visit(&mut cache), "time in compiled code does not warm the key up");
    std::thread::sleep(warm_up);
    cache.left_code();
    assert!(!visit(&mut cache), "nor does the time after a nested entry returned");
    // The interpreter runs for the warm-up.
    std::thread::sleep(warm_up + warm_up / 4);
    assert!(visit(&mut cache), "time interpreting does");
}

/// Under the default policy a key's code is compiled on the compiler's
/// thread: the visit that asks for it interprets on, no other key compiles
/// meanwhile, and the first visit after the code is ready installs it
/// (counted as a compilation, its time partly the other thread's), so
/// that the key's next visit runs it.
#[test]
fn default_policy_compiles_on_the_compilers_thread_and_installs_at_a_later_visit() {
    static STATS: Stats = Stats::new();
    static DEFAULT: Config = Config::new();
    if !DEFAULT.hot_policy().warmup || !DEFAULT.compiles_in_background() {
        // JITGEN_THRESHOLD is set, or JITGEN_BACKGROUND=0: every
        // compilation is in place.
        return;
    }
    CACHE.with(|c| *c.borrow_mut() = PortalCache::default());
    let site = PortalSite { cache: &CACHE, sampler: &SAMPLER, config: &DEFAULT, stats: &STATS, nested: false };
    let mut compile = |_: &[u64]| -> Result<ResidualFunction, String> {
        let mut b = ResidualBuilder::new("code", &[], &[ValTy::I64]);
        let r = b.konst(ValTy::I64, 11);
        b.ret(&[r]);
        Ok(b.finish())
    };
    assert!(site.code(Hot::Compile, [3], &[b"code"], &[], &mut compile, &|| 3).is_none(), "interprets on");
    assert!(CACHE.with(|c| c.borrow().is_pending()));
    assert_eq!(STATS.snapshot().compilations, 0, "counted once installed");
    // Another key that gets hot meanwhile does not compile.
    let other = CACHE.with(|c| c.borrow_mut().visit(&[4], &[], 0));
    assert!(matches!(other, Hot::Cold), "one compilation at a time");
    let start = std::time::Instant::now();
    while CACHE.with(|c| c.borrow().is_pending()) {
        assert!(start.elapsed() < Duration::from_secs(10), "never installed");
        std::thread::sleep(Duration::from_micros(100));
        let _ = site.visit(&[5], &[]);
    }
    let s = STATS.snapshot();
    assert_eq!(s.compilations, 1, "{s:?}");
    assert!(s.background_compile_nanos > 0 && s.background_compile_nanos <= s.compile_nanos, "{s:?}");
    assert!(SAMPLER.with(|s| s.may_enter(3)), "the entry filter lets the key's visits through");
    let hot = CACHE.with(|c| c.borrow_mut().visit(&[3], &[b"code"], 0));
    let Hot::Run(code) = hot else { panic!("the key runs its code") };
    assert_eq!(code.call_words(&[]).unwrap(), [11]);
    // Code of other content is not the key's.
    assert!(!matches!(CACHE.with(|c| c.borrow_mut().visit(&[3], &[b"other"], 0)), Hot::Run(_)));
}

/// Turn checks (`portal::slow::TurnClock`): a count armed at an entry (one
/// per counter, whichever key enters), run
/// out over too little code time, is armed again with more turns; run out
/// over enough, it leaves the key to be measured, and the interpreter's time
/// per visit decides. Times are given here, as the portal measures them.
#[test]
fn turn_checks_arm_grow_and_compare_code_with_the_interpreter() {
    use jitgen_runtime::driver::{TurnClock, TurnVerdict, TURNS_GROWTH, TURN_SPAN};
    use jitgen_runtime::ir::function::TurnCounter;
    let counter = TurnCounter::default();
    assert!(!counter.ran_out(), "unarmed, a counter never runs out");
    let mut clock = TurnClock::default();
    let us = Duration::from_micros;
    clock.enter(&counter, us(0), 0, 100);
    assert_eq!(counter.left.get(), 100, "armed with the first count");
    // Entered again while armed: the count goes on.
    counter.left.set(40);
    clock.enter(&counter, us(10), 0, 100);
    assert_eq!(counter.left.get(), 40);
    // So is another key's code rooted at the same position: the counter
    // is theirs together, and so is the count under way.
    TurnClock::default().enter(&counter, us(20), 0, 100);
    assert_eq!(counter.left.get(), 40);
    // Run out after 100 µs of code time, 60 of them compiling cases: too
    // short to judge, so armed again for TURN_SPAN at that pace.
    counter.left.set(0);
    clock.ran_out(&counter, us(100), 60_000);
    assert!(!clock.measuring() && counter.left.get() == i64::MAX);
    let grown = 100 * (TURN_SPAN.as_micros() as i64 / 40);
    assert_eq!(counter.turns.get(), grown);
    clock.enter(&counter, us(100), 60_000, 100);
    assert_eq!(counter.left.get(), grown);
    // 1 µs a turn, over enough code time: measured.
    counter.left.set(0);
    let spent = us(grown as u64);
    assert!(spent >= TURN_SPAN);
    clock.ran_out(&counter, us(100) + spent, 60_000);
    assert!(clock.measuring());
    clock.enter(&counter, us(100) + spent, 60_000, 100);
    assert_eq!(counter.left.get(), i64::MAX, "not armed while measured");
    // The interpreter takes 1.1 µs a visit: the code is not slower, but
    // narrowly so, and is checked again soon.
    assert_eq!(clock.measured(&counter, 1000, us(1100)), TurnVerdict::Keep);
    assert_eq!(counter.turns.get(), grown * 2, "checked again soon");
    // At 1 µs a turn again against 2.5 µs a visit: clearly faster, checked
    // more rarely.
    clock.enter(&counter, us(0), 0, 100);
    counter.left.set(0);
    clock.ran_out(&counter, us((grown * 2) as u64), 0);
    assert_eq!(clock.measured(&counter, 1000, us(2500)), TurnVerdict::Keep);
    let turns = grown * 2 * TURNS_GROWTH;
    assert_eq!(counter.turns.get(), turns, "checked more rarely");
    // Next time it takes 3 µs a turn against 0.9 µs a visit: retired.
    clock.enter(&counter, us(0), 0, 100);
    counter.left.set(0);
    clock.ran_out(&counter, us(3 * turns as u64), 0);
    let v = clock.measured(&counter, 1000, us(900));
    assert_eq!(v, TurnVerdict::Retire { compiled: us(3), interpreted: Duration::from_nanos(900) });
}

/// The interpreter's visits of a measured word are counted without the
/// hook (`Sampler::measure`), where the countdown runs out too, until the
/// measure is done; then the next visit goes to the hook, which takes it.
/// Meanwhile no visit waits for a tick or skips uncounted: a loop sampling
/// as where the portal has no code tests its entry filter again, and other
/// words' visits go on without the hook.
#[test]
fn a_measured_word_is_counted_without_the_hook() {
    use jitgen_runtime::driver::{
        green_word, LOOK_AGAIN, MAX_SKIP, MEASURED_SPAN, MEASURED_VISITS, NEXT_TICK, QUIET_ASK,
    };
    let word = green_word(&[0xb000, 1]);
    let other = green_word(&[0xb000, 2]);
    let s = Sampler::new();
    s.add_entry(word);
    s.add_entry(other);
    s.measure(word);
    assert!(jitgen_runtime::portal::ticker::due(), "every visit is looked at");
    assert_eq!(s.ask(false, 5, word), Some(5), "counted, the countdown goes on");
    assert_eq!(s.ask(true, NEXT_TICK, word), Some(MAX_SKIP - 1), "a countdown run out is no sample");
    assert_eq!(s.ask(true, QUIET_ASK, word), Some(LOOK_AGAIN), "the filter again, counted");
    assert_eq!(s.ask(false, NEXT_TICK, other), Some(LOOK_AGAIN), "no waiting for a tick");
    assert_eq!(s.ask(false, 7, other), Some(7), "code elsewhere is not entered meanwhile");
    assert!(s.take_measured().is_none(), "not done");
    std::thread::sleep(MEASURED_SPAN);
    let mut asks = 3;
    while s.ask(false, 0, word).is_some() {
        asks += 1;
        assert!(asks <= MEASURED_VISITS.max(64) + 64, "the measure ends");
    }
    let (visits, took) = s.take_measured().expect("done");
    assert_eq!(visits, asks + 1);
    assert!(took >= MEASURED_SPAN);
    assert!(s.take_measured().is_none(), "taken once");
}

/// Code compiled in its position's first call has no interpreted call
/// before it: it is compared with the calls that compiled it. Not clearly
/// faster than those, it is suspect, and a call interpreted on purpose
/// that runs past twice the compiled calls' time keeps the code and enters
/// it from its next visit of the hook, untimed, compiling nothing new.
#[test]
fn code_compiled_in_a_first_call_is_suspect_unless_clearly_faster_than_that_call() {
    use jitgen_runtime::driver::{green_word, CallMode};
    static STATS: Stats = Stats::new();
    static DENSE: Config = Config::new();
    let site = timed_site(&STATS, &DENSE);
    let word = green_word(&[0x7100, 0]);
    let ms = Duration::from_millis;
    let (compiled, _) = portal_call(&site, &STATS, word, ms(30), true);
    assert!(compiled && STATS.snapshot().compilations == 1);
    for _ in 0..3 {
        assert_eq!(portal_call(&site, &STATS, word, ms(1), true), (true, CallMode::Normal));
    }
    // 1 ms against the 30 ms call that compiled: clearly faster, kept.
    assert_eq!(portal_call(&site, &STATS, word, ms(1), true), (true, CallMode::Normal));
    // Another position, whose compiled calls are not clearly faster than
    // the call that compiled them.
    CACHE.with(|c| *c.borrow_mut() = PortalCache::default());
    let word = green_word(&[0x7100, 1]);
    portal_call(&site, &STATS, word, ms(30), true);
    for _ in 0..3 {
        assert_eq!(portal_call(&site, &STATS, word, ms(20), true), (true, CallMode::Normal));
    }
    // Suspect: the next call is interpreted on purpose. Its visits reach
    // the hook cold until it has run past 40 ms; then it enters the code.
    SAMPLER.with(|s| {
        s.begin_call(STATS.compile_work());
        assert_eq!(s.ask(true, 0, word), None, "its first visit goes to the hook");
    });
    assert!(site.visit(&[9], &[]).is_none(), "interpreted on purpose");
    assert_eq!(SAMPLER.with(|s| s.call_mode()), CallMode::Interpreting);
    std::thread::sleep(ms(45));
    assert!(site.visit(&[9], &[]).is_some(), "past twice the code's time: it enters the code");
    assert_eq!(SAMPLER.with(|s| s.call_mode()), CallMode::Normal);
    // The rest of that call counts none of its visits toward compiling:
    // deep in its program by then, it would compile where it happens to be.
    assert!(site.visit(&[10], &[]).is_none(), "a key without code, at threshold 0");
    site.call_ended(Some(ms(45)));
    assert_eq!(STATS.snapshot().compilations, 2);
    // The code stays: later calls enter it, and none is interpreted again.
    for _ in 0..4 {
        assert_eq!(portal_call(&site, &STATS, word, ms(20), true), (true, CallMode::Normal));
    }
    assert_eq!(STATS.snapshot().retired_slow, 0);
    // A call of its own counts that key again.
    SAMPLER.with(|s| s.begin_call(STATS.compile_work()));
    assert!(site.visit(&[10], &[]).is_some(), "a new call compiles at threshold 0");
    site.call_ended(None);
}

/// After one call interpreted on purpose through the hook, the next ones
/// at the same position run the plain interpreter's own function
/// (`Sampler::runs_plain_timed`), timed as that position's calls
/// interpreted on purpose: their times decide the verdict.
#[test]
fn calls_interpreted_on_purpose_after_the_first_run_the_plain_function_timed() {
    use jitgen_runtime::driver::{green_word, CallMode};
    static STATS: Stats = Stats::new();
    static DENSE: Config = Config::new();
    let site = timed_site(&STATS, &DENSE);
    let word = green_word(&[0x7200, 0]);
    let ms = Duration::from_millis;
    assert_eq!(portal_call(&site, &STATS, word, ms(10), false), (false, CallMode::Normal));
    portal_call(&site, &STATS, word, ms(50), true);
    for _ in 0..3 {
        assert!(!SAMPLER.with(|s| s.runs_plain_timed()), "not suspect yet");
        assert_eq!(portal_call(&site, &STATS, word, ms(20), true), (true, CallMode::Normal));
    }
    // Suspect: the first call interpreted on purpose goes through the hook.
    assert!(!SAMPLER.with(|s| s.runs_plain_timed()), "none interpreted on purpose yet");
    assert_eq!(portal_call(&site, &STATS, word, ms(10), true), (false, CallMode::Interpreting));
    // The next two run the plain function: no visit, timed for the position.
    for k in 0..2 {
        assert!(SAMPLER.with(|s| s.runs_plain_timed()), "call {k}");
        SAMPLER.with(|s| {
            assert!(s.begin_call(STATS.compile_work()));
            assert_eq!(s.call_mode(), CallMode::Interpreting);
        });
        site.call_ended(Some(ms(10)));
    }
    assert_eq!(STATS.snapshot().retired_slow, 1, "{:?}", STATS.last_decline());
    assert!(STATS.last_decline().is_some_and(|w| w.contains("20.000 ms, interpreted 10.000 ms")));
    assert!(!SAMPLER.with(|s| s.runs_plain_timed()), "decided");
}

/// A program in a new buffer, made canonical by the hook: the interpreter
/// loop goes on with the buffer it has, and takes the buffer's address
/// through the aliases the hook recorded, so that its green words are the
/// copy's and pass the entry filter where the copy's code starts; the
/// call's position is renamed to the copy's too, so that calls with new
/// buffers of one program are timed as one position.
#[test]
fn words_of_a_new_buffer_are_its_canonical_copys() {
    use jitgen_runtime::driver::green_word;
    let s = Sampler::new();
    let (copy, given, other) = (0x7000_u64, 0x9100_u64, 0xa200_u64);
    let entry = green_word(&[copy, 3]);
    s.add_entry(entry);
    let l = LoopSampler::new(s.entry_mask());
    let word = |l: &LoopSampler, w: u64, ip: u64| green_word(&[l.canonical(w), ip]);
    assert_eq!(word(&l, given, 3), green_word(&[given, 3]), "nothing made canonical yet");
    assert!(s.begin_call(0));
    // The call's first visit, at position 0 of the buffer it was given.
    let first = word(&l, given, 0);
    let _ = s.ask(true, 0, first);
    s.canonical(first, green_word(&[copy, 0]), &[given], &[copy]);
    let mut l = LoopSampler::new(s.entry_mask());
    l.aliases = s.aliases();
    assert_eq!(word(&l, given, 3), entry);
    assert!(s.may_enter(word(&l, given, 3)));
    assert_eq!(s.end_call(0).map(|(green, _)| green), Some(Some(green_word(&[copy, 0]))));
    // The buffer freed, and another program given at its address: the
    // loop's words are the stale copy's until the hook sees the buffer,
    // and the call is then the new copy's.
    let fresh = 0x7400_u64;
    let mut l = LoopSampler::new(s.entry_mask());
    l.aliases = s.aliases();
    assert!(s.begin_call(0));
    let first = word(&l, given, 0);
    assert_eq!(first, green_word(&[copy, 0]));
    let _ = s.ask(true, 0, first);
    s.canonical(first, green_word(&[fresh, 0]), &[given], &[fresh]);
    assert_eq!(s.end_call(0).map(|(green, _)| green), Some(Some(green_word(&[fresh, 0]))));
    // The two latest buffers are aliased; data left where it is is not.
    s.canonical(green_word(&[other, 0]), green_word(&[copy + 8, 0]), &[other, 5], &[copy + 8, 5]);
    l.aliases = s.aliases();
    assert_eq!((l.canonical(given), l.canonical(other), l.canonical(5)), (fresh, copy + 8, 5));
}

/// A call whose turn checks retire a second key goes on without its hook
/// (another position of the same loop would compile and lose again); the
/// first retirement leaves it as it was. A later call starting at the same
/// position is retired from its first visit, one starting elsewhere is not.
#[test]
fn a_second_key_retired_by_turn_checks_gives_the_call_up() {
    use jitgen_runtime::driver::{green_word, CallMode, TURN_RETIREMENTS};
    let (start, elsewhere) = (green_word(&[0xc000, 0]), green_word(&[0xc000, 9]));
    let ns = Duration::from_nanos;
    let s = Sampler::new();
    s.add_entry(green_word(&[0xc000, 5]));
    assert!(s.begin_call(0));
    s.ask(true, 0, start);
    for k in 1..TURN_RETIREMENTS {
        assert!(!s.turn_retired_in_call(ns(150), ns(100)), "retirement {k}");
        assert_eq!(s.call_mode(), CallMode::Normal);
    }
    assert!(s.turn_retired_in_call(ns(150), ns(100)));
    assert_eq!(s.call_mode(), CallMode::Retired);
    assert!(s.gives_up());
    s.end_call(0);
    for (word, mode) in [(start, CallMode::Retired), (elsewhere, CallMode::Normal)] {
        assert!(s.begin_call(0));
        s.ask(true, 0, word);
        assert_eq!(s.call_mode(), mode);
        s.end_call(0);
    }
}
