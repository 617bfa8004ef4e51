//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// The blocks of a listing that jump to themselves (loop bodies).
pub fn self_loops(listing: &str) -> Vec<String> {
    let mut blocks = vec![];
    let mut cur: Option<(String, String)> = None;
    for line in listing.lines() {
        if !line.starts_with(' ') {
            blocks.extend(cur.take());
            cur = Some((line.split('(').next().unwrap_or("").to_string(), String::new()));
        } else if let Some((_, body)) = &mut cur {
            body.push_str(line);
            body.push('\n');
        }
    }
    blocks.extend(cur);
    blocks.into_iter().filter(|(l, body)| body.contains(&format!("{l}("))).map(|(_, b)| b).collect()
}

/// A small deterministic generator of random programs (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// How many random programs of each kind to run: `JITGEN_RANDOM_PROGRAMS`,
/// else `default`.
pub fn how_many(default: usize) -> usize {
    std::env::var("JITGEN_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}
