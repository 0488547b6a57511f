//! The API server's `/readyz` probe.
//!
//! On its own, below the control planes that poll it while they start
//! (`local`, `containers`) and below `cluster`, which starts them, so that
//! no control plane needs `cluster`.

/// One probe of the API server's `/readyz`: `Ok` once it answers `ok`,
/// else what it answered (or the error), for the not-ready message.
pub(crate) async fn probe(client: &kube::Client) -> Result<(), String> {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("a static request is valid");
    match client.request_text(request).await {
        Ok(body) if body.trim() == "ok" => Ok(()),
        Ok(body) => Err(body),
        Err(e) => Err(e.to_string()),
    }
}
