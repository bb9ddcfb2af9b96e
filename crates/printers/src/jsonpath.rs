//! The JSONPath dialect of CRD `additionalPrinterColumns` (and `kubectl -o jsonpath`): field
//! access (`.spec.replicas`, `['app.kubernetes.io/name']`, `.labels.app\.kubernetes\.io/name`),
//! wildcards (`[*]`, `.*`), indices and slices (`[0]`, `[-1]`, `[1:3]`), unions (`[0,2]`,
//! `['a','b']`), recursive descent (`..name`) and filters (`[?(@.type=="Ready")]`,
//! `[?(@.ready)]`, `[?(@.count > 2)]`). Missing keys yield no result rather than an error,
//! as for printer columns.

use std::cmp::Ordering;

use serde_json::Value;

use crate::PrinterError;

/// A parsed JSONPath, evaluated many times (once per row).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    /// `.name` or `['name']`
    Field(String),
    /// `['a','b']`
    Fields(Vec<String>),
    /// `.*` or `[*]`
    Wildcard,
    /// `..` (the node and all its descendants; the next segment applies to each)
    Descendants,
    /// `[0,2,-1]`
    Indices(Vec<i64>),
    /// `[start:end:step]`
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// `[?(...)]`
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    /// `None` is an existence test.
    comparison: Option<(CmpOp, Operand)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    /// `@.a.b` relative to the filtered element
    Current(Vec<Segment>),
    Literal(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl JsonPath {
    /// The field names the path starts with (`["status", "conditions"]` for
    /// `.status.conditions[?(@.type=="Ready")].status`): everything it selects lies under
    /// them. Empty when it starts otherwise (`..name`, `[*]`) and may select anything.
    pub fn leading_fields(&self) -> Vec<String> {
        self.segments
            .iter()
            .map_while(|s| match s {
                Segment::Field(name) => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// Parses a path such as `.status.conditions[?(@.type=="Ready")].status`. Surrounding
    /// `{...}` (template form) and a leading `$` are accepted.
    pub fn parse(path: &str) -> Result<Self, PrinterError> {
        let trimmed = path.trim();
        let inner = match trimmed.strip_prefix('{') {
            Some(rest) => rest
                .strip_suffix('}')
                .ok_or_else(|| invalid(path, "unclosed '{'"))?,
            None => trimmed,
        };
        let mut p = PathParser {
            chars: inner.chars().collect(),
            pos: 0,
            original: path,
        };
        p.skip_ws();
        if p.peek() == Some('$') {
            p.pos += 1;
        }
        let segments = p.segments(false)?;
        p.skip_ws();
        if let Some(c) = p.peek() {
            return Err(p.error(&format!("unexpected '{c}'")));
        }
        if segments.is_empty() && !inner.trim().is_empty() && inner.trim() != "$" {
            return Err(invalid(path, "expected a path starting with '.' or '['"));
        }
        Ok(Self { segments })
    }

    /// Every value the path selects, in document order.
    pub fn eval<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        apply(&self.segments, vec![root])
    }
}

fn invalid(path: &str, reason: &str) -> PrinterError {
    PrinterError::InvalidJsonPath {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

struct PathParser<'s> {
    chars: Vec<char>,
    pos: usize,
    original: &'s str,
}

impl PathParser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }
    fn error(&self, reason: &str) -> PrinterError {
        invalid(self.original, &format!("{reason} at position {}", self.pos))
    }
    fn expect(&mut self, c: char) -> Result<(), PrinterError> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{c}'")))
        }
    }

    /// Segments until the end, or (inside a filter) until an operator or `)`.
    fn segments(&mut self, in_filter: bool) -> Result<Vec<Segment>, PrinterError> {
        let mut segments = Vec::new();
        loop {
            match self.peek() {
                Some('.') => {
                    self.pos += 1;
                    if self.peek() == Some('.') {
                        self.pos += 1;
                        segments.push(Segment::Descendants);
                        if self.peek() == Some('[') {
                            continue;
                        }
                    }
                    if self.peek() == Some('*') {
                        self.pos += 1;
                        segments.push(Segment::Wildcard);
                        continue;
                    }
                    let name = self.field_name()?;
                    if name.is_empty() {
                        return Err(self.error("empty field name"));
                    }
                    segments.push(Segment::Field(name));
                }
                Some('[') => {
                    self.pos += 1;
                    segments.push(self.bracket()?);
                }
                _ => return Ok(segments),
            }
            if in_filter {
                // Whitespace ends a relative path inside a filter (before an operator).
                if self.peek().is_some_and(char::is_whitespace) {
                    return Ok(segments);
                }
            }
        }
    }

    /// A dot-notation field name; `\.` is a literal dot.
    fn field_name(&mut self) -> Result<String, PrinterError> {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            match c {
                '\\' => {
                    let Some(next) = self.peek_at(1) else {
                        return Err(self.error("trailing backslash"));
                    };
                    name.push(next);
                    self.pos += 2;
                }
                '.' | '[' | ']' | '(' | ')' | '=' | '!' | '<' | '>' | ',' | '\'' | '"' | '@'
                | '&' | '|' => break,
                c if c.is_whitespace() => break,
                c => {
                    name.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(name)
    }

    fn bracket(&mut self) -> Result<Segment, PrinterError> {
        self.skip_ws();
        let seg = match self.peek() {
            Some('*') => {
                self.pos += 1;
                Segment::Wildcard
            }
            Some('?') => {
                self.pos += 1;
                self.expect('(')?;
                let filter = self.filter()?;
                self.expect(')')?;
                Segment::Filter(Box::new(filter))
            }
            Some('\'' | '"') => {
                let mut names = vec![self.quoted()?];
                loop {
                    self.skip_ws();
                    if self.peek() != Some(',') {
                        break;
                    }
                    self.pos += 1;
                    self.skip_ws();
                    names.push(self.quoted()?);
                }
                if names.len() == 1 {
                    Segment::Field(names.remove(0))
                } else {
                    Segment::Fields(names)
                }
            }
            _ => self.index_or_slice()?,
        };
        self.expect(']')?;
        Ok(seg)
    }

    fn quoted(&mut self) -> Result<String, PrinterError> {
        let Some(quote) = self.peek().filter(|c| *c == '\'' || *c == '"') else {
            return Err(self.error("expected a quoted string"));
        };
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some('\\') => {
                    let Some(next) = self.peek_at(1) else {
                        return Err(self.error("unterminated string"));
                    };
                    s.push(next);
                    self.pos += 2;
                }
                Some(c) if c == quote => {
                    self.pos += 1;
                    return Ok(s);
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn integer(&mut self) -> Result<Option<i64>, PrinterError> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<i64>()
            .map(Some)
            .map_err(|_| self.error(&format!("invalid number {text:?}")))
    }

    fn index_or_slice(&mut self) -> Result<Segment, PrinterError> {
        let first = self.integer()?;
        self.skip_ws();
        match self.peek() {
            Some(':') => {
                self.pos += 1;
                let end = self.integer()?;
                self.skip_ws();
                let step = if self.peek() == Some(':') {
                    self.pos += 1;
                    self.integer()?
                } else {
                    None
                };
                if step == Some(0) {
                    return Err(self.error("slice step cannot be zero"));
                }
                Ok(Segment::Slice(first, end, step))
            }
            _ => {
                let Some(first) = first else {
                    return Err(
                        self.error("expected an index, a slice, '*', a quoted name or a filter")
                    );
                };
                let mut indices = vec![first];
                loop {
                    self.skip_ws();
                    if self.peek() != Some(',') {
                        break;
                    }
                    self.pos += 1;
                    let Some(i) = self.integer()? else {
                        return Err(self.error("expected an index"));
                    };
                    indices.push(i);
                }
                Ok(Segment::Indices(indices))
            }
        }
    }

    fn filter(&mut self) -> Result<Filter, PrinterError> {
        let left = self.operand()?;
        self.skip_ws();
        let op = match (self.peek(), self.peek_at(1)) {
            (Some('='), Some('=')) => Some((CmpOp::Eq, 2)),
            (Some('!'), Some('=')) => Some((CmpOp::Ne, 2)),
            (Some('<'), Some('=')) => Some((CmpOp::Le, 2)),
            (Some('>'), Some('=')) => Some((CmpOp::Ge, 2)),
            (Some('<'), _) => Some((CmpOp::Lt, 1)),
            (Some('>'), _) => Some((CmpOp::Gt, 1)),
            (Some('='), _) => Some((CmpOp::Eq, 1)),
            _ => None,
        };
        let Some((op, len)) = op else {
            if !matches!(left, Operand::Current(_)) {
                return Err(self.error("a filter without a comparison must test a path under '@'"));
            }
            return Ok(Filter {
                left,
                comparison: None,
            });
        };
        self.pos += len;
        let right = self.operand()?;
        Ok(Filter {
            left,
            comparison: Some((op, right)),
        })
    }

    fn operand(&mut self) -> Result<Operand, PrinterError> {
        self.skip_ws();
        match self.peek() {
            Some('@') => {
                self.pos += 1;
                Ok(Operand::Current(self.segments(true)?))
            }
            Some('\'' | '"') => Ok(Operand::Literal(Value::String(self.quoted()?))),
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let start = self.pos;
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
                {
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(Value::is_number)
                    .map(Operand::Literal)
                    .ok_or_else(|| self.error(&format!("invalid number {text:?}")))
            }
            _ => {
                let word = self.field_name()?;
                match word.as_str() {
                    "true" => Ok(Operand::Literal(Value::Bool(true))),
                    "false" => Ok(Operand::Literal(Value::Bool(false))),
                    "null" => Ok(Operand::Literal(Value::Null)),
                    _ => {
                        Err(self
                            .error("expected '@', a quoted string, a number, true, false or null"))
                    }
                }
            }
        }
    }
}

fn apply<'a>(segments: &[Segment], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for segment in segments {
        let mut next = Vec::new();
        for node in current {
            step(segment, node, &mut next);
        }
        current = next;
    }
    current
}

fn step<'a>(segment: &Segment, node: &'a Value, out: &mut Vec<&'a Value>) {
    match segment {
        Segment::Field(name) => {
            if let Some(v) = node.as_object().and_then(|o| o.get(name)) {
                out.push(v);
            }
        }
        Segment::Fields(names) => {
            if let Some(o) = node.as_object() {
                out.extend(names.iter().filter_map(|n| o.get(n)));
            }
        }
        Segment::Wildcard => match node {
            Value::Object(o) => out.extend(o.values()),
            Value::Array(a) => out.extend(a.iter()),
            _ => {}
        },
        Segment::Descendants => descendants(node, out),
        Segment::Indices(indices) => {
            if let Some(a) = node.as_array() {
                out.extend(
                    indices
                        .iter()
                        .filter_map(|&i| resolve_index(i, a.len()).map(|i| &a[i])),
                );
            }
        }
        Segment::Slice(start, end, step) => {
            if let Some(a) = node.as_array() {
                out.extend(
                    slice_indices(a.len(), *start, *end, step.unwrap_or(1))
                        .into_iter()
                        .map(|i| &a[i]),
                );
            }
        }
        Segment::Filter(filter) => {
            if let Some(a) = node.as_array() {
                out.extend(a.iter().filter(|item| filter_matches(filter, item)));
            }
        }
    }
}

fn descendants<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(node);
    match node {
        Value::Object(o) => o.values().for_each(|v| descendants(v, out)),
        Value::Array(a) => a.iter().for_each(|v| descendants(v, out)),
        _ => {}
    }
}

fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    if (0..len).contains(&i) {
        usize::try_from(i).ok()
    } else {
        None
    }
}

fn slice_indices(len: usize, start: Option<i64>, end: Option<i64>, step: i64) -> Vec<usize> {
    let Ok(n) = i64::try_from(len) else {
        return Vec::new();
    };
    let clamp = |i: i64, lo: i64, hi: i64| {
        let i = if i < 0 { i + n } else { i };
        i.clamp(lo, hi)
    };
    let mut out = Vec::new();
    if step > 0 {
        let (mut i, end) = (
            clamp(start.unwrap_or(0), 0, n),
            clamp(end.unwrap_or(n), 0, n),
        );
        while i < end {
            out.extend(usize::try_from(i).ok());
            i += step;
        }
    } else {
        let (mut i, end) = (
            clamp(start.unwrap_or(n - 1), -1, n - 1),
            end.map_or(-1, |e| clamp(e, -1, n - 1)),
        );
        while i > end {
            out.extend(usize::try_from(i).ok());
            i += step;
        }
    }
    out
}

fn filter_matches(filter: &Filter, item: &Value) -> bool {
    let left = operand_values(&filter.left, item);
    match &filter.comparison {
        None => left
            .iter()
            .any(|v| !v.is_null() && *v != &Value::Bool(false)),
        Some((op, right)) => {
            let right = operand_values(right, item);
            let Some(r) = right.first() else { return false };
            left.iter().any(|l| compare(l, r, *op))
        }
    }
}

fn operand_values<'a>(operand: &'a Operand, item: &'a Value) -> Vec<&'a Value> {
    match operand {
        Operand::Current(segments) => apply(segments, vec![item]),
        Operand::Literal(v) => vec![v],
    }
}

fn compare(l: &Value, r: &Value, op: CmpOp) -> bool {
    let ordering = match (l, r) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => {
            return match op {
                CmpOp::Eq => l == r,
                CmpOp::Ne => l != r,
                _ => false,
            };
        }
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match op {
        CmpOp::Eq => ordering == Ordering::Equal,
        CmpOp::Ne => ordering != Ordering::Equal,
        CmpOp::Lt => ordering == Ordering::Less,
        CmpOp::Le => ordering != Ordering::Greater,
        CmpOp::Gt => ordering == Ordering::Greater,
        CmpOp::Ge => ordering != Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(obj: &Value, path: &str) -> Vec<Value> {
        JsonPath::parse(path)
            .unwrap()
            .eval(obj)
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn leading_fields_stop_at_the_first_other_segment() {
        let lead = |p: &str| JsonPath::parse(p).unwrap().leading_fields();
        assert_eq!(
            lead(r#".status.conditions[?(@.type=="Ready")].status"#),
            ["status", "conditions"]
        );
        assert_eq!(lead("{.spec.zones}"), ["spec", "zones"]);
        assert_eq!(lead("$['spec']['region']"), ["spec", "region"]);
        assert!(lead("..name").is_empty());
        assert!(lead("[*].x").is_empty());
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web-0", "labels": {"app": "web", "app.kubernetes.io/name": "shop"}},
            "spec": {"replicas": 3, "zones": ["a", "b", "c", "d"], "containers": [
                {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "envoy", "ports": [{"containerPort": 9901}, {"containerPort": 15000}]}
            ]},
            "status": {"conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "Scheduled", "status": "True", "count": 4}
            ]}
        })
    }

    #[test]
    fn fields() {
        let p = pod();
        assert_eq!(eval(&p, ".spec.replicas"), vec![json!(3)]);
        assert_eq!(eval(&p, "{.spec.replicas}"), vec![json!(3)]);
        assert_eq!(eval(&p, "$.metadata.name"), vec![json!("web-0")]);
        assert_eq!(eval(&p, ".metadata.labels.app"), vec![json!("web")]);
        assert_eq!(
            eval(&p, r".metadata.labels.app\.kubernetes\.io/name"),
            vec![json!("shop")]
        );
        assert_eq!(
            eval(&p, ".metadata.labels['app.kubernetes.io/name']"),
            vec![json!("shop")]
        );
        assert_eq!(
            eval(&p, r#".metadata["labels"]["app"]"#),
            vec![json!("web")]
        );
        assert!(eval(&p, ".spec.missing.deeper").is_empty());
        assert!(eval(&p, ".spec.replicas.x").is_empty());
        assert_eq!(eval(&p, ""), vec![p.clone()]);
    }

    #[test]
    fn arrays() {
        let p = pod();
        assert_eq!(
            eval(&p, ".spec.zones[*]"),
            vec![json!("a"), json!("b"), json!("c"), json!("d")]
        );
        assert_eq!(eval(&p, ".spec.zones[0]"), vec![json!("a")]);
        assert_eq!(eval(&p, ".spec.zones[-1]"), vec![json!("d")]);
        assert!(eval(&p, ".spec.zones[9]").is_empty());
        assert_eq!(eval(&p, ".spec.zones[1:3]"), vec![json!("b"), json!("c")]);
        assert_eq!(eval(&p, ".spec.zones[:2]"), vec![json!("a"), json!("b")]);
        assert_eq!(eval(&p, ".spec.zones[-2:]"), vec![json!("c"), json!("d")]);
        assert_eq!(eval(&p, ".spec.zones[::2]"), vec![json!("a"), json!("c")]);
        assert_eq!(
            eval(&p, ".spec.zones[::-1]"),
            vec![json!("d"), json!("c"), json!("b"), json!("a")]
        );
        assert_eq!(eval(&p, ".spec.zones[0,2]"), vec![json!("a"), json!("c")]);
        assert_eq!(
            eval(&p, ".spec.containers[*].image"),
            vec![json!("nginx:1.27"), json!("envoy")]
        );
        assert_eq!(
            eval(&p, ".spec.containers[*].ports[*].containerPort"),
            vec![json!(80), json!(9901), json!(15000)]
        );
        assert_eq!(
            eval(&p, ".metadata.labels.*"),
            vec![json!("web"), json!("shop")]
        );
        assert_eq!(
            eval(&p, ".metadata.labels['app','missing']"),
            vec![json!("web")]
        );
    }

    #[test]
    fn filters() {
        let p = pod();
        assert_eq!(
            eval(&p, r#".status.conditions[?(@.type=="Ready")].status"#),
            vec![json!("False")]
        );
        assert_eq!(
            eval(&p, ".status.conditions[?(@.type == 'Ready')].reason"),
            vec![json!("ContainersNotReady")]
        );
        assert_eq!(
            eval(&p, r#".status.conditions[?(@.status!="True")].type"#),
            vec![json!("Ready")]
        );
        assert_eq!(
            eval(&p, ".status.conditions[?(@.reason)].type"),
            vec![json!("Ready")]
        );
        assert_eq!(
            eval(&p, ".status.conditions[?(@.count > 3)].type"),
            vec![json!("Scheduled")]
        );
        assert!(eval(&p, ".status.conditions[?(@.count >= 5)].type").is_empty());
        assert_eq!(
            eval(
                &p,
                ".spec.containers[?(@.ports[0].containerPort==9901)].name"
            ),
            vec![json!("sidecar")]
        );
        assert!(eval(&p, r#".status.conditions[?(@.type=="Nope")].status"#).is_empty());
    }

    #[test]
    fn recursive_descent() {
        let p = pod();
        assert_eq!(
            eval(&p, "..containerPort"),
            vec![json!(80), json!(9901), json!(15000)]
        );
        assert_eq!(
            eval(&p, ".spec..image"),
            vec![json!("nginx:1.27"), json!("envoy")]
        );
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "spec.replicas",
            ".spec[",
            ".spec[abc]",
            ".a[?(@.x==)]",
            ".a[?(x)]",
            "{.a",
            ".a['b]",
            ".a..",
            ".a[::0]",
            ".a)",
        ] {
            let err = JsonPath::parse(bad).unwrap_err();
            assert!(
                matches!(err, PrinterError::InvalidJsonPath { .. }),
                "{bad}: {err}"
            );
        }
    }
}
