//! The restore story, on the namespaced kinds: fakecloud's snapshot taken,
//! a managed and an observed VPC lost behind the provider's back, the
//! snapshot loaded; the provider adopts the restored VPC instead of
//! creating it a third time ([`e2e::scenarios::restore`]).

use e2e::scenarios::Verdict;
use e2e::scenarios::restore::{self, Names};
use e2e::scope::{Namespaced, Scope};

use crate::{DemoError, System};

pub(crate) async fn play(system: &System) -> Result<Verdict, DemoError> {
    let app = Namespaced::objects(&system.objects);
    let stage = system.stage();
    let names = Names {
        managed: "restored".to_owned(),
        observed: "restored-team-b".to_owned(),
        snapshot: "before-loss".to_owned(),
    };
    Ok(restore::play::<Namespaced>(&stage.with(&app), &names).await?)
}
