//! The approval page as a browser without JavaScript uses it: open the
//! page (which sets the anti-forgery cookie and carries the same value in a
//! hidden `csrf` field), sign in with the user code, then approve or deny
//! with the consent step's `ticket`. One reader of hidden fields for every
//! test; the forgery tests build their own requests from its parts.

/// The value of the hidden field `name` in `html` (`&amp;` unescaped).
pub fn hidden_field(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].replace("&amp;", "&"))
}

/// Takes into `jar` the cookies a response's `headers` set (one with
/// `Max-Age=0` leaves the jar), as a browser does: for tests that drive the
/// console over plain HTTP.
pub fn absorb_cookies(jar: &mut std::collections::BTreeMap<String, String>, headers: &reqwest::header::HeaderMap) {
    for v in headers.get_all("set-cookie") {
        let v = v.to_str().unwrap_or_default();
        let (kv, attrs) = v.split_once(';').unwrap_or((v, ""));
        let Some((k, val)) = kv.split_once('=') else { continue };
        if attrs.contains("Max-Age=0") {
            jar.remove(k);
        } else {
            jar.insert(k.to_owned(), val.to_owned());
        }
    }
}

/// The `Cookie` header that sends `jar` back.
pub fn cookie_header(jar: &std::collections::BTreeMap<String, String>) -> String {
    jar.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
}

/// `scheme://authority` of `url`.
fn origin_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or_else(|| panic!("not an absolute URL: {url}"));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    format!("{scheme}://{authority}")
}

/// One browser session on the page: its cookie and form token.
#[derive(Debug, Clone)]
pub struct Page {
    http: reqwest::Client,
    /// Where the forms post: the origin of the page opened.
    pub base: String,
    /// `sr_csrf=…`, as the browser sends it back.
    pub cookie: String,
    /// The whole `Set-Cookie` header (for tests of its attributes).
    pub set_cookie: String,
    pub csrf: String,
    /// The opened page and its status.
    pub html: String,
    pub status: u16,
    /// The `Origin` header to send with each form, if any.
    origin: Option<String>,
}

impl Page {
    /// Opens `url` (`verification_uri_complete`, or the page without a code).
    pub async fn open(http: &reqwest::Client, url: &str) -> Page {
        let r = http.get(url).send().await.unwrap();
        let status = r.status().as_u16();
        let set_cookie =
            r.headers().get("set-cookie").unwrap_or_else(|| panic!("no cookie from {url} ({status})")).to_str().unwrap().to_owned();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let html = r.text().await.unwrap();
        let csrf = hidden_field(&html, "csrf").unwrap_or_else(|| panic!("no csrf field in {html}"));
        Page { http: http.clone(), base: origin_of(url), cookie, set_cookie, csrf, html, status, origin: None }
    }

    /// Sends `Origin: origin` with every form from here on (as a browser does).
    pub fn with_origin(mut self, origin: &str) -> Page {
        self.origin = Some(origin.to_owned());
        self
    }

    /// The user code the opened page carries (from `?user_code=`).
    pub fn user_code(&self) -> Option<String> {
        hidden_field(&self.html, "user_code")
    }

    /// Posts `form` and the session's `csrf` to `path` with its cookie, and
    /// `headers`: the status and the page.
    pub async fn post(&self, path: &str, form: &[(&str, &str)], headers: &[(&str, &str)]) -> (u16, String) {
        let mut form = form.to_vec();
        form.push(("csrf", &self.csrf));
        let mut req = self.http.post(format!("{}{path}", self.base)).header("cookie", &self.cookie).form(&form);
        if let Some(o) = &self.origin {
            req = req.header("origin", o);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = req.send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Signs in with `user_code`: the consent page (or the refusal).
    pub async fn sign_in(&self, user_code: &str, user: &str, password: &str) -> (u16, String) {
        self.post("/vedauth/device", &[("user_code", user_code), ("username", user), ("password", password)], &[]).await
    }

    /// Approves or denies with the consent page's `ticket`: the final page.
    pub async fn decide(&self, ticket: &str, approve: bool) -> (u16, String) {
        self.post("/vedauth/device/decision", &[("ticket", ticket), ("action", if approve { "approve" } else { "deny" })], &[]).await
    }

    /// Signs in and answers: the final page. The sign-in must reach the
    /// consent step.
    pub async fn sign_in_and_decide(&self, user_code: &str, user: &str, password: &str, approve: bool) -> (u16, String) {
        let (status, html) = self.sign_in(user_code, user, password).await;
        assert_eq!(status, 200, "sign-in: {html}");
        let ticket = hidden_field(&html, "ticket").unwrap_or_else(|| panic!("the consent page carries no ticket: {html}"));
        self.decide(&ticket, approve).await
    }
}

/// Approves (or denies) the device login of `link` (a
/// `verification_uri_complete`) as `user`, as a person in a browser would:
/// the final page.
pub async fn approve(http: &reqwest::Client, link: &str, user: &str, password: &str, yes: bool) -> String {
    let page = Page::open(http, link).await;
    let code = page.user_code().unwrap_or_else(|| panic!("no user_code field in {}", page.html));
    page.sign_in_and_decide(&code, user, password, yes).await.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_origins() {
        let html = r#"<input type="hidden" name="csrf" value="a&amp;b"><input name="ticket" value="t.1">"#;
        assert_eq!(hidden_field(html, "csrf").as_deref(), Some("a&b"));
        assert_eq!(hidden_field(html, "ticket").as_deref(), Some("t.1"));
        assert_eq!(hidden_field(html, "user_code"), None);
        assert_eq!(origin_of("http://localhost:4321/vedauth/device?user_code=ABCD-EFGH"), "http://localhost:4321");
        assert_eq!(origin_of("https://127.0.0.1:9"), "https://127.0.0.1:9");
    }
}
