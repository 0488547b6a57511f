//! fakecloud's web console in a real browser: headless Chromium, driven
//! over WebDriver, against a control plane, fakecloud and the provider.
//!
//! A person logs in (keyboard only), watches a VPC the provider creates
//! appear and become available, watches the provider's calls arrive in the
//! audit, injects a fault and sees the provider's call fail with it,
//! changes a tag as an outside actor (a hostile value that must show as
//! text) and sees the change, and the provider undoing it, in the
//! resource's history, saves a snapshot of the state, loads it back after
//! its confirmation page and deletes it, records the provider's calls for
//! a while, and logs out. Pages are never reloaded where the
//! console promises live updates: a marker set in the page must survive.
//!
//! Needs Debian's `chromium` and `chromium-driver` (scripts/setup test);
//! without them the test fails, saying so. With `CONSOLE_SCREENSHOTS=1` it
//! writes the documentation's screenshots to `docs/console/`.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use apis::kinds::provider_config::ProviderConfig;
use e2e::TestCluster;
use e2e::browser::ChromeDriver;
use e2e::objects::Objects;
use e2e::scope::{Legacy, Scope};
use e2e::world::{NAMESPACE, USER_MANAGER, external_name, is_ready};
use fakecloud::client::{Client as CloudClient, RetryPolicy};
use fakecloud::model::{
    CreateDatabaseInstance, CreateNodeGroup, CreateSubnet, CreateVpc, Engine, ScalingConfigInput,
};
use fantoccini::key::Key;
use fantoccini::{Client as Browser, ClientBuilder, Locator};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const ADMIN_TOKEN: &str = "console-e2e-admin-token";
const PROVIDER_KEY: &str = "console-e2e-provider-key";
const TEAM_B_KEY: &str = "console-e2e-team-b-key";
const REGION: &str = "us-east-1";
/// Long enough to watch a resource provision.
const PROVISIONING: Duration = Duration::from_secs(3);
/// How long anything the test waits for may take.
const PATIENCE: Duration = Duration::from_secs(45);
const HOSTILE: &str = "<script>alert('console')</script>";

/// A control plane, fakecloud with its console, and the provider.
struct System {
    cluster: TestCluster,
    objects: Objects,
    cloud: fakecloud::RunningServer,
    provider: CancellationToken,
    provider_task: JoinHandle<Result<(), provider::RunError>>,
    _dir: tempfile::TempDir,
}

impl System {
    /// As `e2e::world::World` builds one, with an admin token of the test's
    /// own: the console is logged into with it.
    async fn start() -> Result<System> {
        let dir = tempfile::tempdir()?;
        let mut config =
            fakecloud::Config::new(dir.path().join("fakecloud.db").display().to_string());
        config.admin_token = Some(ADMIN_TOKEN.into());
        config.api_keys = vec![
            fakecloud::ApiKey::new(PROVIDER_KEY, "dev"),
            fakecloud::ApiKey::new(TEAM_B_KEY, "team-b"),
        ];
        config.default_delay = PROVISIONING;
        let (cluster, cloud) = tokio::join!(TestCluster::start(), fakecloud::spawn(config));
        let (cluster, cloud) = (cluster?, cloud?);
        let objects = Objects::new(cluster.client(), USER_MANAGER);
        let namespace =
            serde_json::from_value::<Namespace>(json!({ "metadata": { "name": NAMESPACE } }))?;
        match Api::<Namespace>::all(cluster.client())
            .create(&PostParams::default(), &namespace)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        objects
            .apply_namespaced::<Secret>(
                NAMESPACE,
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": { "name": "default-credentials", "namespace": NAMESPACE },
                    "stringData": { "apiKey": PROVIDER_KEY },
                }),
            )
            .await?;
        objects
            .apply::<ProviderConfig>(json!({
                "apiVersion": <ProviderConfig as kube::Resource>::api_version(&()),
                "kind": "ProviderConfig",
                "metadata": { "name": "default" },
                "spec": {
                    "endpoint": cloud.base_url(),
                    "credentials": { "source": "Secret", "secretRef": {
                        "namespace": NAMESPACE, "name": "default-credentials", "key": "apiKey" } },
                },
            }))
            .await?;
        let config = <provider::config::Config as clap::Parser>::try_parse_from([
            "provider",
            "--metrics-addr=127.0.0.1:0",
            "--health-addr=127.0.0.1:0",
            "--poll-interval=1s",
            "--pending-poll-interval=250ms",
        ])?;
        let provider = CancellationToken::new();
        let provider_task = tokio::spawn(provider::run(
            config,
            cluster.client(),
            runtime::metrics::Metrics::new(),
            provider.clone(),
        ));
        Ok(System {
            cluster,
            objects,
            cloud,
            provider,
            provider_task,
            _dir: dir,
        })
    }

    fn console(&self, path: &str) -> String {
        format!("{}/console{path}", self.cloud.base_url())
    }

    /// Resources of another account, made directly in the cloud, so the
    /// resources page has every kind to show.
    async fn seed_team_b(&self) -> Result<()> {
        let cloud =
            CloudClient::new(self.cloud.base_url(), TEAM_B_KEY).with_retry(RetryPolicy::none());
        let tags = |name: &str| {
            Some(
                [
                    ("Name".to_owned(), name.to_owned()),
                    ("team".to_owned(), "b".to_owned()),
                ]
                .into(),
            )
        };
        let vpc = cloud
            .create_vpc(
                REGION,
                &CreateVpc {
                    cidr_block: "10.20.0.0/16".into(),
                    tags: tags("team-b-network"),
                    ..Default::default()
                },
                None,
            )
            .await?
            .resource;
        let subnet = cloud
            .create_subnet(
                REGION,
                &CreateSubnet {
                    vpc_id: vpc.id.clone(),
                    cidr_block: "10.20.1.0/24".into(),
                    tags: tags("team-b-private-a"),
                    ..Default::default()
                },
                None,
            )
            .await?
            .resource;
        cloud
            .create_node_group(
                REGION,
                "team-b-cluster",
                &CreateNodeGroup {
                    name: "workers".into(),
                    subnet_ids: vec![subnet.id.clone()],
                    node_role: "arn:fake:iam::team-b:role/nodes".into(),
                    scaling_config: Some(ScalingConfigInput {
                        min_size: Some(1),
                        max_size: Some(5),
                        desired_size: Some(2),
                    }),
                    tags: tags("team-b-workers"),
                    ..Default::default()
                },
                None,
            )
            .await?;
        cloud
            .create_database_instance(
                REGION,
                &CreateDatabaseInstance {
                    identifier: "team-b-orders".into(),
                    engine: Engine::Postgres,
                    master_username: "orders".into(),
                    master_password: "not-a-real-secret-1".into(),
                    subnet_ids: Some(vec![subnet.id]),
                    tags: tags("team-b-orders"),
                    ..Default::default()
                },
                None,
            )
            .await?;
        Ok(())
    }

    async fn shutdown(self) {
        self.provider.cancel();
        let _ = self.provider_task.await;
        let _ = self.cloud.shutdown().await;
        drop(self.cluster);
    }
}

/// Polls `check` until it yields a value; fails after [`PATIENCE`] naming
/// `what`.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("waited {PATIENCE:?} for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `script` in the page and returns what it returns.
async fn run(browser: &Browser, script: &str) -> Result<Value> {
    Ok(browser.execute(script, vec![]).await?)
}

async fn path_of(browser: &Browser) -> Result<String> {
    Ok(browser.current_url().await?.path().to_owned())
}

/// Marks the page; [`still_same_page`] tells whether it was reloaded since.
async fn mark_page(browser: &Browser) -> Result<()> {
    run(
        browser,
        "window.consoleTestMark = 'not reloaded'; return true;",
    )
    .await?;
    Ok(())
}

async fn still_same_page(browser: &Browser) -> Result<bool> {
    Ok(run(browser, "return window.consoleTestMark === 'not reloaded';").await? == json!(true))
}

/// The texts of the cells of every row of the table `table`.
async fn rows(browser: &Browser, table: &str) -> Result<Vec<Vec<String>>> {
    let script = format!(
        "return Array.from(document.querySelectorAll('{table} tbody tr'), \
         tr => Array.from(tr.cells, td => td.innerText.trim()));"
    );
    Ok(serde_json::from_value(run(browser, &script).await?)?)
}

/// Where screenshots go: the documentation's folder when asked for, else a
/// temporary one.
fn screenshot_dir() -> PathBuf {
    if std::env::var("CONSOLE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/console")
    } else {
        std::env::temp_dir().join("fakecloud-console-screenshots")
    }
}

async fn screenshot(browser: &Browser, name: &str) -> Result<()> {
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    std::fs::write(&path, browser.screenshot().await?)?;
    tracing::info!(path = %path.display(), "screenshot");
    Ok(())
}

#[tokio::test]
async fn a_person_watches_and_changes_the_cloud_in_the_console() -> Result<()> {
    e2e::init_tracing();
    let started = Instant::now();
    // The browser first: without one the test must fail at once, and say why.
    let driver = ChromeDriver::start()
        .await
        .context("the console's browser test needs Chromium and chromedriver")?;
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(driver.capabilities())
        .connect(&driver.url())
        .await
        .with_context(|| {
            format!(
                "starting headless Chromium through chromedriver; its log ends:\n{}",
                e2e::process::log_tail(&driver.log())
            )
        })?;
    let system = System::start().await?;
    let outcome = story(&browser, &system).await;
    if outcome.is_err() {
        let _ = screenshot(&browser, "failure.png").await;
    }
    let _ = browser.close().await;
    system.shutdown().await;
    tracing::info!(elapsed = ?started.elapsed(), "console browser test");
    outcome
}

async fn story(browser: &Browser, system: &System) -> Result<()> {
    log_in(browser, system).await?;
    system.seed_team_b().await?;
    let id = watch_the_provider_create_a_vpc(browser, system).await?;
    watch_calls_arrive(browser, system).await?;
    inject_a_fault(browser, system, &id).await?;
    change_a_tag_as_an_outside_actor(browser, system, &id).await?;
    save_load_and_delete_a_snapshot(browser, system).await?;
    record_the_providers_calls(browser, system).await?;
    log_out(browser, system).await
}

/// Logs in with the keyboard alone: a wrong token first, then the right one.
async fn log_in(browser: &Browser, system: &System) -> Result<()> {
    browser.goto(&system.console("/resources")).await?;
    ensure!(
        path_of(browser).await? == "/console/login",
        "a stranger is sent to the login page"
    );
    let focused = run(browser, "return document.activeElement.id;").await?;
    ensure!(
        focused == json!("token"),
        "the token field has the focus, got {focused}"
    );
    let field = browser.find(Locator::Id("token")).await?;
    field
        .send_keys(&format!("not-the-token{}", &*Key::Enter))
        .await?;
    // A submitted form answers with a new page: wait for it, since a
    // lookup right after the key press can still see the old one.
    let refused = browser
        .wait()
        .for_element(Locator::Css("[role=alert]"))
        .await?
        .text()
        .await?;
    ensure!(
        refused.contains("not the admin token"),
        "a wrong token is refused: {refused}"
    );
    let field = browser.find(Locator::Id("token")).await?;
    field
        .send_keys(&format!("{ADMIN_TOKEN}{}", &*Key::Enter))
        .await?;
    eventually("the summary after login", || async {
        Ok((path_of(browser).await? == "/console").then_some(()))
    })
    .await?;
    let cookies = browser.get_all_cookies().await?;
    let session = cookies
        .iter()
        .find(|c| c.name() == "fakecloud_console")
        .context("a session cookie")?;
    ensure!(
        session.http_only() == Some(true),
        "the session cookie is HttpOnly: {session:?}"
    );
    ensure!(
        session.same_site().is_some_and(|s| s.is_strict()),
        "the session cookie is SameSite=Strict: {session:?}"
    );
    ensure!(session.path() == Some("/console"), "{session:?}");
    ensure!(
        !session.value().contains(ADMIN_TOKEN),
        "the cookie is not the token"
    );
    let visible = run(browser, "return document.cookie;").await?;
    ensure!(
        !visible.to_string().contains("fakecloud_console"),
        "scripts cannot read the session cookie: {visible}"
    );
    ensure!(
        !browser.source().await?.contains(ADMIN_TOKEN),
        "the token is in no page"
    );
    Ok(())
}

/// Opens the resources page, then has the provider create a VPC: its row
/// appears and becomes available without a reload.
async fn watch_the_provider_create_a_vpc(browser: &Browser, system: &System) -> Result<String> {
    browser.goto(&system.console("/resources")).await?;
    mark_page(browser).await?;
    let name = e2e::unique_name("web");
    let tags = json!({ "Name": "web-frontend", "team": "console-demo" });
    system
        .objects
        .apply::<<Legacy as Scope>::Vpc>(e2e::scenarios::network::manifest::<Legacy>(
            &name, &tags, false,
        ))
        .await?;
    let vpc = system
        .objects
        .wait_for::<<Legacy as Scope>::Vpc>(&name, "an external name", PATIENCE, |v| {
            external_name(v).is_some()
        })
        .await?;
    let id = external_name(&vpc).context("the VPC's id")?;
    // Every state the row showed, from its first appearance.
    let mut states: Vec<String> = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while states.last().map(String::as_str) != Some("available") {
        ensure!(
            Instant::now() < deadline,
            "the provider's VPC {id} never showed as available: {states:?}"
        );
        let rows = rows(browser, "table.resources").await?;
        if let Some(state) = rows
            .iter()
            .find(|r| r.get(1) == Some(&id))
            .map(|r| r[3].clone())
            && states.last() != Some(&state)
        {
            // Resources on their way, as a person would catch them.
            if state == "pending" {
                screenshot(browser, "resources.png").await?;
            }
            states.push(state);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::info!(?states, "the VPC's states as the page showed them");
    ensure!(
        still_same_page(browser).await?,
        "the resources page updated itself, no reload"
    );
    system
        .objects
        .wait_for::<<Legacy as Scope>::Vpc>(&name, "Ready", PATIENCE, is_ready)
        .await?;
    if !states.iter().any(|s| s == "pending") {
        screenshot(browser, "resources.png").await?;
    }
    Ok(id)
}

/// The summary counts the resources, settled; the audit page shows the
/// provider's polls as they are answered.
async fn watch_calls_arrive(browser: &Browser, system: &System) -> Result<()> {
    browser.goto(&system.console("")).await?;
    eventually("every resource settled on the summary", || async {
        let source = browser.source().await?;
        Ok((source.contains("ACTIVE") && !source.contains("state moving")).then_some(()))
    })
    .await?;
    screenshot(browser, "summary.png").await?;
    browser.goto(&system.console("/audit?actor=api")).await?;
    mark_page(browser).await?;
    let before = rows(browser, "#audit-log").await?;
    let newest = before.first().cloned();
    eventually("a new call in the audit", || async {
        let now = rows(browser, "#audit-log").await?;
        Ok((now.len() > before.len() || now.first() != newest.as_ref()).then_some(()))
    })
    .await?;
    ensure!(
        still_same_page(browser).await?,
        "the call arrived without a reload"
    );
    Ok(())
}

/// Adds a fault rule in the form and sees the provider's next reads fail
/// with it in the audit.
async fn inject_a_fault(browser: &Browser, system: &System, id: &str) -> Result<()> {
    browser.goto(&system.console("/faults")).await?;
    browser
        .find(Locator::Id("fault-kind"))
        .await?
        .select_by_value("vpc")
        .await?;
    browser
        .find(Locator::Id("fault-region"))
        .await?
        .select_by_value(REGION)
        .await?;
    browser
        .find(Locator::Id("fault-operation"))
        .await?
        .select_by_value("GET")
        .await?;
    let status = browser.find(Locator::Id("fault-status")).await?;
    status.clear().await?;
    status.send_keys("503").await?;
    browser
        .find(Locator::Id("fault-count"))
        .await?
        .send_keys("3")
        .await?;
    browser
        .find(Locator::Css(
            "form[action='/console/faults/add'] button[type=submit]",
        ))
        .await?
        .click()
        .await?;
    let flash = browser
        .wait()
        .for_element(Locator::Css(".flash"))
        .await?
        .text()
        .await?;
    ensure!(flash.contains("Rule added"), "the rule is added: {flash}");
    screenshot(browser, "faults.png").await?;
    browser.goto(&system.console("/audit")).await?;
    let failed = eventually(
        "the provider's read of the VPC failing with 503",
        || async {
            let rows = rows(browser, "#audit-log").await?;
            Ok(rows.into_iter().find(|r| {
                r[2] == "API key (provider)"
                    && r[3] == "GET"
                    && r[4].ends_with(id)
                    && r[5].starts_with("503")
            }))
        },
    )
    .await?;
    tracing::info!(
        ?failed,
        "the provider's call failed with the injected fault"
    );
    let marked = run(
        browser,
        "return document.querySelectorAll('#audit-log .s5xx').length;",
    )
    .await?;
    ensure!(marked.as_u64() > Some(0), "5xx answers stand out");
    screenshot(browser, "audit.png").await
}

/// Sets a hostile tag value on the provider's VPC from its page, as
/// another team would; it shows as text, the history shows the change as
/// an outside actor's, then the provider putting the tag back.
async fn change_a_tag_as_an_outside_actor(
    browser: &Browser,
    system: &System,
    id: &str,
) -> Result<()> {
    browser.goto(&system.console("/resources?kind=vpc")).await?;
    browser.find(Locator::LinkText(id)).await?.click().await?;
    let page = eventually("the VPC's page", || async {
        let page = path_of(browser).await?;
        Ok(page.starts_with("/console/resources/").then_some(page))
    })
    .await?;
    browser
        .find(Locator::Id("tag-key"))
        .await?
        .send_keys("team")
        .await?;
    let value = browser.find(Locator::Id("tag-value")).await?;
    value
        .send_keys(&format!("{HOSTILE}{}", &*Key::Enter))
        .await?;
    let flash = browser
        .wait()
        .for_element(Locator::Css(".flash"))
        .await?
        .text()
        .await?;
    ensure!(
        flash.contains(HOSTILE),
        "the flash shows the value as text: {flash}"
    );
    ensure!(browser.get_alert_text().await.is_err(), "no script ran");
    let history = rows(browser, "#history").await?;
    let change = history
        .iter()
        .find(|r| r[2] == "outside actor")
        .with_context(|| format!("an outside actor's change in the history: {history:?}"))?;
    ensure!(
        change[4] == format!("{page}/tags") && change[5] == "200",
        "{change:?}"
    );
    // The provider sees the drift and puts its tag back.
    eventually(
        "the provider undoing the change, in the history",
        || async {
            browser.refresh().await?;
            let history = rows(browser, "#history").await?;
            let outside = history.iter().position(|r| r[2] == "outside actor");
            let restored = history
                .iter()
                .position(|r| r[2] == "API key (provider)" && r[3] == "PATCH");
            Ok(matches!((restored, outside), (Some(r), Some(o)) if r < o).then_some(()))
        },
    )
    .await?;
    run(
        browser,
        "document.getElementById('actions-heading').scrollIntoView(); return true;",
    )
    .await?;
    screenshot(browser, "resource.png").await?;
    Ok(())
}

/// Waits for the page a form answered with to show a flash saying `text`
/// (the page the form was on may have had a flash of its own).
async fn flash_saying(browser: &Browser, text: &str) -> Result<String> {
    eventually(&format!("a flash saying {text:?}"), || async {
        let flash = run(
            browser,
            "const f = document.querySelector('.flash'); return f ? f.innerText : '';",
        )
        .await?;
        Ok(flash
            .as_str()
            .filter(|f| f.contains(text))
            .map(str::to_owned))
    })
    .await
}

/// Saves the state under a name, sees it listed and its file download,
/// loads it back (`merge`) through the page that names the accounts it
/// replaces, and deletes it, ticking the box that confirms.
async fn save_load_and_delete_a_snapshot(browser: &Browser, system: &System) -> Result<()> {
    const NAME: &str = "console-demo";
    browser.goto(&system.console("")).await?;
    browser
        .find(Locator::LinkText("Snapshots & recorder"))
        .await?
        .click()
        .await?;
    eventually("the snapshots page", || async {
        Ok((path_of(browser).await? == "/console/snapshots").then_some(()))
    })
    .await?;
    browser
        .find(Locator::Id("snapshot-name"))
        .await?
        .send_keys(&format!("{NAME}{}", &*Key::Enter))
        .await?;
    flash_saying(browser, &format!("Snapshot {NAME} saved")).await?;
    let listed = rows(browser, "table.snapshots").await?;
    let row = listed
        .iter()
        .find(|r| r[0] == NAME)
        .with_context(|| format!("the snapshot in the list: {listed:?}"))?;
    ensure!(
        row[3].contains("VPC") && row[4] == "dev, team-b" && row[5] == "v1",
        "the list shows its resources, accounts and format: {row:?}"
    );
    screenshot(browser, "snapshots.png").await?;
    let download = run(
        browser,
        &format!(
            "return fetch('/console/snapshots/{NAME}/file').then(r =>              [r.status, r.headers.get('content-disposition')]);"
        ),
    )
    .await?;
    ensure!(
        download[0] == json!(200)
            && download[1]
                .as_str()
                .is_some_and(|d| d.starts_with("attachment")),
        "the download link gives the file: {download}"
    );

    // Load: the list's button opens a page saying what will be replaced.
    browser
        .find(Locator::Id(&format!("strategy-{NAME}")))
        .await?
        .select_by_value("merge")
        .await?;
    browser
        .find(Locator::Css(&format!(
            "form[action='/console/snapshots/{NAME}/load'] button"
        )))
        .await?
        .click()
        .await?;
    let confirmation = format!("/console/snapshots/{NAME}/load");
    eventually("the load's confirmation page", || async {
        Ok((path_of(browser).await? == confirmation).then_some(()))
    })
    .await?;
    let replaced = browser
        .find(Locator::Id("what-is-replaced"))
        .await?
        .text()
        .await?;
    ensure!(
        replaced.contains("The accounts in the file: dev, team-b"),
        "the confirmation names the accounts a merge replaces: {replaced}"
    );
    screenshot(browser, "snapshot-load.png").await?;
    browser
        .find(Locator::Css("main form[method=post] button[type=submit]"))
        .await?
        .click()
        .await?;
    flash_saying(browser, &format!("Snapshot {NAME} loaded (merge)")).await?;

    // Delete, once the box is ticked.
    browser
        .find(Locator::Id(&format!("confirm-delete-{NAME}")))
        .await?
        .click()
        .await?;
    browser
        .find(Locator::Css(&format!(
            "form[action='/console/snapshots/{NAME}/delete'] button"
        )))
        .await?
        .click()
        .await?;
    flash_saying(browser, &format!("Snapshot {NAME} deleted")).await?;
    ensure!(
        browser.source().await?.contains("None saved yet."),
        "the snapshot is gone from the list"
    );
    Ok(())
}

/// Starts the recorder, lets the provider's polls be recorded, stops it:
/// the page counts the calls and offers the recording.
async fn record_the_providers_calls(browser: &Browser, system: &System) -> Result<()> {
    browser.goto(&system.console("/snapshots")).await?;
    browser
        .find(Locator::Css(
            "form[action='/console/recorder/start'] button",
        ))
        .await?
        .click()
        .await?;
    flash_saying(browser, "Recording").await?;
    eventually("a recorded call of the provider", || async {
        browser.refresh().await?;
        let state = browser
            .find(Locator::Id("recorder-state"))
            .await?
            .text()
            .await?;
        Ok((state.starts_with("Recording since") && !state.contains(": 0 calls")).then_some(()))
    })
    .await?;
    browser
        .find(Locator::Css("form[action='/console/recorder/stop'] button"))
        .await?
        .click()
        .await?;
    flash_saying(browser, "Not recording").await?;
    browser
        .find(Locator::LinkText("Download the recording"))
        .await?;
    Ok(())
}

async fn log_out(browser: &Browser, system: &System) -> Result<()> {
    browser
        .find(Locator::Css("form.logout button"))
        .await?
        .click()
        .await?;
    eventually("the login page after logout", || async {
        Ok((path_of(browser).await? == "/console/login").then_some(()))
    })
    .await?;
    let cookies = browser.get_all_cookies().await?;
    ensure!(
        cookies.iter().all(|c| c.name() != "fakecloud_console"),
        "the session cookie is gone: {cookies:?}"
    );
    browser.goto(&system.console("/resources")).await?;
    ensure!(
        path_of(browser).await? == "/console/login",
        "the console is closed after logout"
    );
    Ok(())
}
