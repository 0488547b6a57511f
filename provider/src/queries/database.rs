//! `DatabaseInstanceQuery`: the region's DatabaseInstances, by tag, engine
//! and state. A match's managed resource needs only its region besides its
//! identifier.

use apis::kinds::DatabaseInstanceQuery;
use apis::kinds::database_instance::Engine;
use apis::kinds::query::DatabaseState;
use fakecloud::client::Client;
use fakecloud::model::DatabaseStatus;
use runtime::ExternalError;
use runtime::query::{Found, Page, QueryKind};
use serde_json::json;

use super::{accepts, conflicting_tags, options, page};
use crate::cloud::FakecloudConnect;

/// The cloud's spelling of an engine.
fn engine(engine: Engine) -> fakecloud::model::Engine {
    match engine {
        Engine::Postgres => fakecloud::model::Engine::Postgres,
        Engine::Mysql => fakecloud::model::Engine::Mysql,
    }
}

/// The cloud's spelling of an instance state.
fn status(state: DatabaseState) -> DatabaseStatus {
    match state {
        DatabaseState::Creating => DatabaseStatus::Creating,
        DatabaseState::Available => DatabaseStatus::Available,
        DatabaseState::Modifying => DatabaseStatus::Modifying,
        DatabaseState::Deleting => DatabaseStatus::Deleting,
    }
}

impl QueryKind<FakecloudConnect> for DatabaseInstanceQuery {
    fn unusable(&self) -> Option<String> {
        conflicting_tags(&self.spec.filter.base)
    }

    async fn list(&self, client: &Client, next: Option<String>) -> Result<Page, ExternalError> {
        let filter = &self.spec.filter;
        let listed = client
            .list_database_instances(&filter.base.region, &options(&filter.base, next))
            .await;
        page(
            listed,
            |db| {
                accepts(filter.engine.map(engine).as_ref(), &db.engine)
                    && accepts(filter.state.map(status).as_ref(), &db.status)
            },
            |db| Found {
                external_name: db.identifier,
                created_at: db.created_at,
                for_provider: json!({ "region": db.region }),
            },
        )
    }
}
