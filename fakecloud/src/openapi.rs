//! The OpenAPI document, generated from the handlers and wire models.
//!
//! Each handler's `#[utoipa::path]` lists the answers the handler itself
//! gives; [`Conventions`] adds what the layers around every handler give
//! (authentication, throttling, injected faults, request ids), so the
//! document states every answer a client can get, and schemathesis holds
//! the server to it (`scripts/schemathesis`).

use utoipa::OpenApi;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::Response;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Header, RefOr, Schema};

use crate::api::KindPaths;
use crate::model::{DatabaseInstance, NodeGroup, Page, Problem, REGIONS, Subnet, Vpc};
use crate::problem_responses::{
    BadRequest, Conflict, NotFound, PreconditionFailed, ServerError, Throttled, Unauthorized,
    response_ref,
};
use crate::{admin, api, recorder, request_id, schemas, snapshot};

#[derive(OpenApi)]
#[openapi(
    info(title = "fakecloud", description = "A small SQLite-backed cloud: VPCs, subnets, node groups and database instances.\n\n\
        Every answer carries `x-request-id`; every error is `application/problem+json` with a stable `code`. \
        Besides the answers listed, a fault rule of the admin API makes matching `/v1` calls answer the status \
        (400 to 599) and code it names."),
    paths(
        api::authenticate_database,
        admin::reset, admin::list_resources, admin::get_resource, admin::patch_resource,
        admin::get_timing, admin::set_timing, admin::list_faults, admin::add_fault,
        admin::clear_faults, admin::remove_fault, admin::get_throttling, admin::set_throttling,
        admin::clear_throttling, admin::list_account_throttling, admin::set_account_throttling,
        admin::clear_account_throttling, admin::get_audit,
        admin::get_seed, admin::set_seed, admin::clear_seed,
        snapshot::routes::save_snapshot, snapshot::routes::list_snapshots,
        snapshot::routes::get_snapshot, snapshot::routes::put_snapshot,
        snapshot::routes::load_snapshot, snapshot::routes::delete_snapshot,
        recorder::routes::start_recorder, recorder::routes::stop_recorder,
        recorder::routes::get_recording,
    ),
    // Each kind's list answer, `Page_<kind>` (see `api::list_doc`).
    components(schemas(Problem, Page<Vpc>, Page<Subnet>, Page<NodeGroup>, Page<DatabaseInstance>), responses(BadRequest, Unauthorized, NotFound, Conflict, PreconditionFailed,
        Throttled, ServerError)),
    // Every kind's own operations first (`KindPaths`), then what the
    // layers add to every operation.
    modifiers(&KindPaths, &Conventions),
)]
pub struct ApiDoc;

/// Security scheme of `/v1`: an account's API key.
const API_KEY: &str = "apiKey";
/// Security scheme of `/admin`: the admin token.
const ADMIN_TOKEN: &str = "adminToken";

/// What the layers around the handlers add to every operation: security,
/// the answers of authentication, throttling and fault injection, the
/// `x-request-id` header, and what `{region}` and `{cluster}` (checked by
/// `api::location` for every `/v1` call) and a snapshot's `{name}` may be.
struct Conventions;

impl utoipa::Modify for Conventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description) in [
            (API_KEY, "An account's API key (`--api-key KEY=ACCOUNT`)."),
            (ADMIN_TOKEN, "The admin token (`--admin-token`)."),
        ] {
            components.add_security_scheme(
                name,
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some(description))
                        .build(),
                ),
            );
        }
        if let Some(create_vpc) = components.schemas.remove("CreateVpc") {
            components
                .schemas
                .insert("CreateVpc".into(), schemas::with_dns_rule(create_vpc));
        }
        for response in components.responses.values_mut() {
            if let RefOr::T(response) = response {
                add_request_id(response);
            }
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            let api = path.starts_with("/v1/");
            let snapshots = path.starts_with("/admin/snapshots/");
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                conventions(operation, api, snapshots);
            }
        }
    }
}

/// `snapshots`: the operation's `{name}` is a snapshot's (elsewhere, a
/// node group's).
fn conventions(operation: &mut Operation, api: bool, snapshots: bool) {
    let scheme = if api { API_KEY } else { ADMIN_TOKEN };
    operation.security = Some(vec![SecurityRequirement::new(scheme, Vec::<String>::new())]);
    let responses = &mut operation.responses.responses;
    // A handler's own 401 (`authenticate`'s) already names `Unauthorized` too.
    responses
        .entry("401".into())
        .or_insert_with(response_ref::<Unauthorized>);
    responses.insert("5XX".into(), response_ref::<ServerError>());
    if api {
        responses.insert("429".into(), response_ref::<Throttled>());
    }
    for response in responses.values_mut() {
        if let RefOr::T(response) = response {
            add_request_id(response);
        }
    }
    for parameter in operation.parameters.iter_mut().flatten() {
        let RefOr::T(parameter) = parameter else {
            continue;
        };
        if parameter.parameter_in != ParameterIn::Path {
            continue;
        }
        let schema = match parameter.name.as_str() {
            "region" => ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(REGIONS)),
            "cluster" => schemas::name(),
            "name" if snapshots => schemas::snapshot_name(),
            _ => continue,
        };
        parameter.schema = Some(Schema::Object(schema.build()).into());
    }
}

fn add_request_id(response: &mut Response) {
    let mut header = Header::new(ObjectBuilder::new().schema_type(Type::String));
    header.description =
        Some("The request's id: the caller's own when it is a plain token, else a new one.".into());
    response
        .headers
        .insert(request_id::HEADER.into(), header.into());
}
