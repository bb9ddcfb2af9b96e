//! Table-driven decoding of one protobuf message into a JSON object, including the
//! Kubernetes special types (Quantity, IntOrString, Time, FieldsV1) that have their own JSON
//! form.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::ProtobufError;
use crate::descriptor::{FieldDesc, FieldType, MessageDesc};
use crate::wire::{Reader, WireError, WireValue};

/// Nesting limit. The table has no recursive message types, so real input never gets close;
/// this only bounds the work a hostile body could cause if one is ever added.
const MAX_DEPTH: usize = 64;

/// Go's `time.Time{}` as Unix seconds (0001-01-01T00:00:00Z).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

const QUANTITY: &str = "k8s.io.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Time";
const FIELDS_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1";
const RAW_EXTENSION: &str = "k8s.io.apimachinery.pkg.runtime.RawExtension";

pub(crate) fn malformed(message: &str, err: WireError) -> ProtobufError {
    ProtobufError::Malformed {
        message: message.to_owned(),
        detail: err.to_string(),
    }
}

pub(crate) fn unknown_field(message: &str, tag: u32, value: &WireValue<'_>) -> ProtobufError {
    ProtobufError::UnknownField {
        message: message.to_owned(),
        tag,
        wire_type: value.wire_type(),
    }
}

fn invalid(message: &str, field: &str, detail: impl Into<String>) -> ProtobufError {
    ProtobufError::InvalidValue {
        message: message.to_owned(),
        field: field.to_owned(),
        detail: detail.into(),
    }
}

fn wire_mismatch(
    message: &str,
    field: &str,
    tag: u32,
    expected: u8,
    value: &WireValue<'_>,
) -> ProtobufError {
    ProtobufError::WireType {
        message: message.to_owned(),
        field: field.to_owned(),
        tag,
        expected,
        found: value.wire_type(),
    }
}

/// Typed accessors that turn a wrong wire type into an error naming the field.
struct At<'s> {
    message: &'s str,
    field: &'s str,
    tag: u32,
}

impl At<'_> {
    fn bytes<'a>(&self, v: WireValue<'a>) -> Result<&'a [u8], ProtobufError> {
        match v {
            WireValue::Bytes(b) => Ok(b),
            other => Err(wire_mismatch(self.message, self.field, self.tag, 2, &other)),
        }
    }

    fn varint(&self, v: WireValue<'_>) -> Result<u64, ProtobufError> {
        match v {
            WireValue::Varint(n) => Ok(n),
            other => Err(wire_mismatch(self.message, self.field, self.tag, 0, &other)),
        }
    }

    fn string(&self, v: WireValue<'_>) -> Result<String, ProtobufError> {
        let b = self.bytes(v)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| invalid(self.message, self.field, "string is not valid UTF-8"))
    }
}

/// Decodes `buf` as a `desc` message into a JSON object.
pub(crate) fn decode_message(
    desc: &'static MessageDesc,
    buf: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    let mut out = Map::new();
    decode_into(desc, buf, depth, &mut out)?;
    Ok(out)
}

fn decode_into(
    desc: &'static MessageDesc,
    buf: &[u8],
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(desc.name, e))? {
        let field = desc
            .field(tag)
            .ok_or_else(|| unknown_field(desc.name, tag, &value))?;
        decode_field(desc, field, value, depth, out)?;
    }
    Ok(())
}

fn decode_field(
    desc: &'static MessageDesc,
    field: &'static FieldDesc,
    value: WireValue<'_>,
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    let at = At {
        message: desc.name,
        field: field.json,
        tag: field.tag,
    };
    match &field.ty {
        FieldType::Inline(inner) => decode_into(inner, at.bytes(value)?, depth + 1, out),
        FieldType::Map(value_ty) => {
            let (key, item) = decode_map_entry(desc, field, value_ty, at.bytes(value)?, depth + 1)?;
            let slot = out
                .entry(field.json)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = slot {
                map.insert(key, item);
            }
            Ok(())
        }
        ty if field.repeated => {
            let mut items = Vec::new();
            match (ty, value) {
                // Packed encoding of repeated scalars: one length-delimited run of values.
                (FieldType::Int32 | FieldType::Int64 | FieldType::Bool, WireValue::Bytes(run)) => {
                    let mut reader = Reader::new(run);
                    while !reader.is_empty() {
                        let one = WireValue::Varint(
                            reader.varint().map_err(|e| malformed(desc.name, e))?,
                        );
                        items.push(decode_value(&at, ty, one, depth)?);
                    }
                }
                (ty, one) => items.push(decode_value(&at, ty, one, depth)?),
            }
            match out
                .entry(field.json)
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(list) => list.extend(items),
                other => *other = Value::Array(items),
            }
            Ok(())
        }
        ty => {
            let item = decode_value(&at, ty, value, depth)?;
            if field.omit_zero && is_zero(&item) {
                // Last occurrence wins in protobuf; a zero here hides any earlier value.
                out.remove(field.json);
            } else {
                match out.get_mut(field.json) {
                    // A message field seen twice is merged, as protobuf specifies.
                    Some(existing) if matches!(ty, FieldType::Message(_)) => merge(existing, item),
                    _ => {
                        out.insert(field.json.to_owned(), item);
                    }
                }
            }
            Ok(())
        }
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

/// Protobuf merge of a second occurrence of a message: fields of `new` override, nested
/// messages merge, repeated fields concatenate.
fn merge(existing: &mut Value, new: Value) {
    match (existing, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (k, v) in new {
                match old.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        old.insert(k, v);
                    }
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => old.extend(new),
        (slot, new) => *slot = new,
    }
}

/// One non-repeated value of type `ty`.
fn decode_value(
    at: &At<'_>,
    ty: &FieldType,
    value: WireValue<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    Ok(match ty {
        FieldType::String => Value::String(at.string(value)?),
        FieldType::Bytes => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(at.bytes(value)?))
        }
        // int32 travels as a sign-extended varint; truncating to 32 bits recovers it.
        FieldType::Int32 => Value::from(at.varint(value)? as i32),
        FieldType::Int64 => Value::from(at.varint(value)? as i64),
        FieldType::Bool => Value::Bool(at.varint(value)? != 0),
        FieldType::Message(inner) => {
            Value::Object(decode_message(inner, at.bytes(value)?, depth + 1)?)
        }
        FieldType::Quantity => decode_quantity(at.bytes(value)?)?,
        FieldType::IntOrString => decode_int_or_string(at.bytes(value)?)?,
        FieldType::Time => decode_time(at.bytes(value)?)?,
        FieldType::FieldsV1 => decode_raw_json(FIELDS_V1, at.bytes(value)?)?,
        FieldType::RawExtension => decode_raw_json(RAW_EXTENSION, at.bytes(value)?)?,
        FieldType::StringList => decode_string_list(at, at.bytes(value)?)?,
        FieldType::Inline(_) | FieldType::Map(_) => {
            return Err(invalid(
                at.message,
                at.field,
                "inline or map type used as a plain value",
            ));
        }
    })
}

/// A map entry message: 1 = key, 2 = value. A missing value is the value type's zero.
fn decode_map_entry(
    desc: &'static MessageDesc,
    field: &'static FieldDesc,
    value_ty: &FieldType,
    buf: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let entry_name = format!("{}.{} map entry", desc.name, field.json);
    let at = At {
        message: &entry_name,
        field: field.json,
        tag: field.tag,
    };
    let mut key = String::new();
    let mut item = None;
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(&entry_name, e))? {
        match tag {
            1 => key = at.string(value)?,
            2 => item = Some(decode_value(&at, value_ty, value, depth)?),
            _ => return Err(unknown_field(&entry_name, tag, &value)),
        }
    }
    let item = match item {
        Some(v) => v,
        None => match value_ty {
            FieldType::Message(_) => Value::Object(Map::new()),
            FieldType::StringList => Value::Array(Vec::new()),
            // Decoding an empty buffer yields exactly Go's zero value for the special types.
            FieldType::Quantity
            | FieldType::IntOrString
            | FieldType::Time
            | FieldType::FieldsV1
            | FieldType::RawExtension => decode_value(&at, value_ty, WireValue::Bytes(&[]), depth)?,
            FieldType::Int32 | FieldType::Int64 => Value::from(0),
            FieldType::Bool => Value::Bool(false),
            _ => Value::String(String::new()),
        },
    };
    Ok((key, item))
}

/// `resource.Quantity`: its canonical string. An empty message is Go's zero quantity, "0".
fn decode_quantity(buf: &[u8]) -> Result<Value, ProtobufError> {
    let at = At {
        message: QUANTITY,
        field: "string",
        tag: 1,
    };
    let mut s = None;
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(QUANTITY, e))? {
        match tag {
            1 => s = Some(at.string(value)?),
            _ => return Err(unknown_field(QUANTITY, tag, &value)),
        }
    }
    Ok(Value::String(s.unwrap_or_else(|| "0".to_owned())))
}

/// `intstr.IntOrString`: a JSON number for type 0, a JSON string for type 1.
fn decode_int_or_string(buf: &[u8]) -> Result<Value, ProtobufError> {
    let (mut kind, mut int_val, mut str_val) = (0i64, 0i32, String::new());
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader
        .next_field()
        .map_err(|e| malformed(INT_OR_STRING, e))?
    {
        match tag {
            1 => {
                kind = At {
                    message: INT_OR_STRING,
                    field: "type",
                    tag,
                }
                .varint(value)? as i64
            }
            2 => {
                int_val = At {
                    message: INT_OR_STRING,
                    field: "intVal",
                    tag,
                }
                .varint(value)? as i32
            }
            3 => {
                str_val = At {
                    message: INT_OR_STRING,
                    field: "strVal",
                    tag,
                }
                .string(value)?
            }
            _ => return Err(unknown_field(INT_OR_STRING, tag, &value)),
        }
    }
    match kind {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        other => Err(invalid(
            INT_OR_STRING,
            "type",
            format!("unknown IntOrString type {other}"),
        )),
    }
}

/// `metav1.Time`: RFC 3339 at second precision in UTC, like its Go JSON form (which also
/// ignores nanos); an empty message or Go's zero time is `null`.
fn decode_time(buf: &[u8]) -> Result<Value, ProtobufError> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let mut seconds = 0i64;
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(TIME, e))? {
        match tag {
            1 => {
                seconds = At {
                    message: TIME,
                    field: "seconds",
                    tag,
                }
                .varint(value)? as i64
            }
            // Nanos are validated for wire type but dropped: Go's Time keeps whole seconds.
            2 => {
                At {
                    message: TIME,
                    field: "nanos",
                    tag,
                }
                .varint(value)?;
            }
            _ => return Err(unknown_field(TIME, tag, &value)),
        }
    }
    if seconds == GO_ZERO_TIME_SECONDS {
        return Ok(Value::Null);
    }
    let time = chrono::DateTime::from_timestamp(seconds, 0)
        .filter(|t| (0..=9999).contains(&chrono::Datelike::year(t)))
        .ok_or_else(|| {
            invalid(
                TIME,
                "seconds",
                format!("{seconds} is outside years 0000-9999"),
            )
        })?;
    Ok(Value::String(time.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

/// `metav1.FieldsV1` and `runtime.RawExtension` (`message`): the raw bytes are JSON and stand
/// for themselves; no bytes is `null`.
fn decode_raw_json(message: &'static str, buf: &[u8]) -> Result<Value, ProtobufError> {
    let mut raw: Option<&[u8]> = None;
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(message, e))? {
        match tag {
            1 => {
                raw = Some(
                    At {
                        message,
                        field: "raw",
                        tag,
                    }
                    .bytes(value)?,
                )
            }
            _ => return Err(unknown_field(message, tag, &value)),
        }
    }
    match raw {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_slice(raw)
            .map_err(|e| invalid(message, "raw", format!("not JSON: {e}"))),
    }
}

/// A named `[]string` wrapped in a message: 1 = repeated items.
fn decode_string_list(at: &At<'_>, buf: &[u8]) -> Result<Value, ProtobufError> {
    let mut items = Vec::new();
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(at.message, e))? {
        match tag {
            1 => items.push(Value::String(at.string(value)?)),
            _ => return Err(unknown_field(at.message, tag, &value)),
        }
    }
    Ok(Value::Array(items))
}
