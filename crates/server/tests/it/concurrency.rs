//! Single-use under concurrency: 32 simultaneous exchanges of one approved
//! device code, and 32 simultaneous refreshes of one refresh token, in every
//! trial. Strict (retry window 0): exactly one succeeds. With the retry
//! window: each presentation gets a pair, each replacing the one before, so
//! afterwards exactly one returned pair works and the grant is alive.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::TestServer;

const PARALLEL: usize = 32;
const TRIALS: usize = 25;

async fn strict() -> TestServer {
    TestServer::start_with(|c| c.tokens.retry_window = Some(0)).await
}

/// The answers whose access token works now: exactly one is expected.
async fn working(s: &TestServer, results: &[(StatusCode, Value)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (st, v) in results {
        if *st == StatusCode::OK && s.get_bearer("/vedauth/authorize/verify", v["access_token"].as_str().unwrap()).await.0 == StatusCode::OK
        {
            out.push(v.clone());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn device_code_exchanges_race_strict() {
    let s = strict().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    for trial in 0..TRIALS {
        let d = s.start_device("app", "restricted").await;
        s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.poll("app", &code))).await;
        let wins = results.iter().filter(|(st, _)| *st == StatusCode::OK).count();
        assert_eq!(wins, 1, "trial {trial}: {results:?}");
        for (st, v) in &results {
            assert!(*st == StatusCode::OK || v["error"] == "invalid_grant", "trial {trial}: loser got {st} {v}");
        }
    }
    let grants = s.admin.list_grants(true).await.unwrap();
    assert_eq!(grants.len(), TRIALS, "one grant per code");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn device_code_exchanges_race_leave_one_working_pair() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    for trial in 0..TRIALS {
        let d = s.start_device("app", "restricted").await;
        s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.poll("app", &code))).await;
        assert!(
            results.iter().all(|(st, _)| *st == StatusCode::OK),
            "trial {trial}: inside the window every exchange answers: {results:?}"
        );
        let live = working(&s, &results).await;
        assert_eq!(live.len(), 1, "trial {trial}: exactly one returned pair works");
        let (st, next) = s.refresh("app", live[0]["refresh_token"].as_str().unwrap()).await;
        assert_eq!(st, StatusCode::OK, "trial {trial}: the working pair refreshes: {next}");
    }
    let grants = s.admin.list_grants(true).await.unwrap();
    assert_eq!(grants.len(), TRIALS, "one grant per code");
    assert!(grants.iter().all(|g| g.grant.revoked_at.is_none()), "every grant alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refreshes_race_strict() {
    let s = strict().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    for trial in 0..TRIALS {
        let t = s.tokens_for(&alice, "app", "restricted").await;
        let rt = t["refresh_token"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.refresh("app", &rt))).await;
        let winners: Vec<_> = results.iter().filter(|(st, _)| *st == StatusCode::OK).collect();
        assert_eq!(winners.len(), 1, "trial {trial}: {results:?}");
        for (st, v) in &results {
            assert!(*st == StatusCode::OK || v["error"] == "invalid_grant", "trial {trial}: loser got {st} {v}");
        }
        // Strict: every loser presented a spent token, which is reuse, and
        // the grant is revoked, winner's tokens included.
        let access = winners[0].1["access_token"].as_str().unwrap();
        assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::UNAUTHORIZED, "trial {trial}");
        let next = winners[0].1["refresh_token"].as_str().unwrap();
        assert_eq!(s.refresh("app", next).await.1["error"], "invalid_grant", "trial {trial}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refreshes_race_leave_one_working_token_and_the_grant_alive() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    for trial in 0..TRIALS {
        let t = s.tokens_for(&alice, "app", "restricted").await;
        let rt = t["refresh_token"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.refresh("app", &rt))).await;
        assert!(results.iter().all(|(st, _)| *st == StatusCode::OK), "trial {trial}: {results:?}");
        let live = working(&s, &results).await;
        assert_eq!(live.len(), 1, "trial {trial}: exactly one returned pair works");
        let (st, next) = s.refresh("app", live[0]["refresh_token"].as_str().unwrap()).await;
        assert_eq!(st, StatusCode::OK, "trial {trial}: the grant is alive and its one working token refreshes: {next}");
    }
    assert!(!s.event_kinds().await.iter().any(|k| k == "token.refresh_reuse"), "no false theft alarm");
}

/// Polls every future at once on this task (no extra dependency).
pub(crate) async fn futures_join_all<F: std::future::Future>(futs: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futs.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<_> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (h, out) in handles.iter_mut().zip(outputs.iter_mut()) {
            if let Some(f) = h {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *out = Some(v);
                        *h = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().map(|o| o.unwrap()).collect()
}

/// The same races on PostgreSQL, where the writers really run at once
/// (READ COMMITTED, one conditional UPDATE per attempt).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn races_on_postgres_leave_one_working_pair() {
    let Some(s) = TestServer::start_on_postgres().await else { return };
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    for trial in 0..10 {
        let d = s.start_device("app", "restricted").await;
        s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.poll("app", &code))).await;
        assert!(results.iter().all(|(st, _)| *st == StatusCode::OK), "trial {trial}: {results:?}");
        let live = working(&s, &results).await;
        assert_eq!(live.len(), 1, "trial {trial}: exactly one exchanged pair works");
        let rt = live[0]["refresh_token"].as_str().unwrap().to_owned();
        let results = futures_join_all((0..PARALLEL).map(|_| s.refresh("app", &rt))).await;
        assert!(results.iter().all(|(st, _)| *st == StatusCode::OK), "trial {trial}: {results:?}");
        let live = working(&s, &results).await;
        assert_eq!(live.len(), 1, "trial {trial}: exactly one refreshed pair works");
        assert_eq!(s.refresh("app", live[0]["refresh_token"].as_str().unwrap()).await.0, StatusCode::OK, "trial {trial}: grant alive");
    }
    assert!(!s.event_kinds().await.iter().any(|k| k == "token.refresh_reuse"));
}
