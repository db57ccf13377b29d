//! `POST /vedsdk/oauth/*`: API integrations ("applications"), their rules
//! (the users and groups allowed to use them) and their grants, administered
//! with the product's calls (pyvenafi sends the paths lower-case, the
//! router matches any case). Every call needs a token with
//! scope `admin` (`admin:delete` to delete or revoke) of a Master Admin
//! (Strongroom's OAuth administrator); each change is one [`Admin`] act, its
//! event naming the caller.

use std::collections::{BTreeSet, HashMap};

use axum::extract::State;
use axum::response::Response;

use strongroom_core::identity::IdentityRef;
use strongroom_core::integration::{AllowedUsers, Integration, TokenOverrides};
use strongroom_proto::oauth::{
    OAuthAdminRequest, OAuthApplication, OAuthApplicationRequest, OAuthGrant, OAuthResponse, OAuthResult, OAuthRule,
};
use strongroom_store::GrantSummary;

use super::extract::{Sdk, scope};
use super::respond::{OAuthFailure, ok};
use super::responses::SdkRefusals;
use crate::state::HttpState;
use strongroom_app::admin::oauth::Trustee;
use strongroom_app::admin::{Actor, Admin, AdminError, IntegrationSpec};
use strongroom_app::service::Origin;
use strongroom_app::service::bearer;
use strongroom_app::service::identity::{self as people, Found};
use strongroom_proto::read::{FieldError, SdkBody};

type Answer = Result<Response, OAuthFailure>;

/// The most items one page of `Enumerate…` holds.
const MAX_COUNT: usize = 1000;

impl From<bearer::BearerError> for OAuthFailure {
    fn from(e: bearer::BearerError) -> Self {
        OAuthFailure::Sdk(e.into())
    }
}

impl From<FieldError> for OAuthFailure {
    fn from(e: FieldError) -> Self {
        OAuthFailure::Refused(OAuthResult::InvalidParameters, e.0)
    }
}

impl From<strongroom_store::StoreError> for OAuthFailure {
    fn from(e: strongroom_store::StoreError) -> Self {
        OAuthFailure::Store(e)
    }
}

/// An administrative act's failure, as the product's codes say it;
/// `missing` is the code for "not found" in this call.
fn refused(e: AdminError, missing: OAuthResult) -> OAuthFailure {
    match e {
        AdminError::Invalid(m) => OAuthFailure::Refused(OAuthResult::InvalidParameters, m),
        AdminError::NotFound(m) => OAuthFailure::Refused(missing, format!("{m} not found")),
        AdminError::Exists(m) => OAuthFailure::Refused(OAuthResult::ApplicationAlreadyExists, format!("{m} already exists")),
        AdminError::Store(e) => OAuthFailure::Store(e),
        other => {
            tracing::error!(error = %other, "oauth call failed");
            OAuthFailure::Refused(OAuthResult::Failure, "The request could not be completed.".into())
        }
    }
}

fn invalid(message: &str) -> OAuthFailure {
    OAuthFailure::Refused(OAuthResult::InvalidParameters, message.to_owned())
}

/// A caller who passed: the administrator's handle acting as them, and the body.
struct Call {
    admin: Admin,
    body: SdkBody,
}

impl Call {
    /// The caller must be a Master Admin (the token and scope were checked
    /// by the extractor).
    fn of<S>(app: &HttpState, origin: Origin, sdk: Sdk<S>) -> Result<Call, OAuthFailure> {
        let Sdk { ctx, body, .. } = sdk;
        if !ctx.master_admin {
            return Err(OAuthFailure::Rights);
        }
        let actor = Actor { identity: ctx.grant.user_id.identity(), source: origin.addr, request_id: origin.request_id };
        let admin = Admin {
            store: app.store.clone(),
            clock: app.clock.clone(),
            rng: app.rng.clone(),
            keyring: app.keyring.clone(),
            actor,
            on_behalf_of: None,
        };
        Ok(Call { admin, body })
    }
}

/// The live grants, for the counts and `GetGrants`.
async fn live_grants(admin: &Admin) -> Result<Vec<GrantSummary>, OAuthFailure> {
    admin.list_grants(false).await.map_err(|e| refused(e, OAuthResult::GrantNotFound))
}

fn application(app: &HttpState, i: &Integration, grants: &[GrantSummary]) -> OAuthApplication {
    let s = i.settings(app.tokens);
    let mine: Vec<&GrantSummary> = grants.iter().filter(|g| g.grant.client_id == i.client_id).collect();
    let users: BTreeSet<&str> = mine.iter().map(|g| g.grant.user_id.as_str()).collect();
    let scope = i.max_scope.to_string();
    OAuthApplication {
        id: i.client_id.clone(),
        name: i.name.clone(),
        scope: scope.clone(),
        maximum_scope: scope,
        access_validity: s.access_validity,
        grant_validity: s.grant_validity,
        renewable: s.refreshable,
        grant_count: i64::try_from(mine.len()).unwrap_or(i64::MAX),
        user_count: i64::try_from(users.len()).unwrap_or(i64::MAX),
        disabled: i.disabled,
    }
}

fn answer_application(a: OAuthApplication) -> Response {
    ok(&OAuthResponse { application: Some(a), ..OAuthResponse::success() })
}

fn answer_applications(list: Vec<OAuthApplication>) -> Response {
    ok(&OAuthResponse { applications: Some(list), ..OAuthResponse::success() })
}

fn application_id(b: &SdkBody) -> Result<String, OAuthFailure> {
    b.string(&["ApplicationId", "ApplicationID", "ID", "client_id"])?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| invalid("ApplicationId is required."))
}

/// What an application's fields ask to set (a missing one: not given).
fn spec_of(b: &SdkBody) -> Result<IntegrationSpec, OAuthFailure> {
    // The maximum is what Strongroom keeps: `MaximumScope` (DOC's example says `MaxScope`), else `Scope`.
    let scope = match b.string(&["MaximumScope", "MaxScope"])? {
        Some(s) => Some(s),
        None => b.string(&["Scope"])?,
    };
    let validity = |names: &[&str]| -> Result<Option<i64>, OAuthFailure> {
        match b.int64(names)? {
            Some(v) if v <= 0 => Err(invalid(&format!("{} must be a positive number of seconds.", names[0]))),
            v => Ok(v),
        }
    };
    Ok(IntegrationSpec {
        name: b.string(&["Name"])?,
        scope,
        overrides: TokenOverrides {
            access_validity: validity(&["AccessValidity"])?,
            grant_validity: validity(&["GrantValidity"])?,
            refreshable: b.flag(&["Renewable"])?,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// `Start` (from 0) and `Count` (default and at most 1000) of a page.
fn page<T>(b: &SdkBody, items: Vec<T>) -> Result<Vec<T>, OAuthFailure> {
    let start = b.int64(&["Start", "Offset"])?.unwrap_or(0);
    let start = usize::try_from(start).map_err(|_| invalid("Start must be 0 or more."))?;
    let count = match b.int64(&["Count", "Limit"])? {
        None => MAX_COUNT,
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(MAX_COUNT).min(MAX_COUNT),
        Some(_) => return Err(invalid("Count must be 1 or more.")),
    };
    Ok(items.into_iter().skip(start).take(count).collect())
}

macro_rules! oauth_path {
    ($name:ident, $path:literal, $scope:literal, $desc:literal, $req:ty) => {
        #[utoipa::path(
            post,
            path = $path,
            tag = "oauth",
            description = concat!($desc, " Needs scope `", $scope, "` and a Master Admin (403 `insufficient_rights` otherwise). \
                A refused call is HTTP 200 with `Success` false, the product's `Result` code and `error_description`."),
            security(("bearer" = [])),
            request_body(content = $req, content_type = "application/json"),
            responses(
                (status = 200, description = "`Result` 0 and `Success` true with what the call returns, or the reason it was refused.", body = OAuthResponse),
                SdkRefusals,
            ),
        )]
        #[allow(dead_code)]
        fn $name() {}
    };
}

/// `oauth/CreateApplication`.
pub(crate) async fn create_application(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let id = application_id(&c.body)?;
    let spec = spec_of(&c.body)?;
    if spec.scope.is_none() {
        return Err(invalid("MaximumScope (or Scope) is required."));
    }
    let i = c.admin.create_integration(&id, spec).await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?;
    Ok(answer_application(application(&app, &i, &[])))
}
oauth_path!(
    create_application_doc,
    "/vedsdk/oauth/CreateApplication",
    "admin",
    "Registers an API integration: `ApplicationId` (its client id), `MaximumScope` (or `Scope`), `Name`, `AccessValidity` and `GrantValidity` (seconds), `Renewable`. It admits nobody until rules name users or groups. `Vendor`, `Description` and `Url` are not kept. An existing id is `Result` 19.",
    OAuthApplicationRequest
);

/// `oauth/GetApplication`.
pub(crate) async fn get_application(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let id = application_id(&c.body)?;
    let i = c.admin.store.integration(id.clone()).await?;
    let i = i.ok_or_else(|| OAuthFailure::Refused(OAuthResult::ApplicationNotFound, format!("integration {id} not found")))?;
    Ok(answer_application(application(&app, &i, &live_grants(&c.admin).await?)))
}
oauth_path!(
    get_application_doc,
    "/vedsdk/oauth/GetApplication",
    "admin",
    "One API integration by `ApplicationId`; an unknown one is `Result` 2.",
    OAuthAdminRequest
);

/// `oauth/GetApplications`.
pub(crate) async fn get_applications(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let ids = c.body.strings(&["ApplicationIds", "ApplicationIDs"])?;
    let filter = c.body.string(&["Filter"])?.map(|f| f.trim().to_lowercase()).filter(|f| !f.is_empty());
    let all = c.admin.list_integrations().await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?;
    let grants = live_grants(&c.admin).await?;
    let list = all
        .iter()
        .filter(|i| ids.as_ref().is_none_or(|ids| ids.contains(&i.client_id)))
        .filter(|i| {
            filter.as_ref().is_none_or(|f| i.client_id.to_lowercase().contains(f.as_str()) || i.name.to_lowercase().contains(f.as_str()))
        })
        .map(|i| application(&app, i, &grants))
        .collect();
    Ok(answer_applications(list))
}
oauth_path!(
    get_applications_doc,
    "/vedsdk/oauth/GetApplications",
    "admin",
    "The API integrations `ApplicationIds` lists (unknown ones are left out; all when not given) whose id or name contains `Filter` (any case).",
    OAuthAdminRequest
);

/// `oauth/EnumerateApplications`.
pub(crate) async fn enumerate_applications(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let mut all = c.admin.list_integrations().await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?;
    match c.body.string(&["OrderBy"])?.map(|o| o.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("id") | Some("applicationid") => {}
        Some("name") => all.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then(a.client_id.cmp(&b.client_id))),
        Some(_) => return Err(invalid("OrderBy must be ID or Name.")),
    }
    if c.body.flag(&["Descending"])?.unwrap_or(false) {
        all.reverse();
    }
    let grants = live_grants(&c.admin).await?;
    let list = page(&c.body, all)?.iter().map(|i| application(&app, i, &grants)).collect();
    Ok(answer_applications(list))
}
oauth_path!(
    enumerate_applications_doc,
    "/vedsdk/oauth/EnumerateApplications",
    "admin",
    "Every API integration, by `ID` (or `OrderBy`: `Name`), `Descending` if asked, `Count` (at most and by default 1000) from `Start` (0 the first).",
    OAuthAdminRequest
);

/// `oauth/UpdateApplication`.
pub(crate) async fn update_application(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let fields = c.body.object(&["Application"])?.unwrap_or_default();
    let id = match application_id(&fields) {
        Ok(id) => id,
        Err(_) => application_id(&c.body)?,
    };
    // Both levels: `{Application:{…}}` as the product, or the fields at the top.
    let mut spec = spec_of(&fields)?;
    let top = spec_of(&c.body)?;
    spec.name = spec.name.or(top.name);
    spec.scope = spec.scope.or(top.scope);
    spec.overrides.access_validity = spec.overrides.access_validity.or(top.overrides.access_validity);
    spec.overrides.grant_validity = spec.overrides.grant_validity.or(top.overrides.grant_validity);
    spec.overrides.refreshable = spec.overrides.refreshable.or(top.overrides.refreshable);
    let i = c.admin.update_integration(&id, spec).await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?;
    Ok(answer_application(application(&app, &i, &live_grants(&c.admin).await?)))
}
oauth_path!(
    update_application_doc,
    "/vedsdk/oauth/UpdateApplication",
    "admin",
    "Changes the fields `Application` gives (`ID` or `ApplicationId` names it; a field not given stays). One conditional write: two administrators changing one integration at once both keep their changes.",
    OAuthApplicationRequest
);

/// `oauth/DeleteApplication`.
pub(crate) async fn delete_application(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::AdminDelete>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let id = application_id(&c.body)?;
    c.admin.delete_integration(&id).await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?;
    Ok(ok(&OAuthResponse::success()))
}
oauth_path!(
    delete_application_doc,
    "/vedsdk/oauth/DeleteApplication",
    "admin:delete",
    "Deletes an API integration: its grants end at once (each with its event) and its device codes are dropped.",
    OAuthAdminRequest
);

// ------------------------------------------------------------------ rules

/// The user or group a `…PrefixedUniversal` names, and its label for events.
async fn trustee(app: &HttpState, given: &str) -> Result<(Trustee, String), OAuthFailure> {
    let r = IdentityRef::parse(given).ok_or_else(|| invalid("TrusteePrefixedUniversal must be local:{GUID} of a user or group."))?;
    match people::resolve(app, &r).await? {
        Some(Found::User(u)) => Ok((Trustee::User(u.id.clone()), u.id.identity())),
        Some(Found::Group(g)) => Ok((Trustee::Group(g.id.clone()), g.identity())),
        None => Err(invalid(&format!("No such user or group: {given}."))),
    }
}

fn trustee_of(b: &SdkBody) -> Result<String, OAuthFailure> {
    b.identity(&["TrusteePrefixedUniversal", "Trustee"])?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| invalid("TrusteePrefixedUniversal is required."))
}

/// Every rule of integration `i`: its users, then its groups.
fn rules_of(app: &HttpState, i: &Integration, groups: &HashMap<String, String>) -> Vec<OAuthRule> {
    let s = i.settings(app.tokens);
    let rule = |who: String| OAuthRule {
        application_id: i.client_id.clone(),
        trustee_prefixed_universal: who,
        maximum_scope: i.max_scope.to_string(),
        access_validity: s.access_validity,
        grant_validity: s.grant_validity,
        renewable: s.refreshable,
        description: String::new(),
    };
    let mut out = Vec::new();
    if let AllowedUsers::Only(list) = &i.allowed_users {
        out.extend(list.iter().map(|u| rule(u.identity())));
    }
    out.extend(i.allowed_groups.iter().map(|g| rule(groups.get(g.as_str()).cloned().unwrap_or_else(|| g.identity()))));
    out
}

/// Group identities (`local:{…}`, `LDAP+corp:{…}`) by group id.
async fn group_identities(admin: &Admin) -> Result<HashMap<String, String>, OAuthFailure> {
    let groups = admin.list_groups().await.map_err(|e| refused(e, OAuthResult::RuleNotFound))?;
    Ok(groups.into_iter().map(|g| (g.group.id.as_str().to_owned(), g.group.identity())).collect())
}

/// `oauth/CreateRule`.
pub(crate) async fn create_rule(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let id = application_id(&c.body)?;
    let (who, label) = trustee(&app, &trustee_of(&c.body)?).await?;
    if !c.admin.add_rule(&id, &who, &label).await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))? {
        return Err(OAuthFailure::Refused(
            OAuthResult::RuleAlreadyExists,
            format!("{label} may already use {id} (listed, or the integration admits every user)."),
        ));
    }
    let i = c.admin.store.integration(id.clone()).await?;
    let i = i.ok_or_else(|| OAuthFailure::Refused(OAuthResult::ApplicationNotFound, format!("integration {id} not found")))?;
    let rule = rules_of(&app, &i, &group_identities(&c.admin).await?).into_iter().find(|r| r.trustee_prefixed_universal == label);
    Ok(ok(&OAuthResponse { rule, ..OAuthResponse::success() }))
}
oauth_path!(
    create_rule_doc,
    "/vedsdk/oauth/CreateRule",
    "admin",
    "Lets the user or group `TrusteePrefixedUniversal` names use integration `ApplicationId` (its allow-list). A rule has no settings of its own: the integration's apply (`MaximumScope`, validities and `Description` are not kept). One already there, or a user on an integration that admits every user, is `Result` 20.",
    OAuthAdminRequest
);

async fn rules(app: &HttpState, c: &Call) -> Result<Vec<OAuthRule>, OAuthFailure> {
    let only_app = c.body.string(&["ApplicationId", "ApplicationID"])?.filter(|s| !s.trim().is_empty());
    let only_trustee = match c.body.identity(&["TrusteePrefixedUniversal", "Trustee"])?.filter(|s| !s.trim().is_empty()) {
        Some(t) => Some(trustee(app, &t).await?.1),
        None => None,
    };
    let all = match &only_app {
        Some(id) => {
            let i = c.admin.store.integration(id.clone()).await?;
            vec![i.ok_or_else(|| OAuthFailure::Refused(OAuthResult::ApplicationNotFound, format!("integration {id} not found")))?]
        }
        None => c.admin.list_integrations().await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))?,
    };
    let groups = group_identities(&c.admin).await?;
    Ok(all
        .iter()
        .flat_map(|i| rules_of(app, i, &groups))
        .filter(|r| only_trustee.as_ref().is_none_or(|t| *t == r.trustee_prefixed_universal))
        .collect())
}

/// `oauth/GetRules`.
pub(crate) async fn get_rules(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let list = rules(&app, &c).await?;
    Ok(ok(&OAuthResponse { rules: Some(list), ..OAuthResponse::success() }))
}
oauth_path!(
    get_rules_doc,
    "/vedsdk/oauth/GetRules",
    "admin",
    "The rules of integration `ApplicationId` (every integration's when not given), of `TrusteePrefixedUniversal` only if given: its users, then its groups.",
    OAuthAdminRequest
);

/// `oauth/EnumerateRules`.
pub(crate) async fn enumerate_rules(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let list = page(&c.body, rules(&app, &c).await?)?;
    Ok(ok(&OAuthResponse { rules: Some(list), ..OAuthResponse::success() }))
}
oauth_path!(
    enumerate_rules_doc,
    "/vedsdk/oauth/EnumerateRules",
    "admin",
    "`GetRules`, `Count` (at most and by default 1000) from `Start` (0 the first).",
    OAuthAdminRequest
);

/// Removes one rule: whether it was there.
async fn remove(app: &HttpState, c: &Call, b: &SdkBody) -> Result<bool, OAuthFailure> {
    let id = application_id(b)?;
    let (who, label) = trustee(app, &trustee_of(b)?).await?;
    c.admin.remove_rule(&id, &who, &label).await.map_err(|e| refused(e, OAuthResult::ApplicationNotFound))
}

/// `oauth/DeleteRule`.
pub(crate) async fn delete_rule(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::AdminDelete>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    if !remove(&app, &c, &c.body).await? {
        return Err(OAuthFailure::Refused(OAuthResult::RuleNotFound, "No such rule.".into()));
    }
    Ok(ok(&OAuthResponse::success()))
}
oauth_path!(
    delete_rule_doc,
    "/vedsdk/oauth/DeleteRule",
    "admin:delete",
    "Takes the user or group `TrusteePrefixedUniversal` off integration `ApplicationId`: their tokens through it stop working at their next request. No such rule is `Result` 4.",
    OAuthAdminRequest
);

/// `oauth/DeleteRules`.
pub(crate) async fn delete_rules(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::AdminDelete>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let list =
        c.body.objects(&["Rules"])?.ok_or_else(|| invalid("Rules is required: a list of {ApplicationId, TrusteePrefixedUniversal}."))?;
    let mut missing = 0;
    for r in &list {
        if !remove(&app, &c, r).await? {
            missing += 1;
        }
    }
    if missing > 0 {
        return Err(OAuthFailure::Refused(
            OAuthResult::RuleNotFound,
            format!("{missing} of the rules did not exist; the others were removed."),
        ));
    }
    Ok(ok(&OAuthResponse::success()))
}
oauth_path!(
    delete_rules_doc,
    "/vedsdk/oauth/DeleteRules",
    "admin:delete",
    "`DeleteRule` for each of `Rules` (`[{ApplicationId, TrusteePrefixedUniversal}]`); `Result` 4 if any did not exist (the others are removed).",
    OAuthAdminRequest
);

// ------------------------------------------------------------------ grants

fn wire_grant(g: &GrantSummary) -> OAuthGrant {
    let g = &g.grant;
    let expires = g.access_issued_at.plus_secs(g.access_validity);
    let who = g.user_id.identity();
    OAuthGrant {
        scope: g.scope.to_string(),
        application: g.client_id.clone(),
        grantee_prefixed_universal: who.clone(),
        granted_to_prefixed_universal: who,
        access_issued_on: g.access_issued_at.dotnet_date(),
        access_issued_on_unix_time: g.access_issued_at.secs(),
        access_issued_on_ISO8601: g.access_issued_at.iso8601(),
        grant_issued_on: g.created_at.dotnet_date(),
        grant_issued_on_unix_time: g.created_at.secs(),
        grant_issued_on_ISO8601: g.created_at.iso8601(),
        expires: expires.dotnet_date(),
        expires_unix_time: expires.secs(),
        expires_ISO8601: expires.iso8601(),
        valid_for: g.access_validity,
        grant_id: g.id.as_str().to_owned(),
    }
}

/// The user a `GranteePrefixedUniversal` names (a group's grants are its members').
async fn grantee(app: &HttpState, b: &SdkBody) -> Result<Option<Found>, OAuthFailure> {
    let Some(given) = b.identity(&["GranteePrefixedUniversal", "Grantee"])?.filter(|s| !s.trim().is_empty()) else { return Ok(None) };
    let r = IdentityRef::parse(&given).ok_or_else(|| invalid("GranteePrefixedUniversal must be local:{GUID} of a user."))?;
    match people::resolve(app, &r).await? {
        Some(found) => Ok(Some(found)),
        None => Err(OAuthFailure::Refused(OAuthResult::GrantNotFound, format!("No such user: {given}."))),
    }
}

/// The live grants the body's `GranteePrefixedUniversal` and `ApplicationId` select.
async fn selected(app: &HttpState, c: &Call) -> Result<Vec<GrantSummary>, OAuthFailure> {
    let only_app = c.body.string(&["ApplicationId", "ApplicationID"])?.filter(|s| !s.trim().is_empty());
    let members: Option<Vec<String>> = match grantee(app, &c.body).await? {
        None => None,
        Some(Found::User(u)) => Some(vec![u.id.as_str().to_owned()]),
        Some(Found::Group(g)) => Some(app.store.members_of(g.id.clone()).await?.into_iter().map(|u| u.id.as_str().to_owned()).collect()),
    };
    Ok(live_grants(&c.admin)
        .await?
        .into_iter()
        .filter(|g| only_app.as_ref().is_none_or(|a| *a == g.grant.client_id))
        .filter(|g| members.as_ref().is_none_or(|m| m.iter().any(|u| u == g.grant.user_id.as_str())))
        .collect())
}

/// `oauth/GetGrants`.
pub(crate) async fn get_grants(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let list = selected(&app, &c).await?.iter().map(wire_grant).collect();
    Ok(ok(&OAuthResponse { grants: Some(list), ..OAuthResponse::success() }))
}
oauth_path!(
    get_grants_doc,
    "/vedsdk/oauth/GetGrants",
    "admin",
    "The live grants of `GranteePrefixedUniversal` (a user, or a group's members) and/or of integration `ApplicationId`; every live grant when neither is given. Oldest first.",
    OAuthAdminRequest
);

/// `oauth/EnumerateGrants`.
pub(crate) async fn enumerate_grants(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let mut all = selected(&app, &c).await?;
    if c.body.flag(&["Descending"])?.unwrap_or(false) {
        all.reverse();
    }
    let list = page(&c.body, all)?.iter().map(wire_grant).collect();
    Ok(ok(&OAuthResponse { grants: Some(list), ..OAuthResponse::success() }))
}
oauth_path!(
    enumerate_grants_doc,
    "/vedsdk/oauth/EnumerateGrants",
    "admin",
    "`GetGrants`, oldest first (newest with `Descending`), `Count` (at most and by default 1000) from `Start` (0 the first).",
    OAuthAdminRequest
);

/// `oauth/GrantCount`.
pub(crate) async fn grant_count(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let n = selected(&app, &c).await?.len();
    Ok(ok(&OAuthResponse { grant_count: Some(i64::try_from(n).unwrap_or(i64::MAX)), ..OAuthResponse::success() }))
}
oauth_path!(
    grant_count_doc,
    "/vedsdk/oauth/GrantCount",
    "admin",
    "How many live grants `GetGrants` would list: `GrantCount`.",
    OAuthAdminRequest
);

/// `oauth/UserCount`.
pub(crate) async fn user_count(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::Admin>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let users: BTreeSet<String> = selected(&app, &c).await?.into_iter().map(|g| g.grant.user_id.as_str().to_owned()).collect();
    Ok(ok(&OAuthResponse { user_count: Some(i64::try_from(users.len()).unwrap_or(i64::MAX)), ..OAuthResponse::success() }))
}
oauth_path!(
    user_count_doc,
    "/vedsdk/oauth/UserCount",
    "admin",
    "How many users hold the live grants `GetGrants` would list: `UserCount`.",
    OAuthAdminRequest
);

/// `oauth/RevokeGrants`.
pub(crate) async fn revoke_grants(State(app): State<HttpState>, origin: Origin, sdk: Sdk<scope::AdminDelete>) -> Answer {
    let c = Call::of(&app, origin, sdk)?;
    let only_app = c.body.string(&["ApplicationId", "ApplicationID"])?.filter(|s| !s.trim().is_empty());
    let who = grantee(&app, &c.body).await?;
    let users: Option<Vec<strongroom_core::identity::User>> = match who {
        None => None,
        Some(Found::User(u)) => Some(vec![u]),
        Some(Found::Group(g)) => Some(app.store.members_of(g.id.clone()).await?),
    };
    let revoked = match (&only_app, &users) {
        (None, None) => return Err(invalid("GranteePrefixedUniversal or ApplicationId is required.")),
        // A user's every grant: one statement and one event (`Revoke-VdcGrant`).
        (None, Some(users)) => {
            let mut n = 0;
            for u in users {
                n += c.admin.revoke_user_grants(&u.name).await.map_err(|e| refused(e, OAuthResult::GrantNotFound))?;
            }
            n
        }
        (Some(app_id), None) => {
            c.admin.revoke_integration_grants(app_id, None).await.map_err(|e| refused(e, OAuthResult::GrantNotFound))?
        }
        (Some(app_id), Some(users)) => {
            let mut n = 0;
            for u in users {
                n += c.admin.revoke_integration_grants(app_id, Some(&u.id)).await.map_err(|e| refused(e, OAuthResult::GrantNotFound))?;
            }
            n
        }
    };
    Ok(ok(&OAuthResponse { revoked: Some(i64::try_from(revoked).unwrap_or(i64::MAX)), ..OAuthResponse::success() }))
}
oauth_path!(
    revoke_grants_doc,
    "/vedsdk/oauth/RevokeGrants",
    "admin:delete",
    "Revokes at once the live grants of `GranteePrefixedUniversal` (a user, or each member of a group) and/or of integration `ApplicationId`, each with its event naming the caller; `Revoked` says how many.",
    OAuthAdminRequest
);
