//! `GET /vedsdk/Log` (the chained events in the product's `LogEvents`
//! shape), `GET /vedsdk/Log/LogSchema`, and `Metadata/GetItemsForClass`
//! (the custom fields of a class), which VenafiPS calls when a session starts.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use std::collections::HashMap;

use strongroom_core::event::{EventKind, Severity, StoredEvent};
use strongroom_core::time::UnixTime;
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::FolderPath;
use strongroom_core::vault::value;
use strongroom_proto::certificates::{ItemsForClassRequest, MetadataItemsResponse};
use strongroom_proto::vedsdk::{LogApplicationDefinition, LogEvent, LogEventDefinition, LogResponse, LogSchemaResponse};
use strongroom_store::EventFilter;

use super::extract::{CertCall, Vault, VaultCaller, scope};
use super::respond::{CertFailure, SdkFailure, ok};
use super::responses::{CertRefusals, LogAnswer, SdkRefusals};
use crate::state::HttpState;
use strongroom_app::service::tree;
use strongroom_app::service::vault::VaultError;

type Answer = Result<Response, SdkFailure>;

/// The most events one page holds.
const MAX_LIMIT: i64 = 1000;

/// The query of `GET /vedsdk/Log` (a description: the handler reads the
/// names in any case; a name sent without a value is "not given").
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, non_snake_case)]
struct LogQuery {
    /// Only events at or below this folder: `\VED\Policy\…` (a trailing `\` is ignored).
    #[param(example = "\\VED\\Policy\\Team A")]
    Component: Option<String>,
    /// Events at or after this time, UTC ISO 8601.
    #[param(example = "2024-01-02T03:04:05Z")]
    FromTime: Option<String>,
    /// Events before this time, UTC ISO 8601.
    ToTime: Option<String>,
    /// The event id (decimal, or hex with `0x`): an event kind's code (see `Log/LogSchema`).
    Id: Option<String>,
    /// A severity by name (`Alert`, `Warning`, `Notice`, `Info`…) or number 1-8.
    Severity: Option<String>,
    /// The event's place in the chain (`Grouping` of an event).
    Grouping: Option<i64>,
    /// The acting identity, `local:{…}`.
    Text1: Option<String>,
    /// The event's detail, exactly.
    Text2: Option<String>,
    /// The VaultID a vault event names.
    Value1: Option<i64>,
    /// Always 0 in Strongroom's events: any other value matches nothing.
    Value2: Option<i64>,
    /// Events per page, 1 to 1000 (default 100).
    Limit: Option<i64>,
    /// Events to skip first (default 0).
    Offset: Option<i64>,
    /// Strongroom's own: an event kind by name, such as `vault.associated`.
    Kind: Option<String>,
}

fn params(message: String) -> SdkFailure {
    VaultError::params(message).into()
}

/// What the query asks for: the filter, or `None` when it can match nothing.
fn filter_of(q: &HashMap<String, String>) -> Result<Option<EventFilter>, SdkFailure> {
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let time = |k: &str| -> Result<Option<UnixTime>, SdkFailure> {
        get(k)
            .map(|v| {
                value::parse_date(v)
                    .map(|ticks| UnixTime::from_millis(ticks / 10_000))
                    .ok_or_else(|| params(format!("{k} must be UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ).")))
            })
            .transpose()
    };
    let int = |k: &str| -> Result<Option<i64>, SdkFailure> {
        get(k).map(|v| v.parse::<i64>().map_err(|_| params(format!("{k} must be an integer.")))).transpose()
    };
    let limit = int("limit")?.unwrap_or(100);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(params(format!("Limit must be 1 to {MAX_LIMIT}.")));
    }
    let offset = int("offset")?.unwrap_or(0);
    let offset = u32::try_from(offset).map_err(|_| params("Offset must be 0 or more.".into()))?;
    let component = match get("component") {
        None => None,
        Some(dn) => {
            let dn = dn.trim_end_matches('\\');
            let path = FolderPath::parse(dn).map_err(|e| params(format!("Component must be a folder DN under \\VED: {e}.")))?;
            Some(path.key().to_owned())
        }
    };
    let by_id = match get("id") {
        None => None,
        Some(v) => {
            let code = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => i64::from_str_radix(hex, 16),
                None => v.parse::<i64>(),
            }
            .map_err(|_| params("Id must be an event id, decimal or 0x hex.".into()))?;
            match EventKind::from_code(code) {
                Some(k) => Some(k.as_str().to_owned()),
                None => return Ok(None),
            }
        }
    };
    let kind = match (by_id, get("kind").map(str::to_owned)) {
        (Some(a), Some(b)) if a != b => return Ok(None),
        (a, b) => a.or(b),
    };
    let kinds = match get("severity") {
        None => None,
        Some(v) => {
            let s = Severity::parse(v).ok_or_else(|| params(format!("Severity must be one of {}.", severity_names())))?;
            let kinds: Vec<String> = s.kinds().into_iter().map(|k| k.as_str().to_owned()).collect();
            if kinds.is_empty() {
                return Ok(None);
            }
            Some(kinds)
        }
    };
    if int("value2")?.is_some_and(|v| v != 0) {
        return Ok(None);
    }
    let (mut after_seq, mut before_seq) = (None, None);
    if let Some(g) = int("grouping")? {
        after_seq = Some(g.saturating_sub(1));
        before_seq = Some(g.saturating_add(1));
    }
    Ok(Some(EventFilter {
        since: time("fromtime")?,
        until: time("totime")?,
        kind,
        identity: get("text1").map(str::to_owned),
        object: int("value1")?.map(|v| v.to_string()),
        after_seq,
        before_seq,
        newest_first: true,
        limit: u32::try_from(limit).unwrap_or(100),
        viewer: None,
        component,
        kinds,
        detail: get("text2").map(str::to_owned),
        offset,
    }))
}

fn severity_names() -> String {
    Severity::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// A chained event in the product's shape (the mapping `book/src/administration/event-log.md` documents).
pub(crate) fn log_event(se: StoredEvent) -> LogEvent {
    let e = se.event;
    let vault_id = if e.kind.subsystem() == "vault" { e.object.parse::<i64>().unwrap_or(0) } else { 0 };
    let at = e.at.iso8601();
    LogEvent {
        client_timestamp: at.clone(),
        component: se.folder.unwrap_or_else(|| if vault_id != 0 { String::new() } else { e.object.clone() }),
        component_id: vault_id,
        component_subsystem: e.kind.subsystem().to_owned(),
        data: e.client_id,
        grouping: se.seq,
        id: e.kind.code(),
        name: e.kind.as_str().to_owned(),
        server_timestamp: at,
        severity: e.kind.severity().name().to_owned(),
        source_ip: e.source,
        text1: e.identity,
        text2: e.detail,
        value1: vault_id,
        value2: 0,
        request_id: e.request_id,
        object: e.object,
        hash: strongroom_core::hex::encode(&se.hash),
    }
}

/// `GET /vedsdk/Log` with the product's filters (names in any case), any
/// valid scope, the newest first.
#[utoipa::path(
    get,
    path = "/vedsdk/Log",
    tag = "vedsdk",
    description = "The chained event log in the product's `LogEvents` shape, the newest first, `Limit` (default 100, at most 1000) at a time from `Offset`. Parameter names match in any case; a parameter without a value is not given. Any valid token, whatever its scope. A Master Admin sees every event; anyone else only the events they acted in and those on vault entries they may read (Read on an owner, granted to them or a group of theirs). A bad filter is `Result` 9 with the reason in `Error`.",
    security(("bearer" = [])),
    params(LogQuery),
    responses(
        (status = 200, description = "The events, or refused with the product's `Result` code and the reason in `Error`.", body = inline(LogAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn log(
    State(app): State<HttpState>,
    VaultCaller(caller, _): VaultCaller<scope::Any>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer {
    let q: HashMap<String, String> = q.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let Some(filter) = filter_of(&q)? else {
        return Ok(ok(&LogResponse { log_events: Vec::new() }));
    };
    let filter = EventFilter { viewer: caller.viewer(), ..filter };
    let events = app.store.events(filter).await.map_err(VaultError::from)?;
    Ok(ok(&LogResponse { log_events: events.into_iter().map(log_event).collect() }))
}

/// `GET /vedsdk/Log/{guid}`: `GET Log` for one object of the `\VED` tree.
#[utoipa::path(
    get,
    path = "/vedsdk/Log/{guid}",
    tag = "vedsdk",
    description = "`GET Log` (same filters, same visibility: a Master Admin sees every event, anyone else those they acted in \
        and those on vault entries they may read) for one object of the `\\VED` tree, by its GUID with or without braces: \
        a folder's events are those at or below it (`Component`), a local user's or group's those that name it. Any valid \
        token, whatever its scope. An unknown GUID is `Result` 9 with the reason in `Error`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID, with or without braces."), LogQuery),
    responses(
        (status = 200, description = "The events, or refused with the product's `Result` code and the reason in `Error`.", body = inline(LogAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn log_of_object(
    State(app): State<HttpState>,
    VaultCaller(caller, _): VaultCaller<scope::Any>,
    Path(guid): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer {
    let mut q: HashMap<String, String> = q.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let unknown = || params("No object has that GUID.".into());
    let guid = ObjectGuid::parse(&guid).ok_or_else(unknown)?;
    let node = tree::node_by_guid(&app, &guid).await.map_err(VaultError::from)?.ok_or_else(unknown)?;
    let object = match node.kind {
        tree::Kind::Folder(f) => {
            q.insert("component".into(), f.as_str().to_owned());
            None
        }
        tree::Kind::Root => None,
        tree::Kind::IdentityRoot => return Ok(ok(&LogResponse { log_events: Vec::new() })),
        tree::Kind::User(_) | tree::Kind::Group(_) => Some(node.name().to_owned()),
    };
    let Some(filter) = filter_of(&q)? else {
        return Ok(ok(&LogResponse { log_events: Vec::new() }));
    };
    // A user's or group's events name it as their object (`Value1`, a vault id, cannot apply as well).
    let filter = EventFilter { viewer: caller.viewer(), object: object.or(filter.object), ..filter };
    let events = app.store.events(filter).await.map_err(VaultError::from)?;
    Ok(ok(&LogResponse { log_events: events.into_iter().map(log_event).collect() }))
}

/// The one application whose events Strongroom logs.
const APPLICATION_ID: i64 = 0x0300;

/// `GET /vedsdk/Log/LogSchema`, scope `admin:viewlogs`.
#[utoipa::path(
    get,
    path = "/vedsdk/Log/LogSchema",
    tag = "vedsdk",
    description = "Every event Strongroom writes: its `Id` (the group `0x0300` and the kind), its name as `Description`, and what `Text1`, `Text2`, `Value1`, `Data` and `Grouping` hold. Scope `admin:viewlogs`.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The event definitions.", body = LogSchemaResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn log_schema(_: Vault<scope::AdminViewLogs>) -> Answer {
    let definitions = EventKind::ALL
        .iter()
        .map(|k| LogEventDefinition {
            id: k.code(),
            description: k.as_str().to_owned(),
            data_format: String::new(),
            data_title: "Integration".into(),
            data_type: "String".into(),
            grouping_title: "Sequence".into(),
            grouping_type: "Integer".into(),
            text1_title: "Identity".into(),
            text2_title: "Detail".into(),
            value1_title: if k.subsystem() == "vault" { "VaultID".into() } else { String::new() },
            value1_type: "Integer".into(),
            value2_title: String::new(),
            value2_type: "Integer".into(),
        })
        .collect();
    let applications = vec![LogApplicationDefinition { application_name: "Strongroom".into(), id: APPLICATION_ID }];
    Ok(ok(&LogSchemaResponse { applications, definitions, log_result: 0 }))
}

/// `POST /vedsdk/Metadata/GetItemsForClass`: any valid token; the custom
/// fields that apply to `ConfigClass` (every one without it).
#[utoipa::path(
    post,
    path = "/vedsdk/Metadata/GetItemsForClass",
    tag = "vedsdk",
    description = "The custom fields (`strongroom admin fields create`) that apply to `ConfigClass` (VenafiPS's `New-VenafiSession` \
        asks for `X509 Certificate` and `Device`; a class no field applies to has none): `{\"Result\":0,\"Items\":[{Label, Guid, \
        Type, AllowedValues, Classes, …}]}`. Any valid token.",
    security(("bearer" = [])),
    request_body(content = ItemsForClassRequest, description = "A JSON object; keys match in any case."),
    responses((status = 200, description = "The fields.", body = MetadataItemsResponse), CertRefusals),
)]
pub(crate) async fn items_for_class(State(app): State<HttpState>, c: CertCall<scope::Any>) -> Result<Response, CertFailure> {
    let class = c.body.text(&["ConfigClass"])?.filter(|k| !k.trim().is_empty());
    let items = strongroom_app::service::certificates::fields_for_class(&app, class.as_deref())
        .await?
        .iter()
        .map(crate::certificates::field_item)
        .collect();
    Ok(ok(&MetadataItemsResponse { items, locked: None, result: 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn filters_read_the_products_parameters() {
        let f = filter_of(&q(&[
            ("component", "\\VED\\Policy\\Team A\\"),
            ("id", "0x03000001"),
            ("severity", "notice"),
            ("text1", "local:{u}"),
            ("value1", "7"),
            ("limit", "5"),
            ("offset", "10"),
            ("grouping", "3"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(f.component.as_deref(), Some("\\ved\\policy\\team a"));
        assert_eq!(f.kind.as_deref(), Some("user.created"));
        assert!(f.kinds.as_ref().unwrap().contains(&"user.created".to_owned()));
        assert_eq!((f.identity.as_deref(), f.object.as_deref()), (Some("local:{u}"), Some("7")));
        assert_eq!((f.limit, f.offset, f.after_seq, f.before_seq, f.newest_first), (5, 10, Some(2), Some(4), true));
        // Empty values are "not given" (PY drops None; others send `Component=`).
        let f = filter_of(&q(&[("component", ""), ("limit", " ")])).unwrap().unwrap();
        assert_eq!((f.component, f.limit), (None, 100));
        // What can match nothing.
        for nothing in [("id", "1"), ("value2", "3"), ("severity", "Emergency")] {
            assert!(filter_of(&q(&[nothing])).unwrap().is_none(), "{nothing:?}");
        }
        // Bad input is a refusal, never a panic.
        for bad in [
            ("limit", "0"),
            ("limit", "1001"),
            ("offset", "-1"),
            ("component", "Policy\\x"),
            ("fromtime", "yesterday"),
            ("severity", "Loud"),
            ("id", "x"),
            ("value1", "v"),
        ] {
            assert!(filter_of(&q(&[bad])).is_err(), "{bad:?}");
        }
    }
}
