//! Input schemas every client accepts: the schemas schemars derives, made
//! portable.
//!
//! Owns: the one pass over a derived schema before it is advertised.
//! May touch: nothing (pure).
//!
//! schemars writes an `Option<T>` field as `"type": ["integer", "null"]` or
//! with `"default": null`, and numbers with formats JSON Schema does not
//! define (`"format": "uint64"`, `"double"`). Some clients warn about these
//! (MCP Inspector's schema-portability check) or reject the tool (clients that
//! map tool schemas onto a one-`type` dialect, such as Gemini's function
//! declarations). An optional argument is one a client leaves out, so the
//! `null` branch adds nothing a client needs: it is dropped, and so are the
//! numeric formats. The bounds (`minimum`, `maximum`), `required` and
//! `additionalProperties: false` stay. Parsing is unchanged: serde still reads
//! an explicit `null` as "not given".

use serde_json::Value;

/// Numeric `format`s that schemars emits and JSON Schema does not define.
const NUMERIC_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32", "uint64",
    "uint128", "float", "double",
];

/// Makes `schema` portable, in place: no `type` arrays with `"null"`, no
/// `null` branches in `anyOf`/`oneOf`, no `"default": null`, no numeric
/// `format`.
pub fn make_portable(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".to_owned(), only);
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| NUMERIC_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(branches)) = map.get_mut(key) else {
                    continue;
                };
                branches.retain(|b| b.get("type") != Some(&Value::String("null".to_owned())));
                if branches.len() == 1 {
                    // `{"anyOf": [X]}` is X: merge it into this node, keeping
                    // what this node already says (its description).
                    if let Some(Value::Object(only)) = branches.pop() {
                        map.remove(key);
                        for (k, v) in only {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            for (k, v) in map.iter_mut() {
                match (k.as_str(), v) {
                    // Maps of names to schemas: each value is a schema (a
                    // property may well be named `type` or `default`).
                    ("properties" | "$defs" | "definitions", Value::Object(named)) => {
                        named.values_mut().for_each(make_portable);
                    }
                    (_, v) => make_portable(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_portable),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_and_formats_are_made_plain_and_bounds_kept() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "maxResults": {"type": ["integer", "null"], "format": "uint64", "minimum": 0, "description": "d"},
                "head": {"type": "number", "format": "double", "default": null},
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "description": "m"},
                "uri": {"type": "string", "format": "uri"},
                "both": {"type": ["integer", "string"]},
                "type": {"type": "string", "enum": ["a"]},
                "default": {"type": ["string", "null"]}
            },
            "additionalProperties": false
        });
        make_portable(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "maxResults": {"type": "integer", "minimum": 0, "description": "d"},
                    "head": {"type": "number"},
                    "mode": {"$ref": "#/$defs/Mode", "description": "m"},
                    "uri": {"type": "string", "format": "uri"},
                    "both": {"type": ["integer", "string"]},
                    "type": {"type": "string", "enum": ["a"]},
                    "default": {"type": "string"}
                },
                "additionalProperties": false
            })
        );
    }
}
