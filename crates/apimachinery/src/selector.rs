//! Label and field selectors: the `?labelSelector=` / `?fieldSelector=` query syntax, the
//! `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`), matching, and the
//! canonical string form (requirements sorted by key, set values sorted) that Kubernetes
//! publishes, e.g. in `Scale.status.selector`.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::names;

/// Why a selector was rejected; the message is meant for a `400 BadRequest` Status and is
/// kube-apiserver's, word for word, so kubectl prints what users know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector string the parser refuses (kube's `labels.Parse` message, including
    /// its `unable to parse requirement: ` prefix where kube has one).
    #[error("{0}")]
    Parse(String),
    /// A requirement with an invalid key, values or value count (kube's `NewRequirement`:
    /// field errors on `key`, `values`, `values[i]` and `values[i][key]`).
    #[error("{0}")]
    InvalidRequirement(String),
    /// A `metav1.LabelSelector` object of the wrong shape.
    #[error("{0}")]
    InvalidObject(String),
    /// Field selector syntax error.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidFieldSelector { selector: String, term: String },
    /// A bad escape sequence in a field selector value.
    #[error("invalid field selector value {value:?}: {reason}")]
    InvalidFieldValue { value: String, reason: String },
}

/// The operator of a label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>3` (integer label values)
    GreaterThan,
    /// `key<3` (integer label values)
    LessThan,
}

/// One label requirement such as `tier in (a,b)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated, so that display and comparison are canonical.
    values: Vec<String>,
}

impl Requirement {
    /// A validated requirement: the key must be a qualified name; `=`, `==`, `!=` take exactly
    /// one value, `in`/`notin` at least one, `>`/`<` exactly one integer, existence tests none;
    /// values must be label values. Every problem is reported, in kube's words.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut values = values;
        let mut problems = Vec::new();
        if let Err(reason) = names::is_qualified_name(key) {
            problems.push(format!("key: Invalid value: {key:?}: {reason}"));
        }
        let count =
            |detail: &str| format!("values: Invalid value: {}: {detail}", go_strings(&values));
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                problems.push(count(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                problems.push(count("exact-match compatibility requires one single value"));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                problems.push(count(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    problems.push(count(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        problems.push(format!(
                            "values[{i}]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            if let Err(reason) = names::is_label_value(v) {
                problems.push(format!(
                    "values[{i}][{key}]: Invalid value: {v:?}: {reason}"
                ));
            }
        }
        if let Some(message) = aggregate(problems) {
            return Err(SelectorError::InvalidRequirement(message));
        }
        values.sort();
        values.dedup();
        Ok(Self {
            key: key.to_string(),
            operator,
            values,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }
    pub fn operator(&self) -> Operator {
        self.operator
    }
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set satisfies this requirement. Negative operators (`!=`, `notin`,
    /// `!key`) are satisfied by objects that do not have the label at all.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        // Label values are strings once validated; anything else is treated as absent.
        self.matches_lookup(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// [`Requirement::matches`] over labels held in another form: `get` returns a label's
    /// value.
    pub fn matches_lookup<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = get(&self.key);
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(has),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(has),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl Operator {
    fn symbol(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        let first = self.values.first().map(String::as_str).unwrap_or("");
        match self.operator {
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                write!(f, "{key}{}{first}", self.operator.symbol())
            }
            Operator::GreaterThan | Operator::LessThan => {
                write!(f, "{key}{}{first}", self.operator.symbol())
            }
            Operator::In | Operator::NotIn => {
                write!(
                    f,
                    "{key} {} ({})",
                    self.operator.symbol(),
                    self.values.join(",")
                )
            }
        }
    }
}

/// A label selector: a conjunction of requirements. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// Sorted by key (stable), the canonical order.
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector from already validated requirements.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// Parses the query syntax: comma-separated `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
    /// `a notin (x)`, `a`, `!a`, `a>1`, `a<1`; whitespace between tokens is ignored.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        Parser::new(s).parse()
    }

    /// Converts a `metav1.LabelSelector` JSON object (`matchLabels`, `matchExpressions` with
    /// `In`/`NotIn`/`Exists`/`DoesNotExist`). `{}` matches everything. A missing (null)
    /// selector is not accepted here: whether it means "everything" or "nothing" depends on
    /// the field, so callers decide before calling.
    pub fn from_object(obj: &Value) -> Result<Self, SelectorError> {
        let Some(obj) = obj.as_object() else {
            return Err(SelectorError::InvalidObject(
                "a label selector must be an object".to_string(),
            ));
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (k, v) in labels {
                    let Some(v) = v.as_str() else {
                        return Err(SelectorError::InvalidObject(format!(
                            "matchLabels[{k:?}] must be a string"
                        )));
                    };
                    requirements.push(Requirement::new(k, Operator::Equals, vec![v.to_string()])?);
                }
            }
            Some(_) => {
                return Err(SelectorError::InvalidObject(
                    "matchLabels must be an object".to_string(),
                ));
            }
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, expr) in exprs.iter().enumerate() {
                    requirements.push(expression_requirement(i, expr)?);
                }
            }
            Some(_) => {
                return Err(SelectorError::InvalidObject(
                    "matchExpressions must be a list".to_string(),
                ));
            }
        }
        Ok(Self::from_requirements(requirements))
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector matches every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these labels (`metadata.labels`, possibly absent) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// [`LabelSelector::matches`] over labels held in another form: `get` returns a label's
    /// value.
    pub fn matches_lookup<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_lookup(&get))
    }
}

fn expression_requirement(index: usize, expr: &Value) -> Result<Requirement, SelectorError> {
    let invalid =
        |what: &str| SelectorError::InvalidObject(format!("matchExpressions[{index}]: {what}"));
    let key = expr
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("key must be a string"))?;
    let operator = expr
        .get("operator")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("operator must be a string"))?;
    let values = match expr.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| invalid("values must be strings"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(invalid("values must be a list")),
    };
    let op = match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::InvalidObject(format!(
                "{other:?} is not a valid label selector operator"
            )));
        }
    };
    Requirement::new(key, op, values)
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A token of the label selector syntax and the text it was read from (kube's error messages
/// quote that text: `found '=', expected: ...`; the end of the string is `''`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `in` and `notin`: operators after a key, plain words where a value or key is expected.
    In,
    NotIn,
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
    End,
}

impl Token {
    fn text(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Not => "!",
            Token::Eq => "=",
            Token::DoubleEq => "==",
            Token::NotEq => "!=",
            Token::Gt => ">",
            Token::Lt => "<",
            Token::Comma => ",",
            Token::Open => "(",
            Token::Close => ")",
            Token::End => "",
        }
    }

    /// The token where a key or a value is expected: `in` and `notin` are words there
    /// (`in in (in)` is a valid requirement on the key `in`).
    fn as_word(&self) -> Token {
        match self {
            Token::In | Token::NotIn => Token::Ident(self.text().to_string()),
            other => other.clone(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '>' | '<' | ',' | '(' | ')')
}

/// The separators between tokens (kube's lexer: space, tab, CR and LF only).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn lex(s: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if is_blank(c) {
            chars.next();
            continue;
        }
        if is_special(c) {
            chars.next();
            // `!=` and `==` are the only two-symbol operators; any other pair is two tokens.
            let next_is_eq = chars.peek() == Some(&'=');
            let tok = match c {
                '!' if next_is_eq => {
                    chars.next();
                    Token::NotEq
                }
                '!' => Token::Not,
                '=' if next_is_eq => {
                    chars.next();
                    Token::DoubleEq
                }
                '=' => Token::Eq,
                '>' => Token::Gt,
                '<' => Token::Lt,
                ',' => Token::Comma,
                '(' => Token::Open,
                _ => Token::Close,
            };
            tokens.push(tok);
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if is_blank(c) || is_special(c) {
                break;
            }
            word.push(c);
            chars.next();
        }
        tokens.push(match word.as_str() {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Ident(word),
        });
    }
    tokens.push(Token::End);
    tokens
}

/// The label selector grammar as kube's parser reads it, with its error messages:
///
/// ```text
/// selector    := "" | requirement ("," requirement)*
/// requirement := ["!"] KEY [ ("in" | "notin") "(" values ")" | ("=" | "==" | "!=" | ">" | "<") [VALUE] ]
/// ```
struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

fn found(token: &Token, expected: &str) -> String {
    format!("found '{}', expected: {expected}", token.text())
}

impl Parser {
    fn new(s: &str) -> Self {
        Self {
            tokens: lex(s),
            pos: 0,
        }
    }

    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }

    /// The next token where a key or value is expected.
    fn peek_word(&self) -> Token {
        self.peek().as_word()
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn next_word(&mut self) -> Token {
        self.next().as_word()
    }

    fn parse(mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            match self.peek_word() {
                Token::Ident(_) | Token::Not => {
                    let r = self.requirement().map_err(|e| {
                        SelectorError::Parse(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(r);
                    match self.next_word() {
                        Token::End => break,
                        Token::Comma => match self.peek_word() {
                            Token::Ident(_) | Token::Not => {}
                            other => {
                                return Err(SelectorError::Parse(found(
                                    &other,
                                    "identifier after ','",
                                )));
                            }
                        },
                        other => {
                            return Err(SelectorError::Parse(found(
                                &other,
                                "',' or 'end of string'",
                            )));
                        }
                    }
                }
                Token::End => break,
                other => {
                    return Err(SelectorError::Parse(found(
                        &other,
                        "!, identifier, or 'end of string'",
                    )));
                }
            }
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// One requirement; the error is the text after `unable to parse requirement: `.
    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut token = self.next_word();
        let negated = token == Token::Not;
        if negated {
            token = self.next_word();
        }
        let Token::Ident(key) = token else {
            return Err(found(&token, "identifier"));
        };
        // The key is checked before anything after it, with no field path (kube prints
        // `<nil>` for it).
        if let Err(reason) = names::is_qualified_name(&key) {
            return Err(format!("<nil>: Invalid value: {key:?}: {reason}"));
        }
        let unary = if negated {
            Some(Operator::DoesNotExist)
        } else if matches!(self.peek_word(), Token::End | Token::Comma) {
            Some(Operator::Exists)
        } else {
            None
        };
        if let Some(op) = unary {
            return Requirement::new(&key, op, Vec::new()).map_err(|e| e.to_string());
        }
        let op = match self.next() {
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::Eq => Operator::Equals,
            Token::DoubleEq => Operator::DoubleEquals,
            Token::NotEq => Operator::NotEquals,
            Token::Gt => Operator::GreaterThan,
            Token::Lt => Operator::LessThan,
            other => return Err(found(&other, "in, notin, =, ==, !=, gt, lt")),
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.single_value()?],
        };
        Requirement::new(&key, op, values).map_err(|e| e.to_string())
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; none (`a=` before `,` or the end) is the
    /// empty string.
    fn single_value(&mut self) -> Result<String, String> {
        if matches!(self.peek_word(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.next_word() {
            Token::Ident(v) => Ok(v),
            other => Err(found(&other, "identifier")),
        }
    }

    /// `( v1, v2, ... )`, sorted and deduplicated; empty entries (`(a,)`, `(,)`) are the
    /// empty string, and so is `()`.
    fn value_set(&mut self) -> Result<Vec<String>, String> {
        let open = self.next_word();
        if open != Token::Open {
            // kube's message has no comma here.
            return Err(format!("found '{}' expected: '('", open.text()));
        }
        let mut values = BTreeSet::new();
        match self.peek_word() {
            Token::Close => {
                self.next();
                values.insert(String::new());
                return Ok(values.into_iter().collect());
            }
            Token::Ident(_) | Token::Comma => {}
            other => return Err(found(&other, "',', ')' or identifier")),
        }
        loop {
            match self.next_word() {
                Token::Ident(v) => {
                    values.insert(v);
                    match self.peek_word() {
                        Token::Comma => {}
                        Token::Close => break,
                        other => return Err(found(&other, "',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek_word() {
                        Token::Close => {
                            values.insert(String::new());
                            break;
                        }
                        Token::Comma => {
                            self.next();
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                other => return Err(found(&other, "',', or identifier")),
            }
        }
        // The closing parenthesis the loop stopped before.
        self.next();
        Ok(values.into_iter().collect())
    }
}

/// Go's `%#v` of a `[]string`, as kube's field errors print a list of values.
fn go_strings(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string{}".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Several problems as one message, as kube aggregates errors: one alone as it is, more in
/// brackets, each message once.
fn aggregate(problems: Vec<String>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for p in problems {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// The operator of a field requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value`
    Equals,
    /// `field==value`
    DoubleEquals,
    /// `field!=value`
    NotEquals,
}

/// One field requirement such as `status.phase!=Running`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    /// Unescaped value.
    pub value: String,
}

impl FieldRequirement {
    /// A missing field compares as the empty string, as in Kubernetes.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals | FieldOperator::DoubleEquals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.operator == FieldOperator::NotEquals {
            "!="
        } else {
            "="
        };
        // A field ending in `!` before `=` would read back as `!=`: a space keeps them apart
        // (parsing trims it).
        let gap = if op == "=" && self.field.ends_with('!') {
            " "
        } else {
            ""
        };
        write!(
            f,
            "{}{gap}{op}{}",
            self.field,
            escape_field_value(&self.value)
        )
    }
}

/// A field selector: a conjunction of equality tests on named fields. Which field names a
/// kind supports is for the server to check ([`FieldSelector::requirements`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses `a=b`, `a==b`, `a!=b` terms separated by commas. In values, `\,`, `\=` and
    /// `\\` stand for a literal comma, equals sign and backslash.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for term in split_unescaped(s, ',') {
            if term.trim().is_empty() {
                continue;
            }
            let Some((field, operator, raw_value)) = split_term(term) else {
                return Err(SelectorError::InvalidFieldSelector {
                    selector: s.to_string(),
                    term: term.to_string(),
                });
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(SelectorError::InvalidFieldSelector {
                    selector: s.to_string(),
                    term: term.to_string(),
                });
            }
            let value = unescape_field_value(raw_value.trim())?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(Self { requirements })
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object matches; `get` returns the object's value for a field name.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(get(&r.field).as_deref()))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Splits on `sep` where it is not preceded by an escaping backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Finds the first operator of a term (`!=`, `==`, then `=`), as kube does: escapes belong to
/// values only, so a backslash before the operator is part of the field name (`a\=b` is field
/// `a\`). Honouring it there made a field name ending in a backslash print as a term without
/// an operator (found by the `field_selector` fuzz target).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    let bytes = term.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&term[..i], FieldOperator::NotEquals, &term[i + 2..]));
            }
            b'=' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&term[..i], FieldOperator::DoubleEquals, &term[i + 2..]));
            }
            b'=' => return Some((&term[..i], FieldOperator::Equals, &term[i + 1..])),
            _ => {}
        }
    }
    None
}

fn unescape_field_value(s: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if c == ',' || c == '=' {
                return Err(SelectorError::InvalidFieldValue {
                    value: s.to_string(),
                    reason: format!("unescaped '{c}'"),
                });
            }
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e @ ('\\' | ',' | '=')) => out.push(e),
            Some(e) => {
                return Err(SelectorError::InvalidFieldValue {
                    value: s.to_string(),
                    reason: format!("invalid escape sequence '\\{e}'"),
                });
            }
            None => {
                return Err(SelectorError::InvalidFieldValue {
                    value: s.to_string(),
                    reason: "trailing backslash".to_string(),
                });
            }
        }
    }
    Ok(out)
}

fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn parse_all_operators_and_canonical_form() {
        let s = LabelSelector::parse(
            "tier in (b, a), app=web,env!=prod , !canary,version, zone notin (x), n>3, m<10, k==v",
        )
        .unwrap();
        assert_eq!(s.requirements().len(), 9);
        assert_eq!(
            s.to_string(),
            "app=web,!canary,env!=prod,k==v,m<10,n>3,tier in (a,b),version,zone notin (x)"
        );
        // The canonical form parses back to the same selector.
        assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn parse_empty_and_empty_values() {
        assert!(LabelSelector::parse("").unwrap().is_empty());
        assert!(LabelSelector::parse("   ").unwrap().is_empty());
        let s = LabelSelector::parse("a=,b in (x,)").unwrap();
        assert_eq!(s.to_string(), "a=,b in (,x)");
        assert!(s.matches(Some(&labels(json!({"a": "", "b": ""})))));
    }

    /// Found by the `label_selector` fuzz target: `(,)` parsed to the empty value but printed
    /// as `()`, which did not parse. kube reads `()` as the set of the empty string.
    #[test]
    fn empty_parentheses_are_the_empty_value_and_print_back() {
        for text in ["a in ()", "a in (,)", "a in ( , )", "a notin (,),k>2"] {
            let s = LabelSelector::parse(text).unwrap();
            assert_eq!(s.requirements()[0].values(), [""], "{text}");
            assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s, "{text}");
        }
        let s = LabelSelector::parse("a in ()").unwrap();
        assert_eq!(s.to_string(), "a in ()");
        assert!(s.matches(Some(&labels(json!({"a": ""})))));
        assert!(!s.matches(Some(&labels(json!({"a": "x"})))));
        assert!(!s.matches(Some(&labels(json!({})))));
        assert!(LabelSelector::parse("a notin ()").unwrap().matches(None));
    }

    /// Each message is kube-apiserver's for the same selector (its `labels.Parse`), as
    /// kubectl prints it after `Error from server (BadRequest): `.
    #[test]
    fn parse_errors_are_kubes() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
        let key_msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let cases: &[(&str, String)] = &[
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("a=b=c", "found '=', expected: ',' or 'end of string'".into()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
            ("!a=b", "found '=', expected: ',' or 'end of string'".into()),
            ("a in b", "unable to parse requirement: found 'b' expected: '('".into()),
            ("a notin", "unable to parse requirement: found '' expected: '('".into()),
            ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier".into()),
            ("a in (b,", "unable to parse requirement: found '', expected: ',', or identifier".into()),
            ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'".into()),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            (",a", "found ',', expected: !, identifier, or 'end of string'".into()),
            ("a=b,", "found '', expected: identifier after ','".into()),
            ("a,=b", "found '=', expected: identifier after ','".into()),
            ("a=(b)", "unable to parse requirement: found '(', expected: identifier".into()),
            ("A B=c", "unable to parse requirement: found 'B', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("-a=b", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {key_msg}")),
            ("a=-b", format!("unable to parse requirement: values[0][a]: Invalid value: \"-b\": {value_msg}")),
            ("a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("a>-x", format!("unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"-x\": {value_msg}]")),
        ];
        for (selector, want) in cases {
            assert_eq!(&err(selector), want, "{selector:?}");
        }
        // `in` and `notin` are words where a key or a value is expected.
        let s = LabelSelector::parse("in in (in,notin),notin=in").unwrap();
        assert_eq!(s.to_string(), "in in (in,notin),notin=in");
    }

    #[test]
    fn matching() {
        let l = labels(json!({"app": "web", "tier": "front", "n": "5"}));
        let m = |sel: &str| LabelSelector::parse(sel).unwrap().matches(Some(&l));
        assert!(m("app=web"));
        assert!(m("app==web,tier in (front,back)"));
        assert!(!m("app=db"));
        assert!(m("app!=db"));
        assert!(m("missing!=x"));
        assert!(m("missing notin (x)"));
        assert!(!m("missing in (x)"));
        assert!(!m("tier notin (front)"));
        assert!(m("app"));
        assert!(!m("!app"));
        assert!(m("!missing"));
        assert!(m("n>4,n<6"));
        assert!(!m("n>5"));
        assert!(!m("app>1"));
        assert!(!m("missing>1"));
        assert!(m(""));
        // No labels at all.
        let sel = LabelSelector::parse("a!=b,!c").unwrap();
        assert!(sel.matches(None));
        assert!(!LabelSelector::parse("a").unwrap().matches(None));
    }

    #[test]
    fn from_object_and_display() {
        let sel = LabelSelector::from_object(&json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "team", "operator": "Exists"}
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=shop,!canary,env in (dev,prod),team,tier=web,zone notin (b)"
        );
        let l = labels(json!({"app": "shop", "tier": "web", "env": "dev", "team": "x"}));
        assert!(sel.matches(Some(&l)));
        let l2 =
            labels(json!({"app": "shop", "tier": "web", "env": "dev", "team": "x", "zone": "b"}));
        assert!(!sel.matches(Some(&l2)));
        assert!(LabelSelector::from_object(&json!({})).unwrap().is_empty());
        assert_eq!(
            LabelSelector::from_object(&json!({"matchLabels": {"app": "web"}}))
                .unwrap()
                .to_string(),
            "app=web"
        );
    }

    #[test]
    fn from_object_errors() {
        let err = |v: Value| LabelSelector::from_object(&v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
            "\"Foo\" is not a valid label selector operator"
        );
        assert!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}))
                .contains("can't be empty")
        );
        assert!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}))
                .contains("must be empty")
        );
        assert!(err(json!({"matchLabels": {"a": 1}})).contains("must be a string"));
        assert!(
            err(json!({"matchLabels": {"bad key": "x"}}))
                .starts_with("key: Invalid value: \"bad key\": ")
        );
        assert!(err(json!(null)).contains("must be an object"));
        assert!(err(json!({"matchExpressions": {}})).contains("must be a list"));
    }

    #[test]
    fn field_selectors() {
        let s = FieldSelector::parse("metadata.name=web,status.phase!=Running, spec.nodeName==n1")
            .unwrap();
        assert_eq!(
            s.requirements(),
            &[
                FieldRequirement {
                    field: "metadata.name".into(),
                    operator: FieldOperator::Equals,
                    value: "web".into()
                },
                FieldRequirement {
                    field: "status.phase".into(),
                    operator: FieldOperator::NotEquals,
                    value: "Running".into()
                },
                FieldRequirement {
                    field: "spec.nodeName".into(),
                    operator: FieldOperator::DoubleEquals,
                    value: "n1".into()
                },
            ]
        );
        assert_eq!(
            s.to_string(),
            "metadata.name=web,status.phase!=Running,spec.nodeName=n1"
        );
        let get = |phase: &'static str| {
            move |f: &str| match f {
                "metadata.name" => Some("web".to_string()),
                "status.phase" => Some(phase.to_string()),
                "spec.nodeName" => Some("n1".to_string()),
                _ => None,
            }
        };
        assert!(s.matches(get("Pending")));
        assert!(!s.matches(get("Running")));
        // Missing fields compare as "".
        assert!(FieldSelector::parse("x=").unwrap().matches(|_| None));
        assert!(FieldSelector::parse("x!=a").unwrap().matches(|_| None));
        assert!(!FieldSelector::parse("x=a").unwrap().matches(|_| None));
        assert!(FieldSelector::parse("").unwrap().is_empty());
        assert!(FieldSelector::parse("a=b,").unwrap().requirements().len() == 1);
    }

    /// Found by the `field_selector` fuzz target: a field name ending in a backslash (once
    /// trailing whitespace is trimmed) printed as a term whose `=` looked escaped, and one
    /// ending in `!` printed as `!=`.
    #[test]
    fn a_backslash_before_the_operator_belongs_to_the_field() {
        for text in [
            "a\\\r=geb",
            "a\\ =b",
            "a\\=b",
            "x\\!=y,z=1",
            "met\ream\r\r\r!\r\r\r=",
            "a! =b",
        ] {
            let s = FieldSelector::parse(text).unwrap();
            let printed = s.to_string();
            assert_eq!(
                FieldSelector::parse(&printed).unwrap().to_string(),
                printed,
                "{text:?}"
            );
        }
        let s = FieldSelector::parse(r"a\=b").unwrap();
        assert_eq!(
            (
                s.requirements()[0].field.as_str(),
                s.requirements()[0].value.as_str()
            ),
            (r"a\", "b")
        );
    }

    #[test]
    fn field_selector_escapes_and_errors() {
        let s = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").unwrap();
        assert_eq!(s.requirements()[0].value, r"a,b=c\d");
        assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d");
        assert_eq!(
            FieldSelector::parse("a=b,oops").unwrap_err().to_string(),
            "invalid selector: 'a=b,oops'; can't understand 'oops'"
        );
        assert!(FieldSelector::parse("=x").is_err());
        assert!(
            FieldSelector::parse(r"a=b\x")
                .unwrap_err()
                .to_string()
                .contains("invalid escape")
        );
        assert!(
            FieldSelector::parse("a=b=c")
                .unwrap_err()
                .to_string()
                .contains("unescaped '='")
        );
    }
}
