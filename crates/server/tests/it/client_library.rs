//! The client library against the in-process server, on one manual clock:
//! device login, a token source refreshing once for many concurrent callers,
//! and the end of a grant.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use strongroom_client::cache::TokenCache;
use strongroom_client::device::{DeviceLogin, Sleeper};
use strongroom_client::source::TokenSource;
use strongroom_client::tls::Trust;
use strongroom_client::vault::AssociationValue as Value;
use strongroom_client::vault::Vault;
use strongroom_client::{ClientError, Server};
use strongroom_core::time::{Clock as _, ManualClock};

use crate::support::{PASSWORD, PageClient, TestServer};

/// Moves the manual clock instead of waiting.
struct ClockSleeper(ManualClock);
impl Sleeper for ClockSleeper {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.advance_secs(d.as_secs() as i64);
        Box::pin(tokio::task::yield_now())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn login_refresh_once_for_many_callers_and_grant_end() {
    let s = TestServer::start().await;
    s.vault_user("alice", "\\VED\\Policy\\Team A", "read,write").await;
    s.integration("lib", "restricted:manage", |i| {
        i.overrides.access_validity = Some(300);
        i.overrides.grant_validity = Some(3600);
    })
    .await;
    let server = Server::new(&s.url, &Trust::WebPki).unwrap();
    let login = DeviceLogin::start(&server, "lib", "restricted:manage", s.clock.now()).await.unwrap();
    assert_eq!(login.plan().interval_secs, 5);
    // The person approves through the page while the library polls.
    let page = PageClient::open(&s, login.verification_uri_complete()).await;
    let (_, html) = page.sign_in_and_decide(login.user_code(), "alice", PASSWORD, true).await;
    assert!(html.contains("Access approved"));
    let tokens = login.wait(&s.clock, &ClockSleeper(s.clock.clone()), std::future::pending()).await.unwrap();
    assert_eq!(tokens.scope, "restricted:manage");

    let dir = tempfile::tempdir().unwrap();
    let cache = TokenCache::new(dir.path(), server.base(), "lib");
    let source = Arc::new(TokenSource::new(server.clone(), "lib", cache, Arc::new(s.clock.clone())));
    source.save_login(tokens.clone()).await.unwrap();
    assert_eq!(source.access_token().await.unwrap(), tokens.access_token);
    let id = Vault::new(&source).add("\\VED\\Policy\\Team A", 32, "Software:Default", b"x").await.unwrap();

    // Past the refresh margin: twenty callers at once, one refresh.
    s.clock.advance_secs(290);
    let calls = (0..20).map(|_| {
        let src = source.clone();
        tokio::spawn(async move { src.access_token().await.unwrap() })
    });
    let mut got = Vec::new();
    for c in calls {
        got.push(c.await.unwrap());
    }
    assert!(got.iter().all(|t| *t == got[0]), "everyone got the same new token");
    assert_ne!(got[0], tokens.access_token);
    let refreshes = s.event_kinds().await.iter().filter(|k| *k == "token.refreshed").count();
    assert_eq!(refreshes, 1, "exactly one refresh for twenty callers");
    let v = Vault::new(&source);
    v.associate(id, "n", &Value::Int(7)).await.unwrap();
    assert_eq!(v.lookup_association(id, "n").await.unwrap(), "7");
    let err = v.associate(id, "n", &Value::Int(7)).await.unwrap_err();
    assert_eq!(err.result_code(), Some(strongroom_core::vault::ResultCode::AssociationAlreadyExists));

    // A grant revoked elsewhere: the next refresh says "log in again".
    let grant = s.admin.list_grants(false).await.unwrap().pop().unwrap();
    s.admin.revoke_grant(grant.grant.id.as_str()).await.unwrap();
    s.clock.advance_secs(300);
    assert!(matches!(source.access_token().await, Err(ClientError::LoginRequired(_))));

    // After refresh_until nothing is even attempted.
    let fresh_cache = TokenCache::new(dir.path(), server.base(), "lib-2");
    let src2 = TokenSource::new(server, "lib", fresh_cache, Arc::new(s.clock.clone()));
    let mut ended = tokens;
    ended.refresh_until = s.clock.now().secs() - 1;
    ended.expires = ended.refresh_until;
    src2.save_login(ended).await.unwrap();
    let err = src2.access_token().await.unwrap_err();
    assert!(err.to_string().contains("refresh_until"), "{err}");
}
