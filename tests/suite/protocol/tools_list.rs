//! `tools/list`: the 17 tools with their annotations, strict input schemas
//! and output schemas, and a list no larger than the reference's.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::util::{ALL_TOOLS, TestEnv};

use super::mcp::{raw_session, tools_list};

/// (title, readOnlyHint, idempotentHint, destructiveHint) of one tool.
type Expected = (&'static str, bool, Option<bool>, Option<bool>);

/// Every object schema (one with `properties`), anywhere in `schema`,
/// must say `additionalProperties: false`.
fn assert_closed_objects(tool: &str, at: &str, schema: &Value) {
    match schema {
        Value::Object(map) => {
            let is_object =
                map.get("type") == Some(&json!("object")) || map.contains_key("properties");
            if is_object {
                assert_eq!(
                    map.get("additionalProperties"),
                    Some(&json!(false)),
                    "{tool}: object schema at {at} lacks additionalProperties:false: {schema}"
                );
            }
            for (k, v) in map {
                assert_closed_objects(tool, &format!("{at}/{k}"), v);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_closed_objects(tool, &format!("{at}/{i}"), v);
            }
        }
        _ => {}
    }
}

#[test]
fn tools_list_has_seventeen_tools_with_annotations_and_strict_schemas() {
    let env = TestEnv::new();
    let mut raw = raw_session(&env, &[]);
    let tools = tools_list(&mut raw);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ALL_TOOLS, "tools/list names and order");

    // (title, readOnly, idempotent, destructive) as in reference-server.md
    // §2.2: a read tool carries neither idempotentHint nor destructiveHint.
    let expected: BTreeMap<&str, Expected> = [
        ("read_file", ("Read File (Deprecated)", true, None, None)),
        ("read_text_file", ("Read Text File", true, None, None)),
        ("read_media_file", ("Read Media File", true, None, None)),
        (
            "read_multiple_files",
            ("Read Multiple Files", true, None, None),
        ),
        ("write_file", ("Write File", false, Some(true), Some(true))),
        (
            "append_file",
            ("Append File", false, Some(false), Some(false)),
        ),
        ("edit_file", ("Edit File", false, Some(false), Some(true))),
        (
            "create_directory",
            ("Create Directory", false, Some(true), Some(false)),
        ),
        ("list_directory", ("List Directory", true, None, None)),
        (
            "list_directory_with_sizes",
            ("List Directory with Sizes", true, None, None),
        ),
        ("directory_tree", ("Directory Tree", true, None, None)),
        ("move_file", ("Move File", false, Some(false), Some(true))),
        ("copy_file", ("Copy File", false, Some(false), Some(false))),
        ("search_files", ("Search Files", true, None, None)),
        (
            "search_file_contents",
            ("Search File Contents", true, None, None),
        ),
        ("get_file_info", ("Get File Info", true, None, None)),
        (
            "list_allowed_directories",
            ("List Allowed Directories", true, None, None),
        ),
    ]
    .into_iter()
    .collect();

    for tool in &tools {
        let name = tool["name"].as_str().expect("name");
        let (title, read_only, idempotent, destructive) = expected[name];
        let ann = &tool["annotations"];
        assert_eq!(tool["title"], json!(title), "{name}: title");
        assert!(ann.get("title").is_none(), "{name}: the title is said once");
        assert_eq!(
            ann["readOnlyHint"],
            json!(read_only),
            "{name}: readOnlyHint"
        );
        assert_eq!(
            ann.get("idempotentHint"),
            idempotent.map(|b| json!(b)).as_ref(),
            "{name}: idempotentHint"
        );
        assert_eq!(
            ann.get("destructiveHint"),
            destructive.map(|b| json!(b)).as_ref(),
            "{name}: destructiveHint"
        );
        assert_eq!(ann["openWorldHint"], json!(false), "{name}: openWorldHint");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 60),
            "{name}: description"
        );

        let input = &tool["inputSchema"];
        // Self-contained and lean: no references a client must resolve, no
        // schemars noise (see tools::schema).
        let text = input.to_string();
        for noise in ["$ref", "$defs", "$schema", "\"format\"", "\"default\":null"] {
            assert!(!text.contains(noise), "{name}: {noise} in {text}");
        }
        assert_eq!(input["type"], json!("object"), "{name}: inputSchema type");
        assert_eq!(
            input["additionalProperties"],
            json!(false),
            "{name}: inputSchema must refuse unknown fields"
        );
        assert_closed_objects(name, "inputSchema", input);

        let output = &tool["outputSchema"];
        assert_eq!(output["type"], json!("object"), "{name}: outputSchema");
        // search_file_contents gives its results as data, not a copy of
        // the text (each form keeps the reply budget on its own).
        assert_eq!(output["additionalProperties"], json!(false), "{name}");
        if name == "search_file_contents" {
            assert_eq!(
                output["required"],
                json!(["filesSearched", "truncated"]),
                "{name}: outputSchema"
            );
            assert!(output["properties"].get("content").is_none(), "{name}");
            continue;
        }
        assert_eq!(
            output["required"],
            json!(["content"]),
            "{name}: outputSchema"
        );
        let content_type = if name == "read_media_file" {
            "array"
        } else {
            "string"
        };
        assert_eq!(
            output["properties"]["content"]["type"],
            json!(content_type),
            "{name}: outputSchema content"
        );
    }

    // The path tools require their arguments.
    let required = |name: &str| -> Value {
        let tool = tools
            .iter()
            .find(|t| t["name"] == json!(name))
            .expect("tool");
        tool["inputSchema"]["required"].clone()
    };
    assert_eq!(required("read_text_file"), json!(["path"]));
    // Enums stay enums.
    let prop = |tool: &str, p: &str| -> Value {
        tools
            .iter()
            .find(|t| t["name"] == json!(tool))
            .expect("tool")["inputSchema"]["properties"][p]
            .clone()
    };
    assert_eq!(
        prop("list_directory_with_sizes", "sortBy")["enum"],
        json!(["name", "size"])
    );
    assert_eq!(
        prop("search_file_contents", "outputMode")["enum"],
        json!(["content", "files", "count"])
    );
    assert_eq!(required("read_multiple_files"), json!(["paths"]));
    let search = required("search_files");
    assert!(
        search
            .as_array()
            .is_some_and(|r| r.contains(&json!("path")) && r.contains(&json!("pattern")))
    );
    let lad = tools
        .iter()
        .find(|t| t["name"] == json!("list_allowed_directories"))
        .expect("lad");
    assert!(
        lad["inputSchema"]["properties"]
            .as_object()
            .is_none_or(|p| p.is_empty()),
        "list_allowed_directories takes no parameters: {}",
        lad["inputSchema"]
    );
}

/// The reference's 14 tools (2026.8.31), whose `tools/list` tuls's must not
/// outgrow.
const REFERENCE_TOOLS: [&str; 14] = [
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "move_file",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
];

/// Bytes of the `result` of reference 2026.8.31's `tools/list` (14 tools),
/// as compact JSON.
const REFERENCE_14_BYTES: usize = 12_983;

/// The same for the reference 2.3.0's 16 tools, measured (it was
/// estimated at 14,677 B before 2.3.0 was published).
const REFERENCE_16_BYTES: usize = 19_379;

/// Every agent pays for `tools/list` in context on every turn: tuls's is no
/// larger than the reference's for the same tools, and all of it no larger
/// than 1.1 times the reference's 16. A description that creeps fails here.
#[test]
fn tools_list_is_no_larger_than_the_references() {
    let env = TestEnv::new();
    let mut raw = raw_session(&env, &[]);
    let tools = tools_list(&mut raw);
    let bytes = |tools: &[Value]| {
        serde_json::to_vec(&json!({ "tools": tools }))
            .expect("json")
            .len()
    };
    let same: Vec<Value> = tools
        .iter()
        .filter(|t| REFERENCE_TOOLS.iter().any(|n| t["name"] == json!(n)))
        .cloned()
        .collect();
    assert_eq!(same.len(), REFERENCE_TOOLS.len());
    let (same, all) = (bytes(&same), bytes(&tools));
    eprintln!(
        "tools/list: {same} B for the reference's 14 tools, {all} B for all {}",
        tools.len()
    );
    assert!(
        same <= REFERENCE_14_BYTES,
        "the reference's 14 tools take {same} B, over the reference's {REFERENCE_14_BYTES} B"
    );
    assert!(
        all * 10 <= REFERENCE_16_BYTES * 11,
        "all tools take {all} B, over 1.1 x the reference's 16 ({REFERENCE_16_BYTES} B)"
    );
}
