//! Schemas every client accepts without warnings (issue 25): the `tools/list`
//! schemas carry no `type` array, no `null` branch, no `"default": null` and
//! no numeric `format` that JSON Schema does not define, while keeping their
//! bounds and `additionalProperties: false`.

use serde_json::{Value, json};

use crate::util::{ALL_TOOLS, RawServer, TestEnv};

/// Every portability problem in `schema`, with where it is.
fn problems(at: &str, schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(t) = map.get("type")
                && !t.is_string()
            {
                found.push(format!("{at}/type is not one string: {t}"));
            }
            if map.get("default") == Some(&Value::Null) {
                found.push(format!("{at}/default is null"));
            }
            if let Some(f) = map.get("format").and_then(Value::as_str)
                && (f.starts_with("int") || f.starts_with("uint") || f == "float" || f == "double")
            {
                found.push(format!("{at}/format is {f}"));
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(b)) = map.get(key)
                    && b.iter().any(|x| x.get("type") == Some(&json!("null")))
                {
                    found.push(format!("{at}/{key} has a null branch"));
                }
            }
            for (k, v) in map {
                match (k.as_str(), v) {
                    // Names to schemas: a property may be named `type`.
                    ("properties" | "$defs", Value::Object(named)) => {
                        for (name, s) in named {
                            problems(&format!("{at}/{k}/{name}"), s, found);
                        }
                    }
                    _ => problems(&format!("{at}/{k}"), v, found),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                problems(&format!("{at}/{i}"), v, found);
            }
        }
        _ => {}
    }
}

#[test]
fn tools_list_schemas_have_no_nullable_types_numeric_formats_or_null_defaults() {
    let env = TestEnv::new();
    let mut raw = RawServer::start(&args![env.root()]);
    raw.initialize("2025-06-18");
    let resp = raw.request("tools/list", json!({}));
    let tools = resp["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {resp}"))
        .clone();
    assert_eq!(tools.len(), ALL_TOOLS.len(), "{resp}");
    let mut found = Vec::new();
    for t in &tools {
        let name = t["name"].as_str().unwrap_or("?");
        problems(
            &format!("{name}/inputSchema"),
            &t["inputSchema"],
            &mut found,
        );
        problems(
            &format!("{name}/outputSchema"),
            &t["outputSchema"],
            &mut found,
        );
        assert_eq!(
            t["inputSchema"]["additionalProperties"],
            json!(false),
            "{name}"
        );
    }
    assert!(found.is_empty(), "not portable:\n{}", found.join("\n"));

    // The bounds stay: what was `["integer","null"]` with a minimum is a
    // plain integer with the same minimum.
    let by_name = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("{n} listed"))
            .clone()
    };
    let search = by_name("search_file_contents");
    let max_results = &search["inputSchema"]["properties"]["maxResults"];
    assert_eq!(max_results["type"], json!("integer"), "{max_results}");
    assert_eq!(max_results["minimum"], json!(0), "{max_results}");
    let read = by_name("read_text_file");
    let offset = &read["inputSchema"]["properties"]["offset"];
    assert_eq!(offset["type"], json!("integer"), "{offset}");
    assert_eq!(offset["minimum"], json!(1), "{offset}");
    assert_eq!(
        read["inputSchema"]["properties"]["head"]["type"],
        json!("number")
    );
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
}
