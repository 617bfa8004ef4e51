//! What a flexswitch costs at run time (a benchmark, not a test):
//! `cargo run --release -p jitgen-runtime --example flexswitch`.
//!
//! The same computation, `(a / 10) + 5 + y`, compiled twice: straight, and with
//! `a / 10` promoted through a flexswitch with N cases (the value found at the
//! end of the scan, the worst case). The difference per call is the dispatch:
//! storing the live values, scanning the case table, the tail call.

use std::time::Instant;

use jitgen_runtime::builder::ResidualBuilder;
use jitgen_runtime::ops::{BinOp, Overflow, ValTy};
use jitgen_runtime::promotion::{Case, FlexTable};
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::residual::ResidualFn;

fn straight() -> ResidualFn {
    let mut b = ResidualBuilder::new("straight", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (a, y) = (b.inputs()[0], b.inputs()[1]);
    let ten = b.konst(ValTy::I64, 10);
    let q = b.bin(BinOp::Div, ValTy::I64, Overflow::Wrap, a, ten);
    let five = b.konst(ValTy::I64, 5);
    let d = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, q, five);
    let r = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, d, y);
    b.ret(&[r]);
    ResidualFn::compile(&b.finish(), &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap()
}

fn switched() -> (ResidualFn, std::rc::Rc<FlexTable>) {
    let table = FlexTable::new(
        64,
        Box::new(|c: u64| {
            let mut b = ResidualBuilder::new("case", &[ValTy::I64], &[ValTy::I64]);
            let y = RedBox::Var { ty: ValTy::I64, val: b.inputs()[0] };
            let r = b.red_bin(BinOp::Add, Overflow::Wrap, &RedBox::i64(c as i64 + 5), &y);
            let v = b.materialize(&r);
            b.ret(&[v]);
            let f = b.finish();
            let code = jitgen_runtime::residual::compile_native(&f).ok()?;
            Some(Case::Owned(code, jitgen_runtime::builder::listing(&f)))
        }),
    );
    let mut b = ResidualBuilder::new("entry", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (a, y) = (b.inputs()[0], b.inputs()[1]);
    let ten = b.konst(ValTy::I64, 10);
    let q = b.bin(BinOp::Div, ValTy::I64, Overflow::Wrap, a, ten);
    b.flexswitch(q, &[y], table.clone());
    (ResidualFn::compile(&b.finish(), &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap(), table)
}

fn time(f: &ResidualFn, a: i64, n: u64) -> f64 {
    let t = Instant::now();
    let mut s = 0u64;
    for i in 0..n {
        s = s.wrapping_add(f.call_words(&[a as u64, i]).unwrap()[0]);
    }
    std::hint::black_box(s);
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn main() {
    let n = 2_000_000;
    let plain = straight();
    println!("{:>6} {:>14} {:>14} {:>14}", "cases", "straight ns", "switched ns", "dispatch ns");
    for cases in [1u64, 4, 16] {
        let (sw, table) = switched();
        for c in 0..cases {
            sw.call_words(&[c * 10, 0]).unwrap();
        }
        assert_eq!(table.cases() as u64, cases);
        let worst = ((cases - 1) * 10) as i64;
        let mut rows = vec![];
        for _ in 0..5 {
            rows.push((time(&plain, worst, n), time(&sw, worst, n)));
        }
        rows.sort_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)));
        let (p, s) = rows[rows.len() / 2];
        println!("{cases:>6} {p:>14.2} {s:>14.2} {:>14.2}", s - p);
    }
}
