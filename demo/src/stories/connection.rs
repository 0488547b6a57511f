//! Story 6 of each scope, connection secrets: the scenario
//! [`e2e::scenarios::connection::publish_and_authenticate`].

use e2e::scenarios::{Verdict, connection};
use e2e::scope::Scope;

use crate::{DemoError, System};

const NAME: &str = "orders-db";
const SECRET: &str = "orders-db-conn";

/// The Secret goes to `namespace`: the database's own, when namespaced.
pub(crate) async fn play<S: Scope>(system: &System, namespace: &str) -> Result<Verdict, DemoError> {
    let objects = S::objects(&system.objects);
    let mut verdict = Verdict::default();
    connection::publish_and_authenticate::<S>(
        &system.stage().with(&objects),
        &super::cloud_name::<S>(NAME),
        namespace,
        SECRET,
        &mut verdict,
    )
    .await?;
    Ok(verdict)
}
