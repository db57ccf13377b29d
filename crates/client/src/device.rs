//! The device-authorization login (RFC 8628): start, then poll until the
//! person answers in a browser.
//!
//! [`PollPlan`] is the polling rule with no I/O, tested with a moving clock;
//! [`DeviceLogin::wait`] runs it with real requests, a [`Sleeper`] and a
//! cancellation future.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use strongroom_proto::time::{Clock, UnixTime};
use strongroom_proto::vedauth::{DEVICE_CODE_GRANT, DeviceRequest, DeviceResponse, TokenRequest, TokenResponse};

use crate::error::{ClientError, ClientResult};
use crate::http::Server;
use crate::tokens::Tokens;

/// Waits. Production uses tokio's timer; tests advance a manual clock.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// Sleeps on tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// What one poll answered.
#[derive(Debug)]
pub enum PollAnswer {
    Tokens(TokenResponse),
    /// A `/vedauth` error code.
    Error(String),
}

/// What to do next.
#[derive(Debug)]
pub enum Next {
    /// Poll again after this many seconds.
    Wait(i64),
    Done(TokenResponse),
    Denied,
    Expired,
    Failed(String),
}

/// The polling rule: wait `interval` between polls, add 5 s on `slow_down`
/// (for this and every later poll), stop at `access_denied`, at expiry, or
/// at any other error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollPlan {
    pub interval_secs: i64,
    pub deadline: UnixTime,
}

impl PollPlan {
    pub fn new(device: &DeviceResponse, received_at: UnixTime) -> PollPlan {
        PollPlan { interval_secs: device.interval.clamp(1, 300), deadline: received_at.plus_secs(device.expires_in.max(0)) }
    }

    pub fn next(&mut self, answer: PollAnswer, now: UnixTime) -> Next {
        match answer {
            PollAnswer::Tokens(t) => Next::Done(t),
            PollAnswer::Error(code) => match code.as_str() {
                "authorization_pending" | "slow_down" => {
                    if code == "slow_down" {
                        self.interval_secs += 5;
                    }
                    if now.plus_secs(self.interval_secs) >= self.deadline { Next::Expired } else { Next::Wait(self.interval_secs) }
                }
                "access_denied" => Next::Denied,
                "expired_token" => Next::Expired,
                // After the deadline the server says the code is invalid.
                "invalid_grant" if now >= self.deadline => Next::Expired,
                other => Next::Failed(other.to_owned()),
            },
        }
    }
}

/// A started login: show [`DeviceLogin::user_code`] and
/// [`DeviceLogin::verification_uri_complete`] to the person, then [`DeviceLogin::wait`].
#[derive(Debug)]
pub struct DeviceLogin {
    server: Server,
    client_id: String,
    device: DeviceResponse,
    plan: PollPlan,
}

impl DeviceLogin {
    pub async fn start(server: &Server, client_id: &str, scope: &str, now: UnixTime) -> ClientResult<DeviceLogin> {
        let body = DeviceRequest { client_id: Some(client_id.to_owned()), scope: Some(scope.to_owned()) };
        let device: DeviceResponse = server.auth_post("/vedauth/authorize/device", &body).await?;
        let plan = PollPlan::new(&device, now);
        Ok(DeviceLogin { server: server.clone(), client_id: client_id.to_owned(), device, plan })
    }

    pub fn user_code(&self) -> &str {
        &self.device.user_code
    }

    pub fn verification_uri(&self) -> &str {
        &self.device.verification_uri
    }

    pub fn verification_uri_complete(&self) -> &str {
        &self.device.verification_uri_complete
    }

    pub fn plan(&self) -> PollPlan {
        self.plan
    }

    async fn poll_once(&self) -> ClientResult<PollAnswer> {
        let body = TokenRequest {
            client_id: Some(self.client_id.clone()),
            grant_type: Some(DEVICE_CODE_GRANT.to_owned()),
            device_code: Some(self.device.device_code.clone()),
            ..TokenRequest::default()
        };
        match self.server.auth_post::<_, TokenResponse>("/vedauth/authorize/token", &body).await {
            Ok(t) => Ok(PollAnswer::Tokens(t)),
            Err(ClientError::Auth { error, .. }) => Ok(PollAnswer::Error(error)),
            Err(e) => Err(e),
        }
    }

    /// Polls until the person approves or denies, the code expires, or
    /// `cancel` completes.
    pub async fn wait(mut self, clock: &dyn Clock, sleeper: &dyn Sleeper, cancel: impl Future<Output = ()> + Send) -> ClientResult<Tokens> {
        let run = async {
            let mut wait = self.plan.interval_secs;
            loop {
                sleeper.sleep(Duration::from_secs(u64::try_from(wait).unwrap_or(5))).await;
                let answer = self.poll_once().await?;
                match self.plan.next(answer, clock.now()) {
                    Next::Wait(s) => wait = s,
                    Next::Done(t) => return Ok(Tokens::from_response(t, clock.now())),
                    Next::Denied => return Err(ClientError::AccessDenied),
                    Next::Expired => return Err(ClientError::LoginExpired),
                    Next::Failed(code) => {
                        return Err(ClientError::Auth { status: 400, error: code, description: "the login failed".into() });
                    }
                }
            }
        };
        tokio::select! {
            biased;
            () = cancel => Err(ClientError::Cancelled),
            r = run => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strongroom_proto::SecretString;
    use strongroom_proto::time::ManualClock;

    fn device(interval: i64, expires_in: i64) -> DeviceResponse {
        DeviceResponse {
            device_code: SecretString("d".into()),
            user_code: "BCDF-GHJK".into(),
            verification_uri: "https://s/vedauth/device".into(),
            verification_uri_complete: "https://s/vedauth/device?user_code=BCDF-GHJK".into(),
            expires_in,
            expires: 0,
            interval,
        }
    }

    fn pending() -> PollAnswer {
        PollAnswer::Error("authorization_pending".into())
    }

    #[test]
    fn honours_interval_and_slow_down_on_a_moving_clock() {
        let clock = ManualClock::new(UnixTime::from_secs(1000));
        let mut plan = PollPlan::new(&device(5, 300), clock.now());
        let mut waits = Vec::new();
        let mut answers =
            vec![pending(), PollAnswer::Error("slow_down".into()), pending(), PollAnswer::Error("slow_down".into()), pending()];
        answers.reverse();
        while let Some(a) = answers.pop() {
            match plan.next(a, clock.now()) {
                Next::Wait(s) => {
                    waits.push(s);
                    clock.advance_secs(s);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(waits, [5, 10, 10, 15, 15], "slow_down adds 5 s to this and every later poll");
        assert_eq!(clock.now().secs(), 1055);
    }

    #[test]
    fn stops_at_expiry_denial_and_unknown_errors() {
        let t0 = UnixTime::from_secs(0);
        let mut plan = PollPlan::new(&device(5, 12), t0);
        assert!(matches!(plan.next(pending(), t0), Next::Wait(5)));
        assert!(matches!(plan.next(pending(), t0.plus_secs(5)), Next::Wait(5)));
        assert!(matches!(plan.next(pending(), t0.plus_secs(10)), Next::Expired), "no poll past the deadline");
        let mut plan = PollPlan::new(&device(5, 300), t0);
        assert!(matches!(plan.next(PollAnswer::Error("access_denied".into()), t0), Next::Denied));
        assert!(matches!(plan.next(PollAnswer::Error("invalid_client".into()), t0), Next::Failed(_)));
        assert!(matches!(plan.next(PollAnswer::Error("invalid_grant".into()), t0), Next::Failed(_)));
        assert!(matches!(plan.next(PollAnswer::Error("invalid_grant".into()), t0.plus_secs(300)), Next::Expired));
        assert!(matches!(plan.next(PollAnswer::Error("expired_token".into()), t0), Next::Expired));
    }

    /// A sleeper that moves a manual clock instead of waiting.
    struct ClockSleeper(ManualClock, std::sync::Mutex<Vec<u64>>);
    impl Sleeper for ClockSleeper {
        fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            self.0.advance_secs(d.as_secs() as i64);
            self.1.lock().unwrap().push(d.as_secs());
            Box::pin(async {})
        }
    }

    #[tokio::test]
    async fn wait_can_be_cancelled() {
        let server = Server::new("http://127.0.0.1:9", &crate::tls::Trust::WebPki).unwrap();
        let clock = ManualClock::new(UnixTime::from_secs(0));
        let login =
            DeviceLogin { server, client_id: "c".into(), device: device(5, 300), plan: PollPlan::new(&device(5, 300), clock.now()) };
        let sleeper = ClockSleeper(clock.clone(), std::sync::Mutex::new(Vec::new()));
        let r = login.wait(&clock, &sleeper, async {}).await;
        assert!(matches!(r, Err(ClientError::Cancelled)), "{r:?}");
    }
}
