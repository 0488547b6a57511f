//! The reconcile's writes to its managed resource's metadata and spec:
//! annotations (guarded by the version read where a lost race could cost a
//! duplicate), spec patches, the finalizer, and the bookkeeping that lets
//! the watch drop their echoes ([`crate::echo`]).

use super::*;

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    /// Sets or removes annotations with a merge patch, without a
    /// resourceVersion precondition: for writes that are right whatever
    /// changed since (the external name a kind takes from `metadata.name`,
    /// `external-create-failed`). A merge patch touches only these keys.
    pub(super) async fn annotate(
        &mut self,
        annotations: &[(&str, Option<String>)],
    ) -> Result<(), ReconcileError> {
        self.merge_patch(
            annotations_patch(annotations),
            "write annotations",
            "metadata",
        )
        .await
    }

    /// Sets annotations only if the object is still at the resourceVersion
    /// this reconcile holds: a 409 means someone wrote since, and a decision
    /// made from our copy may be stale.
    pub(super) async fn annotate_guarded(
        &mut self,
        annotations: &[(&str, Option<String>)],
    ) -> Result<(), ReconcileError> {
        self.patch_spec(
            annotations_patch(annotations),
            "write annotations",
            "metadata",
        )
        .await
    }

    /// Merge-patches the spec, guarded by the resourceVersion we read, so a
    /// concurrent user edit is never overwritten with stale values.
    pub(super) async fn patch_spec(
        &mut self,
        mut patch: Value,
        action: &'static str,
        target: &'static str,
    ) -> Result<(), ReconcileError> {
        patch["metadata"]["resourceVersion"] = json!(self.mr.resource_version());
        self.merge_patch(patch, action, target).await
    }

    /// Applies a JSON merge patch to the object and keeps the result, so
    /// later steps of this reconcile see the new resourceVersion.
    pub(super) async fn merge_patch(
        &mut self,
        patch: Value,
        action: &'static str,
        target: &'static str,
    ) -> Result<(), ReconcileError> {
        let patched = self
            .ctx
            .cluster
            .merge_patch(&self.key(), patch)
            .await
            .and_then(typed)
            .map_err(|error| ReconcileError::Kube { action, error })?;
        self.replace_mr(patched)?;
        self.ctx.metrics.kube_write(&self.kind, target);
        self.remember_write(self.mr.resource_version().as_deref());
        Ok(())
    }

    /// Remembers a version this reconcile wrote, so its echo through the
    /// watch is not reconciled again (see [`crate::echo`]).
    pub(super) fn remember_write(&self, resource_version: Option<&str>) {
        if let (Some(uid), Some(version)) = (self.mr.uid(), resource_version) {
            self.ctx.own_writes.handled(&uid, version);
        }
    }

    /// The object's finalizers with the managed-resource finalizer added;
    /// `None` when it is there already. A merge patch replaces the whole
    /// list, so the others are kept in it.
    pub(super) fn finalizers_with_ours(&self) -> Option<Vec<String>> {
        let finalizers = self.mr.finalizers();
        if finalizers.iter().any(|f| f == MANAGED_RESOURCE_FINALIZER) {
            return None;
        }
        let mut with_ours = finalizers.to_vec();
        with_ours.push(MANAGED_RESOURCE_FINALIZER.to_owned());
        Some(with_ours)
    }

    pub(super) async fn ensure_finalizer(&mut self) -> Result<(), ReconcileError> {
        let Some(finalizers) = self.finalizers_with_ours() else {
            return Ok(());
        };
        self.patch_spec(
            json!({ "metadata": { "finalizers": finalizers } }),
            "update finalizers",
            "metadata",
        )
        .await
    }
}
