//! Execute mode: the generating extension run on known inputs is an
//! interpreter of the flow graphs (the blackhole interpreter).

use jitgen_runtime::ops::{BinOp, CmpOp, ErrorKind, Overflow, ValTy};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::ResidualError;
use jitgen_runtime::schedule::{Compilation, Limits, MergeKind};
use jitgen_runtime::state::{Frame, JitState};

#[derive(Clone, Debug)]
struct Blk {
    block: u32,
    reds: Vec<RedBox>,
}

impl Frame for Blk {
    type Key = u32;
    fn key(&self) -> u32 {
        self.block
    }
    fn reds(&self) -> Vec<RedBox> {
        self.reds.clone()
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        self.reds = r.to_vec();
    }
}

/// `let mut i = 0; let mut acc = 0; while i < n { acc += k / (n - i - 1)... }`:
/// the sum of 100 / (i - 3) for i in 0..n, through a red loop.
fn ext(c: &mut Compilation<Blk>) {
    let n = c.inputs()[0];
    let mut next = Some(JitState::new(Blk { block: 1, reds: vec![RedBox::i64(0), RedBox::i64(0), n] }));
    while let Some(s) = next.take() {
        if !c.step() {
            return;
        }
        let f = s.top().clone();
        match f.block {
            1 => match c.merge(s, MergeKind::LoopHead) {
                Some(s) => {
                    let [i, acc, n] = s.top().reds[..] else { unreachable!() };
                    let more = c.b.red_cmp(CmpOp::Lt, &i, &n);
                    if c.split(&more, &mut || JitState::new(Blk { block: 2, reds: vec![acc] })) {
                        let d = c.b.red_bin(BinOp::Sub, Overflow::Wrap, &i, &RedBox::i64(3));
                        let q = c.b.red_bin(BinOp::Div, Overflow::Wrap, &RedBox::i64(100), &d);
                        let acc = c.b.red_bin(BinOp::Add, Overflow::Wrap, &acc, &q);
                        let i = c.b.red_bin(BinOp::Add, Overflow::Wrap, &i, &RedBox::i64(1));
                        next = Some(JitState::new(Blk { block: 1, reds: vec![i, acc, n] }));
                    } else {
                        next = Some(JitState::new(Blk { block: 2, reds: vec![acc] }));
                    }
                }
                None => next = c.next_pending(),
            },
            2 => {
                c.finish_return(&f.reds);
                next = c.next_pending();
            }
            _ => unreachable!(),
        }
    }
}

fn reference(n: i64) -> Result<i64, ErrorKind> {
    let mut acc = 0i64;
    for i in 0..n {
        if i == 3 {
            return Err(ErrorKind::DivideByZero);
        }
        acc += 100 / (i - 3);
    }
    Ok(acc)
}

#[test]
fn the_extension_executes_as_an_interpreter() {
    for n in 0..8i64 {
        let c: Compilation<Blk> = Compilation::executing("ext", &[ValTy::I64], &[n as u64], &[ValTy::I64]);
        let got = c.execute(ext).map(|w| w[0] as i64).map_err(|e| e.kind().unwrap());
        assert_eq!(got, reference(n), "n={n}");
    }
    // Compiled, the same extension gives the same answers.
    let mut c: Compilation<Blk> = Compilation::new("ext", &[ValTy::I64], &[ValTy::I64], Limits::default());
    ext(&mut c);
    let f = jitgen_runtime::residual::compile_host(&c.finish().unwrap()).unwrap();
    for n in 0..8i64 {
        let got = f.call_words(&[n as u64]).map(|w| w[0] as i64).map_err(|e| e.kind().unwrap());
        assert_eq!(got, reference(n), "n={n}");
    }
}

#[test]
fn loads_stores_and_bounds_checks_happen_at_once() {
    let mut data = vec![1i64, 2, 3];
    let layout = jitgen_runtime::heap::vec_layout::<i64>().unwrap();
    let addr = &mut data as *mut Vec<i64> as u64;
    let run = |i: u64| {
        let c: Compilation<Blk> = Compilation::executing("vec", &[ValTy::Ptr, ValTy::U64], &[addr, i], &[ValTy::I64]);
        c.execute(|c| {
            let [v, i] = c.inputs()[..] else { unreachable!() };
            let e = c.b.red_vec_elem(&v, &i, 8, layout);
            let x = c.b.red_load(ValTy::I64, &e, 0);
            let y = c.b.red_bin(BinOp::Mul, Overflow::Wrap, &x, &RedBox::i64(10));
            c.b.red_store(&e, 0, &y);
            c.finish_return(&[x]);
        })
    };
    assert_eq!(run(1).unwrap(), [2]);
    match run(3) {
        Err(e @ ResidualError::Exit { .. }) => {
            assert_eq!(e.to_string(), "index out of bounds: the len is 3 but the index is 3")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(data, [1, 20, 3]);
}
