//! G2/E4 (HTTP fuzz against the binary, error bodies), G3/G4 (lints and
//! secret types), H1/H2 (entropy and format). G1 (fuzz targets) prints from
//! `crates/fuzzing/tests/fuzz_corpus.rs`, G5 (cargo deny/audit) from
//! `scripts/security`.

use base64::Engine as _;
use serde_json::json;
use strongroom_testkit::page::{Page, hidden_field};

use crate::support::{Fx, PASSWORD, report};

/// A small deterministic generator, so a failing request can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn body(rng: &mut Lcg, token: &str) -> (Option<&'static str>, Vec<u8>) {
    let ct = [Some("application/json"), Some("application/x-www-form-urlencoded"), Some("text/plain"), None][rng.below(4)];
    let b = match rng.below(9) {
        0 => {
            let n = rng.below(200);
            rng.bytes(n)
        }
        1 => format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
        2 => b"client_id=app&client_id=app&device_code=a&device_code=b&grant_type=x".to_vec(),
        3 => json!({"client_id": "app", "grant_type": crate::support::DEVICE_GRANT, "device_code": "x"}).to_string().into_bytes(),
        4 => json!({"client_id": "app", "refresh_token": token}).to_string().into_bytes(),
        5 => json!({"VaultID": rng.next() as i64 - (1 << 30), "Name": "\u{0}\u{ffff}", "StringValue": "v", "DateValue": "9999-99-99T00:00:00Z", "IntValue": "1e99"}).to_string().into_bytes(),
        6 => json!({"VaultID": "1", "Owner": "\\VED\\Policy\\..\\..\\x", "Namespace": "config", "VaultType": 1i64 << 40, "Base64Data": "!!!"}).to_string().into_bytes(),
        7 => vec![0xff, 0xfe, b'{', b'"', 0xc3, 0x28, b'"', b':', b'1', b'}'],
        _ => json!({"Name": "x".repeat(70_000), "StringValue": "y"}).to_string().into_bytes(),
    };
    (ct, b)
}

/// Text that must never appear in an answer.
const LEAKS: &[&str] =
    &["panicked", "SELECT ", "INSERT ", "UPDATE ", "sqlite", "postgres", ".rs:", "/root/", "/tmp/", "stack backtrace", "RUST_BACKTRACE"];

/// What one run of the HTTP fuzz saw.
#[derive(Debug, Default)]
struct FuzzRun {
    routes: usize,
    five_xx: usize,
    leaks: usize,
    oversize: usize,
    oversize_413: usize,
    closed_early: usize,
    transport: usize,
    panics: usize,
    alive: u16,
    statuses: std::collections::BTreeMap<u16, usize>,
}

const REQUESTS: usize = 2_000;
/// Every 200th request carries 2 MiB; at least this many of them must
/// come back answered (413), so the check cannot pass on connections
/// the server closed before the client read an answer.
const BIG: usize = REQUESTS / 200;
const BIG_ANSWERED_MIN: usize = BIG - 2;

/// [`REQUESTS`] random requests (a fixed seed: the same ones every run)
/// against a fresh server with a user and a grant.
async fn fuzz() -> FuzzRun {
    let fx = Fx::start(&[], &[]);
    let g = fx.grant("app").await;
    let token = g["access_token"].as_str().unwrap().to_owned();
    let rt = g["refresh_token"].as_str().unwrap().to_owned();
    let paths = strongroom_http::route_paths();
    // A new connection per request: the server closes a connection whose
    // oversized body it did not read, and a pooled one would then fail the
    // next request in the client.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).timeout(std::time::Duration::from_secs(30)).build().unwrap();
    /// Routes that read a body before anything else: the 2 MiB bodies go to
    /// these, as POST (a `/vedsdk` route answers a revoked token first, and
    /// the fuzz revokes it).
    const BODY_ROUTES: [&str; 3] = ["/vedauth/authorize/token", "/vedauth/authorize/device", "/vedauth/authorize/oauth"];
    let mut rng = Lcg(0x5eed_5eed);
    let (mut five_xx, mut leaks, mut oversize, mut oversize_413, mut closed_early, mut transport) = (0, 0, 0, 0, 0, 0);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut examples = Vec::new();
    for i in 0..REQUESTS {
        let big = i % 200 == 199;
        let (path, method) = if big {
            (BODY_ROUTES[(i / 200) % BODY_ROUTES.len()], "POST")
        } else {
            (paths[rng.below(paths.len())], ["GET", "POST", "POST", "PUT", "DELETE"][rng.below(5)])
        };
        let mut req = http.request(method.parse().unwrap(), format!("{}{path}", fx.base));
        if big || rng.below(2) == 0 {
            req = req.bearer_auth(&token);
        }
        let (ct, b) = if big { (Some("application/json"), vec![b' '; 2 << 20]) } else { body(&mut rng, &rt) };
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        let r = match req.body(b).send().await {
            Ok(r) => r,
            // The server may answer an oversized body early and close the
            // connection before the client has sent it all.
            Err(_) if big => {
                closed_early += 1;
                continue;
            }
            Err(e) => {
                transport += 1;
                examples.push(format!("{method} {path} -> transport error {e}"));
                continue;
            }
        };
        let st = r.status().as_u16();
        *statuses.entry(st).or_default() += 1;
        let text = r.text().await.unwrap_or_default();
        if big {
            oversize += 1;
            oversize_413 += usize::from(st == 413);
        }
        if st >= 500 {
            five_xx += 1;
            examples.push(format!("{method} {path} -> {st} {text}"));
        }
        if LEAKS.iter().any(|l| text.contains(l)) {
            leaks += 1;
            examples.push(format!("{method} {path} -> {st} leaks: {}", text.chars().take(200).collect::<String>()));
        }
    }
    let panics = fx.server.output.lock().unwrap().matches("panicked").count();
    let alive = fx.http.get(format!("{}/healthz", fx.base)).send().await.unwrap().status().as_u16();
    for e in examples.iter().take(10) {
        eprintln!("G2 example: {e}");
    }
    FuzzRun { routes: paths.len(), five_xx, leaks, oversize, oversize_413, closed_early, transport, panics, alive, statuses }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g2_http_fuzz_against_the_binary() {
    let FuzzRun { routes, five_xx, oversize, oversize_413, closed_early, transport, panics, alive, statuses, .. } = fuzz().await;
    let g2 = report(
        "G2",
        "HTTP fuzz against the binary",
        &format!(
            "{REQUESTS} random requests over {} routes (random method, content type, body: random bytes, invalid UTF-8, 5,000-deep JSON, repeated fields, 70 kB names, 2 MiB bodies): {five_xx} 5xx, {transport} transport errors, {panics} panics logged, server alive ({alive}); 2 MiB bodies: {BIG} sent, {oversize} answered ({oversize_413} of them 413, bar: all answered ones 413 and at least {BIG_ANSWERED_MIN} answered), {closed_early} closed before the body was sent; statuses {statuses:?}",
            routes
        ),
        five_xx == 0
            && transport == 0
            && panics == 0
            && alive == 200
            && oversize + closed_early == BIG
            && oversize >= BIG_ANSWERED_MIN
            && oversize_413 == oversize,
    );
    assert!(g2, "G2");
}

/// E4 searches the answers of the same fuzz (the same seed) as G2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e4_error_bodies() {
    let FuzzRun { leaks, .. } = fuzz().await;
    let e4 = report(
        "E4",
        "error bodies",
        &format!(
            "{REQUESTS} fuzz answers searched for {} leak markers (panic text, SQL, file paths, backtraces): {leaks} bodies leak",
            LEAKS.len()
        ),
        leaks == 0,
    );
    assert!(e4, "E4");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_user_code_format_and_normalisation() {
    // H2 (format): the page accepts a code typed in lower case, without the
    // dash, with spaces and punctuation.
    use strongroom_core::token::{USER_CODE_ALPHABET, mint_user_code, normalize_user_code};
    let fx = Fx::start(&[], &[]);
    let d = fx.device("app").await;
    let shown = d["user_code"].as_str().unwrap().to_owned();
    let plain = shown.replace('-', "");
    let variants = [
        shown.to_lowercase(),
        plain.clone(),
        format!(" {} {} ", &plain[..4], &plain[4..]),
        format!("{}.{}", &plain[..4].to_lowercase(), &plain[4..]),
        plain.chars().map(|c| format!("{c} ")).collect(),
    ];
    let mut accepted = 0;
    for v in &variants {
        let session = Page::open(&fx.http, &format!("{}/vedauth/device", fx.base)).await;
        let (_, page) = session.sign_in(v, "alice", PASSWORD).await;
        accepted += usize::from(hidden_field(&page, "ticket").is_some());
    }
    const CODES: usize = 100_000;
    let rng = strongroom_app::OsRandom;
    let mut counts = [[0u64; 20]; 8];
    let mut violations = 0;
    for _ in 0..CODES {
        let c = mint_user_code(&rng);
        let b = c.expose().as_bytes();
        if b.len() != 8 {
            violations += 1;
            continue;
        }
        for (pos, ch) in b.iter().enumerate() {
            match USER_CODE_ALPHABET.iter().position(|a| a == ch) {
                Some(k) => counts[pos][k] += 1,
                None => violations += 1,
            }
        }
        if normalize_user_code(&c.expose().to_lowercase()).as_deref() != Some(c.expose()) {
            violations += 1;
        }
    }
    let expected = CODES as f64 / 20.0;
    let chi: Vec<f64> = counts.iter().map(|row| row.iter().map(|&o| (o as f64 - expected).powi(2) / expected).sum()).collect();
    let worst = chi.iter().cloned().fold(0.0, f64::max);
    // chi-square, 19 degrees of freedom: p = 1e-6 at 64.5, so a uniform
    // generator fails one of eight positions about once in 10^5 runs.
    let h2 = report(
        "H2",
        "user-code format and normalisation",
        &format!(
            "{CODES} user codes: {violations} alphabet/length/normalisation violations; chi-square per position (19 df) max {worst:.1} (bar: p > 1e-6 for each of the 8 positions, below 64.5; p = 0.001 at 43.8); typed variants (lower case, no dash, spaces, punctuation) accepted by the page {accepted}/{}",
            variants.len()
        ),
        violations == 0 && worst < 64.5 && accepted == variants.len(),
    );
    assert!(h2, "H2");
}

#[test]
fn h1_token_entropy() {
    use std::collections::HashSet;
    use strongroom_core::token::{
        DEVICE_CODE_BYTES, Locator, TOKEN_BYTES, TOKEN_RANDOM_BYTES, TokenKey, TokenKind, mint_device_code, new_slot,
    };
    const N: usize = 200_000;
    let rng = strongroom_app::OsRandom;
    let key = TokenKey::new([9; 32]);
    let (mut tokens, mut random_parts, mut codes) = (HashSet::with_capacity(N), HashSet::with_capacity(N), HashSet::with_capacity(N));
    let (mut misshapen, mut unlocated) = (0, 0);
    // As one grant issues them, generation after generation (the locator
    // part is the same slot each time: only the random part tells them apart).
    let slot = new_slot(&rng);
    for generation in 0..N as u32 {
        let at = Locator { slot, generation: generation / 2 };
        let kind = if generation % 2 == 0 { TokenKind::Access } else { TokenKind::Refresh };
        let t = key.mint_at(&rng, kind, at);
        let raw = base64::engine::general_purpose::STANDARD.decode(t.expose()).unwrap_or_default();
        misshapen += usize::from(raw.len() != TOKEN_BYTES || !t.expose().ends_with("=="));
        unlocated += usize::from(key.locate(kind, t.expose()) != Some(at));
        random_parts.insert(raw.get(TOKEN_BYTES - TOKEN_RANDOM_BYTES..).map(<[u8]>::to_vec).unwrap_or_default());
        tokens.insert(t.expose().to_owned());
        let c = mint_device_code(&rng);
        codes.insert(c.expose().to_owned());
    }
    let h1 = report(
        "H1",
        "token entropy",
        &format!(
            "{N} access/refresh tokens of one grant and {N} device codes from the OS CSPRNG: {} + {} duplicates, {} duplicate random parts; \
             {TOKEN_RANDOM_BYTES} random bytes per token (beside its 18-byte tagged locator; {misshapen} not 34 bytes ending in ==, \
             {unlocated} not located), {DEVICE_CODE_BYTES} per device code",
            N - tokens.len(),
            N - codes.len(),
            N - random_parts.len()
        ),
        tokens.len() == N
            && codes.len() == N
            && random_parts.len() == N
            && misshapen == 0
            && unlocated == 0
            && TOKEN_RANDOM_BYTES >= 16
            && DEVICE_CODE_BYTES >= 32,
    );
    assert!(h1, "H1");
}

#[test]
fn g3_panic_freedom_and_unsafe_lints() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml")).unwrap();
    let lint = |name: &str, level: &str| manifest.lines().any(|l| l.replace(' ', "") == format!("{name}=\"{level}\""));
    let denied: Vec<&str> = ["unwrap_used", "expect_used", "panic", "todo", "dbg_macro"].into_iter().filter(|l| lint(l, "deny")).collect();
    let forbid_unsafe = lint("unsafe_code", "forbid");
    let indexing = lint("indexing_slicing", "deny");
    let g3 = report(
        "G3",
        "panic-freedom and unsafe lints",
        &format!(
            "workspace lints deny {denied:?}, unsafe_code forbidden: {forbid_unsafe}; clippy -D warnings in CI; indexing_slicing denied: {indexing} (not adopted: slices are bounds-checked and the HTTP fuzz (G2) and fuzz targets (G1) find panics)"
        ),
        denied.len() == 5 && forbid_unsafe,
    );
    assert!(g3, "G3");
}

#[test]
fn g4_secret_types() {
    assert!(secret_types(), "G4");
}

// Whether a type implements a trait, decided by the compiler and read at run
// time: an inherent constant, which exists only when the bound holds, takes
// precedence over the trait's default (the `impls` crate's technique).
struct EqProbe<T: ?Sized>(std::marker::PhantomData<T>);
trait LacksEq {
    const EQ: bool = false;
}
impl<T: ?Sized> LacksEq for EqProbe<T> {}
impl<T: ?Sized + PartialEq> EqProbe<T> {
    const EQ: bool = true;
}

struct DisplayProbe<T: ?Sized>(std::marker::PhantomData<T>);
trait LacksDisplay {
    const DISPLAY: bool = false;
}
impl<T: ?Sized> LacksDisplay for DisplayProbe<T> {}
impl<T: ?Sized + std::fmt::Display> DisplayProbe<T> {
    const DISPLAY: bool = true;
}

/// `(name, implements PartialEq, implements Display, Debug output)` of a
/// secret-holding type.
macro_rules! secret_type {
    ($t:ty, $value:expr) => {
        (stringify!($t), EqProbe::<$t>::EQ, DisplayProbe::<$t>::DISPLAY, format!("{:?}", $value))
    };
}

/// G4: the types that hold secrets have no `PartialEq` (compare keyed hashes,
/// in constant time) and no `Display`, and their `Debug` shows nothing; the
/// wire type's `==` is constant-time. The probes themselves are checked on a
/// type that has both traits, so a broken probe cannot pass.
fn secret_types() -> bool {
    const LEAK: &str = "leak-me-7f3a";
    let probes_work = EqProbe::<String>::EQ && DisplayProbe::<String>::DISPLAY && !EqProbe::<Lcg>::EQ && !DisplayProbe::<Lcg>::DISPLAY;
    let keys = strongroom_keyring::keys::Keys::from_master(&[7; 32]);
    let strict = [
        secret_type!(strongroom_core::secret::Secret, strongroom_core::secret::Secret::new(LEAK)),
        secret_type!(strongroom_core::token::TokenKey, strongroom_core::token::TokenKey::new([0x6c; 32])),
        secret_type!(strongroom_core::vault::crypto::Key, strongroom_core::vault::crypto::Key::new([0x6c; 32])),
        secret_type!(strongroom_keyring::keys::Keys, keys),
    ];
    let wire = secret_type!(strongroom_proto::SecretString, strongroom_proto::SecretString(LEAK.into()));
    // The wire type's equality is by content (constant-time: `subtle`).
    let wire_eq = strongroom_proto::SecretString(LEAK.into()) == strongroom_proto::SecretString(LEAK.into())
        && strongroom_proto::SecretString(LEAK.into()) != strongroom_proto::SecretString("leak-me-7f3b".into());
    // A byte pattern of a key ([0x6c; 32] is "llll…") must not show either.
    let leaks = |d: &str| d.contains(LEAK) || d.contains("llll") || d.contains("108, 108") || d.contains("6c6c");
    let bad: Vec<&str> = strict.iter().filter(|(_, eq, display, debug)| *eq || *display || leaks(debug)).map(|(n, ..)| *n).collect();
    let wire_bad = wire.2 || leaks(&wire.3) || !wire_eq;
    report(
        "G4",
        "secret types",
        &format!(
            "{} secret types checked by compile-time trait probes (probe self-check: {probes_work}): {} with PartialEq, Display or a leaking Debug {bad:?}; \
             proto::SecretString (wire) has no Display, Debug {:?}, == constant-time (subtle) and correct: {wire_eq}; \
             token, code, CSRF and ticket checks go through keyed hashes or subtle::ConstantTimeEq; no dudect timing test",
            strict.len() + 1,
            bad.len(),
            wire.3,
        ),
        probes_work && bad.is_empty() && !wire_bad,
    )
}
