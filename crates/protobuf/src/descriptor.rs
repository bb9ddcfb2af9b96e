//! The shape of the descriptor table: what a protobuf message looks like on the wire and how
//! each of its fields maps onto the Kubernetes JSON form. The table itself is generated:
//! `generated_table.rs`, written by `tools/gen_table.py`.

/// One protobuf message type.
#[derive(Debug)]
pub(crate) struct MessageDesc {
    /// Full protobuf name, used in error messages (e.g. `k8s.io.api.core.v1.Container`).
    pub name: &'static str,
    pub fields: &'static [FieldDesc],
}

impl MessageDesc {
    pub(crate) fn field(&self, tag: u32) -> Option<&FieldDesc> {
        self.fields.iter().find(|f| f.tag == tag)
    }
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct FieldDesc {
    pub tag: u32,
    /// JSON member name; empty for [`FieldType::Inline`].
    pub json: &'static str,
    pub ty: FieldType,
    pub repeated: bool,
    /// Go writes every non-pointer field on the wire, zero or not, but its JSON encoder drops
    /// zero values of `omitempty` scalars. Set for exactly those fields so that the decoded
    /// JSON matches what the same client would have sent as JSON.
    pub omit_zero: bool,
}

impl FieldDesc {
    pub(crate) const fn new(tag: u32, json: &'static str, ty: FieldType) -> Self {
        Self {
            tag,
            json,
            ty,
            repeated: false,
            omit_zero: false,
        }
    }

    pub(crate) const fn repeated(self) -> Self {
        Self {
            repeated: true,
            ..self
        }
    }

    pub(crate) const fn omit_zero(self) -> Self {
        Self {
            omit_zero: true,
            ..self
        }
    }
}

/// How a field is encoded and what JSON it becomes.
#[derive(Debug)]
pub(crate) enum FieldType {
    String,
    /// `bytes`, rendered base64 (standard alphabet, padded) like Go's `[]byte`.
    Bytes,
    Int32,
    Int64,
    Bool,
    /// `double` (fixed64) -> JSON number, written like Go's encoder: integral values in the
    /// exactly representable range as integers (`1`, not `1.0`).
    Double,
    /// A nested message, rendered as a JSON object (`{}` when empty).
    Message(&'static MessageDesc),
    /// An embedded Go struct with `json:",inline"`: a nested message on the wire whose fields
    /// land in the enclosing JSON object.
    Inline(&'static MessageDesc),
    /// `map<string, V>`: repeated entry messages (1: key, 2: value), rendered as a JSON object.
    Map(&'static FieldType),
    /// `resource.Quantity` (1: string) -> JSON string.
    Quantity,
    /// `intstr.IntOrString` (1: type, 2: intVal, 3: strVal) -> JSON number or string.
    IntOrString,
    /// `metav1.Time` (1: seconds, 2: nanos) -> RFC 3339 string, or null for Go's zero time.
    Time,
    /// `metav1.MicroTime` (1: seconds, 2: nanos) -> RFC 3339 string with six fractional
    /// digits, or null for Go's zero time.
    MicroTime,
    /// `metav1.FieldsV1` (1: raw JSON bytes) -> the JSON value itself.
    FieldsV1,
    /// `runtime.RawExtension` (1: raw bytes) -> the embedded object, when the bytes are JSON
    /// (a protobuf-encoded embedded object is refused, not guessed at).
    RawExtension,
    /// A Go named `[]string` wrapped in a message (1: repeated string), e.g. `ExtraValue`.
    StringList,
    /// apiextensions `JSON` (1: raw JSON bytes) -> the JSON value itself; no bytes is null.
    Json,
    /// apiextensions `JSONSchemaPropsOrArray` (1: schema, 2: repeated schemas) -> the array of
    /// schemas when there is one, else the schema (null without one).
    SchemaOrArray(&'static MessageDesc),
    /// apiextensions `JSONSchemaPropsOrBool` (1: allows, 2: schema) -> the schema when there
    /// is one, else `allows` as a JSON boolean.
    SchemaOrBool(&'static MessageDesc),
    /// apiextensions `JSONSchemaPropsOrStringArray` (1: schema, 2: repeated property) -> the
    /// strings when there are any, else the schema (null without one).
    SchemaOrStringArray(&'static MessageDesc),
}
