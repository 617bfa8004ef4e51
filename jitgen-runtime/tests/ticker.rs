//! The sampling clock (`portal::ticker`) and a loop sampled between its
//! ticks (`LoopSampler` under the default policy): a loop waiting for a
//! tick asks its portal nothing between ticks, the visit after a tick
//! stands for the visits of the wait, and the clock stops when no loop
//! waits and starts again when one does. Its own binary: no other test
//! keeps the clock running.

use std::time::{Duration, Instant};

use jitgen_runtime::driver::{LoopSampler, Sampler, CALIBRATION};
use jitgen_runtime::portal::ticker;

thread_local! {
    static SAMPLER: Sampler = const { Sampler::new() };
}

/// Held by the tests whose loops wait for ticks: one of them looks at the
/// clock stopping when no loop waits.
static CLOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Visits a loop sampled as a portal's generated code samples it, until
/// `hooks` visits reached the hook (at most 10 s): the visits made, the
/// asks of the portal, and the weight of each visit that reached the hook.
fn visit_until(sampler: &mut LoopSampler, hooks: usize) -> (u64, u64, Vec<u32>) {
    let (mut visits, mut asks, mut weights) = (0u64, 0u64, vec![]);
    let start = Instant::now();
    while weights.len() < hooks && start.elapsed() < Duration::from_secs(10) {
        visits += 1;
        let green = std::hint::black_box(visits % 7);
        let ask = |due, left, word| {
            asks += 1;
            SAMPLER.with(|s| s.ask(due, left, word))
        };
        if sampler.due() && sampler.visits_hook(green, ask) {
            // What the portal's hook does at a cold key.
            weights.push(SAMPLER.with(|s| s.take_weight()));
            SAMPLER.with(|s| s.cold(1000));
        }
    }
    (visits, asks, weights)
}

#[test]
fn a_loop_waits_for_ticks_between_samples_and_the_clock_stops_when_none_waits() {
    let _clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    SAMPLER.with(|s| s.set_ticks(true));
    let mut sampler = LoopSampler::new(0);
    // The ramp: the first visits are counted, then skips double.
    let (_, _, ramp) = visit_until(&mut sampler, 20);
    assert_eq!(ramp.len(), 20);
    // Sampled at ticks: a few asks per tick (the tick, the end of its
    // calibration, the skip after the hook), where counting down a sample
    // period would ask twice per 250 visits.
    let (visits, asks, weights) = visit_until(&mut sampler, 10);
    assert_eq!(weights.len(), 10, "the clock ticks");
    assert!(asks <= 4 * 10 + 4, "{asks} asks for 10 samples");
    assert!(visits > 10 * u64::from(CALIBRATION), "{visits} visits");
    // Each sample stands for the visits of its wait for the tick, at the
    // pace of its calibration: about all the visits, within a factor 10.
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    assert!(total >= visits / 10 && total <= visits * 10, "{total} counted for {visits} visits");
    // With none waiting, the clock stops; a loop that waits starts it.
    std::thread::sleep(ticker::SLOWEST_PERIOD * ticker::IDLE_TICKS * 2);
    let t = ticker::ticks();
    std::thread::sleep(ticker::PERIOD * 20);
    assert_eq!(ticker::ticks(), t, "the clock stopped");
    let (_, _, weights) = visit_until(&mut sampler, 2);
    assert_eq!(weights.len(), 2, "the clock started again");
    assert_ne!(ticker::ticks(), t);
}

/// A loop under an explicit threshold counts its visits, whatever the
/// clock does: the same number of asks for the same visits.
#[test]
fn a_loop_without_ticks_counts_its_visits() {
    let counted = || {
        SAMPLER.with(|s| s.set_ticks(false));
        let mut sampler = LoopSampler::new(0);
        let mut asks = 0;
        for visit in 0..100_000u64 {
            let ask = |due, left, word| {
                asks += 1;
                SAMPLER.with(|s| s.ask(due, left, word))
            };
            if sampler.due() && sampler.visits_hook(visit % 7, ask) {
                SAMPLER.with(|s| s.cold(1000));
            }
        }
        asks
    };
    let a = std::thread::spawn(counted).join().unwrap();
    let b = std::thread::spawn(counted).join().unwrap();
    assert_eq!(a, b);
    assert!((700..=900).contains(&a), "{a} asks");
}

/// A portal call made inside a loop that waits for a tick (an interpreter
/// recursing in Rust) waits with it: its loop does not look at its first
/// visits, and as it returns the loop around it goes on waiting, so the
/// thread's flag is neither raised nor lowered per call. The visit after
/// the tick, in whichever loop, stands for the wait.
#[test]
fn a_call_inside_a_waiting_loop_waits_with_it() {
    let _clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        SAMPLER.with(|s| s.set_ticks(true));
        fn end(_: Option<Duration>) {}
        let mut joined = 0;
        for _ in 0..20 {
            SAMPLER.with(|s| s.begin_call(0));
            let mut outer = LoopSampler::begin(0, None, end, SAMPLER.with(|s| s.joins_wait()));
            // Past the ramp, the outer loop waits for the tick after each sample.
            let _ = visit_until(&mut outer, 30);
            let mut visits = 0;
            while sampler_looks(&mut outer) && visits < 1_000_000 {
                visits += 1;
            }
            let t0 = ticker::ticks();
            SAMPLER.with(|s| s.begin_call(0));
            let joins = SAMPLER.with(|s| s.joins_wait());
            let inner = LoopSampler::begin(0, None, end, joins);
            let raised_in = ticker::due();
            drop(inner);
            SAMPLER.with(|s| s.end_call(0));
            let raised_after = ticker::due();
            // A tick raises the flag after it counts itself.
            if joins && ticker::ticks() == t0 {
                joined += 1;
                assert!(!raised_in, "the inner call looks at its first visits");
                assert!(!raised_after, "the loop around stopped waiting");
            }
            drop(outer);
            SAMPLER.with(|s| s.end_call(0));
        }
        assert!(joined > 0, "no call joined its loop's wait in 20 tries");
    })
    .join()
    .unwrap();
}

/// Whether a visit of `sampler` looks (the thread's flag raised), going to
/// its hook as the generated code does.
fn sampler_looks(sampler: &mut LoopSampler) -> bool {
    if !sampler.due() {
        return false;
    }
    let ask = |due, left, word| SAMPLER.with(|s| s.ask(due, left, word));
    if sampler.visits_hook(1, ask) {
        SAMPLER.with(|s| s.cold(1000));
    }
    true
}
