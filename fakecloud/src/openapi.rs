//! The OpenAPI document, generated from the handlers and wire models.

use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::{admin, api};

#[derive(OpenApi)]
#[openapi(
    info(title = "fakecloud", description = "A small SQLite-backed cloud: VPCs, subnets, node groups and database instances."),
    paths(
        api::create_vpc, api::list_vpcs, api::get_vpc, api::patch_vpc, api::delete_vpc,
        api::create_subnet, api::list_subnets, api::get_subnet, api::patch_subnet, api::delete_subnet,
        api::create_node_group, api::list_node_groups, api::get_node_group, api::patch_node_group,
        api::delete_node_group,
        api::create_database, api::list_databases, api::get_database, api::patch_database,
        api::delete_database, api::authenticate_database,
        admin::reset, admin::list_resources, admin::get_resource, admin::patch_resource,
        admin::get_timing, admin::set_timing, admin::list_faults, admin::add_fault,
        admin::clear_faults, admin::remove_fault, admin::get_throttling, admin::set_throttling,
        admin::clear_throttling, admin::get_audit,
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}
