//! Honest tool metadata for `clawmcp node`: every command of [`Registry::builtin`] publishes a
//! curated description, an object input schema and all four behaviour hints, and the hints say
//! what the command really does.
//!
//! The walk reads every command's descriptor, not only `tools/list`: a missing description or
//! schema is filled with a fallback, so the walk looks for the fallbacks themselves.

use std::sync::Arc;

use clawmcp_mcp::{McpService, ToolAnnotations, permissive_schema};
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::capability::{Command, CommandSpec, category_of};
use clawmcp_node::settings::LiveSettings;
use clawmcp_node::{NodeMcpService, Registry};
use serde_json::{Value, json};

fn builtin(dir: &tempfile::TempDir) -> Registry {
    let settings = LiveSettings::open(dir.path().join("settings.json")).expect("default settings");
    let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
    Registry::builtin(Arc::new(settings), Arc::new(approvals))
}

/// What is missing from each command of `registry`, and from each advertised tool.
fn metadata_problems(registry: Arc<Registry>) -> Vec<String> {
    let mut problems = Vec::new();
    for command in registry.commands() {
        let tool = command.tool();
        if tool.description.trim().is_empty()
            || tool.description == format!("{} capability: {}", category_of(&tool.name), tool.name)
        {
            problems.push(format!("{}: no curated description", tool.name));
        }
        if tool.input_schema == permissive_schema() || tool.input_schema.to_value()["type"] != "object" {
            problems.push(format!("{}: no object input schema", tool.name));
        }
        if !command.argument_check().is_usable() {
            problems.push(format!("{}: an input schema that does not compile (calls would go unchecked)", tool.name));
        }
        if tool.output_schema.as_ref().is_some_and(|schema| schema.to_value()["type"] != "object") {
            problems.push(format!("{}: an output schema that is not an object schema", tool.name));
        }
    }
    let listed = serde_json::to_value(NodeMcpService::new(registry).list_tools()).unwrap();
    for tool in listed.as_array().unwrap() {
        let name = &tool["name"];
        if tool["description"].as_str().is_none_or(|text| text.trim().is_empty()) {
            problems.push(format!("{name}: advertised without a description"));
        }
        if tool["inputSchema"]["type"] != "object" {
            problems.push(format!("{name}: advertised without an object inputSchema"));
        }
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            if !tool["annotations"][hint].is_boolean() {
                problems.push(format!("{name}: advertised without {hint}"));
            }
        }
    }
    problems
}

#[test]
fn every_builtin_command_publishes_a_description_a_schema_and_all_four_hints() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(builtin(&dir));
    let commands = registry.commands();
    let names: Vec<&str> = commands.iter().map(|command| command.name()).collect();
    assert!(
        names.contains(&"system.run") && names.contains(&"device.info"),
        "the walk must see every command: {names:?}"
    );
    assert_eq!(metadata_problems(registry), Vec::<String>::new());
}

/// (read-only, destructive, idempotent, open world) per command, and why.
fn expected_hints(name: &str) -> Option<(bool, bool, bool, bool)> {
    Some(match name {
        // Reads local state only (a screenshot, a recording, a camera's photo or clip changes
        // nothing on the machine; the camera's light may come on while it records; a location fix
        // only reads a receiver).
        "system.which"
        | "system.run.prepare"
        | "system.execApprovals.get"
        | "device.info"
        | "device.status"
        | "screen.snapshot"
        | "screen.record"
        | "camera.list"
        | "camera.snap"
        | "camera.clip"
        | "clipboard.read"
        | "location.get"
        | "tts.status"
        | "file.stat"
        | "file.fetch"
        | "dir.list"
        | "dir.fetch"
        | "fs.listDir"
        // Reads an audio file (inside the file roots) or the microphone and says what was said;
        // status changes nothing.
        | "stt.transcribe"
        | "stt.listen"
        | "stt.status"
        // A picture of the canvas's own page, and what the renderer supports: nothing changes.
        | "canvas.snapshot"
        | "canvas.caps"
        | "canvas.a2ui.dump" => (true, false, true, false),
        // Adds or changes A2UI surfaces in the canvas, nothing of the user's is lost; messages
        // apply on top of what is there, so the same push twice need not leave the same state.
        "canvas.a2ui.push" | "canvas.a2ui.pushJSONL" => (false, false, false, false),
        // Removes every surface the agent pushed (they are gone); resetting twice is resetting.
        "canvas.a2ui.reset" => (false, true, true, false),
        // Show a page (from the web, or given): the canvas changes, nothing of the user's is
        // lost, the same call twice shows the same page.
        "canvas.present" | "canvas.navigate" => (false, false, true, true),
        // Clears and hides the canvas, on this machine only; hiding twice is hiding.
        "canvas.hide" => (false, false, true, false),
        // Any JavaScript in a web page: it can change the page, post forms, fetch from the web.
        "canvas.eval" => (false, true, false, true),
        // Replaces what the user had copied (gone), locally; the same write twice leaves the same clipboard.
        "clipboard.write" => (false, true, true, false),
        // Shows a notification: a change, but nothing is lost; each call shows another one.
        // Speaks aloud (or returns the audio): heard in the room, nothing lost; each call speaks again.
        "system.notify" | "tts.speak" => (false, false, false, false),
        // Runs any program the policy allows: it can do anything the user can, anywhere.
        "system.run" => (false, true, false, true),
        // Replaces the policy file (the old contents are gone), on this machine only.
        "system.execApprovals.set" => (false, true, false, false),
        // Replaces a file with overwrite (the old contents are gone), on this machine only; a
        // second identical call without overwrite is refused, so not idempotent.
        "file.write" => (false, true, false, false),
        // Creates a file but never replaces one (an existing path answers "exists"): not
        // destructive; a second call answers differently, so not idempotent; this machine only.
        "file.create" => (false, false, false, false),
        _ => return None,
    })
}

#[test]
fn the_hints_say_what_each_command_does() {
    let dir = tempfile::tempdir().unwrap();
    for command in builtin(&dir).commands() {
        let name = command.name();
        let ToolAnnotations { read_only_hint, destructive_hint, idempotent_hint, open_world_hint } =
            command.tool().annotations.expect("every command carries its hints");
        let expected =
            expected_hints(name).unwrap_or_else(|| panic!("{name} is new: classify its hints in expected_hints"));
        assert_eq!((read_only_hint, destructive_hint, idempotent_hint, open_world_hint), expected, "{name}");
        assert!(!(read_only_hint && destructive_hint), "{name}: a read-only tool cannot destroy");
    }
}

/// A command that publishes only a name (and a schema that is not an object's).
fn bare() -> Command {
    CommandSpec {
        name: "bare.thing",
        title: None,
        description: None,
        input_schema: Some(json!({"type": "string"}).into()),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
    .with_handler(|_request, _ctx| async { Ok(Value::Null) })
}

#[test]
fn the_walk_reports_a_command_without_description_or_object_schema() {
    let registry = Registry::new();
    registry.register_commands([bare()]);
    assert_eq!(
        metadata_problems(Arc::new(registry)),
        [
            "bare.thing: no curated description",
            "bare.thing: no object input schema",
            "\"bare.thing\": advertised without an object inputSchema"
        ]
    );
}

#[test]
fn the_walk_reports_an_input_schema_that_does_not_compile() {
    let broken = CommandSpec {
        name: "broken.schema",
        title: None,
        description: Some("A command whose schema names a type JSON Schema does not have."),
        input_schema: Some(json!({"type": "object", "properties": {"n": {"type": "whole-number"}}}).into()),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
    .with_handler(|_request, _ctx| async { Ok(Value::Null) });
    let registry = Registry::new();
    registry.register_commands([broken]);
    assert_eq!(
        metadata_problems(Arc::new(registry)),
        ["broken.schema: an input schema that does not compile (calls would go unchecked)"]
    );
}
