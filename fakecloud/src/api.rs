//! The `/v1` routes, written once for every kind. [`ApiKind`] says what
//! differs between kinds on the wire (the key's name, the body types, which
//! answers an operation can give); [`routes`] mounts the generic handlers,
//! thin wrappers over `service`, at a kind's paths; [`KindPaths`] describes
//! the same operations in the OpenAPI document. Paths come from one place
//! ([`collection_path`], [`item_path`]) so the router and the document
//! cannot disagree.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use serde_json::json;
use utoipa::openapi::link::{Link, LinkBuilder};
use utoipa::openapi::path::{
    HttpMethod, Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{Content, Header, Ref, RefOr, Required};
use utoipa::{IntoParams, Modify, ToSchema};

use crate::error::ApiError;
use crate::kinds::ResourceKind;
use crate::kinds::database::DatabaseKind;
use crate::kinds::nodegroup::NodeGroupKind;
use crate::kinds::subnet::SubnetKind;
use crate::kinds::validate;
use crate::kinds::vpc::VpcKind;
use crate::layers::Account;
use crate::model::{
    AuthenticateResult, CreateDatabaseInstance, CreateNodeGroup, CreateSubnet, CreateVpc,
    Credentials, DatabaseInstancePatch, NodeGroupPatch, Problem, SubnetPatch, VpcPatch,
};
use crate::problem_responses::{BadRequest, Conflict, NotFound, PreconditionFailed, response_ref};
use crate::query::ProblemQuery;
use crate::service::{self, ListParams};
use crate::state::SharedState;
use crate::store::Location;

type Result<T> = std::result::Result<T, ApiError>;

/// What a kind's `/v1` operations look like from outside; what they do is
/// the kind's [`ResourceKind`].
pub trait ApiKind: ResourceKind<Resource: ToSchema> + 'static {
    type Create: ToSchema;
    type Patch: ToSchema;
    /// The resource's key, in its path and in its body: `id` for the kinds
    /// with cloud-assigned ids, the client-chosen `name` or `identifier`
    /// otherwise.
    const KEY: &'static str;
    /// The kind in operation ids (`create_vpc`, `list_vpcs`) and, in
    /// CamelCase, in link names (`GetVpc`).
    const OPERATION: &'static str;
    /// Description of a patch's `200`.
    const PATCHED: &'static str = "OK.";
    /// Description of a delete's answer: `204` for kinds that go at once,
    /// `202` with the resource for kinds with a deleting state.
    const DELETED: &'static str;
    /// A delete can be refused (`409`): dependents, deletion protection.
    const REFUSES_DELETE: bool;

    /// Links of a create's `201` besides get, patch and delete of the new
    /// resource: where a client goes next.
    fn next_links() -> Vec<(&'static str, Link)> {
        Vec::new()
    }
}

impl ApiKind for VpcKind {
    type Create = CreateVpc;
    type Patch = VpcPatch;
    const KEY: &'static str = "id";
    const OPERATION: &'static str = "vpc";
    const DELETED: &'static str = "Deleted.";
    const REFUSES_DELETE: bool = true;

    fn next_links() -> Vec<(&'static str, Link)> {
        let subnet = json!({
            "vpcId": "$response.body#/id",
            "cidrBlock": "$response.body#/cidrBlock",
            "availabilityZone": "{$request.path.region}a",
        });
        vec![(
            "CreateSubnetInVpc",
            in_region("create_subnet")
                .request_body(Some(subnet))
                .build(),
        )]
    }
}

impl ApiKind for SubnetKind {
    type Create = CreateSubnet;
    type Patch = SubnetPatch;
    const KEY: &'static str = "id";
    const OPERATION: &'static str = "subnet";
    const DELETED: &'static str = "Deleted.";
    const REFUSES_DELETE: bool = true;

    fn next_links() -> Vec<(&'static str, Link)> {
        let in_subnet = json!({"subnetIds": ["$response.body#/id"]});
        vec![
            (
                "DeleteParentVpc",
                in_region("delete_vpc")
                    .parameter("id", "$response.body#/vpcId")
                    .build(),
            ),
            (
                "CreateNodeGroupInSubnet",
                in_region("create_node_group")
                    .request_body(Some(in_subnet.clone()))
                    .build(),
            ),
            (
                "CreateDatabaseInSubnet",
                in_region("create_database")
                    .request_body(Some(in_subnet))
                    .build(),
            ),
        ]
    }
}

impl ApiKind for NodeGroupKind {
    type Create = CreateNodeGroup;
    type Patch = NodeGroupPatch;
    const KEY: &'static str = "name";
    const OPERATION: &'static str = "node_group";
    const PATCHED: &'static str =
        "Changed; `UPDATING` until the nodes roll unless only tags changed.";
    const DELETED: &'static str = "Deleting: the node group in state `DELETING` until it is gone.";
    const REFUSES_DELETE: bool = false;
}

impl ApiKind for DatabaseKind {
    type Create = CreateDatabaseInstance;
    type Patch = DatabaseInstancePatch;
    const KEY: &'static str = "identifier";
    const OPERATION: &'static str = "database";
    const PATCHED: &'static str = "Changed; `modifying` until done unless only tags changed.";
    const DELETED: &'static str = "Deleting: the instance in state `deleting` until it is gone.";
    const REFUSES_DELETE: bool = true;

    fn next_links() -> Vec<(&'static str, Link)> {
        let credentials = json!({
            "username": "$response.body#/masterUsername",
            "password": "$request.body#/masterPassword",
        });
        let authenticate = in_region("authenticate_database")
            .parameter("identifier", "$response.body#/identifier")
            .request_body(Some(credentials));
        vec![("AuthenticateDatabase", authenticate.build())]
    }
}

/// Every kind's `/v1` routes.
pub fn routes() -> Router<SharedState> {
    let router = kind_routes::<VpcKind>(Router::new());
    let router = kind_routes::<SubnetKind>(router);
    let router = kind_routes::<NodeGroupKind>(router);
    kind_routes::<DatabaseKind>(router).route(
        "/v1/regions/{region}/databaseInstances/{identifier}/authenticate",
        post(authenticate_database),
    )
}

fn kind_routes<K: ApiKind>(router: Router<SharedState>) -> Router<SharedState> {
    router
        .route(&collection_path::<K>(), post(create::<K>).get(list::<K>))
        .route(
            &item_path::<K>(),
            get(read::<K>).patch(patch::<K>).delete(delete::<K>),
        )
}

/// `/v1/regions/{region}/vpcs`, `/v1/regions/{region}/clusters/{cluster}/nodegroups`.
fn collection_path<K: ApiKind>() -> String {
    let cluster = if K::KIND.in_cluster() {
        "/clusters/{cluster}"
    } else {
        ""
    };
    format!("/v1/regions/{{region}}{cluster}/{}", K::KIND.collection())
}

/// The collection's path with the resource's key: `.../vpcs/{id}`.
fn item_path<K: ApiKind>() -> String {
    format!("{}/{{{}}}", collection_path::<K>(), K::KEY)
}

/// The path parameters of a collection.
#[derive(Deserialize)]
struct CollectionAddress {
    region: String,
    /// Only in the paths of kinds that live in a cluster.
    cluster: Option<String>,
}

/// The path parameters of one resource.
#[derive(Deserialize)]
struct ItemAddress {
    region: String,
    cluster: Option<String>,
    /// The kind's key, whichever name it has in the path (`ApiKind::KEY`).
    #[serde(alias = "name", alias = "identifier")]
    id: String,
}

/// Where a call acts, once `{region}` and `{cluster}` are known to be valid.
fn location<K: ResourceKind>(
    account: Account,
    region: &str,
    cluster: Option<&str>,
) -> Result<Location> {
    validate::region(region)?;
    if let Some(cluster) = cluster {
        validate::name("clusterName", cluster)?;
    }
    Ok(Location {
        account: account.0,
        kind: K::KIND,
        region: region.to_string(),
        scope: cluster.unwrap_or_default().to_string(),
    })
}

async fn create<K: ApiKind>(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(at): Path<CollectionAddress>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = location::<K>(account, &at.region, at.cluster.as_deref())?;
    service::create::<K>(&state, loc, uri.path(), &headers, body).await
}

async fn list<K: ApiKind>(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(at): Path<CollectionAddress>,
    ProblemQuery(query): ProblemQuery<Vec<(String, String)>>,
) -> Result<Response> {
    let loc = location::<K>(account, &at.region, at.cluster.as_deref())?;
    service::list::<K>(&state, loc, query).await
}

async fn read<K: ApiKind>(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(at): Path<ItemAddress>,
) -> Result<Response> {
    let loc = location::<K>(account, &at.region, at.cluster.as_deref())?;
    service::get::<K>(&state, loc, &at.id).await
}

async fn patch<K: ApiKind>(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(at): Path<ItemAddress>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let loc = location::<K>(account, &at.region, at.cluster.as_deref())?;
    service::patch::<K>(&state, loc, &at.id, &headers, &body).await
}

async fn delete<K: ApiKind>(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path(at): Path<ItemAddress>,
    headers: HeaderMap,
) -> Result<Response> {
    let loc = location::<K>(account, &at.region, at.cluster.as_deref())?;
    service::delete::<K>(&state, loc, &at.id, &headers).await
}

#[utoipa::path(post, path = "/v1/regions/{region}/databaseInstances/{identifier}/authenticate",
    tag = "databaseInstance", request_body = Credentials, params(("region" = String, Path), ("identifier" = String, Path)),
    responses(
        (status = 200, description = "The credentials are the master credentials.", body = AuthenticateResult),
        (status = 401, description = "Wrong username or password (`AuthenticationFailed`), or missing or unknown API key (`Unauthorized`).", body = Problem, content_type = "application/problem+json"),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn authenticate_database(
    State(state): State<SharedState>,
    Extension(account): Extension<Account>,
    Path((region, identifier)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response> {
    let loc = location::<DatabaseKind>(account, &region, None)?;
    service::authenticate(&state, loc, &identifier, &body).await
}

// ---------------------------------------------------------------- OpenAPI

/// Adds every kind's operations, and the schemas they name, to the
/// document. Runs before `openapi::Conventions`, which adds what the layers
/// around every operation answer.
pub struct KindPaths;

impl Modify for KindPaths {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        describe::<VpcKind>(openapi);
        describe::<SubnetKind>(openapi);
        describe::<NodeGroupKind>(openapi);
        describe::<DatabaseKind>(openapi);
    }
}

fn describe<K: ApiKind>(openapi: &mut utoipa::openapi::OpenApi) {
    let collection = collection_path::<K>();
    let item = item_path::<K>();
    let paths = &mut openapi.paths;
    paths.add_path_operation(&collection, vec![HttpMethod::Post], create_doc::<K>());
    paths.add_path_operation(&collection, vec![HttpMethod::Get], list_doc::<K>());
    paths.add_path_operation(&item, vec![HttpMethod::Get], get_doc::<K>());
    paths.add_path_operation(&item, vec![HttpMethod::Patch], patch_doc::<K>());
    paths.add_path_operation(&item, vec![HttpMethod::Delete], delete_doc::<K>());
    let mut schemas = Vec::new();
    register::<K::Create>(&mut schemas);
    register::<K::Resource>(&mut schemas);
    register::<K::Patch>(&mut schemas);
    let components = openapi.components.get_or_insert_with(Default::default);
    components.schemas.extend(schemas);
}

/// Adds `T`'s schema under its component name, and the schemas it refers
/// to, as `#[utoipa::path]` does for the bodies it names.
fn register<T: ToSchema>(schemas: &mut Vec<(String, RefOr<utoipa::openapi::Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

fn create_doc<K: ApiKind>() -> Operation {
    let name = camel(K::OPERATION);
    let created = resource::<K>("Created.")
        .header("Location", string_header("Path of the new resource."))
        .header(
            "idempotent-replayed",
            string_header(
                "`true` when this answer replays an earlier request's with the same \
                 `Idempotency-Key`.",
            ),
        )
        .link(format!("Get{name}"), own_link::<K>("get", false))
        .link(format!("Patch{name}"), own_link::<K>("patch", true))
        .link(format!("Delete{name}"), own_link::<K>("delete", true));
    let created = K::next_links()
        .into_iter()
        .fold(created, |response, (name, link)| response.link(name, link));
    let idempotency_key = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "The same key with the same request replays the first answer; with another \
             request it is `409 IdempotentParameterMismatch`. Keys are per account.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(optional_string())
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[!-~]([ -~]{0,253}[!-~])?$")),
        ))
        .build();
    operation::<K>("create", collection_params::<K>())
        .request_body(Some(body::<K::Create>()))
        .parameter(idempotency_key)
        .response("201", created.build())
        .response("400", response_ref::<BadRequest>())
        .response("404", response_ref::<NotFound>())
        .response("409", response_ref::<Conflict>())
        .build()
}

fn list_doc<K: ApiKind>() -> Operation {
    // `ApiDoc` registers each kind's `Page<T>`, which utoipa names
    // `Page_<T>`.
    let page_name = format!("Page_{}", K::Resource::name());
    let page = ResponseBuilder::new().description("OK.").content(
        "application/json",
        Content::new(Some(Ref::from_schema_name(page_name))),
    );
    let mut operation = OperationBuilder::new()
        .tag(K::KIND.as_str())
        .operation_id(Some(format!("list_{}s", K::OPERATION)))
        .parameters(Some(collection_params::<K>()));
    for parameter in ListParams::into_params(|| None) {
        operation = operation.parameter(parameter);
    }
    operation
        .response("200", page.build())
        .response("400", response_ref::<BadRequest>())
        .response("404", response_ref::<NotFound>())
        .build()
}

fn get_doc<K: ApiKind>() -> Operation {
    let operation =
        operation::<K>("get", item_params::<K>()).response("200", resource::<K>("OK.").build());
    cluster_checked::<K>(operation)
        .response("404", response_ref::<NotFound>())
        .build()
}

fn patch_doc<K: ApiKind>() -> Operation {
    let mut operation = operation::<K>("patch", item_params::<K>())
        .request_body(Some(body::<K::Patch>()))
        .parameter(if_match())
        .response("200", resource::<K>(K::PATCHED).build())
        .response("400", response_ref::<BadRequest>())
        .response("404", response_ref::<NotFound>());
    // A change that meets a resource being deleted is refused (`K::BUSY`).
    if K::STATES.deleting.is_some() {
        operation = operation.response("409", response_ref::<Conflict>());
    }
    operation
        .response("412", response_ref::<PreconditionFailed>())
        .build()
}

fn delete_doc<K: ApiKind>() -> Operation {
    let operation = operation::<K>("delete", item_params::<K>()).parameter(if_match());
    let mut operation = match K::STATES.deleting {
        None => operation.response(
            "204",
            ResponseBuilder::new().description(K::DELETED).build(),
        ),
        Some(_) => operation.response("202", resource::<K>(K::DELETED).build()),
    };
    operation = cluster_checked::<K>(operation).response("404", response_ref::<NotFound>());
    if K::REFUSES_DELETE {
        operation = operation.response("409", response_ref::<Conflict>());
    }
    operation
        .response("412", response_ref::<PreconditionFailed>())
        .build()
}

/// An operation of the kind, with its tag, id (`get_vpc`) and path
/// parameters.
fn operation<K: ApiKind>(verb: &str, parameters: Vec<Parameter>) -> OperationBuilder {
    OperationBuilder::new()
        .tag(K::KIND.as_str())
        .operation_id(Some(format!("{verb}_{}", K::OPERATION)))
        .parameters(Some(parameters))
}

/// `400` for the operations whose only other input is the path: only a
/// `{cluster}` can be malformed there (an unknown `{region}` is a `404`).
fn cluster_checked<K: ApiKind>(operation: OperationBuilder) -> OperationBuilder {
    if K::KIND.in_cluster() {
        operation.response("400", response_ref::<BadRequest>())
    } else {
        operation
    }
}

fn collection_params<K: ApiKind>() -> Vec<Parameter> {
    let mut names = vec!["region"];
    if K::KIND.in_cluster() {
        names.push("cluster");
    }
    names.into_iter().map(path_param).collect()
}

fn item_params<K: ApiKind>() -> Vec<Parameter> {
    let mut params = collection_params::<K>();
    params.push(path_param(K::KEY));
    params
}

/// A string path parameter; `openapi::Conventions` narrows `region` and
/// `cluster`.
fn path_param(name: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build()
}

fn if_match() -> Parameter {
    ParameterBuilder::new()
        .name("If-Match")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "ETags (or `*`) the change is conditional on: `412 PreconditionFailed` when none \
             is current.",
        ))
        .schema(Some(ObjectBuilder::new().schema_type(optional_string())))
        .build()
}

/// An optional header's type, as utoipa renders `Option<String>`.
fn optional_string() -> SchemaType {
    SchemaType::from_iter([Type::String, Type::Null])
}

/// A JSON request body of type `T`.
fn body<T: ToSchema>() -> utoipa::openapi::request_body::RequestBody {
    RequestBodyBuilder::new()
        .content("application/json", Content::new(Some(schema_ref::<T>())))
        .required(Some(Required::True))
        .build()
}

/// An answer carrying the resource and its ETag.
fn resource<K: ApiKind>(description: &str) -> ResponseBuilder {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            Content::new(Some(schema_ref::<K::Resource>())),
        )
        .header(
            "ETag",
            string_header("Version of the resource's configuration, for `If-Match`."),
        )
}

/// A link from a create's answer to an operation on the new resource;
/// `conditional` ones send the ETag back as `If-Match`.
fn own_link<K: ApiKind>(verb: &str, conditional: bool) -> Link {
    let mut link = in_region(&format!("{verb}_{}", K::OPERATION));
    if K::KIND.in_cluster() {
        link = link.parameter("cluster", "$request.path.cluster");
    }
    link = link.parameter(K::KEY, format!("$response.body#/{}", K::KEY));
    if conditional {
        link = link.parameter("header.If-Match", "$response.header.ETag");
    }
    link.build()
}

/// A link to `operation_id` in the region the request named.
fn in_region(operation_id: &str) -> LinkBuilder {
    LinkBuilder::new()
        .operation_id(operation_id)
        .parameter("region", "$request.path.region")
}

fn string_header(description: &str) -> Header {
    let mut header = Header::new(ObjectBuilder::new().schema_type(Type::String));
    header.description = Some(description.into());
    header
}

fn schema_ref<T: ToSchema>() -> RefOr<utoipa::openapi::Schema> {
    RefOr::Ref(Ref::from_schema_name(T::name()))
}

/// `node_group` -> `NodeGroup`, for link names.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
        })
        .collect()
}
