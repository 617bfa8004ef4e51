//! The TLC assembler of shared/languages/tlc.md: one instruction per line,
//! labels, class descriptors and names.

use crate::tlc::{self, Class, Method, Program};

/// An assembled program and its string table (attribute and method names).
#[derive(Clone, Debug, Default)]
pub struct Assembled {
    /// The bytecode and classes.
    pub program: Program,
    /// Names, indexed by the operands of GETATTR, SETATTR and SEND.
    pub strings: Vec<String>,
}

/// An assembler error: the line (from 1) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// The line.
    pub line: usize,
    /// What is wrong.
    pub detail: String,
}

impl std::fmt::Display for AsmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AssemblyError: line {}: {}", self.line, self.detail)
    }
}

/// Mnemonics, opcodes and operand counts.
pub const OPCODES: &[(&str, u8, usize)] = &[
    ("NOP", tlc::NOP, 0),
    ("PUSH", tlc::PUSH, 1),
    ("POP", tlc::POP, 0),
    ("SWAP", tlc::SWAP, 0),
    ("ROLL", tlc::ROLL, 1),
    ("PICK", tlc::PICK, 1),
    ("PUT", tlc::PUT, 1),
    ("ADD", tlc::ADD, 0),
    ("SUB", tlc::SUB, 0),
    ("MUL", tlc::MUL, 0),
    ("DIV", tlc::DIV, 0),
    ("EQ", tlc::EQ, 0),
    ("NE", tlc::NE, 0),
    ("LT", tlc::LT, 0),
    ("LE", tlc::LE, 0),
    ("GT", tlc::GT, 0),
    ("GE", tlc::GE, 0),
    ("BR_COND", tlc::BR_COND, 1),
    ("BR_COND_STK", tlc::BR_COND_STK, 0),
    ("CALL", tlc::CALL, 1),
    ("RETURN", tlc::RETURN, 0),
    ("PUSHARG", tlc::PUSHARG, 0),
    ("INVALID", tlc::INVALID, 0),
    ("NIL", tlc::NIL, 0),
    ("CONS", tlc::CONS, 0),
    ("CAR", tlc::CAR, 0),
    ("CDR", tlc::CDR, 0),
    ("NEW", tlc::NEW, 1),
    ("GETATTR", tlc::GETATTR, 1),
    ("SETATTR", tlc::SETATTR, 1),
    ("SEND", tlc::SEND, 2),
    ("PUSHARGN", tlc::PUSHARGN, 1),
    ("PRINT", tlc::PRINT, 0),
    ("DUMP", tlc::DUMP, 0),
    ("BR", tlc::BR, 1),
    ("CALLARGS", tlc::CALLARGS, 2),
    ("AND", tlc::AND, 0),
    ("MOD", tlc::MOD, 0),
];

/// A byte to fill in once labels are known: (position, label, line).
struct Fixup {
    pos: usize,
    label: String,
    line: usize,
}

/// A class descriptor waiting for its method labels.
struct ClassDesc {
    attrs: Vec<String>,
    methods: Vec<(String, String)>,
    line: usize,
}

/// Assembles `src`.
pub fn assemble(src: &str) -> Result<Assembled, AsmError> {
    let mut code: Vec<u8> = vec![];
    let mut labels: std::collections::HashMap<String, usize> = Default::default();
    let mut fixups: Vec<Fixup> = vec![];
    let mut strings: Vec<String> = vec![];
    let mut descs: Vec<ClassDesc> = vec![];
    let mut desc_ids: std::collections::HashMap<String, usize> = Default::default();
    let intern = |strings: &mut Vec<String>, s: &str| match strings.iter().position(|x| x == s) {
        Some(i) => i,
        None => {
            strings.push(s.to_string());
            strings.len() - 1
        }
    };
    for (n, raw) in src.lines().enumerate() {
        let line = n + 1;
        let err = |detail: String| AsmError { line, detail };
        let mut text = raw;
        for c in [";", "#", "//"] {
            if let Some(i) = text.find(c) {
                text = &text[..i];
            }
        }
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(label) = text.strip_suffix(':') {
            let label = label.trim();
            if label.is_empty() || label.contains(char::is_whitespace) {
                return Err(err(format!("bad label `{label}`")));
            }
            if labels.insert(label.to_string(), code.len()).is_some() {
                return Err(err(format!("label `{label}` defined twice")));
            }
            continue;
        }
        let mut words = text.split_whitespace();
        let mnemonic = words.next().expect("a non-empty line has a word").to_ascii_uppercase();
        let rest: Vec<&str> = words.collect();
        let Some(&(_, opcode, nargs)) = OPCODES.iter().find(|(m, _, _)| *m == mnemonic) else {
            return Err(err(format!("unknown instruction `{mnemonic}`")));
        };
        let args: Vec<String> = match mnemonic.as_str() {
            "SEND" | "CALLARGS" => {
                let [one] = rest[..] else { return Err(err(format!("{mnemonic} takes one argument, `target/N`"))) };
                let Some((a, b)) = one.split_once('/') else {
                    return Err(err(format!("{mnemonic} takes `target/N`")));
                };
                vec![a.to_string(), b.to_string()]
            }
            _ => {
                if rest.len() != nargs {
                    return Err(err(format!("{mnemonic} takes {nargs} argument(s), got {}", rest.len())));
                }
                rest.iter().map(|s| s.to_string()).collect()
            }
        };
        code.push(opcode);
        for (k, a) in args.iter().enumerate() {
            let value: Option<i64> = match (mnemonic.as_str(), k) {
                ("NEW", _) => {
                    let desc = parse_class(a).map_err(&err)?;
                    let key = a.replace(' ', "");
                    let id = match desc_ids.get(&key) {
                        Some(i) => *i,
                        None => {
                            descs.push(ClassDesc { line, ..desc });
                            desc_ids.insert(key, descs.len() - 1);
                            descs.len() - 1
                        }
                    };
                    Some(id as i64)
                }
                ("GETATTR" | "SETATTR", _) | ("SEND", 0) => Some(intern(&mut strings, a) as i64),
                _ => match a.parse::<i64>() {
                    Ok(v) => Some(v),
                    Err(_) if a.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') => None,
                    Err(_) => return Err(err(format!("bad argument `{a}`"))),
                },
            };
            let pos = code.len();
            match value {
                Some(v) if (-128..=127).contains(&v) => code.push(v as i8 as u8),
                Some(v) => return Err(err(format!("argument {v} does not fit in a signed byte"))),
                None => {
                    fixups.push(Fixup { pos, label: a.clone(), line });
                    code.push(0);
                }
            }
        }
    }
    for f in &fixups {
        let Some(&target) = labels.get(&f.label) else {
            return Err(AsmError { line: f.line, detail: format!("unknown label `{}`", f.label) });
        };
        let off = target as i64 - f.pos as i64 - 1;
        if !(-128..=127).contains(&off) {
            return Err(AsmError { line: f.line, detail: format!("label `{}` is too far ({off} bytes)", f.label) });
        }
        code[f.pos] = off as i8 as u8;
    }
    let mut classes = vec![];
    for d in descs {
        let attrs = d.attrs.iter().map(|a| intern(&mut strings, a) as u32).collect();
        let mut methods = vec![];
        for (name, label) in &d.methods {
            let Some(&pos) = labels.get(label) else {
                return Err(AsmError { line: d.line, detail: format!("unknown label `{label}`") });
            };
            methods.push(Method { name: intern(&mut strings, name) as u32, pos: pos as u32 });
        }
        classes.push(Class { attrs, methods });
    }
    if classes.len() > 128 || strings.len() > 128 {
        return Err(AsmError { line: 0, detail: "more than 128 classes or names".into() });
    }
    Ok(Assembled { program: Program { code, classes }, strings })
}

/// `x,y,meth=label`: attributes and methods (labels resolved later).
fn parse_class(desc: &str) -> Result<ClassDesc, String> {
    let mut attrs = vec![];
    let mut methods = vec![];
    for part in desc.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((m, l)) => methods.push((m.trim().to_string(), l.trim().to_string())),
            None => attrs.push(part.to_string()),
        }
    }
    Ok(ClassDesc { attrs, methods, line: 0 })
}
