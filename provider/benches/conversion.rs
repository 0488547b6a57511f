//! How long the conversion webhook takes to answer a ConversionReview of
//! 100 objects (the target: under 10 ms at p99), and its floor:
//! the same review read and its objects written back unconverted, which
//! is the least any webhook answering in JSON does. Run with
//! `scripts/bench-conversion` (a release build).

use std::time::{Duration, Instant};

use apis::kinds::CONVERSIONS;
use kube::core::conversion::ConversionReview;
use runtime::conversion::Conversions;
use runtime::metrics::Metrics;
use serde_json::{Value, json};

const OBJECTS: usize = 100;
const ROUNDS: usize = 2_000;

/// A review of `OBJECTS` v1alpha1 objects, a quarter of each kind, with
/// every section set, to convert to v1beta1.
fn review() -> Vec<u8> {
    let objects: Vec<Value> = (0..OBJECTS)
        .map(|i| {
            let versions = CONVERSIONS[i % CONVERSIONS.len()];
            json!({
                "apiVersion": format!("{}/v1alpha1", versions.group),
                "kind": versions.kind,
                "metadata": {
                    "name": format!("object-{i}"), "namespace": "team-a",
                    "uid": format!("00000000-0000-0000-0000-{i:012}"),
                    "resourceVersion": "12345", "generation": 3,
                    "labels": {"team": "a", "tier": "prod"},
                    "annotations": {"crossplane.io/external-name": format!("vpc-{i:017x}")},
                    "finalizers": ["finalizer.managedresource.crossplane.io"],
                },
                "spec": {
                    "forProvider": {
                        "region": "eu-west-1", "cidrBlock": "10.0.0.0/16",
                        "enableDnsSupport": true, "enableDnsHostnames": false,
                        "instanceTenancy": "default", "masterUsername": "admin",
                        "masterPasswordSecretRef": {"name": "db", "key": "password"},
                        "tags": {"env": "prod", "owner": "team-a", "cost-center": "42"},
                    },
                    "initProvider": {"enableDnsHostnames": true, "tags": {"created-by": "bench"}},
                    "managementPolicies": ["*"],
                    "providerConfigRef": {"kind": "ProviderConfig", "name": "default"},
                    "writeConnectionSecretToRef": {"name": format!("conn-{i}")},
                },
                "status": {
                    "atProvider": {
                        "id": format!("vpc-{i:017x}"), "state": "available",
                        "enableDnsSupport": true, "instanceTenancy": "default",
                        "createdAt": "2026-11-27T12:00:00Z",
                        "tags": {"env": "prod", "crossplane-kind": "vpc.network.fakecloud.m.crossplane.io"},
                    },
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-27T12:00:00Z"},
                        {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-11-27T12:00:00Z"},
                    ],
                },
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "bench", "desiredAPIVersion": "any.group/v1beta1", "objects": objects},
    }))
    .unwrap()
}

/// p50 and p99 of `ROUNDS` runs of `answer`, after a warm-up.
fn measure(mut answer: impl FnMut() -> Vec<u8>) -> (Duration, Duration, usize) {
    let mut size = 0;
    for _ in 0..100 {
        size = answer().len();
    }
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(answer());
            started.elapsed()
        })
        .collect();
    times.sort();
    (times[ROUNDS / 2], times[ROUNDS * 99 / 100], size)
}

fn main() {
    let body = review();
    let conversions = Conversions::new(CONVERSIONS, &Metrics::new());
    let (p50, p99, size) = measure(|| serde_json::to_vec(&conversions.answer(&body)).unwrap());
    // The floor: read the review and answer with its objects as they are.
    let (floor50, floor99, _) = measure(|| {
        let mut review: ConversionReview = serde_json::from_slice(&body).unwrap();
        let request = review.request.take().unwrap();
        serde_json::to_vec(&request.objects).unwrap()
    });
    println!(
        "review of {OBJECTS} objects ({} KiB in, {} KiB out), {ROUNDS} rounds",
        body.len() / 1024,
        size / 1024
    );
    println!("answer: p50 {p50:?}, p99 {p99:?} (target p99 < 10 ms)");
    println!("floor (read and write back, no conversion): p50 {floor50:?}, p99 {floor99:?}");
    println!(
        "answer / floor at p50: {:.2}x",
        p50.as_secs_f64() / floor50.as_secs_f64()
    );
    assert!(
        conversions
            .answer(&body)
            .response
            .unwrap()
            .result
            .is_success(),
        "the benchmark's review must convert"
    );
}
