//! The user-facing contract of DESIGN.md section 1, as far as it exists:
//! `#[jit_interpreter]`, `hint!`, `jit::graphs()` and `jit::plain`.

#[allow(dead_code)]
#[path = "../examples/plus_minus.rs"]
mod example;

use example::plus_minus;
use jitgen::prelude::*;

#[test]
fn annotated_module_still_interprets() {
    for (prog, x, y, want) in [(&b"+-+"[..], 10, 3, 13), (b"", 5, 1, 5), (b"--x-", 0, 2, -6)] {
        assert_eq!(plus_minus::ll_plus_minus(prog, x, y), want);
        assert_eq!(plus_minus::jit::plain::ll_plus_minus(prog, x, y), want);
    }
}

#[test]
fn graphs_give_colors_text_and_dot() {
    let g = plus_minus::jit::graphs();
    let f = g.function("ll_plus_minus").unwrap();
    assert_eq!(f.color_of("acc"), Some(Color::Red));
    assert_eq!(f.color_of("op"), Some(Color::Green));
    assert_eq!(f.color_of("nonexistent"), None);
    let text = f.to_text();
    assert!(text.starts_with("fn ll_plus_minus -> i64\n"), "{text}");
    assert!(text.contains("R acc_"), "{text}");
    assert!(f.to_dot().starts_with("digraph {"));
}
