//! The limits and patterns of wire fields that the server's checks and its
//! OpenAPI document share.
//!
//! The validators (`kinds`) check the limits, and the schemas (`schemas`)
//! state the limits and, as patterns, what each validator accepts, so that
//! a body valid for the document is one the server accepts. Stated once,
//! here, below both: `model`'s `#[schema]` attributes use `schemas`, and
//! the kinds use `model`, so `schemas` must not need `kinds`.

/// Most entries a tag or label map may have.
pub const TAGS_MAX: usize = 50;
/// Longest tag key, in characters.
pub const TAG_KEY_MAX: usize = 128;
/// Longest tag value, in characters.
pub const TAG_VALUE_MAX: usize = 256;

/// What `validate::cidr` accepts: four decimal octets (`ipnet` takes up to
/// three digits, leading zeros included, below 256) and a two-digit prefix
/// length from 16 to 28.
pub const CIDR_PATTERN: &str = r"^((25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])/(1[6-9]|2[0-8])$";

/// What `validate::name` accepts.
pub const NAME_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$";

/// What `validate::version(field, v, 2)` accepts (Kubernetes versions).
pub const KUBERNETES_VERSION_PATTERN: &str = r"^[0-9]{1,6}(\.[0-9]{1,6}){1,3}$";
/// What `validate::version(field, v, 1)` accepts (engine versions).
pub const ENGINE_VERSION_PATTERN: &str = r"^[0-9]{1,6}(\.[0-9]{1,6}){0,3}$";

/// What a node group's `instanceTypes` entry must look like
/// (`nodegroup::normalize`).
pub const INSTANCE_TYPE_PATTERN: &str = r"^[a-z0-9]+\.[a-z0-9]+$";
/// Most instance types a node group may list.
pub const INSTANCE_TYPES_MAX: usize = 20;

/// What `database::identifier` accepts (with `IDENTIFIER_MAX`): no
/// trailing or doubled hyphen.
pub const IDENTIFIER_PATTERN: &str = r"^[a-z](-?[a-z0-9])*$";
/// Longest database identifier.
pub const IDENTIFIER_MAX: usize = 63;
/// What `database::normalize` accepts as an instance class.
pub const INSTANCE_CLASS_PATTERN: &str = r"^db\.[a-z0-9]+\.[a-z0-9]+$";
/// What `database::username` accepts.
pub const USERNAME_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9_]{0,15}$";
/// What `database::password` accepts: 8-128 printable ASCII characters but
/// `/ " @`.
pub const PASSWORD_PATTERN: &str = r"^[ !#-.0-?A-~]{8,128}$";

/// What a snapshot's name may be (`snapshot::catalog::check_name`): 1-63
/// letters, digits, `.`, `_` or `-`, not starting with a dot, so a name is
/// always one plain path segment and a file name, never `..` or hidden.
pub const SNAPSHOT_NAME_PATTERN: &str = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}$";
