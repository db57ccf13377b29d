//! The stable half of the fuzzing (G1): nightly's cargo-fuzz runs the
//! targets in `fuzz/` for a bounded time when it is installed; this test runs
//! on every `cargo test` and feeds the same entry points
//! (`strongroom_fuzzing`) the committed corpus in
//! `fuzz/corpus/<target>/`, every crash input in `fuzz/artifacts/<target>/`
//! if any were kept, and a bounded proptest of random and mutated inputs.
//! A panic is a finding. Prints one `SECURITY G1` line with the counts.
//!
//! The random half is a function of its seed, printed at the start (a fresh
//! one each run; target number `i` runs from the seed plus `i`):
//! `STRONGROOM_FUZZ_SEED=<seed>` replays a run, and a failure prints that
//! command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use strongroom_fuzzing as fuzzing;

type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 6] = [
    ("sdk_body", fuzzing::sdk_body),
    ("form_or_json", fuzzing::form_or_json),
    ("date", fuzzing::date),
    ("token", fuzzing::token),
    ("jwt", fuzzing::jwt),
    ("csr", fuzzing::csr),
];

/// Random inputs per target in the proptest half.
const CASES: u32 = 4_000;

static EXECS: AtomicUsize = AtomicUsize::new(0);

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: PathBuf) -> Vec<Vec<u8>> {
    let Ok(rd) = std::fs::read_dir(&dir) else { return Vec::new() };
    rd.filter_map(Result::ok).filter(|e| e.path().is_file()).map(|e| std::fs::read(e.path()).unwrap()).collect()
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let mut v = files(fuzz_dir().join("corpus").join(target));
    v.extend(files(fuzz_dir().join("artifacts").join(target)));
    v
}

/// One input: the corpus entry, or random bytes, or a corpus entry with a
/// few bytes changed, inserted or cut.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len().max(1);
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (0..n, proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8)).prop_map(move |(i, edits)| {
            let mut s = seeds.get(i).cloned().unwrap_or_default();
            for (at, byte, op) in edits {
                let at = if s.is_empty() { 0 } else { at % (s.len() + 1) };
                match op {
                    0 if at < s.len() => s[at] = byte,
                    1 => s.insert(at, byte),
                    _ if at < s.len() => {
                        s.remove(at);
                    }
                    _ => s.push(byte),
                }
            }
            s
        }),
    ]
}

#[test]
fn g1_fuzz_targets_survive_the_corpus_and_random_inputs() {
    let seed = strongroom_testkit::seed("STRONGROOM_FUZZ_SEED");
    let replay = format!("STRONGROOM_FUZZ_SEED={seed} cargo test --workspace --test fuzz_corpus -- --nocapture");
    eprintln!("G1: seed {seed}; to replay this run: {replay}");
    let mut seeds_total = 0;
    for (i, (name, target)) in (0u64..).zip(TARGETS) {
        let seeds = corpus(name);
        assert!(!seeds.is_empty(), "fuzz/corpus/{name} is empty");
        seeds_total += seeds.len();
        for s in &seeds {
            target(s);
            EXECS.fetch_add(1, Ordering::Relaxed);
        }
        let config = ProptestConfig {
            cases: CASES,
            rng_seed: RngSeed::Fixed(seed.wrapping_add(i)),
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest::test_runner::TestRunner::new(config)
            .run(&input(seeds), |bytes| {
                target(&bytes);
                EXECS.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("fuzz target {name}: {e} (seed {seed}; replay: {replay})"));
    }
    eprintln!(
        "SECURITY G1 fuzz targets (stable runner): {} targets ({}), {seeds_total} corpus files + {CASES} random/mutated cases each (seed {seed}), {} executions, 0 panics — pass",
        TARGETS.len(),
        TARGETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        EXECS.load(Ordering::Relaxed)
    );
}
