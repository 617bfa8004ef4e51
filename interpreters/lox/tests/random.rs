//! Random Lox programs run by the `lox` binary in the three modes (the JIT
//! by default, `JITGEN_THRESHOLD=0`, `JITGEN_OFF=1`): output, errors and
//! exit code must be the same in each. The programs use every kind of value
//! and statement: numbers, strings, globals, locals, loops, functions,
//! closures, classes with initializers, fields, methods, inheritance and
//! `super`, and sometimes end in a runtime error. `JITGEN_DEEP=1` runs many
//! more (`JITGEN_RANDOM_PROGRAMS=N` sets the count; `LOX_RANDOM_DIR=dir`
//! keeps the programs in `dir`).

use std::process::Command;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// Writes random programs; `scope` holds the local number variables in scope.
struct Gen {
    rng: Rng,
    out: String,
    scope: Vec<String>,
    depth: usize,
    fresh: usize,
}

impl Gen {
    fn num(&mut self) -> String {
        match self.rng.below(6) {
            0 => format!("{}.5", self.rng.below(10)),
            _ => self.rng.below(20).to_string(),
        }
    }

    fn expr(&mut self, depth: usize) -> String {
        if depth == 0 {
            return match self.rng.below(4) {
                0 => self.num(),
                1 if !self.scope.is_empty() => {
                    let i = self.rng.below(self.scope.len() as u64) as usize;
                    self.scope[i].clone()
                }
                _ => self.rng.pick(&["g0", "g1", "o.x", "p.get()", "c(0)"]).to_string(),
            };
        }
        match self.rng.below(9) {
            0 => format!("-{}", self.expr(depth - 1)),
            1 => format!("f0({}, {})", self.expr(depth - 1), self.expr(depth - 1)),
            2 => format!("c({})", self.expr(depth - 1)),
            3 => format!("o.add({}).get()", self.expr(depth - 1)),
            _ => {
                let op = self.rng.pick(&["+", "-", "*", "+", "-"]);
                format!("({} {op} {})", self.expr(depth - 1), self.expr(depth - 1))
            }
        }
    }

    fn cond(&mut self) -> String {
        let op = self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
        let c = format!("{} {op} {}", self.expr(1), self.expr(1));
        match self.rng.below(5) {
            0 => format!("!({c})"),
            1 => format!("{c} and {} < {}", self.expr(0), self.expr(1)),
            2 => format!("{c} or {} == nil", self.expr(0)),
            _ => c,
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn stmt(&mut self) {
        let nested = self.depth < 3;
        match self.rng.below(if nested { 12 } else { 7 }) {
            0 | 1 => {
                let e = self.expr(2);
                self.line(&format!("print {e};"));
            }
            2 => {
                let (g, e) = (self.rng.pick(&["g0", "g1"]), self.expr(2));
                self.line(&format!("{g} = {e};"));
            }
            3 => {
                let e = self.expr(1);
                self.line(&format!("o.x = {e};"));
                self.line("print o.x;");
            }
            4 => {
                let letter = self.rng.pick(&["a", "b", "c"]);
                self.line(&format!("s = s + \"{letter}\";"));
                self.line("print s;");
            }
            5 => self.line("print p.get() + o.get();"),
            6 => {
                let e = self.expr(1);
                self.line(&format!("print c({e});"));
            }
            7 => {
                let (c, n) = (self.cond(), self.rng.below(3) + 1);
                self.line(&format!("if ({c}) {{"));
                self.block(n);
                self.line("} else {");
                self.block(1);
                self.line("}");
            }
            8 => {
                let (i, n) = (self.fresh_name("i"), self.rng.below(12) + 1);
                self.line(&format!("for (var {i} = 0; {i} < {n}; {i} = {i} + 1) {{"));
                self.scope.push(i);
                self.block(2);
                self.scope.pop();
                self.line("}");
            }
            9 => {
                let (w, n) = (self.fresh_name("w"), self.rng.below(10) + 1);
                self.line(&format!("var {w} = 0;"));
                self.line(&format!("while ({w} < {n}) {{"));
                self.scope.push(w.clone());
                self.block(2);
                self.scope.pop();
                self.depth += 1;
                self.line(&format!("{w} = {w} + 1;"));
                self.depth -= 1;
                self.line("}");
            }
            10 => {
                let (l, e) = (self.fresh_name("l"), self.expr(2));
                self.line("{");
                self.depth += 1;
                self.line(&format!("var {l} = {e};"));
                self.scope.push(l.clone());
                self.stmt();
                self.line(&format!("{l} = {l} + 1;"));
                self.line(&format!("print {l};"));
                self.scope.pop();
                self.depth -= 1;
                self.line("}");
            }
            _ => {
                let f = self.fresh_name("k");
                let e = self.expr(1);
                self.line(&format!("fun {f}(d) {{ return c(d) + {e}; }}"));
                self.line(&format!("print {f}(1);"));
            }
        }
    }

    fn fresh_name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    fn block(&mut self, n: u64) {
        self.depth += 1;
        let mark = self.scope.len();
        for _ in 0..n {
            self.stmt();
        }
        self.scope.truncate(mark);
        self.depth -= 1;
    }
}

const PRELUDE: &str = r#"fun f0(a, b) {
  var t = a * 2;
  if (t > b) return t - b;
  return a + b / 4;
}
fun makeCounter() {
  var n = 0;
  fun inc(d) { n = n + d; return n; }
  return inc;
}
class A {
  init(x) { this.x = x; }
  get() { return this.x; }
  add(d) { this.x = this.x + d; if (this.x > 1000) this.x = 0; return this; }
}
class B < A {
  get() { return super.get() * 2 + 1; }
}
fun main() {
  var g0 = 1;
  var g1 = 2.5;
  var s = "s";
  var c = makeCounter();
  var o = A(3);
  var p = B(4);
"#;

/// A random program: the prelude, then statements in `main` (its variables
/// locals and upvalues), sometimes ending in a runtime error.
fn program(seed: u64) -> String {
    let mut g = Gen { rng: Rng(seed | 1), out: PRELUDE.to_string(), scope: vec![], depth: 1, fresh: 0 };
    for _ in 0..g.rng.below(10) + 4 {
        g.stmt();
    }
    g.line("print g0 + g1;");
    match g.rng.below(8) {
        0 => g.line("print s + g0;"),
        1 => g.line("print o.missing;"),
        2 => g.line("f0(1);"),
        _ => {}
    }
    g.out.push_str("}\nmain();\n");
    g.out
}

fn run(path: &std::path::Path, mode: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_lox")).arg(path).envs(mode.iter().copied()).output().expect("lox runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[test]
fn random_programs_agree_in_every_mode() {
    let deep = std::env::var_os("JITGEN_DEEP").is_some_and(|v| v != "0");
    let n: u64 = std::env::var("JITGEN_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(if deep {
        1000
    } else {
        40
    });
    // `LOX_RANDOM_DIR=dir` keeps the programs there (to run them elsewhere).
    let keep = std::env::var_os("LOX_RANDOM_DIR");
    let dir = keep
        .clone()
        .map_or_else(|| std::env::temp_dir().join(format!("lox-random-{}", std::process::id())), Into::into);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let (mut errors, mut printed) = (0, 0);
    for seed in 0..n {
        let src = program(0x9e37_79b9_7f4a_7c15 ^ (seed * 0x1000_0001));
        let path = dir.join(format!("p{seed}.lox"));
        std::fs::write(&path, &src).expect("written");
        let plain = run(&path, &[("JITGEN_OFF", "1")]);
        assert!(plain.2 == Some(0) || plain.2 == Some(70), "{src}\n{:?}", plain);
        errors += (plain.2 == Some(70)) as usize;
        printed += plain.0.lines().count();
        for mode in [&[][..], &[("JITGEN_THRESHOLD", "0")][..]] {
            assert_eq!(run(&path, mode), plain, "mode {mode:?}, program:\n{src}");
        }
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    // The programs print, and some end in a runtime error.
    assert!(printed as u64 > 5 * n && errors > 0, "{printed} lines, {errors} errors in {n} programs");
}

#[test]
fn random_programs_are_valid_lox_that_ends() {
    for seed in 0..200 {
        let src = program(seed * 7919 + 1);
        let (out, result) = lox::run_captured(&src);
        match result {
            Ok(()) => assert!(!out.is_empty(), "{src}"),
            Err(lox::InterpretError::Runtime(lines)) => assert!(lines.len() >= 2, "{lines:?}"),
            Err(e) => panic!("{e:?}\n{src}"),
        }
    }
}
