//! The admin console (`/admin`) over HTTP, as a browser without JavaScript
//! uses it: sign-in, each page, each action's effect and its event naming
//! the signed-in person, forged posts refused, a person without rights
//! seeing nothing and refused on every post, and the session's limits on
//! the manual clock.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use strongroom_core::secret::Secret;
use strongroom_core::vault::Rights;
use strongroom_store::EventFilter;

use crate::support::{PASSWORD, TestServer, hidden_field};

/// One browser on the console: its cookies and anti-forgery token.
pub struct Console<'a> {
    s: &'a TestServer,
    pub cookies: BTreeMap<String, String>,
    pub csrf: String,
}

impl<'a> Console<'a> {
    /// Opens `/admin` (the sign-in form, setting the anti-forgery cookie).
    pub async fn open(s: &'a TestServer) -> Console<'a> {
        let mut c = Console { s, cookies: BTreeMap::new(), csrf: String::new() };
        let (st, html) = c.get("/admin").await;
        assert_eq!(st, StatusCode::OK, "{html}");
        assert!(html.contains("Sign in to the admin console"), "{html}");
        c.csrf = hidden_field(&html, "csrf").unwrap();
        c
    }

    /// Opens the console and signs in as `user`.
    pub async fn signed_in(s: &'a TestServer, user: &str) -> Console<'a> {
        let mut c = Console::open(s).await;
        let (st, html) = c.sign_in(user, PASSWORD).await;
        assert_eq!(st, StatusCode::SEE_OTHER, "{html}");
        c
    }

    pub async fn sign_in(&mut self, user: &str, password: &str) -> (StatusCode, String) {
        self.post("/admin", &[("username", user), ("password", password)]).await
    }

    fn absorb(&mut self, headers: &HeaderMap) {
        strongroom_testkit::page::absorb_cookies(&mut self.cookies, headers);
    }

    fn cookie_header(&self) -> String {
        strongroom_testkit::page::cookie_header(&self.cookies)
    }

    pub async fn get(&mut self, path: &str) -> (StatusCode, String) {
        let r = self.s.http.get(self.s.at(path)).header("cookie", self.cookie_header()).send().await.unwrap();
        let st = r.status();
        if st == StatusCode::OK {
            assert_headers(r.headers());
        }
        self.absorb(r.headers());
        (st, r.text().await.unwrap())
    }

    /// Posts `form` with the anti-forgery field, the cookies and `Origin`, as the page does.
    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let mut form = form.to_vec();
        let csrf = self.csrf.clone();
        form.push(("csrf", &csrf));
        self.post_raw(path, &form, Some(&self.s.url.clone()), true).await
    }

    /// Posts exactly `form`, with `origin` and (or not) the cookies.
    pub async fn post_raw(&mut self, path: &str, form: &[(&str, &str)], origin: Option<&str>, cookies: bool) -> (StatusCode, String) {
        let mut req = self.s.http.post(self.s.at(path)).form(form);
        if cookies {
            req = req.header("cookie", self.cookie_header());
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = req.send().await.unwrap();
        let st = r.status();
        assert_eq!(r.headers()["cache-control"], "no-store");
        self.absorb(r.headers());
        (st, r.text().await.unwrap())
    }
}

fn assert_headers(h: &HeaderMap) {
    assert!(h["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"), "{h:?}");
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(h["x-frame-options"], "DENY");
}

/// The rows of a page's (first) table.
fn table(html: &str) -> &str {
    html.split("<tbody>").nth(1).and_then(|t| t.split("</tbody>").next()).unwrap_or("")
}

async fn master(s: &TestServer, name: &str) -> strongroom_core::identity::User {
    s.admin.create_user(name, &Secret::new(PASSWORD), true).await.unwrap()
}

/// Events of `kind`, newest last.
async fn events(s: &TestServer, kind: &str) -> Vec<strongroom_core::event::Event> {
    let f = EventFilter { kind: Some(kind.into()), limit: 10_000, ..Default::default() };
    s.store.events(f).await.unwrap().into_iter().map(|e| e.event).collect()
}

async fn event_count(s: &TestServer) -> usize {
    s.store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap().len()
}

#[tokio::test]
async fn sign_in_then_every_page_and_action_with_its_event() {
    let s = TestServer::start().await;
    let root = master(&s, "root").await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;

    // Sign-in: the guessing limits' wrong password first, then the session.
    let mut c = Console::open(&s).await;
    let (st, html) = c.sign_in("root", "wrong password!").await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(html.contains("wrong"), "{html}");
    let r = s
        .http
        .post(s.at("/admin"))
        .header("cookie", c.cookie_header())
        .header("origin", &s.url)
        .form(&[("username", "root"), ("password", PASSWORD), ("csrf", &c.csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/admin");
    let session_cookie =
        r.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).find(|v| v.starts_with("sr_admin=")).unwrap();
    assert!(
        session_cookie.contains("HttpOnly") && session_cookie.contains("SameSite=Strict") && session_cookie.contains("Path=/admin"),
        "{session_cookie}"
    );
    c.absorb(r.headers());

    let (st, home) = c.get("/admin").await;
    assert_eq!(st, StatusCode::OK);
    assert!(home.contains("Signed in as <strong>root</strong>") && home.contains("Master Admin"), "{home}");
    for (path, heading) in [
        ("/admin/integrations", "Integrations"),
        ("/admin/users", "Users and groups"),
        ("/admin/folders", "Folders and permissions"),
        ("/admin/grants", "Grants"),
        ("/admin/log", "Event log"),
    ] {
        let (st, html) = c.get(path).await;
        assert_eq!(st, StatusCode::OK, "{path}: {html}");
        assert!(html.contains(&format!("<h1>{heading}</h1>")), "{path}: {html}");
        assert!(html.contains("aria-current=\"page\""), "{path}");
    }
    let me = root.id.identity();

    // Integrations: create, edit (scope, users, groups, disabled), delete.
    s.admin.create_group("ops").await.unwrap();
    let (st, html) = c
        .post("/admin/integrations/create", &[("client_id", "ci"), ("name", "CI"), ("scope", "restricted:manage"), ("users", "alice")])
        .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("Integration ci created."), "{html}");
    let i = s.store.integration("ci".into()).await.unwrap().unwrap();
    assert_eq!(i.allowed_users, strongroom_core::integration::AllowedUsers::Only(vec![alice.id.clone()]));
    assert_eq!(events(&s, "integration.created").await.last().unwrap().identity, me);
    let (st, html) = c.get("/admin/integrations?edit=ci").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("Edit <code>ci</code>"), "{html}");
    let (st, html) = c
        .post(
            "/admin/integrations/update",
            &[("client_id", "ci"), ("name", "CI"), ("scope", "configuration"), ("users", ""), ("groups", "ops"), ("disabled", "1")],
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let i = s.store.integration("ci".into()).await.unwrap().unwrap();
    assert_eq!((i.max_scope.to_string().as_str(), i.disabled, i.allowed_groups.len()), ("configuration", true, 1));
    assert_eq!(events(&s, "integration.updated").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/integrations/update", &[("client_id", "ci"), ("scope", "no such scope!")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    let (st, _) = c.post("/admin/integrations/create", &[("client_id", "ci"), ("scope", "configuration")]).await;
    assert_eq!(st, StatusCode::CONFLICT);
    let (st, html) = c.post("/admin/integrations/delete", &[("client_id", "ci")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(s.store.integration("ci".into()).await.unwrap().is_none());
    assert_eq!(events(&s, "integration.deleted").await.last().unwrap().identity, me);
    let (st, _) = c.post("/admin/integrations/delete", &[("client_id", "ci")]).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Users and groups.
    let (st, html) = c.post("/admin/users/create", &[("name", "bob"), ("password", PASSWORD)]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(events(&s, "user.created").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/users/disable", &[("name", "bob"), ("action", "disable")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(s.store.user_by_name("bob".into()).await.unwrap().unwrap().0.disabled);
    assert_eq!(events(&s, "user.disabled").await.last().unwrap().identity, me);
    c.post("/admin/users/disable", &[("name", "bob"), ("action", "enable")]).await;
    assert!(!s.store.user_by_name("bob".into()).await.unwrap().unwrap().0.disabled);
    let (st, _) = c.post("/admin/groups/create", &[("name", "devs")]).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(events(&s, "group.created").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/groups/members", &[("group", "devs"), ("user", "bob"), ("action", "add")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(s.admin.members("devs").await.unwrap().len(), 1);
    assert_eq!(events(&s, "group.member_added").await.last().unwrap().identity, me);
    let (_, html) = c.get("/admin/users").await;
    assert!(html.contains("Remove bob from devs"), "{html}");

    // Folders: explicit and effective rights, inherited from a folder above and a group.
    s.admin.create_folder("\\VED\\Policy\\Team\\App").await.unwrap();
    let (st, html) = c
        .post(
            "/admin/folders/rights",
            &[("folder", "\\VED\\Policy\\Team"), ("kind", "group"), ("name", "devs"), ("rights", "read"), ("rights", "write")],
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let (st, _) = c
        .post("/admin/folders/rights", &[("folder", "\\VED\\Policy\\Team\\App"), ("kind", "user"), ("name", "bob"), ("rights", "view")])
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(events(&s, "folder.rights_changed").await.last().unwrap().identity, me);
    let (eff, _) = s.admin.effective_rights("\\VED\\Policy\\Team\\App", "bob").await.unwrap();
    assert_eq!(eff, Rights::READ.union(Rights::WRITE).union(Rights::VIEW));
    let (st, html) = c.get("/admin/folders?folder=%5CVED%5CPolicy%5CTeam%5CApp&user=bob").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("<td>view</td>"), "explicit: {html}");
    assert!(html.contains("(inherited) to group <strong>devs</strong>") && html.contains("(this folder) to the user"), "{html}");
    // Revoke: no rights there any more.
    c.post("/admin/folders/rights", &[("folder", "\\VED\\Policy\\Team\\App"), ("kind", "user"), ("name", "bob")]).await;
    let (eff, _) = s.admin.effective_rights("\\VED\\Policy\\Team\\App", "bob").await.unwrap();
    assert_eq!(eff, Rights::READ.union(Rights::WRITE));
    let (st, _) =
        c.post("/admin/folders/rights", &[("folder", "\\VED\\Nope"), ("kind", "user"), ("name", "bob"), ("rights", "read")]).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) =
        c.post("/admin/folders/rights", &[("folder", "\\VED\\Policy\\Team"), ("kind", "user"), ("name", "bob"), ("rights", "fly")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Remove the member: they lose the group's rights.
    c.post("/admin/groups/members", &[("group", "devs"), ("user", "bob"), ("action", "remove")]).await;
    assert!(s.admin.members("devs").await.unwrap().is_empty());
    assert_eq!(events(&s, "group.member_removed").await.last().unwrap().identity, me);

    // Grants: the list, filtered, and a revocation that ends the token.
    let t = s.tokens_for(&alice, "app", "restricted:manage").await;
    let access = t["access_token"].as_str().unwrap();
    let (_, html) = c.get("/admin/grants?user=ALICE").await;
    assert!(html.contains("1 live grants"), "{html}");
    let (_, html) = c.get("/admin/grants?integration=other").await;
    assert!(html.contains("0 live grants"), "{html}");
    let (_, html) = c.get("/admin/integrations").await;
    assert!(html.contains("<td>1</td>"), "grant count: {html}");
    let grant = s.admin.list_grants(false).await.unwrap()[0].grant.id.as_str().to_owned();
    let (st, html) = c.post("/admin/grants/revoke", &[("grant", &grant)]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let (st, _) = s.get_bearer("/vedauth/authorize/verify", access).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert_eq!(events(&s, "grant.revoked").await.last().unwrap().identity, me);
    let (st, _) = c.post("/admin/grants/revoke", &[("grant", &grant)]).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // The log: newest first, filters, pages.
    let (_, html) = c.get("/admin/log").await;
    let rows = table(&html);
    let newest = rows.find("grant.revoked").unwrap();
    assert!(newest < rows.find("user.created").unwrap(), "newest first");
    let (_, html) = c.get("/admin/log?kind=group.created&identity=root").await;
    assert!(table(&html).contains("group.created") && !table(&html).contains("user.created"), "{html}");
    for n in 0..60 {
        s.admin.create_group(&format!("g{n}")).await.unwrap();
    }
    let (_, html) = c.get("/admin/log").await;
    assert!(html.contains("id=\"older\""), "a second page");
    let (st, html) = c.get("/admin/log?page=1").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("Page 2"), "{html}");
    let future = "2999-01-01T00:00";
    let (_, html) = c.get(&format!("/admin/log?from={future}")).await;
    assert!(html.contains("No events."), "{html}");
    let (st, _) = c.get("/admin/log?from=yesterday").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = c.get("/admin/log?kind=no.such").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Sign out: the session is gone.
    let (st, _) = c.post("/admin/signout", &[]).await;
    assert_eq!(st, StatusCode::SEE_OTHER);
    let (st, html) = c.get("/admin").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("Sign in to the admin console"));
    let (st, _) = c.get("/admin/users").await;
    assert_eq!(st, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn forged_posts_are_refused_and_change_nothing() {
    let s = TestServer::start().await;
    master(&s, "root").await;
    let mut c = Console::signed_in(&s, "root").await;
    let before = event_count(&s).await;
    let csrf = c.csrf.clone();
    let url = s.url.clone();
    let form = |csrf: &'static str| vec![("name", "mallory"), ("password", PASSWORD), ("master_admin", "1"), ("csrf", csrf)];
    let leaked: &'static str = Box::leak(csrf.clone().into_boxed_str());
    for (what, fields, origin, cookies) in [
        ("no token", vec![("name", "mallory"), ("password", PASSWORD), ("master_admin", "1")], Some(url.as_str()), true),
        ("a wrong token", form("x"), Some(url.as_str()), true),
        ("another site's Origin", form(leaked), Some("http://evil.example"), true),
        ("no cookies", form(leaked), Some(url.as_str()), false),
    ] {
        let (st, html) = c.post_raw("/admin/users/create", &fields, origin, cookies).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{what}: {html}");
        assert!(html.contains("Nothing was changed"), "{what}: {html}");
    }
    // Another session's token with this session's cookie.
    let mut other = Console::open(&s).await;
    let (st, _) = other.post_raw("/admin/grants/revoke", &[("grant", "x"), ("csrf", &csrf)], Some(&url), true).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert!(s.store.user_by_name("mallory".into()).await.unwrap().is_none());
    assert_eq!(event_count(&s).await, before, "nothing written");
    // The same post from the page itself works.
    let (st, _) = c.post("/admin/users/create", &[("name", "mallory"), ("password", PASSWORD)]).await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test]
async fn without_rights_nothing_is_shown_and_every_post_is_refused() {
    let s = TestServer::start().await;
    master(&s, "root").await;
    s.user("nobody").await;
    s.vault_user("viewer", "\\VED\\Policy\\A", "read").await;
    s.admin.create_folder("\\VED\\Policy\\B").await.unwrap();
    s.integration("app", "restricted:manage", |_| {}).await;
    let posts: [(&str, &[(&str, &str)]); 9] = [
        ("/admin/integrations/create", &[("client_id", "x"), ("scope", "configuration")]),
        ("/admin/integrations/update", &[("client_id", "app"), ("scope", "configuration")]),
        ("/admin/integrations/delete", &[("client_id", "app")]),
        ("/admin/users/create", &[("name", "x"), ("password", PASSWORD), ("master_admin", "1")]),
        ("/admin/users/disable", &[("name", "root"), ("action", "disable")]),
        ("/admin/groups/create", &[("name", "x")]),
        ("/admin/groups/members", &[("group", "x"), ("user", "nobody"), ("action", "add")]),
        ("/admin/folders/rights", &[("folder", "\\VED\\Policy\\A"), ("kind", "user"), ("name", "viewer"), ("rights", "write")]),
        ("/admin/grants/revoke", &[("grant", "x")]),
    ];

    // No right at all: an overview that says so, 403 everywhere else.
    let mut c = Console::signed_in(&s, "nobody").await;
    let (st, html) = c.get("/admin").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("nothing here for you"), "{html}");
    assert!(!html.contains("/admin/integrations") && !html.contains("/admin/log"), "no links: {html}");
    for p in ["/admin/integrations", "/admin/users", "/admin/folders", "/admin/grants", "/admin/log"] {
        let (st, html) = c.get(p).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{p}");
        assert!(html.contains("There is nothing here for you"), "{p}: {html}");
    }
    // (Signing in is written: a `login.succeeded` event; the viewer signs in before the count.)
    let mut v = Console::signed_in(&s, "viewer").await;
    let before = event_count(&s).await;
    for (p, form) in posts {
        let (st, _) = c.post(p, form).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{p}");
    }

    // Read on one folder: that folder (read-only), the events they may see, nothing else.
    let (_, html) = v.get("/admin").await;
    assert!(html.contains("/admin/folders") && !html.contains("/admin/integrations"), "{html}");
    let (st, html) = v.get("/admin/folders").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains(">A</a>") && !html.contains(">B</a>"), "{html}");
    let (st, html) = v.get("/admin/folders?folder=%5CVED%5CPolicy%5CA").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("you may not change them") && !html.contains("grant_rights"), "{html}");
    let (st, _) = v.get("/admin/folders?folder=%5CVED%5CPolicy%5CB").await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, html) = v.get("/admin/log").await;
    assert_eq!(st, StatusCode::OK);
    assert!(!table(&html).contains("integration.created") && !table(&html).contains("user.created"), "only what they may see: {html}");
    for (p, form) in posts {
        let (st, _) = v.post(p, form).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{p}");
    }
    for p in ["/admin/integrations", "/admin/users", "/admin/grants"] {
        assert_eq!(v.get(p).await.0, StatusCode::FORBIDDEN, "{p}");
    }
    assert_eq!(event_count(&s).await, before, "nothing written");
    assert!(!s.admin.effective_rights("\\VED\\Policy\\A", "viewer").await.unwrap().0.contains(Rights::WRITE));

    // A right taken away, or the account disabled, applies at the next request.
    s.admin.set_rights("\\VED\\Policy\\A", "viewer", Rights::NONE).await.unwrap();
    assert_eq!(v.get("/admin/folders").await.0, StatusCode::FORBIDDEN);
    s.admin.set_user_disabled("viewer", true).await.unwrap();
    assert_eq!(v.get("/admin/folders").await.0, StatusCode::SEE_OTHER);
    let (st, _) = v.post("/admin/folders/rights", posts[7].1).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);

    // A Master Admin's standing is read again too.
    let mut r = Console::signed_in(&s, "root").await;
    assert_eq!(r.get("/admin/users").await.0, StatusCode::OK);
    s.admin.set_user_disabled("root", true).await.unwrap();
    assert_eq!(r.get("/admin/users").await.0, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn sessions_end_when_idle_or_too_old() {
    let s = TestServer::start().await;
    master(&s, "root").await;
    // Idle: 15 minutes without a request.
    let mut c = Console::signed_in(&s, "root").await;
    s.clock.advance_secs(14 * 60);
    assert_eq!(c.get("/admin/users").await.0, StatusCode::OK, "renewed");
    s.clock.advance_secs(14 * 60);
    assert_eq!(c.get("/admin/users").await.0, StatusCode::OK, "renewed again");
    s.clock.advance_secs(15 * 60);
    assert_eq!(c.get("/admin/users").await.0, StatusCode::SEE_OTHER, "idle too long");
    let (st, _) = c.post("/admin/groups/create", &[("name", "late")]).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(s.admin.group("late").await.is_err());

    // At most 8 hours, however busy.
    let mut c = Console::signed_in(&s, "root").await;
    for _ in 0..47 {
        s.clock.advance_secs(10 * 60);
        assert_eq!(c.get("/admin").await.0, StatusCode::OK);
    }
    s.clock.advance_secs(10 * 60);
    assert_eq!(c.get("/admin/users").await.0, StatusCode::SEE_OTHER, "8 hours after the sign-in");

    // A cookie made for another browser (its anti-forgery token) is no session.
    let a = Console::signed_in(&s, "root").await;
    let mut b = Console::open(&s).await;
    let session = a.cookies.iter().find(|(k, _)| k.as_str() == "sr_admin").unwrap();
    b.cookies.insert(session.0.clone(), session.1.clone());
    assert_eq!(b.get("/admin/users").await.0, StatusCode::SEE_OTHER);
}

/// Changing a folder's permissions needs a Master Admin, or ManagePermissions
/// on that folder once the vault's rights have it (until then, holding any
/// right shows the folder read-only and every change is refused).
#[tokio::test]
async fn changing_permissions_needs_the_right_on_that_folder() {
    let s = TestServer::start().await;
    s.user("bob").await;
    s.admin.create_folder("\\VED\\Policy\\A\\Sub").await.unwrap();
    s.admin.create_folder("\\VED\\Policy\\B").await.unwrap();
    let grant = [("folder", "\\VED\\Policy\\A\\Sub"), ("kind", "user"), ("name", "bob"), ("rights", "read")];
    let elsewhere = [("folder", "\\VED\\Policy\\B"), ("kind", "user"), ("name", "bob"), ("rights", "read")];
    match strongroom_app::service::console::manage_flag() {
        None => {
            // Every right there is, but no Master Admin: still read-only.
            let all = Rights::from_bits(u32::MAX).to_string();
            s.vault_user("manager", "\\VED\\Policy\\A", &all).await;
            let mut c = Console::signed_in(&s, "manager").await;
            let (_, html) = c.get("/admin/folders?folder=%5CVED%5CPolicy%5CA%5CSub").await;
            assert!(html.contains("you may not change them"), "{html}");
            let before = event_count(&s).await;
            assert_eq!(c.post("/admin/folders/rights", &grant).await.0, StatusCode::FORBIDDEN);
            assert_eq!(event_count(&s).await, before);
        }
        Some(manage) => {
            let manager = s.vault_user("manager", "\\VED\\Policy\\A", &manage.to_string()).await;
            let mut c = Console::signed_in(&s, "manager").await;
            let (_, html) = c.get("/admin/folders?folder=%5CVED%5CPolicy%5CA%5CSub").await;
            assert!(html.contains("grant_rights"), "{html}");
            let (st, html) = c.post("/admin/folders/rights", &grant).await;
            assert_eq!(st, StatusCode::OK, "{html}");
            assert_eq!(events(&s, "folder.rights_changed").await.last().unwrap().identity, manager.id.identity());
            assert_eq!(c.post("/admin/folders/rights", &elsewhere).await.0, StatusCode::FORBIDDEN);
            assert!(!s.admin.effective_rights("\\VED\\Policy\\B", "bob").await.unwrap().0.contains(Rights::READ));
        }
    }
    // A Master Admin may, anywhere.
    master(&s, "root").await;
    let mut r = Console::signed_in(&s, "root").await;
    assert_eq!(r.post("/admin/folders/rights", &elsewhere).await.0, StatusCode::OK);
    assert!(s.admin.effective_rights("\\VED\\Policy\\B", "bob").await.unwrap().0.contains(Rights::READ));
}

/// A page's main content, without the navigation (whose links name every page).
fn main_of(html: &str) -> &str {
    html.split("<main").nth(1).unwrap_or("")
}

/// Every act that ends something has a confirmation page (`GET` on the
/// act's path) that says what it will end, read from the store, and changes
/// nothing; its form posts the act.
#[tokio::test]
async fn destructive_acts_ask_first_saying_what_they_end() {
    let s = TestServer::start().await;
    let root = master(&s, "root").await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    s.tokens_for(&alice, "app", "restricted:manage").await;
    s.tokens_for(&alice, "app", "restricted:manage").await;
    s.admin.create_group("ops").await.unwrap();
    s.admin.add_member("ops", "alice").await.unwrap();
    s.admin.create_folder("\\VED\\Policy\\Shared").await.unwrap();
    s.admin.set_group_rights("\\VED\\Policy\\Shared", "ops", Rights::READ).await.unwrap();
    // A folder with one below it, an entry owned only there and a right on it.
    let writer = s.vault_user("writer", "\\VED\\Policy\\Old\\Sub", "view,read,write,create").await;
    let t = s.tokens_for(&writer, "app", "restricted:manage").await;
    let (st, v) = s
        .sdk(
            "Add",
            t["access_token"].as_str().unwrap(),
            serde_json::json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Old\\Sub", "Base64Data": "eA=="}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let entry = v["VaultID"].as_i64().unwrap();
    let mut c = Console::signed_in(&s, "root").await;
    let before = event_count(&s).await;

    let grant = s.admin.list_grants(false).await.unwrap().into_iter().find(|g| g.user_name == "alice").unwrap().grant.id;
    let asks: Vec<(String, Vec<&str>)> = vec![
        (
            "/admin/integrations/delete?client_id=app".into(),
            vec!["Delete integration app?", "<strong>3 live grants</strong> of integration", "alice, writer"],
        ),
        (
            "/admin/users/disable?name=alice&action=disable".into(),
            vec!["Disable alice?", "<strong>2 live grants</strong> of alice (to app, app)"],
        ),
        ("/admin/users/disable?name=alice&action=end_sessions".into(), vec!["every console session"]),
        ("/admin/users/delete?name=alice".into(), vec!["Delete alice?", "<strong>2 live grants</strong>", "1 group (ops)"]),
        ("/admin/users/master?name=alice&on=1".into(), vec!["Make alice a Master Admin?", "every right on every folder"]),
        (
            "/admin/users/password?name=alice".into(),
            vec!["New password for alice", "<strong>2 live grants</strong> of alice", "keep_grants"],
        ),
        ("/admin/groups/delete?name=ops".into(), vec!["Delete group ops?", "1 member (alice)", "1 folder (\\VED\\Policy\\Shared)"]),
        ("/admin/groups/members?group=ops&user=alice&action=remove".into(), vec!["Remove alice from ops?"]),
        (format!("/admin/grants/revoke?grant={}", grant.as_str()), vec!["Revoke the grant of alice to app?", "stop working at once"]),
        (
            "/admin/grants/revoke?user=ALICE".into(),
            vec!["Revoke every grant of alice?", "<strong>2 live grants</strong> of alice (to app, app)"],
        ),
        (
            "/admin/folders/delete?folder=%5CVED%5CPolicy%5COld".into(),
            vec![
                "Delete folder \\VED\\Policy\\Old?",
                "1 folder below it",
                "<code>\\VED\\Policy\\Old\\Sub</code>",
                "1 vault entry",
                "1 entry is",
                &*Box::leak(format!("vault ids {entry}").into_boxed_str()),
                "1 grant of rights",
            ],
        ),
        (
            "/admin/folders/rights?folder=%5CVED%5CPolicy%5CShared&kind=group&name=ops".into(),
            vec!["Revoke the rights of ops on \\VED\\Policy\\Shared?", "<strong>read</strong>"],
        ),
        ("/admin/keys/rotate?name=Software:Default".into(), vec!["Rotate Software:Default?", "1 entry"]),
    ];
    for (path, says) in &asks {
        let (st, html) = c.get(path).await;
        assert_eq!(st, StatusCode::OK, "{path}: {html}");
        let page = main_of(&html);
        for said in says {
            assert!(page.contains(said), "{path} should say {said:?}: {page}");
        }
        assert!(page.contains("id=\"confirm\"") && page.contains("id=\"cancel\"") && page.contains("name=\"csrf\""), "{path}: {page}");
    }
    assert_eq!(event_count(&s).await, before, "asking changes nothing");
    assert_eq!(s.admin.list_grants(false).await.unwrap().len(), 3);
    assert_eq!(c.get("/admin/users/disable?name=alice&action=enable").await.0, StatusCode::BAD_REQUEST, "no page posting another act");
    // Something that is not there: 404, no form.
    for path in [
        "/admin/integrations/delete?client_id=nope",
        "/admin/users/delete?name=nope",
        "/admin/grants/revoke?grant=nope",
        "/admin/folders/delete?folder=%5CVED%5CPolicy%5CNope",
    ] {
        let (st, html) = c.get(path).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {html}");
        assert!(!html.contains("id=\"confirm\""), "{path}");
    }
    // The lists link to the confirmation pages instead of acting on one click.
    for (list, link) in [
        ("/admin/integrations", "/admin/integrations/delete?client_id=app"),
        ("/admin/users", "/admin/users/disable?name=alice&amp;action=disable"),
        ("/admin/users", "/admin/users/delete?name=alice"),
        ("/admin/grants", "/admin/grants/revoke?grant="),
        ("/admin/grants?user=alice", "/admin/grants/revoke?user=alice"),
    ] {
        let (_, html) = c.get(list).await;
        assert!(html.contains(&format!("href=\"{link}")), "{list} links {link}: {html}");
    }

    // Confirmed: the acts, each with its event naming root.
    let me = root.id.identity();
    let (st, html) = c.post("/admin/folders/delete", &[("folder", "\\VED\\Policy\\Old")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("1 entry left without an owner"), "{html}");
    assert!(!s.store.folder_exists("\\ved\\policy\\old\\sub".into()).await.unwrap());
    assert_eq!(events(&s, "folder.deleted").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/users/password", &[("name", "alice"), ("password", "another long password 42")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("2 live grants and every console session of theirs ended"), "{html}");
    assert_eq!(events(&s, "user.password_changed").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/users/unlock", &[("name", "alice")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(events(&s, "user.unlocked").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/users/master", &[("name", "alice"), ("on", "1")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.master_admin);
    let ev = events(&s, "user.master_admin_changed").await;
    assert_eq!((ev.last().unwrap().identity.as_str(), ev.last().unwrap().detail.as_str()), (me.as_str(), "master_admin=true"));
    let (st, _) = c.post("/admin/users/master", &[("name", "alice"), ("on", "0")]).await;
    assert_eq!(st, StatusCode::OK);
    assert!(!s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.master_admin);
    let (st, html) = c.post("/admin/groups/delete", &[("name", "ops")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(events(&s, "group.deleted").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/keys/rotate", &[("name", "Software:Default")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("rotated") && html.contains("1 value re-encrypted"), "{html}");
    let (st, html) = c.post("/admin/grants/revoke", &[("user", "writer")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("1 live grant of writer revoked"), "{html}");
    assert!(s.admin.list_grants(false).await.unwrap().iter().all(|g| g.user_name != "writer"));
    assert_eq!(events(&s, "user.grants_revoked").await.last().unwrap().identity, me);
    let (st, html) = c.post("/admin/users/delete", &[("name", "alice")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(s.store.user_by_name("alice".into()).await.unwrap().is_none());
    assert_eq!(events(&s, "user.deleted").await.last().unwrap().identity, me);
}

/// Nobody disables, deletes or demotes themselves from the console (the act
/// refuses, 403, with a message saying why, and writes nothing); another
/// Master Admin may. Every new post without the anti-forgery token is 403.
#[tokio::test]
async fn an_administrator_cannot_disable_delete_or_demote_themselves() {
    let s = TestServer::start().await;
    master(&s, "root").await;
    let second = master(&s, "second").await;
    s.user("alice").await;
    let mut c = Console::signed_in(&s, "root").await;
    let before = event_count(&s).await;
    for (path, form, says) in [
        ("/admin/users/disable", vec![("name", "root"), ("action", "disable")], "You cannot disable your own account (root)"),
        ("/admin/users/disable", vec![("name", "ROOT"), ("action", "disable")], "You cannot disable your own account (root)"),
        ("/admin/users/delete", vec![("name", "root")], "You cannot delete your own account (root)"),
        ("/admin/users/master", vec![("name", "root"), ("on", "0")], "You cannot take the Master Admin role from your own account (root)"),
    ] {
        let (st, html) = c.post(path, &form).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {html}");
        assert!(html.contains(says), "{path}: {html}");
    }
    for path in ["/admin/users/disable?name=root&action=disable", "/admin/users/delete?name=root", "/admin/users/master?name=root&on=0"] {
        let (st, html) = c.get(path).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {html}");
        assert!(html.contains("You cannot") && !html.contains("id=\"confirm\""), "{path}: {html}");
    }
    // The page offers none of them for oneself.
    let (_, html) = c.get("/admin/users").await;
    assert!(
        !html.contains("name=root&amp;action=disable") && !html.contains("delete?name=root") && !html.contains("name=root&amp;on=0"),
        "{html}"
    );
    assert!(html.contains("name=second&amp;on=0") && html.contains("delete?name=second"), "{html}");
    let root = s.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    assert!(!root.disabled && root.master_admin);
    assert_eq!(event_count(&s).await, before, "nothing written");

    // Without the anti-forgery token (or from elsewhere): 403, nothing done.
    let url = s.url.clone();
    let csrf = c.csrf.clone();
    for (path, form) in [
        ("/admin/users/disable", vec![("name", "alice"), ("action", "disable")]),
        ("/admin/users/delete", vec![("name", "alice")]),
        ("/admin/users/master", vec![("name", "alice"), ("on", "1")]),
        ("/admin/users/password", vec![("name", "alice"), ("password", "another long password 42")]),
        ("/admin/users/unlock", vec![("name", "alice")]),
        ("/admin/groups/delete", vec![("name", "x")]),
        ("/admin/folders/create", vec![("folder", "\\VED\\Policy\\Forged")]),
        ("/admin/folders/rename", vec![("folder", "\\VED\\Policy\\A"), ("name", "B")]),
        ("/admin/folders/delete", vec![("folder", "\\VED\\Policy\\A")]),
        ("/admin/keys/rotate", vec![("name", "Software:Default")]),
        ("/admin/integrations/delete", vec![("client_id", "x")]),
    ] {
        let (st, html) = c.post_raw(path, &form, Some(&url), true).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {html}");
        let mut with_token = form.clone();
        with_token.push(("csrf", &csrf));
        let (st, _) = c.post_raw(path, &with_token, Some("http://evil.example"), true).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path} from elsewhere");
    }
    assert_eq!(event_count(&s).await, before, "nothing written");
    assert!(!s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.master_admin);

    // Another Master Admin may take root's role away; root's next request sees it.
    let mut other = Console::signed_in(&s, "second").await;
    let (st, html) = other.post("/admin/users/master", &[("name", "root"), ("on", "0")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("root is no longer a Master Admin."), "{html}");
    assert_eq!(events(&s, "user.master_admin_changed").await.last().unwrap().identity, second.id.identity());
    assert_eq!(c.get("/admin/users").await.0, StatusCode::FORBIDDEN);
    let (st, _) = other.post("/admin/users/disable", &[("name", "root"), ("action", "disable")]).await;
    assert_eq!(st, StatusCode::OK);
    assert!(s.store.user_by_name("root".into()).await.unwrap().unwrap().0.disabled);
}

/// Folders created, renamed and deleted; an integration's grant types,
/// token lifetimes and retry window; the keys and server pages.
#[tokio::test]
async fn folders_integration_settings_keys_and_the_server_page() {
    let s = TestServer::start().await;
    let root = master(&s, "root").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    let mut c = Console::signed_in(&s, "root").await;
    let me = root.id.identity();

    let (st, html) = c.post("/admin/folders/create", &[("folder", "\\VED\\Policy\\Team")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(events(&s, "folder.created").await.last().unwrap().identity, me);
    let (st, _) = c.post("/admin/folders/create", &[("parent", "\\VED\\Policy\\Team"), ("name", "App")]).await;
    assert_eq!(st, StatusCode::OK);
    assert!(s.store.folder_exists("\\ved\\policy\\team\\app".into()).await.unwrap());
    assert_eq!(c.post("/admin/folders/create", &[("folder", "\\VED\\Policy\\Team")]).await.0, StatusCode::CONFLICT);
    assert_eq!(c.post("/admin/folders/create", &[("folder", "\\VED\\Policy\\..")]).await.0, StatusCode::BAD_REQUEST);
    let (st, html) = c.post("/admin/folders/rename", &[("folder", "\\VED\\Policy\\Team"), ("name", "Squad")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("renamed to \\VED\\Policy\\Squad"), "{html}");
    assert!(s.store.folder_exists("\\ved\\policy\\squad\\app".into()).await.unwrap());
    assert!(!s.store.folder_exists("\\ved\\policy\\team".into()).await.unwrap());
    assert_eq!(c.post("/admin/folders/rename", &[("folder", "\\VED\\Policy\\Squad"), ("name", "a\\b")]).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(c.post("/admin/folders/rename", &[("folder", "\\VED\\Policy"), ("name", "x")]).await.0, StatusCode::BAD_REQUEST);
    let (st, _) = c.post("/admin/folders/delete", &[("folder", "\\VED\\Policy\\Squad")]).await;
    assert_eq!(st, StatusCode::OK);
    assert!(!s.store.folder_exists("\\ved\\policy\\squad\\app".into()).await.unwrap());

    // Grant types, lifetimes, retry window.
    let (_, html) = c.get("/admin/integrations?edit=app").await;
    assert!(html.contains("id=\"edit_retry_window\"") && html.contains("id=\"edit_password_grant\""), "{html}");
    let (st, html) = c
        .post(
            "/admin/integrations/update",
            &[
                ("client_id", "app"),
                ("scope", "restricted:manage"),
                ("everyone", "1"),
                ("password_grant", "1"),
                ("access_validity", "120"),
                ("grant_validity", "86400"),
                ("retry_window", "0"),
                ("refreshable", "no"),
            ],
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let i = s.store.integration("app".into()).await.unwrap().unwrap();
    assert_eq!((i.grant_types.device, i.grant_types.password), (false, true));
    assert_eq!((i.overrides.access_validity, i.overrides.grant_validity, i.overrides.retry_window), (Some(120), Some(86400), Some(0)));
    assert_eq!(i.overrides.refreshable, Some(false));
    assert_eq!(events(&s, "integration.updated").await.last().unwrap().identity, me);
    let (_, html) = c.get("/admin/integrations?edit=app").await;
    assert!(html.contains("name=\"access_validity\" value=\"120\""), "{html}");
    let (st, html) =
        c.post("/admin/integrations/update", &[("client_id", "app"), ("scope", "restricted:manage"), ("access_validity", "soon")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    assert!(html.contains("Access-token lifetime: a number of seconds"), "{html}");
    assert_eq!(s.store.integration("app".into()).await.unwrap().unwrap().overrides.access_validity, Some(120));

    // Keys and the server.
    let (st, html) = c.get("/admin/keys").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("<code>Software:Default</code>") && html.contains("<h1>Keys</h1>"), "{html}");
    let (st, html) = c.get("/admin/server").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains(&format!("strongroom {}", env!("CARGO_PKG_VERSION"))), "{html}");
    assert!(html.contains(&format!("id=\"schema\">{}", strongroom_store::schema_version())), "{html}");
    assert!(html.contains("<strong>ready</strong>") && html.contains("sqlite "), "{html}");
    assert!(html.contains("href=\"/admin/server?verify=1\""), "{html}");
    let (st, html) = c.get("/admin/server?verify=1").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let n = event_count(&s).await;
    assert!(html.contains(&format!("<strong>whole</strong>: {n} events checked")), "{n} events: {html}");

    // None of it for someone who is not a Master Admin.
    s.vault_user("viewer", "\\VED\\Policy\\A", "read").await;
    let mut v = Console::signed_in(&s, "viewer").await;
    for p in
        ["/admin/keys", "/admin/server", "/admin/keys/rotate?name=Software:Default", "/admin/folders/delete?folder=%5CVED%5CPolicy%5CA"]
    {
        assert_eq!(v.get(p).await.0, StatusCode::FORBIDDEN, "{p}");
    }
    for (p, form) in [
        ("/admin/folders/create", vec![("folder", "\\VED\\Policy\\A\\B")]),
        ("/admin/folders/rename", vec![("folder", "\\VED\\Policy\\A"), ("name", "Z")]),
        ("/admin/folders/delete", vec![("folder", "\\VED\\Policy\\A")]),
        ("/admin/keys/rotate", vec![("name", "Software:Default")]),
        ("/admin/users/master", vec![("name", "viewer"), ("on", "1")]),
    ] {
        assert_eq!(v.post(p, &form).await.0, StatusCode::FORBIDDEN, "{p}");
    }
    assert!(!s.store.user_by_name("viewer".into()).await.unwrap().unwrap().0.master_admin);
    assert!(s.store.folder_exists("\\ved\\policy\\a".into()).await.unwrap());
}

/// JWT issuers and mappings, certificate mappings: added, listed, removed
/// after a page that says how many live grants of the mapping's
/// identities end; an issuer a mapping uses is not removed.
#[tokio::test]
async fn machine_identities_issuers_and_mappings() {
    let s = TestServer::start().await;
    let root = master(&s, "root").await;
    let me = root.id.identity();
    s.integration("app", "restricted:manage", |_| {}).await;
    let mut c = Console::signed_in(&s, "root").await;

    let issuer = [
        ("name", "gh"),
        ("issuer", "https://token.actions.example"),
        ("keys", "discovery"),
        ("url", ""),
        ("audiences", "strongroom, other"),
        ("algorithms", "RS256"),
        ("clock_skew", "30"),
        ("max_lifetime", "600"),
    ];
    let (st, html) = c.post("/admin/machines/issuers", &issuer).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let j = s.admin.jwt_issuers().await.unwrap().pop().unwrap();
    assert_eq!((j.name.as_str(), j.audiences.len(), j.clock_skew, j.max_lifetime), ("gh", 2, 30, 600));
    assert_eq!(j.keys.location(), "https://token.actions.example/.well-known/openid-configuration");
    assert_eq!(events(&s, "jwt.issuer_saved").await.last().unwrap().identity, me);
    let (st, html) = c
        .post(
            "/admin/machines/issuers",
            &[("name", "bad"), ("issuer", "x"), ("keys", "jwks_url"), ("url", "http://plain"), ("audiences", "a")],
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    assert!(html.contains("https://"), "{html}");

    let jwt = [
        ("name", "deploy"),
        ("issuer", "gh"),
        ("claims", "repository=acme/app\nref=refs/heads/main"),
        ("identity_claim", "sub"),
        ("clients", "app"),
        ("scope", "restricted:manage"),
    ];
    let (st, html) = c.post("/admin/machines/mappings/jwt", &jwt).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let ca = strongroom_testkit::jwt::TestCa::new();
    let cert = [("name", "agents"), ("ca_pem", ca.ca_pem.as_str()), ("identity_from", "cn"), ("clients", "app"), ("scope", "restricted")];
    let (st, html) = c.post("/admin/machines/mappings/cert", &cert).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(s.admin.mappings().await.unwrap().len(), 2);
    assert_eq!(events(&s, "mapping.saved").await.last().unwrap().identity, me);
    let (st, html) = c
        .post(
            "/admin/machines/mappings/cert",
            &[("name", "bad"), ("ca_pem", "not a pem"), ("identity_from", "cn"), ("clients", "app"), ("scope", "restricted")],
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");

    let (st, html) = c.get("/admin/machines").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("jwt+deploy:&lt;sub&gt;") && html.contains("cert+agents:&lt;cn&gt;") && html.contains("1 approved CA"), "{html}");

    // An identity of the mapping with a live grant.
    assert!(s.admin.machine_identity("jwt+deploy:repo:acme/app").await.unwrap());
    let id = s.store.user_by_name("jwt+deploy:repo:acme/app".into()).await.unwrap().unwrap().0;
    s.tokens_for(&id, "app", "restricted:manage").await;

    // The issuer a mapping uses: the page says so, and removing it is refused.
    let (_, html) = c.get("/admin/machines/issuers/remove?name=gh").await;
    assert!(main_of(&html).contains("1 mapping uses it (deploy)"), "{html}");
    let (st, html) = c.post("/admin/machines/issuers/remove", &[("name", "gh")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    // The mapping: how many grants end, then they do.
    let (st, html) = c.get("/admin/machines/mappings/remove?name=deploy").await;
    assert_eq!(st, StatusCode::OK);
    assert!(main_of(&html).contains("<strong>1 live grant</strong> of its identities (jwt+deploy:repo:acme/app)"), "{html}");
    assert_eq!(s.admin.mappings().await.unwrap().len(), 2, "asking removes nothing");
    let (st, html) = c.post("/admin/machines/mappings/remove", &[("name", "deploy")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("Mapping deploy removed; 1 live grant of its identities ended."), "{html}");
    assert!(s.admin.list_grants(false).await.unwrap().is_empty());
    assert_eq!(events(&s, "mapping.removed").await.last().unwrap().identity, me);
    let (st, _) = c.post("/admin/machines/issuers/remove", &[("name", "gh")]).await;
    assert_eq!(st, StatusCode::OK);
    assert!(s.admin.jwt_issuers().await.unwrap().is_empty());
    assert_eq!(events(&s, "jwt.issuer_removed").await.last().unwrap().identity, me);

    // Not for someone who is not a Master Admin, nor without the token.
    s.vault_user("viewer", "\\VED\\Policy\\A", "read").await;
    let mut v = Console::signed_in(&s, "viewer").await;
    assert_eq!(v.get("/admin/machines").await.0, StatusCode::FORBIDDEN);
    assert_eq!(v.post("/admin/machines/mappings/remove", &[("name", "agents")]).await.0, StatusCode::FORBIDDEN);
    let url = s.url.clone();
    assert_eq!(c.post_raw("/admin/machines/mappings/remove", &[("name", "agents")], Some(&url), true).await.0, StatusCode::FORBIDDEN);
    assert_eq!(s.admin.mappings().await.unwrap().len(), 1);
}

/// The vault page: each entry's owners, associations and key, filtered by
/// folder or orphans; never a value (the data and the association's value
/// appear nowhere on the page).
#[tokio::test]
async fn vault_entries_show_owners_associations_and_key_never_a_value() {
    let s = TestServer::start().await;
    master(&s, "root").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    let writer = s.vault_user("writer", "\\VED\\Policy\\Team", "view,read,write,create").await;
    s.admin.create_folder("\\VED\\Policy\\Gone").await.unwrap();
    s.admin.set_rights("\\VED\\Policy\\Gone", "writer", Rights::parse("view,read,write,create").unwrap()).await.unwrap();
    let t = s.tokens_for(&writer, "app", "restricted:manage").await;
    let t = t["access_token"].as_str().unwrap();
    let mut ids = Vec::new();
    for owner in ["\\VED\\Policy\\Team", "\\VED\\Policy\\Gone"] {
        // "c2VjcmV0LWRhdGEtNDI=" is "secret-data-42".
        let body = serde_json::json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": owner, "Base64Data": "c2VjcmV0LWRhdGEtNDI="});
        let (st, v) = s.sdk("Add", t, body).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        ids.push(v["VaultID"].as_i64().unwrap());
    }
    let (st, v) =
        s.sdk("Associate", t, serde_json::json!({"VaultID": ids[0], "Name": "Purpose", "StringValue": "hunter2-association"})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    s.admin.delete_folder("\\VED\\Policy\\Gone", true).await.unwrap();

    let mut c = Console::signed_in(&s, "root").await;
    let (st, html) = c.get("/admin/vault").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let rows = table(&html);
    assert!(html.contains("2 entries"), "{html}");
    assert!(rows.contains(&format!("<th scope=\"row\">{}</th>", ids[0])) && rows.contains("<code>\\VED\\Policy\\Team</code>"), "{rows}");
    assert!(rows.contains("Purpose (string, data key #") && rows.contains("<code>Software:Default</code>"), "{rows}");
    assert!(rows.contains("none (an orphan)"), "{rows}");
    for secret in ["secret-data-42", "c2VjcmV0LWRhdGEtNDI", "hunter2-association"] {
        assert!(!html.contains(secret), "a value on the page: {secret}");
    }
    let (_, html) = c.get("/admin/vault?orphans=1").await;
    assert!(html.contains("1 entry;") && table(&html).contains(&format!(">{}</th>", ids[1])), "{html}");
    let (_, html) = c.get("/admin/vault?folder=%5CVED%5CPolicy%5CTeam").await;
    assert!(html.contains("1 entry;") && table(&html).contains(&format!(">{}</th>", ids[0])), "{html}");
    assert_eq!(c.get("/admin/vault?folder=nowhere").await.0, StatusCode::BAD_REQUEST);
    let mut w = Console::signed_in(&s, "writer").await;
    assert_eq!(w.get("/admin/vault").await.0, StatusCode::FORBIDDEN);
}
