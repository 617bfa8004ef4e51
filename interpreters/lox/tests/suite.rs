//! Lox programs checked the way the Crafting Interpreters suite checks them:
//! expectations in comments, against the `lox` binary's output, errors and
//! exit code, in each of the three modes (the JIT by default,
//! `JITGEN_THRESHOLD=0`, `JITGEN_OFF=1`).
//!
//! - `// expect: TEXT`: the next line of standard output.
//! - `// Error...` on line N: the compile error `[line N] Error...`;
//!   `// [line M] Error...` (or `[c line M]`) names its line. Exit code 65.
//! - `// expect runtime error: MESSAGE` on line N: standard error starts
//!   with MESSAGE and its stack trace's first `[line L]` has L = N. Exit 70.
//! - `// nontest`: not a test.
//!
//! `own_programs` runs `tests/programs`, written here. `crafting_suite`
//! runs the suite itself when `LOX_SUITE` names a checkout of
//! munificent/craftinginterpreters (every test but `scanning/`,
//! `expressions/` and `benchmark/`, as clox's own selection).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The modes every program runs in: extra environment variables.
const MODES: &[&[(&str, &str)]] = &[&[], &[("JITGEN_THRESHOLD", "0")], &[("JITGEN_OFF", "1")]];

#[derive(Default, Debug)]
struct Expectations {
    output: Vec<String>,
    compile_errors: Vec<String>,
    runtime_error: Option<(String, usize)>,
    exit_code: i32,
}

/// The text after `// expect: ` (the space optional) in `line`.
fn expected_output(line: &str) -> Option<&str> {
    let at = line.find("// expect:")?;
    let rest = &line[at + "// expect:".len()..];
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// `[N] Error...` for `// [line N] Error...` or `// [c line N] Error...`;
/// `None` for other interpreters' lines (`[java line N]`) and other text.
fn expected_error_at_line(line: &str) -> Option<Option<String>> {
    let at = line.find("// [")?;
    let rest = &line[at + 4..];
    let (lang, rest) = match rest.split_once("line ") {
        Some((lang, rest)) if lang.is_empty() || lang == "c " || lang == "java " => (lang, rest),
        _ => return None,
    };
    let (n, rest) = rest.split_once(']')?;
    let n: usize = n.parse().ok()?;
    let message = rest.strip_prefix(' ')?;
    if !message.starts_with("Error") {
        return None;
    }
    Some((lang != "java ").then(|| format!("[{n}] {message}")))
}

/// `[N] Error...` of a line of standard error that reports a compile error
/// (`[line N] Error...`, anything between the bracket and `line`).
fn reported_error(line: &str) -> Option<String> {
    let open = line.find('[')?;
    let mut search = &line[open..];
    let mut found = None;
    while let Some(at) = search.find("line ") {
        let rest = &search[at + 5..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            if let Some(message) = rest[digits..].strip_prefix("] ") {
                if message.starts_with("Error") && message.len() > "Error".len() {
                    found = Some(format!("[{}] {message}", &rest[..digits]));
                }
            }
        }
        search = &search[at + 5..];
    }
    found
}

/// The line of a stack trace's `[line N]`.
fn trace_line(line: &str) -> Option<usize> {
    let at = line.find("[line ")?;
    let rest = &line[at + 6..];
    let (n, _) = rest.split_once(']')?;
    n.parse().ok()
}

/// What a test file expects; `None` for a file that is not a test.
fn expectations(source: &str) -> Option<Expectations> {
    let mut e = Expectations::default();
    for (i, line) in source.lines().enumerate() {
        let n = i + 1;
        if line.contains("// nontest") {
            return None;
        }
        if let Some(out) = expected_output(line) {
            e.output.push(out.to_string());
        } else if let Some(at) = line.find("// Error") {
            e.compile_errors.push(format!("[{n}] {}", &line[at + 3..]));
            e.exit_code = 65;
        } else if let Some(error) = expected_error_at_line(line) {
            if let Some(error) = error {
                e.compile_errors.push(error);
                e.exit_code = 65;
            }
        } else if let Some(at) = line.find("// expect runtime error: ") {
            let message = &line[at + "// expect runtime error: ".len()..];
            if !message.is_empty() {
                e.runtime_error = Some((message.to_string(), n));
                e.exit_code = 70;
            }
        }
    }
    Some(e)
}

/// Runs `path` with the `lox` binary in `mode`: the differences from what
/// it expects, none if it passed.
fn check(path: &Path, mode: &[(&str, &str)]) -> Vec<String> {
    let source = std::fs::read_to_string(path).expect("a readable test file");
    let Some(want) = expectations(&source) else { return vec![] };
    let out = Command::new(env!("CARGO_BIN_EXE_lox")).arg(path).envs(mode.iter().copied()).output().expect("lox runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut out_lines: Vec<&str> = stdout.lines().collect();
    if out_lines.last() == Some(&"") {
        out_lines.pop();
    }
    let err_lines: Vec<&str> = stderr.lines().collect();
    let mut fails = vec![];
    match &want.runtime_error {
        Some((message, line)) => {
            if err_lines.first() != Some(&message.as_str()) {
                fails.push(format!("expected runtime error {message:?}, got {:?}", err_lines.first()));
            }
            match err_lines.iter().skip(1).find_map(|l| trace_line(l)) {
                Some(l) if l == *line => {}
                got => fails.push(format!("expected the runtime error on line {line}, got {got:?}")),
            }
        }
        None => {
            let mut found = vec![];
            for l in &err_lines {
                match reported_error(l) {
                    Some(e) if want.compile_errors.contains(&e) => found.push(e),
                    Some(_) => fails.push(format!("unexpected error: {l}")),
                    None if !l.is_empty() => fails.push(format!("unexpected output on stderr: {l}")),
                    None => {}
                }
            }
            for e in &want.compile_errors {
                if !found.contains(e) {
                    fails.push(format!("missing expected error: {e}"));
                }
            }
        }
    }
    let code = out.status.code().unwrap_or(-1);
    if code != want.exit_code {
        fails.push(format!("expected exit code {}, got {code}", want.exit_code));
    }
    for (i, expected) in want.output.iter().enumerate() {
        match out_lines.get(i) {
            Some(got) if got == expected => {}
            Some(got) => fails.push(format!("output line {}: expected {expected:?}, got {got:?}", i + 1)),
            None => fails.push(format!("missing output line {}: {expected:?}", i + 1)),
        }
    }
    for extra in out_lines.iter().skip(want.output.len()) {
        fails.push(format!("unexpected output: {extra:?}"));
    }
    fails
}

fn lox_files(dir: &Path, skip: &[&str], into: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("a readable directory").map(|e| e.expect("an entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !skip.iter().any(|s| p.file_name().is_some_and(|n| n == *s)) {
                lox_files(&p, skip, into);
            }
        } else if p.extension().is_some_and(|e| e == "lox") {
            into.push(p);
        }
    }
}

/// Checks `files` in every mode, on two threads; panics listing failures.
fn check_all(files: &[PathBuf]) -> usize {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = files.get(i) else { return };
                for mode in MODES {
                    let fails = check(path, mode);
                    if !fails.is_empty() {
                        failures.lock().unwrap().push(format!(
                            "{} {:?}:\n  {}",
                            path.display(),
                            mode,
                            fails.join("\n  ")
                        ));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        files.len() * MODES.len(),
        failures.join("\n")
    );
    files.len()
}

#[test]
fn own_programs() {
    let mut files = vec![];
    lox_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs"), &[], &mut files);
    assert!(files.len() > 10, "the programs are there");
    check_all(&files);
}

#[test]
fn crafting_suite() {
    let Some(root) = std::env::var_os("LOX_SUITE") else {
        eprintln!("LOX_SUITE is not set: the Crafting Interpreters suite is not run");
        return;
    };
    let mut files = vec![];
    lox_files(&Path::new(&root).join("test"), &["scanning", "expressions", "benchmark"], &mut files);
    let n = check_all(&files);
    eprintln!("{n} suite tests passed in {} modes", MODES.len());
}

#[test]
fn expectations_are_read_as_the_suite_writes_them() {
    let e = expectations(
        "print 1; // expect: 1\nvar a = ; // Error at ';': Expect expression.\n// [line 5] Error at end: x\n// [java line 5] Error: y\nfoo(); // expect runtime error: Undefined variable 'foo'.\n",
    )
    .expect("a test");
    assert_eq!(e.output, ["1"]);
    assert_eq!(e.compile_errors, ["[2] Error at ';': Expect expression.", "[5] Error at end: x"]);
    assert_eq!(e.runtime_error, Some(("Undefined variable 'foo'.".to_string(), 5)));
    assert_eq!(reported_error("[line 12] Error at 'x': y"), Some("[12] Error at 'x': y".to_string()));
    assert_eq!(reported_error("[line 12] in script"), None);
    assert_eq!(trace_line("[line 7] in f()"), Some(7));
    assert!(expectations("// nontest\nprint 1; // expect: 1").is_none());
}
