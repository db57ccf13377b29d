//! Tokens for machines without a stored secret: the JWT grant
//! against an issuer the test starts (Node.js with the `jose` library:
//! JWKS and OpenID discovery over HTTPS with a CA of the test's), and the
//! certificate grant with certificates the test makes (rcgen).
//!
//! Each refusal is checked for its documented error and for no grant
//! written (the grant count of `admin grants list --json`). The key-removal
//! bound and the refetch rate limit are measured against the issuer's own
//! count of JWKS fetches. The tests are the security suite's J1-J9
//! (`suite::`, whose figures `scripts/test` prints).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strongroom_testkit::jwt::Issuer;

use crate::process::{Api, Server};

pub const AUD: &str = "strongroom";
/// The server's key cache bound in these tests (the default is 300 s).
pub const CACHE_SECS: u64 = 3;
pub const FETCH_TIMEOUT_SECS: u64 = 2;

/// Seconds since the epoch, as the issuer (a real process) sees them.
#[allow(clippy::disallowed_methods)]
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
            "restricted:manage",
        ],
        "",
    );
}

/// The folder the `deploy` mapping's identity may write to, granted before its first token.
pub const FOLDER: &str = "\\VED\\Policy\\CI";
pub const IDENTITY: &str = "jwt+deploy:repo:org/app:environment:prod";

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

pub async fn the_jwt_grant_accepts_rs256_es256_eddsa_and_refuses_each_attack() {
    let Some(issuer) = Issuer::start_or_skip("the JWT grant") else { return };
    let s = server(&issuer, &[], &[]);
    fixtures(&s, &issuer);
    let api = Api::new(s.http_base());
    let iss = issuer.base.as_str();
    // The listings, for scripts.
    let issuers: Value = serde_json::from_str(s.admin(&["jwt-issuers", "list", "--json"], "").trim()).unwrap();
    assert_eq!(issuers[0]["name"], "test");
    assert_eq!(issuers[0]["keys"]["kind"], "discovery");
    assert_eq!(issuers[0]["algorithms"], json!(["RS256", "ES256", "EdDSA"]));
    let mappings: Value = serde_json::from_str(s.admin(&["mappings", "list", "--json"], "").trim()).unwrap();
    assert_eq!(mappings[0]["name"], "deploy");
    assert_eq!(mappings[0]["conditions"], json!(["repository=org/*", "environment=prod"]));
    assert_eq!(mappings[0]["identity"], "jwt+deploy:<sub>");
    assert!(s.admin(&["mappings", "list"], "").contains("jwt+deploy:<sub>"));
    // Rights on a folder for the machine identity, before its first token, as for a user.
    s.admin(&["folders", "create", FOLDER], "");
    s.admin(&["rights", "grant", FOLDER, IDENTITY, "--rights", "read,write"], "");

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
    // The machine writes to the vault with the rights it was given.
    let jwt = issuer.mint("ES256", claims(iss, "vault")).await;
    let answer = api.post_json("/vedauth/authorize/jwt", &json!({"client_id": "ci", "jwt": jwt, "scope": "restricted:manage"})).await;
    assert_eq!(answer.0, 200, "{}", answer.1);
    let added = api.add(answer.1["access_token"].as_str().unwrap(), FOLDER, "Software:Default", b"machine secret").await.unwrap();
    assert_eq!(added.result, 0, "the machine identity holds Write on the folder");
    let denied = api.add(answer.1["access_token"].as_str().unwrap(), "\\VED\\Policy", "Software:Default", b"x").await;
    assert!(denied.is_err() || denied.as_ref().is_ok_and(|a| a.result != 0), "no rights above its folder: {denied:?}");
    assert_eq!(grants(&s), 4);

    // Refused, each with its documented error, nothing written.
    let c = claims(iss, "x");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = c.clone();
        f(&mut v);
        v
    };
    // (id, attack, JWT, error, description)
    let cases: Vec<(&str, &str, String, &str, &str)> = vec![
        ("J1", "alg none", issuer.mint("none", with(&|_| {})).await, "invalid_grant", "never none or HMAC"),
        ("J1", "HS256 keyed with the public key", issuer.mint("HS256-public", with(&|_| {})).await, "invalid_grant", "never none or HMAC"),
        (
            "J1",
            "PS256, not among the issuer's algorithms",
            issuer.mint("PS256", with(&|_| {})).await,
            "invalid_grant",
            "not one its issuer is allowed",
        ),
        (
            "J2",
            "wrong iss",
            issuer.mint("RS256", with(&|v| v["iss"] = json!("https://evil.test"))).await,
            "invalid_grant",
            "not a trusted issuer",
        ),
        (
            "J2",
            "no iss",
            issuer
                .mint(
                    "RS256",
                    with(&|v| {
                        v.as_object_mut().map(|o| o.remove("iss"));
                    }),
                )
                .await,
            "invalid_grant",
            "not a trusted issuer",
        ),
        ("J2", "wrong aud", issuer.mint("RS256", with(&|v| v["aud"] = json!("other"))).await, "invalid_grant", "audience"),
        (
            "J2",
            "expired",
            issuer
                .mint(
                    "RS256",
                    with(&|v| {
                        v["exp"] = json!(now() - 60);
                        v["iat"] = json!(now() - 120)
                    }),
                )
                .await,
            "invalid_grant",
            "has expired",
        ),
        ("J2", "nbf in the future", issuer.mint("RS256", with(&|v| v["nbf"] = json!(now() + 120))).await, "invalid_grant", "not valid yet"),
        (
            "J2",
            "no exp",
            issuer
                .mint(
                    "RS256",
                    with(&|v| {
                        v.as_object_mut().unwrap().remove("exp");
                    }),
                )
                .await,
            "invalid_grant",
            "no exp claim",
        ),
        (
            "J2",
            "lifetime over the maximum",
            issuer.mint("RS256", with(&|v| v["exp"] = json!(now() + 3600))).await,
            "invalid_grant",
            "lifetime exceeds",
        ),
        (
            "J3",
            "claims not matching the mapping",
            issuer.mint("RS256", with(&|v| v["environment"] = json!("dev"))).await,
            "invalid_grant",
            "No mapping matches",
        ),
        (
            "J3",
            "repository outside the glob",
            issuer.mint("RS256", with(&|v| v["repository"] = json!("other/app"))).await,
            "invalid_grant",
            "No mapping matches",
        ),
        (
            "J3",
            "a tampered payload",
            {
                let t = issuer.mint("ES256", with(&|_| {})).await;
                let parts: Vec<&str> = t.split('.').collect();
                let forged = base64::Engine::encode(
                    &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                    serde_json::to_vec(&with(&|v| v["repository"] = json!("org/other"))).unwrap(),
                );
                format!("{}.{forged}.{}", parts[0], parts[2])
            },
            "invalid_grant",
            "signature is invalid",
        ),
        ("J4", "a 1 MB JWT", "a".repeat(1_000_000), "invalid_grant", "larger than 16 KiB"),
        ("J4", "garbage", "not.a.jwt".to_owned(), "invalid_grant", "malformed"),
    ];
    let mut outcomes: Vec<(&str, String, bool)> = Vec::new();
    for (id, what, jwt, error, description) in &cases {
        let started = Instant::now();
        let answer = present(&api, jwt).await;
        let ok = answer.0 == 400
            && answer.1["error"] == *error
            && answer.1["error_description"].as_str().is_some_and(|d| d.contains(description));
        outcomes.push((id, format!("{what}: {} {} in {:?}", answer.0, answer.1["error"], started.elapsed()), ok));
    }
    let written = grants(&s);
    for (id, name) in [
        ("J1", "alg none, HS256 keyed with the issuer's public key (algorithm confusion), an algorithm the issuer does not allow"),
        ("J2", "wrong iss, wrong aud, expired, nbf in the future, no exp, lifetime over the issuer's maximum"),
        ("J3", "claims that match no mapping, a payload changed after signing"),
        ("J4", "a 1 MB JWT and one that is no JWS: refused before any parsing work"),
    ] {
        let mine: Vec<&(&str, String, bool)> = outcomes.iter().filter(|(i, _, _)| *i == id).collect();
        let pass = mine.iter().all(|(_, _, ok)| *ok) && written == 4;
        let figures = mine.iter().map(|(_, f, _)| f.as_str()).collect::<Vec<_>>().join("; ");
        eprintln!("SECURITY {id} {name}: {figures}; grants written by refusals: {} — {}", written - 4, if pass { "pass" } else { "FAIL" });
    }
    for (id, what, jwt, error, description) in &cases {
        let _ = (id, jwt);
        assert!(outcomes.iter().any(|(_, f, ok)| *ok && f.starts_with(what)), "{what}: expected {error} {description}: {outcomes:?}");
    }
    assert_eq!(written, 4, "no refusal wrote a grant");

    // Scope beyond the mapping's.
    let jwt = issuer.mint("RS256", claims(iss, "scope")).await;
    let answer = api.post_json("/vedauth/authorize/jwt", &json!({"client_id": "ci", "jwt": jwt, "scope": "admin"})).await;
    refused(&answer, "invalid_scope", "scope of the mapping", "scope over the mapping's");

    // A replayed jti: the second presentation is refused.
    let jwt = issuer.mint("EdDSA", claims(iss, "once")).await;
    assert_eq!(present(&api, &jwt).await.0, 200);
    refused(&present(&api, &jwt).await, "invalid_grant", "presented before", "replay");
    // Sixteen presentations of one JWT at once: exactly one grant.
    let jwt = issuer.mint("RS256", claims(iss, "race")).await;
    let answers = futures_join(16, || present(&api, &jwt)).await;
    let won = answers.iter().filter(|(s, _)| *s == 200).count();
    let replayed = present(&api, &jwt).await;
    let pass = won == 1 && replayed.0 == 400;
    eprintln!(
        "SECURITY J7 a replayed JWT (its jti) on SQLite: 16 simultaneous presentations of one JWT: {won} accepted; presented again \
         afterwards: {} {} — {}",
        replayed.0,
        replayed.1["error"],
        if pass { "pass" } else { "FAIL" }
    );
    assert_eq!(won, 1, "{answers:?}");
    assert_eq!(grants(&s), 6);
    // Counted per grant type.
    let metrics = reqwest::get(format!("{}/metrics", s.http_base())).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("strongroom_grants_issued_total{grant_type=\"jwt\"} 6"), "{metrics}");
    assert!(metrics.contains("strongroom_grants_refused_total{grant_type=\"jwt\"}"), "{metrics}");
    let out = s.admin(&["--json", "events", "list", "--kind", "token.jwt_replayed"], "");
    assert!(out.contains("token.jwt_replayed"), "{out}");
    assert!(!out.contains(&jwt), "events never hold the JWT");
    let issued = s.admin(&["--json", "events", "list", "--kind", "token.issued"], "");
    assert!(issued.contains("jwt grant: issuer=test mapping=deploy") && issued.contains(IDENTITY), "{issued}");
    assert!(!s.output.lock().unwrap().contains(&jwt), "the log never holds the JWT");

    // PS256, once the issuer allows it (the change is read on the next request).
    s.admin(
        &[
            "jwt-issuers",
            "set",
            "test",
            "--issuer",
            iss,
            "--discovery",
            "--audience",
            AUD,
            "--algorithms",
            "PS256,RS256",
            "--max-lifetime",
            "600",
        ],
        "",
    );
    let (status, body) = present(&api, &issuer.mint("PS256", claims(iss, "pss")).await).await;
    assert_eq!(status, 200, "PS256: {body}");
    refused(
        &present(&api, &issuer.mint("EdDSA", claims(iss, "ed-off")).await).await,
        "invalid_grant",
        "not one its issuer",
        "EdDSA no longer allowed",
    );
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

pub async fn keys_rotate_unknown_kids_refetch_once_removed_keys_stop_within_the_cache_bound_and_a_hanging_source_is_bounded() {
    let Some(issuer) = Issuer::start_or_skip("JWT keys") else { return };
    let s = server(&issuer, &[], &[]);
    fixtures(&s, &issuer);
    // A second issuer whose keys never come: its JWKS URL hangs.
    s.admin(
        &[
            "jwt-issuers",
            "set",
            "hangs",
            "--issuer",
            "https://hangs.test",
            "--jwks-url",
            &format!("{}/hang", issuer.base),
            "--audience",
            AUD,
        ],
        "",
    );
    s.admin(&["mappings", "set-jwt", "hanging", "--issuer", "hangs", "--claim", "sub=*", "--client", "ci", "--scope", "restricted"], "");
    // A mapping without conditions is refused: every token of the issuer would map.
    let unconditioned = crate::process::run(
        &[
            "admin",
            "--data-dir",
            s.dir.to_str().unwrap(),
            "mappings",
            "set-jwt",
            "any",
            "--issuer",
            "hangs",
            "--client",
            "ci",
            "--scope",
            "restricted",
        ],
        &[],
    );
    assert_ne!(unconditioned.code, 0);
    assert!(unconditioned.stderr.contains("at least one --claim"), "{}", unconditioned.stderr);
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
    let pass = after_one - before == 1 && after_two == after_one;
    eprintln!(
        "SECURITY J6 an unknown kid: refused after {} fetch of the JWKS, and again at once after {} more (refetch_min_secs = 1) — {}",
        after_one - before,
        after_two - after_one,
        if pass { "pass" } else { "FAIL" }
    );
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
    let pass = bound <= Duration::from_secs(CACHE_SECS) + Duration::from_millis(1500);
    eprintln!(
        "SECURITY J5 a key removed from the issuer's JWKS: its tokens refused {:.1} s after the removal (key_cache_secs = {CACHE_SECS}; \
         the default bound is 300 s) — {}",
        bound.as_secs_f64(),
        if pass { "pass" } else { "FAIL" }
    );
    assert!(bound <= Duration::from_secs(CACHE_SECS) + Duration::from_millis(1500), "{bound:?}");

    // A key source that hangs: invalid_grant within the fetch bound, never a hung request.
    let started = Instant::now();
    let answer =
        present(&api, &issuer.mint("RS256", json!({"iss": "https://hangs.test", "aud": AUD, "sub": "x", "exp": now() + 60})).await).await;
    let took = started.elapsed();
    refused(&answer, "invalid_grant", "could not be fetched", "hanging key source");
    // Eight at once while it hangs (past refetch_min_secs, so one of them fetches again): every one answered within the bound.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let hanging = issuer.mint("RS256", json!({"iss": "https://hangs.test", "aud": AUD, "sub": "x", "exp": now() + 60})).await;
    let started = Instant::now();
    let answers = futures_join(8, || present(&api, &hanging)).await;
    let all_took = started.elapsed();
    let bound = Duration::from_secs(FETCH_TIMEOUT_SECS) + Duration::from_secs(2);
    let pass = answer.0 == 400 && took < bound && all_took < bound && answers.iter().all(|(s, _)| *s == 400);
    eprintln!(
        "SECURITY J9 a key source that hangs: answered {} {} in {:.2} s; 8 requests at once: all 400 within {:.2} s \
         (fetch_timeout_secs = {FETCH_TIMEOUT_SECS}) — {}",
        answer.0,
        answer.1["error"],
        took.as_secs_f64(),
        all_took.as_secs_f64(),
        if pass { "pass" } else { "FAIL" }
    );
    assert!(took < Duration::from_secs(FETCH_TIMEOUT_SECS) + Duration::from_secs(2), "{took:?}");
    assert!(answers.iter().all(|(s, _)| *s == 400), "{answers:?}");
    assert!(all_took < bound, "{all_took:?}");
}

pub async fn a_replayed_jwt_is_refused_by_a_second_replica_on_postgresql() {
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
            present(if turn.get().is_multiple_of(2) { &api_a } else { &api_b }, &jwt)
        })
        .await;
        wins.push(answers.iter().filter(|(s, _)| *s == 200).count());
    }
    let pass = wins.iter().all(|w| *w == 1);
    eprintln!(
        "SECURITY J7p a replayed JWT across two PostgreSQL replicas: accepted by one, refused by the other; 32 simultaneous \
         presentations spread over both, 10 trials: accepted {wins:?} — {}",
        if pass { "pass" } else { "FAIL" }
    );
    assert!(wins.iter().all(|w| *w == 1), "{wins:?}");
}

/// A CA of the test's, and certificates it signs.
struct Ca {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyUsagePurpose};
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let key = rcgen::KeyPair::generate().unwrap();
        Ca { cert: p.self_signed(&key).unwrap(), key }
    }

    /// A client certificate (PEM chain + key) with CN `cn`, serial `serial`, the e-mail and UPN SANs.
    fn client(&self, cn: &str, serial: u64, eku: Option<rcgen::ExtendedKeyUsagePurpose>, expired: bool) -> String {
        use rcgen::{CertificateParams, DnType, OtherNameValue, SanType};
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.serial_number = Some(serial.into());
        p.subject_alt_names = vec![
            SanType::Rfc822Name(format!("{cn}@example.com").try_into().unwrap()),
            SanType::OtherName((vec![1, 3, 6, 1, 4, 1, 311, 20, 2, 3], OtherNameValue::Utf8String(format!("{cn}@corp.example")))),
        ];
        p.extended_key_usages = eku.into_iter().collect();
        if expired {
            p.not_before = rcgen::date_time_ymd(2019, 1, 1);
            p.not_after = rcgen::date_time_ymd(2020, 1, 1);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    }

    /// A CRL revoking `serials`.
    fn crl(&self, serials: &[u64]) -> String {
        use rcgen::{CertificateRevocationListParams, KeyIdMethod, RevokedCertParams};
        CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2024, 1, 1),
            next_update: rcgen::date_time_ymd(2099, 1, 1),
            crl_number: 1u64.into(),
            issuing_distribution_point: None,
            revoked_certs: serials
                .iter()
                .map(|s| RevokedCertParams {
                    serial_number: (*s).into(),
                    revocation_time: rcgen::date_time_ymd(2024, 1, 1),
                    reason_code: None,
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: KeyIdMethod::Sha256,
        }
        .signed_by(&self.cert, &self.key)
        .unwrap()
        .pem()
        .unwrap()
    }
}

/// `POST Authorize/Certificate` on the certificate listener with `identity` (PEM chain and key), or none.
async fn certificate(base: &str, server_ca: &[u8], identity: Option<&str>, client_id: &str) -> Result<(u16, Value), String> {
    let mut b = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(server_ca).unwrap())
        .timeout(Duration::from_secs(10));
    if let Some(pem) = identity {
        b = b.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
    }
    let http = b.build().unwrap();
    let r = http
        .post(format!("{base}/vedauth/authorize/certificate"))
        .json(&json!({"client_id": client_id, "scope": "restricted"}))
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.map_err(|e| e.to_string())?))
}

pub async fn the_certificate_grant_takes_approved_client_certificates_on_its_own_listener_only() {
    use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ca = Ca::new("approved CA");
    let other = Ca::new("other CA");
    let (ca_file, crl_file) = (dir.path().join("ca.pem"), dir.path().join("crl.pem"));
    std::fs::write(&ca_file, ca.cert.pem()).unwrap();
    std::fs::write(&crl_file, ca.crl(&[66])).unwrap();
    let admin = |args: &[&str]| crate::process::admin(&data, args, &[], "");
    admin(&["init"]);
    for c in ["ci", "mailci", "upnci", "other"] {
        admin(&["integrations", "create", c, "--name", c, "--scope", "restricted:manage"]);
    }
    let ca_arg = ca_file.to_str().unwrap();
    admin(&["mappings", "set-cert", "agents", "--ca-file", ca_arg, "--identity-from", "cn", "--client", "ci", "--scope", "restricted"]);
    admin(&[
        "mappings",
        "set-cert",
        "mail",
        "--ca-file",
        ca_arg,
        "--identity-from",
        "email",
        "--client",
        "mailci",
        "--scope",
        "restricted",
    ]);
    admin(&["mappings", "set-cert", "upn", "--ca-file", ca_arg, "--identity-from", "upn", "--client", "upnci", "--scope", "restricted"]);
    let crl = crl_file.to_str().unwrap();
    let s = Server::start_on(
        data.clone(),
        &["--insecure-http"],
        &[
            ("STRONGROOM_CERTIFICATE_LISTEN", "127.0.0.1:0"),
            ("STRONGROOM_CERTIFICATE_CRL_FILES", crl),
            ("STRONGROOM_CERTIFICATE_PROXY_HEADER", "X-Client-Cert"),
            ("STRONGROOM_TRUSTED_PROXIES", "127.0.0.2"),
        ],
    );
    let listener = s.logged_addr("certificate grant served").unwrap();
    let base = format!("https://localhost:{}", listener.port());
    let server_ca = std::fs::read(data.join("tls").join("cert.pem")).unwrap();

    // Approved: the identity as each mapping says.
    let good = ca.client("agent-1", 11, Some(ClientAuth), false);
    for (client, identity) in
        [("ci", "cert+agents:agent-1"), ("mailci", "cert+mail:agent-1@example.com"), ("upnci", "cert+upn:agent-1@corp.example")]
    {
        let (status, body) = certificate(&base, &server_ca, Some(&good), client).await.unwrap();
        assert_eq!(status, 200, "{client}: {body}");
        assert_eq!(body["identity"], identity);
        assert_eq!(body["refresh_token"], Value::Null);
        let api = Api::new(s.http_base());
        assert_eq!(api.verify(body["access_token"].as_str().unwrap()).await, 200);
    }
    // The mapping does not allow this integration.
    let (status, body) = certificate(&base, &server_ca, Some(&good), "other").await.unwrap();
    assert_eq!((status, body["error"].as_str()), (400, Some("unauthorized_client")), "{body}");
    // No certificate: a clear JSON error, not a TLS failure.
    let (status, body) = certificate(&base, &server_ca, None, "ci").await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    assert!(body["error_description"].as_str().unwrap().contains("No client certificate"), "{body}");
    let no_cert = body["error_description"].as_str().unwrap_or("").to_owned();
    // Another CA's certificate: the handshake lets it through (the grant decides on the mappings it reads,
    // so that a mapping set a moment ago counts), and the grant refuses it.
    let (status, body) = certificate(&base, &server_ca, Some(&other.client("agent-1", 12, Some(ClientAuth), false)), "ci").await.unwrap();
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
    let unknown_ca = body["error_description"].as_str().unwrap_or("").to_owned();
    assert!(unknown_ca.contains("No certificate mapping accepts this client certificate"), "{body}");
    // Refused by rustls in the handshake, against the CAs of the mappings as last read: expired, no clientAuth EKU, revoked.
    let mut alerts = Vec::new();
    for (what, pem, expected) in [
        ("expired", ca.client("agent-1", 13, Some(ClientAuth), true), "CertificateExpired"),
        ("no clientAuth EKU", ca.client("agent-1", 14, Some(ServerAuth), false), "UnsupportedCertificate"),
        ("revoked in the CRL", ca.client("agent-1", 66, Some(ClientAuth), false), "CertificateRevoked"),
    ] {
        let mut answer = certificate(&base, &server_ca, Some(&pem), "ci").await;
        // TLS 1.3: the server's alert comes after the client's last handshake flight, and a client already
        // sending its request may see the connection close before it reads the alert. Such a transport error
        // is asked again (at most three times) until the alert is read; an answer is never asked again.
        for _ in 0..3 {
            match &answer {
                Err(e) if !e.contains("AlertReceived(") => answer = certificate(&base, &server_ca, Some(&pem), "ci").await,
                _ => break,
            }
        }
        let alert = match &answer {
            Err(e) => e
                .split("AlertReceived(")
                .nth(1)
                .map(|a| a.split(')').next().unwrap_or(a).to_owned())
                .unwrap_or_else(|| format!("none ({})", e.chars().take(160).collect::<String>())),
            Ok((status, _)) => format!("none (HTTP {status})"),
        };
        let alert = Some(alert);
        alerts.push((what, expected, alert));
    }
    let written = grants(&s);
    let pass = alerts.iter().all(|(_, e, a)| a.as_deref() == Some(*e)) && written == 3;
    eprintln!(
        "SECURITY J8 client certificates expired, without the clientAuth EKU, revoked in the CRL: {}; \
         another CA: 400 \"{unknown_ca}\"; no certificate: 400 \"{no_cert}\"; grants written by refusals: {} — {}",
        alerts.iter().map(|(w, _, a)| format!("{w}: TLS alert {}", a.as_deref().unwrap_or("none"))).collect::<Vec<_>>().join(", "),
        written - 3,
        if pass { "pass" } else { "FAIL" }
    );
    for (what, expected, alert) in &alerts {
        assert_eq!(alert.as_deref(), Some(*expected), "{what}");
    }
    assert_eq!(written, 3, "only the approved certificate's grants");

    // The main listener never asks for a certificate: the route answers there without one.
    let (status, body) =
        Api::new(s.http_base()).post_json("/vedauth/authorize/certificate", &json!({"client_id": "ci", "scope": "restricted"})).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
    // A certificate in the proxy header counts only from a trusted proxy (127.0.0.2 here), and is verified by the server.
    let via_header = |pem: String, from: [u8; 4]| {
        let base = s.http_base();
        async move {
            let escaped: String = pem
                .lines()
                .take_while(|l| !l.contains("PRIVATE KEY"))
                .flat_map(|l| l.chars().chain(['\n']))
                .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c.to_string() } else { format!("%{:02X}", c as u32) })
                .collect();
            let r = reqwest::Client::builder()
                .local_address(std::net::IpAddr::from(from))
                .build()
                .unwrap()
                .post(format!("{base}/vedauth/authorize/certificate"))
                .header("X-Client-Cert", escaped)
                .json(&json!({"client_id": "ci", "scope": "restricted"}))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = via_header(good.clone(), [127, 0, 0, 1]).await;
    assert!(
        body["error_description"].as_str().unwrap().contains("No client certificate"),
        "an untrusted peer's header is ignored: {status} {body}"
    );
    let (status, body) = via_header(good.clone(), [127, 0, 0, 2]).await;
    assert_eq!((status, body["identity"].as_str()), (200, Some("cert+agents:agent-1")), "{body}");
    let (status, body) = via_header(other.client("agent-1", 15, Some(ClientAuth), false), [127, 0, 0, 2]).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error_description"].as_str().unwrap().contains("No certificate mapping accepts"), "{body}");
    let (status, body) = via_header(ca.client("agent-1", 66, Some(ClientAuth), false), [127, 0, 0, 2]).await;
    assert!(status == 400 && body["error_description"].as_str().unwrap().contains("revoked"), "revoked, in a header: {status} {body}");
    assert_eq!(grants(&s), 4);

    // The listener names no CA in its certificate request, so that a client sends its certificate whatever its
    // issuer (Go's crypto/tls sends none whose issuer was not named).
    let hints = std::process::Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{}", listener.port()), "-servername", "localhost"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl s_client");
    let hints = String::from_utf8_lossy(&hints.stdout);
    assert!(hints.contains("No client certificate CA names sent"), "the listener names CAs:\n{hints}");
    // A mapping set by another process on the store (as on another replica) while the server runs, with the
    // default reload_secs (10 s): its CA is accepted by the very next request.
    let late = Ca::new("late CA");
    let late_file = dir.path().join("late.pem");
    std::fs::write(&late_file, late.cert.pem()).unwrap();
    s.admin(&["mappings", "set-cert", "late", "--ca-file", late_file.to_str().unwrap(), "--client", "ci", "--scope", "restricted"], "");
    let pem = late.client("late-1", 21, Some(ClientAuth), false);
    let (status, body) = certificate(&base, &server_ca, Some(&pem), "ci").await.unwrap();
    assert_eq!((status, body["identity"].as_str()), (200, Some("cert+late:late-1")), "a mapping set a moment ago: {body}");
    // IsAuthServer: 202, as Go vcert expects.
    let r = reqwest::get(format!("{}/vedauth/authorize/isauthserver", s.http_base())).await.unwrap();
    assert_eq!(r.status().as_u16(), 202);
    assert_eq!(r.status().canonical_reason(), Some("Accepted"));
}

/// A certificate mapping set on the store while two PostgreSQL replicas
/// serve the certificate grant: the replica that did not set it accepts the
/// mapping's CA at the very next request (the grant reads the mappings in the
/// request; the handshake names no CA), with the default `reload_secs`.
pub async fn a_certificate_mapping_counts_at_once_on_every_replica_on_postgresql() {
    use rcgen::ExtendedKeyUsagePurpose::ClientAuth;
    let Some(root) = strongroom_testkit::pg_url_or_skip("certificate mappings across replicas") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    let key = "6".repeat(64);
    let env = [
        ("STRONGROOM_MASTER_KEY", key.as_str()),
        ("STRONGROOM_DATABASE_URL", url.as_str()),
        ("STRONGROOM_CERTIFICATE_LISTEN", "127.0.0.1:0"),
    ];
    let a = Server::start(&["--insecure-http"], &env);
    let b = Server::start(&["--insecure-http"], &env);
    a.admin(&["integrations", "create", "ci", "--name", "ci", "--scope", "restricted:manage"], "");
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("replicated CA");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.cert.pem()).unwrap();
    let pem = ca.client("agent-7", 31, Some(ClientAuth), false);
    let on = |s: &Server| {
        let port = s.logged_addr("certificate grant served").unwrap().port();
        (format!("https://localhost:{port}"), std::fs::read(s.dir.join("tls").join("cert.pem")).unwrap())
    };
    let (base_b, server_ca_b) = on(&b);
    // Before: no mapping has this CA.
    let (status, body) = certificate(&base_b, &server_ca_b, Some(&pem), "ci").await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body["error_description"].as_str().unwrap().contains("No certificate mapping accepts"), "{body}");
    // Set through replica A's store, then at once on replica B.
    a.admin(&["mappings", "set-cert", "agents", "--ca-file", ca_file.to_str().unwrap(), "--client", "ci", "--scope", "restricted"], "");
    let (status, body) = certificate(&base_b, &server_ca_b, Some(&pem), "ci").await.unwrap();
    assert_eq!((status, body["identity"].as_str()), (200, Some("cert+agents:agent-7")), "{body}");
    // And removed: refused at once too.
    a.admin(&["mappings", "remove", "agents"], "");
    let (status, body) = certificate(&base_b, &server_ca_b, Some(&pem), "ci").await.unwrap();
    assert_eq!(status, 400, "a deleted mapping still accepted: {body}");
}

/// J1-J9, named by their ids (the security suite's table, book/src/security/suite.md).
mod suite {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn j1_j2_j3_j4_j7_the_jwt_grant_accepts_rs256_es256_eddsa_and_refuses_each_attack() {
        super::the_jwt_grant_accepts_rs256_es256_eddsa_and_refuses_each_attack().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn j5_j6_j9_keys_rotate_refetch_once_removed_keys_stop_within_the_bound_and_a_hanging_source_is_bounded() {
        super::keys_rotate_unknown_kids_refetch_once_removed_keys_stop_within_the_cache_bound_and_a_hanging_source_is_bounded().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn j7p_a_replayed_jwt_is_refused_by_a_second_replica_on_postgresql() {
        super::a_replayed_jwt_is_refused_by_a_second_replica_on_postgresql().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn j8p_a_certificate_mapping_counts_at_once_on_every_replica_on_postgresql() {
        super::a_certificate_mapping_counts_at_once_on_every_replica_on_postgresql().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn j8_the_certificate_grant_takes_approved_client_certificates_on_its_own_listener_only() {
        super::the_certificate_grant_takes_approved_client_certificates_on_its_own_listener_only().await;
    }
}
