//! The web console in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, the distribution's packages; `scripts/browser.sh` installs them). Each
//! test signs in, works the pages as an operator would and takes a screenshot of each page
//! into its temp dir (copied to `/tmp/console-shots/`). Without a browser the tests skip
//! and say so, unless `A2AD_REQUIRE_BROWSER` is set (as `scripts/test.sh` sets it).

use crate::admin_api::{admin_get, operators, push_to_loopback, two_tenants_with_three_tasks, OPERATOR, VIEWER};
use crate::receiver::Receiver;
use crate::support::{command_agent, command_settings, echo_agent, eventually, send_params, spawn_app, TestApp};
use a2ad::config::{AgentConfig, Config};
use a2ad_protocol::TaskState;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// What a tenant may write: the page must show it as these characters.
const HOSTILE: &str = "<b>bold</b><img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>";

/// A chromedriver process and a headless Chromium session on it.
struct Browser {
    client: Client,
    driver: Child,
    shots: PathBuf,
}

/// Ends chromedriver and the Chromium it started, also when a test panics before
/// [`close`]: the driver leads a process group of its own, and the whole group is
/// killed (killing the driver alone left Chromium running).
impl Drop for Browser {
    fn drop(&mut self) {
        if let Ok(pgid) = i32::try_from(self.driver.id()) {
            // SAFETY: killpg only sends a signal, to the group this test made.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The browser, or `None` (with a message) when none is installed.
async fn browser(shots: &Path) -> Option<Browser> {
    let driver = std::env::var("A2AD_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| Path::new(p).exists());
    let (Some(chromium), true) = (chromium, Path::new(&driver).exists()) else {
        let how = "scripts/browser.sh installs them: apt-get install chromium chromium-driver";
        crate::skip::skip_for_want_of(&format!("chromium or {driver}"), "A2AD_REQUIRE_BROWSER", how);
        return None;
    };
    let port = free_port();
    let child = Command::new(&driver)
        .process_group(0)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let up = eventually(400, || async move { tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() }).await;
    assert!(up, "chromedriver answers");
    let mut capabilities = serde_json::Map::new();
    let args =
        ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,1000"];
    capabilities.insert("goog:chromeOptions".into(), json!({"binary": chromium, "args": args}));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a browser session");
    std::fs::create_dir_all(shots).unwrap();
    Some(Browser { client, driver: child, shots: shots.to_owned() })
}

impl Browser {
    /// Waits (bounded) for an element.
    async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }

    /// Clicks `css` once it is there. A page that re-renders (a live update of the task)
    /// between finding the element and clicking it leaves a stale element: found again,
    /// bounded.
    async fn click(&self, css: &str) {
        for _ in 0..50 {
            match self.find(css).await.click().await {
                Ok(_) => return,
                Err(fantoccini::error::CmdError::Standard(e))
                    if e.error == fantoccini::error::ErrorStatus::StaleElementReference =>
                {
                    actix_web::rt::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("could not click {css}: {e}"),
            }
        }
        panic!("{css} went stale at every click");
    }

    /// Waits (bounded) until the text of `css` satisfies `wanted`; returns it.
    async fn text_when(&self, css: &str, wanted: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..200 {
            if let Ok(element) = self.client.find(Locator::Css(css)).await {
                last = element.text().await.unwrap_or_default();
                if wanted(&last) {
                    return last;
                }
            }
            actix_web::rt::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never matched; last text: {last:?}");
    }

    async fn go(&self, hash: &str) {
        self.client.execute("location.hash = arguments[0];", vec![json!(hash)]).await.unwrap();
    }

    /// Screenshot into the test's dir, and a copy for people in /tmp/console-shots/.
    async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), &png).unwrap();
        let shared = Path::new("/tmp/console-shots");
        if std::fs::create_dir_all(shared).is_ok() {
            let _ = std::fs::write(shared.join(format!("{name}.png")), &png);
        }
    }

    async fn sign_in(&self, app: &TestApp, token: &str) {
        self.client.goto(&format!("{}/console", app.url)).await.unwrap();
        let field = self.find("#token").await;
        field.send_keys(token).await.unwrap();
        self.click("#sign-in-button").await;
        self.find("#overview .figure").await;
    }
}

/// The echo agent, and `slow`: one character every 150 ms, a task that runs long enough
/// to be canceled.
fn agents(c: &mut Config) {
    let slow = echo_agent("slow", TaskState::Completed, 1, Duration::from_millis(150));
    c.agents = vec![AgentConfig::default_echo(), slow];
}

/// A task of the slow agent, returned while it runs.
async fn slow_task(app: &TestApp) -> String {
    let params = send_params(
        &"a long task ".repeat(20),
        json!({"metadata": {"skill": "slow"}, "configuration": {"returnImmediately": true}}),
    );
    let sent = app.ok("SendMessage", params).await;
    sent["task"]["id"].as_str().unwrap().to_owned()
}

#[actix_web::test]
async fn an_operator_watches_tasks_live_reads_a_timeline_cancels_and_retries_a_dead_letter() {
    let receiver = Receiver::start();
    let app = spawn_app(|c| {
        operators(c);
        push_to_loopback(c);
        agents(c);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };

    // A wrong token is refused on the page; the right one signs in.
    browser.client.goto(&format!("{}/console", app.url)).await.unwrap();
    browser.find("#token").await.send_keys("not-a-token").await.unwrap();
    browser.click("#sign-in-button").await;
    browser.text_when("#sign-in-error", |t| t.contains("not an operator token")).await;
    browser.shot("sign-in").await;
    browser.sign_in(&app, OPERATOR).await;
    browser.text_when("#who", |t| t == "alice (operator)").await;

    // Tasks: a message sent by a client shows up without a reload, its text as text.
    browser.go("#/tasks").await;
    browser.find("#tasks").await;
    browser.text_when("#live", |_| true).await;
    assert!(
        eventually(200, || async { browser.client.find(Locator::Css("#live.on")).await.is_ok() }).await,
        "the feed is open"
    );
    let task = app.send_text(HOSTILE, json!({})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let row = format!("tr[data-task=\"{id}\"]");
    browser.find(&row).await;
    browser.text_when(&format!("{row} .preview"), |t| t == HOSTILE).await;
    let injected = browser
        .client
        .execute("return [window.__pwned === undefined, document.querySelectorAll('#page b, #page img, #page script').length];", vec![])
        .await
        .unwrap();
    assert_eq!(injected, json!([true, 0]), "a tenant's markup is never parsed");
    browser.shot("tasks").await;

    // Task: the conversation and the timeline with each event's raw JSON.
    browser.click(&format!("{row} a")).await;
    browser.find("#timeline li").await;
    let events = browser.client.find_all(Locator::Css("#timeline li")).await.unwrap();
    assert!(events.len() >= 2, "every logged event: {}", events.len());
    browser.text_when("#chat .bubble.user .text", |t| t == HOSTILE).await;
    browser.click("#timeline li summary").await;
    browser.text_when("#timeline li pre", |t| t.contains("\"task\"")).await;
    browser.shot("task").await;

    // Cancel a running task and see its state change.
    let running = slow_task(&app).await;
    browser.go(&format!("#/task/{running}")).await;
    browser.text_when("#task-state", |t| t == "working").await;
    browser.click("#cancel").await;
    browser.text_when("#task-state", |t| t == "canceled").await;
    browser.shot("task-canceled").await;

    // Push: a dead letter retried from the page is delivered to the real receiver.
    let hook = json!({"url": format!("{}/gone", receiver.base)});
    let pushed = app
        .send_text("to a receiver that is gone", json!({"configuration": {"taskPushNotificationConfig": hook}}))
        .await;
    let dead = || async { admin_get(&app, VIEWER, "/push/dead").await.1["dead"].as_array().map_or(0, Vec::len) };
    assert!(eventually(400, || async { dead().await >= 2 }).await, "{:?}", receiver.received());
    let jobs = dead().await;
    browser.go("#/push").await;
    browser.find("tr[data-job]").await;
    browser.text_when("#dead-count", |t| t == jobs.to_string()).await;
    // Each dead row is marked, and says where it went (host and port only) and what came back.
    let host = receiver.base.trim_start_matches("http://").to_owned();
    browser.find("#dead tr.row-dead .dead-mark").await;
    browser.text_when("#dead tr.row-dead .dead-host", |t| t == host).await;
    browser.text_when("#dead tr.row-dead .dead-status", |t| t == "404 Not Found").await;
    browser.text_when("#dead tr.row-dead .dead-reason", |t| t.contains("404")).await;
    let marked = browser.client.find_all(Locator::Css("#dead tbody tr.row-dead")).await.unwrap();
    assert_eq!(marked.len(), jobs, "every dead row is marked");
    browser.shot("push").await;
    receiver.set_gone_ok(true);
    browser.click("#retry-all").await;
    browser.find("#no-dead").await;
    let delivered = || receiver.received().iter().filter(|r| r.path == "/gone" && r.status == 200).count();
    assert!(eventually(400, || async { delivered() >= jobs }).await, "{:?}", receiver.received());
    // The task's page lists each attempt: the ones that died, then the retries delivered.
    let pushed = format!("/tasks/{}", pushed["id"].as_str().unwrap());
    let recorded = eventually(400, || async {
        admin_get(&app, VIEWER, &pushed).await.1["deliveries"].to_string().contains("\"delivered\"")
    });
    assert!(recorded.await, "the worker records the delivery once it is acknowledged");
    browser.go(&format!("#{}", pushed.replacen("/tasks/", "/task/", 1))).await;
    browser.find("#attempts tr.attempt-dead").await;
    browser.find("#attempts tr.attempt-delivered").await;
    browser.shot("task-deliveries").await;

    // Agents, and the overview once more with the work done.
    browser.go("#/agents").await;
    browser.find("article[data-skill=\"slow\"]").await;
    browser.shot("agents").await;
    browser.go("#/overview").await;
    browser.text_when("[data-figure=\"tasks\"] .value", |t| t.parse::<u32>().is_ok_and(|n| n >= 3)).await;
    browser.shot("overview").await;
    close(browser).await;
}

#[actix_web::test]
async fn a_viewer_sees_everything_but_cannot_cancel() {
    let app = spawn_app(|c| {
        operators(c);
        agents(c);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    browser.sign_in(&app, VIEWER).await;
    browser.text_when("#who", |t| t == "bob (viewer)").await;
    let running = slow_task(&app).await;
    browser.go(&format!("#/task/{running}")).await;
    browser.text_when("#task-state", |t| t == "working").await;
    browser.click("#cancel").await;
    browser.text_when("#toast", |t| t.contains("operator role is required")).await;
    browser.shot("viewer-refused").await;
    let (_, detail) = admin_get(&app, VIEWER, &format!("/tasks/{running}")).await;
    let state: &Value = &detail["task"]["status"]["state"];
    assert_ne!(state, "TASK_STATE_CANCELED", "a viewer's cancel changes nothing");
    close(browser).await;
}

async fn close(browser: Browser) {
    let Browser { client, .. } = &browser;
    let _ = client.clone().close().await;
}

#[actix_web::test]
async fn the_overview_charts_the_last_samples_of_a_load() {
    let app = spawn_app(|c| {
        operators(c);
        agents(c);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    browser.sign_in(&app, OPERATOR).await;
    // A load of a few seconds, bounded in count and in time.
    let started = std::time::Instant::now();
    for n in 0..200 {
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
        assert!(app.send_text(&format!("load {n}"), json!({})).await["id"].is_string());
    }
    // The sampler counts every 10 s and the page reads it every 3 s: bounded, 40 s.
    let peak = "return (document.querySelector('[data-chart=\"requests\"]') || {dataset: {}}).dataset.peak || '0';";
    let mut drawn = 0.0;
    for _ in 0..400 {
        drawn = browser.client.execute(peak, vec![]).await.unwrap().as_str().unwrap_or("0").parse().unwrap_or(0.0);
        if drawn > 0.0 {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(drawn > 0.0, "the requests chart has a non-zero sample");
    browser.find("[data-chart=\"requests\"] svg polyline").await;
    browser.find("[data-chart=\"latency\"] svg polyline").await;
    browser.shot("overview-charts").await;
    close(browser).await;
}

#[actix_web::test]
async fn a_search_for_part_of_a_tenant_finds_its_tasks() {
    let app = two_tenants_with_three_tasks().await;
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    browser.sign_in(&app, OPERATOR).await;
    browser.go("#/tasks").await;
    browser.find("#search").await.send_keys("acm").await.unwrap();
    browser.click("#filters button[type=\"submit\"]").await;
    let tenants_shown =
        "return [...document.querySelectorAll('#task-rows tr[data-task] td:nth-child(2)')].map((c) => c.textContent);";
    let mut shown = Value::Null;
    for _ in 0..200 {
        shown = browser.client.execute(tenants_shown, vec![]).await.unwrap();
        if shown == json!(["acme", "acme"]) {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(shown, json!(["acme", "acme"]), "`acm` finds acme's tasks, and only them");
    browser.shot("tasks-search").await;
    // The known tenants, agents and states are offered: a tenant picked from them filters.
    browser.find("#known-tenants option[value=\"globex\"]").await;
    browser.find("#known-agents option[value=\"echo\"]").await;
    browser.find("#state-filter option[value=\"input-required\"]").await;
    browser.go("#/tasks").await;
    browser.find("#known-tenants option[value=\"acme\"]").await;
    browser.find("#filters input[name=\"tenant\"]").await.send_keys("globex").await.unwrap();
    browser.click("#filters button[type=\"submit\"]").await;
    let mut shown = Value::Null;
    for _ in 0..200 {
        shown = browser.client.execute(tenants_shown, vec![]).await.unwrap();
        if shown == json!(["globex"]) {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(shown, json!(["globex"]), "the tenant picked filters");
    browser.shot("tasks-known-values").await;
    close(browser).await;
}

#[actix_web::test]
async fn a_reload_keeps_the_session_only_when_the_box_was_ticked() {
    let app = spawn_app(operators).await;
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    // Not ticked: a reload signs out.
    browser.sign_in(&app, OPERATOR).await;
    browser.client.refresh().await.unwrap();
    browser.find("#sign-in:not([hidden]) #token").await;
    assert!(browser.client.find(Locator::Css("#bar:not([hidden])")).await.is_err(), "signed out");
    // Ticked: a reload keeps the session; the token is in sessionStorage, not a cookie.
    browser.client.goto(&format!("{}/console", app.url)).await.unwrap();
    browser.find("#token").await.send_keys(OPERATOR).await.unwrap();
    browser.click("#stay").await;
    browser.click("#sign-in-button").await;
    browser.find("#overview .figure").await;
    browser.client.refresh().await.unwrap();
    browser.find("#overview .figure").await;
    browser.text_when("#who", |t| t == "alice (operator)").await;
    let cookies = browser.client.execute("return document.cookie;", vec![]).await.unwrap();
    assert_eq!(cookies, json!(""), "never a cookie");
    browser.shot("stay-signed-in").await;
    // Signing out clears it: the next reload asks for the token.
    browser.click("#sign-out").await;
    browser.client.refresh().await.unwrap();
    browser.find("#sign-in:not([hidden]) #token").await;
    let kept = browser.client.execute("return sessionStorage.length;", vec![]).await.unwrap();
    assert_eq!(kept, json!(0), "sign-out removes the token");
    close(browser).await;
}

#[actix_web::test]
async fn a_failed_task_is_marked_with_its_reason_in_the_row() {
    let script = "echo 'the disk is full' >&2; exit 3";
    let failing =
        command_agent("broken", command_settings(&["/bin/sh", "-c", script], a2ad::agents::command::OutputMode::Text));
    let app = spawn_app(|c| {
        operators(c);
        c.agents = vec![AgentConfig::default_echo(), failing];
    })
    .await;
    let failed = app.send_text("please", json!({"metadata": {"skill": "broken"}})).await;
    let id = failed["id"].as_str().unwrap().to_owned();
    assert_eq!(failed["status"]["state"], "TASK_STATE_FAILED", "{failed}");
    app.send_text("fine", json!({})).await;
    let (_, listed) = admin_get(&app, VIEWER, "/tasks?state=failed").await;
    let row = &listed["tasks"][0];
    let (error, correlation) = (row["error"].as_str().unwrap(), row["correlationId"].as_str().unwrap());
    assert!(!error.is_empty() && !error.contains('\n') && !correlation.is_empty(), "{row}");
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    browser.sign_in(&app, OPERATOR).await;
    browser.go("#/tasks").await;
    let marked = format!("tr.row-failed[data-task=\"{id}\"]");
    browser.text_when(&format!("{marked} .task-error"), |t| t == error).await;
    browser.text_when(&format!("{marked} .correlation"), |t| t.contains(correlation)).await;
    let plain = browser.client.find_all(Locator::Css("#task-rows tr.row-failed")).await.unwrap();
    assert_eq!(plain.len(), 1, "only the failed row is marked");
    browser.shot("tasks-failed").await;
    close(browser).await;
}

#[actix_web::test]
async fn a_task_page_shows_its_duration_the_time_between_events_and_artifact_sizes() {
    let app = spawn_app(|c| {
        operators(c);
        agents(c);
    })
    .await;
    // The slow agent: a character every 150 ms, each its own artifact part, so the task
    // takes a while and its artifact has parts.
    let task = app.send_text("size me", json!({"metadata": {"skill": "slow"}})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&dir.path().join("shots")).await else { return };
    browser.sign_in(&app, OPERATOR).await;
    browser.go(&format!("#/task/{id}")).await;
    let took = browser.text_when("#task-duration", |t| !t.is_empty()).await;
    assert!(took.ends_with("ms") || took.ends_with(" s") || took.ends_with('s'), "a duration: {took}");
    browser.text_when("#timeline li .gap", |t| t == "start").await;
    let gaps = "return [...document.querySelectorAll('#timeline .gap')].map((g) => g.textContent);";
    let gaps = browser.client.execute(gaps, vec![]).await.unwrap();
    let gaps: Vec<&str> = gaps.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(gaps.len() >= 2 && gaps[1..].iter().all(|g| g.starts_with('+')), "each after the one before: {gaps:?}");
    // "size me" is 7 bytes, inline, one per part.
    browser.text_when("li[data-artifact=\"echo\"] .size", |t| t == "7 B").await;
    browser.text_when("li[data-artifact=\"echo\"] button.download", |t| t == "Download part 1 (1 B)").await;
    browser.shot("task-durations-sizes").await;
    close(browser).await;
}
