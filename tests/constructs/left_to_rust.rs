//! Rust the analysis does not support is left to Rust, never an error. A
//! function using it is called as it is from compiled code; a portal using
//! it interprets as written, and makes its module interpret only where no
//! other portal of the module compiles. `jit::left_to_rust()` says what was
//! left and where. Results are compared with `jit::plain`, through the
//! portal and through `jit::specialize` where the module compiles.

use jitgen::prelude::*;

#[jit_interpreter]
mod helpers {
    use jitgen::prelude::*;

    /// An item the analysis does not look into.
    static mut CALLS: i64 = 0;

    /// Generic: not analyzed, callable as Rust.
    pub fn twice<T: Copy>(x: T) -> (T, T) {
        (x, x)
    }

    /// An array and an iterator (its local closure is inlined where it is
    /// called): called as it is from compiled code.
    fn weight(x: i64) -> i64 {
        let add = |y: i64| y * 3 + 1;
        [1i64, 2].iter().map(|v| add(*v + x)).sum()
    }

    /// Declared, then assigned: also left to Rust.
    fn late(a: i64) -> i64 {
        let x;
        x = a * 2;
        x + 1
    }

    /// Ops: 0 adds `weight(i)`, 1 adds `late(i)`, 2 counts down, 3 loops
    /// while positive, else returns the sum.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc = acc.wrapping_add(weight(i)),
                1 => acc = acc.wrapping_add(late(i)),
                2 => i -= 1,
                3 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }

    /// Uses the static: left to Rust in turn.
    pub fn count() -> i64 {
        // SAFETY: only the test's thread reads and writes it.
        unsafe {
            CALLS += 1;
            CALLS
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub a: i64,
        pub b: i64,
    }

    /// Left to Rust, taking a `String` and a struct by reference: its
    /// residual call passes them so.
    fn mix(name: &String, p: &Pair) -> i64 {
        let x;
        x = name.len() as i64 * p.a - p.b;
        x
    }

    /// Ops: 0 adds `mix(name, &pair)`, 1 adds `i` to `pair.a`, 2 counts
    /// down and loops while positive, else returns the sum and `pair.a`.
    pub fn named(code: &[u8], name: &String, n: i64) -> i64 {
        let mut pair = Pair { a: 1, b: 2 };
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc = acc.wrapping_add(mix(name, &pair)),
                1 => pair.a = pair.a.wrapping_add(i),
                2 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc.wrapping_add(pair.a),
            }
        }
    }
}

/// A helper left to Rust taking `&String` and `&Pair` parameters is called
/// with references from compiled code, and agrees with plain.
#[test]
fn a_helper_left_to_rust_takes_its_string_and_struct_by_reference() {
    helpers::jit::config().set_threshold(0);
    let name = "lox".to_string();
    for code in [&[0u8, 1, 2, 9][..], &[1, 0, 0, 2, 9], &[9]] {
        for n in [1i64, 5, 400] {
            let want = helpers::jit::plain::named(code, &name, n);
            assert_eq!(helpers::named(code, &name, n), want, "{code:?} {n}");
            assert_eq!(helpers::jit::specialize::named(code).call(&name, n), want, "{code:?} {n}");
        }
    }
    let listing = helpers::jit::specialize::named(&[0u8, 1, 2, 9]).listing().to_string();
    assert!(listing.contains("mix"), "{listing}");
}

#[test]
fn a_portal_calling_functions_left_to_rust_compiles_and_agrees_with_plain() {
    helpers::jit::config().set_threshold(0);
    let code = [0u8, 1, 2, 3, 9];
    for n in [0i64, 1, 7, 300] {
        let want = helpers::jit::plain::run(&code, n);
        assert_eq!(helpers::run(&code, n), want, "{n}");
        assert_eq!(helpers::jit::specialize::run(&code).call(n), want, "{n}");
    }
    assert!(helpers::jit::stats().compilations > 0);
    let listing = helpers::jit::specialize::run(&code).listing().to_string();
    assert!(listing.contains("weight") && listing.contains("late"), "{listing}");
    assert_eq!(helpers::twice(3), (3, 3));
    assert_eq!(helpers::count(), 1);
    let left = helpers::jit::left_to_rust().join("\n");
    expect_test::expect![[r#"
        CALLS: tests/constructs/left_to_rust.rs:15:16: a static is not analyzed (global mutable state hides from the JIT): code that uses it runs as Rust; a `const`, or a parameter, can compile
        weight: tests/constructs/left_to_rust.rs:26:9: an array literal is not supported in a #[jit_interpreter] function; use `vec![...]`
        late: tests/constructs/left_to_rust.rs:31:9: `let` without an initializer is not supported in a #[jit_interpreter] function; give the binding its first value where it is declared
        count: tests/constructs/left_to_rust.rs:63:9: `unsafe` is not supported in a #[jit_interpreter] function
        mix: tests/constructs/left_to_rust.rs:78:9: `let` without an initializer is not supported in a #[jit_interpreter] function; give the binding its first value where it is declared"#]].assert_eq(&left);
}

#[jit_interpreter]
mod interpreted_only {
    use jitgen::prelude::*;

    pub enum Error {
        Type(&'static [u8]),
        Underflow,
    }

    /// A portal returning an error whose payload is a byte string literal
    /// (`&'static [u8]`, which compiled code cannot make): the module
    /// interprets only. (Its `&str` parameter is no reason: text only
    /// Rust reads is an opaque value, see `new_user.rs`; nor would a
    /// `&'static str` be, see `static_text.rs`.)
    pub fn run(code: &[u8], name: &str) -> Result<String, Error> {
        let mut out = String::new();
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => out.push_str("hi "),
                1 => out.push_str(name),
                2 => {
                    let n = out.chars().count();
                    out.push_str(&n.to_string());
                }
                3 => return Err(Error::Type(b"expected an int")),
                4 => return Err(Error::Underflow),
                _ => return Ok(out),
            }
        }
    }
}

#[test]
fn a_module_whose_portal_uses_unsupported_rust_interprets_and_says_why() {
    interpreted_only::jit::config().set_threshold(0);
    let shown = |r: Result<String, interpreted_only::Error>| match r {
        Ok(s) => s,
        Err(interpreted_only::Error::Type(t)) => format!("type: {}", String::from_utf8_lossy(t)),
        Err(interpreted_only::Error::Underflow) => "underflow".into(),
    };
    for code in [&[0u8, 1, 2, 9][..], &[0, 3], &[4], &[1, 1, 2, 2, 9]] {
        let want = shown(interpreted_only::jit::plain::run(code, "lox"));
        assert_eq!(shown(interpreted_only::run(code, "lox")), want, "{code:?}");
    }
    assert_eq!(shown(interpreted_only::run(&[0, 1, 2, 9], "lox")), "hi lox6");
    assert_eq!(interpreted_only::jit::stats().compilations, 0);
    let left = interpreted_only::jit::left_to_rust().join("\n");
    expect_test::expect![[r#"
        the module: tests/constructs/left_to_rust.rs:177:29: this Rust, left as written in a portal, gives a `Result<String, Error>`, which compiled code cannot take from it: a scalar, a `String`, an enum, `Option` or `Result` of plain values can be
        the module: tests/constructs/left_to_rust.rs:177:45: a byte string literal is not supported in a #[jit_interpreter] function; take bytes as a parameter (`&[u8]`), or make them with `vec![...]`"#]].assert_eq(&left);
}

#[jit_interpreter]
mod unhinted {
    use jitgen::prelude::*;

    /// A machine as a new user writes one: its program in a struct field,
    /// read by a helper method, its program counter a field, and a merge
    /// point as the only hint. Nothing in its loop is known while
    /// compiling; compiled, it was the interpreter again, slower.
    pub struct Chunk {
        pub code: Vec<u8>,
    }

    pub struct Machine {
        pub chunk: Chunk,
        pub pc: usize,
        pub acc: i64,
        pub i: i64,
    }

    impl Machine {
        fn next(&mut self) -> u8 {
            let b = self.chunk.code[self.pc];
            self.pc += 1;
            b
        }

        pub fn run(&mut self) -> i64 {
            loop {
                hint!(global_merge_point);
                match self.next() {
                    0 => self.acc += self.i,
                    1 => {
                        self.i -= 1;
                        if self.i > 0 {
                            self.pc = 0;
                        }
                    }
                    _ => return self.acc,
                }
            }
        }
    }
}

#[test]
fn a_module_with_nothing_to_specialize_interprets_and_says_what_to_mark() {
    use unhinted::Machine;
    let fresh = |n: i64| Machine { chunk: unhinted::Chunk { code: vec![0, 1, 9] }, pc: 0, acc: 0, i: n };
    let whole = |r: i64, m: Machine| (r, m.pc, m.acc, m.i);
    let check = || {
        for n in [1i64, 10, 5_000] {
            let mut m = fresh(n);
            let want = whole(unhinted::jit::plain::Machine::run(&mut m), m);
            let mut m = fresh(n);
            assert_eq!(whole(m.run(), m), want, "{n}");
        }
    };
    unhinted::jit::config().set_threshold(0);
    check();
    assert_eq!(unhinted::jit::stats().compilations, 0, "{:?}", unhinted::jit::stats());
    let left = unhinted::jit::left_to_rust();
    assert!(
        left.len() == 1 && left[0].contains("nothing to specialize") && left[0].contains("hint!(pc, promote)"),
        "{left:?}"
    );
    // Switched on explicitly, the same loop compiles (what the policy
    // spares), and agrees.
    unhinted::jit::config().set_enabled(true);
    check();
    assert!(unhinted::jit::stats().compilations > 0);
}

#[jit_interpreter]
mod concrete_after_outlining {
    use jitgen::prelude::*;

    /// The program collected by Rust's own code (outlined) is known only
    /// when running, so `concrete` on it cannot hold: the module interprets
    /// and says both why the collecting is Rust's and why the hint fails.
    pub fn run(src: &str) -> usize {
        let program: Vec<char> = src.chars().collect();
        let mut pc = 0;
        let mut n = 0;
        while pc < program.len() {
            hint!(global_merge_point);
            if hint!(program[pc], concrete) == '+' {
                n += 1;
            }
            pc += 1;
        }
        n
    }
}

#[test]
fn a_hint_that_fails_once_rust_is_outlined_says_why() {
    assert_eq!(concrete_after_outlining::run("+-++"), 3);
    let left = concrete_after_outlining::jit::left_to_rust();
    assert!(left.iter().all(|l| l.starts_with("the module: ")), "{left:?}");
    assert!(left.iter().any(|l| l.contains("the method `chars` on `str`")), "{left:?}");
    assert!(
        left.iter().any(|l| l.contains("once the Rust jitgen does not model runs as Rust (outlined): ")
            && l.contains("`program[pc]` is red")),
        "{left:?}"
    );
}

#[jit_interpreter]
mod one_portal_left {
    use jitgen::prelude::*;

    /// Counts the `+` of a program as Brainfuck-style text: a portal whose
    /// setup uses what the analysis does not support (`chars`, an array
    /// repeat). It interprets as written; the module's other portals compile.
    pub fn count(src: &str) -> usize {
        let program: Vec<char> = src.chars().collect();
        let mut cells = [0u8; 4];
        let mut pc = 0;
        while pc < program.len() {
            hint!(global_merge_point);
            if program[pc] == '+' {
                cells[0] = cells[0].wrapping_add(1);
            }
            pc += 1;
        }
        cells[0] as usize
    }

    pub struct Scanner {
        pub src: String,
        pub seen: usize,
    }

    impl Scanner {
        /// A portal method left to Rust the same way (`chars` on a field).
        pub fn scan(&mut self, code: &[u8]) -> usize {
            let mut pc = 0;
            while pc < code.len() {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                if op == 1 {
                    self.seen += self.src.chars().filter(|c| *c == 'a').count();
                }
                pc += 1;
            }
            self.seen
        }
    }

    /// Ops: 0 adds `i`, 1 counts down and loops while positive, else
    /// returns the sum. Compiles.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc = acc.wrapping_add(i),
                1 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }
}

#[test]
fn a_portal_using_unsupported_rust_interprets_while_the_modules_other_portals_compile() {
    use one_portal_left as m;
    m::jit::config().set_threshold(0);
    let code = [0u8, 1, 9];
    for n in [1i64, 2, 50, 3_000] {
        let want = m::jit::plain::run(&code, n);
        assert_eq!(m::run(&code, n), want, "{n}");
        assert_eq!(m::jit::specialize::run(&code).call(n), want, "{n}");
    }
    assert!(m::jit::stats().compilations > 0, "{:?}", m::jit::stats());
    for src in ["", "+", "+-+>++", &"+".repeat(300)] {
        assert_eq!(m::count(src), m::jit::plain::count(src), "{src}");
    }
    assert_eq!(m::count("+-+>++"), 4);
    let whole = |s: &m::Scanner| (s.src.clone(), s.seen);
    for code in [&[0u8, 1, 1][..], &[], &[1; 40]] {
        let mut a = m::Scanner { src: "banana".into(), seen: 1 };
        let mut b = m::Scanner { src: "banana".into(), seen: 1 };
        assert_eq!(a.scan(code), m::jit::plain::Scanner::scan(&mut b, code), "{code:?}");
        assert_eq!(whole(&a), whole(&b), "{code:?}");
    }
    let left = m::jit::left_to_rust();
    assert!(left.iter().any(|l| l.starts_with("count: ") && l.contains("the method `chars` on `str`")), "{left:?}");
    assert!(left.iter().any(|l| l.starts_with("count: ") && l.contains("array repeat")), "{left:?}");
    assert!(left.iter().any(|l| l.starts_with("Scanner::scan: ") && l.contains("`chars`")), "{left:?}");
    assert!(!left.iter().any(|l| l.starts_with("the module")), "{left:?}");
}
