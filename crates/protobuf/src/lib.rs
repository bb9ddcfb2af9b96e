//! Decoding of Kubernetes protobuf request bodies (`Content-Type:
//! application/vnd.kubernetes.protobuf`) into the JSON form the Kubernetes JSON API uses.
//!
//! kubectl's typed commands (`kubectl create deployment|secret|service ...`) and client-go
//! POST protobuf; the Flotilla API servers store JSON. This crate owns that translation:
//! the `k8s\0` + `runtime.Unknown` envelope (here), a generic wire reader (`wire`), a static
//! descriptor table of the supported message types (its shape in `descriptor`, the table in
//! `generated_table`, written by `tools/gen_table.py`) and the table-driven decoder
//! (`decode`). Nothing is silently dropped: a field number the table
//! does not know is an error naming the message type and tag.

mod decode;
mod descriptor;
mod generated_table;
mod wire;

use serde_json::{Map, Value};

use crate::decode::{decode_message, malformed, unknown_field};
use crate::wire::{Reader, WireValue};

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";
const TYPE_META: &str = "k8s.io.apimachinery.pkg.runtime.TypeMeta";

/// Why a protobuf body could not be decoded.
#[derive(thiserror::Error, Debug)]
pub enum ProtobufError {
    #[error("protobuf body does not start with the Kubernetes magic bytes \"k8s\\0\"")]
    MissingMagic,
    #[error("malformed protobuf in {message}: {detail}")]
    Malformed { message: String, detail: String },
    #[error("protobuf envelope has no kind")]
    MissingKind,
    #[error("unsupported content encoding {0:?} in the protobuf envelope")]
    UnsupportedEncoding(String),
    #[error("unsupported content type {0:?} in the protobuf envelope")]
    UnsupportedContentType(String),
    #[error("no protobuf decoder for apiVersion {api_version:?} kind {kind:?}")]
    UnknownKind { api_version: String, kind: String },
    #[error("unknown field tag {tag} (wire type {wire_type}) in protobuf message {message}")]
    UnknownField {
        message: String,
        tag: u32,
        wire_type: u8,
    },
    #[error("field {field:?} (tag {tag}) of {message} has wire type {found}, expected {expected}")]
    WireType {
        message: String,
        field: String,
        tag: u32,
        expected: u8,
        found: u8,
    },
    #[error("invalid value in field {field:?} of {message}: {detail}")]
    InvalidValue {
        message: String,
        field: String,
        detail: String,
    },
    #[error("protobuf messages nested deeper than {0} levels")]
    TooDeep(usize),
}

/// The (apiVersion, kind) pairs [`decode_object`] supports. `DeleteOptions` is also accepted
/// under any other apiVersion, because client-go labels it with the group of the resource
/// being deleted.
pub fn supported_kinds() -> Vec<(&'static str, &'static str)> {
    generated_table::ROOTS
        .iter()
        .map(|(api_version, kind, _)| (*api_version, *kind))
        .collect()
}

/// Decodes a protobuf request body into JSON. Errors for: missing magic, malformed protobuf,
/// unknown kind, or a field tag the table does not know (never silently drop data: the error
/// names the message type and tag).
///
/// The result carries `apiVersion` and `kind` from the envelope, then the object's fields.
pub fn decode_object(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::MissingMagic)?;
    let unknown = Envelope::parse(envelope)?;
    if !unknown.content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedEncoding(unknown.content_encoding));
    }
    if !unknown.content_type.is_empty() && unknown.content_type != CONTENT_TYPE {
        return Err(ProtobufError::UnsupportedContentType(unknown.content_type));
    }
    if unknown.kind.is_empty() {
        return Err(ProtobufError::MissingKind);
    }
    let desc = generated_table::ROOTS
        .iter()
        .find(|(api_version, kind, _)| *api_version == unknown.api_version && *kind == unknown.kind)
        .map(|(_, _, desc)| *desc)
        .or_else(|| {
            (unknown.kind == "DeleteOptions").then_some(&generated_table::META_V1_DELETE_OPTIONS)
        })
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: unknown.api_version.clone(),
            kind: unknown.kind.clone(),
        })?;
    let fields = decode_message(desc, unknown.raw, 0)?;
    let mut object = Map::new();
    object.insert("apiVersion".to_owned(), Value::String(unknown.api_version));
    object.insert("kind".to_owned(), Value::String(unknown.kind));
    object.extend(fields);
    Ok(Value::Object(object))
}

/// The `runtime.Unknown` envelope: 1 typeMeta {1 apiVersion, 2 kind}, 2 raw,
/// 3 contentEncoding, 4 contentType.
#[derive(Default)]
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

impl<'a> Envelope<'a> {
    fn parse(buf: &'a [u8]) -> Result<Self, ProtobufError> {
        let mut out = Envelope::default();
        let mut reader = Reader::new(buf);
        while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(UNKNOWN, e))? {
            match tag {
                1 => {
                    let bytes = envelope_bytes(UNKNOWN, tag, value)?;
                    let mut meta = Reader::new(bytes);
                    while let Some((tag, value)) =
                        meta.next_field().map_err(|e| malformed(TYPE_META, e))?
                    {
                        let target = match tag {
                            1 => &mut out.api_version,
                            2 => &mut out.kind,
                            _ => return Err(unknown_field(TYPE_META, tag, &value)),
                        };
                        *target = envelope_string(TYPE_META, tag, value)?;
                    }
                }
                2 => out.raw = envelope_bytes(UNKNOWN, tag, value)?,
                3 => out.content_encoding = envelope_string(UNKNOWN, tag, value)?,
                4 => out.content_type = envelope_string(UNKNOWN, tag, value)?,
                _ => return Err(unknown_field(UNKNOWN, tag, &value)),
            }
        }
        Ok(out)
    }
}

/// Every envelope field is length-delimited.
fn envelope_bytes<'a>(
    message: &str,
    tag: u32,
    value: WireValue<'a>,
) -> Result<&'a [u8], ProtobufError> {
    match value {
        WireValue::Bytes(b) => Ok(b),
        other => Err(ProtobufError::WireType {
            message: message.to_owned(),
            field: format!("#{tag}"),
            tag,
            expected: 2,
            found: other.wire_type(),
        }),
    }
}

fn envelope_string(message: &str, tag: u32, value: WireValue<'_>) -> Result<String, ProtobufError> {
    let bytes = envelope_bytes(message, tag, value)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtobufError::InvalidValue {
        message: message.to_owned(),
        field: format!("#{tag}"),
        detail: "string is not valid UTF-8".to_owned(),
    })
}

#[cfg(test)]
mod tests;
