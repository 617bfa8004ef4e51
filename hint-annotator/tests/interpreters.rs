//! The seeds' examples and the example interpreters, through the analysis.

use hint_annotator::{annotate_source, Color, ColoredGraphs};

fn annotate(src: &str) -> ColoredGraphs {
    annotate_source(src).unwrap_or_else(|e| panic!("annotation failed: {e}"))
}

const PLUS_MINUS: &str = include_str!("../../examples/plus_minus.rs");
const TLR: &str = include_str!("../../interpreters/tlr/src/lib.rs");

#[test]
fn ll_plus_minus_colors() {
    let g = annotate(PLUS_MINUS);
    let f = g.function("ll_plus_minus").unwrap();
    for green in ["s", "pc", "op"] {
        assert_eq!(f.color_of(green), Some(Color::Green), "{green}");
    }
    for red in ["x", "y", "acc"] {
        assert_eq!(f.color_of(red), Some(Color::Red), "{red}");
    }
    // The loop condition `pc < s.len()` is green: the loop unrolls at compile time.
    let lt = f.ops().into_iter().find(|(_, op, _)| op.source == "pc < s.len()").expect("loop condition");
    assert_eq!(lt.2, Color::Green);
    // Only the two accumulator updates are left for residual code.
    let red: Vec<String> =
        f.ops().into_iter().filter(|(_, _, c)| *c == Color::Red).map(|(_, op, _)| op.source.clone()).collect();
    assert_eq!(red, ["acc += y", "acc -= y"]);
    assert_eq!(f.position_key().unwrap(), ["s", "pc"]);
}

#[test]
fn tlr_colors() {
    let g = annotate(TLR);
    let f = g.function("interpret").unwrap();
    for green in ["bytecode", "pc", "opcode", "arg", "n"] {
        assert_eq!(f.color_of(green), Some(Color::Green), "{green}");
    }
    for red in ["a", "regs"] {
        assert_eq!(f.color_of(red), Some(Color::Red), "{red}");
    }
    assert_eq!(f.position_key().unwrap(), ["bytecode", "pc"]);
    // Every read of the bytecode and every opcode comparison is green: the
    // dispatch folds away; what is red touches a or the registers.
    for (_, op, color) in f.ops() {
        if op.source.contains("bytecode") || op.source.starts_with("opcode") {
            assert_eq!(color, Color::Green, "{}", op.source);
        }
    }
    let red: Vec<String> =
        f.ops().into_iter().filter(|(_, _, c)| *c == Color::Red).map(|(_, op, _)| op.source.clone()).collect();
    assert_eq!(
        red,
        [
            "Vec::new()",
            "Ok(a)",
            "a.wrapping_neg()",
            "a.wrapping_sub(1)",
            "regs.len()",
            "n >= regs.len()",
            "regs[n] = a",
            "regs.len()",
            "n >= regs.len()",
            "regs[n]",
            "a != 0",
            "regs.len()",
            "n >= regs.len()",
            "regs[n]",
            "a.wrapping_add(regs[n])",
            "vec![0; arg as usize]",
        ]
    );
}
