//! Table-driven decoding of one protobuf message into a JSON object, including the
//! Kubernetes special types (Quantity, IntOrString, Time, MicroTime, FieldsV1, the
//! apiextensions JSON-schema unions) that have their own JSON form.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::ProtobufError;
use crate::descriptor::{FieldDesc, FieldType, MessageDesc};
use crate::wire::{Reader, WireError, WireValue};

/// Nesting limit, the JSON limit of the API server (`MAX_NESTING_DEPTH`): one level per nested
/// message or map entry, about one per JSON object or array. Only apiextensions'
/// `JSONSchemaProps` is recursive; the limit bounds the stack and work a hostile CRD schema
/// could cause, while any schema the JSON API accepts still decodes.
const MAX_DEPTH: usize = 100;

/// Go's `time.Time{}` as Unix seconds (0001-01-01T00:00:00Z).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

const QUANTITY: &str = "k8s.io.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime";
const JSON: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON";
const SCHEMA_OR_ARRAY: &str =
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray";
const SCHEMA_OR_BOOL: &str =
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool";
const SCHEMA_OR_STRING_ARRAY: &str =
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray";
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

    fn fixed64(&self, v: WireValue<'_>) -> Result<u64, ProtobufError> {
        match v {
            WireValue::Fixed64(n) => Ok(n),
            other => Err(wire_mismatch(self.message, self.field, self.tag, 1, &other)),
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
                (FieldType::Double, WireValue::Bytes(run)) => {
                    if run.len() % 8 != 0 {
                        return Err(malformed(desc.name, WireError::Truncated));
                    }
                    for chunk in run.chunks_exact(8) {
                        let mut le = [0u8; 8];
                        le.copy_from_slice(chunk);
                        let one = WireValue::Fixed64(u64::from_le_bytes(le));
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
        FieldType::Double => decode_double(at, f64::from_bits(at.fixed64(value)?))?,
        FieldType::Message(inner) => {
            Value::Object(decode_message(inner, at.bytes(value)?, depth + 1)?)
        }
        FieldType::Quantity => decode_quantity(at.bytes(value)?)?,
        FieldType::IntOrString => decode_int_or_string(at.bytes(value)?)?,
        FieldType::Time => decode_time(TIME, at.bytes(value)?)?,
        FieldType::MicroTime => decode_time(MICRO_TIME, at.bytes(value)?)?,
        FieldType::FieldsV1 => decode_raw_json(FIELDS_V1, at.bytes(value)?)?,
        FieldType::RawExtension => decode_raw_json(RAW_EXTENSION, at.bytes(value)?)?,
        FieldType::Json => decode_raw_json(JSON, at.bytes(value)?)?,
        FieldType::StringList => decode_string_list(at, at.bytes(value)?)?,
        FieldType::SchemaOrArray(schema) => {
            decode_schema_or_array(schema, at.bytes(value)?, depth + 1)?
        }
        FieldType::SchemaOrBool(schema) => {
            decode_schema_or_bool(schema, at.bytes(value)?, depth + 1)?
        }
        FieldType::SchemaOrStringArray(schema) => {
            decode_schema_or_string_array(schema, at.bytes(value)?, depth + 1)?
        }
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
            | FieldType::MicroTime
            | FieldType::FieldsV1
            | FieldType::RawExtension
            | FieldType::Json
            | FieldType::SchemaOrArray(_)
            | FieldType::SchemaOrBool(_)
            | FieldType::SchemaOrStringArray(_) => {
                decode_value(&at, value_ty, WireValue::Bytes(&[]), depth)?
            }
            FieldType::Int32 | FieldType::Int64 | FieldType::Double => Value::from(0),
            FieldType::Bool => Value::Bool(false),
            FieldType::String | FieldType::Bytes | FieldType::Inline(_) | FieldType::Map(_) => {
                Value::String(String::new())
            }
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

/// `metav1.Time` and `metav1.MicroTime` (`message`): the instant Go's `time.Unix(seconds,
/// nanos)` makes of them, in UTC, as RFC 3339 at second precision (Time, whose JSON drops the
/// fraction) or with six fractional digits (MicroTime, truncated like Go's `.000000`); an
/// empty message or Go's zero time is `null`.
fn decode_time(message: &'static str, buf: &[u8]) -> Result<Value, ProtobufError> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader.next_field().map_err(|e| malformed(message, e))? {
        match tag {
            1 => {
                seconds = At {
                    message,
                    field: "seconds",
                    tag,
                }
                .varint(value)? as i64
            }
            // int32 on the wire; Go normalizes values outside [0, 1e9) into the seconds.
            2 => {
                nanos = i64::from(
                    At {
                        message,
                        field: "nanos",
                        tag,
                    }
                    .varint(value)? as i32,
                )
            }
            _ => return Err(unknown_field(message, tag, &value)),
        }
    }
    let out_of_range = || {
        invalid(
            message,
            "seconds",
            format!("{seconds} is outside years 0000-9999"),
        )
    };
    let whole = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(out_of_range)?;
    let fraction = nanos.rem_euclid(1_000_000_000) as u32;
    if whole == GO_ZERO_TIME_SECONDS && fraction == 0 {
        return Ok(Value::Null);
    }
    let time = chrono::DateTime::from_timestamp(whole, fraction)
        .filter(|t| (0..=9999).contains(&chrono::Datelike::year(t)))
        .ok_or_else(out_of_range)?;
    let format = if message == MICRO_TIME {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(time.format(format).to_string()))
}

/// A `double` the way Go's JSON encoder writes it: integral values as integers (Go prints
/// `1`, not `1.0`); NaN and the infinities, which JSON cannot hold, are errors.
fn decode_double(at: &At<'_>, v: f64) -> Result<Value, ProtobufError> {
    if !v.is_finite() {
        return Err(invalid(
            at.message,
            at.field,
            format!("{v} has no JSON representation"),
        ));
    }
    // Exact: `v` is integral and inside the i64 range (2^63 itself is excluded).
    const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if v.fract() == 0.0 && (-I64_LIMIT..I64_LIMIT).contains(&v) {
        return Ok(Value::from(v as i64));
    }
    Ok(Value::from(v))
}

/// `metav1.FieldsV1`, `runtime.RawExtension` and apiextensions `JSON` (`message`): the raw
/// bytes are JSON and stand for themselves; no bytes is `null`, and so are empty bytes for
/// `JSON` (whose Go MarshalJSON writes `null` for them; the others' fail).
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
        Some([]) if message == JSON => Ok(Value::Null),
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

/// Decodes an optional `JSONSchemaProps` (a present but empty message is `{}`).
fn schema_value(
    schema: &'static MessageDesc,
    at: &At<'_>,
    value: WireValue<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    Ok(Value::Object(decode_message(
        schema,
        at.bytes(value)?,
        depth + 1,
    )?))
}

/// `JSONSchemaPropsOrArray` (1: schema, 2: repeated schemas): Go's MarshalJSON writes the
/// schemas when there are any, else the schema, else `null`.
fn decode_schema_or_array(
    schema: &'static MessageDesc,
    buf: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let mut one: Option<Value> = None;
    let mut many = Vec::new();
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader
        .next_field()
        .map_err(|e| malformed(SCHEMA_OR_ARRAY, e))?
    {
        let field = match tag {
            1 => "schema",
            2 => "jSONSchemas",
            _ => return Err(unknown_field(SCHEMA_OR_ARRAY, tag, &value)),
        };
        let at = At {
            message: SCHEMA_OR_ARRAY,
            field,
            tag,
        };
        let item = schema_value(schema, &at, value, depth)?;
        if tag == 1 {
            match one.as_mut() {
                Some(existing) => merge(existing, item),
                None => one = Some(item),
            }
        } else {
            many.push(item);
        }
    }
    Ok(if many.is_empty() {
        one.unwrap_or(Value::Null)
    } else {
        Value::Array(many)
    })
}

/// `JSONSchemaPropsOrBool` (1: allows, 2: schema): Go's MarshalJSON writes the schema when
/// there is one, else `allows`.
fn decode_schema_or_bool(
    schema: &'static MessageDesc,
    buf: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let mut allows = false;
    let mut found: Option<Value> = None;
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader
        .next_field()
        .map_err(|e| malformed(SCHEMA_OR_BOOL, e))?
    {
        match tag {
            1 => {
                allows = At {
                    message: SCHEMA_OR_BOOL,
                    field: "allows",
                    tag,
                }
                .varint(value)?
                    != 0
            }
            2 => {
                let at = At {
                    message: SCHEMA_OR_BOOL,
                    field: "schema",
                    tag,
                };
                let item = schema_value(schema, &at, value, depth)?;
                match found.as_mut() {
                    Some(existing) => merge(existing, item),
                    None => found = Some(item),
                }
            }
            _ => return Err(unknown_field(SCHEMA_OR_BOOL, tag, &value)),
        }
    }
    Ok(found.unwrap_or(Value::Bool(allows)))
}

/// `JSONSchemaPropsOrStringArray` (1: schema, 2: repeated property): Go's MarshalJSON writes
/// the strings when there are any, else the schema, else `null`.
fn decode_schema_or_string_array(
    schema: &'static MessageDesc,
    buf: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let mut found: Option<Value> = None;
    let mut property = Vec::new();
    let mut reader = Reader::new(buf);
    while let Some((tag, value)) = reader
        .next_field()
        .map_err(|e| malformed(SCHEMA_OR_STRING_ARRAY, e))?
    {
        match tag {
            1 => {
                let at = At {
                    message: SCHEMA_OR_STRING_ARRAY,
                    field: "schema",
                    tag,
                };
                let item = schema_value(schema, &at, value, depth)?;
                match found.as_mut() {
                    Some(existing) => merge(existing, item),
                    None => found = Some(item),
                }
            }
            2 => property.push(Value::String(
                At {
                    message: SCHEMA_OR_STRING_ARRAY,
                    field: "property",
                    tag,
                }
                .string(value)?,
            )),
            _ => return Err(unknown_field(SCHEMA_OR_STRING_ARRAY, tag, &value)),
        }
    }
    Ok(if property.is_empty() {
        found.unwrap_or(Value::Null)
    } else {
        Value::Array(property)
    })
}
