//! The console over real HTTP, as a browser meets it: login and its
//! cookie, the cross-site checks, escaping, paging, outside-actor changes
//! and their audit, the live audit stream. (The browser itself is driven
//! by `e2e/tests/console.rs`.)

use std::time::{Duration, Instant};

use reqwest::header::{
    ACCEPT, CONTENT_SECURITY_POLICY, COOKIE, LOCATION, ORIGIN, SET_COOKIE, USER_AGENT,
};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::{ApiKey, Config, IN_MEMORY, RunningServer, spawn};

const TOKEN: &str = "console-test-admin-token";
const KEY: &str = "console-test-key";
const ACCOUNT: &str = "team-a";
/// The `User-Agent` every request of the test's browser sends.
const BROWSER: &str = "console-test-browser/1.0";

struct Site {
    server: RunningServer,
    http: reqwest::Client,
}

/// A logged-in browser's credentials: its cookie and its forms' token.
struct Login {
    cookie: String,
    csrf: String,
}

impl Site {
    async fn start_with(admin_token: &str) -> Site {
        let mut config = Config::new(IN_MEMORY);
        config.admin_token = Some(admin_token.into());
        config.api_keys = vec![ApiKey::new(KEY, ACCOUNT)];
        config.default_delay = Duration::ZERO;
        let server = spawn(config).await.unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(BROWSER)
            .build()
            .unwrap();
        Site { server, http }
    }

    async fn start() -> Site {
        Site::start_with(TOKEN).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    fn origin(&self) -> String {
        self.server.base_url()
    }

    async fn post_login(&self, token: &str) -> Response {
        self.http
            .post(self.url("/console/login"))
            .header(ORIGIN, self.origin())
            .form(&[("token", token)])
            .send()
            .await
            .unwrap()
    }

    async fn login(&self) -> Login {
        let response = self.post_login(TOKEN).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let set_cookie = response.headers()[SET_COOKIE].to_str().unwrap();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let page = self.page(&cookie, "/console").await;
        Login {
            csrf: csrf_of(&page),
            cookie,
        }
    }

    async fn get(&self, cookie: &str, path: &str) -> Response {
        self.http
            .get(self.url(path))
            .header(COOKIE, cookie)
            .header(ACCEPT, "text/html")
            .send()
            .await
            .unwrap()
    }

    async fn page(&self, cookie: &str, path: &str) -> String {
        let response = self.get(cookie, path).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response.text().await.unwrap()
    }

    /// Posts a console form from the console's own page.
    async fn post(&self, login: &Login, path: &str, fields: &[(&str, &str)]) -> Response {
        let mut form = vec![("csrf", login.csrf.as_str())];
        form.extend_from_slice(fields);
        self.http
            .post(self.url(path))
            .header(COOKIE, &login.cookie)
            .header(ORIGIN, self.origin())
            .header("sec-fetch-site", "same-origin")
            .form(&form)
            .send()
            .await
            .unwrap()
    }

    async fn create_vpc(&self, tags: Value) -> String {
        let created: Value = self
            .http
            .post(self.url("/v1/regions/us-east-1/vpcs"))
            .bearer_auth(KEY)
            .json(&json!({ "cidrBlock": "10.0.0.0/16", "tags": tags }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        created["id"].as_str().unwrap().to_owned()
    }

    async fn admin_get(&self, path: &str) -> Value {
        self.http
            .get(self.url(path))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// The value of the first hidden `csrf` field of a page.
fn csrf_of(page: &str) -> String {
    let start = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    page[start..][..64].to_owned()
}

/// The console's link to its page of resource `id`.
fn resource_link(page: &str, id: &str) -> String {
    let end = page
        .find(&format!("\">{id}</a>"))
        .expect("a link to the resource");
    let start = page[..end].rfind("href=\"").unwrap() + 6;
    page[start..end].to_owned()
}

#[tokio::test]
async fn the_console_is_off_without_an_admin_token() {
    let site = Site::start_with("").await;
    for path in ["/console", "/console/login", "/console/assets/console.js"] {
        let response = site.get("", path).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn a_browser_without_a_session_is_sent_to_the_login_page() {
    let site = Site::start().await;
    let response = site.get("", "/console/resources").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[LOCATION], "/console/login");
    // A script's request (fragment, event stream) gets a 401 to act on.
    let script = site
        .http
        .get(site.url("/console/resources/table"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), StatusCode::UNAUTHORIZED);
    let stale = site.get("fakecloud_console=made-up", "/console").await;
    assert_eq!(stale.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn login_sets_a_strict_http_only_cookie_and_the_token_never_shows() {
    let site = Site::start().await;
    let login_page = site.page("", "/console/login").await;
    assert!(login_page.contains("type=\"password\""), "{login_page}");
    let wrong = site.post_login("not-the-token").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get(SET_COOKIE).is_none());
    let right = site.post_login(TOKEN).await;
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    assert_eq!(right.headers()[LOCATION], "/console");
    let cookie = right.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains(TOKEN), "{cookie}");
    let session = cookie.split(';').next().unwrap();
    for path in [
        "/console",
        "/console/resources",
        "/console/audit",
        "/console/faults",
        "/console/snapshots",
    ] {
        let response = site.get(session, path).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let csp = response.headers()[CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        let page = response.text().await.unwrap();
        assert!(!page.contains(TOKEN), "{path} shows the admin token");
    }
}

#[tokio::test]
async fn failed_logins_slow_the_next_attempt_down() {
    let site = Site::start().await;
    site.post_login("wrong-1").await;
    site.post_login("wrong-2").await;
    let started = Instant::now();
    let third = site.post_login("wrong-3").await;
    assert_eq!(third.status(), StatusCode::UNAUTHORIZED);
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "the third attempt waited only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn forms_posted_from_elsewhere_are_refused() {
    let site = Site::start().await;
    let login = site.login().await;
    let clear = site.url("/console/faults/clear");
    let without_token = site
        .http
        .post(&clear)
        .header(COOKIE, &login.cookie)
        .form(&[("x", "1")])
        .send()
        .await
        .unwrap();
    assert_eq!(without_token.status(), StatusCode::FORBIDDEN);
    let from_elsewhere = site
        .http
        .post(&clear)
        .header(COOKIE, &login.cookie)
        .header(ORIGIN, "http://evil.example")
        .form(&[("csrf", login.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(from_elsewhere.status(), StatusCode::FORBIDDEN);
    let cross_site = site
        .http
        .post(&clear)
        .header(COOKIE, &login.cookie)
        .header("sec-fetch-site", "cross-site")
        .form(&[("csrf", login.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let login_from_elsewhere = site
        .http
        .post(site.url("/console/login"))
        .header(ORIGIN, "http://evil.example")
        .form(&[("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(login_from_elsewhere.status(), StatusCode::FORBIDDEN);
    let ours = site.post(&login, "/console/faults/clear", &[]).await;
    assert_eq!(ours.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_hostile_tag_shows_as_text() {
    let site = Site::start().await;
    let hostile = "<script>alert('tag')</script>";
    let id = site
        .create_vpc(json!({ "Name": hostile, hostile: "x" }))
        .await;
    let login = site.login().await;
    let list = site.page(&login.cookie, "/console/resources").await;
    let escaped = "&lt;script&gt;alert('tag')&lt;/script&gt;";
    assert!(list.contains(escaped), "{list}");
    assert!(!list.contains(hostile), "{list}");
    let resource = site.page(&login.cookie, &resource_link(&list, &id)).await;
    assert!(resource.contains(escaped), "{resource}");
    assert!(!resource.contains(hostile), "{resource}");
}

#[tokio::test]
async fn an_outside_actors_tag_change_is_made_audited_and_in_the_history() {
    let site = Site::start().await;
    let id = site.create_vpc(json!({ "team": "a" })).await;
    let login = site.login().await;
    let list = site.page(&login.cookie, "/console/resources").await;
    let link = resource_link(&list, &id);
    let changed = site
        .post(
            &login,
            &format!("{link}/tags"),
            &[("key", "team"), ("value", "b")],
        )
        .await;
    assert_eq!(changed.status(), StatusCode::SEE_OTHER);
    assert_eq!(changed.headers()[LOCATION], link.as_str());
    let vpc = site.admin_get(&format!("/admin/resources/vpc/{id}")).await;
    assert_eq!(vpc["resource"]["tags"], json!({ "team": "b" }));
    let external = site.admin_get("/admin/audit?actor=external").await;
    assert_eq!(external[0]["path"], format!("{link}/tags"), "{external}");
    assert_eq!(external[0]["account"], ACCOUNT);
    assert_eq!(external[0]["status"], 200);
    // Audited with the browser that made it, as an API call is with its client.
    assert_eq!(external[0]["userAgent"], BROWSER, "{external}");
    let page = site.page(&login.cookie, &link).await;
    assert!(page.contains("Tag team=b set."), "{page}");
    assert!(page.contains("outside actor"), "{page}");
    assert!(
        page.contains(&format!("/v1/regions/us-east-1/vpcs/{id}")),
        "{page}"
    );
    // A refused change says why.
    let refused = site
        .post(
            &login,
            &format!("{link}/tags"),
            &[("key", ""), ("value", "b")],
        )
        .await;
    assert_eq!(refused.status(), StatusCode::SEE_OTHER);
    let page = site.page(&login.cookie, &link).await;
    assert!(page.contains("InvalidParameterValue"), "{page}");
}

#[tokio::test]
async fn the_resources_are_shown_a_page_at_a_time() {
    let site = Site::start().await;
    for _ in 0..120 {
        site.create_vpc(json!({})).await;
    }
    let login = site.login().await;
    let mut path = "/console/resources?kind=vpc".to_owned();
    let mut sizes = Vec::new();
    loop {
        let page = site.page(&login.cookie, &path).await;
        sizes.push(page.matches("href=\"/console/resources/").count());
        let Some(at) = page.find("rel=\"next\"") else {
            break;
        };
        let start = page[..at].rfind("href=\"").unwrap() + 6;
        path = page[start..]
            .split('"')
            .next()
            .unwrap()
            .replace("&amp;", "&");
    }
    assert_eq!(sizes, [50, 50, 20]);
}

#[tokio::test]
async fn console_pages_are_neither_audited_nor_in_the_openapi_document() {
    let site = Site::start().await;
    let login = site.login().await;
    site.page(&login.cookie, "/console/resources").await;
    let audit = site.admin_get("/admin/audit?pathPrefix=/console").await;
    assert_eq!(audit, json!([]), "{audit}");
    let document = site.admin_get("/openapi.json").await;
    let paths = document["paths"].as_object().unwrap();
    assert!(
        paths.keys().all(|p| !p.starts_with("/console")),
        "{paths:?}"
    );
}

#[tokio::test]
async fn the_audit_stream_sends_new_calls() {
    let site = Site::start().await;
    let login = site.login().await;
    let mut stream = site
        .http
        .get(site.url("/console/live/audit?after=0&actor=api"))
        .header(COOKIE, &login.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let id = site.create_vpc(json!({})).await;
    let mut received = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !received.contains("event: calls") {
        assert!(Instant::now() < deadline, "no call arrived: {received}");
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        received.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(received.contains("\"method\":\"POST\""), "{received}");
    assert!(
        received.contains("/v1/regions/us-east-1/vpcs"),
        "{received}"
    );
    assert!(!received.contains(&id), "a create's path has no id yet");
    assert!(
        received.contains(&format!("\"user_agent\":\"{BROWSER}\"")),
        "{received}"
    );
}

#[tokio::test]
async fn the_audit_shows_each_calls_user_agent_as_text() {
    let site = Site::start().await;
    let hostile = "<script>alert('agent')</script>";
    let created = site
        .http
        .post(site.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth(KEY)
        .header(USER_AGENT, hostile)
        .json(&json!({ "cidrBlock": "10.0.0.0/16" }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = site.create_vpc(json!({})).await;
    // A call on the VPC's own path, for its history.
    let read = site
        .http
        .get(site.url(&format!("/v1/regions/us-east-1/vpcs/{id}")))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
    let login = site.login().await;
    let audit = site.page(&login.cookie, "/console/audit").await;
    assert!(audit.contains(">User agent</th>"), "{audit}");
    let escaped = "&lt;script&gt;alert('agent')&lt;/script&gt;";
    assert!(
        audit.contains(&format!("<td class=\"agent\">{escaped}</td>")),
        "{audit}"
    );
    assert!(!audit.contains(hostile), "{audit}");
    assert!(
        audit.contains(&format!("<td class=\"agent\">{BROWSER}</td>")),
        "{audit}"
    );
    // A resource's history is the same table.
    let list = site.page(&login.cookie, "/console/resources").await;
    let resource = site.page(&login.cookie, &resource_link(&list, &id)).await;
    assert!(
        resource.contains(&format!("<td class=\"agent\">{BROWSER}</td>")),
        "{resource}"
    );
}

#[tokio::test]
async fn logout_ends_the_session() {
    let site = Site::start().await;
    let login = site.login().await;
    let out = site.post(&login, "/console/logout", &[]).await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let cleared = out.headers()[SET_COOKIE].to_str().unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let after = site.get(&login.cookie, "/console").await;
    assert_eq!(after.status(), StatusCode::SEE_OTHER);
    assert_eq!(after.headers()[LOCATION], "/console/login");
}

#[tokio::test]
async fn a_fault_added_in_the_console_fails_matching_calls() {
    let site = Site::start().await;
    let login = site.login().await;
    let added = site
        .post(
            &login,
            "/console/faults/add",
            &[
                ("kind", "vpc"),
                ("region", "us-east-1"),
                ("operation", "POST"),
                ("status", "503"),
                ("count", "1"),
            ],
        )
        .await;
    assert_eq!(added.status(), StatusCode::SEE_OTHER);
    let failed = site
        .http
        .post(site.url("/v1/regions/us-east-1/vpcs"))
        .bearer_auth(KEY)
        .json(&json!({ "cidrBlock": "10.0.0.0/16" }))
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let admin = site.admin_get("/admin/audit?actor=admin").await;
    assert_eq!(admin[0]["path"], "/console/faults/add", "{admin}");
    let page = site.page(&login.cookie, "/console/faults").await;
    assert!(
        page.contains("None: every call is served."),
        "the one-time rule is used up"
    );
}

#[tokio::test]
async fn an_accounts_own_rate_set_in_the_console_throttles_it_until_cleared() {
    let site = Site::start().await;
    let login = site.login().await;
    let list_vpcs = || {
        site.http
            .get(site.url("/v1/regions/us-east-1/vpcs"))
            .bearer_auth(KEY)
            .send()
    };
    let page = site.page(&login.cookie, "/console/faults").await;
    assert!(
        page.contains(&format!("<option value=\"{ACCOUNT}\">")),
        "the form offers the accounts of the API keys: {page}"
    );
    let set = site
        .post(
            &login,
            "/console/throttling/accounts",
            &[("account", ACCOUNT), ("rate", "0"), ("burst", "1")],
        )
        .await;
    assert_eq!(set.status(), StatusCode::SEE_OTHER);
    assert_eq!(set.headers()[LOCATION], "/console/faults");
    let refused = list_vpcs().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "60");
    let own = site.admin_get("/admin/throttling/accounts").await;
    assert_eq!(
        own,
        json!([{ "account": ACCOUNT, "throttling": { "ratePerSecond": 0.0, "burst": 1 } }])
    );
    let page = site.page(&login.cookie, "/console/faults").await;
    assert!(
        page.contains(&format!("Account {ACCOUNT} is refused every call.")),
        "{page}"
    );
    assert!(page.contains("0 (every call refused)"), "{page}");
    let admin = site.admin_get("/admin/audit?actor=admin").await;
    assert_eq!(admin[0]["path"], "/console/throttling/accounts", "{admin}");

    // What /admin refuses, the console refuses, saying why.
    for (fields, why) in [
        (
            [("account", "team-typo"), ("rate", "1"), ("burst", "1")],
            "no API key is for account",
        ),
        (
            [("account", ACCOUNT), ("rate", "1"), ("burst", "0")],
            "burst: must be at least 1",
        ),
    ] {
        site.post(&login, "/console/throttling/accounts", &fields)
            .await;
        let page = site.page(&login.cookie, "/console/faults").await;
        assert!(page.contains(why), "{why}: {page}");
    }
    assert_eq!(
        site.admin_get("/admin/throttling/accounts").await,
        own,
        "refused forms change nothing"
    );

    let cleared = site
        .post(
            &login,
            "/console/throttling/accounts/clear",
            &[("account", ACCOUNT)],
        )
        .await;
    assert_eq!(cleared.status(), StatusCode::SEE_OTHER);
    assert_eq!(list_vpcs().await.unwrap().status(), StatusCode::OK);
    let page = site.page(&login.cookie, "/console/faults").await;
    assert!(page.contains("has the default rate again"), "{page}");
    assert!(
        page.contains("None: every account has the rate above."),
        "{page}"
    );
}

#[tokio::test]
async fn an_open_event_stream_does_not_hold_the_shutdown_open() {
    let site = Site::start().await;
    let login = site.login().await;
    let stream = site
        .http
        .get(site.url("/console/live?watch=everything"))
        .header(COOKIE, &login.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let shutdown = tokio::time::timeout(Duration::from_secs(5), site.server.shutdown()).await;
    assert!(matches!(shutdown, Ok(Ok(()))), "{shutdown:?}");
    drop(stream);
}

/// The page's flash, once it follows a form.
async fn flash_of(site: &Site, login: &Login) -> String {
    let page = site.page(&login.cookie, "/console/snapshots").await;
    let start = page.find("class=\"flash").expect("a flash");
    let text = &page[start..];
    let text = &text[text.find('>').unwrap() + 1..];
    text[..text.find("</p>").unwrap()].to_owned()
}

#[tokio::test]
async fn a_snapshot_is_saved_listed_downloaded_and_deleted_in_the_console() {
    let site = Site::start().await;
    site.create_vpc(json!({})).await;
    let login = site.login().await;
    let page = site.page(&login.cookie, "/console/snapshots").await;
    assert!(
        page.contains("<a href=\"/console/snapshots\" aria-current=\"page\">"),
        "the navigation links the page: {page}"
    );
    assert!(page.contains("None saved yet."), "{page}");
    assert!(page.contains("Nothing recorded yet."), "{page}");

    let saved = site
        .post(&login, "/console/snapshots", &[("name", "before")])
        .await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    assert_eq!(saved.headers()[LOCATION], "/console/snapshots");
    let page = site.page(&login.cookie, "/console/snapshots").await;
    assert!(
        page.contains("Snapshot before saved: 1 resource, "),
        "{page}"
    );
    for cell in [
        "<td class=\"id\">before</td>",
        "<td>1 (1 VPC)</td>",
        &format!("<td>{ACCOUNT}</td>"),
        "<td>v1</td>",
        "href=\"/console/snapshots/before/file\"",
    ] {
        assert!(page.contains(cell), "{cell}: {page}");
    }
    let admin = site.admin_get("/admin/audit?actor=admin").await;
    assert_eq!(admin[0]["path"], "/console/snapshots", "{admin}");
    assert_eq!(admin[0]["status"], 201, "{admin}");

    // The download is the file /admin serves.
    let download = site
        .get(&login.cookie, "/console/snapshots/before/file")
        .await;
    assert_eq!(download.status(), StatusCode::OK);
    let disposition = download.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(disposition.starts_with("attachment"), "{disposition}");
    let file = download.bytes().await.unwrap();
    let from_admin = site
        .http
        .get(site.url("/admin/snapshots/before"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(file, from_admin);

    // What /admin refuses, the console refuses, in its words.
    site.post(&login, "/console/snapshots", &[("name", "before")])
        .await;
    let refused = flash_of(&site, &login).await;
    assert!(refused.contains("a snapshot named"), "{refused}");
    assert!(refused.contains("exists"), "{refused}");

    // Deleting takes the ticked box.
    let unconfirmed = site
        .post(&login, "/console/snapshots/before/delete", &[])
        .await;
    assert_eq!(unconfirmed.status(), StatusCode::SEE_OTHER);
    let refused = flash_of(&site, &login).await;
    assert!(refused.starts_with("Nothing deleted"), "{refused}");
    assert_eq!(
        site.admin_get("/admin/snapshots").await[0]["name"],
        "before"
    );
    site.post(
        &login,
        "/console/snapshots/before/delete",
        &[("confirm", "yes")],
    )
    .await;
    let deleted = flash_of(&site, &login).await;
    assert_eq!(deleted, "Snapshot before deleted; the state is untouched.");
    assert_eq!(site.admin_get("/admin/snapshots").await, json!([]));
    assert_eq!(site.admin_get("/admin/resources").await[0]["kind"], "vpc");
}

#[tokio::test]
async fn a_load_is_confirmed_on_a_page_that_says_what_it_replaces() {
    let site = Site::start().await;
    site.create_vpc(json!({})).await;
    let login = site.login().await;
    site.post(&login, "/console/snapshots", &[("name", "one-vpc")])
        .await;
    site.create_vpc(json!({})).await;
    let resources = || async {
        site.admin_get("/admin/resources")
            .await
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(resources().await, 2);

    // The list's Load button only opens the confirmation page (a GET).
    let list = site.page(&login.cookie, "/console/snapshots").await;
    assert!(
        list.contains(
            "<form class=\"inline\" method=\"get\" action=\"/console/snapshots/one-vpc/load\">"
        ),
        "{list}"
    );
    let merge = site
        .page(
            &login.cookie,
            "/console/snapshots/one-vpc/load?strategy=merge",
        )
        .await;
    assert!(merge.contains("Load snapshot one-vpc?"), "{merge}");
    assert!(
        merge.contains(&format!(
            "The accounts in the file: <strong>{ACCOUNT}</strong>"
        )),
        "{merge}"
    );
    assert!(merge.contains("stay as they are"), "{merge}");
    assert!(merge.contains("name=\"csrf\""), "{merge}");
    let overwrite = site
        .page(
            &login.cookie,
            "/console/snapshots/one-vpc/load?strategy=overwrite",
        )
        .await;
    assert!(
        overwrite.contains("<strong>The whole state</strong>"),
        "{overwrite}"
    );
    assert!(
        overwrite.contains("action=\"/console/snapshots/one-vpc/load\""),
        "{overwrite}"
    );
    assert!(
        overwrite.contains("name=\"strategy\" value=\"overwrite\""),
        "{overwrite}"
    );
    assert_eq!(
        resources().await,
        2,
        "showing what a load would do loads nothing"
    );

    // Bad input is refused in the admin API's words.
    let unknown = site
        .get(
            &login.cookie,
            "/console/snapshots/one-vpc/load?strategy=swap",
        )
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    assert!(unknown.text().await.unwrap().contains("strategy"));
    let missing = site
        .get(&login.cookie, "/console/snapshots/none/load?strategy=merge")
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        missing
            .text()
            .await
            .unwrap()
            .contains("no snapshot named &quot;none&quot;")
    );

    // A load without the confirmation page's field does nothing.
    site.post(
        &login,
        "/console/snapshots/one-vpc/load",
        &[("strategy", "overwrite")],
    )
    .await;
    let refused = flash_of(&site, &login).await;
    assert!(refused.starts_with("Nothing loaded"), "{refused}");
    assert_eq!(resources().await, 2);

    let loaded = site
        .post(
            &login,
            "/console/snapshots/one-vpc/load",
            &[("strategy", "overwrite"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(loaded.status(), StatusCode::SEE_OTHER);
    let flash = flash_of(&site, &login).await;
    assert_eq!(
        flash,
        "Snapshot one-vpc loaded (overwrite): the whole state replaced; 1 resource from the file."
    );
    assert_eq!(resources().await, 1);
    site.post(
        &login,
        "/console/snapshots/one-vpc/load",
        &[("strategy", "merge"), ("confirm", "yes")],
    )
    .await;
    let flash = flash_of(&site, &login).await;
    assert!(
        flash.contains(&format!("(merge): accounts {ACCOUNT} replaced")),
        "{flash}"
    );
}

#[tokio::test]
async fn snapshot_and_recorder_forms_without_the_token_are_refused() {
    let site = Site::start().await;
    let login = site.login().await;
    site.post(&login, "/console/snapshots", &[("name", "kept")])
        .await;
    for (path, fields) in [
        ("/console/snapshots", vec![("name", "sneaky")]),
        (
            "/console/snapshots/kept/load",
            vec![("strategy", "overwrite"), ("confirm", "yes")],
        ),
        ("/console/snapshots/kept/delete", vec![("confirm", "yes")]),
        ("/console/recorder/start", vec![]),
        ("/console/recorder/stop", vec![]),
    ] {
        let refused = site
            .http
            .post(site.url(path))
            .header(COOKIE, &login.cookie)
            .header(ORIGIN, site.origin())
            .form(&fields)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let snapshots = site.admin_get("/admin/snapshots").await;
    assert_eq!(snapshots.as_array().unwrap().len(), 1, "{snapshots}");
    assert_eq!(snapshots[0]["name"], "kept");
    let recording = site
        .http
        .get(site.url("/admin/recorder"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(
        recording.status(),
        StatusCode::NOT_FOUND,
        "nothing recorded"
    );
}

#[tokio::test]
async fn a_hostile_snapshot_name_shows_as_text() {
    let site = Site::start().await;
    let login = site.login().await;
    let hostile = "<script>alert('snapshot')</script>";
    site.post(&login, "/console/snapshots", &[("name", hostile)])
        .await;
    let page = site.page(&login.cookie, "/console/snapshots").await;
    let escaped = "&lt;script&gt;alert('snapshot')&lt;/script&gt;";
    assert!(page.contains(escaped), "{page}");
    assert!(page.contains("is not a snapshot name"), "{page}");
    assert!(!page.contains(hostile), "{page}");
    assert_eq!(site.admin_get("/admin/snapshots").await, json!([]));
    let path = format!(
        "/console/snapshots/{}/load?strategy=merge",
        "%3Cscript%3Ealert('snapshot')%3C%2Fscript%3E"
    );
    let refused = site.get(&login.cookie, &path).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let page = refused.text().await.unwrap();
    assert!(page.contains(escaped), "{page}");
    assert!(!page.contains(hostile), "{page}");
}

#[tokio::test]
async fn the_recorder_is_started_stopped_and_downloaded_in_the_console() {
    let site = Site::start().await;
    let login = site.login().await;
    site.post(&login, "/console/recorder/start", &[]).await;
    let flash = flash_of(&site, &login).await;
    assert!(flash.starts_with("Recording"), "{flash}");
    site.post(&login, "/console/recorder/start", &[]).await;
    let refused = flash_of(&site, &login).await;
    assert!(refused.contains("a recording runs already"), "{refused}");
    site.create_vpc(json!({})).await;
    let page = site.page(&login.cookie, "/console/snapshots").await;
    assert!(page.contains(": 1 call so far."), "{page}");
    assert!(page.contains("Recording since "), "{page}");
    assert!(
        page.contains("Stop recording") && !page.contains("Start recording"),
        "only the button that applies: {page}"
    );
    site.post(&login, "/console/recorder/stop", &[]).await;
    let flash = flash_of(&site, &login).await;
    assert_eq!(
        flash,
        "Not recording. The recording holds 1 call, ready to download."
    );
    let page = site.page(&login.cookie, "/console/snapshots").await;
    assert!(
        page.contains("Not recording. The last recording started "),
        "{page}"
    );
    assert!(page.contains("and holds 1 call."), "{page}");
    assert!(
        page.contains("Start recording") && !page.contains("Stop recording"),
        "{page}"
    );
    let file = site.get(&login.cookie, "/console/recorder/file").await;
    assert_eq!(file.status(), StatusCode::OK);
    assert!(
        file.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    let text = file.text().await.unwrap();
    assert!(text.contains("/v1/regions/us-east-1/vpcs"), "{text}");
    let admin = site.admin_get("/admin/audit?actor=admin").await;
    let paths: Vec<&str> = admin
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(paths.contains(&"/console/recorder/stop"), "{paths:?}");
    assert!(paths.contains(&"/console/recorder/start"), "{paths:?}");
}
