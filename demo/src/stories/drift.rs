//! The drift story (issue 29): an outside actor changes a VPC's tags in
//! fakecloud; an observe-only copy shows the drift in `status.drift` and
//! calls nothing that mutates; a managed copy shows it, corrects it and
//! clears it; a VPC whose policies lack `Create` previews the create. The
//! e2e tests play the same scenarios ([`e2e::scenarios::drift`]).

use e2e::scenarios::{Verdict, drift};
use e2e::scope::Scope;

use crate::{DemoError, System};

pub(crate) async fn play<S: Scope>(system: &System) -> Result<Verdict, DemoError> {
    let objects = S::objects(&system.objects);
    let stage = system.stage();
    let stage = stage.with(&objects);
    let mut verdict = Verdict::default();
    drift::observed::<S>(&stage, "drift-observed", &mut verdict).await?;
    drift::corrected::<S>(&stage, "drift-managed", &mut verdict).await?;
    drift::create_preview::<S>(&stage, "drift-preview", &mut verdict).await?;
    Ok(verdict)
}
