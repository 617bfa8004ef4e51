//! Code compiled on the compiler's thread (`run::background`) and run on
//! the thread that asked for it: what it needs of that thread (its switch
//! tables, the buffer of its cold helper calls) is that thread's, and it
//! computes what the same function compiled in place computes.

use jitgen_runtime::backend::Backend;
use jitgen_runtime::builder::{listing, ResidualBuilder, ResidualFunction};
use jitgen_runtime::ops::{BinOp, CmpOp, Overflow, ValTy};
use jitgen_runtime::promotion::{Case, FlexTable};
use jitgen_runtime::residual::{compile_host, ResidualFn};
use jitgen_runtime::run::background::submit;

/// Adds one to the word in its buffer (a callback).
extern "C" fn add_one(buf: *mut u64) -> u64 {
    // SAFETY: residual code passes a buffer of one word at least.
    unsafe { *buf = (*buf).wrapping_add(1) };
    0
}

/// `entry(n, g)`: for g == 7, the sum of n sevens in a loop, one more
/// through a cold helper call; otherwise a flexswitch on `g` whose cases
/// (compiled on this thread when first taken) return `n * g`. Simplified.
fn guarded(table: std::rc::Rc<FlexTable>) -> ResidualFunction {
    let mut f = guarded_as_recorded(table);
    f.run_pending_passes();
    f
}

/// [`guarded`] with its residual passes pending, as a root compiled on the
/// compiler's thread is recorded.
fn guarded_as_recorded(table: std::rc::Rc<FlexTable>) -> ResidualFunction {
    let mut b = ResidualBuilder::new("guarded", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (n, g) = (b.inputs()[0], b.inputs()[1]);
    let (head, hp) = b.new_label(&[ValTy::I64, ValTy::I64]);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    let (general, _) = b.new_label(&[]);
    let seven = b.konst(ValTy::I64, 7);
    let zero = b.konst(ValTy::I64, 0);
    let ok = b.cmp(CmpOp::Eq, ValTy::I64, g, seven);
    b.branch(ok, (head, &[zero, zero]), (general, &[]));
    b.switch_to(head);
    let more = b.cmp(CmpOp::Lt, ValTy::I64, hp[0], n);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let one = b.konst(ValTy::I64, 1);
    let i = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, hp[0], one);
    let acc = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, hp[1], seven);
    b.jump(head, &[i, acc]);
    b.switch_to(done);
    let r = b.call_cold(add_one, "add_one", &[(hp[1], ValTy::I64)], &[ValTy::I64])[0];
    b.ret(&[r]);
    b.switch_to(general);
    b.flexswitch(g, &[n], table);
    b.finish_as_recorded()
}

fn table() -> std::rc::Rc<FlexTable> {
    FlexTable::new(
        4,
        Box::new(|g: u64| {
            let mut b = ResidualBuilder::new("case", &[ValTy::I64], &[ValTy::I64]);
            let n = b.inputs()[0];
            let g = b.konst(ValTy::I64, g);
            let r = b.bin(BinOp::Mul, ValTy::I64, Overflow::Wrap, n, g);
            b.ret(&[r]);
            let f = b.finish();
            Some(Case::Owned(jitgen_runtime::residual::native_backend().ok()?.compile(&f).ok()?, listing(&f)))
        }),
    )
}

fn expected(n: i64, g: i64) -> u64 {
    if g == 7 {
        (7 * n + 1) as u64
    } else {
        (n * g) as u64
    }
}

const INPUTS: [(i64, i64); 8] = [(0, 7), (5, 7), (100, 7), (5, 3), (6, 3), (9, -2), (4, 5), (3, 3)];

/// Compiled on the compiler's thread, the function switches through this
/// thread's table (its cases compiled here, as they are taken) and its
/// cold helper call finds its callback where this thread left it, as the
/// same function compiled here does.
#[test]
fn code_compiled_on_the_compilers_thread_runs_here_as_code_compiled_here() {
    let here = compile_host(&guarded(table())).expect("compiles here");
    let (tx, rx) = std::sync::mpsc::channel();
    let ticket = submit(guarded(table()), Box::new(move || tx.send(()).unwrap())).expect("the compiler's thread runs");
    rx.recv().expect("told when ready");
    assert!(ticket.ready());
    let (code, _took) = ticket.take().expect("ready");
    let there: ResidualFn = code.expect("compiles there");
    assert_eq!(there.listing(), here.listing());
    for (n, g) in INPUTS {
        assert_eq!(there.call_words(&[n as u64, g as u64]).unwrap(), [expected(n, g)], "n {n}, g {g}");
        assert_eq!(here.call_words(&[n as u64, g as u64]).unwrap(), [expected(n, g)], "n {n}, g {g}");
    }
    // Called from another thread than the one that compiled it, the code's
    // cold call uses that thread's buffer too.
    let ticket = submit(guarded(table()), Box::new(|| {})).expect("the compiler's thread runs");
    ticket.wait();
    let code = ticket.take().expect("ready").0.expect("compiles there");
    assert_eq!(code.call_words(&[10, 7]).unwrap(), [71]);
}

/// A root recorded with its residual passes pending is simplified on the
/// compiler's thread: what comes back is the simplified function, with its
/// tables, and its code is the code of the function simplified here.
#[test]
fn passes_pending_run_on_the_compilers_thread() {
    let recorded = guarded_as_recorded(table());
    assert!(recorded.passes_pending);
    let here = compile_host(&guarded(table())).expect("compiles here");
    assert_ne!(listing(&recorded), listing(&guarded(table())), "the passes change the function");
    let ticket = submit(recorded, Box::new(|| {})).expect("the compiler's thread runs");
    ticket.wait();
    let there = ticket.take().expect("ready").0.expect("compiles there");
    assert_eq!(there.listing(), here.listing());
    for (n, g) in INPUTS {
        assert_eq!(there.call_words(&[n as u64, g as u64]).unwrap(), [expected(n, g)], "n {n}, g {g}");
    }
}

/// A ticket dropped before its code is taken (its thread went away)
/// frees the code once the compiler's thread is done with it.
#[test]
fn a_ticket_dropped_untaken_frees_its_code() {
    let before = jitgen_runtime::backend::cranelift::live_code_modules();
    let (tx, rx) = std::sync::mpsc::channel();
    let ticket = submit(guarded(table()), Box::new(move || tx.send(()).unwrap())).expect("the compiler's thread runs");
    drop(ticket);
    rx.recv().expect("told when ready");
    // The slot (and the code in it) goes with the compiler's job, right
    // after it says the code is ready.
    let start = std::time::Instant::now();
    while jitgen_runtime::backend::cranelift::live_code_modules() > before {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "the code was never freed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
