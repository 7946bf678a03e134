//! Pinning a `wss://` gateway's certificate by its SHA-256 fingerprint, as OpenClaw does
//! (`--tls-fingerprint`, `gateway.remote.tlsFingerprint`, the pin inside a setup code).
//!
//! A gateway that serves TLS itself usually has a self-signed certificate no CA vouches for; the
//! pin is what makes it trustworthy instead. So with a pin the chain is not checked against CA
//! roots (upstream sets `rejectUnauthorized: false`), and the connection goes on only when the
//! SHA-256 of the leaf certificate (DER) equals the pin. The handshake signature is still
//! verified, so the server proves it holds the pinned certificate's private key. Without a pin,
//! `wss://` uses the system roots as before.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

/// How a refused pin reads in the connect error (the TLS stack carries our text).
pub const PIN_MISMATCH: &str = "gateway TLS fingerprint mismatch";

/// A certificate's SHA-256 fingerprint: 64 lowercase hex digits.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsFingerprint(String);

impl TlsFingerprint {
    /// Accepts upstream's spellings: 64 hex digits, or 32 colon-separated pairs, either with an
    /// optional `sha256:` prefix, in any case.
    pub fn parse(text: &str) -> Result<TlsFingerprint, String> {
        let trimmed = text.trim();
        let bare = match trimmed.get(..7) {
            Some(prefix) if prefix.eq_ignore_ascii_case("sha256:") => &trimmed[7..],
            _ => trimmed,
        };
        let plain = bare.len() == 64 && bare.bytes().all(|b| b.is_ascii_hexdigit());
        let colons = bare.len() == 95
            && bare.split(':').count() == 32
            && bare.split(':').all(|pair| pair.len() == 2 && pair.bytes().all(|b| b.is_ascii_hexdigit()));
        match plain || colons {
            true => Ok(TlsFingerprint(bare.replace(':', "").to_ascii_lowercase())),
            false => Err(format!(
                "`{trimmed}` is not a SHA-256 certificate fingerprint (64 hex digits, colons allowed, e.g. from \
                 `openssl x509 -noout -fingerprint -sha256 -in cert.pem`)"
            )),
        }
    }

    /// The fingerprint of a DER certificate.
    pub fn of(der: &[u8]) -> TlsFingerprint {
        TlsFingerprint(Sha256::digest(der).iter().map(|b| format!("{b:02x}")).collect())
    }

    pub fn as_hex(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for TlsFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TlsFingerprint({})", self.0)
    }
}

impl fmt::Display for TlsFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A rustls client configuration that trusts exactly the certificate `pin` names.
pub(crate) fn pinned_client_config(pin: &TlsFingerprint) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = PinVerifier { pin: pin.clone(), algorithms: provider.signature_verification_algorithms };
    let config = ClientConfig::builder_with_provider(provider as Arc<CryptoProvider>)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[derive(Debug)]
struct PinVerifier {
    pin: TlsFingerprint,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = TlsFingerprint::of(end_entity.as_ref());
        match seen == self.pin {
            true => Ok(ServerCertVerified::assertion()),
            false => Err(rustls::Error::General(format!(
                "{PIN_MISMATCH}: the certificate is {seen}, the pin is {}",
                self.pin
            ))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "a049fb47c2bd0e0c5d1a4e6f7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708";

    #[test]
    fn upstream_spellings_are_accepted_and_normalised() {
        let colons: String =
            HEX.as_bytes().chunks(2).map(|pair| std::str::from_utf8(pair).unwrap()).collect::<Vec<_>>().join(":");
        for text in [HEX.to_string(), HEX.to_uppercase(), format!("sha256:{HEX}"), format!("SHA256:{colons}"), colons] {
            assert_eq!(TlsFingerprint::parse(&text).unwrap().as_hex(), HEX, "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_how_to_get_one() {
        for text in ["", "abc", &HEX[..63], &format!("{HEX}00"), &HEX.replace('a', "g"), "sha1:abcd"] {
            let error = TlsFingerprint::parse(text).unwrap_err();
            assert!(error.contains("SHA-256") && error.contains("openssl x509"), "{error}");
        }
    }

    #[test]
    fn a_certificates_fingerprint_is_the_sha256_of_its_der() {
        // sha256("abc")
        assert_eq!(
            TlsFingerprint::of(b"abc").as_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
