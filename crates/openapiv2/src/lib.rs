//! OpenAPI v2 (Swagger 2.0) for clients that predate OpenAPI v3, chiefly kubectl up to 1.27,
//! which downloads `/openapi/v2` as the protobuf form of gnostic's `openapi.v2.Document` to
//! validate `apply`/`create`/`edit`, compute strategic merge patches and run `explain`.
//!
//! This crate owns two things:
//! - [`encode_document`]: a Swagger 2.0 document given as JSON -> that protobuf encoding
//!   (the messages are in [`proto`]); vendor extensions and free-form values travel as YAML
//!   text, which is how kubectl reads them back.
//! - [`definitions_from_v3`]: OpenAPI v3 component schemas -> Swagger 2.0 `definitions`,
//!   rewriting references and dropping what Swagger 2.0 (and kubectl's parser of it) cannot
//!   express.
//!
//! Building the document itself (which paths, which kinds) is the API server's business.

mod convert;
mod encode;
pub mod proto;

pub use convert::{definitions_from_v3, schema_from_v3};
pub use encode::{decode_document, document_message, encode_document};

/// Why a JSON document could not be encoded.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OpenApiV2Error {
    /// A member has the wrong JSON type (`path` is a JSON pointer into the document).
    #[error("{path}: expected {expected}")]
    Shape {
        path: String,
        expected: &'static str,
    },
    /// A parameter's `in` is none of body, query, path, header, formData.
    #[error("{path}: unknown parameter location {location:?}")]
    ParameterLocation { path: String, location: String },
    /// A free-form value could not be written as YAML.
    #[error("{path}: cannot write value as YAML: {message}")]
    Yaml { path: String, message: String },
    /// Bytes that are not an `openapi.v2.Document`.
    #[error("not an OpenAPI v2 protobuf document: {0}")]
    Decode(String),
    /// Schemas nest deeper than any real document does; refused rather than risking the stack.
    #[error("{path}: nested deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
}
