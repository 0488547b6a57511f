//! OpenAPI schemas of wire fields whose rules the derive attributes cannot
//! state (`propertyNames`, `uniqueItems`) or that share their pattern with
//! a validator. Each mirrors a check of `kinds`, so that a body valid for the
//! document is one the server accepts, and one the server refuses breaks
//! the document's rules. Rules that depend on stored resources (a subnet
//! inside its VPC's block, sizes merged with the stored ones) cannot be
//! stated here.

use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, SchemaType, Type,
};
use utoipa::openapi::{RefOr, Schema};

use crate::field_rules::{
    CIDR_PATTERN, ENGINE_VERSION_PATTERN, IDENTIFIER_MAX, IDENTIFIER_PATTERN,
    INSTANCE_CLASS_PATTERN, INSTANCE_TYPE_PATTERN, INSTANCE_TYPES_MAX, KUBERNETES_VERSION_PATTERN,
    NAME_PATTERN, PASSWORD_PATTERN, SNAPSHOT_NAME_PATTERN, TAG_KEY_MAX, TAG_VALUE_MAX, TAGS_MAX,
    USERNAME_PATTERN,
};
use crate::regions::REGIONS;

fn string(pattern: Option<&str>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(pattern)
}

/// `type` of an optional field: `null` is taken as absent (serde's `Option`).
fn nullable(t: Type) -> SchemaType {
    SchemaType::from_iter([t, Type::Null])
}

/// A tag or label map (`validate::tags`): keys of 1-128 characters, values
/// of at most 256. On create at most 50 entries; in a merge patch a `null`
/// value removes an entry, and the limit applies to the merged map.
fn tag_map(patch: bool) -> ObjectBuilder {
    let value = string(None).max_length(Some(TAG_VALUE_MAX));
    let value = if patch {
        value.schema_type(nullable(Type::String))
    } else {
        value
    };
    ObjectBuilder::new()
        .schema_type(nullable(Type::Object))
        .property_names(Some(
            string(None)
                .min_length(Some(1))
                .max_length(Some(TAG_KEY_MAX)),
        ))
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(Schema::Object(
            value.build(),
        )))))
        .max_properties((!patch).then_some(TAGS_MAX))
}

pub fn tags() -> ObjectBuilder {
    tag_map(false).description(Some(
        "At most 50 entries; keys of 1-128 characters, values of at most 256.",
    ))
}

pub fn tags_patch() -> ObjectBuilder {
    tag_map(true).description(Some(
        "Entries to set, or to remove with `null`; at most 50 after the merge.",
    ))
}

/// An IPv4 block of /16 to /28 (`validate::cidr`).
pub fn cidr_block() -> ObjectBuilder {
    string(Some(CIDR_PATTERN)).description(Some(
        "IPv4 block, /16 to /28; stored canonical (host bits cleared). A subnet's lies inside \
         its VPC's and overlaps no sibling's.",
    ))
}

/// A zone of one of the regions (`validate::zone`; which region's zones
/// a subnet may use depends on its path).
pub fn availability_zone() -> ObjectBuilder {
    let pattern = format!("^({})[abc]$", REGIONS.join("|").replace('.', "\\."));
    string(Some(&pattern))
        .schema_type(nullable(Type::String))
        .description(Some("A zone of the path's region; default `<region>a`."))
}

/// A client-chosen name (`validate::name`).
pub fn name() -> ObjectBuilder {
    string(Some(NAME_PATTERN))
}

/// A snapshot's name (`snapshot::catalog::check_name`).
pub fn snapshot_name() -> ObjectBuilder {
    string(Some(SNAPSHOT_NAME_PATTERN)).description(Some(
        "1-63 letters, digits, `.`, `_` or `-`, not starting with a dot.",
    ))
}

/// A node group's Kubernetes version (`validate::version`, two to four parts).
pub fn kubernetes_version() -> ObjectBuilder {
    string(Some(KUBERNETES_VERSION_PATTERN))
        .schema_type(nullable(Type::String))
        .description(Some("Kubernetes version, default `1.31`."))
}

/// A database engine version (`validate::version`, one to four parts).
pub fn engine_version() -> ObjectBuilder {
    string(Some(ENGINE_VERSION_PATTERN))
        .schema_type(nullable(Type::String))
        .description(Some("Default per engine (`16.4` / `8.0.39`)."))
}

/// Node group `subnetIds`: at least one, none twice.
pub fn node_group_subnet_ids() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(string(None))
        .min_items(Some(1))
        .unique_items(true)
}

/// Node group `instanceTypes`: 1 to 20 types like `t3.medium`.
pub fn instance_types() -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(nullable(Type::Array))
        .items(string(Some(INSTANCE_TYPE_PATTERN)))
        .min_items(Some(1))
        .max_items(Some(INSTANCE_TYPES_MAX))
}

/// Database `subnetIds`: optional, none twice.
pub fn database_subnet_ids() -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(nullable(Type::Array))
        .items(string(None))
        .unique_items(true)
}

/// A database identifier (`database::identifier`).
pub fn identifier() -> ObjectBuilder {
    string(Some(IDENTIFIER_PATTERN)).max_length(Some(IDENTIFIER_MAX))
}

/// A database instance class like `db.t3.micro`.
pub fn instance_class() -> ObjectBuilder {
    string(Some(INSTANCE_CLASS_PATTERN))
        .schema_type(nullable(Type::String))
        .description(Some("Default `db.t3.micro`."))
}

/// A master username (`database::username`).
pub fn master_username() -> ObjectBuilder {
    string(Some(USERNAME_PATTERN))
}

/// A master password (`database::password`). Never `null`, in a patch
/// too: a password cannot be removed.
pub fn master_password() -> ObjectBuilder {
    string(Some(PASSWORD_PATTERN)).description(Some("Write-only: never returned."))
}

/// `CreateVpc` with the rule its fields cannot state one by one: DNS
/// hostnames need DNS support (`vpc::normalize`), so `enableDnsHostnames:
/// true` with `enableDnsSupport: false` is refused.
pub fn with_dns_rule(create_vpc: RefOr<Schema>) -> RefOr<Schema> {
    let only = |field: &str, values: [serde_json::Value; 2]| {
        ObjectBuilder::new().property(
            field,
            ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .enum_values(Some(values)),
        )
    };
    let rule = AnyOfBuilder::new()
        .item(only(
            "enableDnsHostnames",
            [false.into(), serde_json::Value::Null],
        ))
        .item(only(
            "enableDnsSupport",
            [true.into(), serde_json::Value::Null],
        ));
    AllOfBuilder::new().item(create_vpc).item(rule).into()
}
