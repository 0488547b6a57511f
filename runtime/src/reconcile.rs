//! The managed reconciler: one piece of code for every kind, following
//! crossplane-runtime's order of steps (pause, policy check, deletion,
//! external-name initialisation, create annotations, references, connect,
//! observe, connection details, finalizer, create, late-init, update,
//! conditions). The decisions come from [`crate::policy`] and
//! [`crate::plan`]; this module gathers facts and carries decisions out.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossplane_types::ExternalNameOrigin;
use crossplane_types::condition::{ConditionStatus, TYPE_READY, TYPE_SYNCED, TYPE_UP_TO_DATE};
use crossplane_types::well_known::{
    EXTERNAL_CREATE_FAILED_ANNOTATION, EXTERNAL_CREATE_PENDING_ANNOTATION,
    EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, EXTERNAL_NAME_ANNOTATION, MANAGED_RESOURCE_FINALIZER,
    PAUSED_ANNOTATION, POLL_INTERVAL_ANNOTATION, RECONCILE_REQUESTED_AT_ANNOTATION,
};
use crossplane_types::{CommonSpec, Condition, Managed, ManagedStatus, Scope};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use serde_json::{Map, Value, json};
use tracing::{Instrument, field, info, info_span, warn};

use crate::backoff::Intent;
use crate::changelog::OperationType;
use crate::cluster::{ObjectKey, typed};
use crate::connect::Connect;
use crate::connection::ConnectionSecret;
use crate::controller::{CATCH_UP_LIMIT, CONFLICT_RETRY, Context, ControllerContext, kind_label};
use crate::drift;
use crate::echo::Lag;
use crate::error::{CreateFailure, ExternalError, ReconcileError};
use crate::events::EventType;
use crate::fields::{late_initialize, merge_init_under, without_keys};
use crate::kind::{CloudKind, Created, ManagedKind, Observation, Readiness, non_cloud_fields};
use crate::pacing::{GiveWay, Pacing};
use crate::plan::{
    self, CreateMarks, DeleteStep, Observed, RecordCreated, Step, delete_step, idempotency_key,
    live_step,
};
use crate::policy::{self, Actions, Mode, orphans_on_delete};
use crate::rate_limit::{Admission, Lane, Wake};
use crate::references::Resolver;
use crate::requests::{self, pending_request};
use crate::session::{Details, Session};
use crate::tags;

/// The status as JSON-backed generic data, so one code path serves all kinds.
type Status = ManagedStatus<Value>;

/// Never returned: the reconciler turns every failure into a `Synced`
/// condition and a backoff, so the controller's error policy is unused.
#[derive(Debug, thiserror::Error)]
#[error("unreachable")]
pub enum Never {}

/// Entry point for kube's `Controller::run`.
pub async fn reconcile<K: ManagedKind<C>, C: Connect>(
    mr: Arc<K>,
    controller: Arc<ControllerContext<K, C>>,
) -> Result<Action, Never> {
    let wake = || controller.wake(&*mr);
    Ok(
        match reconcile_once(&*mr, &controller.ctx, &*controller.connect, wake)
            .await
            .next
        {
            Next::After(wait) => Action::requeue(wait),
            Next::Change => Action::await_change(),
        },
    )
}

/// When a resource is reconciled again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// After this long (a poll, a backoff, a quiet retry).
    After(Duration),
    /// Only when the object changes (paused, or a user error).
    Change,
}

/// How one reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub next: Next,
    /// The `result` label of `reconciles_total` (`success`, `paused`,
    /// `missing`, `conflict`, `error`, `waiting` when the cloud server's pacing
    /// deferred it), or `backoff` when a backoff skipped the
    /// reconcile or `deferred` when the rate cap queued it: those are not
    /// counted, as they did nothing.
    pub result: &'static str,
}

/// One reconcile of `mr`, the copy the caller holds, connecting to its
/// cloud through `connect`. If the rate cap, or its cloud server's pacer,
/// has no slot for it now, it ends at once and `wake` makes what starts the
/// object's next reconcile when the slot comes. The controller calls this; tests of a kind call it
/// directly, on a [`crate::cluster::memory::MemoryCluster`].
pub async fn reconcile_once<K: ManagedKind<C>, C: Connect>(
    mr: &K,
    ctx: &Context,
    connect: &C,
    wake: impl Fn() -> Wake + Send + Sync,
) -> Outcome {
    let key = mr.uid().unwrap_or_default();
    let intent = intent_of(mr);
    if let Some(wait) = ctx.backoff.remaining(&key, &intent) {
        return Outcome {
            next: Next::After(wait),
            result: "backoff",
        };
    }
    let version = mr.resource_version();
    if let Some(lag) = version.as_ref().and_then(|v| ctx.own_writes.lag(&key, v)) {
        // Our cache has not caught up with our own last write: any guarded
        // write from this copy would be refused. Make no call; the watch
        // event of the newer copy wakes the next reconcile.
        ctx.metrics
            .record_reconcile(&kind_label::<K>(), "conflict", Duration::ZERO);
        let wait = match lag {
            Lag::CaughtUp => Duration::ZERO,
            Lag::Waiting => CATCH_UP_LIMIT,
        };
        return Outcome {
            next: Next::After(wait),
            result: "conflict",
        };
    }
    let lane = lane_of(mr);
    // Held to the end of the reconcile: it counts as in flight until then.
    let admission = ctx.limiter.admit(&key, lane, &wake);
    let controller = crate::metrics::controller_name::<K>();
    let admitted = matches!(admission, Admission::Now(_));
    ctx.metrics.standard.arrived(&controller, &key, admitted);
    let Admission::Now(_in_flight) = admission else {
        return Outcome {
            next: Next::Change,
            result: "deferred",
        };
    };
    if let Some(version) = &version {
        ctx.own_writes.reconciling(&key, version);
    }
    let kind = kind_label::<K>();
    if let Some(latency) = ctx.activations.first_reconcile(&kind) {
        ctx.metrics
            .activation_latency
            .get_or_create(&crate::metrics::KindLabels { kind: kind.clone() })
            .observe(latency.as_secs_f64());
    }
    let name = mr.name_any();
    let span = info_span!(
        "reconcile",
        kind = %kind,
        namespace = mr.namespace().unwrap_or_default(),
        name = %name,
        external_name = field::Empty
    );
    if let Some(external) = mr.annotations().get(EXTERNAL_NAME_ANNOTATION) {
        span.record("external_name", external.as_str());
    }
    // Boxed, so that a reconcile the rate cap defers (thousands at once on
    // a cold start) is a small task: this part's state is most of a
    // reconcile's size (about 7 KB), and it is allocated only once admitted.
    Box::pin(
        async move {
            let timer = std::time::Instant::now();
            let mut run = Run::new(mr.clone(), ctx, connect, &wake);
            let requested = requested_token(mr).map(str::to_owned);
            let (gvk, created) = (
                crate::metrics::gvk_label::<K>(),
                mr.meta().creation_timestamp.as_ref().map(|t| t.0),
            );
            let synced_set = run.original.condition(TYPE_SYNCED).is_some();
            ctx.metrics
                .standard
                .reconcile_started(&gvk, &key, synced_set, created);
            let result = run.steps().await;
            let deleted = run.gone && result.is_ok();
            let (mut action, mut outcome) = match result {
                Ok(action) => {
                    ctx.backoff.succeeded(&key);
                    let outcome = match (run.paused, run.missing) {
                        (true, _) => "paused",
                        (_, true) => "missing",
                        _ => "success",
                    };
                    (action, outcome)
                }
                Err(error) if error.is_conflict() => {
                    // Our informer's copy was older than a write we just made;
                    // nothing failed, so no condition, no event, no backoff:
                    // look again shortly with a fresh copy.
                    tracing::debug!(error = %error, "stale copy; retrying");
                    run.status = run.original.clone();
                    (Next::After(CONFLICT_RETRY), "conflict")
                }
                Err(ReconcileError::Deferred(deferral)) => {
                    // Not a failure: the cloud server asked to wait. No
                    // event and no backoff; a resource with work to do says
                    // so in Synced, a settled resource's poll waits quietly
                    // (a status write per deferred poll would cost the API
                    // server what the cloud saved).
                    tracing::debug!(after = ?deferral.after, "cloud server busy: deferred");
                    if lane == Lane::Work {
                        run.set(Condition::waiting(deferral.message));
                    }
                    (Next::After(deferral.after), "waiting")
                }
                Err(error) => {
                    warn!(error = %error, "reconcile failed");
                    run.status
                        .set_condition(Condition::reconcile_error(error.to_string()));
                    run.event(EventType::Warning, "ReconcileError", &error.to_string())
                        .await;
                    (Next::After(ctx.backoff.failed(&key, intent)), "error")
                }
            };
            // The reconcile-requested-at token of the copy this reconcile
            // started from is handled, whatever the outcome, unless a stale
            // copy cut it short (the retry handles it).
            if let Some(token) = requested.filter(|_| !matches!(outcome, "conflict" | "waiting")) {
                info!(token = %token, "handled a requested reconcile");
                run.status.last_handled_reconcile_at = Some(token);
            }
            match run.write_status().await {
                Ok(()) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    // Someone wrote since our copy was read (another replica,
                    // the user): this status may be stale, so it is not written;
                    // look again shortly, as for any conflict.
                    tracing::debug!("status computed from a stale copy; retrying");
                    (action, outcome) = (Next::After(CONFLICT_RETRY), "conflict");
                }
                Err(error) => warn!(error = %error, "cannot write status"),
            }
            ctx.metrics
                .record_reconcile(&kind, outcome, timer.elapsed());
            let standard = &ctx.metrics.standard;
            let requeue_after = matches!(action, Next::After(_));
            standard.reconciled(&controller, outcome, requeue_after, timer.elapsed());
            if deleted {
                let deletion = mr.meta().deletion_timestamp.as_ref().map(|t| t.0);
                standard.finalizer_removed(&gvk, &key, deletion);
            } else {
                let state = crate::metrics::standard::ready_synced(Some(&run.original));
                standard.reconcile_ended(&gvk, &key, state, created);
            }
            Outcome {
                next: action,
                result: outcome,
            }
        }
        .instrument(span),
    )
    .await
}

/// The state of one reconcile of one managed resource.
struct Run<'a, K: ManagedKind<C>, C: Connect> {
    ctx: &'a Context,
    connect: &'a C,
    mr: K,
    kind: String,
    /// The status as read, to skip a write that would change nothing.
    original: Status,
    status: Status,
    paused: bool,
    /// The object is gone (its finalizer was removed): nothing to write.
    gone: bool,
    /// Its cloud resource is missing and its policies forbid a create.
    missing: bool,
    /// How long after a settled reconcile the resource is polled again:
    /// `--poll-interval`, or its `crossplane.io/poll-interval`.
    poll_interval: Duration,
    /// `mr` as JSON, made once per version of it: the rules read its spec
    /// several times a reconcile.
    json: OnceLock<Value>,
    /// Makes what starts the object's next reconcile: its cloud server's
    /// line wakes it when its turn comes.
    wake: &'a (dyn Fn() -> Wake + Send + Sync),
}

impl<'a, K: ManagedKind<C>, C: Connect> Run<'a, K, C> {
    fn new(
        mr: K,
        ctx: &'a Context,
        connect: &'a C,
        wake: &'a (dyn Fn() -> Wake + Send + Sync),
    ) -> Self {
        let json = serde_json::to_value(&mr).unwrap_or_default();
        let original: Status = json
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .unwrap_or_default();
        Self {
            ctx,
            connect,
            kind: kind_label::<K>(),
            status: original.clone(),
            original,
            mr,
            paused: false,
            gone: false,
            missing: false,
            poll_interval: ctx.settings.poll_interval,
            json: OnceLock::from(json),
            wake,
        }
    }

    /// Where the managed resource lives on the API server.
    fn key(&self) -> ObjectKey {
        ObjectKey::of::<K>(self.mr.namespace().as_deref(), &self.mr.name_any())
    }

    fn annotation(&self, key: &str) -> Option<String> {
        self.mr
            .annotations()
            .get(key)
            .cloned()
            .filter(|v| !v.is_empty())
    }

    fn generation(&self) -> i64 {
        self.mr.meta().generation.unwrap_or_default()
    }

    fn set(&mut self, condition: Condition) {
        let generation = self.generation();
        self.status
            .set_condition(condition.with_observed_generation(generation));
    }

    /// The part of the object the kind's rules work on, as JSON.
    fn spec_json(&self, field: &str) -> Value {
        self.json
            .get_or_init(|| serde_json::to_value(&self.mr).unwrap_or_default())
            .pointer(&format!("/spec/{field}"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Takes a newer version of the managed resource.
    fn replace_mr(&mut self, mr: K) {
        self.mr = mr;
        self.json = OnceLock::new();
    }

    async fn steps(&mut self) -> Result<Next, ReconcileError> {
        let spec = self.mr.resource_spec();
        let deletion_policy = spec.deletion_policy();
        let paused_annotation = self.annotation(PAUSED_ANNOTATION).as_deref() == Some("true");
        let actions = match policy::mode(
            spec.management_policies(),
            paused_annotation,
            self.ctx.settings.management_policies_enabled,
        ) {
            Mode::Paused => {
                self.paused = true;
                self.set(Condition::reconcile_paused().with_message(
                    "reconciliation is paused by the crossplane.io/paused annotation or managementPolicies: []",
                ));
                return Ok(Next::Change);
            }
            Mode::Unsupported(message) => {
                // A user error no retry can fix: report it and wait for an edit.
                self.set(Condition::reconcile_error(message));
                return Ok(Next::Change);
            }
            Mode::Active(actions) => actions,
        };

        if self.mr.meta().deletion_timestamp.is_some() {
            return self
                .delete(orphans_on_delete(actions, &deletion_policy))
                .await;
        }

        // An invalid poll interval stops the reconcile before the cloud is
        // called, until the object changes: see `crate::requests` for why.
        match requests::poll_interval(
            self.annotation(POLL_INTERVAL_ANNOTATION).as_deref(),
            self.ctx.settings.poll_interval,
            self.ctx.settings.min_poll_interval,
        ) {
            Ok(interval) => self.poll_interval = interval,
            Err(invalid) => {
                warn!(error = %invalid, "cannot use the poll interval; waiting for an edit");
                self.set(Condition::reconcile_error(invalid.to_string()));
                return Ok(Next::Change);
            }
        }

        // Whether the external name is this resource's own: named by its
        // annotation (set by the user, or recorded by a create of its own).
        // A legacy resource named by `metadata.name` records that name
        // first, as crossplane-runtime does. A namespaced one only claims
        // it by creating it (see `create`): names are unique per namespace
        // but the cloud has one namespace of names, and another
        // namespace's resource of the same name must not be taken over.
        let mut external_name = self.annotation(EXTERNAL_NAME_ANNOTATION);
        let mut claimed = external_name.is_some();
        if external_name.is_none() && K::EXTERNAL_NAME_ORIGIN == ExternalNameOrigin::MetadataName {
            let name = self.mr.name_any();
            if !<K::Scoped as Scope>::NAMESPACED {
                self.annotate(&[(EXTERNAL_NAME_ANNOTATION, Some(name.clone()))])
                    .await?;
                claimed = true;
            }
            external_name = Some(name);
        }

        let resolver = Resolver::new(
            &*self.ctx.cluster,
            self.controller_ref(),
            self.mr.namespace(),
        );
        if let Some(for_provider) = resolver
            .resolve(&self.spec_json("forProvider"), K::REFERENCES)
            .await?
        {
            self.patch_spec(
                json!({ "spec": { "forProvider": for_provider } }),
                "update spec",
                "spec",
            )
            .await?;
        }

        let mut session = self.connect().await?;
        let seen = self.observe(&session, external_name.as_deref()).await?;
        if !claimed && seen.is_some() {
            return Err(ReconcileError::ExternalNameTaken {
                kind: K::kind(&()).into_owned(),
                name: external_name.unwrap_or_default(),
            });
        }
        let observed = observed_of::<K, C>(seen.as_ref());
        if self.create_marks().settled_by(&observed) {
            // The interrupted create made the resource we just saw.
            info!("external resource of an unrecorded create found; recording it");
            self.annotate_guarded(&[(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, Some(now()))])
                .await?;
        }

        if let (Some(seen), Observed::Exists { at_provider, .. }) = (&seen, &observed) {
            self.status.at_provider = Some(at_provider.clone());
            let details = self
                .mr
                .for_provider()
                .connection_details(&session, seen)
                .await
                .map_err(ReconcileError::ConnectionDetails)?;
            session.publish(details).await?;
        }

        let non_cloud = non_cloud_fields::<K, C>();
        let desired = without_keys(&self.spec_json("forProvider"), &non_cloud);
        let write_only = match &observed {
            Observed::Exists {
                deleting: false, ..
            } => self
                .mr
                .for_provider()
                .write_only_drift(&session)
                .await
                .map_err(ReconcileError::Observe)?,
            _ => Map::new(),
        };
        // Create-only fields are never sent in an update; status.drift
        // reports them instead.
        let updatable = without_keys(
            &desired,
            <K::ForProvider as CloudKind<C>>::CREATE_ONLY_FIELDS,
        );
        let init = without_keys(&self.spec_json("initProvider"), &non_cloud);
        let drift = |observed| drift::Inputs {
            actions,
            desired: &desired,
            init: &init,
            observed,
            write_only: &write_only,
            create_only: <K::ForProvider as CloudKind<C>>::CREATE_ONLY_FIELDS,
            sensitive: <K::ForProvider as CloudKind<C>>::SENSITIVE_FIELDS,
        };
        let step = live_step(actions, &updatable, write_only.clone(), &observed);
        if step != Step::Create {
            // A create adds it in its create-pending write: one write less.
            self.ensure_finalizer().await?;
        }
        match step {
            Step::ReportMissing => {
                self.report_drift(drift(None)).await;
                self.report_missing().await;
                Ok(self.requeue_for(Readiness::Available))
            }
            Step::Create => {
                // Being created: no difference to show until it is observed.
                self.status.drift = None;
                self.status
                    .conditions
                    .retain(|c| c.type_ != TYPE_UP_TO_DATE);
                self.create(&mut session, external_name.as_deref(), actions)
                    .await
            }
            step => {
                let (
                    Some(seen),
                    Observed::Exists {
                        at_provider,
                        deleting,
                    },
                ) = (&seen, &observed)
                else {
                    unreachable!("update and up-to-date steps need an observation")
                };
                if actions.late_initialize {
                    self.late_initialize(at_provider).await?;
                }
                if !deleting {
                    self.report_drift(drift(Some(at_provider))).await;
                }
                let readiness = K::ForProvider::readiness(seen);
                let updated = matches!(step, Step::Update(_));
                if let Step::Update(patch) = step {
                    let name = external_name.as_deref().unwrap_or_default();
                    info!(fields = ?patch.keys().collect::<Vec<_>>(), "updating external resource");
                    let result = self
                        .ctx
                        .call(&self.kind, "update", &session.pacing, || {
                            self.mr.for_provider().update(&session, name, patch.clone())
                        })
                        .await
                        .map_err(ReconcileError::Deferred)?;
                    self.change_log(OperationType::Update, Some(name), &result);
                    let accepted = result.map_err(ReconcileError::Update)?;
                    session.record(accepted).await?;
                    self.event(
                        EventType::Normal,
                        "UpdatedExternalResource",
                        "Successfully requested update of external resource",
                    )
                    .await;
                }
                self.set(Condition::reconcile_success());
                self.set_readiness(readiness);
                let uid = self.mr.uid().unwrap_or_default();
                self.ctx.metrics.standard.observed(
                    &crate::metrics::gvk_label::<K>(),
                    &uid,
                    updated,
                );
                if updated {
                    // The cloud is applying the change (UPDATING, modifying):
                    // look again soon rather than a whole poll later.
                    return Ok(Next::After(self.ctx.settings.pending_poll_interval));
                }
                Ok(self.requeue_for(readiness))
            }
        }
    }

    /// The deletion branch: orphan, or delete and wait until gone, then drop
    /// the finalizer.
    async fn delete(&mut self, orphan: bool) -> Result<Next, ReconcileError> {
        self.set(Condition::deleting());
        let external_name = self.annotation(EXTERNAL_NAME_ANNOTATION);
        let (session, observed) = match (orphan, &external_name) {
            (true, _) | (false, None) => (None, Observed::Missing),
            (false, Some(name)) => {
                let session = self.connect().await?;
                let seen = self.observe(&session, Some(name)).await?;
                (Some(session), observed_of::<K, C>(seen.as_ref()))
            }
        };
        match (delete_step(orphan, &observed), session) {
            (DeleteStep::Orphan | DeleteStep::Finished, _) => {
                info!(orphan, "external resource released; removing finalizer");
                self.remove_finalizer().await?;
                Ok(Next::Change)
            }
            (DeleteStep::AwaitGone, _) => Ok(Next::After(self.ctx.settings.pending_poll_interval)),
            (DeleteStep::Delete, Some(session)) => {
                let name = external_name.unwrap_or_default();
                info!("deleting external resource");
                let result = self
                    .ctx
                    .call(&self.kind, "delete", &session.pacing, || {
                        self.mr.for_provider().delete(&session, &name)
                    })
                    .await
                    .map_err(ReconcileError::Deferred)?;
                self.change_log(OperationType::Delete, Some(&name), &result);
                result.map_err(ReconcileError::Delete)?;
                self.event(
                    EventType::Normal,
                    "DeletedExternalResource",
                    "Successfully requested deletion of external resource",
                )
                .await;
                self.set(Condition::reconcile_success());
                Ok(Next::After(self.ctx.settings.pending_poll_interval))
            }
            (DeleteStep::Delete, None) => {
                unreachable!("a delete step follows an observation, which connected")
            }
        }
    }

    async fn create(
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
        let key = idempotency_key(
            &self.mr.uid().unwrap_or_default(),
            self.create_marks().succeeded,
        );
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
            .call(&self.kind, "create", &session.pacing, || {
                self.mr
                    .for_provider()
                    .create(session, external_name, desired.clone(), &key)
            })
            .await
            // Not sent: the create-pending mark stays, and the next
            // reconcile repeats the create under the same idempotency key.
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
    async fn record_created(
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
                .map_err(|source| ReconcileError::Kube { action, source })?;
            let Some(found) = found else {
                return Err(ReconcileError::CreateSuperseded {
                    created: name.to_owned(),
                    recorded: "nothing: the managed resource is gone".to_owned(),
                });
            };
            self.replace_mr(found);
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
    fn change_log<T>(
        &self,
        operation: OperationType,
        external_name: Option<&str>,
        result: &Result<T, ExternalError>,
    ) {
        if let Some(logger) = &self.ctx.changelog {
            let snapshot = self
                .json
                .get_or_init(|| serde_json::to_value(&self.mr).unwrap_or_default());
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
    async fn record_created_details(
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
    async fn observed_created(
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
        let step = live_step(actions, &updatable, write_only, &observed);
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

    /// `forProvider` with its unset fields filled from the observation, or
    /// `None` when there is nothing to fill. The candidate goes through the
    /// kind's own type, which drops what is not a `forProvider` field (ids,
    /// states, timestamps).
    fn late_initialized(&self, at_provider: &Value) -> Option<Value> {
        let current = self.spec_json("forProvider");
        let candidate = late_initialize(&current, at_provider);
        if candidate == current {
            // Nothing to fill: the steady state, spared the typed round trip.
            return None;
        }
        let mut object = serde_json::to_value(&self.mr).unwrap_or_default();
        object["spec"]["forProvider"] = candidate;
        let Ok(typed) = serde_json::from_value::<K>(object) else {
            warn!("late-initialised forProvider does not fit the kind's type; skipping");
            return None;
        };
        let filtered = serde_json::to_value(&typed)
            .ok()
            .and_then(|v| v.pointer("/spec/forProvider").cloned())
            .unwrap_or(Value::Null);
        (filtered != current).then_some(filtered)
    }

    /// Fills unset `forProvider` fields from the observation
    /// ([`Self::late_initialized`]), in a write guarded by the
    /// resourceVersion.
    async fn late_initialize(&mut self, at_provider: &Value) -> Result<(), ReconcileError> {
        if let Some(filled) = self.late_initialized(at_provider) {
            info!("late-initialising forProvider");
            self.patch_spec(
                json!({ "spec": { "forProvider": filled } }),
                "update spec",
                "spec",
            )
            .await?;
        }
        Ok(())
    }

    /// Writes `status.drift` and `UpToDate` for this observation, with an
    /// event where drift started or ended (not on every poll: only when the
    /// set of drifted fields changes) and the correction time of each field
    /// an update corrected.
    async fn report_drift(&mut self, inputs: drift::Inputs<'_>) {
        let now = jiff::Timestamp::now();
        let previous = self.status.drift.take();
        let report = drift::status(drift::differences(&inputs), previous.as_ref(), &Time(now));
        let changes = drift::changes(previous.as_ref(), &report);
        for ended in changes.ended.iter().filter(|e| e.corrected) {
            let took = now.duration_since(ended.since.0).as_secs_f64().max(0.0);
            self.ctx
                .metrics
                .drift_correction
                .get_or_create(&crate::metrics::KindLabels {
                    kind: self.kind.clone(),
                })
                .observe(took);
        }
        for (reason, message) in [changes.detected_event(), changes.cleared_event()]
            .into_iter()
            .flatten()
        {
            info!(reason, message = %message, "drift changed");
            self.event(EventType::Normal, reason, &message).await;
        }
        self.set(drift::condition(&report));
        self.status.drift = Some(report);
    }

    async fn connect(&self) -> Result<Session<'a, C::Client>, ReconcileError> {
        let connection = self
            .mr
            .resource_spec()
            .connection_secret(self.mr.namespace().as_deref())
            .map(|target| ConnectionSecret {
                target,
                owner: self.owner_ref(),
            });
        let connected = self
            .ctx
            .connector
            .connect(&self.mr, &self.kind, self.connect)
            .await?;
        // Before the connection Secret is read: a reconcile its server
        // cannot take now makes no request at all.
        let key = self.mr.uid().unwrap_or_default();
        let ticket = connected
            .pacer
            .admit(&key, self.wake)
            .map_err(ReconcileError::Deferred)?;
        Ok(Session::open(
            connected.client,
            Pacing::new(connected.pacer, ticket, GiveWay::new(key, self.wake)),
            &*self.ctx.cluster,
            self.mr.namespace(),
            connection,
            self.ctx.metrics.kube_write_counter(&self.kind, "secret"),
        )
        .await?)
    }

    async fn observe(
        &self,
        session: &Session<'_, C::Client>,
        external_name: Option<&str>,
    ) -> Result<Option<Observation<K, C>>, ReconcileError> {
        let Some(name) = external_name else {
            return Ok(None);
        };
        self.ctx
            .call(&self.kind, "observe", &session.pacing, || {
                self.mr.for_provider().observe(session, name)
            })
            .await
            .map_err(ReconcileError::Deferred)?
            .map_err(ReconcileError::Observe)
    }

    fn set_readiness(&mut self, readiness: Readiness) {
        let was_ready = self
            .original
            .condition(TYPE_READY)
            .is_some_and(Condition::is_true);
        let condition = match readiness {
            Readiness::Available => Condition::available(),
            Readiness::Creating => Condition::creating(),
            Readiness::Deleting => Condition::deleting(),
            Readiness::Unavailable => Condition::unavailable(),
        };
        if readiness == Readiness::Available
            && !was_ready
            && let Some(created) = &self.mr.meta().creation_timestamp
        {
            let age = jiff::Timestamp::now().duration_since(created.0);
            self.ctx
                .metrics
                .record_time_to_ready(&self.kind, age.as_secs_f64());
        }
        self.set(condition);
    }

    fn requeue_for(&self, readiness: Readiness) -> Next {
        match readiness {
            Readiness::Available => Next::After(self.next_poll()),
            _ => Next::After(self.ctx.settings.pending_poll_interval),
        }
    }

    /// A cloud resource that is missing while the policies forbid creating
    /// it: `Synced=False` with what to check, looked at again on the poll
    /// interval. For an observer that is an expected state, not a failure
    /// (crossplane-runtime v2.4 stopped taking the error backoff for it), so
    /// it is no error in the metrics, and its Warning event is emitted once
    /// when it becomes missing, not on every poll while it stays so.
    async fn report_missing(&mut self) {
        self.missing = true;
        let message = ReconcileError::ExternalMissing.to_string();
        let reported = self
            .original
            .condition(TYPE_SYNCED)
            .is_some_and(|c| !c.is_true() && c.message.as_deref() == Some(message.as_str()));
        self.set(Condition::reconcile_error(message.clone()));
        if !reported {
            warn!("external resource missing; policies forbid creating it");
            self.event(EventType::Warning, "ReconcileError", &message)
                .await;
        }
    }

    /// Crossplane's identifying tags of this resource ([`tags`]).
    fn external_tags(&self) -> Vec<(&'static str, String)> {
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

    /// The poll interval of this resource, jittered.
    fn next_poll(&self) -> Duration {
        let settings = &self.ctx.settings;
        requests::jittered(
            self.poll_interval,
            settings.poll_jitter,
            settings.min_poll_interval,
            rand::random(),
        )
    }

    fn create_marks(&self) -> CreateMarks {
        let stamp = |key| {
            self.annotation(key)
                .and_then(|v| v.parse::<jiff::Timestamp>().ok())
        };
        CreateMarks {
            pending: stamp(EXTERNAL_CREATE_PENDING_ANNOTATION),
            succeeded: stamp(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION),
            failed: stamp(EXTERNAL_CREATE_FAILED_ANNOTATION),
        }
    }

    fn owner_ref(&self) -> OwnerReference {
        self.mr
            .controller_owner_ref(&())
            .expect("a managed resource read from the API server has a name and uid")
    }

    fn controller_ref(&self) -> Option<OwnerReference> {
        self.mr
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
            .cloned()
    }

    /// Sets or removes annotations with a merge patch, without a
    /// resourceVersion precondition: for writes that are right whatever
    /// changed since (the external name a kind takes from `metadata.name`,
    /// `external-create-failed`). A merge patch touches only these keys.
    async fn annotate(
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
    async fn annotate_guarded(
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
    async fn patch_spec(
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
    async fn merge_patch(
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
            .map_err(|source| ReconcileError::Kube { action, source })?;
        self.replace_mr(patched);
        self.ctx.metrics.kube_write(&self.kind, target);
        self.remember_write(self.mr.resource_version().as_deref());
        Ok(())
    }

    /// Remembers a version this reconcile wrote, so its echo through the
    /// watch is not reconciled again (see [`crate::echo`]).
    fn remember_write(&self, resource_version: Option<&str>) {
        if let (Some(uid), Some(version)) = (self.mr.uid(), resource_version) {
            self.ctx.own_writes.handled(&uid, version);
        }
    }

    /// The object's finalizers with the managed-resource finalizer added;
    /// `None` when it is there already. A merge patch replaces the whole
    /// list, so the others are kept in it.
    fn finalizers_with_ours(&self) -> Option<Vec<String>> {
        let finalizers = self.mr.finalizers();
        if finalizers.iter().any(|f| f == MANAGED_RESOURCE_FINALIZER) {
            return None;
        }
        let mut with_ours = finalizers.to_vec();
        with_ours.push(MANAGED_RESOURCE_FINALIZER.to_owned());
        Some(with_ours)
    }

    async fn ensure_finalizer(&mut self) -> Result<(), ReconcileError> {
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

    async fn remove_finalizer(&mut self) -> Result<(), ReconcileError> {
        self.gone = true;
        if !self
            .mr
            .finalizers()
            .iter()
            .any(|f| f == MANAGED_RESOURCE_FINALIZER)
        {
            return Ok(());
        }
        let finalizers: Vec<String> = self
            .mr
            .finalizers()
            .iter()
            .filter(|f| *f != MANAGED_RESOURCE_FINALIZER)
            .cloned()
            .collect();
        self.patch_spec(
            json!({ "metadata": { "finalizers": finalizers } }),
            "update finalizers",
            "metadata",
        )
        .await?;
        // Nothing of ours is left to echo.
        if let Some(uid) = self.mr.uid() {
            self.ctx.own_writes.forget(&uid);
        }
        Ok(())
    }

    /// Applies the status through the status subresource when it changed,
    /// guarded by the resourceVersion this reconcile last saw: a status
    /// computed from a stale copy (two replicas, a lagging cache) must not
    /// overwrite a newer one, or replicas undo each other's conditions and
    /// every undo wakes them all again.
    async fn write_status(&mut self) -> Result<(), kube::Error> {
        if self.gone || self.status == self.original {
            return Ok(());
        }
        let body = json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "metadata": { "resourceVersion": self.mr.resource_version() },
            "status": self.status,
        });
        let written = self.ctx.cluster.apply(&self.key(), body, true).await?;
        self.remember_write(
            written
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
        );
        self.ctx.metrics.kube_write(&self.kind, "status");
        self.original = self.status.clone();
        Ok(())
    }

    async fn event(&self, type_: EventType, reason: &str, message: &str) {
        if self.gone {
            return;
        }
        let regarding = self.mr.object_ref(&());
        match self
            .ctx
            .recorder
            .publish(regarding, type_, reason, message)
            .await
        {
            Ok(()) => self.ctx.metrics.kube_write(&self.kind, "event"),
            Err(error) => warn!(error = %error, "cannot publish event"),
        }
    }
}

/// A merge patch setting (or, for `None`, removing) annotations.
fn annotations_patch(annotations: &[(&str, Option<String>)]) -> Value {
    let map: Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    json!({ "metadata": { "annotations": map } })
}

/// The kind's typed observation as the plain data the decisions in
/// [`crate::plan`] work on: `status.atProvider` JSON and whether the cloud
/// is deleting it.
fn observed_of<K: ManagedKind<C>, C: Connect>(seen: Option<&Observation<K, C>>) -> Observed {
    match seen {
        None => Observed::Missing,
        Some(seen) => Observed::Exists {
            deleting: K::ForProvider::readiness(seen) == Readiness::Deleting,
            at_provider: serde_json::to_value(seen).expect("the cloud's models serialize"),
        },
    }
}

/// The parts of a resource that, when the user changes them, end a backoff.
fn intent_of<K: Managed>(mr: &K) -> Intent {
    let annotation = |key| mr.annotations().get(key).cloned();
    Intent {
        generation: mr.meta().generation,
        paused: annotation(PAUSED_ANNOTATION),
        external_name: annotation(EXTERNAL_NAME_ANNOTATION),
        deleting: mr.meta().deletion_timestamp.is_some(),
        reconcile_requested_at: annotation(RECONCILE_REQUESTED_AT_ANNOTATION),
    }
}

/// The limiter lane of a reconcile of `mr`: the routine look at a settled
/// resource (Ready and Synced at its current generation, not being
/// deleted, no reconcile-requested-at token pending) is a poll; anything
/// else is work. Read from the object, since the controller does not say
/// why it reconciles.
pub(crate) fn lane_of<K: Managed>(mr: &K) -> Lane {
    let conditions = mr
        .managed_status()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    lane_for(
        mr.meta().generation,
        mr.meta().deletion_timestamp.is_some() || requested_token(mr).is_some(),
        conditions,
    )
}

/// The `crossplane.io/reconcile-requested-at` token of this copy of `mr`,
/// if no reconcile has handled it yet: it puts the reconcile in the work
/// lane, and the reconcile records it as handled.
fn requested_token<K: Managed>(mr: &K) -> Option<&str> {
    pending_request(
        mr.annotations()
            .get(RECONCILE_REQUESTED_AT_ANNOTATION)
            .map(String::as_str),
        mr.managed_status()
            .and_then(|s| s.last_handled_reconcile_at.as_deref()),
    )
}

/// The lane of a resource at `generation` with these `conditions`: only a
/// settled one (nothing `due`: not deleting nor asked to reconcile now;
/// `Ready` and `Synced` true for this generation) waits in the poll lane.
fn lane_for(generation: Option<i64>, due: bool, conditions: &[Condition]) -> Lane {
    let holds = |type_: &str| {
        conditions.iter().any(|c| {
            c.type_ == type_
                && c.status == ConditionStatus::True
                && c.observed_generation == generation
        })
    };
    if !due && holds(TYPE_READY) && holds(TYPE_SYNCED) {
        Lane::Poll
    } else {
        Lane::Work
    }
}

/// Attempts at recording a create's result before leaving it to the next
/// reconcile (client-go's `retry.DefaultRetry` makes five too).
const RECORD_ATTEMPTS: u32 = 5;

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions(ready: &str, synced: &str, observed: i64) -> Vec<Condition> {
        let condition = |type_: &str, status: &str| {
            serde_json::from_value(json!({
                "type": type_, "status": status, "reason": "R",
                "lastTransitionTime": "2026-11-23T00:00:00Z", "observedGeneration": observed,
            }))
            .expect("a valid condition")
        };
        vec![condition("Ready", ready), condition("Synced", synced)]
    }

    #[test]
    fn only_a_settled_resource_waits_in_the_poll_lane() {
        let lane = |generation, due, conditions: Vec<Condition>| {
            lane_for(Some(generation), due, &conditions)
        };
        assert_eq!(lane(2, false, conditions("True", "True", 2)), Lane::Poll);
        assert_eq!(
            lane(3, false, conditions("True", "True", 2)),
            Lane::Work,
            "an edit not yet observed"
        );
        assert_eq!(
            lane(2, false, conditions("False", "True", 2)),
            Lane::Work,
            "not Ready"
        );
        assert_eq!(
            lane(2, false, conditions("True", "False", 2)),
            Lane::Work,
            "failing"
        );
        assert_eq!(
            lane(2, true, conditions("True", "True", 2)),
            Lane::Work,
            "deleting, or a reconcile-requested-at token not yet handled"
        );
        assert_eq!(lane(1, false, Vec::new()), Lane::Work, "new");
    }
}
