//! The programs shipped with the example, by name.

/// (name, source) of every shipped program.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("factorial", include_str!("../programs/factorial.tlc")),
    ("fibonacci", include_str!("../programs/fibonacci.tlc")),
    ("f1", include_str!("../programs/f1.tlc")),
    ("accumulator", include_str!("../programs/accumulator.tlc")),
    ("fib_recursive", include_str!("../programs/fib_recursive.tlc")),
    ("lists", include_str!("../programs/lists.tlc")),
    ("recursion_then_loop", include_str!("../programs/recursion_then_loop.tlc")),
];

/// The source of a shipped program.
pub fn source(name: &str) -> Option<&'static str> {
    PROGRAMS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}
