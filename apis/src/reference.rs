//! The API reference: one Markdown page per CRD, and an index, in
//! `docs/reference/api/`, rendered from the CRDs of [`generate::crds`].
//!
//! Crossplane's marketplace shows a provider's CRDs field by field (type,
//! default, description, validation, CEL rules); these pages give readers of
//! the repository the same, without a cluster or the marketplace. They are
//! rendered from the same CRDs as `package/crds/`, so they say what the API
//! server enforces, and they are committed like the CRDs: [`stale_files`]
//! lets a test fail when they no longer match the types.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionVersion,
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};
use kube::core::Version;

use crate::generate::{
    self, ConnectionDetailDoc, GenerateError, GeneratedFile, REGENERATE_COMMAND,
};

/// The index page, named so that GitHub shows it when the folder is opened.
pub const INDEX_FILE: &str = "README.md";

/// The generated CRDs as seen from the default docs folder: pages link to
/// the YAML the API server gets.
const CRDS_FROM_DOCS: &str = "../../../package/crds";

/// Root fields every Kubernetes object has; a page names them in one line
/// rather than documenting them in each table.
const STANDARD_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The folder `docs/reference/api` of this repository.
pub fn default_docs_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs")
        .join("reference")
        .join("api")
}

/// The page of the CRD named `crd_name` (`<plural>.<group>`), e.g.
/// `vpcs.network.fakecloud.m.crossplane.io.md`: the CRD's own name, so a
/// link can be written from the name `kubectl get crd` shows.
pub fn page_file_name(crd_name: &str) -> String {
    format!("{crd_name}.md")
}

/// Every page and the index, rendered in memory, with paths relative to the
/// docs folder.
pub fn generated_files() -> Vec<GeneratedFile> {
    let crds = generate::crds();
    let connection_details: BTreeMap<String, Vec<ConnectionDetailDoc>> = generate::mrds()
        .into_iter()
        .filter_map(|mrd| Some((mrd.metadata.name?, mrd.spec.connection_details)))
        .collect();
    let mut files = vec![GeneratedFile {
        path: PathBuf::from(INDEX_FILE),
        contents: index(&crds, &connection_details),
    }];
    for crd in &crds {
        let name = crd_name(crd);
        files.push(GeneratedFile {
            path: PathBuf::from(page_file_name(&name)),
            contents: page(crd, connection_details.get(&name).map(Vec::as_slice)),
        });
    }
    files
}

/// Writes the pages and the index under `docs_root` and removes `.md` files
/// there that generation no longer produces (a renamed kind must not leave
/// its old page behind). Returns the files written.
pub fn write(docs_root: &Path) -> Result<Vec<PathBuf>, GenerateError> {
    generate::write_files(docs_root, generated_files(), &[""], "md")
}

/// The files under `docs_root` that differ from what generation would write
/// now: changed, missing, or no longer generated. Empty when the committed
/// pages are current.
pub fn stale_files(docs_root: &Path) -> Result<Vec<PathBuf>, GenerateError> {
    generate::stale_among(docs_root, generated_files(), &[""], "md")
}

/// Text as one line of inline Markdown: whitespace (newlines included)
/// collapsed to single spaces, and `<` and `>` outside code spans written as
/// entities, so that a description cannot open an HTML tag. Code spans are
/// kept as they are: an entity there would show literally.
pub fn inline(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(['`', '<', '>']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with('`') {
            let fence = tail.len() - tail.trim_start_matches('`').len();
            let len = closing_fence(&tail[fence..], fence).map_or(fence, |end| fence + end + fence);
            out.push_str(&tail[..len]);
            rest = &tail[len..];
        } else {
            out.push_str(if tail.starts_with('<') {
                "&lt;"
            } else {
                "&gt;"
            });
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Where in `text` a run of exactly `fence` backticks starts: the end of a
/// code span opened by as many (CommonMark).
fn closing_fence(text: &str, fence: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let start = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            if i - start == fence {
                return Some(start);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Inline Markdown made safe for a table cell: every `|` escaped, which
/// GitHub honours inside code spans too, so a pipe in a description or a
/// CEL rule cannot split the row.
pub fn escape_cell(markdown: &str) -> String {
    markdown.replace('|', "\\|")
}

/// `text` as a code span, on one line, fenced with more backticks than it
/// contains (CEL rules and JSON may contain some).
pub fn code(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// One table row; every cell is escaped with [`escape_cell`].
fn row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| escape_cell(c)).collect();
    format!("| {} |", cells.join(" | "))
}

/// A table's header line and delimiter line.
fn table_head(titles: &[&str]) -> [String; 2] {
    [
        format!("| {} |", titles.join(" | ")),
        format!("|{}", " --- |".repeat(titles.len())),
    ]
}

fn header_comment() -> String {
    format!(
        "<!-- Generated from the Rust types in apis/src by `{REGENERATE_COMMAND}`. \
         Do not edit: change the types and run the command again. -->"
    )
}

fn crd_name(crd: &CustomResourceDefinition) -> String {
    crd.metadata.name.clone().unwrap_or_default()
}

/// The versions of `crd`, newest first in Kubernetes' version priority
/// (the order `kubectl` prefers them in).
fn newest_first(crd: &CustomResourceDefinition) -> Vec<&CustomResourceDefinitionVersion> {
    let mut versions: Vec<_> = crd.spec.versions.iter().collect();
    versions.sort_by_cached_key(|v| std::cmp::Reverse(Version::parse(&v.name).priority()));
    versions
}

fn root_schema(version: &CustomResourceDefinitionVersion) -> Option<&JSONSchemaProps> {
    version.schema.as_ref()?.open_api_v3_schema.as_ref()
}

/// The top description of the newest served version: what the kind is.
fn kind_description(crd: &CustomResourceDefinition) -> String {
    newest_first(crd)
        .into_iter()
        .filter(|v| v.served)
        .find_map(|v| root_schema(v)?.description.as_deref())
        .map(inline)
        .unwrap_or_default()
}

/// The sections of the index, in order, each with an introduction.
const SECTIONS: [(&str, &str); 5] = [
    (
        "Managed resources, namespaced (Crossplane v2)",
        "Managed resources as Crossplane v2 defines them: namespaced, each in a \
         `*.fakecloud.m.crossplane.io` group, installed through their \
         ManagedResourceDefinitions.",
    ),
    (
        "Managed resources, cluster-scoped (legacy)",
        "The same kinds in their legacy cluster-scoped form, each in a \
         `*.fakecloud.crossplane.io` group.",
    ),
    (
        "Provider configuration",
        "Where managed resources get their endpoint and credentials, and the \
         usages that record which resources use which configuration.",
    ),
    (
        "Queries",
        "Kinds that find existing cloud resources by a filter and own an \
         observe-only managed resource for each match.",
    ),
    ("Other kinds", "Kinds in none of the sections above."),
];

/// Index of the [`SECTIONS`] entry `crd` belongs to. Managed kinds are
/// those with an MRD.
fn section(crd: &CustomResourceDefinition, managed: bool) -> usize {
    let kind = &crd.spec.names.kind;
    match (managed, crd.spec.scope.as_str()) {
        (true, "Namespaced") => 0,
        (true, _) => 1,
        _ if kind.contains("ProviderConfig") => 2,
        _ if kind.ends_with("Query") => 3,
        _ => 4,
    }
}

/// `v1beta1` (storage), `v1alpha1` (deprecated): the versions for the index.
fn versions_summary(crd: &CustomResourceDefinition) -> String {
    newest_first(crd)
        .into_iter()
        .map(|v| {
            let mut marks = Vec::new();
            if v.storage {
                marks.push("storage");
            }
            if v.deprecated == Some(true) {
                marks.push("deprecated");
            }
            if !v.served {
                marks.push("not served");
            }
            if marks.is_empty() {
                code(&v.name)
            } else {
                format!("{} ({})", code(&v.name), marks.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn index(
    crds: &[CustomResourceDefinition],
    connection_details: &BTreeMap<String, Vec<ConnectionDetailDoc>>,
) -> String {
    let mut lines = vec![
        header_comment(),
        String::new(),
        "# API reference".to_owned(),
        String::new(),
        "Every custom resource this provider installs, one page each. Each page \
         documents every field of each served version, newest first: its type, \
         whether it is required, its default, its description and its validation, \
         including the CEL rules the API server enforces. The pages are generated \
         from the same Rust types as the CRDs in `package/crds/`."
            .to_owned(),
    ];
    for (at, (title, intro)) in SECTIONS.iter().enumerate() {
        let members: Vec<_> = crds
            .iter()
            .filter(|crd| section(crd, connection_details.contains_key(&crd_name(crd))) == at)
            .collect();
        if members.is_empty() {
            continue;
        }
        lines.extend([String::new(), format!("## {title}"), String::new()]);
        lines.push((*intro).to_owned());
        lines.push(String::new());
        lines.extend(table_head(&[
            "Kind",
            "Group",
            "Scope",
            "Versions",
            "Description",
        ]));
        for crd in members {
            lines.push(row(&[
                format!(
                    "[{}]({})",
                    crd.spec.names.kind,
                    page_file_name(&crd_name(crd))
                ),
                code(&crd.spec.group),
                crd.spec.scope.clone(),
                versions_summary(crd),
                kind_description(crd),
            ]));
        }
    }
    lines.push(String::new());
    lines.join("\n")
}

fn page(
    crd: &CustomResourceDefinition,
    connection_details: Option<&[ConnectionDetailDoc]>,
) -> String {
    let names = &crd.spec.names;
    let crd_file = generate::file_name(&crd.spec.group, &names.plural);
    let list = |items: Option<&Vec<String>>| match items {
        Some(items) if !items.is_empty() => {
            items.iter().map(|i| code(i)).collect::<Vec<_>>().join(", ")
        }
        _ => "none".to_owned(),
    };
    let mut lines = vec![
        header_comment(),
        String::new(),
        format!("# {} ({})", names.kind, crd.spec.group),
        String::new(),
    ];
    let description = kind_description(crd);
    if !description.is_empty() {
        lines.extend([description, String::new()]);
    }
    lines.extend([
        format!("Part of the [API reference]({INDEX_FILE})."),
        String::new(),
        format!("- Kind: {}", code(&names.kind)),
        format!("- Group: {}", code(&crd.spec.group)),
        format!("- Scope: {}", crd.spec.scope),
        format!(
            "- Names: plural {}, singular {}, short names {}",
            code(&names.plural),
            names.singular.as_deref().map_or("none".to_owned(), code),
            list(names.short_names.as_ref()),
        ),
        format!("- Categories: {}", list(names.categories.as_ref())),
        format!("- CRD: [{crd_file}]({CRDS_FROM_DOCS}/{crd_file})"),
    ]);
    if connection_details.is_some() {
        lines.push(format!(
            "- Managed resource: installed through its ManagedResourceDefinition, {}",
            code(&format!("package/{}/{crd_file}", generate::MRDS_DIR))
        ));
    }
    lines.extend(versions_table(crd));
    lines.extend(printer_columns(crd));
    if let Some(details) = connection_details {
        lines.extend(connection_secret_keys(details));
    }
    for version in newest_first(crd).into_iter().filter(|v| v.served) {
        lines.extend(version_section(crd, version));
    }
    lines.push(String::new());
    lines.join("\n")
}

fn versions_table(crd: &CustomResourceDefinition) -> Vec<String> {
    let mut lines = vec![String::new(), "## Versions".to_owned(), String::new()];
    lines.extend(table_head(&["Version", "Served", "Storage", "Deprecated"]));
    let yes = |b: bool| if b { "yes" } else { "" }.to_owned();
    for version in newest_first(crd) {
        let name = if version.served {
            format!("[{0}](#{0})", version.name)
        } else {
            code(&version.name)
        };
        let deprecated = match (version.deprecated, &version.deprecation_warning) {
            (Some(true), Some(warning)) => format!("yes: {}", inline(warning)),
            (Some(true), None) => "yes".to_owned(),
            _ => String::new(),
        };
        lines.push(row(&[
            name,
            if version.served { "yes" } else { "no" }.to_owned(),
            yes(version.storage),
            deprecated,
        ]));
    }
    lines
}

/// The printer columns, one table for every run of versions that share
/// them (usually all of them).
fn printer_columns(crd: &CustomResourceDefinition) -> Vec<String> {
    let mut groups: Vec<(Vec<&str>, &[CustomResourceColumnDefinition])> = Vec::new();
    for version in newest_first(crd) {
        let columns = version.additional_printer_columns.as_deref().unwrap_or(&[]);
        match groups.iter_mut().find(|(_, c)| *c == columns) {
            Some((names, _)) => names.push(&version.name),
            None => groups.push((vec![&version.name], columns)),
        }
    }
    if groups.iter().all(|(_, columns)| columns.is_empty()) {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        "## Printer columns".to_owned(),
        String::new(),
        "What `kubectl get` shows besides the name (columns with a priority \
         above 0 only with `-o wide`)."
            .to_owned(),
    ];
    for (names, columns) in &groups {
        lines.push(String::new());
        if groups.len() > 1 {
            let names: Vec<String> = names.iter().map(|n| code(n)).collect();
            lines.extend([format!("In {}:", names.join(", ")), String::new()]);
        }
        if columns.is_empty() {
            lines.push("None.".to_owned());
            continue;
        }
        lines.extend(table_head(&[
            "Column",
            "Type",
            "JSON path",
            "Priority",
            "Description",
        ]));
        for column in *columns {
            lines.push(row(&[
                code(&column.name),
                match &column.format {
                    Some(format) => format!("{} ({})", column.type_, inline(format)),
                    None => column.type_.clone(),
                },
                code(&column.json_path),
                column.priority.unwrap_or(0).to_string(),
                column
                    .description
                    .as_deref()
                    .map(inline)
                    .unwrap_or_default(),
            ]));
        }
    }
    lines
}

fn connection_secret_keys(details: &[ConnectionDetailDoc]) -> Vec<String> {
    let mut lines = vec![
        String::new(),
        "## Connection secret keys".to_owned(),
        String::new(),
    ];
    if details.is_empty() {
        lines.push(
            "None: this kind writes no connection details, as its \
             ManagedResourceDefinition documents."
                .to_owned(),
        );
        return lines;
    }
    lines.extend([
        "The keys this kind writes to the Secret named by \
         `spec.writeConnectionSecretToRef`, as its ManagedResourceDefinition \
         documents them."
            .to_owned(),
        String::new(),
    ]);
    lines.extend(table_head(&["Key", "Description"]));
    for detail in details {
        lines.push(row(&[code(&detail.name), inline(&detail.description)]));
    }
    lines
}

fn version_section(
    crd: &CustomResourceDefinition,
    version: &CustomResourceDefinitionVersion,
) -> Vec<String> {
    let mut lines = vec![String::new(), format!("## {}", version.name), String::new()];
    let mut status = Vec::new();
    if version.storage {
        status.push("The storage version.".to_owned());
    }
    if version.deprecated == Some(true) {
        status.push(match &version.deprecation_warning {
            Some(warning) => format!("**Deprecated:** {}", inline(warning)),
            None => "**Deprecated.**".to_owned(),
        });
    }
    if !status.is_empty() {
        lines.extend([status.join(" "), String::new()]);
    }
    lines.push(format!(
        "{}, {}, and the standard Kubernetes {}.",
        code(&format!("apiVersion: {}/{}", crd.spec.group, version.name)),
        code(&format!("kind: {}", crd.spec.names.kind)),
        code("metadata"),
    ));
    let Some(root) = root_schema(version) else {
        lines.extend([String::new(), "No schema.".to_owned()]);
        return lines;
    };
    let root_rules = root.x_kubernetes_validations.as_deref().unwrap_or(&[]);
    if !root_rules.is_empty() {
        lines.extend([
            String::new(),
            "Rules on the whole object:".to_owned(),
            String::new(),
        ]);
        lines.extend(
            root_rules
                .iter()
                .map(|rule| format!("- {}", rule_text(rule))),
        );
    }
    lines.push(String::new());
    lines.extend(table_head(&[
        "Field",
        "Type",
        "Required",
        "Default",
        "Description",
        "Validation",
    ]));
    let required = root.required.as_deref().unwrap_or(&[]);
    for (name, field) in root.properties.iter().flatten() {
        if !STANDARD_FIELDS.contains(&name.as_str()) {
            field_rows(name, field, required.contains(name), &mut lines);
        }
    }
    lines
}

/// The row of the field at `path`, then the rows of what it contains.
fn field_rows(path: &str, schema: &JSONSchemaProps, required: bool, rows: &mut Vec<String>) {
    rows.push(row(&[
        code(path),
        type_cell(schema),
        if required { "yes" } else { "" }.to_owned(),
        schema
            .default
            .as_ref()
            .map(|d| code(&d.0.to_string()))
            .unwrap_or_default(),
        schema
            .description
            .as_deref()
            .map(inline)
            .unwrap_or_default(),
        validation(schema).join("<br>"),
    ]));
    contained_rows(path, schema, rows);
}

/// Rows for the properties of an object, the items of an array (`path[]`)
/// and the values of a map (`path.<key>`). An item or value gets a row of
/// its own only when it says more than the container's type does.
fn contained_rows(path: &str, schema: &JSONSchemaProps, rows: &mut Vec<String>) {
    let required = schema.required.as_deref().unwrap_or(&[]);
    for (name, field) in schema.properties.iter().flatten() {
        field_rows(
            &format!("{path}.{name}"),
            field,
            required.contains(name),
            rows,
        );
    }
    let nested = [
        match &schema.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => Some((format!("{path}[]"), items)),
            _ => None,
        },
        match &schema.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(values)) => Some((format!("{path}.<key>"), values)),
            _ => None,
        },
    ];
    for (path, schema) in nested.into_iter().flatten() {
        let says_more = schema.description.is_some()
            || schema.enum_.is_some()
            || schema.default.is_some()
            || !validation(schema).is_empty();
        if says_more {
            field_rows(&path, schema, false, rows);
        } else {
            contained_rows(&path, schema, rows);
        }
    }
}

/// `string`, `integer (int64)`, `array of string`, `map of string`, …
fn type_name(schema: &JSONSchemaProps) -> String {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return "integer or string".to_owned();
    }
    match schema.type_.as_deref() {
        Some("array") => match &schema.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => format!("array of {}", type_name(items)),
            _ => "array".to_owned(),
        },
        Some("object") => match &schema.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(values)) => format!("map of {}", type_name(values)),
            Some(JSONSchemaPropsOrBool::Bool(true)) => "map".to_owned(),
            _ if schema.x_kubernetes_preserve_unknown_fields == Some(true) => {
                "object (any fields)".to_owned()
            }
            _ => "object".to_owned(),
        },
        Some(name) => match &schema.format {
            Some(format) => format!("{name} ({})", inline(format)),
            None => name.to_owned(),
        },
        None => "any".to_owned(),
    }
}

/// The type, then the allowed values if the schema lists them.
fn type_cell(schema: &JSONSchemaProps) -> String {
    let name = type_name(schema);
    match &schema.enum_ {
        Some(values) => {
            let values: Vec<String> = values.iter().map(|v| code(&json_value(&v.0))).collect();
            format!("{name}, one of {}", values.join(", "))
        }
        None => name,
    }
}

/// A JSON value as a user writes it in YAML: strings bare, anything else as
/// compact JSON.
fn json_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The schema's constraints, each a short phrase; CEL rules last.
fn validation(schema: &JSONSchemaProps) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(pattern) = &schema.pattern {
        found.push(format!("pattern {}", code(pattern)));
    }
    let counts = [
        ("min length", schema.min_length),
        ("max length", schema.max_length),
        ("min items", schema.min_items),
        ("max items", schema.max_items),
        ("min properties", schema.min_properties),
        ("max properties", schema.max_properties),
    ];
    for (what, count) in counts {
        if let Some(count) = count {
            found.push(format!("{what} {count}"));
        }
    }
    let bounds = [
        ("minimum", schema.minimum, schema.exclusive_minimum),
        ("maximum", schema.maximum, schema.exclusive_maximum),
    ];
    for (what, bound, exclusive) in bounds {
        if let Some(bound) = bound {
            let exclusive = if exclusive == Some(true) {
                " (exclusive)"
            } else {
                ""
            };
            found.push(format!("{what} {bound}{exclusive}"));
        }
    }
    if let Some(step) = schema.multiple_of {
        found.push(format!("multiple of {step}"));
    }
    if schema.unique_items == Some(true) {
        found.push("items unique".to_owned());
    }
    if let Some(list_type) = &schema.x_kubernetes_list_type {
        let keys = match schema.x_kubernetes_list_map_keys.as_deref() {
            Some(keys) if !keys.is_empty() => {
                let keys: Vec<String> = keys.iter().map(|k| code(k)).collect();
                format!(", keyed by {}", keys.join(", "))
            }
            _ => String::new(),
        };
        found.push(format!("list type {}{keys}", code(list_type)));
    }
    if let Some(map_type) = &schema.x_kubernetes_map_type {
        found.push(format!("map type {}", code(map_type)));
    }
    for rule in schema.x_kubernetes_validations.iter().flatten() {
        found.push(rule_text(rule));
    }
    found
}

/// A CEL rule with its message. A rule naming `oldSelf` is a transition
/// rule, which the API server checks only on updates that keep the field
/// (so it reads as e.g. "immutable once set").
fn rule_text(rule: &ValidationRule) -> String {
    let when = if rule.rule.contains("oldSelf") {
        if rule.optional_old_self == Some(true) {
            " (on create and update)"
        } else {
            " (on update)"
        }
    } else {
        ""
    };
    let mut text = format!("CEL{when} {}", code(&rule.rule));
    if let Some(message) = &rule.message {
        text.push_str(&format!(": {}", inline(message)));
    }
    if let Some(expression) = &rule.message_expression {
        text.push_str(&format!("; message {}", code(expression)));
    }
    if let Some(field) = &rule.field_path {
        text.push_str(&format!("; reported on {}", code(field)));
    }
    if let Some(reason) = &rule.reason {
        text.push_str(&format!("; reason {}", code(reason)));
    }
    text
}
