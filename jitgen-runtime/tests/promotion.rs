//! Flexswitches with machine code: cases compiled per value seen at run time,
//! entered by tail call; misses call back into the compiler; a bound past
//! which residual code hands over to the interpreter.

use std::cell::RefCell;
use std::rc::Rc;

use jitgen_runtime::backend::Backend;
use jitgen_runtime::builder::{listing, ResidualBuilder};
use jitgen_runtime::ir::listing::{parse, ListedCallback};
use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
use jitgen_runtime::promotion::{Case, FlexTable};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::{ResidualError, ResidualFn};
use jitgen_runtime::schedule::Compilation;

/// Adds one to the word in its buffer (a callback).
extern "C" fn add_one(buf: *mut u64) -> u64 {
    // SAFETY: residual code passes a buffer of one word at least.
    unsafe { *buf = (*buf).wrapping_add(1) };
    0
}

/// An exit path that the translation splits (after a call, after a checked
/// operation) stays cold in every part: no cold block jumps to one that is
/// not cold, which Cranelift would emit among the hot blocks; the loop itself
/// is not cold.
#[test]
fn an_exit_path_split_by_calls_and_checks_stays_cold() {
    // acc = 3 + 3 + ... (n times); then add_one(acc) + acc, checked.
    let calls = [ListedCallback { name: "add_one", func: add_one, rets: &[ValTy::I64] }];
    let f = parse(
        "entry(v0: i64):
            v1 = const.i64 0
            v2 = const.i64 1
            v3 = const.i64 3
            jump L1(v1, v1)
        L1(v4: i64, v5: i64):
            v6 = lt.i64 v4, v0
            branch v6, L2(), L3()
        L2():
            v7 = add.i64 v4, v2
            v8 = add.i64 v5, v3
            jump L1(v7, v8)
        L3():
            v9 = call add_one(v5)
            v10 = add_checked.i64 v9, v5
            return v10",
        &calls,
    )
    .expect("a listing");
    let clif = jitgen_runtime::residual::native_backend().unwrap().clif(&f);
    let blocks: Vec<(&str, &str)> =
        clif.split("\nblock").skip(1).map(|b| b.split_once(":\n").unwrap_or((b, ""))).collect();
    let name = |head: &str| format!("block{}", head.split(['(', ' ']).next().unwrap_or_default());
    let cold: Vec<String> = blocks.iter().filter(|(h, _)| h.ends_with(" cold")).map(|(h, _)| name(h)).collect();
    assert!(blocks.iter().any(|(h, body)| h.ends_with(" cold") && body.contains("call_indirect")), "{clif}");
    for (h, body) in blocks.iter().filter(|(h, _)| h.ends_with(" cold")) {
        let targets = body.split(|c: char| !c.is_alphanumeric()).filter(|w| w.starts_with("block"));
        for t in targets {
            assert!(cold.iter().any(|c| c == t), "block{h} jumps to {t}, laid out before the cold blocks:\n{clif}");
        }
    }
    // The loop's body: it adds and jumps back to the head.
    let loops: Vec<_> =
        blocks.iter().filter(|(_, body)| body.contains("iadd") && body.contains("jump block")).collect();
    assert!(!loops.is_empty() && loops.iter().all(|(h, _)| !h.ends_with(" cold")), "{clif}");
    let code = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    for n in [0i64, 1, 5, 100] {
        assert_eq!(code.call_words(&[n as u64]).unwrap(), [(6 * n + 1) as u64], "n {n}");
    }
}

/// A guard's failure dispatches through a flexswitch: an exit path, like its
/// miss path (the call back into the compiler), so Cranelift lays all of it
/// out after the loop that the guard protects.
#[test]
fn a_guards_flexswitch_is_laid_out_after_the_loop() {
    let table = FlexTable::new(
        4,
        Box::new(|g: u64| {
            // The general case: n * g.
            let mut b = ResidualBuilder::new("case", &[ValTy::I64], &[ValTy::I64]);
            let n = b.inputs()[0];
            let g = b.konst(ValTy::I64, g);
            let r = b.bin(BinOp::Mul, ValTy::I64, Overflow::Wrap, n, g);
            b.ret(&[r]);
            let f = b.finish();
            Some(Case::Owned(jitgen_runtime::residual::native_backend().ok()?.compile(&f).ok()?, listing(&f)))
        }),
    );
    // entry(n, g): if g == 7 { 7 added n times } else { switch on g }.
    let mut b = ResidualBuilder::new("guarded", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (n, g) = (b.inputs()[0], b.inputs()[1]);
    let (head, hp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let (general, _) = b.new_label(&[]);
    let seven = b.konst(ValTy::I64, 7);
    let zero = b.konst(ValTy::I64, 0);
    let ok = b.cmp(jitgen_runtime::ops::CmpOp::Eq, ValTy::I64, g, seven);
    b.branch(ok, (head, &[zero, zero]), (general, &[]));
    b.switch_to(head);
    let more = b.cmp(jitgen_runtime::ops::CmpOp::Lt, ValTy::I64, hp[0], n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let one = b.konst(ValTy::I64, 1);
    let i = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, hp[0], one);
    let acc = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, hp[1], seven);
    b.jump(head, &[i, acc]);
    b.switch_to(done);
    b.ret(&[hp[1]]);
    b.switch_to(general);
    b.flexswitch(g, &[n], table.clone());
    let f = b.finish();
    let clif = jitgen_runtime::residual::native_backend().unwrap().clif(&f);
    // Blocks as (header, body); every call (the miss path's call into the
    // compiler, and the tail calls into cases) is in a cold block, and the
    // loop (a block that adds and branches to itself) is not.
    let blocks: Vec<(&str, &str)> =
        clif.split("\nblock").skip(1).map(|b| b.split_once(":\n").unwrap_or((b, ""))).collect();
    let calls: Vec<_> = blocks.iter().filter(|(_, body)| body.contains("call_indirect")).collect();
    assert!(calls.len() >= 2, "the miss call and the tail calls:\n{clif}");
    assert!(calls.iter().all(|(head, _)| head.ends_with(" cold")), "a call in a block laid out early:\n{clif}");
    let loops: Vec<_> = blocks
        .iter()
        .filter(|(head, body)| {
            let name = head.split(['(', ' ']).next().unwrap_or_default();
            body.contains(&format!("block{name}(")) && body.contains("iadd")
        })
        .collect();
    assert!(!loops.is_empty() && loops.iter().all(|(head, _)| !head.ends_with(" cold")), "{clif}");
    let code = ResidualFn::compile(&f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap();
    for (n, g) in [(0i64, 7i64), (5, 7), (100, 7), (5, 3), (6, 3), (9, -2)] {
        assert_eq!(code.call_words(&[n as u64, g as u64]).unwrap(), [(n * g) as u64], "n {n}, g {g}");
    }
}

/// The report's example: `b = a / 10; c = hint(b, promote); d = c + 5; d + y`.
/// Returns the entry function, its switch's table, and the case listings.
fn promoted(max_cases: usize) -> (ResidualFn, Rc<FlexTable>, Rc<RefCell<Vec<String>>>) {
    promoted_at(max_cases, false)
}

/// [`promoted`], its entry compiled as a flexswitch case is (`as_case`:
/// at `opt_level=none`, its switch dispatching through the shared stub).
fn promoted_at(max_cases: usize, as_case: bool) -> (ResidualFn, Rc<FlexTable>, Rc<RefCell<Vec<String>>>) {
    let listings = Rc::new(RefCell::new(vec![]));
    let seen = listings.clone();
    // The case compiler: the generating extension resumed after the
    // promotion, with `c` a compile-time constant and `y` live.
    let table = FlexTable::new(
        max_cases,
        Box::new(move |c: u64| {
            let mut b = ResidualBuilder::new("case", &[ValTy::I64], &[ValTy::I64]);
            let y = RedBox::Var { ty: ValTy::I64, val: b.inputs()[0] };
            let d = b.red_bin(BinOp::Add, Overflow::Wrap, &RedBox::i64(c as i64), &RedBox::i64(5));
            let r = b.red_bin(BinOp::Add, Overflow::Wrap, &d, &y);
            let v = b.materialize(&r);
            b.ret(&[v]);
            let f = b.finish();
            seen.borrow_mut().push(listing(&f));
            Some(Case::Owned(jitgen_runtime::residual::native_backend().ok()?.compile(&f).ok()?, listing(&f)))
        }),
    );
    let mut b = ResidualBuilder::new("entry", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (a, y) = (b.inputs()[0], b.inputs()[1]);
    let ten = b.konst(ValTy::I64, 10);
    let q = b.bin(BinOp::Div, ValTy::I64, Overflow::Wrap, a, ten);
    b.flexswitch(q, &[y], table.clone());
    let f = b.finish();
    let mut backend = jitgen_runtime::residual::native_backend().unwrap();
    let code = if as_case {
        ResidualFn::with_code(f.clone(), backend.compile_case(&f).unwrap())
    } else {
        ResidualFn::compile(&f, &mut backend).unwrap()
    };
    (code, table, listings)
}

#[test]
fn one_case_per_value_with_d_constant() {
    let (f, table, listings) = promoted(100);
    expect_test::expect![[r#"
        entry(v0: i64, v1: i64):
            v2 = const.i64 10
            v3 = div.i64 v0, v2
            flexswitch v3 [live v1] #0
    "#]]
    .assert_eq(f.listing());
    for a in 0..100i64 {
        assert_eq!(f.call_words(&[a as u64, 1000]).unwrap(), [(a / 10 + 5 + 1000) as u64]);
    }
    // Ten distinct values of a / 10: ten cases, one miss each.
    assert_eq!(table.cases(), 10);
    assert_eq!(table.misses(), 10);
    assert_eq!(table.values(), (0..10).collect::<Vec<u64>>());
    // Each case has d as a constant: 5 + c folded, one residual add of y.
    expect_test::expect![[r#"
        entry(v0: i64):
            v1 = const.i64 12
            v2 = add.i64 v1, v0
            return v2
    "#]]
    .assert_eq(&listings.borrow()[7]);
    // Running them again enters the compiler no more.
    for a in (0..100i64).rev() {
        assert_eq!(f.call_words(&[a as u64, 7]).unwrap(), [(a / 10 + 12) as u64]);
    }
    assert_eq!(table.misses(), 10);
}

/// The case's extension (`d = c + 5; d + y`, `y` live), used both to compile
/// a case and, in execute mode, to continue in the interpreter.
fn case(c: &mut Compilation<Nothing>, promoted: u64) {
    let y = c.inputs()[0];
    let d = c.b.red_bin(BinOp::Add, Overflow::Wrap, &RedBox::i64(promoted as i64), &RedBox::i64(5));
    let r = c.b.red_bin(BinOp::Add, Overflow::Wrap, &d, &y);
    c.finish_return(&[r]);
}

#[derive(Clone)]
struct Nothing;

impl jitgen_runtime::state::Frame for Nothing {
    type Key = ();
    fn key(&self) {}
    fn reds(&self) -> Vec<RedBox> {
        vec![]
    }
    fn set_reds(&mut self, _: &[RedBox]) {}
}

fn run(f: &ResidualFn, a: i64, y: i64) -> u64 {
    match f.call_words(&[a as u64, y as u64]) {
        Ok(w) => w[0],
        // The switch handed over: continue in the interpreter (the same
        // extension in execute mode) with the live values and the value.
        Err(ResidualError::Resume(words)) => {
            let c: Compilation<Nothing> = Compilation::executing("case", &[ValTy::I64], &words[..1], &[ValTy::I64]);
            c.execute(|c| case(c, words[1])).unwrap()[0]
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_cases_switch_dispatches_counts_and_hands_over_through_the_shared_stub() {
    let (f, table, _) = promoted_at(4, true);
    // Each of the values 0..8 three times: the first four get cases (one
    // miss each), the others hand over at every visit.
    for round in 0..3 {
        for a in (0..80i64).step_by(10) {
            assert_eq!(run(&f, a, 100 * round), (a / 10 + 5 + 100 * round) as u64, "a={a}");
        }
    }
    assert_eq!(table.values(), [0, 1, 2, 3]);
    assert_eq!(table.misses(), 4 + 3 * 4);
    assert_eq!(table.declined(), 3 * 4);
    // The stub counts a hit at each dispatch to a case (not the misses).
    let hits: Vec<u64> = table.hits().into_iter().map(|(_, n)| n).collect();
    assert_eq!(hits, [2, 2, 2, 2]);
}

#[test]
fn past_its_bound_a_switch_hands_over_to_the_interpreter() {
    let (f, table, _) = promoted(3);
    for a in 0..200i64 {
        assert_eq!(run(&f, a, 3), (a / 10 + 8) as u64, "a={a}");
    }
    assert_eq!(table.cases(), 3);
    assert_eq!(table.values(), [0, 1, 2]);
    assert!(table.declined() > 0);
}

fn resident_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4
}

/// Held by the test that measures the process's resident memory and by the
/// one that fills a cache with a million counters, so that they do not run
/// at once (tests of one binary share the process).
static MEMORY_MEASURED: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_million_distinct_values_in_bounded_memory() {
    let _alone = MEMORY_MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    let (f, table, listings) = promoted(8);
    let rss_before = resident_kib();
    let mut sum = 0u64;
    for a in 0..1_000_000i64 {
        let x = a * 10; // a / 10 is a new value every time
        sum = sum.wrapping_add(run(&f, x, 1));
    }
    assert_eq!(sum, (0..1_000_000u64).map(|a| a + 6).sum::<u64>());
    assert_eq!(table.cases(), 8);
    assert_eq!(listings.borrow().len(), 8, "no case was compiled past the bound");
    let grown = resident_kib().saturating_sub(rss_before);
    assert!(grown < 16 * 1024, "resident memory grew by {grown} KiB");
}

#[test]
fn code_that_keeps_handing_over_is_retired() {
    use jitgen_runtime::driver::{DeclineKind, Hot, PortalCache, RETIRE_AFTER};
    let (f, _, _) = promoted(0);
    let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
    cache.insert([7], &[b"code"], Some(f));
    // Code that hands over now and then stays.
    for i in 0..4 * RETIRE_AFTER {
        assert!(matches!(cache.visit(&[7], &[b"code"], 0), Hot::Run(_)));
        if i % 4 == 0 {
            assert!(!cache.handed_over(&[7]));
        }
    }
    // Code that hands over at every run is retired after RETIRE_AFTER more.
    let mut retired_at = None;
    for i in 0..4 * RETIRE_AFTER {
        if !matches!(cache.visit(&[7], &[b"code"], 0), Hot::Run(_)) {
            break;
        }
        if cache.handed_over(&[7]) {
            retired_at = Some(i);
        }
    }
    assert!(retired_at.is_some());
    assert!(matches!(cache.visit(&[7], &[b"code"], 0), Hot::Declined(DeclineKind::Positional)));
}

/// A key whose green data changes content (a fresh program at the same
/// address, or the same program in a buffer at another address under a key
/// that holds the struct's address) keeps its code for each content it was
/// compiled for, up to `STALE_VERSIONS`, and runs it when that content comes
/// back; code never runs on content it was not compiled for.
#[test]
fn code_for_other_content_is_kept_and_found_again() {
    use jitgen_runtime::driver::{Hot, PortalCache, STALE_VERSIONS};
    // Code returning i, compiled for content i.
    let codes: Vec<ResidualFn> = (0..STALE_VERSIONS as u64 + 2)
        .map(|i| {
            let mut b = ResidualBuilder::new("code", &[], &[ValTy::I64]);
            let r = b.konst(ValTy::I64, i);
            b.ret(&[r]);
            jitgen_runtime::residual::compile_host(&b.finish()).expect("compiles")
        })
        .collect();
    let contents: Vec<Vec<u8>> = (0..codes.len()).map(|i| format!("program at {i}").into_bytes()).collect();
    let same = |hot: &Hot, i: usize| matches!(hot, Hot::Run(f) if f.call_words(&[]).ok() == Some(vec![i as u64]));
    let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
    // Content 0, then each other content compiled in turn at key [7].
    for (i, code) in codes.iter().enumerate() {
        let content: &[&[u8]] = &[&contents[i]];
        if i > 0 {
            assert!(matches!(cache.visit(&[7], content, 0), Hot::Compile), "content {i} is new");
        }
        cache.insert([7], content, Some(code.clone()));
        assert!(same(&cache.visit(&[7], content, 0), i), "content {i} runs its code");
        assert!(cache.has_code(&[7]));
    }
    // The newest versions come back without compiling, each its own code;
    // the oldest, past the bound, compiles again.
    let last = codes.len() - 1;
    for i in (last - STALE_VERSIONS..last).rev().chain([last]) {
        let content: &[&[u8]] = &[&contents[i]];
        assert!(same(&cache.visit(&[7], content, 0), i), "content {i} found again");
        assert!(same(&cache.visit(&[7], content, 0), i), "and kept as the key's code");
    }
    assert!(matches!(cache.visit(&[7], &[&contents[0]], 0), Hot::Compile), "dropped past the bound");
    // Content never compiled for is counted, not run.
    assert!(matches!(cache.visit(&[7], &[b"another program"], 5), Hot::Cold));
    assert_eq!((cache.len(), cache.counters()), (0, 1), "one key, counted");
}

#[test]
fn a_portal_cache_stays_bounded_when_keys_never_repeat() {
    let _alone = MEMORY_MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    use jitgen_runtime::driver::{Hot, PortalCache, MAX_ENTRIES};
    let (f, _, _) = promoted(1);
    let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
    let mut compiled = 0;
    for k in 0..(MAX_ENTRIES as u64 + 100) * 2 {
        if let Hot::Compile = cache.visit(&[k], &[], 0) {
            compiled += 1;
            cache.insert([k], &[], Some(f.clone()));
        }
    }
    assert_eq!(compiled, MAX_ENTRIES);
    assert_eq!(cache.len(), MAX_ENTRIES);
    // Counters for keys never compiled are bounded too: a million keys,
    // each counted once (threshold 1) and never given code.
    let mut cold: PortalCache<[u64; 1]> = PortalCache::default();
    let mut most = 0;
    for k in 0..1_000_000u64 {
        assert!(!matches!(cold.visit(&[k], &[], 1), Hot::Run(_)));
        most = most.max(cold.counters());
        assert!(cold.counters() <= jitgen_runtime::driver::MAX_COUNTERS);
    }
    assert_eq!(most, jitgen_runtime::driver::MAX_COUNTERS, "the bound was reached");
}

#[test]
fn a_cold_key_compiles_past_the_threshold() {
    use jitgen_runtime::driver::{Hot, PortalCache};
    // One key alone: cold for `threshold` visits, then compiled.
    let mut cache: PortalCache<[u64; 2]> = PortalCache::default();
    for _ in 0..5 {
        assert!(matches!(cache.visit(&[3, 7], &[], 5), Hot::Cold));
    }
    assert!(matches!(cache.visit(&[3, 7], &[], 5), Hot::Compile));
    // With threshold 0, at first sight.
    assert!(matches!(cache.visit(&[1000, 1], &[], 0), Hot::Compile));
    // Many keys: each is counted by itself, so none gets hot before its own
    // threshold, and each gets hot at the visit past it.
    let mut cache: PortalCache<[u64; 2]> = PortalCache::default();
    for round in 0..5 {
        for k in 0..10_000u64 {
            assert!(matches!(cache.visit(&[k, 7], &[], 5), Hot::Cold), "key {k} in round {round}");
        }
    }
    for k in 0..10_000u64 {
        assert!(matches!(cache.visit(&[k, 7], &[], 5), Hot::Compile), "key {k}");
    }
}

#[test]
fn a_counted_visit_stands_for_a_sample_period_of_visits() {
    use jitgen_runtime::driver::{sample_period, Hot, PortalCache};
    // The default threshold samples one visit in 250; small ones count all.
    assert_eq!(sample_period(1000), 250);
    assert_eq!((sample_period(0), sample_period(3), sample_period(7)), (1, 1, 1));
    assert_eq!(sample_period(100_000), 256);
    // A key is sampled at least four times before it gets hot.
    for (threshold, counted) in [(1000u32, 4), (100, 4), (10, 5), (3, 3)] {
        let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
        for i in 0..counted {
            assert!(matches!(cache.visit(&[3], &[], threshold), Hot::Cold), "visit {i} of {threshold}");
        }
        assert!(matches!(cache.visit(&[3], &[], threshold), Hot::Compile), "{threshold}");
    }
}

#[test]
fn a_warm_key_compiles_once_the_run_lasted_twice_the_expected_compile_time() {
    use jitgen_runtime::driver::{Hot, HotPolicy, PortalCache, WARMUP_FACTOR};
    use std::time::{Duration, Instant};
    let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
    // Compilations measured at 5 ms: the expectation converges there.
    for _ in 0..40 {
        cache.compiled_in(Duration::from_millis(5));
    }
    let policy = HotPolicy { threshold: 5, warmup: true };
    // In a call of the portal, where its clock of warm-ups runs.
    cache.in_call(Some(Instant::now()));
    // Past the threshold the key is only warm.
    for i in 0..=5 {
        assert!(matches!(cache.visit(&[1], &[], policy), Hot::Cold), "visit {i}");
    }
    let warm = Instant::now();
    let mut visits = 0u64;
    loop {
        visits += 1;
        match cache.visit(&[1], &[], policy) {
            Hot::Cold => assert!(warm.elapsed() < Duration::from_secs(5), "never compiled"),
            Hot::Compile => break,
            _ => panic!("no code yet"),
        }
    }
    let waited = warm.elapsed();
    assert!(waited >= Duration::from_millis(5) * WARMUP_FACTOR - Duration::from_millis(1), "{waited:?}");
    assert!(visits > 5, "{visits}");
    // An exact threshold does not wait.
    let mut exact: PortalCache<[u64; 1]> = PortalCache::default();
    for _ in 0..=4 {
        assert!(matches!(exact.visit(&[1], &[], HotPolicy { warmup: false, ..policy }), Hot::Cold));
    }
    assert!(matches!(exact.visit(&[1], &[], HotPolicy { warmup: false, ..policy }), Hot::Compile));
}

#[test]
fn new_code_cools_the_keys_that_are_warm() {
    use jitgen_runtime::driver::{Hot, HotPolicy, PortalCache};
    use std::time::Duration;
    let (f, _, _) = promoted(1);
    let policy = HotPolicy { threshold: 5, warmup: true };
    // Keys 1 and 2 get warm together (the merge points of one loop); with
    // compilations expected to take no time, a warm key compiles at its
    // next threshold crossing (the clock is read once per threshold).
    let warm_pair = || {
        let mut cache: PortalCache<[u64; 1]> = PortalCache::default();
        for _ in 0..60 {
            cache.compiled_in(Duration::ZERO);
        }
        for k in [1, 2] {
            for _ in 0..6 {
                assert!(matches!(cache.visit_weighted(&[k], &[], policy, 1), Hot::Cold));
            }
        }
        cache
    };
    let visits_until_compile = |cache: &mut PortalCache<[u64; 1]>| {
        (1..100).find(|_| matches!(cache.visit_weighted(&[1], &[], policy, 1), Hot::Compile)).expect("compiles")
    };
    // Alone, key 1 compiles at its next crossing: 4 visits on (count 10).
    assert_eq!(visits_until_compile(&mut warm_pair()), 4);
    // Once key 2 has code, key 1 counts from 0 again: it earns the
    // threshold anew, then compiles at once (its warm-up is long over).
    let mut cache = warm_pair();
    cache.insert([2], &[], Some(f.clone()));
    assert_eq!(visits_until_compile(&mut cache), 10);
    // Declined code cools nothing.
    let mut cache = warm_pair();
    cache.insert([2], &[], None);
    assert_eq!(visits_until_compile(&mut cache), 4);
}

/// `skip_many` hands a whole run of skips to the interpreter loop; once the
/// portal has code, the loop's entry mask lets a visit where code starts
/// through, and the filter sends it to the hook, standing for the visits
/// skipped before it.
#[test]
fn a_sampling_portal_still_visits_where_code_starts() {
    use jitgen_runtime::driver::{green_word, Sampler, COLD_RAMP};
    let s = Sampler::new();
    let (entry, other) = (green_word(&[0x5000, 17]), green_word(&[0x5000, 18]));
    assert_eq!(s.skip_many(), None, "nothing to skip: the hook is visited");
    assert_eq!(s.entry_mask(), 0, "no code: the loop tests nothing");
    // A long cold streak: runs of skips up to a sample period.
    for _ in 0..COLD_RAMP + 20 {
        s.take_weight();
        s.cold(1000);
    }
    // A full period of 249: this visit, and 248 counted down by the caller.
    assert_eq!(s.skip_many(), Some(248));
    assert_eq!(s.skip_many(), None, "all were handed out");
    assert_eq!(s.take_weight(), 250, "the visit after them stands for the period");
    // Code starts at `entry`.
    s.add_entry(entry);
    assert!(s.may_enter(entry));
    let mask = s.entry_mask();
    assert_ne!(mask & Sampler::mask_bit(entry), 0);
    s.cold(1000);
    // The visit whose countdown ran out, then 10 others, counted down.
    let mut left = s.ask(true, 0, other).expect("a run of skips");
    for _ in 0..10 {
        left -= 1;
        if mask & Sampler::mask_bit(other) != 0 {
            assert_eq!(s.ask(false, left, other), Some(left), "a collision of the mask goes on skipping");
        }
    }
    left -= 1;
    assert_eq!(s.ask(false, left, entry), None, "the entry is visited");
    assert_eq!(s.take_weight(), 12);
    // After the code ran, the ramp starts again: nothing skipped.
    s.ran();
    s.cold(1000);
    assert_eq!(s.skip_many(), None);
}

/// Once its last code is retired, a portal skips as it did before it had
/// code: whole runs of skips, no entry filter; and a call that keeps
/// meeting declined keys gives its hook up only while there is no code,
/// unless they are a recursion that cannot compile.
#[test]
fn a_portal_whose_code_is_gone_skips_and_gives_up_as_before_it_had_any() {
    use jitgen_runtime::driver::{green_word, DeclineKind, Sampler, GIVE_UP_AFTER};
    let s = Sampler::new();
    let entry = green_word(&[0x5000, 17]);
    s.add_entry(entry);
    for _ in 0..GIVE_UP_AFTER {
        s.declined(DeclineKind::Construct);
    }
    assert!(!s.gives_up(), "code exists in this thread: the hook stays");
    assert_ne!(s.entry_mask(), 0, "with code, the loop tests its mask");
    s.forget_entries();
    assert!(!s.may_enter(entry));
    assert_eq!(s.entry_mask(), 0);
    assert!(s.gives_up(), "no code left, and only declined keys met");
    s.declined(DeclineKind::Construct);
    let run = s.skip_many().expect("skipping");
    assert!(run > 0, "a whole run of skips again: {run}");
    // A cold key met resets the count: the hook stays for this call.
    s.cold(1000);
    assert!(!s.gives_up());
    // So does a key declined because of where the program was.
    for _ in 0..GIVE_UP_AFTER {
        s.declined(DeclineKind::Construct);
    }
    assert!(s.gives_up());
    s.declined(DeclineKind::Positional);
    assert!(!s.gives_up());
    // A recursion that cannot compile gives the hook up, code or not.
    s.add_entry(entry);
    for _ in 0..GIVE_UP_AFTER - 1 {
        s.declined(DeclineKind::Recursion);
    }
    assert!(!s.gives_up());
    s.declined(DeclineKind::Recursion);
    assert!(s.gives_up(), "code in this thread, but only a hopeless recursion met");
}

/// Declines that say where the program was (the reasons the compiler and
/// the portal give) do not count toward giving the hook up; others do.
#[test]
fn declines_because_of_where_the_program_was_are_positional() {
    use jitgen_runtime::driver::{decline_is_positional, decline_kind, DeclineKind};
    for why in [
        "Unsupported(\"a language-level recursion (a function of the interpreted program calling itself, through the interpreter's saved frames)\")",
        "Budget { ops: 138419 }",
        "a call of the portal `call` from compiled code: it would enter through the portal's hook at every call",
        "residual code retired: it kept handing over to the interpreter",
    ] {
        assert!(decline_is_positional(why), "{why}");
    }
    // A recursion that cannot compile is not where the program was: it
    // declines at every position inside a call.
    for why in [
        "a language-level recursion was seen whose saved frames (`self.frames`) cannot be spilled: compiled code starts only where `self.frames` is empty",
        "Unsupported(\"a language-level recursion (a function of the interpreted program calling itself, through the interpreter's saved frames) whose frames cannot be spilled\")",
    ] {
        assert_eq!(decline_kind(why), DeclineKind::Recursion, "{why}");
    }
    for why in [
        "Unsupported(\"allocating a Box of this type in residual code\")",
        "Unsupported(\"a Vec of non-scalars in residual code\")",
    ] {
        assert!(!decline_is_positional(why), "{why}");
    }
}

#[test]
fn cold_visits_skip_nothing_at_first_then_up_to_a_sample_period() {
    use jitgen_runtime::driver::{sample_period, skip_after_cold, COLD_RAMP};
    let skips: Vec<u32> = (0..COLD_RAMP + 10).map(|s| skip_after_cold(s, 1000)).collect();
    assert!(skips[..COLD_RAMP as usize].iter().all(|&s| s == 0), "{skips:?}");
    assert_eq!(skips[COLD_RAMP as usize..], [1, 2, 4, 8, 16, 32, 64, 128, 249, 249]);
    assert_eq!(sample_period(1000), 250);
    // Small thresholds never skip.
    assert!((0..100).all(|s| skip_after_cold(s, 3) == 0));
    assert_eq!(skip_after_cold(u32::MAX, 1000), 249);
}
