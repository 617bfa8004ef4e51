//! A module's count of raised sampling flags (`ticker::DueCount`), which
//! its interpreter loops read at each visit before their own thread's
//! flag. Its own binary: no other test raises or lowers flags meanwhile.

use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use jitgen_runtime::driver::LoopSampler;
use jitgen_runtime::portal::ticker::{self, DueCount};

static COUNT: DueCount = DueCount::new();

/// The count follows the threads' flags: a portal call's loop raises its
/// thread's, waiting for a tick lowers it, the clock raises it again, and
/// a thread that ends leaves nothing counted. Where it is 0, no loop of
/// the module looks at its visit.
#[test]
fn a_modules_count_of_raised_flags_follows_the_threads() {
    COUNT.list();
    assert_eq!(COUNT.raised(), 0, "no thread raised its flag yet");
    assert!(!COUNT.any());
    let (to_main, from_thread) = channel();
    let (to_thread, from_main) = channel::<()>();
    let t = std::thread::spawn(move || {
        let mut sampler = LoopSampler::new(0);
        to_main.send(sampler.due()).unwrap();
        from_main.recv().unwrap();
        // Waits for the clock's next tick, then looks at the visit after it.
        assert!(ticker::wait(), "the clock runs here");
        to_main.send(sampler.due()).unwrap();
        from_main.recv().unwrap();
        let start = Instant::now();
        while !sampler.due() && start.elapsed() < Duration::from_secs(10) {}
        to_main.send(sampler.due()).unwrap();
        from_main.recv().unwrap();
    });
    assert!(from_thread.recv().unwrap(), "a portal call's loop looks at its first visits");
    assert_eq!(COUNT.raised(), 1);
    to_thread.send(()).unwrap();
    // The clock may tick between the wait and this read.
    let waiting = from_thread.recv().unwrap();
    assert_eq!(COUNT.raised(), u32::from(waiting));
    to_thread.send(()).unwrap();
    assert!(from_thread.recv().unwrap(), "the clock ticked");
    assert_eq!(COUNT.raised(), 1);
    assert!(COUNT.any());
    to_thread.send(()).unwrap();
    t.join().unwrap();
    assert_eq!(COUNT.raised(), 0, "an ended thread's flag is not counted");
    assert!(!COUNT.any());
    // A count listed later starts from the flags raised then.
    static LATE: DueCount = DueCount::new();
    let _sampler = LoopSampler::new(0);
    assert_eq!(COUNT.raised(), 1);
    LATE.list();
    assert_eq!(LATE.raised(), 1);
}
