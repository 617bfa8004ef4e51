//! One conformance suite, two backends: every case is a residual function
//! built once; the text backend's listing is snapshotted, and the Cranelift
//! backend's machine code is run and compared with the semantics of
//! `jitgen_runtime::ops` (which is itself checked against Rust below).

use jitgen_runtime::backend::text::TextBackend;
use jitgen_runtime::backend::Backend;
use jitgen_runtime::builder::{ResidualBuilder, ResidualFunction};
use jitgen_runtime::ops::{fold_bin, fold_cast, fold_cmp, fold_un, BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};
use jitgen_runtime::residual::{run_callback, ResidualError, ResidualFn};

const BINOPS: [BinOp; 12] = BinOp::ALL;
const CMPS: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Interesting words of a type, canonical.
fn samples(ty: ValTy, rng: &mut Rng) -> Vec<u64> {
    let mut v = match ty {
        ValTy::F64 => [0.0, -0.0, 1.0, -1.5, 3.75, 1e300, -1e-300, f64::NAN, f64::INFINITY, 255.9, -129.0, 4e9]
            .iter()
            .map(|x: &f64| x.to_bits())
            .collect(),
        ValTy::Bool => vec![0, 1],
        _ => {
            let bits = ty.bits();
            let min = 1u64 << (bits - 1);
            vec![0, 1, 2, 3, 7, u64::MAX, min, min - 1, min + 1, (bits - 1) as u64, bits as u64, 100]
        }
    };
    if ty != ValTy::F64 && ty != ValTy::Bool {
        for _ in 0..6 {
            v.push(rng.next());
        }
    }
    v.into_iter().map(|w| ty.canon(w)).collect()
}

fn compile(f: &ResidualFunction) -> ResidualFn {
    ResidualFn::compile(f, &mut jitgen_runtime::residual::native_backend().unwrap()).unwrap()
}

/// Runs `f` on `inputs` and returns the outputs or the error kind.
fn run(f: &ResidualFn, inputs: &[u64]) -> Result<Vec<u64>, ErrorKind> {
    f.call_words(inputs).map_err(|e| e.kind().unwrap_or(ErrorKind::CallbackPanicked))
}

fn same(ty: ValTy, a: u64, b: u64) -> bool {
    if ty == ValTy::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        (x.is_nan() && y.is_nan()) || a == b
    } else {
        a == b
    }
}

#[test]
fn binary_operations_match_the_semantics_on_every_type() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut checked = 0;
    for ty in ValTy::ALL_INTS.into_iter().chain([ValTy::F64]) {
        for op in BINOPS {
            if ty == ValTy::F64 && matches!(op, BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr) {
                continue;
            }
            for ov in [Overflow::Wrap, Overflow::Check] {
                let mut b = ResidualBuilder::new("bin", &[ty, ty], &[ty]);
                let (x, y) = (b.inputs()[0], b.inputs()[1]);
                let r = b.bin(op, ty, ov, x, y);
                b.ret(&[r]);
                let f = compile(&b.finish());
                let s = samples(ty, &mut rng);
                for &a in &s {
                    for &c in &s {
                        let want = fold_bin(op, ty, ov, a, c).map(|r| vec![r]);
                        let got = run(&f, &[a, c]);
                        let ok = match (&want, &got) {
                            (Ok(w), Ok(g)) => same(ty, w[0], g[0]),
                            (Err(w), Err(g)) => w == g,
                            _ => false,
                        };
                        assert!(ok, "{op:?} {ty} {ov:?} {a:#x} {c:#x}: want {want:?} got {got:?}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 30_000, "{checked}");
}

#[test]
fn division_and_remainder_by_constants_match_the_semantics() {
    // A signed division by a positive constant branches on the dividend's
    // sign (unsigned when it is not negative): both sides, every divisor.
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let mut checked = 0;
    for ty in ValTy::ALL_INTS {
        let mut divisors = samples(ty, &mut rng);
        divisors.extend([5, 10, 99_999_989].map(|c| ty.canon(c)));
        for op in [BinOp::Div, BinOp::Rem] {
            for &c in &divisors {
                let mut b = ResidualBuilder::new("by_const", &[ty], &[ty]);
                let x = b.inputs()[0];
                let k = b.konst(ty, c);
                let r = b.bin(op, ty, Overflow::Wrap, x, k);
                b.ret(&[r]);
                let f = compile(&b.finish());
                for a in
                    samples(ty, &mut rng).into_iter().chain([ty.canon(99_999_988), ty.canon(u64::MAX - 99_999_988)])
                {
                    let want = fold_bin(op, ty, Overflow::Wrap, a, c).map(|r| vec![r]);
                    assert_eq!(run(&f, &[a]), want, "{op:?} {ty} {a:#x} by {c:#x}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 3_000, "{checked}");
}

#[test]
fn unary_comparison_and_cast_operations_match_the_semantics() {
    let mut rng = Rng(77);
    let all: Vec<ValTy> = ValTy::ALL_INTS.into_iter().chain([ValTy::F64, ValTy::Bool]).collect();
    for ty in all.iter().copied() {
        let s = samples(ty, &mut rng);
        for op in [UnOp::Neg, UnOp::Not, UnOp::Abs] {
            if ty == ValTy::F64 && op == UnOp::Not || ty == ValTy::Bool && op != UnOp::Not {
                continue;
            }
            for ov in [Overflow::Wrap, Overflow::Check] {
                let mut b = ResidualBuilder::new("un", &[ty], &[ty]);
                let x = b.inputs()[0];
                let r = b.un(op, ty, ov, x);
                b.ret(&[r]);
                let f = compile(&b.finish());
                for &a in &s {
                    let want = fold_un(op, ty, ov, a).map(|r| vec![r]);
                    let got = run(&f, &[a]);
                    let ok = match (&want, &got) {
                        (Ok(w), Ok(g)) => same(ty, w[0], g[0]),
                        (Err(w), Err(g)) => w == g,
                        _ => false,
                    };
                    assert!(ok, "{op:?} {ty} {ov:?} {a:#x}: want {want:?} got {got:?}");
                }
            }
        }
        for op in CMPS {
            let mut b = ResidualBuilder::new("cmp", &[ty, ty], &[ValTy::Bool]);
            let (x, y) = (b.inputs()[0], b.inputs()[1]);
            let r = b.cmp(op, ty, x, y);
            b.ret(&[r]);
            let f = compile(&b.finish());
            for &a in &s {
                for &c in &s {
                    assert_eq!(run(&f, &[a, c]), Ok(vec![fold_cmp(op, ty, a, c)]), "{op:?} {ty} {a:#x} {c:#x}");
                }
            }
        }
        for to in all.iter().copied() {
            if to == ValTy::Bool && ty != ValTy::Bool {
                continue; // `as bool` is not Rust
            }
            let mut b = ResidualBuilder::new("cast", &[ty], &[to]);
            let x = b.inputs()[0];
            let r = b.cast(ty, to, x);
            b.ret(&[r]);
            let f = compile(&b.finish());
            for &a in &s {
                let got = run(&f, &[a]).unwrap()[0];
                assert!(same(to, got, fold_cast(ty, to, a)), "{ty} as {to}: {a:#x} -> {got:#x}");
            }
        }
    }
}

macro_rules! check_against_rust {
    ($($t:ty => $vt:expr),*) => {$({
        let ty = $vt;
        let mut rng = Rng(5);
        let s = samples(ty, &mut rng);
        for &a in &s {
            for &b in &s {
                let (x, y) = (a as $t, b as $t);
                let w = |r: $t| ty.canon(r as u64);
                assert_eq!(fold_bin(BinOp::Add, ty, Overflow::Wrap, a, b), Ok(w(x.wrapping_add(y))));
                assert_eq!(fold_bin(BinOp::Add, ty, Overflow::Check, a, b).ok(), x.checked_add(y).map(w));
                assert_eq!(fold_bin(BinOp::Sub, ty, Overflow::Check, a, b).ok(), x.checked_sub(y).map(w));
                assert_eq!(fold_bin(BinOp::Mul, ty, Overflow::Wrap, a, b), Ok(w(x.wrapping_mul(y))));
                assert_eq!(fold_bin(BinOp::Mul, ty, Overflow::Check, a, b).ok(), x.checked_mul(y).map(w));
                assert_eq!(fold_bin(BinOp::Div, ty, Overflow::Check, a, b).ok(), x.checked_div(y).map(w));
                assert_eq!(fold_bin(BinOp::Rem, ty, Overflow::Check, a, b).ok(), x.checked_rem(y).map(w));
                assert_eq!(fold_bin(BinOp::Div, ty, Overflow::Wrap, a, b).ok(), (y != 0).then(|| w(x.wrapping_div(y))));
                assert_eq!(fold_bin(BinOp::Rem, ty, Overflow::Wrap, a, b).ok(), (y != 0).then(|| w(x.wrapping_rem(y))));
                assert_eq!(fold_bin(BinOp::Shl, ty, Overflow::Wrap, a, b), Ok(w(x.wrapping_shl(b as u32))));
                assert_eq!(fold_bin(BinOp::Shr, ty, Overflow::Wrap, a, b), Ok(w(x.wrapping_shr(b as u32))));
                assert_eq!(fold_bin(BinOp::Shl, ty, Overflow::Check, a, b).ok(), (b < <$t>::BITS as u64).then(|| w(x << b)));
                assert_eq!(fold_bin(BinOp::Min, ty, Overflow::Wrap, a, b), Ok(w(x.min(y))));
                assert_eq!(fold_cmp(CmpOp::Lt, ty, a, b), (x < y) as u64);
                for op in CmpOp::ALL {
                    assert_eq!(fold_cmp(op.negated(), ty, a, b), 1 - fold_cmp(op, ty, a, b), "{op:?}");
                }
            }
            assert_eq!(fold_un(UnOp::Neg, ty, Overflow::Wrap, a), Ok(w1::<$t>(ty, (a as $t).wrapping_neg() as u64)));
            assert_eq!(fold_cast(ty, ValTy::F64, a), ((a as $t) as f64).to_bits());
            assert_eq!(fold_cast(ValTy::F64, ty, (a as $t as f64 * 1.5).to_bits()), ty.canon(((a as $t as f64 * 1.5) as $t) as u64));
        }
    })*};
}

fn w1<T>(ty: ValTy, w: u64) -> u64 {
    ty.canon(w)
}

#[test]
fn folding_is_rusts_semantics() {
    check_against_rust!(i8 => ValTy::I8, i16 => ValTy::I16, i32 => ValTy::I32, i64 => ValTy::I64,
                        u8 => ValTy::U8, u16 => ValTy::U16, u32 => ValTy::U32, u64 => ValTy::U64);
}

extern "C" fn add_one(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: residual code passes a buffer of at least one word.
        unsafe { *buf = (*buf as i64 + 1) as u64 };
        Ok(())
    })
}

extern "C" fn explode(_buf: *mut u64) -> u64 {
    run_callback(|| panic!("boom from Rust"))
}

/// Cases whose listing the text backend must give and whose machine code must compute the reference.
fn cases() -> Vec<(&'static str, ResidualFunction, Vec<(Vec<u64>, Result<Vec<u64>, ErrorKind>)>)> {
    let mut out = vec![];
    // Constants and arithmetic of several widths.
    let mut b = ResidualBuilder::new("arith", &[ValTy::I32, ValTy::U8], &[ValTy::I32, ValTy::U8]);
    let (x, y) = (b.inputs()[0], b.inputs()[1]);
    let k = b.konst(ValTy::I32, 1000);
    let m = b.bin(BinOp::Mul, ValTy::I32, Overflow::Wrap, x, k);
    let n = b.konst(ValTy::U8, 200);
    let s = b.bin(BinOp::Add, ValTy::U8, Overflow::Wrap, y, n);
    b.ret(&[m, s]);
    out.push((
        "arith",
        b.finish(),
        vec![(vec![7, 100], Ok(vec![7000, 44])), (vec![(-3i64) as u64, 0], Ok(vec![(-3000i64 as u64), 200]))],
    ));
    // A checked division.
    let mut b = ResidualBuilder::new("div", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (x, y) = (b.inputs()[0], b.inputs()[1]);
    let q = b.bin(BinOp::Div, ValTy::I64, Overflow::Check, x, y);
    b.ret(&[q]);
    out.push((
        "div",
        b.finish(),
        vec![
            (vec![17, 5], Ok(vec![3])),
            (vec![1, 0], Err(ErrorKind::DivideByZero)),
            (vec![i64::MIN as u64, u64::MAX], Err(ErrorKind::Overflow(BinOp::Div))),
        ],
    ));
    // Wrapping division and remainder (`wrapping_div`, `wrapping_rem`):
    // by -1 they wrap instead of leaving; by zero they still leave.
    let mut b = ResidualBuilder::new("wrapping div", &[ValTy::I64, ValTy::I64], &[ValTy::I64, ValTy::I64]);
    let (x, y) = (b.inputs()[0], b.inputs()[1]);
    let q = b.bin(BinOp::Div, ValTy::I64, Overflow::Wrap, x, y);
    let r = b.bin(BinOp::Rem, ValTy::I64, Overflow::Wrap, x, y);
    b.ret(&[q, r]);
    let min = i64::MIN as u64;
    out.push((
        "wrapping div",
        b.finish(),
        vec![
            (vec![(-17i64) as u64, 5], Ok(vec![(-3i64) as u64, (-2i64) as u64])),
            (vec![min, u64::MAX], Ok(vec![min, 0])),
            (vec![7, u64::MAX], Ok(vec![(-7i64) as u64, 0])),
            (vec![1, 0], Err(ErrorKind::DivideByZero)),
        ],
    ));
    // A loop with labels and parameters: sum of 0..n.
    let mut b = ResidualBuilder::new("sum", &[ValTy::U64], &[ValTy::U64]);
    let n = b.inputs()[0];
    let zero = b.konst(ValTy::U64, 0);
    let (head, p) = b.new_label(&[ValTy::U64, ValTy::U64]);
    b.jump(head, &[zero, zero]);
    b.switch_to(head);
    let (i, acc) = (p[0], p[1]);
    let more = b.cmp(CmpOp::Lt, ValTy::U64, i, n);
    let (body, _) = b.new_label(&[]);
    let (done, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (done, &[]));
    b.switch_to(body);
    let acc2 = b.bin(BinOp::Add, ValTy::U64, Overflow::Wrap, acc, i);
    let one = b.konst(ValTy::U64, 1);
    let i2 = b.bin(BinOp::Add, ValTy::U64, Overflow::Wrap, i, one);
    b.jump(head, &[i2, acc2]);
    b.switch_to(done);
    b.ret(&[acc]);
    out.push((
        "sum",
        b.finish(),
        vec![(vec![0], Ok(vec![0])), (vec![10], Ok(vec![45])), (vec![100_000], Ok(vec![4_999_950_000]))],
    ));
    // Loads, stores and a bounds check on a buffer passed as a pointer.
    let mut b = ResidualBuilder::new("mem", &[ValTy::Ptr, ValTy::U64, ValTy::U64], &[ValTy::I64]);
    let (p, i, len) = (b.inputs()[0], b.inputs()[1], b.inputs()[2]);
    b.bounds_check(i, len);
    let eight = b.konst(ValTy::U64, 8);
    let off = b.bin(BinOp::Mul, ValTy::U64, Overflow::Wrap, i, eight);
    let off = b.cast(ValTy::U64, ValTy::Ptr, off);
    let addr = b.bin(BinOp::Add, ValTy::Ptr, Overflow::Wrap, p, off);
    let v = b.load(ValTy::I64, addr, 0);
    let two = b.konst(ValTy::I64, 2);
    let v2 = b.bin(BinOp::Mul, ValTy::I64, Overflow::Wrap, v, two);
    b.store(ValTy::I64, addr, 0, v2);
    b.ret(&[v]);
    let buf = Box::leak(Box::new([10i64, 20, 30]));
    let ptr = buf.as_mut_ptr() as u64;
    out.push((
        "mem",
        b.finish(),
        vec![
            (vec![ptr, 1, 3], Ok(vec![20])),
            (vec![ptr, 1, 3], Ok(vec![40])),
            (vec![ptr, 3, 3], Err(ErrorKind::IndexOutOfBounds)),
        ],
    ));
    // Calls of Rust: a result, and a panic carried out as a status.
    let mut b = ResidualBuilder::new("calls", &[ValTy::I64, ValTy::Bool], &[ValTy::I64]);
    let (x, boom) = (b.inputs()[0], b.inputs()[1]);
    let y = b.call(add_one, "add_one", &[(x, ValTy::I64)], &[ValTy::I64])[0];
    let (l_boom, _) = b.new_label(&[]);
    let (l_ok, _) = b.new_label(&[]);
    b.branch(boom, (l_boom, &[]), (l_ok, &[]));
    b.switch_to(l_boom);
    b.call(explode, "explode", &[], &[]);
    b.ret(&[y]);
    b.switch_to(l_ok);
    b.ret(&[y]);
    out.push(("calls", b.finish(), vec![(vec![41, 0], Ok(vec![42])), (vec![41, 1], Err(ErrorKind::CallbackPanicked))]));
    // The same through cold calls (no register clobbered): a result, a
    // panic's status, and values live across the call kept.
    let mut b = ResidualBuilder::new("cold calls", &[ValTy::I64, ValTy::Bool], &[ValTy::I64]);
    let (x, boom) = (b.inputs()[0], b.inputs()[1]);
    let live: Vec<_> = (1..=12)
        .map(|k| {
            let c = b.konst(ValTy::I64, k);
            b.bin(BinOp::Mul, ValTy::I64, Overflow::Wrap, x, c)
        })
        .collect();
    let y = b.call_cold(add_one, "add_one", &[(x, ValTy::I64)], &[ValTy::I64])[0];
    let (l_boom, _) = b.new_label(&[]);
    let (l_ok, _) = b.new_label(&[]);
    b.branch(boom, (l_boom, &[]), (l_ok, &[]));
    b.switch_to(l_boom);
    b.call_cold(explode, "explode", &[], &[]);
    b.ret(&[y]);
    b.switch_to(l_ok);
    let sum = live.iter().fold(y, |acc, v| b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, acc, *v));
    b.ret(&[sum]);
    out.push((
        "cold calls",
        b.finish(),
        vec![(vec![41, 0], Ok(vec![42 + 41 * 78])), (vec![41, 1], Err(ErrorKind::CallbackPanicked))],
    ));
    // `x != 0 && x < y`, then a branch on it: the path where `x == 0` jumps
    // past the join (jump threading), the other branches on the comparison.
    let mut b = ResidualBuilder::new("and", &[ValTy::I64, ValTy::I64], &[ValTy::I64]);
    let (x, y) = (b.inputs()[0], b.inputs()[1]);
    let zero = b.konst(ValTy::I64, 0);
    let nz = b.cmp(CmpOp::Ne, ValTy::I64, x, zero);
    let (l_rhs, _) = b.new_label(&[]);
    let (l_no, _) = b.new_label(&[]);
    let (join, p) = b.new_label(&[ValTy::Bool]);
    b.branch(nz, (l_rhs, &[]), (l_no, &[]));
    b.switch_to(l_rhs);
    let lt = b.cmp(CmpOp::Lt, ValTy::I64, x, y);
    b.jump(join, &[lt]);
    b.switch_to(l_no);
    let f = b.konst(ValTy::Bool, 0);
    b.jump(join, &[f]);
    b.switch_to(join);
    let (l_t, _) = b.new_label(&[]);
    let (l_f, _) = b.new_label(&[]);
    b.branch(p[0], (l_t, &[]), (l_f, &[]));
    b.switch_to(l_t);
    b.ret(&[x]);
    b.switch_to(l_f);
    b.ret(&[y]);
    out.push((
        "and",
        b.finish(),
        vec![(vec![0, 5], Ok(vec![5])), (vec![3, 5], Ok(vec![3])), (vec![7, 5], Ok(vec![5]))],
    ));
    // An error exit reached unconditionally.
    let mut b = ResidualBuilder::new("abort", &[], &[ValTy::I64]);
    b.error_exit(ErrorKind::Abort(3));
    out.push(("abort", b.finish(), vec![(vec![], Err(ErrorKind::Abort(3)))]));
    out
}

#[test]
fn text_backend_listings() {
    let text: String = cases()
        .iter()
        .map(|(name, f, _)| format!("# {name}\n{}", TextBackend.compile(f).unwrap()))
        .collect::<Vec<_>>()
        .join("\n");
    expect_test::expect_file!["conformance.listings.txt"].assert_eq(&text);
}

#[test]
fn cranelift_backend_results() {
    for (name, f, runs) in cases() {
        let code = compile(&f);
        for (inputs, want) in runs {
            assert_eq!(run(&code, &inputs), want, "{name} {inputs:?}");
        }
    }
}

#[test]
fn out_of_bounds_and_callback_panics_carry_their_messages() {
    let all = cases();
    let (_, mem, _) = all.iter().find(|c| c.0 == "mem").unwrap();
    let code = compile(mem);
    let buf = [1i64, 2];
    let err = code.call_words(&[buf.as_ptr() as u64, 5, 2]).unwrap_err();
    assert_eq!(err.to_string(), "index out of bounds: the len is 2 but the index is 5");
    let (_, calls, _) = all.iter().find(|c| c.0 == "calls").unwrap();
    let code = compile(calls);
    match code.call_words(&[1, 1]) {
        Err(e @ ResidualError::Panicked(_)) => {
            assert_eq!(e.to_string(), "boom from Rust");
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.resume()));
            assert_eq!(caught.unwrap_err().downcast_ref::<&str>(), Some(&"boom from Rust"));
        }
        other => panic!("expected a carried panic, got {other:?}"),
    }
}

#[test]
fn exit_paths_are_the_blocks_that_leave_without_passing_a_cycle() {
    // entry -> head <-> body; head -> test -> (one | two), each returning.
    let mut b = ResidualBuilder::new("exits", &[ValTy::U64], &[ValTy::U64]);
    let n = b.inputs()[0];
    let zero = b.konst(ValTy::U64, 0);
    let one = b.konst(ValTy::U64, 1);
    let (head, p) = b.new_label(&[ValTy::U64]);
    b.jump(head, &[zero]);
    b.switch_to(head);
    let more = b.cmp(CmpOp::Lt, ValTy::U64, p[0], n);
    let (body, _) = b.new_label(&[]);
    let (test, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (test, &[]));
    b.switch_to(body);
    let i2 = b.bin(BinOp::Add, ValTy::U64, Overflow::Wrap, p[0], one);
    b.jump(head, &[i2]);
    b.switch_to(test);
    let odd = b.bin(BinOp::And, ValTy::U64, Overflow::Wrap, p[0], one);
    let is_odd = b.cmp(CmpOp::Ne, ValTy::U64, odd, zero);
    let (yes, _) = b.new_label(&[]);
    let (no, _) = b.new_label(&[]);
    b.branch(is_odd, (yes, &[]), (no, &[]));
    b.switch_to(yes);
    b.ret(&[p[0]]);
    b.switch_to(no);
    b.ret(&[zero]);
    let f = b.finish();
    let exits = f.exit_paths();
    let exit = |l: jitgen_runtime::builder::Label| exits[l];
    assert!(!exit(jitgen_runtime::builder::Label::ENTRY) && !exit(head) && !exit(body), "{exits:?}");
    assert!(exit(test) && exit(yes) && exit(no), "{exits:?}");
    // The layout they give still computes the same.
    let code = compile(&f);
    assert_eq!(run(&code, &[7]), Ok(vec![7]));
    assert_eq!(run(&code, &[8]), Ok(vec![0]));
}

#[test]
fn a_branch_whose_true_side_continues_the_innermost_loop_is_found() {
    // f1: x = 1; for i in 0..n { for j in 1..=i+1 (tested as j <= i before
    // j += 1) { x += i & j } }, with the inner test's true side the inner
    // body and the outer test's true side leaving.
    let mut b = ResidualBuilder::new("f1", &[ValTy::I64], &[ValTy::I64]);
    let n = b.inputs()[0];
    let (zero, one) = (b.konst(ValTy::I64, 0), b.konst(ValTy::I64, 1));
    let (outer, o) = b.new_label(&[ValTy::I64, ValTy::I64]);
    b.jump(outer, &[one, zero]);
    b.switch_to(outer);
    let (x, i) = (o[0], o[1]);
    let done = b.cmp(CmpOp::Ge, ValTy::I64, i, n);
    let (exit, _) = b.new_label(&[]);
    let (inner, p) = b.new_label(&[ValTy::I64, ValTy::I64]);
    b.branch(done, (exit, &[]), (inner, &[x, zero]));
    b.switch_to(exit);
    b.ret(&[x]);
    b.switch_to(inner);
    let (x2, j) = (p[0], p[1]);
    let more = b.cmp(CmpOp::Le, ValTy::I64, j, i);
    let (body, _) = b.new_label(&[]);
    let (latch, _) = b.new_label(&[]);
    b.branch(more, (body, &[]), (latch, &[]));
    b.switch_to(body);
    let j1 = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, j, one);
    let ij = b.bin(BinOp::And, ValTy::I64, Overflow::Wrap, i, j1);
    let x3 = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, x2, ij);
    b.jump(inner, &[x3, j1]);
    b.switch_to(latch);
    let i1 = b.bin(BinOp::Add, ValTy::I64, Overflow::Wrap, i, one);
    b.jump(outer, &[x2, i1]);
    let recorded = b.function().clone();
    let f = b.finish();
    let loops = recorded.true_side_loops();
    assert!(loops[inner], "the inner test's true side is the inner body");
    assert!(!loops[outer], "the outer test's true side leaves");
    // Simplified, the body ends with a copy of the inner test (loop
    // rotation), whose true side is the body itself.
    assert!(f.true_side_loops()[body], "the rotated test's true side is the body");
    // Compiled with the inner body as the fall-through, it computes f1.
    let code = compile(&f);
    let f1 = |n: i64| {
        let mut x = 1i64;
        for i in 0..n {
            let mut j = 0;
            while j <= i {
                j += 1;
                x = x.wrapping_add(i & j);
            }
        }
        x
    };
    for n in [0, 1, 2, 7, 100] {
        assert_eq!(run(&code, &[n as u64]), Ok(vec![f1(n) as u64]), "n {n}");
    }
}
