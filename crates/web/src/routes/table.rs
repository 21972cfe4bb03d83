//! Every route, registered once with its cache policy and, for the JSON
//! API, its OpenAPI path: `api` takes utoipa-axum's `routes!`, so the
//! document's paths and the router's are one list and an API route
//! without documentation cannot be written. Pages (HTML, assets, forms)
//! go through `get`/`post`, which refuse an API path. The table also
//! keeps what it registered, for tests that visit every route.

use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{get, post, MethodRouter};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use crate::layers::cache_policy::{declare, CachePolicy};
use crate::AppState;

/// One registered route: the method, the path as the document writes it
/// (`{*id}` reads `{id}`), and whether the OpenAPI document holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    pub method: &'static str,
    pub path: String,
    pub documented: bool,
}

/// Paths that are the JSON API: documented, or not registered at all.
pub fn is_api_path(path: &str) -> bool {
    (path.starts_with("/api/") && path != "/api/openapi.json")
        || ["/healthz", "/readyz", "/.well-known/wattcounts-log"].contains(&path)
}

pub struct Table {
    state: AppState,
    router: OpenApiRouter<AppState>,
    listed: Vec<Route>,
}

impl Table {
    pub fn new(state: &AppState) -> Table {
        Table {
            state: state.clone(),
            router: OpenApiRouter::new(),
            listed: Vec::new(),
        }
    }

    /// A documented route: the handlers of one path from `routes!`.
    pub fn api(self, policy: CachePolicy, handlers: UtoipaMethodRouter<AppState>) -> Table {
        self.api_limited(policy, None, handlers)
    }

    /// The same with a request body cap of `limit` bytes.
    pub fn api_limited(
        mut self,
        policy: CachePolicy,
        limit: Option<usize>,
        (schemas, paths, route): UtoipaMethodRouter<AppState>,
    ) -> Table {
        self.list(&paths);
        let route = match limit {
            Some(bytes) => route.layer(DefaultBodyLimit::max(bytes)),
            None => route,
        };
        let route = declare(&self.state, policy, route);
        self.router = self.router.routes((schemas, paths, route));
        self
    }

    /// A documented route whose parameter takes the rest of the path
    /// (a model id holds a slash): axum matches it as `{*name}`, the
    /// document names it `{name}` (OpenAPI has no catch-all).
    pub fn api_catch_all(
        mut self,
        policy: CachePolicy,
        (schemas, paths, route): UtoipaMethodRouter<AppState>,
    ) -> Table {
        self.list(&paths);
        let route = declare(&self.state, policy, route);
        for path in paths.paths.keys() {
            let (head, name) = path
                .rsplit_once("/{")
                .expect("a catch-all route ends in a {parameter}");
            self.router = self
                .router
                .route(&format!("{head}/{{*{name}"), route.clone());
        }
        self.document(schemas, paths)
    }

    /// A documented route answered by an earlier catch-all route (its
    /// path lies under the catch-all's, e.g. `/api/v1/models/{id}/estimates`
    /// under `/api/v1/models/{*id}`): listed and documented here, matched
    /// there, so it is not routed twice.
    pub fn api_under_catch_all(
        mut self,
        (schemas, paths, _route): UtoipaMethodRouter<AppState>,
    ) -> Table {
        self.list(&paths);
        self.document(schemas, paths)
    }

    /// Adds paths and their schemas to the OpenAPI document.
    fn document(
        mut self,
        schemas: Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
        paths: utoipa::openapi::path::Paths,
    ) -> Table {
        let doc = self.router.get_openapi_mut();
        doc.paths.paths.extend(paths.paths);
        doc.components
            .get_or_insert_with(Default::default)
            .schemas
            .extend(schemas);
        self
    }

    /// A page, asset or probe answering GET.
    pub fn get<H, T>(self, path: &'static str, policy: CachePolicy, handler: H) -> Table
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.page("get", path, policy, get(handler))
    }

    /// A form answering POST.
    pub fn post<H, T>(self, path: &'static str, policy: CachePolicy, handler: H) -> Table
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.page("post", path, policy, post(handler))
    }

    /// A form answering POST with a body cap of `limit` bytes.
    pub fn post_limited<H, T>(
        self,
        path: &'static str,
        policy: CachePolicy,
        limit: usize,
        handler: H,
    ) -> Table
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.page(
            "post",
            path,
            policy,
            post(handler).layer(DefaultBodyLimit::max(limit)),
        )
    }

    fn page(
        mut self,
        method: &'static str,
        path: &'static str,
        policy: CachePolicy,
        route: MethodRouter<AppState>,
    ) -> Table {
        assert!(
            !is_api_path(path),
            "{path} is an API path: register it with Table::api and routes!, so the OpenAPI document holds it"
        );
        self.listed.push(Route {
            method,
            path: path.replace("{*", "{"),
            documented: false,
        });
        let route = declare(&self.state, policy, route);
        self.router = self.router.route(path, route);
        self
    }

    /// Lists the documented operations of `paths`.
    fn list(&mut self, paths: &utoipa::openapi::path::Paths) {
        for (path, item) in &paths.paths {
            for (method, op) in [("get", &item.get), ("post", &item.post)] {
                if op.is_some() {
                    self.listed.push(Route {
                        method,
                        path: path.clone(),
                        documented: true,
                    });
                }
            }
        }
    }

    /// Applies `layer` to the routes registered so far (a deadline).
    pub fn route_layer<L>(mut self, layer: L) -> Table
    where
        L: tower::Layer<axum::routing::Route> + Clone + Send + Sync + 'static,
        L::Service: tower::Service<axum::extract::Request> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Response:
            axum::response::IntoResponse + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Error:
            Into<std::convert::Infallible> + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Future: Send + 'static,
    {
        self.router = self.router.route_layer(layer);
        self
    }

    pub fn merge(mut self, other: Table) -> Table {
        self.router = self.router.merge(other.router);
        self.listed.extend(other.listed);
        self
    }

    /// The router, the document's paths and schemas, and what was listed.
    pub fn finish(self) -> (axum::Router<AppState>, utoipa::openapi::OpenApi, Vec<Route>) {
        let (router, doc) = self.router.split_for_parts();
        (router, doc, self.listed)
    }
}
