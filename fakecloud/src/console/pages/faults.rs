//! Faults and throttling: the fault rules in force, a form to add one by
//! kind, region and operation, the token bucket of every account, and the
//! accounts with a bucket of their own.
//!
//! Adding a rule or setting a bucket goes through the admin API's own
//! handlers, so the console accepts exactly what `/admin` accepts.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use serde::Deserialize;

use super::given;
use crate::admin;
use crate::console::ConsoleState;
use crate::console::error::ConsoleError;
use crate::console::html::{self, Section, csrf_field};
use crate::console::session::{CurrentSession, Flash};
use crate::model::{AccountThrottling, Actor, FaultRule, FaultRuleSpec, Kind, REGIONS, Throttling};

const PAGE: &str = "/console/faults";

/// `GET /console/faults`.
pub async fn page(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Markup {
    let flash = console.sessions.take_flash(&session.key);
    let rules = console.app.faults.list();
    let throttling = console.app.throttle.get();
    let own = console.app.throttle.accounts();
    let body = html! {
        section aria-labelledby="rules-heading" {
            h2 #rules-heading { "Fault rules in force" }
            (rules_table(&session, &rules))
        }
        (add_form(&session))
        (throttling_section(&session, throttling, !own.is_empty()))
        (accounts_section(&session, &own, &accounts(&console)))
    };
    html::page(
        "Faults & throttling",
        Section::Faults,
        &session,
        flash,
        body,
    )
}

fn rules_table(session: &CurrentSession, rules: &[FaultRule]) -> Markup {
    html! {
        @if rules.is_empty() {
            p .empty { "None: every call is served." }
        } @else {
            div .scroll {
                table .rules {
                    thead {
                        tr {
                            th scope="col" { "Rule" }
                            th scope="col" { "Method" }
                            th scope="col" { "Path prefix" }
                            th scope="col" { "Answer" }
                            th scope="col" { "Fired" }
                            th scope="col" { "Probability" }
                            th scope="col" { "Latency" }
                            th scope="col" { span .visually-hidden { "Remove" } }
                        }
                    }
                    tbody {
                        @for rule in rules {
                            @let spec = &rule.spec;
                            tr {
                                td { (rule.id) }
                                td { (spec.method.as_deref().unwrap_or("any")) }
                                td .path { (spec.path_prefix) }
                                td {
                                    @match spec.status {
                                        Some(status) => {
                                            span class=(html::status_class(i64::from(status))) { (status) }
                                            " " (spec.code.as_deref().unwrap_or("InjectedFault"))
                                        }
                                        None => "served (latency only)",
                                    }
                                }
                                td {
                                    (rule.fired)
                                    @if let Some(times) = spec.times { " of " (times) }
                                }
                                td { (spec.probability.unwrap_or(1.0)) }
                                td { (spec.latency_ms.unwrap_or(0)) " ms" }
                                td {
                                    form .inline method="post" action=(format!("{PAGE}/{}/remove", rule.id)) {
                                        (csrf_field(session))
                                        button type="submit" .small aria-label=(format!("Remove rule {}", rule.id)) { "Remove" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            form method="post" action=(format!("{PAGE}/clear")) {
                (csrf_field(session))
                button type="submit" .danger { "Clear every rule" }
            }
        }
    }
}

/// Operations a rule can match, by HTTP method.
const OPERATIONS: [(&str, &str); 5] = [
    ("", "any"),
    ("POST", "create (POST)"),
    ("GET", "read and list (GET)"),
    ("PATCH", "update (PATCH)"),
    ("DELETE", "delete (DELETE)"),
];

fn add_form(session: &CurrentSession) -> Markup {
    html! {
        section aria-labelledby="add-heading" {
            h2 #add-heading { "Add a fault rule" }
            p .muted { "Matching " code { "/v1" } " calls get the status instead of being served \
                (leave it empty to only add latency)." }
            form .grid-form method="post" action=(format!("{PAGE}/add")) {
                (csrf_field(session))
                div .field {
                    label for="fault-kind" { "Kind" }
                    select #fault-kind name="kind" {
                        option value="" { "any" }
                        @for kind in Kind::ALL {
                            option value=(kind.as_str()) { (html::kind_label(kind)) }
                        }
                    }
                }
                div .field {
                    label for="fault-region" { "Region" }
                    select #fault-region name="region" {
                        @for region in REGIONS { option value=(region) { (region) } }
                    }
                }
                div .field {
                    label for="fault-operation" { "Operation" }
                    select #fault-operation name="operation" {
                        @for (method, label) in OPERATIONS { option value=(method) { (label) } }
                    }
                }
                div .field {
                    label for="fault-status" { "Status" }
                    input #fault-status type="number" name="status" min="400" max="599" value="503";
                }
                div .field {
                    label for="fault-count" { "Count (empty: until removed)" }
                    input #fault-count type="number" name="count" min="1";
                }
                div .field {
                    label for="fault-probability" { "Probability (0 to 1)" }
                    input #fault-probability type="number" name="probability" min="0" max="1" step="0.01";
                }
                div .field {
                    label for="fault-latency" { "Latency (ms)" }
                    input #fault-latency type="number" name="latency" min="0";
                }
                div .buttons { button type="submit" { "Add rule" } }
            }
        }
    }
}

/// The default bucket; `overridden` when some accounts have their own.
fn throttling_section(
    session: &CurrentSession,
    throttling: Option<Throttling>,
    overridden: bool,
) -> Markup {
    let accounts = if overridden {
        "Each account without a rate of its own"
    } else {
        "Each account"
    };
    html! {
        section aria-labelledby="throttling-heading" {
            h2 #throttling-heading { "Throttling" }
            p {
                @match throttling {
                    Some(t) if t.rate_per_second == 0.0 => {
                        (accounts) " is " strong { "refused every call" } " (rate 0): 429 with Retry-After."
                    }
                    Some(t) => {
                        (accounts) " may make " strong { (t.rate_per_second) " calls per second" }
                        " (bursts of " (t.burst) "); calls beyond get 429 with Retry-After."
                    }
                    None if overridden => "Off for every account without a rate of its own.",
                    None => "Off: no account is throttled.",
                }
            }
            form .grid-form method="post" action="/console/throttling" {
                (csrf_field(session))
                div .field {
                    label for="rate" { "Calls per second, per account" }
                    input #rate type="number" name="rate" min="0" step="any" required
                        value=(throttling.map_or(5.0, |t| t.rate_per_second));
                }
                div .field {
                    label for="burst" { "Burst" }
                    input #burst type="number" name="burst" min="1" required
                        value=(throttling.map_or(10, |t| t.burst));
                }
                div .buttons { button type="submit" { "Set throttling" } }
            }
            @if throttling.is_some() {
                form method="post" action="/console/throttling/clear" {
                    (csrf_field(session))
                    button type="submit" { "Stop throttling" }
                }
            }
        }
    }
}

/// The accounts API keys name, once each and sorted: the only accounts a
/// rate of their own can apply to.
fn accounts(console: &ConsoleState) -> Vec<String> {
    let mut accounts: Vec<String> = console.app.api_keys.values().cloned().collect();
    accounts.sort();
    accounts.dedup();
    accounts
}

/// The accounts with a bucket of their own, and a form to give one its own
/// or put it back on the default.
fn accounts_section(
    session: &CurrentSession,
    own: &[AccountThrottling],
    accounts: &[String],
) -> Markup {
    html! {
        section aria-labelledby="account-throttling-heading" {
            h2 #account-throttling-heading { "Accounts with a rate of their own" }
            @if own.is_empty() {
                p .empty { "None: every account has the rate above." }
            } @else {
                div .scroll {
                    table .account-throttling {
                        thead {
                            tr {
                                th scope="col" { "Account" }
                                th scope="col" { "Calls per second" }
                                th scope="col" { "Burst" }
                                th scope="col" { span .visually-hidden { "Back to the default" } }
                            }
                        }
                        tbody {
                            @for each in own {
                                @let t = each.throttling;
                                tr {
                                    td { (each.account) }
                                    td {
                                        @if t.rate_per_second == 0.0 { "0 (every call refused)" }
                                        @else { (t.rate_per_second) }
                                    }
                                    td { (t.burst) }
                                    td {
                                        form .inline method="post" action="/console/throttling/accounts/clear" {
                                            (csrf_field(session))
                                            input type="hidden" name="account" value=(each.account);
                                            button type="submit" .small
                                                aria-label=(format!("Put account {} back on the default rate", each.account)) {
                                                "Back to the default"
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p .muted { "An account's own rate wins over the one above, for that account only; \
                rate 0 refuses every call of the account. Setting it refills only that account's bucket." }
            form .grid-form method="post" action="/console/throttling/accounts" {
                (csrf_field(session))
                div .field {
                    label for="account-throttling-account" { "Account" }
                    select #account-throttling-account name="account" required {
                        @for account in accounts { option value=(account) { (account) } }
                    }
                }
                div .field {
                    label for="account-rate" { "Calls per second" }
                    input #account-rate type="number" name="rate" min="0" step="any" required value="0";
                }
                div .field {
                    label for="account-burst" { "Burst" }
                    input #account-burst type="number" name="burst" min="1" required value="1";
                }
                div .buttons { button type="submit" { "Set the account's rate" } }
            }
        }
    }
}

#[derive(Deserialize, Default)]
pub struct FaultForm {
    kind: Option<String>,
    region: Option<String>,
    operation: Option<String>,
    status: Option<String>,
    count: Option<String>,
    probability: Option<String>,
    latency: Option<String>,
}

/// The prefix of the paths a rule for `kind` in `region` matches; node
/// groups are the only kind below `clusters/`.
fn path_prefix(kind: Option<Kind>, region: &str) -> String {
    match kind {
        None => format!("/v1/regions/{region}/"),
        Some(kind) if kind.in_cluster() => format!("/v1/regions/{region}/clusters/"),
        Some(kind) => format!("/v1/regions/{region}/{}", kind.collection()),
    }
}

fn number<T: std::str::FromStr>(value: &Option<String>, name: &str) -> Result<Option<T>, String> {
    given(value)
        .map(|v| {
            v.parse()
                .map_err(|_| format!("{name}: {v:?} is not a number"))
        })
        .transpose()
}

impl FaultForm {
    fn spec(&self) -> Result<FaultRuleSpec, String> {
        let region = given(&self.region).unwrap_or_else(|| REGIONS[0].to_owned());
        if !REGIONS.contains(&region.as_str()) {
            return Err(format!(
                "region: {region:?} is not one of {}",
                REGIONS.join(", ")
            ));
        }
        let kind = given(&self.kind)
            .map(|k| Kind::parse(&k).ok_or(format!("kind: {k:?} is not a kind")))
            .transpose()?;
        Ok(FaultRuleSpec {
            method: given(&self.operation),
            path_prefix: path_prefix(kind, &region),
            status: number(&self.status, "status")?,
            times: number(&self.count, "count")?,
            probability: number(&self.probability, "probability")?,
            latency_ms: number(&self.latency, "latency")?,
            ..FaultRuleSpec::default()
        })
    }
}

/// Audits the console's admin action and goes back to the page with its
/// outcome.
fn done(
    console: &ConsoleState,
    session: &CurrentSession,
    path: &str,
    status: StatusCode,
    flash: Flash,
) -> Response {
    console.audit(session, Actor::Admin, None, path.to_owned(), status);
    console.sessions.set_flash(&session.key, flash);
    Redirect::to(PAGE).into_response()
}

/// `POST /console/faults/add`.
pub async fn add(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Form(form): Form<FaultForm>,
) -> Result<Response, ConsoleError> {
    let path = "/console/faults/add";
    let spec = match form.spec() {
        Ok(spec) => spec,
        Err(message) => {
            let flash = Flash::error(message);
            return Ok(done(
                &console,
                &session,
                path,
                StatusCode::BAD_REQUEST,
                flash,
            ));
        }
    };
    let body = serde_json::to_vec(&spec).map_err(|_| ConsoleError::Body)?;
    let answer = admin::add_fault(State(console.app.clone()), Bytes::from(body)).await;
    Ok(match answer {
        Ok(response) => {
            let effect = match spec.status {
                Some(status) => format!("answer {status}"),
                None => "wait".to_owned(),
            };
            let flash = Flash::ok(format!(
                "Rule added: {} calls under {} now {effect}.",
                spec.method.as_deref().unwrap_or("all"),
                spec.path_prefix
            ));
            done(&console, &session, path, response.status(), flash)
        }
        Err(err) => done(
            &console,
            &session,
            path,
            err.status,
            Flash::error(err.detail),
        ),
    })
}

/// `POST /console/faults/{id}/remove`.
pub async fn remove(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Path(id): Path<String>,
) -> Response {
    let path = format!("{PAGE}/{id}/remove");
    let removed = id.parse().is_ok_and(|id| console.app.faults.remove(id));
    if removed {
        let flash = Flash::ok(format!("Rule {id} removed."));
        done(&console, &session, &path, StatusCode::NO_CONTENT, flash)
    } else {
        let flash = Flash::error(format!("There is no rule {id} (any more)."));
        done(&console, &session, &path, StatusCode::NOT_FOUND, flash)
    }
}

/// `POST /console/faults/clear`.
pub async fn clear(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Response {
    console.app.faults.clear();
    let flash = Flash::ok("Every fault rule removed.");
    done(
        &console,
        &session,
        "/console/faults/clear",
        StatusCode::NO_CONTENT,
        flash,
    )
}

#[derive(Deserialize, Default)]
pub struct ThrottlingForm {
    rate: Option<String>,
    burst: Option<String>,
}

impl ThrottlingForm {
    /// The bucket the form asks for; the admin handler checks its values.
    fn throttling(&self) -> Result<Throttling, String> {
        let rate = number::<f64>(&self.rate, "rate")?;
        let burst = number::<u32>(&self.burst, "burst")?;
        match (rate, burst) {
            (Some(rate_per_second), Some(burst)) => Ok(Throttling {
                rate_per_second,
                burst,
            }),
            _ => Err("rate and burst are both needed".to_owned()),
        }
    }
}

/// What a bucket does, for a flash message.
fn describe(throttling: Throttling) -> String {
    if throttling.rate_per_second == 0.0 {
        "is refused every call".to_owned()
    } else {
        format!(
            "may now make {} calls per second (bursts of {})",
            throttling.rate_per_second, throttling.burst
        )
    }
}

/// `POST /console/throttling`.
pub async fn set_throttling(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Form(form): Form<ThrottlingForm>,
) -> Result<Response, ConsoleError> {
    let path = "/console/throttling";
    let throttling = match form.throttling() {
        Ok(throttling) => throttling,
        Err(message) => {
            let flash = Flash::error(message);
            return Ok(done(
                &console,
                &session,
                path,
                StatusCode::BAD_REQUEST,
                flash,
            ));
        }
    };
    let body = serde_json::to_vec(&throttling).map_err(|_| ConsoleError::Body)?;
    Ok(
        match admin::set_throttling(State(console.app.clone()), Bytes::from(body)).await {
            Ok(_) => {
                let flash = Flash::ok(format!("Each account {}.", describe(throttling)));
                done(&console, &session, path, StatusCode::OK, flash)
            }
            Err(err) => done(
                &console,
                &session,
                path,
                err.status,
                Flash::error(err.detail),
            ),
        },
    )
}

/// `POST /console/throttling/clear`.
pub async fn clear_throttling(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
) -> Response {
    console.app.throttle.set(None);
    let flash = if console.app.throttle.accounts().is_empty() {
        Flash::ok("Throttling is off.")
    } else {
        Flash::ok("Throttling is off for every account without a rate of its own.")
    };
    done(
        &console,
        &session,
        "/console/throttling/clear",
        StatusCode::NO_CONTENT,
        flash,
    )
}

#[derive(Deserialize)]
pub struct AccountThrottlingForm {
    account: Option<String>,
    #[serde(flatten)]
    bucket: ThrottlingForm,
}

/// `POST /console/throttling/accounts`: the account's own bucket.
pub async fn set_account_throttling(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Form(form): Form<AccountThrottlingForm>,
) -> Result<Response, ConsoleError> {
    let path = "/console/throttling/accounts";
    let parsed = given(&form.account)
        .ok_or_else(|| "account: pick one".to_owned())
        .and_then(|account| Ok((account, form.bucket.throttling()?)));
    let (account, throttling) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => {
            let flash = Flash::error(message);
            return Ok(done(
                &console,
                &session,
                path,
                StatusCode::BAD_REQUEST,
                flash,
            ));
        }
    };
    let body = serde_json::to_vec(&throttling).map_err(|_| ConsoleError::Body)?;
    let answer = admin::set_account_throttling(
        State(console.app.clone()),
        Path(account.clone()),
        Bytes::from(body),
    )
    .await;
    Ok(match answer {
        Ok(_) => {
            let flash = Flash::ok(format!("Account {account} {}.", describe(throttling)));
            done(&console, &session, path, StatusCode::OK, flash)
        }
        Err(err) => done(
            &console,
            &session,
            path,
            err.status,
            Flash::error(err.detail),
        ),
    })
}

#[derive(Deserialize)]
pub struct AccountForm {
    account: Option<String>,
}

/// `POST /console/throttling/accounts/clear`: the account back on the
/// default bucket.
pub async fn clear_account_throttling(
    State(console): State<ConsoleState>,
    Extension(session): Extension<CurrentSession>,
    Form(form): Form<AccountForm>,
) -> Response {
    let path = "/console/throttling/accounts/clear";
    let account = given(&form.account).unwrap_or_default();
    if console.app.throttle.clear_account(&account) {
        let flash = Flash::ok(format!("Account {account} has the default rate again."));
        done(&console, &session, path, StatusCode::NO_CONTENT, flash)
    } else {
        let flash = Flash::error(format!(
            "Account {account:?} has no rate of its own (any more)."
        ));
        done(&console, &session, path, StatusCode::NOT_FOUND, flash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_for_a_kind_matches_its_collection_in_the_region() {
        assert_eq!(
            path_prefix(Some(Kind::Vpc), "us-east-1"),
            "/v1/regions/us-east-1/vpcs"
        );
        assert_eq!(
            path_prefix(Some(Kind::NodeGroup), "eu-west-1"),
            "/v1/regions/eu-west-1/clusters/"
        );
        assert_eq!(path_prefix(None, "us-west-2"), "/v1/regions/us-west-2/");
    }

    #[test]
    fn the_form_becomes_a_rule_spec() {
        let form = FaultForm {
            kind: Some("vpc".into()),
            region: Some("us-east-1".into()),
            operation: Some("GET".into()),
            status: Some("503".into()),
            count: Some("2".into()),
            probability: Some("".into()),
            latency: None,
        };
        let spec = form.spec().unwrap();
        assert_eq!(spec.method.as_deref(), Some("GET"));
        assert_eq!(spec.path_prefix, "/v1/regions/us-east-1/vpcs");
        assert_eq!(
            (spec.status, spec.times, spec.probability),
            (Some(503), Some(2), None)
        );
        let bad = FaultForm {
            count: Some("two".into()),
            ..FaultForm::default()
        };
        assert!(bad.spec().unwrap_err().contains("count"));
    }
}
