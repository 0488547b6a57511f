//! The regions fakecloud serves.
//!
//! On their own, below `model` (which re-exports them with the wire types)
//! and below `schemas`, whose zone and region rules `model`'s `#[schema]`
//! attributes use, so that `schemas` needs nothing from `model`.

/// Regions fakecloud serves; each has the zones `<region>a|b|c`.
pub const REGIONS: [&str; 3] = ["us-east-1", "us-west-2", "eu-west-1"];
