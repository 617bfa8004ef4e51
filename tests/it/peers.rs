//! The benchmark harness's peer programs (`bench/peers`), each installed peer
//! run once on a small input against the Rust version's result. A harness
//! that CI never runs rots: this is the part of it that runs outside Rust.
//! `.ci/run` installs the peers; `JITGEN_REQUIRE_PEERS=name,name` makes a
//! missing one a failure.

#[allow(dead_code)]
#[path = "../../examples/tlc_bench/peers.rs"]
mod peers;

use std::path::PathBuf;

use peers::{peers, BENCHES};

#[test]
fn every_installed_peer_gives_the_rust_result_on_a_small_input() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let build = std::env::temp_dir().join(format!("jitgen-peers-{}", std::process::id()));
    std::fs::create_dir_all(&build).unwrap();
    let found = peers(&root, &build);
    let names: Vec<&str> = found.iter().map(|p| p.name.as_str()).collect();
    if let Ok(required) = std::env::var("JITGEN_REQUIRE_PEERS") {
        for r in required.split(',').filter(|r| !r.is_empty()) {
            assert!(names.contains(&r), "peer {r} is required but not installed (found: {names:?})");
        }
    }
    let mut failures = vec![];
    for p in &found {
        for b in BENCHES {
            // Small sizes: f1(60) once, the loops 1000 turns (accumulator with
            // both of its classes), recursive fibonacci of 20.
            let sizes: &[(i64, u64)] = match b.name {
                "f1" => &[(60, 1)],
                "accum" => &[(1000, 1), (-1000, 1)],
                "fibr" => &[(20, 1)],
                _ => &[(1000, 1)],
            };
            for &size in sizes {
                if let Err(why) = p.run(b, size) {
                    failures.push(format!("{} on {} {:?}: {why}", p.name, b.name, size));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&build);
    assert!(failures.is_empty(), "peers failed:\n{}", failures.join("\n"));
}
