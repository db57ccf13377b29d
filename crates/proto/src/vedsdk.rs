//! `/vedsdk`: the WebSDK. JSON keys are matched case-insensitively on input
//! and written in the product's casing on output.

use serde::{Deserialize, Serialize};

/// `GET SystemStatus/Version`. The key is exactly `Version` (vcert), the
/// value a PEP 440 `major.minor.patch` (pyvenafi parses it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct VersionResponse {
    #[serde(rename = "Version")]
    pub version: String,
}

/// A bearer error on `/vedsdk` (401 / 403), RFC 6750 §3.1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct BearerErrorResponse {
    pub error: String,
    pub error_description: String,
}
