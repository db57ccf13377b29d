//! Prometheus metrics (`GET /metrics`, OpenMetrics text).
//!
//! Counters are atomics, updated on the request path without locks beyond
//! the label families' read lock. Labels are bounded: the route is the
//! router's path template (`unmatched` for anything else), the method one
//! of a fixed few, the status a number. No token, user name or address is
//! ever a label. Process memory and pool usage are read when scraped.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use strongroom_store::{ErrorKind, PoolStatus, StoreObserver};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    /// One of `ErrorKind::as_str`'s few values.
    kind: String,
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.25 ms to about 8 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

/// Every metric the server exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
    tokens_issued: Counter,
    tokens_refreshed: Counter,
    grants_revoked: Counter,
    refresh_reuse: Counter,
    lockouts: Counter,
    batch_jobs: Histogram,
    batch_seconds: Histogram,
    batch_failed: Counter,
    store_failures: Family<FailureLabels, Counter>,
    pool_max: Gauge,
    pool_in_use: Gauge,
    pool_waiting: Gauge,
    resident_bytes: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("strongroom");
        let requests = Family::<RequestLabels, Counter>::default();
        r.register("http_requests", "HTTP requests answered, by route template, method and status", requests.clone());
        let latency: HistogramFamily = Family::new_with_constructor(latency_histogram);
        r.register_with_unit("http_request_duration", "Time to answer a request, by route template", Unit::Seconds, latency.clone());
        let tokens_issued = Counter::default();
        r.register(
            "tokens_issued",
            "Token pairs issued by a device-code exchange (a reissue after a lost answer too) or a password grant",
            tokens_issued.clone(),
        );
        let tokens_refreshed = Counter::default();
        r.register(
            "tokens_refreshed",
            "Token pairs issued by a refresh (rotations and retries of a lost answer)",
            tokens_refreshed.clone(),
        );
        let grants_revoked = Counter::default();
        r.register("grants_revoked", "Grants revoked by their client or by refresh-token reuse", grants_revoked.clone());
        let refresh_reuse = Counter::default();
        r.register(
            "refresh_reuse_detections",
            "Spent refresh tokens presented again, counted when the revocation of their grant commits",
            refresh_reuse.clone(),
        );
        let lockouts = Counter::default();
        r.register("lockouts", "Throttle keys (users, addresses) locked for too many failures", lockouts.clone());
        let batch_jobs = Histogram::new(exponential_buckets(1.0, 2.0, 8));
        r.register(
            "store_commit_batch_jobs",
            "Writes per group commit (SQLite: every write; PostgreSQL: refreshes and Associate)",
            batch_jobs.clone(),
        );
        let batch_seconds = Histogram::new(exponential_buckets(0.000_1, 2.0, 16));
        r.register_with_unit("store_commit_duration", "Group commit time, BEGIN to COMMIT", Unit::Seconds, batch_seconds.clone());
        let batch_failed = Counter::default();
        r.register("store_commit_failures", "Group commits that failed", batch_failed.clone());
        let store_failures = Family::<FailureLabels, Counter>::default();
        r.register(
            "store_failures",
            "Store calls that failed, by kind: unavailable, busy, read_only, corrupt or other (conflict for an unexpected duplicate)",
            store_failures.clone(),
        );
        let pool_max = Gauge::default();
        r.register("store_connections_max", "Database connections the store may use", pool_max.clone());
        let pool_in_use = Gauge::default();
        r.register("store_connections_in_use", "Database connections working on a request", pool_in_use.clone());
        let pool_waiting = Gauge::default();
        r.register("store_waiting", "Store operations waiting for a connection", pool_waiting.clone());
        let resident_bytes = Gauge::default();
        r.register_with_unit("process_resident_memory", "Resident memory of the server process", Unit::Bytes, resident_bytes.clone());
        Metrics {
            registry: r,
            requests,
            latency,
            tokens_issued,
            tokens_refreshed,
            grants_revoked,
            refresh_reuse,
            lockouts,
            batch_jobs,
            batch_seconds,
            batch_failed,
            store_failures,
            pool_max,
            pool_in_use,
            pool_waiting,
            resident_bytes,
        }
    }

    /// One answered request. `route` is the matched path template.
    pub fn request(&self, route: &str, method: &axum::http::Method, status: u16, elapsed: Duration) {
        let method = match *method {
            axum::http::Method::GET => "GET",
            axum::http::Method::POST => "POST",
            axum::http::Method::HEAD => "HEAD",
            axum::http::Method::PUT => "PUT",
            axum::http::Method::DELETE => "DELETE",
            axum::http::Method::OPTIONS => "OPTIONS",
            _ => "other",
        };
        self.requests.get_or_create(&RequestLabels { route: route.to_owned(), method: method.to_owned(), status }).inc();
        self.latency.get_or_create(&RouteLabels { route: route.to_owned() }).observe(elapsed.as_secs_f64());
    }

    pub fn token_issued(&self) {
        self.tokens_issued.inc();
    }
    pub fn token_refreshed(&self) {
        self.tokens_refreshed.inc();
    }
    pub fn grant_revoked(&self) {
        self.grants_revoked.inc();
    }
    pub fn refresh_reuse(&self) {
        self.refresh_reuse.inc();
    }
    pub fn lockouts(&self, n: usize) {
        self.lockouts.inc_by(n as u64);
    }

    /// The OpenMetrics text of every metric, with the gauges read now.
    pub fn render(&self, pool: PoolStatus) -> String {
        let gauge = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        self.pool_max.set(gauge(pool.max));
        self.pool_in_use.set(gauge(pool.in_use));
        self.pool_waiting.set(gauge(pool.waiting));
        if let Some(rss) = resident_bytes() {
            self.resident_bytes.set(i64::try_from(rss).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        out
    }
}

/// Tells [`Metrics`] about the store writer's batches (SQLite's writer thread, PostgreSQL's batch writer).
#[derive(Debug)]
pub struct Observer(pub Arc<Metrics>);

impl StoreObserver for Observer {
    fn batch(&self, jobs: usize, elapsed: Duration, committed: bool) {
        self.0.batch_jobs.observe(jobs as f64);
        self.0.batch_seconds.observe(elapsed.as_secs_f64());
        if !committed {
            self.0.batch_failed.inc();
        }
    }

    fn failed(&self, kind: ErrorKind) {
        self.0.store_failures.get_or_create(&FailureLabels { kind: kind.as_str().to_owned() }).inc();
    }
}

/// `VmRSS` of `/proc/self/status`, in bytes (Linux only).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_memory() {
        let m = Arc::new(Metrics::new());
        m.request("/healthz", &axum::http::Method::GET, 200, Duration::from_millis(2));
        m.token_issued();
        m.lockouts(2);
        // Two batches reach the rendered instance through its observer: 3
        // jobs committed in 1.5 ms, then 5 jobs rolled back in 40 ms.
        let observer = Observer(m.clone());
        observer.batch(3, Duration::from_micros(1500), true);
        observer.batch(5, Duration::from_millis(40), false);
        observer.failed(ErrorKind::Unavailable);
        observer.failed(ErrorKind::Unavailable);
        observer.failed(ErrorKind::Busy);
        let text = m.render(PoolStatus { max: 3, in_use: 1, waiting: 0 });
        for line in [
            "strongroom_store_commit_batch_jobs_count 2",
            "strongroom_store_commit_batch_jobs_sum 8.0",
            // Buckets 1, 2, 4, 8, …: 3 jobs fall in le=4, 5 in le=8.
            "strongroom_store_commit_batch_jobs_bucket{le=\"2.0\"} 0",
            "strongroom_store_commit_batch_jobs_bucket{le=\"4.0\"} 1",
            "strongroom_store_commit_batch_jobs_bucket{le=\"8.0\"} 2",
            "strongroom_store_commit_duration_seconds_count 2",
            "strongroom_store_commit_duration_seconds_sum 0.0415",
            "strongroom_store_commit_failures_total 1",
            "strongroom_store_failures_total{kind=\"unavailable\"} 2",
            "strongroom_store_failures_total{kind=\"busy\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing from\n{text}");
        }
        assert!(text.contains("strongroom_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1"), "{text}");
        assert!(text.contains("strongroom_http_request_duration_seconds_count{route=\"/healthz\"} 1"), "{text}");
        assert!(text.contains("strongroom_tokens_issued_total 1"), "{text}");
        assert!(text.contains("strongroom_lockouts_total 2"), "{text}");
        assert!(text.contains("strongroom_store_connections_max 3"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        if cfg!(target_os = "linux") {
            let rss = text.lines().find(|l| l.starts_with("strongroom_process_resident_memory_bytes ")).unwrap();
            assert!(rss.split(' ').nth(1).unwrap().parse::<u64>().unwrap() > 1 << 20, "{rss}");
        }
    }
}
