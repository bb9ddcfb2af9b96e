//! Parsing an `openAPIV3Schema` into the structural tree ([`Node`]) and the value-validation-only
//! trees under `allOf`/`anyOf`/`oneOf`/`not` ([`Nested`]), reporting every way the schema breaks
//! the CRD rules (structural schema, forbidden keywords, list/map extensions, root metadata,
//! defaults) as field errors at their path within the CRD.

use std::collections::BTreeMap;

use flotilla_apimachinery::Cause;
use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::value::{
    field, forbidden, index, invalid, not_supported, prop_path, quote, render, required,
};

pub(crate) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
pub(crate) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
pub(crate) const EMBEDDED: &str = "x-kubernetes-embedded-resource";
pub(crate) const LIST_TYPE: &str = "x-kubernetes-list-type";
pub(crate) const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
pub(crate) const MAP_TYPE: &str = "x-kubernetes-map-type";

/// Keys every object root (and embedded resource) carries outside the schema's control.
pub(crate) const META_KEYS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// JSON-Schema keywords CRDs do not support.
const UNSUPPORTED: [&str; 7] = [
    "$ref",
    "$schema",
    "id",
    "definitions",
    "dependencies",
    "patternProperties",
    "additionalItems",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            "object" => Ty::Object,
            "array" => Ty::Array,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::String => "string",
            Ty::Integer => "integer",
            Ty::Number => "number",
            Ty::Boolean => "boolean",
            Ty::Object => "object",
            Ty::Array => "array",
        }
    }

    pub(crate) fn matches(self, v: &Value) -> bool {
        match self {
            Ty::String => v.is_string(),
            Ty::Integer => crate::value::is_integer(v),
            Ty::Number => v.is_number(),
            Ty::Boolean => v.is_boolean(),
            Ty::Object => v.is_object(),
            Ty::Array => v.is_array(),
        }
    }

    fn is_scalar(self) -> bool {
        !matches!(self, Ty::Object | Ty::Array)
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) enum Additional {
    /// Absent or `false`: undeclared keys are unknown.
    #[default]
    None,
    /// `true`: any key, any value.
    Any,
    Schema(Box<Node>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map,
}

/// A node of the structural schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct Node {
    pub ty: Option<Ty>,
    pub nullable: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub preserve_unknown: bool,
    pub int_or_string: bool,
    pub embedded: bool,
    pub list_type: Option<ListType>,
    pub list_map_keys: Vec<String>,
    pub map_type_atomic: bool,
    pub default: Option<Value>,
    pub checks: Checks,
}

impl Node {
    fn is_scalar(&self) -> bool {
        self.int_or_string || self.ty.is_some_and(Ty::is_scalar)
    }
}

/// A bound with its `exclusive*` flag.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub limit: Number,
    pub exclusive: bool,
}

/// Value validations: what constrains a value beyond its type.
#[derive(Clone, Debug, Default)]
pub(crate) struct Checks {
    pub enum_values: Option<Vec<Value>>,
    pub required: Vec<String>,
    pub maximum: Option<Bound>,
    pub minimum: Option<Bound>,
    pub multiple_of: Option<Number>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub pattern: Option<(String, Regex)>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    pub format: Option<String>,
    pub all_of: Vec<Nested>,
    pub any_of: Vec<Nested>,
    pub one_of: Vec<Nested>,
    pub not: Option<Box<Nested>>,
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not`: value validations only. `ty` is only ever set
/// for the `anyOf: [{type: integer}, {type: string}]` spelling of int-or-string.
#[derive(Clone, Debug, Default)]
pub(crate) struct Nested {
    pub ty: Option<Ty>,
    pub checks: Checks,
    pub properties: BTreeMap<String, Nested>,
    pub items: Option<Box<Nested>>,
    pub additional: Option<Box<Nested>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Root,
    Field,
    Item,
}

/// Where a nested schema sits relative to an int-or-string node: kube allows
/// `anyOf: [{type: integer}, {type: string}]` there, directly or under `allOf`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IntOrStringCtx {
    None,
    Node,
    AllOf,
    TypeAllowed,
}

#[derive(Default)]
pub(crate) struct Parser {
    pub errors: Vec<Cause>,
}

pub(crate) fn obj_path(path: &str, key: &str) -> String {
    field(path, key)
}

impl Parser {
    pub(crate) fn push(&mut self, c: Cause) {
        self.errors.push(c);
    }

    fn unsupported_keywords(&mut self, obj: &Map<String, Value>, path: &str) {
        for kw in UNSUPPORTED {
            if obj.contains_key(kw) {
                self.push(forbidden(
                    &obj_path(path, kw),
                    &format!("{kw} is not supported"),
                ));
            }
        }
    }

    fn get_bool(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<bool> {
        match obj.get(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                self.push(invalid(
                    &obj_path(path, key),
                    &render(other),
                    "must be a boolean",
                ));
                None
            }
        }
    }

    fn get_string(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match obj.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.push(invalid(
                    &obj_path(path, key),
                    &render(other),
                    "must be a string",
                ));
                None
            }
        }
    }

    fn get_number(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<Number> {
        match obj.get(key)? {
            Value::Number(n) => Some(n.clone()),
            other => {
                self.push(invalid(
                    &obj_path(path, key),
                    &render(other),
                    "must be a number",
                ));
                None
            }
        }
    }

    fn get_count(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<u64> {
        let v = obj.get(key)?;
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                self.push(invalid(
                    &obj_path(path, key),
                    &render(v),
                    "must be a non-negative integer",
                ));
                None
            }
        }
    }

    fn get_strings(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Vec<String> {
        let Some(v) = obj.get(key) else {
            return Vec::new();
        };
        match v.as_array() {
            Some(items) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            _ => {
                self.push(invalid(
                    &obj_path(path, key),
                    &render(v),
                    "must be a list of strings",
                ));
                Vec::new()
            }
        }
    }

    /// Parses a structural node at `path`.
    pub(crate) fn node(&mut self, schema: &Value, path: &str, level: Level) -> Node {
        let Some(obj) = schema.as_object() else {
            self.push(invalid(path, &render(schema), "must be a schema object"));
            return Node::default();
        };
        self.unsupported_keywords(obj, path);

        let type_path = obj_path(path, "type");
        let type_present = obj.contains_key("type");
        let ty = match obj.get("type") {
            None => None,
            Some(Value::String(s)) => match Ty::parse(s) {
                Some(t) => Some(t),
                None => {
                    let supported =
                        ["array", "boolean", "integer", "number", "object", "string"].map(quote);
                    self.push(not_supported(&type_path, &quote(s), &supported));
                    None
                }
            },
            Some(other) => {
                self.push(invalid(&type_path, &render(other), "must be a string"));
                None
            }
        };
        let nullable = self.get_bool(obj, "nullable", path).unwrap_or(false);
        let preserve_unknown = match self.get_bool(obj, PRESERVE, path) {
            Some(false) => {
                self.push(invalid(
                    &obj_path(path, PRESERVE),
                    "false",
                    "must be true or undefined",
                ));
                false
            }
            other => other.unwrap_or(false),
        };
        let int_or_string = self.get_bool(obj, INT_OR_STRING, path).unwrap_or(false);
        let embedded = self.get_bool(obj, EMBEDDED, path).unwrap_or(false);

        // Structural: a type everywhere, except where the extensions say what the value is.
        if !type_present && !int_or_string && !preserve_unknown {
            let detail = match level {
                Level::Root => "must not be empty at the root",
                Level::Field => "must not be empty for specified object fields",
                Level::Item => "must not be empty for specified array items",
            };
            self.push(required(&type_path, detail));
        }
        if int_or_string && type_present {
            let shown = obj.get("type").map(render).unwrap_or_default();
            self.push(invalid(
                &type_path,
                &shown,
                "must be empty if x-kubernetes-int-or-string is true",
            ));
        }
        if level == Level::Root
            && let Some(t) = ty
            && t != Ty::Object
        {
            self.push(invalid(
                &type_path,
                &quote(t.name()),
                "must be object at the root",
            ));
        }
        if embedded && ty != Some(Ty::Object) {
            let detail = "must be object if x-kubernetes-embedded-resource is true";
            match ty {
                None if !type_present => self.push(required(&type_path, detail)),
                Some(t) => self.push(invalid(&type_path, &quote(t.name()), detail)),
                None => {}
            }
        }
        if embedded && int_or_string {
            self.push(forbidden(
                &obj_path(path, EMBEDDED),
                "must be false if x-kubernetes-int-or-string is true",
            ));
        }

        let mut properties = BTreeMap::new();
        match obj.get("properties") {
            None => {}
            Some(Value::Object(props)) => {
                for (name, sub) in props {
                    let sub_node = self.node(sub, &prop_path(path, name), Level::Field);
                    properties.insert(name.clone(), sub_node);
                }
            }
            Some(other) => self.push(invalid(
                &obj_path(path, "properties"),
                &render(other),
                "must be an object of schemas",
            )),
        }

        let add_path = obj_path(path, "additionalProperties");
        let exclusive = "additionalProperties and properties are mutual exclusive";
        let additional = match obj.get("additionalProperties") {
            None => Additional::None,
            Some(Value::Bool(true)) => Additional::Any,
            Some(Value::Bool(false)) => {
                if !properties.is_empty() {
                    self.push(forbidden(&add_path, exclusive));
                }
                Additional::None
            }
            Some(sub @ Value::Object(_)) => {
                if !properties.is_empty() {
                    self.push(forbidden(&add_path, exclusive));
                }
                Additional::Schema(Box::new(self.node(sub, &add_path, Level::Field)))
            }
            Some(other) => {
                self.push(invalid(
                    &add_path,
                    &render(other),
                    "must be a boolean or a schema",
                ));
                Additional::None
            }
        };

        let items_path = obj_path(path, "items");
        let items = match obj.get("items") {
            None => {
                if ty == Some(Ty::Array) {
                    self.push(required(&items_path, "must be specified"));
                }
                None
            }
            Some(Value::Array(_)) => {
                self.push(forbidden(
                    &items_path,
                    "items must be a schema object and not an array",
                ));
                None
            }
            Some(sub) => Some(Box::new(self.node(sub, &items_path, Level::Item))),
        };

        let default = obj.get("default").filter(|d| !d.is_null()).cloned();
        let ctx = if int_or_string {
            IntOrStringCtx::Node
        } else {
            IntOrStringCtx::None
        };
        let checks = self.checks(obj, path, ctx);

        let mut node = Node {
            ty,
            nullable,
            properties,
            additional,
            items,
            preserve_unknown,
            int_or_string,
            embedded,
            list_type: None,
            list_map_keys: Vec::new(),
            map_type_atomic: false,
            default,
            checks,
        };
        self.list_and_map_types(obj, path, &mut node);
        self.completeness(&node, path);
        if level == Level::Root {
            self.root_rules(obj, &node, path);
        }
        node
    }

    /// `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.
    fn list_and_map_types(&mut self, obj: &Map<String, Value>, path: &str, node: &mut Node) {
        let lt_path = obj_path(path, LIST_TYPE);
        let keys_path = obj_path(path, LIST_MAP_KEYS);
        let items_path = obj_path(path, "items");
        if let Some(lt) = self.get_string(obj, LIST_TYPE, path) {
            node.list_type = match lt.as_str() {
                "atomic" => Some(ListType::Atomic),
                "set" => Some(ListType::Set),
                "map" => Some(ListType::Map),
                _ => {
                    let supported = ["atomic", "set", "map"].map(quote);
                    self.push(not_supported(&lt_path, &quote(&lt), &supported));
                    None
                }
            };
            if node.ty != Some(Ty::Array) {
                self.push(invalid(
                    &lt_path,
                    &quote(&lt),
                    "must only be used on type=array",
                ));
            }
        }
        node.list_map_keys = self.get_strings(obj, LIST_MAP_KEYS, path);
        if !node.list_map_keys.is_empty() {
            match node.list_type {
                None if !obj.contains_key(LIST_TYPE) => self.push(required(
                    &lt_path,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                Some(ListType::Atomic | ListType::Set) => self.push(invalid(
                    &keys_path,
                    &render(&Value::from(node.list_map_keys.clone())),
                    "must be empty if x-kubernetes-list-type is not map",
                )),
                _ => {}
            }
        }
        if node.list_type == Some(ListType::Map) {
            if node.list_map_keys.is_empty() {
                self.push(required(
                    &keys_path,
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match node.items.as_deref() {
                None => {}
                Some(items) if items.ty != Some(Ty::Object) => self.push(invalid(
                    &obj_path(&items_path, "type"),
                    &items
                        .ty
                        .map(|t| quote(t.name()))
                        .unwrap_or_else(|| quote("")),
                    "must be object if parent array's x-kubernetes-list-type is map",
                )),
                Some(items) => {
                    for key in &node.list_map_keys {
                        let key_path = prop_path(&items_path, key);
                        match items.properties.get(key) {
                            None => self.push(invalid(
                                &keys_path,
                                &render(&Value::from(node.list_map_keys.clone())),
                                "entries must all be names of item properties",
                            )),
                            Some(p) => {
                                if !p.is_scalar() {
                                    self.push(invalid(
                                        &obj_path(&key_path, "type"),
                                        &p.ty.map(|t| quote(t.name())).unwrap_or_else(|| quote("")),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                                if p.default.is_none() && !items.checks.required.contains(key) {
                                    self.push(required(
                                        &key_path,
                                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
        if node.list_type == Some(ListType::Set)
            && let Some(items) = node.items.as_deref()
        {
            let atomic = match items.ty {
                Some(Ty::Object) => items.map_type_atomic,
                Some(Ty::Array) => items.list_type == Some(ListType::Atomic),
                _ => true,
            };
            if !atomic {
                let key = if items.ty == Some(Ty::Object) {
                    MAP_TYPE
                } else {
                    LIST_TYPE
                };
                self.push(invalid(
                    &obj_path(&items_path, key),
                    &quote(items.ty.map_or("", Ty::name)),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
        }
        if let Some(mt) = self.get_string(obj, MAP_TYPE, path) {
            let mt_path = obj_path(path, MAP_TYPE);
            match mt.as_str() {
                "atomic" => node.map_type_atomic = true,
                "granular" => {}
                _ => {
                    let supported = ["granular", "atomic"].map(quote);
                    self.push(not_supported(&mt_path, &quote(&mt), &supported));
                }
            }
            if node.ty != Some(Ty::Object) {
                self.push(invalid(
                    &mt_path,
                    &quote(&mt),
                    "must only be used if type is object",
                ));
            }
        }
    }

    /// Value validations of a schema (structural or nested).
    fn checks(&mut self, obj: &Map<String, Value>, path: &str, ctx: IntOrStringCtx) -> Checks {
        let mut c = Checks::default();
        if let Some(v) = obj.get("enum") {
            match v.as_array() {
                Some(values) => c.enum_values = Some(values.clone()),
                None => self.push(invalid(
                    &obj_path(path, "enum"),
                    &render(v),
                    "must be a list",
                )),
            }
        }
        c.required = self.get_strings(obj, "required", path);
        let exclusive_max = self
            .get_bool(obj, "exclusiveMaximum", path)
            .unwrap_or(false);
        let exclusive_min = self
            .get_bool(obj, "exclusiveMinimum", path)
            .unwrap_or(false);
        c.maximum = self.get_number(obj, "maximum", path).map(|limit| Bound {
            limit,
            exclusive: exclusive_max,
        });
        c.minimum = self.get_number(obj, "minimum", path).map(|limit| Bound {
            limit,
            exclusive: exclusive_min,
        });
        if let Some(m) = self.get_number(obj, "multipleOf", path) {
            if m.as_f64().is_some_and(|f| f > 0.0) {
                c.multiple_of = Some(m);
            } else {
                self.push(invalid(
                    &obj_path(path, "multipleOf"),
                    &crate::value::render_number(&m),
                    "must be greater than zero",
                ));
            }
        }
        c.max_length = self.get_count(obj, "maxLength", path);
        c.min_length = self.get_count(obj, "minLength", path);
        c.max_items = self.get_count(obj, "maxItems", path);
        c.min_items = self.get_count(obj, "minItems", path);
        c.max_properties = self.get_count(obj, "maxProperties", path);
        c.min_properties = self.get_count(obj, "minProperties", path);
        if let Some(p) = self.get_string(obj, "pattern", path) {
            match Regex::new(&p) {
                Ok(re) => c.pattern = Some((p, re)),
                Err(e) => {
                    self.push(invalid(
                        &obj_path(path, "pattern"),
                        &quote(&p),
                        &format!(
                            "must be a valid regular expression, but isn't: {}",
                            regex_error_summary(&e)
                        ),
                    ));
                }
            }
        }
        if self.get_bool(obj, "uniqueItems", path) == Some(true) {
            self.push(forbidden(
                &obj_path(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ));
        }
        c.format = self.get_string(obj, "format", path);

        let any_of_ctx = match ctx {
            IntOrStringCtx::Node | IntOrStringCtx::AllOf => IntOrStringCtx::TypeAllowed,
            _ => IntOrStringCtx::None,
        };
        let all_of_ctx = if ctx == IntOrStringCtx::Node {
            IntOrStringCtx::AllOf
        } else {
            IntOrStringCtx::None
        };
        c.all_of = self.nested_list(obj, "allOf", path, all_of_ctx);
        c.any_of = self.nested_list(obj, "anyOf", path, any_of_ctx);
        c.one_of = self.nested_list(obj, "oneOf", path, IntOrStringCtx::None);
        if let Some(sub) = obj.get("not") {
            c.not = Some(Box::new(self.nested(
                sub,
                &obj_path(path, "not"),
                IntOrStringCtx::None,
            )));
        }
        c
    }

    fn nested_list(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
        ctx: IntOrStringCtx,
    ) -> Vec<Nested> {
        let Some(v) = obj.get(key) else {
            return Vec::new();
        };
        let key_path = obj_path(path, key);
        match v.as_array() {
            Some(list) => list
                .iter()
                .enumerate()
                .map(|(i, sub)| self.nested(sub, &index(&key_path, i), ctx))
                .collect(),
            None => {
                self.push(invalid(&key_path, &render(v), "must be a list of schemas"));
                Vec::new()
            }
        }
    }

    /// A schema under a logical junctor: value validations only, no structure of its own.
    fn nested(&mut self, schema: &Value, path: &str, ctx: IntOrStringCtx) -> Nested {
        let Some(obj) = schema.as_object() else {
            self.push(invalid(path, &render(schema), "must be a schema object"));
            return Nested::default();
        };
        self.unsupported_keywords(obj, path);
        let mut n = Nested::default();

        match obj.get("type") {
            None => {}
            Some(Value::String(s))
                if ctx == IntOrStringCtx::TypeAllowed && (s == "integer" || s == "string") =>
            {
                n.ty = Ty::parse(s);
            }
            Some(_) => self.push(forbidden(
                &obj_path(path, "type"),
                "must be empty to be structural",
            )),
        }
        let must = |key: &str| -> Option<&'static str> {
            let v = obj.get(key)?;
            match key {
                "nullable" | INT_OR_STRING | EMBEDDED => {
                    (v == &Value::Bool(true)).then_some("must be false to be structural")
                }
                "description" | "title" => Some("must be empty to be structural"),
                _ => Some("must be undefined to be structural"),
            }
        };
        for key in [
            "nullable",
            "default",
            "description",
            "title",
            PRESERVE,
            INT_OR_STRING,
            EMBEDDED,
            LIST_TYPE,
            LIST_MAP_KEYS,
            MAP_TYPE,
        ] {
            if let Some(detail) = must(key) {
                self.push(forbidden(&obj_path(path, key), detail));
            }
        }

        match obj.get("properties") {
            None => {}
            Some(Value::Object(props)) => {
                for (name, sub) in props {
                    let sub = self.nested(sub, &prop_path(path, name), IntOrStringCtx::None);
                    n.properties.insert(name.clone(), sub);
                }
            }
            Some(other) => self.push(invalid(
                &obj_path(path, "properties"),
                &render(other),
                "must be an object of schemas",
            )),
        }
        match obj.get("items") {
            None => {}
            Some(Value::Array(_)) => self.push(forbidden(
                &obj_path(path, "items"),
                "items must be a schema object and not an array",
            )),
            Some(sub) => {
                n.items = Some(Box::new(self.nested(
                    sub,
                    &obj_path(path, "items"),
                    IntOrStringCtx::None,
                )));
            }
        }
        match obj.get("additionalProperties") {
            None => {}
            Some(sub @ Value::Object(_)) => {
                n.additional = Some(Box::new(self.nested(
                    sub,
                    &obj_path(path, "additionalProperties"),
                    IntOrStringCtx::None,
                )));
            }
            Some(_) => self.push(forbidden(
                &obj_path(path, "additionalProperties"),
                "must be undefined to be structural",
            )),
        }
        n.checks = self.checks(obj, path, ctx);
        n
    }

    /// Every property and item that a nested schema constrains must also be declared in the
    /// structural part, or pruning would silently drop what the validation talks about.
    fn completeness(&mut self, node: &Node, path: &str) {
        let c = &node.checks;
        let groups = [
            ("allOf", &c.all_of),
            ("anyOf", &c.any_of),
            ("oneOf", &c.one_of),
        ];
        for (key, list) in groups {
            for (i, n) in list.iter().enumerate() {
                self.complete(n, &index(&obj_path(path, key), i), node, path);
            }
        }
        if let Some(n) = &c.not {
            self.complete(n, &obj_path(path, "not"), node, path);
        }
    }

    fn complete(&mut self, n: &Nested, n_path: &str, s: &Node, s_path: &str) {
        for (name, sub) in &n.properties {
            let sub_path = prop_path(n_path, name);
            if let Some(s_sub) = s.properties.get(name) {
                self.complete(sub, &sub_path, s_sub, &prop_path(s_path, name));
            } else if let Additional::Schema(a) = &s.additional {
                self.complete(sub, &sub_path, a, &obj_path(s_path, "additionalProperties"));
            } else {
                self.push(required(
                    &prop_path(s_path, name),
                    &format!("because it is defined in {sub_path}"),
                ));
            }
        }
        if let Some(items) = &n.items {
            let sub_path = obj_path(n_path, "items");
            match &s.items {
                Some(s_items) => {
                    self.complete(items, &sub_path, s_items, &obj_path(s_path, "items"))
                }
                None => self.push(required(
                    &obj_path(s_path, "items"),
                    &format!("because it is defined in {sub_path}"),
                )),
            }
        }
        if let Some(add) = &n.additional {
            let sub_path = obj_path(n_path, "additionalProperties");
            match &s.additional {
                Additional::Schema(a) => {
                    self.complete(add, &sub_path, a, &obj_path(s_path, "additionalProperties"))
                }
                _ => self.push(required(
                    &obj_path(s_path, "additionalProperties"),
                    &format!("because it is defined in {sub_path}"),
                )),
            }
        }
        let c = &n.checks;
        let groups = [
            ("allOf", &c.all_of),
            ("anyOf", &c.any_of),
            ("oneOf", &c.one_of),
        ];
        for (key, list) in groups {
            for (i, sub) in list.iter().enumerate() {
                self.complete(sub, &index(&obj_path(n_path, key), i), s, s_path);
            }
        }
        if let Some(sub) = &c.not {
            self.complete(sub, &obj_path(n_path, "not"), s, s_path);
        }
    }

    /// At the root, `apiVersion`/`kind` may only be declared as strings and `metadata` may only
    /// restrict `name` and `generateName` (the rest of ObjectMeta is the server's).
    fn root_rules(&mut self, obj: &Map<String, Value>, node: &Node, path: &str) {
        for key in ["apiVersion", "kind"] {
            if let Some(p) = node.properties.get(key)
                && p.ty != Some(Ty::String)
            {
                self.push(invalid(
                    &obj_path(&prop_path(path, key), "type"),
                    &quote(p.ty.map_or("", Ty::name)),
                    "must be string",
                ));
            }
        }
        let Some(meta) = obj
            .get("properties")
            .and_then(|p| p.get("metadata"))
            .and_then(Value::as_object)
        else {
            return;
        };
        let meta_path = prop_path(path, "metadata");
        let meta_props = meta.get("properties").and_then(Value::as_object);
        let extra_keys = meta.keys().any(|k| k != "type" && k != "properties");
        let bad_type = meta
            .get("type")
            .is_some_and(|t| t.as_str() != Some("object"));
        let extra_props =
            meta_props.is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"));
        if extra_keys || bad_type || extra_props {
            self.push(forbidden(
                &meta_path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
        let Some(meta_node) = node.properties.get("metadata") else {
            return;
        };
        for key in ["name", "generateName"] {
            if let Some(p) = meta_node.properties.get(key) {
                let key_path = prop_path(&meta_path, key);
                if p.ty != Some(Ty::String) {
                    self.push(invalid(
                        &obj_path(&key_path, "type"),
                        &quote(p.ty.map_or("", Ty::name)),
                        "must be string",
                    ));
                }
                if p.default.is_some() {
                    self.push(forbidden(
                        &obj_path(&key_path, "default"),
                        "must not be set in top-level metadata",
                    ));
                }
            }
        }
    }
}

/// The one-line gist of a regex syntax error (the crate's message spans several lines).
fn regex_error_summary(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("error: ").to_string())
        .unwrap_or(text)
}
