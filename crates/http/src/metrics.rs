//! Prometheus metrics (`GET /metrics`, OpenMetrics text).
//!
//! Counters are atomics, updated on the request path without locks beyond
//! the label families' read lock. Labels are bounded: the route is the
//! router's path template (`unmatched` for anything else), the method one
//! of a fixed few, the status a number. No token, user name or address is
//! ever a label. Pool usage and the process's own metrics (the standard
//! `process_*` names dashboards expect, from `/proc`) are read when scraped;
//! `strongroom_build_info` carries the version.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use strongroom_app::{GrantType, KeyGenOutcome, Observer as AppObserver};

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrantLabels {
    /// `password`, `device`, `jwt` or `certificate`.
    grant_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyFetchLabels {
    /// `ok` or `failed`.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyGenLabels {
    /// One of `KeyGenOutcome::label`'s five values.
    outcome: &'static str,
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
    grants_issued: Family<GrantLabels, Counter>,
    grants_refused: Family<GrantLabels, Counter>,
    key_fetches: Family<KeyFetchLabels, Counter>,
    key_generations: Family<KeyGenLabels, Counter>,
    batch_jobs: Histogram,
    batch_seconds: Histogram,
    batch_failed: Counter,
    store_failures: Family<FailureLabels, Counter>,
    pool_max: Gauge,
    pool_in_use: Gauge,
    pool_waiting: Gauge,
    store_calls: Counter,
    /// Held while `store_calls` catches up with the store's own count (two renders at once
    /// would both add the difference).
    store_calls_sync: std::sync::Mutex<()>,
    keys_in_progress: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The application's outcomes, counted (each once its write committed).
impl AppObserver for Metrics {
    fn token_issued(&self) {
        Metrics::token_issued(self);
    }
    fn grant_issued(&self, kind: GrantType) {
        Metrics::grant_issued(self, kind);
    }
    fn grant_refused(&self, kind: GrantType) {
        Metrics::grant_refused(self, kind);
    }
    fn key_fetch(&self, ok: bool) {
        Metrics::key_fetch(self, ok);
    }
    fn token_refreshed(&self) {
        Metrics::token_refreshed(self);
    }
    fn grant_revoked(&self) {
        Metrics::grant_revoked(self);
    }
    fn refresh_reuse(&self) {
        Metrics::refresh_reuse(self);
    }
    fn lockouts(&self, n: usize) {
        Metrics::lockouts(self, n);
    }
    fn key_generation(&self, outcome: KeyGenOutcome) {
        self.key_generations.get_or_create(&KeyGenLabels { outcome: outcome.label() }).inc();
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut root = Registry::default();
        root.register_collector(Box::new(ProcessCollector));
        let r = root.sub_registry_with_prefix("strongroom");
        r.register("build", "The version of strongroom serving", Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]));
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
        let grants_issued = Family::<GrantLabels, Counter>::default();
        r.register("grants_issued", "New grants, by grant type: password, device, jwt or certificate", grants_issued.clone());
        let grants_refused = Family::<GrantLabels, Counter>::default();
        r.register(
            "grants_refused",
            "Machine grant requests refused (a bad, replayed or unmapped JWT or certificate), by grant type: jwt or certificate",
            grants_refused.clone(),
        );
        let key_fetches = Family::<KeyFetchLabels, Counter>::default();
        r.register("jwt_key_fetches", "Fetches of JWT issuers' keys (JWKS), by outcome: ok or failed", key_fetches.clone());
        let store_calls = Counter::default();
        r.register(
            "store_calls",
            "Calls the store answered: each one round trip to a reader, the writer or the database",
            store_calls.clone(),
        );
        let keys_in_progress = Gauge::default();
        r.register(
            "certificate_keys_in_progress",
            "Server-made RSA keys waiting for their turn or being made now",
            keys_in_progress.clone(),
        );
        let key_generations = Family::<KeyGenLabels, Counter>::default();
        r.register(
            "certificate_key_generations",
            "Requests for server-made RSA keys, by outcome: generated, orphaned (made after the request was gone), abandoned \
             (gone before its turn: nothing made), refused_identity or refused_busy (429)",
            key_generations.clone(),
        );
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
        Metrics {
            registry: root,
            requests,
            latency,
            tokens_issued,
            tokens_refreshed,
            grants_revoked,
            refresh_reuse,
            lockouts,
            grants_issued,
            grants_refused,
            key_fetches,
            key_generations,
            batch_jobs,
            batch_seconds,
            batch_failed,
            store_failures,
            pool_max,
            pool_in_use,
            pool_waiting,
            store_calls,
            store_calls_sync: std::sync::Mutex::default(),
            keys_in_progress,
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
    /// A new grant of `kind` (its first pair is counted by [`Metrics::token_issued`]).
    pub fn grant_issued(&self, kind: GrantType) {
        self.grants_issued.get_or_create(&GrantLabels { grant_type: kind.label() }).inc();
    }
    pub fn grant_refused(&self, kind: GrantType) {
        self.grants_refused.get_or_create(&GrantLabels { grant_type: kind.label() }).inc();
    }
    pub fn key_fetch(&self, ok: bool) {
        self.key_fetches.get_or_create(&KeyFetchLabels { outcome: if ok { "ok" } else { "failed" } }).inc();
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

    /// The OpenMetrics text of every metric, with the gauges read now: the store's pool, and
    /// the server-made keys in progress.
    pub fn render(&self, pool: PoolStatus, keys_in_progress: usize) -> String {
        let gauge = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        self.keys_in_progress.set(gauge(keys_in_progress));
        {
            let _one_at_a_time = self.store_calls_sync.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.store_calls.inc_by(pool.calls.saturating_sub(self.store_calls.get()));
        }
        self.pool_max.set(gauge(pool.max));
        self.pool_in_use.set(gauge(pool.in_use));
        self.pool_waiting.set(gauge(pool.waiting));
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

/// The process's own metrics under the names every Prometheus client
/// library exports (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
/// …), read from `/proc` at each scrape (Linux; elsewhere none).
#[derive(Debug)]
struct ProcessCollector;

/// `/proc` counts CPU time in clock ticks of `USER_HZ`, which Linux fixes at
/// 100 for every architecture it exports `/proc` times on.
const TICKS_PER_SECOND: f64 = 100.0;

/// What one scrape reads of the process.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct ProcessStats {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<i64>,
    virtual_bytes: Option<i64>,
    open_fds: Option<i64>,
    max_fds: Option<i64>,
    start_time_seconds: Option<f64>,
}

impl ProcessStats {
    fn read() -> ProcessStats {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let boot = std::fs::read_to_string("/proc/stat").ok();
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let open_fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as i64);
        ProcessStats { open_fds, ..ProcessStats::parse(stat.as_deref(), boot.as_deref(), status.as_deref(), limits.as_deref()) }
    }

    /// From the texts of `/proc/self/stat`, `/proc/stat`, `/proc/self/status` and `/proc/self/limits`.
    fn parse(stat: Option<&str>, boot: Option<&str>, status: Option<&str>, limits: Option<&str>) -> ProcessStats {
        // stat(5): the fields after the command name's closing parenthesis, the first being field 3.
        let fields: Vec<&str> =
            stat.and_then(|s| s.rsplit_once(')')).map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        let cpu_seconds = field(14).zip(field(15)).map(|(u, s)| (u + s) as f64 / TICKS_PER_SECOND);
        let virtual_bytes = field(23).and_then(|v| i64::try_from(v).ok());
        let btime = boot.and_then(|b| b.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok()));
        let start_time_seconds = btime.zip(field(22)).map(|(b, ticks)| b as f64 + ticks as f64 / TICKS_PER_SECOND);
        let resident_bytes = status
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmRSS:")?.trim().trim_end_matches("kB").trim().parse::<i64>().ok()))
            .map(|kib| kib * 1024);
        let max_fds = limits.and_then(|l| {
            let line = l.lines().find(|l| l.starts_with("Max open files"))?;
            line.trim_start_matches("Max open files").split_whitespace().next()?.parse::<i64>().ok()
        });
        ProcessStats { cpu_seconds, resident_bytes, virtual_bytes, open_fds: None, max_fds, start_time_seconds }
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let p = ProcessStats::read();
        if let Some(v) = p.cpu_seconds {
            let m = ConstCounter::new(v);
            m.encode(encoder.encode_descriptor(
                "process_cpu",
                "Total user and system CPU time spent",
                Some(&Unit::Seconds),
                m.metric_type(),
            )?)?;
        }
        let gauges: [(&str, &str, Option<Unit>, Option<i64>); 4] = [
            ("process_resident_memory", "Resident memory size", Some(Unit::Bytes), p.resident_bytes),
            ("process_virtual_memory", "Virtual memory size", Some(Unit::Bytes), p.virtual_bytes),
            ("process_open_fds", "Open file descriptors", None, p.open_fds),
            ("process_max_fds", "The most file descriptors the process may open", None, p.max_fds),
        ];
        for (name, help, unit, value) in gauges {
            if let Some(v) = value {
                let m = ConstGauge::new(v);
                m.encode(encoder.encode_descriptor(name, help, unit.as_ref(), m.metric_type())?)?;
            }
        }
        if let Some(v) = p.start_time_seconds {
            let m = ConstGauge::new(v);
            m.encode(encoder.encode_descriptor(
                "process_start_time",
                "Start time of the process since the Unix epoch",
                Some(&Unit::Seconds),
                m.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_figures_are_read_from_proc_texts() {
        // A command name with a space and a parenthesis, as stat(5) allows.
        let stat =
            "4242 (strong room) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 12345 1000000000 5000 18446744073709551615";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 99\n";
        let status = "Name:\tstrongroom\nVmRSS:\t   51200 kB\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            65536                65536                files\n";
        let p = ProcessStats::parse(Some(stat), Some(boot), Some(status), Some(limits));
        assert_eq!(p.cpu_seconds, Some(3.0), "250 + 50 ticks at 100 a second");
        assert_eq!(p.start_time_seconds, Some(1_700_000_123.45));
        assert_eq!(p.virtual_bytes, Some(1_000_000_000));
        assert_eq!(p.resident_bytes, Some(51_200 * 1024));
        assert_eq!(p.max_fds, Some(65536));
        assert_eq!(ProcessStats::parse(None, None, None, None), ProcessStats::default());
    }

    #[test]
    fn renders_counters_histograms_and_memory() {
        let m = Arc::new(Metrics::new());
        m.request("/healthz", &axum::http::Method::GET, 200, Duration::from_millis(2));
        m.token_issued();
        m.lockouts(2);
        AppObserver::key_generation(&*m, KeyGenOutcome::Generated);
        AppObserver::key_generation(&*m, KeyGenOutcome::RefusedIdentity);
        // Two batches reach the rendered instance through its observer: 3
        // jobs committed in 1.5 ms, then 5 jobs rolled back in 40 ms.
        let observer = Observer(m.clone());
        observer.batch(3, Duration::from_micros(1500), true);
        observer.batch(5, Duration::from_millis(40), false);
        observer.failed(ErrorKind::Unavailable);
        observer.failed(ErrorKind::Unavailable);
        observer.failed(ErrorKind::Busy);
        let text = m.render(PoolStatus { max: 3, in_use: 1, waiting: 0, calls: 7 }, 2);
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
        assert!(text.contains("strongroom_certificate_key_generations_total{outcome=\"generated\"} 1"), "{text}");
        assert!(text.contains("strongroom_certificate_key_generations_total{outcome=\"refused_identity\"} 1"), "{text}");
        assert!(text.contains("strongroom_certificate_keys_in_progress 2"), "{text}");
        assert!(text.contains("strongroom_store_calls_total 7"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        if cfg!(target_os = "linux") {
            let value = |name: &str| -> f64 {
                let line =
                    text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} missing from\n{text}"));
                line.split(' ').nth(1).unwrap().parse().unwrap()
            };
            assert!(value("process_resident_memory_bytes") > f64::from(1 << 20));
            assert!(value("process_open_fds") >= 3.0);
            assert!(value("process_cpu_seconds_total") >= 0.0);
            assert!(value("process_start_time_seconds") > 1.6e9, "{}", value("process_start_time_seconds"));
            assert!(value("process_max_fds") >= value("process_open_fds"));
        }
        assert!(text.contains(&format!("strongroom_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"))), "{text}");
    }
}
