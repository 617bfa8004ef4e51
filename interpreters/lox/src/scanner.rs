//! The scanner: source text to tokens, on demand, one at a time.
//!
//! A token borrows its lexeme from the source. Errors are tokens too
//! ([`TokenKind::Error`]), whose lexeme is the message; the compiler
//! reports them where it meets them.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum TokenKind {
    LeftParen,
    RightParen,
    LeftBrace,
    RightBrace,
    Comma,
    Dot,
    Minus,
    Plus,
    Semicolon,
    Slash,
    Star,
    Bang,
    BangEqual,
    Equal,
    EqualEqual,
    Greater,
    GreaterEqual,
    Less,
    LessEqual,
    Identifier,
    String,
    Number,
    And,
    Class,
    Else,
    False,
    For,
    Fun,
    If,
    Nil,
    Or,
    Print,
    Return,
    Super,
    This,
    True,
    Var,
    While,
    Error,
    Eof,
}

/// A token: its kind, its text (the message for an error) and its line.
#[derive(Clone, Copy, Debug)]
pub struct Token<'src> {
    /// What it is.
    pub kind: TokenKind,
    /// Its text in the source; for [`TokenKind::Error`], the message.
    pub lexeme: &'src str,
    /// The line it starts on, from 1.
    pub line: u32,
}

impl<'src> Token<'src> {
    /// A token made by the compiler rather than read (`this`, `super`).
    pub fn synthetic(lexeme: &'src str) -> Token<'src> {
        Token { kind: TokenKind::Identifier, lexeme, line: 0 }
    }
}

/// Reads tokens from a source text.
pub struct Scanner<'src> {
    src: &'src str,
    start: usize,
    current: usize,
    line: u32,
}

impl<'src> Scanner<'src> {
    /// A scanner at the start of `src`.
    pub fn new(src: &'src str) -> Scanner<'src> {
        Scanner { src, start: 0, current: 0, line: 1 }
    }

    /// The next token; [`TokenKind::Eof`] for ever at the end.
    pub fn scan_token(&mut self) -> Token<'src> {
        self.skip_whitespace();
        self.start = self.current;
        let Some(c) = self.advance() else {
            return self.make(TokenKind::Eof);
        };
        if is_alpha(c) {
            return self.identifier();
        }
        if c.is_ascii_digit() {
            return self.number();
        }
        use TokenKind::*;
        match c {
            b'(' => self.make(LeftParen),
            b')' => self.make(RightParen),
            b'{' => self.make(LeftBrace),
            b'}' => self.make(RightBrace),
            b';' => self.make(Semicolon),
            b',' => self.make(Comma),
            b'.' => self.make(Dot),
            b'-' => self.make(Minus),
            b'+' => self.make(Plus),
            b'/' => self.make(Slash),
            b'*' => self.make(Star),
            b'!' => self.pair(b'=', BangEqual, Bang),
            b'=' => self.pair(b'=', EqualEqual, Equal),
            b'<' => self.pair(b'=', LessEqual, Less),
            b'>' => self.pair(b'=', GreaterEqual, Greater),
            b'"' => self.string(),
            _ => self.error("Unexpected character."),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.current).copied()
    }

    fn peek_next(&self) -> Option<u8> {
        self.src.as_bytes().get(self.current + 1).copied()
    }

    fn advance(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.current += 1;
        Some(c)
    }

    fn pair(&mut self, second: u8, both: TokenKind, one: TokenKind) -> Token<'src> {
        if self.peek() == Some(second) {
            self.current += 1;
            self.make(both)
        } else {
            self.make(one)
        }
    }

    fn make(&self, kind: TokenKind) -> Token<'src> {
        Token { kind, lexeme: &self.src[self.start..self.current], line: self.line }
    }

    fn error(&self, message: &'static str) -> Token<'src> {
        Token { kind: TokenKind::Error, lexeme: message, line: self.line }
    }

    fn skip_whitespace(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\r' | b'\t') => self.current += 1,
                Some(b'\n') => {
                    self.line += 1;
                    self.current += 1;
                }
                Some(b'/') if self.peek_next() == Some(b'/') => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.current += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn string(&mut self) -> Token<'src> {
        loop {
            match self.advance() {
                None => return self.error("Unterminated string."),
                Some(b'"') => return self.make(TokenKind::String),
                Some(b'\n') => self.line += 1,
                Some(_) => {}
            }
        }
    }

    fn number(&mut self) -> Token<'src> {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.current += 1;
        }
        if self.peek() == Some(b'.') && self.peek_next().is_some_and(|c| c.is_ascii_digit()) {
            self.current += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.current += 1;
            }
        }
        self.make(TokenKind::Number)
    }

    fn identifier(&mut self) -> Token<'src> {
        while self.peek().is_some_and(|c| is_alpha(c) || c.is_ascii_digit()) {
            self.current += 1;
        }
        use TokenKind::*;
        let kind = match &self.src[self.start..self.current] {
            "and" => And,
            "class" => Class,
            "else" => Else,
            "false" => False,
            "for" => For,
            "fun" => Fun,
            "if" => If,
            "nil" => Nil,
            "or" => Or,
            "print" => Print,
            "return" => Return,
            "super" => Super,
            "this" => This,
            "true" => True,
            "var" => Var,
            "while" => While,
            _ => Identifier,
        };
        self.make(kind)
    }
}

fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
