//! Story 6, connection secrets: the scenario
//! [`e2e::scenarios::connection::publish_and_authenticate`].

use e2e::scenarios::{Verdict, connection};

use crate::system::NAMESPACE;
use crate::{DemoError, System};

const NAME: &str = "orders-db";
const SECRET: &str = "orders-db-conn";

pub(crate) async fn play(system: &System) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    connection::publish_and_authenticate::<e2e::scope::Legacy>(
        &system.stage(),
        NAME,
        NAMESPACE,
        SECRET,
        &mut verdict,
    )
    .await?;
    Ok(verdict)
}
