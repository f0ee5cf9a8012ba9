//! A job's `tls_config` as a rustls client configuration: the trusted roots (the public
//! ones and `ca_file`), a client certificate (`cert_file`, `key_file`), the name a
//! server's certificate is checked against (`server_name`, else the target's host) or
//! no check at all (`insecure_skip_verify`), as Prometheus' HTTP client does.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::Path;
use std::sync::Arc;
use tickertape_scrape::config::TlsConfig;
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::{DigitallySignedStruct, SignatureScheme};

/// The client configuration of `tls`; errors name the file or setting at fault.
pub(crate) fn client_config(tls: &TlsConfig) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        Arc::new(AcceptAnyCertificate(Arc::clone(&provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &tls.ca_file {
            for certificate in certificates(path, "ca_file")? {
                roots
                    .add(certificate)
                    .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            }
        }
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|e| format!("ca_file: {e}"))?;
        match &tls.server_name {
            None => webpki,
            Some(name) => Arc::new(CheckedAs {
                inner: webpki,
                name: ServerName::try_from(name.clone())
                    .map_err(|e| format!("server_name {name:?}: {e}"))?,
            }),
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert, "cert_file")?;
            let key_der = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("key_file {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| format!("cert_file and key_file: {e}"))?
        }
        _ => builder.with_no_client_auth(),
    };
    // The scrape client speaks HTTP/1.1 only (reqwest is built without `http2`).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn certificates(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{key} {}: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{key} {}: no CERTIFICATE section", path.display()));
    }
    Ok(certificates)
}

/// Checks a server's certificate against `name` whatever host was dialled
/// (`server_name`).
#[derive(Debug)]
struct CheckedAs {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for CheckedAs {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _dialled: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `insecure_skip_verify`: any certificate is taken; the handshake's signatures are still
/// checked (they prove the server holds the certificate's key, whatever it is).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
