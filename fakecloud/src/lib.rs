//! fakecloud: a small SQLite-backed cloud (VPCs, subnets, node groups,
//! database instances) that validates, provisions asynchronously, fails on
//! demand and can be changed behind its clients' backs.
//!
//! Embed it with [`spawn`]; talk to it with [`client::Client`] (feature
//! `client`); the wire types are in [`model`].

mod admin;
mod api;
mod audit;
mod clock;
mod db;
mod error;
mod faults;
mod kinds;
mod layers;
mod metrics;
mod openapi;
mod query;
mod request_id;
mod schemas;
mod server;
mod service;
mod state;
mod store;
mod throttle;
mod ticker;

#[cfg(feature = "client")]
pub mod client;
pub mod model;

pub use db::IN_MEMORY;
pub use error::Error;
pub use openapi::ApiDoc;
pub use server::{ApiKey, Config, DEV_ACCOUNT, RunningServer, spawn};
