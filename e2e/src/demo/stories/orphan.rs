//! Story 7, deletion with `Orphan` (seed 003): the full-control VPC of
//! story 2 gets `deletionPolicy: Orphan` and is deleted; the managed
//! resource goes, the cloud VPC stays, and no DELETE reaches fakecloud.

use apis::kinds::Vpc;
use fakecloud::model::Kind;

use super::network::{region, web_vpc};
use super::{READY, Shared, Verdict, collection, under};
use crate::demo::report::{self, line};
use crate::demo::{DemoError, System};

pub(crate) async fn play(system: &mut System, shared: &Shared) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let Some((name, id)) = shared.web_vpc.clone() else {
        verdict.check("story 2 created a VPC to delete", false);
        return Ok(verdict);
    };
    let mark = system.audit_mark().await?;
    line(format!(
        "apply VPC/{name} with deletionPolicy Orphan, then kubectl delete vpc {name}"
    ));
    system.objects.apply::<Vpc>(web_vpc("Orphan")).await?;
    system.objects.delete::<Vpc>(&name).await?;
    system.objects.wait_gone::<Vpc>(&name, READY).await?;
    line(format!("VPC/{name}: deleted from Kubernetes"));
    let in_cloud = system.admin.resource(Kind::Vpc, &id, &region()).await;
    line(format!(
        "{id} in fakecloud: {}",
        match &in_cloud {
            Ok(found) => format!(
                "still there (state {})",
                report::plain(&found.resource["state"])
            ),
            Err(e) => format!("GONE ({e})"),
        }
    ));
    let path = format!("{}/{id}", collection("vpcs"));
    let calls = system.audit_since(mark, |p| under(p, &path)).await?;
    report::audit("provider calls", &calls);
    verdict.check("the cloud VPC still exists", in_cloud.is_ok());
    let deletes = calls.iter().filter(|c| c.method == "DELETE").count();
    verdict.check(
        format!("no DELETE reached fakecloud (saw {deletes})"),
        deletes == 0 && report::mutating(&calls) == 0,
    );
    Ok(verdict)
}
