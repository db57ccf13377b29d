//! Everything that can go wrong, in kinds a program (or a CLI exit code) can
//! act on.

use strongroom_proto::vedsdk::ResultCode;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No whole HTTP answer arrived: DNS, refused, reset, timeout, or the
    /// answer was cut off (a transport failure; see [`ClientError::is_transport`]).
    #[error("cannot reach the server: {0}")]
    Unreachable(String),
    /// The server answered in another protocol than the URL's scheme says:
    /// `https://` to a plain-HTTP port, or `http://` to a TLS port. Not a
    /// transport failure: sending again cannot help.
    #[error("{0}")]
    WrongProtocol(String),
    /// TLS failed: unknown CA, pin mismatch, wrong host name.
    #[error("TLS failed: {0} (give the server's CA with --ca, or pin its certificate with --pin)")]
    Tls(String),
    /// The server answered with a 5xx.
    #[error("the server failed (HTTP {status}); try again later")]
    ServerError { status: u16 },
    /// The server answered something that is not the expected JSON.
    #[error("unexpected answer from the server: {0}")]
    BadResponse(String),
    /// A `/vedauth` error: `{error, error_description}`.
    #[error("{error}: {description}")]
    Auth { status: u16, error: String, description: String },
    /// The bearer token was refused (401) even after a refresh.
    #[error("the server refused the access token")]
    Unauthorized,
    /// The token's scope does not cover the call (403).
    #[error("the token's scope does not allow this: {0}")]
    Forbidden(String),
    /// The user denied the device login.
    #[error("the login was denied in the browser")]
    AccessDenied,
    /// The device code expired before the user answered.
    #[error("the login code expired before it was approved; run login again")]
    LoginExpired,
    /// The login was cancelled.
    #[error("the login was cancelled")]
    Cancelled,
    /// No usable grant: never logged in, `refresh_until` passed, or revoked.
    #[error("not logged in ({0}); run `strongroom login`")]
    LoginRequired(String),
    /// A vault call answered a non-zero `Result`.
    #[error("vault: {message} (Result {code})")]
    Vault { code: i32, message: String },
    /// An administrative call was refused: a `Result` other than success
    /// (`code`, the product's number, with HTTP 200), or an HTTP 4xx other
    /// than 401 and 403, with the server's reason.
    #[error("refused: {message} ({})", refusal(*.status, *.code))]
    Refused { status: u16, code: Option<i32>, message: String },
    /// The local token cache is unusable.
    #[error("token cache {path}: {problem}")]
    Cache { path: String, problem: String },
    /// Anything about the local configuration.
    #[error("{0}")]
    Config(String),
}

impl ClientError {
    /// The vault `Result` code, if this is a vault refusal.
    pub fn result_code(&self) -> Option<ResultCode> {
        match self {
            ClientError::Vault { code, .. } => result_code(*code),
            _ => None,
        }
    }

    /// True when the request failed without an HTTP answer: the server may
    /// or may not have acted on it. Any HTTP status, even a 5xx, is an answer
    /// and not a transport failure.
    pub fn is_transport(&self) -> bool {
        matches!(self, ClientError::Unreachable(_))
    }
}

fn refusal(status: u16, code: Option<i32>) -> String {
    match code {
        Some(c) => format!("Result {c}"),
        None => format!("HTTP {status}"),
    }
}

/// The named code for a `Result` number, where Strongroom knows it.
pub fn result_code(code: i32) -> Option<ResultCode> {
    ResultCode::from_code(code)
}

pub type ClientResult<T> = Result<T, ClientError>;
