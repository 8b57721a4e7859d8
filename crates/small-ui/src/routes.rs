//! The routes, and the guard every request passes: GET and HEAD only, a known `Host`, a time
//! limit, and the security headers on every response.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt as _;
use minijinja::context;
use tokio::sync::broadcast::error::RecvError;

use small_core::ops::state::ProjectState;

use crate::view;
use crate::App;

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/w/{ws}", get(workspace_redirect))
        .route("/w/{ws}/", get(workspace))
        .route("/w/{ws}/task/{id}", get(task))
        .route("/w/{ws}/timeline", get(timeline))
        .route("/w/{ws}/runs", get(runs))
        .route("/w/{ws}/fragment/{name}", get(fragment))
        .route(
            "/store",
            get(|State(a): State<Arc<App>>, Query(q): StoreQuery| store(a, q, StorePage::List)),
        )
        .route(
            "/store/artifact",
            get(|State(a): State<Arc<App>>, Query(q): StoreQuery| store(a, q, StorePage::Artifact)),
        )
        .route(
            "/store/fragment",
            get(|State(a): State<Arc<App>>, Query(q): StoreQuery| {
                store(a, q, StorePage::ListFragment)
            }),
        )
        .route(
            "/store/fragment/artifact",
            get(|State(a): State<Arc<App>>, Query(q): StoreQuery| {
                store(a, q, StorePage::ArtifactFragment)
            }),
        )
        .route("/events", get(events))
        .route("/assets/ui.css", get(css))
        .route("/assets/ui.js", get(js))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

fn plain(status: StatusCode, msg: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let mut resp = if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "{} is not allowed: this page is read-only (GET and HEAD only)\n",
                req.method()
            ),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    } else if !host_allowed(&app, &req) {
        plain(
            StatusCode::FORBIDDEN,
            "this page answers only to the address it listens on (or localhost with its port)\n"
                .into(),
        )
    } else if req.uri().path() == "/events" {
        next.run(req).await
    } else {
        match tokio::time::timeout(app.request_timeout, next.run(req)).await {
            Ok(r) => r,
            Err(_) => plain(
                StatusCode::REQUEST_TIMEOUT,
                "the page took too long to build\n".into(),
            ),
        }
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    resp
}

fn host_allowed(app: &App, req: &Request) -> bool {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(|h| h.trim().to_ascii_lowercase())
        .or_else(|| {
            // HTTP/2 carries it in the URI.
            req.uri()
                .authority()
                .map(|a| a.as_str().to_ascii_lowercase())
        });
    host.is_some_and(|h| app.allowed_hosts.contains(&h))
}

async fn not_found() -> Response {
    plain(StatusCode::NOT_FOUND, "no such page\n".into())
}

async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        crate::templates::CSS,
    )
        .into_response()
}

async fn js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        crate::templates::JS,
    )
        .into_response()
}

/// Render off the async threads (the views read files).
async fn blocking(
    app: &Arc<App>,
    f: impl FnOnce(&App) -> Result<String, Problem> + Send + 'static,
) -> Response {
    let app = app.clone();
    let out = tokio::task::spawn_blocking(move || f(&app)).await;
    match out {
        Ok(Ok(html)) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
        }
        Ok(Err(Problem::NotFound(m))) => plain(StatusCode::NOT_FOUND, format!("{m}\n")),
        Ok(Err(Problem::Internal(m))) => {
            tracing::error!(target: "small::ui", "cannot render a page: {m}");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be built\n".into(),
            )
        }
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be built\n".into(),
        ),
    }
}

enum Problem {
    NotFound(String),
    Internal(String),
}

impl From<String> for Problem {
    fn from(s: String) -> Self {
        Problem::Internal(s)
    }
}

fn ws_index(app: &App, ws: &str) -> Result<usize, Problem> {
    ws.parse::<usize>()
        .ok()
        .filter(|&i| i < app.workspaces.len())
        .ok_or_else(|| Problem::NotFound("no such workspace".into()))
}

fn summary_of(app: &App, i: usize) -> view::Summary {
    summary_with(app, i, &view::state(&app.workspaces[i].loc))
}

fn summary_with(app: &App, i: usize, st: &ProjectState) -> view::Summary {
    let ws = &app.workspaces[i];
    let checks = ws.checks();
    let t = ws.timeline();
    view::summary(i, &ws.loc, st, &t, checks.as_deref())
}

fn nav(app: &App) -> Vec<(usize, String)> {
    app.workspaces
        .iter()
        .enumerate()
        .map(|(i, w)| {
            (
                i,
                w.loc
                    .root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| w.loc.root.display().to_string()),
            )
        })
        .collect()
}

async fn overview(State(app): State<Arc<App>>) -> Response {
    if app.workspaces.is_empty() && app.store.is_some() {
        return Redirect::to("/store").into_response();
    }
    if app.workspaces.len() == 1 {
        return Redirect::to("/w/0/").into_response();
    }
    blocking(&app, |app| {
        let cards: Vec<view::Summary> = (0..app.workspaces.len())
            .map(|i| summary_of(app, i))
            .collect();
        Ok(app.templates.render(
            "overview.html",
            context! { title => "Workspaces", cards, nav => nav(app) },
        )?)
    })
    .await
}

async fn workspace_redirect(Path(ws): Path<String>) -> Response {
    match ws.parse::<usize>() {
        Ok(i) => Redirect::to(&format!("/w/{i}/")).into_response(),
        Err(_) => plain(StatusCode::NOT_FOUND, "no such workspace\n".into()),
    }
}

/// The query of a task's history: its entries only.
fn of_task(id: &str) -> HashMap<String, String> {
    HashMap::from([("task".to_string(), id.to_string())])
}

fn offset_of(q: &HashMap<String, String>) -> usize {
    q.get("offset")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0)
}

async fn workspace(State(app): State<Arc<App>>, Path(ws): Path<String>) -> Response {
    blocking(&app, move |app| {
        let i = ws_index(app, &ws)?;
        let w = &app.workspaces[i];
        // One state for the whole page: every section shows the same instant.
        let st = view::state(&w.loc);
        let summary = summary_with(app, i, &st);
        let intent = view::intent(&st);
        let leases = view::leases(&w.loc);
        let (plan, tl) = {
            let t = w.timeline();
            (
                view::plan(&w.loc, &st, &t, &leases),
                view::recent(&w.loc, &t),
            )
        };
        let handoff = view::handoff(&st);
        let checks = w.checks().map(|c| (*c).clone());
        Ok(app.templates.render(
            "workspace.html",
            context! {
                title => summary.heading.clone(), ws => i, s => summary, intent, plan, tl,
                handoff, checks, nav => nav(app), multi => app.workspaces.len() > 1,
            },
        )?)
    })
    .await
}

async fn task(State(app): State<Arc<App>>, Path((ws, id)): Path<(String, String)>) -> Response {
    blocking(&app, move |app| {
        let i = ws_index(app, &ws)?;
        let w = &app.workspaces[i];
        let leases = view::leases(&w.loc);
        let (plan, tl) = {
            let t = w.timeline();
            (
                view::plan(&w.loc, &view::state(&w.loc), &t, &leases),
                view::timeline(&w.loc, &t, &of_task(&id), 0),
            )
        };
        let Some(task) = plan.tasks.into_iter().find(|t| t.id == id) else {
            return Err(Problem::NotFound("no such task in the plan".into()));
        };
        Ok(app.templates.render(
            "task.html",
            context! { title => task.id.clone(), ws => i, task, tl, nav => nav(app) },
        )?)
    })
    .await
}

async fn timeline(
    State(app): State<Arc<App>>,
    Path(ws): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    blocking(&app, move |app| {
        let i = ws_index(app, &ws)?;
        let w = &app.workspaces[i];
        let tl = view::timeline(&w.loc, &w.timeline(), &q, offset_of(&q));
        Ok(app.templates.render(
            "timeline.html",
            context! { title => "Timeline", ws => i, tl, nav => nav(app) },
        )?)
    })
    .await
}

async fn runs(
    State(app): State<Arc<App>>,
    Path(ws): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    blocking(&app, move |app| {
        let i = ws_index(app, &ws)?;
        let from = q.get("from").filter(|s| !s.is_empty()).map(String::as_str);
        let to = q.get("to").filter(|s| !s.is_empty()).map(String::as_str);
        let runs = view::runs(&app.workspaces[i].loc, from, to);
        Ok(app.templates.render(
            "runs.html",
            context! { title => "Runs", ws => i, runs, nav => nav(app) },
        )?)
    })
    .await
}

async fn fragment(
    State(app): State<Arc<App>>,
    Path((ws, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    blocking(&app, move |app| {
        let i = ws_index(app, &ws)?;
        let w = &app.workspaces[i];
        let html = match name.as_str() {
            "summary" => app.templates.render(
                "_summary.html",
                context! { ws => i, s => summary_of(app, i) },
            )?,
            "card" => app
                .templates
                .render("_card.html", context! { ws => i, s => summary_of(app, i) })?,
            "intent" => app
                .templates
                .render(
                    "_intent.html",
                    context! { intent => view::intent(&view::state(&w.loc)) },
                )?,
            "graph" | "board" | "claims" => {
                let leases = view::leases(&w.loc);
                let plan = view::plan(&w.loc, &view::state(&w.loc), &w.timeline(), &leases);
                app.templates
                    .render(&format!("_{name}.html"), context! { ws => i, plan })?
            }
            "task" => {
                let id = q.get("task").cloned().unwrap_or_default();
                let leases = view::leases(&w.loc);
                let (plan, tl) = {
                    let t = w.timeline();
                    (
                        view::plan(&w.loc, &view::state(&w.loc), &t, &leases),
                        view::timeline(&w.loc, &t, &of_task(&id), 0),
                    )
                };
                let Some(task) = plan.tasks.into_iter().find(|t| t.id == id) else {
                    return Err(Problem::NotFound("no such task in the plan".into()));
                };
                app.templates
                    .render("_task.html", context! { ws => i, task, tl })?
            }
            "recent" => {
                let tl = view::recent(&w.loc, &w.timeline());
                app.templates
                    .render("_timeline.html", context! { ws => i, tl })?
            }
            "timeline" => {
                let tl = view::timeline(&w.loc, &w.timeline(), &q, offset_of(&q));
                app.templates
                    .render("_timeline.html", context! { ws => i, tl })?
            }
            "handoff" => {
                let st = view::state(&w.loc);
                app.templates.render(
                    "_handoff.html",
                    context! { ws => i, handoff => view::handoff(&st), s => summary_with(app, i, &st) },
                )?
            }
            "checks" => app.templates.render(
                "_checks.html",
                context! { ws => i, checks => w.checks().map(|c| (*c).clone()) },
            )?,
            "runs" => app.templates.render(
                "_runs.html",
                context! { ws => i, runs => view::runs(&w.loc, None, None) },
            )?,
            _ => return Err(Problem::NotFound("no such fragment".into())),
        };
        Ok(html)
    })
    .await
}

fn the_store(app: &App) -> Result<&crate::StoreHandle, Problem> {
    app.store
        .as_ref()
        .ok_or_else(|| Problem::NotFound("no store is shown (start with --store PATH|URL)".into()))
}

fn store_view(app: &App, q: &HashMap<String, String>) -> Result<crate::store::StoreView, Problem> {
    let h = the_store(app)?;
    let after = q.get("after").filter(|s| !s.is_empty()).map(String::as_str);
    Ok(crate::store::store_page(
        h.store.as_ref(),
        &h.location,
        after,
    ))
}

fn artifact_view(
    app: &App,
    q: &HashMap<String, String>,
) -> Result<crate::store::ArtifactView, Problem> {
    let h = the_store(app)?;
    let id = q.get("id").map(String::as_str).unwrap_or("");
    match crate::store::artifact_page(h.store.as_ref(), id) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(Problem::NotFound("no such artifact in the store".into())),
        Err(e) => Err(Problem::Internal(e)),
    }
}

/// The store's pages: the list or an artifact, whole or as the fragment a live refresh
/// swaps in.
#[derive(Debug, Clone, Copy)]
enum StorePage {
    List,
    ListFragment,
    Artifact,
    ArtifactFragment,
}

type StoreQuery = Query<HashMap<String, String>>;

/// `GET /store…`: the store page `page`, built from the query.
async fn store(app: Arc<App>, q: HashMap<String, String>, page: StorePage) -> Response {
    blocking(&app, move |app| {
        let t = &app.templates;
        Ok(match page {
            StorePage::List => {
                let st = store_view(app, &q)?;
                t.render(
                    "store.html",
                    context! { title => "Store", st, nav => nav(app) },
                )?
            }
            StorePage::ListFragment => {
                let st = store_view(app, &q)?;
                t.render("_store.html", context! { st })?
            }
            StorePage::Artifact => {
                let a = artifact_view(app, &q)?;
                t.render(
                    "artifact.html",
                    context! { title => a.id.clone(), a, nav => nav(app) },
                )?
            }
            StorePage::ArtifactFragment => {
                let a = artifact_view(app, &q)?;
                t.render("_artifact.html", context! { a })?
            }
        })
    })
    .await
}

/// `GET /events`: server-sent events. `ready` first, then `change` with
/// `{"ws": N, "parts": [...]}` for each change seen; `reload` when this client fell behind.
async fn events(State(app): State<Arc<App>>) -> Response {
    let Ok(permit) = app.event_clients.clone().try_acquire_owned() else {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many live-update clients\n".into(),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    };
    let rx = app.events.subscribe();
    let shutdown = app.shutdown.clone();
    let ready = futures_util::stream::once(async {
        Ok::<Event, Infallible>(Event::default().event("ready").data("{}"))
    });
    let changes = futures_util::stream::unfold(
        (rx, shutdown, permit),
        |(mut rx, mut shutdown, permit)| async move {
            if *shutdown.borrow() {
                return None;
            }
            let ev = tokio::select! {
                r = rx.recv() => match r {
                    Ok(c) => Event::default()
                        .event("change")
                        .data(serde_json::to_string(&c).unwrap_or_else(|_| "{}".into())),
                    Err(RecvError::Lagged(_)) => Event::default().event("reload").data("{}"),
                    Err(RecvError::Closed) => return None,
                },
                _ = shutdown.wait_for(|v| *v) => return None,
            };
            Some((Ok::<Event, Infallible>(ev), (rx, shutdown, permit)))
        },
    );
    Sse::new(ready.chain(changes))
        .keep_alive(KeepAlive::default())
        .into_response()
}
