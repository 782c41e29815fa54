//! Proof of delivery: what the courier sends when handing over, checked against the job's
//! proof requirement, and how it reads back to the merchant.
//!
//! Files arrive base64-encoded in the JSON body (`{"content_type", "data"}`), are kept in
//! Postgres, and are served to the job's merchant at `photo_url` / `signature_url`.

use base64::Engine;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use thiserror::Error;
use uuid::Uuid;

use crate::event::ProofFacts;

use crate::error::Code;
use crate::error::ErrorCode;

pub const INVALID_OUTCOME: Code = Code::new(
    422,
    "proof.invalid_outcome",
    "`outcome` missing or not one of the three.",
);
pub const RECIPIENT_NAME_REQUIRED: Code = Code::new(
    422,
    "proof.recipient_name_required",
    "Handed to someone, but no `recipient_name`.",
);
pub const PHOTO_REQUIRED: Code = Code::new(
    422,
    "proof.photo_required",
    "The job's `proof_requirement` asks for a photo and it is missing.",
);
pub const SIGNATURE_REQUIRED: Code = Code::new(
    422,
    "proof.signature_required",
    "The job's `proof_requirement` asks for a signature and it is missing.",
);
pub const FILE_TOO_LARGE: Code = Code::new(
    422,
    "proof.file_too_large",
    "A proof file over `COURIER_PROOF_MAX_BYTES`.",
);
pub const UNSUPPORTED_CONTENT_TYPE: Code = Code::new(
    422,
    "proof.unsupported_content_type",
    "A proof file that is not JPEG, PNG or WebP.",
);
pub const INVALID_FILE: Code = Code::new(
    422,
    "proof.invalid_file",
    "A proof file that is not base64, or whose bytes are not of the stated type.",
);
pub const PROOF_FILE_NOT_FOUND: Code =
    Code::new(404, "proof.not_found", "The job has no such proof file.");

/// The outcomes a delivery may have.
pub const OUTCOMES: [&str; 3] = [
    "handed_to_recipient",
    "handed_to_neighbour",
    "left_in_safe_place",
];
/// Accepted file types; each is checked against the file's first bytes too.
pub const CONTENT_TYPES: [&str; 3] = ["image/jpeg", "image/png", "image/webp"];

crate::named_values!(
    /// [`OUTCOMES`] in the API description.
    pub DeliveryOutcome: "What happened at the door" = OUTCOMES
);
crate::named_values!(
    /// [`CONTENT_TYPES`] in the API description.
    pub ProofContentType: "An accepted image type" = CONTENT_TYPES
);
const MAX_NAME_CHARS: usize = 200;
const MAX_NOTE_CHARS: usize = 1000;

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum ProofError {
    #[error(
        "`outcome` must be one of handed_to_recipient, handed_to_neighbour, left_in_safe_place"
    )]
    #[code(INVALID_OUTCOME)]
    InvalidOutcome,
    #[error("`recipient_name` is required when the parcel is handed to someone")]
    #[code(RECIPIENT_NAME_REQUIRED)]
    RecipientNameRequired,
    #[error("this merchant requires a photo with every delivery")]
    #[code(PHOTO_REQUIRED)]
    PhotoRequired,
    #[error("this merchant requires a signature with every delivery")]
    #[code(SIGNATURE_REQUIRED)]
    SignatureRequired,
    #[error("the {kind} is larger than {max_bytes} bytes")]
    #[code(FILE_TOO_LARGE)]
    FileTooLarge { kind: ProofKind, max_bytes: usize },
    #[error("the {0} must be image/jpeg, image/png or image/webp")]
    #[code(UNSUPPORTED_CONTENT_TYPE)]
    UnsupportedContentType(ProofKind),
    #[error("the {0} is not base64 of an image of its content_type")]
    #[code(INVALID_FILE)]
    InvalidFile(ProofKind),
    #[error("{0}")]
    #[code(crate::error::INVALID_BODY)]
    InvalidText(&'static str),
}

/// `POST /courier/v1/jobs/{id}/delivered`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryRequest {
    pub outcome: Option<String>,
    pub recipient_name: Option<String>,
    pub note: Option<String>,
    pub photo: Option<FileUpload>,
    pub signature: Option<FileUpload>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUpload {
    pub content_type: String,
    /// Standard base64.
    pub data: String,
}

crate::names::named_enum! {
    /// What a proof file shows; also its name in the file's URL.
    pub enum ProofKind {
        Photo,
        Signature,
    }
}

/// A checked file, ready to keep.
#[derive(Debug)]
pub struct ProofFile {
    pub kind: ProofKind,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A checked proof of delivery.
#[derive(Debug)]
pub struct Proof {
    pub outcome: String,
    pub recipient_name: Option<String>,
    pub note: Option<String>,
    pub recorded_at: DateTime<Utc>,
    pub files: Vec<ProofFile>,
}

/// What the job requires.
#[derive(Clone, Copy, Debug)]
pub struct Requirement {
    pub photo: bool,
    pub signature: bool,
}

impl Proof {
    pub fn parse(
        request: DeliveryRequest,
        requirement: Requirement,
        max_file_bytes: usize,
        now: DateTime<Utc>,
    ) -> Result<Self, ProofError> {
        let outcome = request
            .outcome
            .filter(|o| OUTCOMES.contains(&o.as_str()))
            .ok_or(ProofError::InvalidOutcome)?;
        let recipient_name = text(request.recipient_name, MAX_NAME_CHARS).ok_or(
            ProofError::InvalidText("`recipient_name` must be at most 200 characters"),
        )?;
        if outcome.starts_with("handed_to_") && recipient_name.is_none() {
            return Err(ProofError::RecipientNameRequired);
        }
        let note = text(request.note, MAX_NOTE_CHARS).ok_or(ProofError::InvalidText(
            "`note` must be at most 1000 characters",
        ))?;
        let mut files = Vec::new();
        for (kind, upload) in [
            (ProofKind::Photo, request.photo),
            (ProofKind::Signature, request.signature),
        ] {
            if let Some(upload) = upload {
                files.push(file(kind, upload, max_file_bytes)?);
            }
        }
        let has = |kind| files.iter().any(|f| f.kind == kind);
        if requirement.photo && !has(ProofKind::Photo) {
            return Err(ProofError::PhotoRequired);
        }
        if requirement.signature && !has(ProofKind::Signature) {
            return Err(ProofError::SignatureRequired);
        }
        Ok(Self {
            outcome,
            recipient_name,
            note,
            recorded_at: now,
            files,
        })
    }

    fn has(&self, kind: ProofKind) -> bool {
        self.files.iter().any(|f| f.kind == kind)
    }

    /// What the job row keeps (`jobs.proof`); URLs are made when it is read.
    pub fn stored(&self) -> Value {
        json!({
            "outcome": self.outcome,
            "recipient_name": self.recipient_name,
            "note": self.note,
            "recorded_at": self.recorded_at,
            "has_photo": self.has(ProofKind::Photo),
            "has_signature": self.has(ProofKind::Signature),
        })
    }

    pub fn facts(&self) -> ProofFacts {
        ProofFacts {
            outcome: self.outcome.clone(),
            recipient_name: self.recipient_name.clone(),
            has_photo: self.has(ProofKind::Photo),
            has_signature: self.has(ProofKind::Signature),
        }
    }
}

/// The spec's proof object from what the job row keeps.
/// The proof object of a job's detail, as [`view`] writes it.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ProofView {
    /// `handed_to_recipient`, or what else happened at the door.
    outcome: String,
    recipient_name: Option<String>,
    note: Option<String>,
    recorded_at: DateTime<Utc>,
    /// Where the merchant fetches the photo; null when none was taken.
    photo_url: Option<String>,
    /// Where the merchant fetches the signature; null when none was given.
    signature_url: Option<String>,
}

pub fn view(stored: &Value, job_id: Uuid, public_url: &str) -> Value {
    let url = |kind: ProofKind| {
        stored[format!("has_{kind}")]
            .as_bool()
            .unwrap_or(false)
            .then(|| file_url(public_url, job_id, kind))
    };
    json!({
        "outcome": stored["outcome"],
        "recipient_name": stored["recipient_name"],
        "note": stored["note"],
        "recorded_at": stored["recorded_at"],
        "photo_url": url(ProofKind::Photo),
        "signature_url": url(ProofKind::Signature),
    })
}

/// Where the merchant fetches a proof file.
pub fn file_url(public_url: &str, job_id: Uuid, kind: ProofKind) -> String {
    format!(
        "{}/v1/jobs/{job_id}/proof/{kind}",
        public_url.trim_end_matches('/')
    )
}

/// Trimmed text; Some(None) when absent or blank, None when too long.
fn text(value: Option<String>, max_chars: usize) -> Option<Option<String>> {
    let value = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    match value {
        Some(v) if v.chars().count() > max_chars => None,
        other => Some(other),
    }
}

fn file(kind: ProofKind, upload: FileUpload, max_bytes: usize) -> Result<ProofFile, ProofError> {
    let content_type = upload.content_type.trim().to_ascii_lowercase();
    if !CONTENT_TYPES.contains(&content_type.as_str()) {
        return Err(ProofError::UnsupportedContentType(kind));
    }
    // Refuse before decoding what cannot fit.
    if upload.data.len() / 4 * 3 > max_bytes + 3 {
        return Err(ProofError::FileTooLarge { kind, max_bytes });
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(upload.data.trim())
        .map_err(|_| ProofError::InvalidFile(kind))?;
    if bytes.len() > max_bytes {
        return Err(ProofError::FileTooLarge { kind, max_bytes });
    }
    if !looks_like(&content_type, &bytes) {
        return Err(ProofError::InvalidFile(kind));
    }
    Ok(ProofFile {
        kind,
        content_type,
        bytes,
    })
}

/// Whether `bytes` start the way files of `content_type` do.
fn looks_like(content_type: &str, bytes: &[u8]) -> bool {
    match content_type {
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\nrest";

    fn upload(content_type: &str, bytes: &[u8]) -> Option<FileUpload> {
        Some(FileUpload {
            content_type: content_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    fn request() -> DeliveryRequest {
        DeliveryRequest {
            outcome: Some("handed_to_recipient".into()),
            recipient_name: Some(" Rae Recipient ".into()),
            ..DeliveryRequest::default()
        }
    }

    const NOTHING: Requirement = Requirement {
        photo: false,
        signature: false,
    };

    #[test]
    fn a_plain_handover_is_accepted() {
        let proof = Proof::parse(request(), NOTHING, 100, Utc::now()).unwrap();
        assert_eq!(proof.outcome, "handed_to_recipient");
        assert_eq!(proof.recipient_name.as_deref(), Some("Rae Recipient"));
        assert!(!proof.facts().has_photo && !proof.facts().has_signature);
    }

    #[test]
    fn outcomes_and_names_are_checked() {
        let mut bad = request();
        bad.outcome = Some("thrown_over_fence".into());
        assert_eq!(
            Proof::parse(bad, NOTHING, 100, Utc::now()).unwrap_err(),
            ProofError::InvalidOutcome
        );
        let mut nameless = request();
        nameless.recipient_name = Some("  ".into());
        assert_eq!(
            Proof::parse(nameless, NOTHING, 100, Utc::now()).unwrap_err(),
            ProofError::RecipientNameRequired
        );
        let safe_place = DeliveryRequest {
            outcome: Some("left_in_safe_place".into()),
            ..DeliveryRequest::default()
        };
        assert!(Proof::parse(safe_place, NOTHING, 100, Utc::now()).is_ok());
    }

    #[test]
    fn required_files_must_be_there() {
        let both = Requirement {
            photo: true,
            signature: true,
        };
        assert_eq!(
            Proof::parse(request(), both, 100, Utc::now()).unwrap_err(),
            ProofError::PhotoRequired
        );
        let mut with_photo = request();
        with_photo.photo = upload("image/png", PNG);
        assert_eq!(
            Proof::parse(with_photo, both, 100, Utc::now()).unwrap_err(),
            ProofError::SignatureRequired
        );
        let mut complete = request();
        complete.photo = upload("image/png", PNG);
        complete.signature = upload("image/png", PNG);
        let proof = Proof::parse(complete, both, 100, Utc::now()).unwrap();
        assert!(proof.facts().has_photo && proof.facts().has_signature);
    }

    #[test]
    fn files_are_checked_for_type_size_and_content() {
        let with = |photo| DeliveryRequest { photo, ..request() };
        let parse = |r| Proof::parse(r, NOTHING, 16, Utc::now()).unwrap_err();
        assert_eq!(
            parse(with(upload("image/svg+xml", b"<svg/>"))),
            ProofError::UnsupportedContentType(ProofKind::Photo)
        );
        assert_eq!(
            parse(with(upload("image/jpeg", PNG))),
            ProofError::InvalidFile(ProofKind::Photo)
        );
        assert_eq!(
            parse(with(Some(FileUpload {
                content_type: "image/png".into(),
                data: "not base64!".into(),
            }))),
            ProofError::InvalidFile(ProofKind::Photo)
        );
        let mut big = PNG.to_vec();
        big.resize(17, 0);
        assert_eq!(
            parse(with(upload("image/png", &big))),
            ProofError::FileTooLarge {
                kind: ProofKind::Photo,
                max_bytes: 16
            }
        );
    }

    #[test]
    fn the_view_links_only_the_files_there_are() {
        let id = Uuid::new_v4();
        let mut request = request();
        request.photo = upload("image/png", PNG);
        let proof = Proof::parse(request, NOTHING, 100, Utc::now()).unwrap();
        let view = view(&proof.stored(), id, "https://c.example/");
        assert_eq!(
            view["photo_url"],
            format!("https://c.example/v1/jobs/{id}/proof/photo")
        );
        assert!(view["signature_url"].is_null());
        assert_eq!(view["outcome"], "handed_to_recipient");
        assert!(view.get("has_photo").is_none());
    }
}
