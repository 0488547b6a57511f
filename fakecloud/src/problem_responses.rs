//! The error answers the OpenAPI document names: each a problem
//! (`application/problem+json`) response with what it means.
//!
//! On their own, below both sides that name them: the handlers (`api`,
//! `admin`) list them in their `#[utoipa::path]`s and operations, and the
//! document (`openapi`) gathers the handlers and registers these, so
//! neither side needs the other for them.

use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Content, Header, Ref, RefOr};
use utoipa::{ToResponse, ToSchema};

use crate::model::Problem;

fn problem(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        "application/problem+json",
        Content::new(Some(Ref::from_schema_name(Problem::name()))),
    )
}

macro_rules! problem_response {
    ($(#[doc = $doc:literal])* $name:ident, $description:literal) => {
        $(#[doc = $doc])*
        pub struct $name;

        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<Response>) {
                (stringify!($name), problem($description).build().into())
            }
        }
    };
}

problem_response!(
    /// `400`: the request breaks the document's rules or a rule that
    /// depends on stored resources.
    BadRequest,
    "The request is not valid (`MalformedJSON`, `MissingParameter`, `UnknownParameter`, \
     `InvalidParameterValue`, `InvalidParameterCombination`, `ImmutableParameter`, or a referenced \
     resource that does not exist: `InvalidVpcID.NotFound`, `InvalidSubnetID.NotFound`, \
     `InvalidSubnet.Range`), or a snapshot file that cannot be loaded (`NotASnapshot`, \
     `CorruptSnapshot`, `UnsupportedSnapshotVersion`)."
);
problem_response!(
    /// `401` from the authentication layers.
    Unauthorized,
    "Missing or unknown credentials (`Unauthorized`)."
);
problem_response!(
    /// `404`: the addressed resource, region, kind or account does not exist.
    NotFound,
    "The addressed resource does not exist (or belongs to another account), or the region, kind or \
     account is unknown (`InvalidRegion`, `InvalidVpcID.NotFound`, `InvalidSubnetID.NotFound`, \
     `ResourceNotFoundException`, `DBInstanceNotFound`, `ResourceNotFound`, `UnknownKind`, \
     `FaultRuleNotFound`, `UnknownAccount`, `SnapshotNotFound`, `NoRecording`)."
);
problem_response!(
    /// `409`: the resource's state or a sibling refuses the call.
    Conflict,
    "The call conflicts with the resource's state or another resource (`DependencyViolation`, \
     `InvalidSubnet.Conflict`, `ResourceInUseException`, `DBInstanceAlreadyExists`, \
     `InvalidDBInstanceState`, `InvalidParameterCombination`, `IdempotentParameterMismatch`, \
     `IncorrectState`, `AmbiguousResource`, `SnapshotAlreadyExists`, `LoadInProgress`, \
     `RecorderRunning`)."
);
problem_response!(
    /// `412`: `If-Match` names another ETag.
    PreconditionFailed,
    "`If-Match` does not match the resource's current ETag (`PreconditionFailed`)."
);
problem_response!(
    /// `5XX`: a storage failure, or a fault rule's injected error.
    ServerError,
    "A storage failure (`InternalError`), or, on `/v1`, an error injected by a fault rule of the \
     admin API (`Retry-After` when the rule sets one)."
);

/// `429` from the throttling layer, with `Retry-After`.
pub struct Throttled;

impl<'r> ToResponse<'r> for Throttled {
    fn response() -> (&'r str, RefOr<Response>) {
        let response = problem(
            "The account's token bucket is empty (`Throttling`, admin API `/admin/throttling` and \
             `/admin/throttling/accounts/{account}`).",
        )
        .header("Retry-After", retry_after())
        .build();
        ("Throttled", response.into())
    }
}

fn retry_after() -> Header {
    let mut header = Header::new(
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0)),
    );
    header.description = Some("Seconds to wait before calling again.".into());
    header
}

/// A `$ref` to the response `R`, which the document registers.
pub(crate) fn response_ref<'r, R: ToResponse<'r>>() -> RefOr<Response> {
    RefOr::Ref(Ref::from_response_name(R::response().0))
}
