//! A certificate authority of the tests' own and a `localhost` certificate it issued, for the
//! local HTTPS servers that stand in for outside services.

use std::future::Future;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// Accepts connections on `listener` until the task is aborted, and serves each over HTTP/1
/// with `handler`, over TLS with `acceptor` when given.
pub fn serve<H, Fut, E>(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    handler: H,
) -> tokio::task::JoinHandle<()>
where
    H: Fn(hyper::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<hyper::Response<Full<Bytes>>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            // Small answers go out at once, not after a delayed acknowledgement.
            let _ = stream.set_nodelay(true);
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                let http = hyper::server::conn::http1::Builder::new();
                let service = service_fn(handler);
                match acceptor {
                    None => {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                    Some(acceptor) => {
                        if let Ok(tls) = acceptor.accept(stream).await {
                            let _ = http.serve_connection(TokioIo::new(tls), service).await;
                        }
                    }
                }
            });
        }
    })
}

/// A certificate authority and a `localhost` certificate it issued.
pub fn tls() -> (TlsAcceptor, String) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Courier test receivers");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .unwrap();
    (TlsAcceptor::from(Arc::new(config)), ca.pem())
}

/// The service's environment for a live payment adapter (`adapter`, configured by `config`)
/// talking to a local stand-in of its provider whose certificate `ca` issued: the stand-in's
/// private address allowed, its authority trusted.
pub fn live_adapter_env(
    adapter: &std::path::Path,
    config: &std::path::Path,
    ca: &std::path::Path,
) -> Vec<(String, String)> {
    vec![
        (
            "COURIER_LIVE_PAYMENT_ADAPTER".into(),
            adapter.to_string_lossy().into_owned(),
        ),
        (
            "COURIER_LIVE_PAYMENT_CONFIG".into(),
            config.to_string_lossy().into_owned(),
        ),
        ("COURIER_PAYMENT_ALLOW_PRIVATE".into(), "true".into()),
        (
            "COURIER_PAYMENT_EXTRA_CA".into(),
            ca.to_string_lossy().into_owned(),
        ),
    ]
}
