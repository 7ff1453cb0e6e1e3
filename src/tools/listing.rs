//! What `tools/list` shows of the tool table: each tool's JSON Schema
//! (derived, inlined, made lean for every client) and its output schema,
//! rendered into rmcp's tool shape.
//!
//! Owns: turning a [`Tool`] entry into its `tools/list` JSON. The table
//! itself, the call context and dispatch are in the module above.
//! May touch: nothing (no I/O).

use rmcp::schemars::JsonSchema;
use serde_json::{Value, json};

use super::{OutputKind, Tool};

/// A tool's input schema, as derived from its arguments' type and made
/// portable ([`super::schema::make_portable`]).
pub(super) fn schema<T: JsonSchema + 'static>() -> Value {
    let s = rmcp::handler::server::common::schema_for_type::<T>();
    let mut v = Value::Object((*s).clone());
    if let Value::Object(root) = &mut v {
        // The dialect is MCP's default (2020-12); the type's name and doc
        // comment say nothing to the model.
        for key in ["$schema", "title", "description"] {
            root.remove(key);
        }
        inline_defs(root);
        // As in the reference: the tool's description says what its path
        // arguments name.
        if let Some(Value::Object(props)) = root.get_mut("properties") {
            for name in ["path", "source", "destination"] {
                if let Some(Value::Object(p)) = props.get_mut(name) {
                    p.remove("description");
                }
            }
        }
    }
    lean(&mut v);
    super::schema::make_portable(&mut v);
    v
}

/// Puts each `$defs` entry in place of the `$ref`s of the properties that
/// name it (a property's own description wins), and drops `$defs` when
/// nothing refers to it any more. tuls's `$defs` are small enums used once.
pub(super) fn inline_defs(root: &mut serde_json::Map<String, Value>) {
    let Some(Value::Object(defs)) = root.get("$defs").cloned() else {
        return;
    };
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        for prop in props.values_mut() {
            let Value::Object(p) = prop else { continue };
            let target = p.get("$ref").and_then(Value::as_str).and_then(|r| {
                r.strip_prefix("#/$defs/")
                    .and_then(|name| defs.get(name))
                    .cloned()
            });
            if let Some(Value::Object(def)) = target {
                p.remove("$ref");
                for (k, v) in def {
                    p.entry(k).or_insert(v);
                }
            }
        }
    }
    let refers = root
        .iter()
        .any(|(k, v)| k != "$defs" && v.to_string().contains("\"$ref\""));
    if !refers {
        root.remove("$defs");
    }
}

/// Drops what a schema says that constrains nothing and tells the model
/// nothing, so every agent does not pay for it in context on every turn:
/// `"default": null` (an optional argument is optional), `format`
/// (`int64`, `double`: schemars's Rust types, not JSON Schema's), and the
/// per-value descriptions of a string enum (written as `enum`). Types,
/// enums, bounds, `required` and `additionalProperties` stay.
pub(super) fn lean(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // A string: a property named `format` would be an object.
            if map.get("format").is_some_and(Value::is_string) {
                map.remove("format");
            }
            // A string enum written as `oneOf` of described `const`s is
            // the same constraint as `enum`, in a fraction of the bytes.
            let consts: Option<Vec<Value>> =
                map.get("oneOf").and_then(Value::as_array).and_then(|alts| {
                    alts.iter()
                        .map(|a| a.get("const").filter(|c| c.is_string()).cloned())
                        .collect()
                });
            if let Some(consts) = consts {
                map.remove("oneOf");
                map.insert("type".into(), json!("string"));
                map.insert("enum".into(), Value::Array(consts));
            }
            map.values_mut().for_each(lean);
        }
        Value::Array(items) => items.iter_mut().for_each(lean),
        _ => {}
    }
}

pub(super) fn text_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"content": {"type": "string"}},
        "required": ["content"],
        "additionalProperties": false
    })
}

pub(super) fn media_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"content": {"type": "array", "items": {"anyOf": [
            {"type": "object", "properties": {"type": {"type": "string", "enum": ["image", "audio"]}, "data": {"type": "string"}, "mimeType": {"type": "string"}}, "required": ["type", "data", "mimeType"], "additionalProperties": false},
            {"type": "object", "properties": {"type": {"type": "string", "const": "resource"}, "resource": {"type": "object", "properties": {"uri": {"type": "string"}, "mimeType": {"type": "string"}, "blob": {"type": "string"}}, "required": ["uri", "blob"], "additionalProperties": false}}, "required": ["type", "resource"], "additionalProperties": false}
        ]}}},
        "required": ["content"],
        "additionalProperties": false
    })
}

/// The schema of a version token.
pub(super) fn version_schema() -> Value {
    json!({
        "type": "string",
        "description": "Opaque token of the file's whole content; pass it as ifMatch to a write"
    })
}

/// `schema` with one more optional property.
pub(super) fn with_property(mut schema: Value, name: &str, property: Value) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(name.to_owned(), property);
    }
    schema
}

/// The `tools/list` entry of a tool, as JSON.
pub fn tool_json(tool: &Tool) -> Value {
    // The title is said once, on the tool; idempotentHint and
    // destructiveHint mean something only for a tool that writes (as in
    // the reference, a read tool carries neither).
    let mut annotations = json!({
        "readOnlyHint": tool.hints.read_only,
        "openWorldHint": false,
    });
    if !tool.hints.read_only {
        annotations["idempotentHint"] = json!(tool.hints.idempotent);
        annotations["destructiveHint"] = json!(tool.hints.destructive);
    }
    let output = match tool.output {
        OutputKind::Text => text_output_schema(),
        OutputKind::Media => media_output_schema(),
        OutputKind::Structured(schema) => schema(),
        OutputKind::Versioned => with_property(text_output_schema(), "version", version_schema()),
        OutputKind::VersionedMedia => {
            with_property(media_output_schema(), "version", version_schema())
        }
        OutputKind::Versions => with_property(
            text_output_schema(),
            "versions",
            json!({"type": "array", "description": "Each file shown whole, with its version", "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "version": version_schema()},
                "required": ["path", "version"],
                "additionalProperties": false
            }}),
        ),
    };
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": (tool.input)(),
        "outputSchema": output,
        "annotations": annotations,
    })
}

/// The `tools/list` entries of the enabled tools, as rmcp's type. A tool
/// whose entry does not fit rmcp's `Tool` is an error, never left out.
pub fn list(enabled: impl Fn(&str) -> bool) -> Result<Vec<rmcp::model::Tool>, String> {
    super::TOOLS
        .iter()
        .filter(|t| enabled(t.name))
        .map(|t| {
            serde_json::from_value(tool_json(t))
                .map_err(|e| format!("tool {} cannot be listed: {e}", t.name))
        })
        .collect()
}
