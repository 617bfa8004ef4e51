//! What the timing examples share: their arguments and medians.

use std::time::Duration;

/// `[N] [--runs R]` from the command line: the size, and how many runs.
pub fn size_and_runs(default_n: i64) -> (i64, usize) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = args.iter().find_map(|s| s.parse().ok()).unwrap_or(default_n);
    let runs = args.iter().position(|a| a == "--runs").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(5);
    (n, runs)
}

/// The median of some timings.
pub fn median(mut ts: Vec<Duration>) -> Duration {
    ts.sort();
    ts[ts.len() / 2]
}
