//! fakecloud: a small SQLite-backed cloud (VPCs, subnets, node groups,
//! database instances) that validates, provisions asynchronously, fails on
//! demand and can be changed behind its clients' backs.
//!
//! Embed it with [`spawn`] (feature `server`, on by default); talk to it
//! with [`client::Client`] (feature `client`); the wire types are in
//! [`model`] and need neither, so a client-only build
//! (`default-features = false, features = ["client"]`) compiles none of the
//! server's dependencies.

#[cfg(feature = "server")]
mod admin;
#[cfg(feature = "server")]
mod api;
#[cfg(feature = "server")]
mod audit;
#[cfg(feature = "server")]
pub mod cli;
#[cfg(feature = "server")]
mod clock;
#[cfg(feature = "server")]
mod console;
#[cfg(feature = "server")]
mod db;
#[cfg(feature = "server")]
mod error;
#[cfg(feature = "server")]
mod faults;
pub mod field_rules;
#[cfg(feature = "server")]
mod ids;
#[cfg(feature = "server")]
mod jsonl;
#[cfg(feature = "server")]
mod kinds;
#[cfg(feature = "server")]
mod layers;
#[cfg(feature = "server")]
mod metrics;
#[cfg(feature = "server")]
mod openapi;
#[cfg(feature = "server")]
mod problem_responses;
#[cfg(feature = "server")]
mod query;
#[cfg(feature = "server")]
mod recorder;
mod regions;
#[cfg(feature = "server")]
pub mod replay;
#[cfg(feature = "server")]
mod request_id;
#[cfg(feature = "server")]
mod schemas;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod service;
#[cfg(feature = "server")]
mod snapshot;
#[cfg(feature = "server")]
mod state;
#[cfg(feature = "server")]
mod store;
#[cfg(feature = "server")]
mod throttle;
#[cfg(feature = "server")]
mod ticker;

#[cfg(feature = "client")]
pub mod client;
pub mod model;

#[cfg(feature = "server")]
pub use db::IN_MEMORY;
#[cfg(feature = "server")]
pub use error::Error;
#[cfg(feature = "server")]
pub use jsonl::FileError;
#[cfg(feature = "server")]
pub use metrics::metric_families;
#[cfg(feature = "server")]
pub use openapi::ApiDoc;
#[cfg(feature = "server")]
pub use server::{ApiKey, Config, DEV_ACCOUNT, RunningServer, spawn};
