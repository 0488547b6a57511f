//! The PKI of one control plane: a CA, the API server's serving
//! certificate for the loopback address (and any other names it is reached
//! by, such as its compose service name), and the service-account signing
//! key.
//!
//! Generated in-process with `rcgen` rather than left to kube-apiserver's
//! `--cert-dir` self-signing, so the CA is known before the server starts
//! (the kubeconfig can be written up front) and no `openssl` binary is needed.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::error::ClusterError;

/// Files written by [`write_pki`], all inside one folder.
#[derive(Debug, Clone)]
pub(crate) struct PkiFiles {
    pub ca_pem: String,
    /// `ca_pem`, written out (kube-controller-manager's `--root-ca-file`).
    pub ca_cert: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    /// PKCS#8 ECDSA private key that signs service-account tokens.
    pub service_account_key: PathBuf,
    /// Its public key (PKIX): kube-apiserver 1.20 verifies tokens with it and
    /// does not derive it from a PKCS#8 private key.
    pub service_account_public_key: PathBuf,
}

/// Generates the PKI and writes it under `dir`. The serving certificate is
/// valid for the loopback names and for `extra_hosts`.
pub(crate) fn write_pki(dir: &Path, extra_hosts: &[&str]) -> Result<PkiFiles, ClusterError> {
    let pki = |what| move |error| ClusterError::Pki { what, error };

    let ca_key = KeyPair::generate().map_err(pki("the CA key"))?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(pki("the CA"))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "e2e test cluster CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(pki("the CA"))?;
    let issuer = Issuer::new(ca_params, ca_key);

    let serving_key = KeyPair::generate().map_err(pki("the serving key"))?;
    let mut hosts = vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        "kubernetes.default.svc".to_owned(),
    ];
    hosts.extend(extra_hosts.iter().map(|h| (*h).to_owned()));
    let mut serving_params =
        CertificateParams::new(hosts).map_err(pki("the serving certificate"))?;
    serving_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving_params
        .signed_by(&serving_key, &issuer)
        .map_err(pki("the serving certificate"))?;

    let sa_key = KeyPair::generate().map_err(pki("the service-account key"))?;

    let files = PkiFiles {
        ca_pem: ca_cert.pem(),
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
    };
    write_private(&files.ca_cert, &files.ca_pem)?;
    write_private(&files.serving_cert, &serving_cert.pem())?;
    write_private(&files.serving_key, &serving_key.serialize_pem())?;
    write_private(&files.service_account_key, &sa_key.serialize_pem())?;
    write_private(&files.service_account_public_key, &sa_key.public_key_pem())?;
    Ok(files)
}

/// Writes a file readable by the owner only: keys and tokens live here.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), ClusterError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .map_err(|e| ClusterError::io(format!("writing {}", path.display()), e))
}
