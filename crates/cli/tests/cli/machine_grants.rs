//! Tokens for machines without a stored secret (issue 19): the JWT grant
//! against an issuer the test starts (Node.js with the `jose` library:
//! JWKS and OpenID discovery over HTTPS with a CA of the test's), and the
//! certificate grant with certificates the test makes (rcgen).
//!
//! Each refusal is checked for its documented error and for no grant
//! written (the grant count of `admin grants list --json`). The key-removal
//! bound and the refetch rate limit are measured against the issuer's own
//! count of JWKS fetches; the figures are printed (`scripts/security` J1-J9).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strongroom_testkit::jwt::Issuer;

use crate::process::{Api, Server};

pub const AUD: &str = "strongroom";
/// The server's key cache bound in these tests (the default is 300 s).
pub const CACHE_SECS: u64 = 3;
pub const FETCH_TIMEOUT_SECS: u64 = 2;

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// Claims that the `deploy` mapping accepts.
pub fn claims(iss: &str, jti: &str) -> Value {
    json!({
        "iss": iss, "aud": AUD, "sub": "repo:org/app:environment:prod", "repository": "org/app", "environment": "prod",
        "iat": now(), "exp": now() + 300, "jti": jti,
    })
}

/// A server trusting `issuer` (key cache 3 s, refetch at most once a second,
/// fetches bounded to 2 s), with integration `ci`, issuer `test` (discovery)
/// and mapping `deploy`.
pub fn server(issuer: &Issuer, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let ca = issuer.ca_file.to_str().unwrap().to_owned();
    let cache = CACHE_SECS.to_string();
    let timeout = FETCH_TIMEOUT_SECS.to_string();
    let mut all_env = vec![
        ("STRONGROOM_JWT_CA_FILE", ca.as_str()),
        ("STRONGROOM_JWT_KEY_CACHE_SECS", cache.as_str()),
        ("STRONGROOM_JWT_REFETCH_MIN_SECS", "1"),
        ("STRONGROOM_JWT_FETCH_TIMEOUT_SECS", timeout.as_str()),
    ];
    all_env.extend_from_slice(env);
    let mut args = vec!["--insecure-http"];
    args.extend_from_slice(extra);
    Server::start(&args, &all_env)
}

/// The fixtures of [`server`]: integration `ci`, issuer `test`, mapping `deploy`.
pub fn fixtures(s: &Server, issuer: &Issuer) {
    s.admin(&["integrations", "create", "ci", "--name", "CI", "--scope", "restricted:manage"], "");
    s.admin(
        &[
            "jwt-issuers",
            "set",
            "test",
            "--issuer",
            &issuer.base,
            "--discovery",
            "--audience",
            AUD,
            "--algorithms",
            "RS256,ES256,EdDSA",
            "--max-lifetime",
            "600",
            "--clock-skew",
            "5",
        ],
        "",
    );
    s.admin(
        &[
            "mappings",
            "set-jwt",
            "deploy",
            "--issuer",
            "test",
            "--claim",
            "repository=org/*",
            "--claim",
            "environment=prod",
            "--client",
            "ci",
            "--scope",
            "restricted",
        ],
        "",
    );
}

pub async fn present(api: &Api, jwt: &str) -> (u16, Value) {
    api.post_json("/vedauth/authorize/jwt", &json!({"client_id": "ci", "jwt": jwt, "scope": "restricted"})).await
}

pub fn grants(s: &Server) -> usize {
    let out = s.admin(&["--json", "grants", "list", "--all"], "");
    serde_json::from_str::<Value>(out.trim()).unwrap().as_array().unwrap().len()
}

/// Asserts a refusal: 400, `invalid_grant`-like `error`, the description.
#[track_caller]
fn refused(answer: &(u16, Value), error: &str, description: &str, what: &str) {
    assert_eq!(answer.0, 400, "{what}: {}", answer.1);
    assert_eq!(answer.1["error"], error, "{what}: {}", answer.1);
    assert!(answer.1["error_description"].as_str().unwrap().contains(description), "{what}: {}", answer.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_jwt_grant_accepts_rs256_es256_eddsa_and_refuses_each_attack() {
    let Some(issuer) = Issuer::start_or_skip("the JWT grant") else { return };
    let s = server(&issuer, &[], &[]);
    fixtures(&s, &issuer);
    let api = Api::new(s.http_base());
    let iss = issuer.base.as_str();

    // Accepted: one token per algorithm, identity from the mapping, no refresh token.
    for (n, alg) in ["RS256", "ES256", "EdDSA"].into_iter().enumerate() {
        let jwt = issuer.mint(alg, claims(iss, &format!("ok-{n}"))).await;
        let (status, body) = present(&api, &jwt).await;
        assert_eq!(status, 200, "{alg}: {body}");
        assert_eq!(body["identity"], "jwt+deploy:repo:org/app:environment:prod", "{alg}");
        assert_eq!(body["refresh_token"], Value::Null, "{alg}: no refresh token");
        assert_eq!(body["token_type"], "Bearer");
        assert!(body["expires_in"].as_i64().unwrap() > 0);
        assert_eq!(api.verify(body["access_token"].as_str().unwrap()).await, 200, "{alg}: Verify takes the token");
    }
    assert_eq!(grants(&s), 3);

    // Refused, each with its documented error, nothing written.
    let c = claims(iss, "x");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = c.clone();
        f(&mut v);
        v
    };
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("alg none", issuer.mint("none", with(&|_| {})).await, "invalid_grant", "never none or HMAC"),
        ("HS256 keyed with the public key", issuer.mint("HS256-public", with(&|_| {})).await, "invalid_grant", "never none or HMAC"),
        ("PS256, not among the issuer's algorithms", issuer.mint("PS256", with(&|_| {})).await, "invalid_grant", "not one its issuer is allowed"),
        ("wrong iss", issuer.mint("RS256", with(&|v| v["iss"] = json!("https://evil.test"))).await, "invalid_grant", "not a trusted issuer"),
        ("wrong aud", issuer.mint("RS256", with(&|v| v["aud"] = json!("other"))).await, "invalid_grant", "audience"),
        ("expired", issuer.mint("RS256", with(&|v| { v["exp"] = json!(now() - 60); v["iat"] = json!(now() - 120) })).await, "invalid_grant", "has expired"),
        ("nbf in the future", issuer.mint("RS256", with(&|v| v["nbf"] = json!(now() + 120))).await, "invalid_grant", "not valid yet"),
        ("no exp", issuer.mint("RS256", with(&|v| { v.as_object_mut().unwrap().remove("exp"); })).await, "invalid_grant", "no exp claim"),
        ("lifetime over the maximum", issuer.mint("RS256", with(&|v| v["exp"] = json!(now() + 3600))).await, "invalid_grant", "lifetime exceeds"),
        ("claims not matching the mapping", issuer.mint("RS256", with(&|v| v["environment"] = json!("dev"))).await, "invalid_grant", "No mapping matches"),
        ("repository outside the glob", issuer.mint("RS256", with(&|v| v["repository"] = json!("other/app"))).await, "invalid_grant", "No mapping matches"),
        ("a tampered payload", {
            let t = issuer.mint("ES256", with(&|_| {})).await;
            let parts: Vec<&str> = t.split('.').collect();
            let forged = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, serde_json::to_vec(&with(&|v| v["repository"] = json!("org/other"))).unwrap());
            format!("{}.{forged}.{}", parts[0], parts[2])
        }, "invalid_grant", "signature is invalid"),
        ("a 1 MB JWT", "a".repeat(1_000_000), "invalid_grant", "larger than 16 KiB"),
        ("garbage", "not.a.jwt".to_owned(), "invalid_grant", "malformed"),
    ];
    for (what, jwt, error, description) in &cases {
        let started = Instant::now();
        let answer = present(&api, jwt).await;
        refused(&answer, error, description, what);
        println!("J: {what}: {} {} in {:?}", answer.0, answer.1["error"], started.elapsed());
    }
    assert_eq!(grants(&s), 3, "no refusal wrote a grant");

    // Scope beyond the mapping's.
    let jwt = issuer.mint("RS256", claims(iss, "scope")).await;
    let answer = api.post_json("/vedauth/authorize/jwt", &json!({"client_id": "ci", "jwt": jwt, "scope": "restricted:manage"})).await;
    refused(&answer, "invalid_scope", "scope of the mapping", "scope over the mapping's");

    // A replayed jti: the second presentation is refused.
    let jwt = issuer.mint("EdDSA", claims(iss, "once")).await;
    assert_eq!(present(&api, &jwt).await.0, 200);
    refused(&present(&api, &jwt).await, "invalid_grant", "presented before", "replay");
    // Sixteen presentations of one JWT at once: exactly one grant.
    let jwt = issuer.mint("RS256", claims(iss, "race")).await;
    let answers = futures_join(16, || present(&api, &jwt)).await;
    let won = answers.iter().filter(|(s, _)| *s == 200).count();
    println!("J7: 16 simultaneous presentations of one JWT on SQLite: {won} accepted");
    assert_eq!(won, 1, "{answers:?}");
    assert_eq!(grants(&s), 5);
    let out = s.admin(&["--json", "events", "list", "--kind", "token.jwt_replayed"], "");
    assert!(out.contains("token.jwt_replayed"), "{out}");
    assert!(!out.contains(&jwt), "events never hold the JWT");
    assert!(!s.output.lock().unwrap().contains(&jwt), "the log never holds the JWT");
}

/// Runs `n` copies of `f` at once.
pub async fn futures_join<F, Fut, T>(n: usize, f: F) -> Vec<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut set = Vec::new();
    for _ in 0..n {
        set.push(f());
    }
    let mut out = Vec::new();
    for r in join_all(set).await {
        out.push(r);
    }
    out
}

async fn join_all<Fut: std::future::Future>(futs: Vec<Fut>) -> Vec<Fut::Output> {
    let mut pinned: Vec<std::pin::Pin<Box<Fut>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<Fut::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_rotate_unknown_kids_refetch_once_removed_keys_stop_within_the_cache_bound_and_a_hanging_source_is_bounded() {
    let Some(issuer) = Issuer::start_or_skip("JWT keys") else { return };
    let s = server(&issuer, &[], &[]);
    fixtures(&s, &issuer);
    // A second issuer whose keys never come: its JWKS URL hangs.
    s.admin(
        &["jwt-issuers", "set", "hangs", "--issuer", "https://hangs.test", "--jwks-url", &format!("{}/hang", issuer.base), "--audience", AUD],
        "",
    );
    s.admin(&["mappings", "set-jwt", "hanging", "--issuer", "hangs", "--client", "ci", "--scope", "restricted"], "");
    let api = Api::new(s.http_base());
    let iss = issuer.base.as_str();
    let mut jti = 0;
    let mut next = || {
        jti += 1;
        format!("k-{jti}")
    };

    // The first token fetches the keys.
    assert_eq!(present(&api, &issuer.mint("RS256", claims(iss, &next())).await).await.0, 200);
    let fetched = issuer.fetches().await;

    // An unknown kid (a key the issuer holds but does not publish): one refetch, then refused; at once
    // again: no refetch (rate limit).
    let hidden = issuer.rotate("ES256").await;
    issuer.publish(&hidden, false).await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // past refetch_min_secs = 1
    let before = issuer.fetches().await;
    let answer = present(&api, &issuer.mint_with(json!({"alg": "ES256", "kid": hidden, "claims": claims(iss, &next())})).await).await;
    refused(&answer, "invalid_grant", "No key of the issuer", "unknown kid");
    let after_one = issuer.fetches().await;
    let answer = present(&api, &issuer.mint_with(json!({"alg": "ES256", "kid": hidden, "claims": claims(iss, &next())})).await).await;
    refused(&answer, "invalid_grant", "No key of the issuer", "unknown kid again");
    let after_two = issuer.fetches().await;
    println!("J6: unknown kid: {} fetch(es) for the first, {} for the second at once", after_one - before, after_two - after_one);
    assert_eq!(after_one - before, 1, "one refetch for an unknown kid");
    assert_eq!(after_two, after_one, "no second refetch within refetch_min_secs");
    assert!(fetched >= 1);

    // Rotation without a restart: a new published key works at its first token.
    let rotated = issuer.rotate("EdDSA").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer = present(&api, &issuer.mint_with(json!({"alg": "EdDSA", "kid": rotated, "claims": claims(iss, &next())})).await).await;
    assert_eq!(answer.0, 200, "rotation picked up: {}", answer.1);

    // A key removed from the JWKS: refused once the cache bound has passed.
    let kid = issuer.kid("RS256").await;
    assert_eq!(present(&api, &issuer.mint("RS256", claims(iss, &next())).await).await.0, 200);
    issuer.publish(&kid, false).await;
    let removed = Instant::now();
    let bound = loop {
        let answer = present(&api, &issuer.mint("RS256", claims(iss, &next())).await).await;
        if answer.0 != 200 {
            refused(&answer, "invalid_grant", "No key of the issuer", "removed key");
            break removed.elapsed();
        }
        assert!(removed.elapsed() < Duration::from_secs(CACHE_SECS + 3), "the removed key still works after the bound");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("J5: a key removed from the JWKS was refused {bound:?} after its removal (key_cache_secs = {CACHE_SECS})");
    assert!(bound <= Duration::from_secs(CACHE_SECS) + Duration::from_millis(1500), "{bound:?}");

    // A key source that hangs: invalid_grant within the fetch bound, never a hung request.
    let started = Instant::now();
    let answer = present(&api, &issuer.mint("RS256", json!({"iss": "https://hangs.test", "aud": AUD, "sub": "x", "exp": now() + 60})).await).await;
    let took = started.elapsed();
    refused(&answer, "invalid_grant", "could not be fetched", "hanging key source");
    println!("J9: a key source that hangs: answered {} {} in {took:?} (fetch_timeout_secs = {FETCH_TIMEOUT_SECS})", answer.0, answer.1["error"]);
    assert!(took < Duration::from_secs(FETCH_TIMEOUT_SECS) + Duration::from_secs(2), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replayed_jwt_is_refused_by_a_second_replica_on_postgresql() {
    let Some(root) = strongroom_testkit::pg_url_or_skip("JWT replay across replicas") else { return };
    let Some(issuer) = Issuer::start_or_skip("JWT replay across replicas") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    let key = "5".repeat(64);
    let env = [("STRONGROOM_MASTER_KEY", key.as_str()), ("STRONGROOM_DATABASE_URL", url.as_str())];
    let a = server(&issuer, &[], &env);
    let b = server(&issuer, &[], &env);
    fixtures(&a, &issuer);
    let (api_a, api_b) = (Api::new(a.http_base()), Api::new(b.http_base()));
    let iss = issuer.base.as_str();
    // One after the other: A accepts, B refuses.
    let jwt = issuer.mint("ES256", claims(iss, "replica-1")).await;
    assert_eq!(present(&api_a, &jwt).await.0, 200);
    refused(&present(&api_b, &jwt).await, "invalid_grant", "presented before", "replay on the second replica");
    // At once, spread over both: exactly one of 32 wins, trial after trial.
    let mut wins = Vec::new();
    for trial in 0..10 {
        let jwt = issuer.mint("RS256", claims(iss, &format!("race-{trial}"))).await;
        let turn = std::cell::Cell::new(0usize);
        let answers = futures_join(32, || {
            turn.set(turn.get() + 1);
            present(if turn.get() % 2 == 0 { &api_a } else { &api_b }, &jwt)
        })
        .await;
        wins.push(answers.iter().filter(|(s, _)| *s == 200).count());
    }
    println!("J7: 32 presentations of one JWT on two PostgreSQL replicas, 10 trials: accepted {wins:?}");
    assert!(wins.iter().all(|w| *w == 1), "{wins:?}");
}
