//! The `lox` command line (REPL, usage and I/O errors) and the collector:
//! garbage is freed, and everything reachable survives collections.

use std::io::Write;
use std::process::{Command, Stdio};

fn lox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lox"))
}

#[test]
fn the_repl_runs_each_line_and_keeps_globals() {
    let mut child =
        lox().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("lox runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"var a = 20;\nprint a + 1;\nprint nope;\nfun f() { return a * 2; }\nprint f();\nprint 1 +;\n")
        .expect("written");
    let out = child.wait_with_output().expect("lox ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "> > 21\n> > > 40\n> > \n");
    assert_eq!(stderr, "Undefined variable 'nope'.\n[line 1] in script\n[line 1] Error at ';': Expect expression.\n");
}

#[test]
fn usage_and_missing_files_have_their_exit_codes() {
    let out = lox().args(["a", "b"]).output().expect("lox runs");
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "Usage: lox [path]\n");
    let out = lox().arg("/nonexistent/x.lox").output().expect("lox runs");
    assert_eq!(out.status.code(), Some(74));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "Could not open file \"/nonexistent/x.lox\".\n");
}

/// A program that makes about 30 MB of garbage (trees, strings, closures,
/// bound methods) while keeping a few objects alive across collections.
const CHURN: &str = r#"
class Node {
  init(left, right) { this.left = left; this.right = right; }
  check() {
    if (this.left == nil) return 1;
    return 1 + this.left.check() + this.right.check();
  }
}
fun tree(d) {
  if (d == 0) return Node(nil, nil);
  return Node(tree(d - 1), tree(d - 1));
}
fun counter() { var n = 0; fun inc() { n = n + 1; return n; } return inc; }
var keep = tree(6);
var count = counter();
var total = 0;
for (var i = 0; i < 500; i = i + 1) {
  total = total + tree(8).check();
  var s = "s" + "x";
  var m = keep.check;
  count();
}
print total;
print keep.check();
print count();
"#;

#[test]
fn garbage_is_collected_and_what_is_reachable_survives() {
    let out = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut vm = lox::Vm::new(Box::new(Shared(out.clone())));
    vm.interpret(CHURN).expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.borrow()), "255500\n127\n501\n");
    // 500 trees of 511 nodes each were made; the heap holds about one.
    let bytes = vm.heap().bytes_allocated();
    assert!(bytes < 8 << 20, "{bytes} bytes still allocated");
}
