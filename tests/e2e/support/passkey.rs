//! A software authenticator, standing in for a phone's or a security key's, as the WebAuthn
//! Level 2 recommendation describes one: a P-256 key pair (`ES256`), authenticator data
//! (section 6.1), a `none` attestation (8.7) in CBOR, and assertions signed over the
//! authenticator data and the SHA-256 of the client data (6.3.3). It answers the options the
//! service gives as a browser's `navigator.credentials` would, as WebAuthn's JSON.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ciborium::Value as Cbor;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// User present, user verified, attested credential data included.
const FLAGS_CREATED: u8 = 0x01 | 0x04 | 0x40;
/// User present, user verified.
const FLAGS_ASSERTED: u8 = 0x01 | 0x04;

pub struct SoftPasskey {
    key: SigningKey,
    credential_id: Vec<u8>,
    counter: u32,
    /// Where the browser says it is (the client data's `origin`).
    origin: String,
    rp_id: String,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn cbor(value: &Cbor) -> Vec<u8> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes).unwrap();
    bytes
}

fn int(n: i64) -> Cbor {
    Cbor::Integer(n.into())
}

impl SoftPasskey {
    /// A device at `origin`, for the relying party `rp_id`; `seed` makes its key.
    pub fn new(origin: &str, rp_id: &str, seed: u8) -> Self {
        let key = SigningKey::from_bytes(&[seed.max(1); 32].into()).unwrap();
        Self {
            key,
            credential_id: vec![seed; 16],
            counter: 0,
            origin: origin.to_owned(),
            rp_id: rp_id.to_owned(),
        }
    }

    fn client_data(&self, kind: &str, options: &Value) -> Vec<u8> {
        json!({
            "type": kind,
            "challenge": options["publicKey"]["challenge"],
            "origin": self.origin,
            "crossOrigin": false,
        })
        .to_string()
        .into_bytes()
    }

    fn authenticator_data(&self, flags: u8) -> Vec<u8> {
        let mut data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&self.counter.to_be_bytes());
        data
    }

    /// The answer to `navigator.credentials.create` with the service's `options`.
    pub fn register(&self, options: &Value) -> String {
        let client_data = self.client_data("webauthn.create", options);
        let point = self.key.verifying_key().to_encoded_point(false);
        let public_key = Cbor::Map(vec![
            (int(1), int(2)),
            (int(3), int(-7)),
            (int(-1), int(1)),
            (int(-2), Cbor::Bytes(point.x().unwrap().to_vec())),
            (int(-3), Cbor::Bytes(point.y().unwrap().to_vec())),
        ]);
        let mut data = self.authenticator_data(FLAGS_CREATED);
        data.extend_from_slice(&[0; 16]);
        data.extend_from_slice(&(self.credential_id.len() as u16).to_be_bytes());
        data.extend_from_slice(&self.credential_id);
        data.extend_from_slice(&cbor(&public_key));
        let attestation = Cbor::Map(vec![
            (Cbor::Text("fmt".into()), Cbor::Text("none".into())),
            (Cbor::Text("attStmt".into()), Cbor::Map(Vec::new())),
            (Cbor::Text("authData".into()), Cbor::Bytes(data)),
        ]);
        json!({
            "id": b64(&self.credential_id),
            "rawId": b64(&self.credential_id),
            "type": "public-key",
            "extensions": {},
            "response": {
                "attestationObject": b64(&cbor(&attestation)),
                "clientDataJSON": b64(&client_data),
            },
        })
        .to_string()
    }

    /// The answer to `navigator.credentials.get` with the service's `options`; each use
    /// counts up, as a device's signature counter does.
    pub fn assert(&mut self, options: &Value) -> String {
        self.counter += 1;
        let client_data = self.client_data("webauthn.get", options);
        let data = self.authenticator_data(FLAGS_ASSERTED);
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data));
        let signature: Signature = self.key.sign(&signed);
        json!({
            "id": b64(&self.credential_id),
            "rawId": b64(&self.credential_id),
            "type": "public-key",
            "extensions": {},
            "response": {
                "authenticatorData": b64(&data),
                "clientDataJSON": b64(&client_data),
                "signature": b64(signature.to_der().as_bytes()),
                "userHandle": null,
            },
        })
        .to_string()
    }
}
