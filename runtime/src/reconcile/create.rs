//! The create step: the create-pending mark (with the finalizer), the
//! cloud call under its idempotency key, and recording what it made (the
//! external name, `external-create-succeeded`, the late-initialised spec
//! and the connection details), with Crossplane's identifying tags merged
//! into the body ([`crate::tags`]).

use super::*;

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    pub(super) async fn create(
        &mut self,
        session: &mut Session<'_, C::Client>,
        external_name: Option<&str>,
        actions: Actions,
    ) -> Result<Next, ReconcileError> {
        let merged = merge_init_under(
            &self.spec_json("forProvider"),
            &self.spec_json("initProvider"),
        );
        let mut desired = without_keys(&merged, &non_cloud_fields::<K, C>());
        if let Some(field) = <K::ForProvider as CloudKind<C>>::TAGS
            && self.ctx.settings.external_tags
        {
            tags::merge_under(&mut desired, field, self.external_tags());
        }
        let marks = self.create_marks();
        if marks.succeeded.is_some()
            && let Some(adopted) = self.adopt_tagged(session).await?
        {
            return Ok(adopted);
        }
        let key = idempotency_key(&self.mr.uid().unwrap_or_default(), marks.succeeded);
        // Details only the provider knows (a generated password) are kept
        // before the call that uses them, so no crash can lose them.
        let before = self
            .mr
            .for_provider()
            .details_before_create(session)
            .await
            .map_err(ReconcileError::Create)?;
        session.keep(before).await?;
        // Guarded by the resourceVersion this reconcile read: if another
        // replica, or our own earlier reconcile, wrote since, our copy may
        // lack an external name that already exists, so we create nothing
        // and look again (a 409, handled quietly by `reconcile`).
        // A name not yet recorded (a namespaced resource's default) is
        // claimed with the create, so that a restart after the cloud
        // accepted the call still knows which resource is its own.
        let claiming = external_name
            .filter(|_| self.annotation(EXTERNAL_NAME_ANNOTATION).is_none())
            .map(str::to_owned);
        // A create that could not start soon gives way before its mark.
        session
            .pacing
            .before_write()
            .map_err(ReconcileError::Deferred)?;
        let mut pending = vec![(EXTERNAL_CREATE_PENDING_ANNOTATION, Some(now()))];
        if let Some(name) = &claiming {
            pending.push((EXTERNAL_NAME_ANNOTATION, Some(name.clone())));
        }
        // The finalizer goes with it, in the same guarded write: it is on
        // the object before the cloud is called, as crossplane-runtime
        // has it, for one API write instead of two.
        let mut patch = annotations_patch(&pending);
        if let Some(finalizers) = self.finalizers_with_ours() {
            patch["metadata"]["finalizers"] = json!(finalizers);
        }
        self.patch_spec(patch, "write annotations", "metadata")
            .await?;
        info!("creating external resource");
        let result = self
            .ctx
            .mutate(
                &self.kind,
                "create",
                &session.pacing,
                self.mr.meta(),
                || {
                    self.mr
                        .for_provider()
                        .create(session, external_name, desired.clone(), &key)
                },
            )
            .await
            // Not sent, or refused with a pause (429): the
            // create-pending mark stays, and the next reconcile repeats the
            // create under the same idempotency key.
            .map_err(ReconcileError::Deferred)?;
        let named = result.as_ref().map_or(external_name, |created| {
            Some(created.external_name.as_str())
        });
        self.change_log(OperationType::Create, named, &result);
        match result {
            Ok(Created {
                external_name: name,
                connection_details,
                observed,
            }) => {
                tracing::Span::current().record("external_name", name.as_str());
                // The create's answer, when it shows the resource, is its
                // first observation: the spec is late-initialised from it in
                // the write that records the external name, and the status
                // written at the end of this reconcile says what the next
                // reconcile's observe would (atProvider, drift, Ready), so
                // that one finds nothing to write.
                let answer = observed.map(|seen| {
                    let at_provider =
                        serde_json::to_value(&seen).expect("the cloud's models serialize");
                    (seen, at_provider)
                });
                let late_init = answer
                    .as_ref()
                    .filter(|_| actions.late_initialize)
                    .map(|(_, at_provider)| at_provider);
                self.record_created(&name, late_init).await?;
                let unpublished = self
                    .record_created_details(
                        session,
                        answer.as_ref().map(|(seen, _)| seen),
                        connection_details,
                    )
                    .await?;
                self.event(
                    EventType::Normal,
                    "CreatedExternalResource",
                    "Successfully requested creation of external resource",
                )
                .await;
                if let Some(error) = unpublished {
                    return Err(ReconcileError::ConnectionDetails(error));
                }
                self.set(Condition::reconcile_success());
                match answer {
                    Some((seen, at_provider)) => {
                        Ok(self.observed_created(&seen, at_provider, actions).await)
                    }
                    None => {
                        self.set(Condition::creating());
                        Ok(Next::After(self.ctx.settings.pending_poll_interval))
                    }
                }
            }
            Err(error) => {
                // The cloud refused the create outright: the claimed name
                // was not made by this resource, so the claim goes.
                // Without an answer the create may have happened: the claim
                // stays, and the next attempt's idempotency key settles it.
                let failure = error.create_failure();
                let refused = matches!(failure, CreateFailure::Refused | CreateFailure::NameTaken);
                let mut failed = vec![(EXTERNAL_CREATE_FAILED_ANNOTATION, Some(now()))];
                if claiming.is_some() && refused {
                    failed.push((EXTERNAL_NAME_ANNOTATION, None));
                }
                self.annotate(&failed).await?;
                if failure == CreateFailure::KeyReused {
                    return Err(ReconcileError::CreateIncomplete { key });
                }
                if let (Some(name), CreateFailure::NameTaken) = (claiming, failure) {
                    return Err(ReconcileError::ExternalNameTaken {
                        kind: K::kind(&()).into_owned(),
                        name,
                    });
                }
                Err(ReconcileError::Create(error))
            }
        }
    }

    /// Before this resource, created once and now missing, is created
    /// again: adopts the one cloud resource that carries its identifying
    /// tags, if the kind finds one ([`CloudKind::find_tagged`]). That is a
    /// resource the cloud got back (a backup or snapshot restored) after
    /// the provider had replaced it: created again, it would be a
    /// duplicate that nothing tracks. Without tags on the kind, or with
    /// them turned off, there is nothing to look for. `None`: create.
    async fn adopt_tagged(
        &mut self,
        session: &Session<'_, C::Client>,
    ) -> Result<Option<Next>, ReconcileError> {
        if <K::ForProvider as CloudKind<C>>::TAGS.is_none() || !self.ctx.settings.external_tags {
            return Ok(None);
        }
        let tags = self.external_tags();
        let mut found = self
            .ctx
            .call(&self.kind, "find", &session.pacing, || {
                self.mr.for_provider().find_tagged(session, &tags)
            })
            .await
            .map_err(ReconcileError::Deferred)?
            .map_err(ReconcileError::Observe)?;
        match found.len() {
            0 => Ok(None),
            1 => {
                let name = found.remove(0);
                tracing::Span::current().record("external_name", name.as_str());
                info!("missing external resource found again by its tags; adopting it");
                self.ensure_finalizer().await?;
                self.record_created(&name, None).await?;
                self.event(
                    EventType::Normal,
                    "AdoptedExternalResource",
                    &format!(
                        "The external resource was missing; {name} carries this resource's identifying tags, so it is managed again instead of creating another"
                    ),
                )
                .await;
                self.set(Condition::reconcile_success());
                // Observed on the next look, at the pending pace.
                Ok(Some(Next::After(self.ctx.settings.pending_poll_interval)))
            }
            _ => Err(ReconcileError::TaggedSeveral { found }),
        }
    }

    /// Records a create's result: the external name and
    /// `external-create-succeeded`, in one write guarded by the
    /// resourceVersion, with `forProvider` late-initialised from
    /// `at_provider` (the create's answer, when the policies allow
    /// `LateInitialize`) in the same write. On a conflict it reads the
    /// object again and retries, as crossplane-runtime does, unless the
    /// newer copy already records this result; the late-initialised spec
    /// is derived again from the newer copy, so a concurrent edit is kept.
    /// Should every attempt fail, the create stays incomplete
    /// and the next reconcile repeats it with the same idempotency key,
    /// which returns this same resource: the result is never lost.
    pub(super) async fn record_created(
        &mut self,
        name: &str,
        at_provider: Option<&Value>,
    ) -> Result<(), ReconcileError> {
        let uid = self.mr.uid();
        for attempt in 1..=RECORD_ATTEMPTS {
            let mut patch = annotations_patch(&[
                (EXTERNAL_NAME_ANNOTATION, Some(name.to_owned())),
                (EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, Some(now())),
            ]);
            let mut target = "metadata";
            if let Some(filled) = at_provider.and_then(|seen| self.late_initialized(seen)) {
                info!("late-initialising forProvider from the create's answer");
                patch["spec"] = json!({ "forProvider": filled });
                target = "spec";
            }
            let written = self.patch_spec(patch, "write annotations", target).await;
            match written {
                Err(error) if error.is_conflict() && attempt < RECORD_ATTEMPTS => {}
                other => return other,
            }
            let action = "read the resource again to record its external name";
            let found = self
                .ctx
                .cluster
                .get(&self.key())
                .await
                .and_then(|found| found.map(typed::<K>).transpose())
                .map_err(|error| ReconcileError::Kube { action, error })?;
            let Some(found) = found else {
                return Err(ReconcileError::CreateSuperseded {
                    created: name.to_owned(),
                    recorded: "nothing: the managed resource is gone".to_owned(),
                });
            };
            self.replace_mr(found)?;
            if self.mr.uid() != uid {
                return Err(ReconcileError::CreateSuperseded {
                    created: name.to_owned(),
                    recorded: "a new object of the same name".to_owned(),
                });
            }
            match plan::record_created(
                name,
                self.annotation(EXTERNAL_NAME_ANNOTATION).as_deref(),
                self.create_marks(),
            ) {
                RecordCreated::Write => continue,
                RecordCreated::AlreadyRecorded => return Ok(()),
                RecordCreated::Superseded { recorded } => {
                    return Err(ReconcileError::CreateSuperseded {
                        created: name.to_owned(),
                        recorded,
                    });
                }
            }
        }
        unreachable!("the last attempt returns")
    }

    /// Sends the change-log entry of an external create, update or delete
    /// that ended in `result`, when change logs are enabled; the snapshot
    /// is the resource as this reconcile holds it, from before the call.
    pub(super) fn change_log<T>(
        &self,
        operation: OperationType,
        external_name: Option<&str>,
        result: &Result<T, ExternalError>,
    ) {
        if let Some(logger) = &self.ctx.changelog {
            let snapshot = &self.json;
            let error = result.as_ref().err().map(|e| e as &dyn std::fmt::Display);
            logger.record(&self.mr, snapshot, operation, external_name, error);
        }
    }

    /// Connection details after a create, in one write of the connection
    /// Secret at most: with the create's answer, the full set the next
    /// reconcile's observe would publish (so a resource `Ready` at once has
    /// its details too, and that reconcile writes nothing), with the
    /// details the create settled; without it, only the latter, as before.
    /// When the kind cannot give its details from the answer, the create's
    /// own are still recorded and the error is returned for the caller to
    /// report once the create is on record.
    pub(super) async fn record_created_details(
        &self,
        session: &mut Session<'_, C::Client>,
        seen: Option<&Observation<K, C>>,
        settled: Details,
    ) -> Result<Option<ExternalError>, ReconcileError> {
        let published = match seen {
            Some(seen) => self
                .mr
                .for_provider()
                .connection_details(session, seen)
                .await
                .map(Some),
            None => Ok(None),
        };
        match published {
            Ok(Some(mut details)) => {
                details.extend(settled);
                session.publish(details).await?;
                Ok(None)
            }
            Ok(None) => {
                session.record(settled).await?;
                Ok(None)
            }
            Err(error) => {
                session.record(settled).await?;
                Ok(Some(error))
            }
        }
    }

    /// Takes the create's answer as the resource's first observation, as
    /// the steps of an existing resource take an observe's:
    /// `status.atProvider`, the drift report and `UpToDate`, `Ready`. Says
    /// when to look again: a poll once it is available and as declared,
    /// soon while it is provisioning or differs from the declaration (the
    /// next reconcile updates it, as it would after an observe).
    pub(super) async fn observed_created(
        &mut self,
        seen: &Observation<K, C>,
        at_provider: Value,
        actions: Actions,
    ) -> Next {
        let readiness = K::ForProvider::readiness(seen);
        let deleting = readiness == Readiness::Deleting;
        let non_cloud = non_cloud_fields::<K, C>();
        let desired = without_keys(&self.spec_json("forProvider"), &non_cloud);
        let init = without_keys(&self.spec_json("initProvider"), &non_cloud);
        let create_only = <K::ForProvider as CloudKind<C>>::CREATE_ONLY_FIELDS;
        // The create sent every write-only field as declared: none differs.
        let write_only = Map::new();
        if !deleting {
            self.report_drift(drift::Inputs {
                actions,
                desired: &desired,
                init: &init,
                observed: Some(&at_provider),
                write_only: &write_only,
                create_only,
                sensitive: <K::ForProvider as CloudKind<C>>::SENSITIVE_FIELDS,
            })
            .await;
        }
        let updatable = without_keys(&desired, create_only);
        let observed = Observed::Exists {
            at_provider: at_provider.clone(),
            deleting,
        };
        let step = live_step_with(
            actions,
            &updatable,
            write_only,
            &observed,
            lists::for_kind::<K>(),
        );
        self.status.at_provider = Some(at_provider);
        self.set_readiness(readiness);
        if step == Step::UpToDate {
            let uid = self.mr.uid().unwrap_or_default();
            self.ctx
                .metrics
                .standard
                .observed(&crate::metrics::gvk_label::<K>(), &uid, false);
            self.requeue_for(readiness)
        } else {
            Next::After(self.ctx.settings.pending_poll_interval)
        }
    }

    /// Crossplane's identifying tags of this resource ([`tags`]).
    pub(super) fn external_tags(&self) -> Vec<(&'static str, String)> {
        let namespace = self.mr.namespace();
        tags::external_tags(
            &K::kind(&()),
            &K::group(&()),
            &self.mr.name_any(),
            &self
                .mr
                .resource_spec()
                .provider_config(namespace.as_deref()),
            namespace.as_deref(),
        )
    }
}
