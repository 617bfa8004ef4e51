//! Prints the colored flow graphs of a Rust file:
//! `cargo run -p hint-annotator --example annotate -- FILE [--dot FUNCTION]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: annotate FILE [--dot FUNCTION]");
        std::process::exit(2);
    };
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    match hint_annotator::annotate_source(&src) {
        Ok(g) => match (args.get(1).map(String::as_str), args.get(2)) {
            (Some("--dot"), Some(f)) => match g.function(f) {
                Some(f) => println!("{}", f.to_dot()),
                None => {
                    eprintln!("no function {f}");
                    std::process::exit(1);
                }
            },
            _ => println!("{}", g.to_text()),
        },
        Err(e) => {
            for e in e {
                let p = e.span().start();
                eprintln!("{path}:{}:{}: error: {e}", p.line, p.column + 1);
            }
            std::process::exit(1);
        }
    }
}
