//! The API reference in `docs/reference/api`: current with the Rust types,
//! documenting what the CRDs carry, in tables a pipe cannot break and with
//! links that resolve.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use apis::generate::{REGENERATE_COMMAND, default_package_root};
use apis::kinds::{DatabaseInstance, database_instance};
use apis::reference::{
    INDEX_FILE, code, default_docs_root, escape_cell, generated_files, inline, page_file_name,
    stale_files,
};
use crossplane_types::Managed;
use serde_json::Value;

#[test]
fn committed_api_reference_matches_the_rust_types() {
    let stale = stale_files(&default_docs_root()).unwrap();
    assert!(
        stale.is_empty(),
        "stale API reference pages in docs/reference/api: {stale:?}: run `{REGENERATE_COMMAND}` \
         and commit the result"
    );
}

#[test]
fn a_changed_missing_or_extra_page_is_reported_stale() {
    let dir = tempfile::tempdir().unwrap();
    apis::reference::write(dir.path()).unwrap();
    assert!(stale_files(dir.path()).unwrap().is_empty());
    let vpc = dir.path().join("vpcs.network.fakecloud.m.crossplane.io.md");
    fs::write(
        &vpc,
        fs::read_to_string(&vpc)
            .unwrap()
            .replace("cidrBlock", "cidr"),
    )
    .unwrap();
    fs::write(dir.path().join("old.md"), "# Leftover\n").unwrap();
    fs::write(dir.path().join("notes.txt"), "not a page\n").unwrap();
    fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
    let mut stale = stale_files(dir.path()).unwrap();
    stale.sort();
    assert_eq!(
        stale,
        [
            PathBuf::from("README.md"),
            PathBuf::from("old.md"),
            PathBuf::from("vpcs.network.fakecloud.m.crossplane.io.md"),
        ]
    );
    apis::reference::write(dir.path()).unwrap();
    assert!(
        stale_files(dir.path()).unwrap().is_empty(),
        "regenerating repairs and removes leftovers"
    );
    assert!(!dir.path().join("old.md").exists());
    assert!(
        dir.path().join("notes.txt").exists(),
        "only .md files are generation's to remove"
    );
}

/// The generated text of `file` (a page or the index).
fn generated(file: &str) -> String {
    generated_files()
        .into_iter()
        .find(|f| f.path == Path::new(file))
        .unwrap_or_else(|| panic!("no generated {file}"))
        .contents
}

/// The cells of a table row: split at the pipes not escaped by a backslash.
fn cells(row: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        if c == '|' && !escaped {
            cells.push(String::new());
        } else if let Some(cell) = cells.last_mut() {
            cell.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    // Drop what lies outside the outer pipes.
    cells.pop();
    cells.remove(0);
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

/// The text of the `## {title}` section of `page`, up to the next `## `.
fn section<'a>(page: &'a str, title: &str) -> &'a str {
    let start = page
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no section {title}"));
    let rest = &page[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 3);
    &rest[..end]
}

/// The cells of the table row for the field `path` in `text`.
fn field_row(text: &str, path: &str) -> Vec<String> {
    let start = format!("| {} |", escape_cell(&code(path)));
    let row = text
        .lines()
        .find(|line| line.starts_with(&start))
        .unwrap_or_else(|| panic!("no row for {path}"));
    cells(row)
}

/// A generated CRD of `package/crds`, as YAML reads it.
fn committed_crd(file: &str) -> Value {
    let path = default_package_root().join("crds").join(file);
    serde_yaml::from_str(&fs::read_to_string(&path).unwrap()).unwrap()
}

/// The schema of `version` in `crd` at `pointer` (under `openAPIV3Schema`).
fn schema_at<'a>(crd: &'a Value, version: &str, pointer: &str) -> &'a Value {
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap();
    version["schema"]["openAPIV3Schema"]
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer}"))
}

#[test]
fn the_vpc_page_documents_cidr_block_with_its_type_description_and_cel_rule() {
    let crd = committed_crd("network.fakecloud.m.crossplane.io_vpcs.yaml");
    let page = generated("vpcs.network.fakecloud.m.crossplane.io.md");
    for version in ["v1beta1", "v1alpha1"] {
        let schema = schema_at(
            &crd,
            version,
            "/properties/spec/properties/forProvider/properties/cidrBlock",
        );
        let rules = schema["x-kubernetes-validations"].as_array().unwrap();
        assert_eq!(
            (&rules[0]["rule"], &rules[0]["message"]),
            (
                &Value::from("self == oldSelf"),
                &Value::from("cidrBlock is immutable")
            ),
            "the CRD carries the rule this test looks for"
        );
        let row = field_row(section(&page, version), "spec.forProvider.cidrBlock");
        assert_eq!(row[0], "`spec.forProvider.cidrBlock`");
        assert_eq!(row[1], "string");
        assert_eq!(
            row[2], "",
            "cidrBlock is required by a rule, not the schema"
        );
        assert_eq!(row[4], inline(schema["description"].as_str().unwrap()));
        assert!(row[4].starts_with("IPv4 range of the VPC in CIDR notation"));
        assert_eq!(
            row[5],
            "CEL (on update) `self == oldSelf`: cidrBlock is immutable"
        );
        let region = field_row(section(&page, version), "spec.forProvider.region");
        assert_eq!(region[2], "yes");
    }
}

#[test]
fn a_pattern_with_a_pipe_stays_in_its_cell() {
    let crd = committed_crd("query.fakecloud.m.crossplane.io_vpcqueries.yaml");
    let pattern = schema_at(
        &crd,
        "v1alpha1",
        "/properties/spec/properties/filter/properties/cidrBlock/pattern",
    )
    .as_str()
    .unwrap();
    assert!(pattern.contains('|'), "the CRD's pattern has alternatives");
    let page = generated("vpcqueries.query.fakecloud.m.crossplane.io.md");
    let row = field_row(section(&page, "v1alpha1"), "spec.filter.cidrBlock");
    assert_eq!(row.len(), 6);
    assert_eq!(row[5].replace("\\|", "|"), format!("pattern `{pattern}`"));
    let tags = field_row(section(&page, "v1alpha1"), "spec.filter.tags");
    assert_eq!(tags[1], "array of string");
    assert_eq!(tags[5], "max items 50<br>list type `set`");
    let items = field_row(section(&page, "v1alpha1"), "spec.filter.tags[]");
    assert_eq!(items[5], "pattern `^[^=]{1,128}(=.{0,256})?$`");
    let name_rule = section(&page, "v1alpha1")
        .lines()
        .find(|l| l.starts_with("- CEL "))
        .unwrap();
    assert!(
        name_rule.contains("`size(self.metadata.name) <= 63`"),
        "a rule on the whole object is listed above the table: {name_rule}"
    );
}

#[test]
fn a_deprecated_version_is_marked_deprecated_and_listed_after_the_newer_one() {
    let page = generated("vpcs.network.fakecloud.m.crossplane.io.md");
    let warning = "network.fakecloud.m.crossplane.io/v1alpha1 VPC is deprecated; \
                   use network.fakecloud.m.crossplane.io/v1beta1";
    let versions = section(&page, "Versions");
    let rows: Vec<Vec<String>> = versions
        .lines()
        .filter(|l| l.starts_with("| ["))
        .map(cells)
        .collect();
    assert_eq!(
        rows,
        [
            ["[v1beta1](#v1beta1)", "yes", "yes", ""],
            [
                "[v1alpha1](#v1alpha1)",
                "yes",
                "",
                &format!("yes: {warning}")
            ],
        ]
    );
    assert!(page.find("\n## v1beta1\n").unwrap() < page.find("\n## v1alpha1\n").unwrap());
    assert!(section(&page, "v1alpha1").contains(&format!("**Deprecated:** {warning}")));
    assert!(section(&page, "v1beta1").contains("The storage version."));
    assert!(!section(&page, "v1beta1").contains("Deprecated"));
    let index = generated(INDEX_FILE);
    let vpc = index
        .lines()
        .find(|l| l.contains("(vpcs.network.fakecloud.m.crossplane.io.md)"))
        .unwrap();
    assert_eq!(
        cells(vpc)[3],
        "`v1beta1` (storage), `v1alpha1` (deprecated)"
    );
}

#[test]
fn escaping_keeps_a_pipe_or_a_tag_in_a_description_from_breaking_the_row() {
    let description = "Either `a|b` or c | d,\nnot <b>bold</b>; `x < y`";
    let cell = escape_cell(&inline(description));
    assert_eq!(
        cell,
        "Either `a\\|b` or c \\| d, not &lt;b&gt;bold&lt;/b&gt;; `x < y`"
    );
    let row = format!("| `f` | {cell} | v |");
    assert_eq!(cells(&row), ["`f`", cell.as_str(), "v"]);
    assert_eq!(inline("an ` unmatched <x>"), "an ` unmatched &lt;x&gt;");
    assert_eq!(inline("``a ` <b>`` <c>"), "``a ` <b>`` &lt;c&gt;");
    assert_eq!(code("self.a\n  || b"), "`self.a || b`");
    assert_eq!(code("a`b"), "``a`b``");
    assert_eq!(code("`x"), "`` `x ``");
}

#[test]
fn database_instance_pages_list_their_connection_secret_keys() {
    let pages = [
        (
            "databaseinstances.database.fakecloud.m.crossplane.io.md",
            database_instance::v1beta1::DatabaseInstance::CONNECTION_DETAILS,
        ),
        (
            "databaseinstances.database.fakecloud.crossplane.io.md",
            DatabaseInstance::CONNECTION_DETAILS,
        ),
    ];
    for (file, details) in pages {
        let page = generated(file);
        let keys = section(&page, "Connection secret keys");
        let rows: Vec<Vec<String>> = keys
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(cells)
            .collect();
        let expected: Vec<Vec<String>> = details
            .iter()
            .map(|d| vec![code(d.name), inline(d.description)])
            .collect();
        assert_eq!(rows, expected, "{file}");
        let names: Vec<&str> = details.iter().map(|d| d.name).collect();
        assert_eq!(names, ["endpoint", "port", "username", "password"]);
    }
    let vpc = generated("vpcs.network.fakecloud.m.crossplane.io.md");
    assert!(section(&vpc, "Connection secret keys").contains("None"));
    let config = generated("providerconfigs.fakecloud.m.crossplane.io.md");
    assert!(
        !config.contains("## Connection secret keys"),
        "only managed kinds have connection details"
    );
}

#[test]
fn the_index_lists_every_crd_once_in_its_section() {
    let index = generated(INDEX_FILE);
    let sections = [
        ("Managed resources, namespaced (Crossplane v2)", 4),
        ("Managed resources, cluster-scoped (legacy)", 4),
        ("Provider configuration", 6),
        ("Queries", 4),
    ];
    let mut listed = Vec::new();
    for (title, count) in sections {
        let rows: Vec<Vec<String>> = section(&index, title)
            .lines()
            .filter(|l| l.starts_with("| ["))
            .map(cells)
            .collect();
        assert_eq!(rows.len(), count, "{title}");
        for row in rows {
            let group = row[1].trim_matches('`').to_owned();
            match title {
                "Managed resources, namespaced (Crossplane v2)" => {
                    assert!(group.ends_with(".fakecloud.m.crossplane.io"), "{group}");
                    assert_eq!(row[2], "Namespaced");
                }
                "Managed resources, cluster-scoped (legacy)" => {
                    assert!(group.ends_with(".fakecloud.crossplane.io"), "{group}");
                    assert_eq!(row[2], "Cluster");
                }
                _ => {}
            }
            assert!(!row[4].is_empty(), "a description for {}", row[0]);
            listed.push(row[0].clone());
        }
    }
    assert!(!index.contains("## Other kinds"));
    let expected: Vec<String> = apis::generate::crds()
        .iter()
        .map(|crd| {
            format!(
                "[{}]({})",
                crd.spec.names.kind,
                page_file_name(crd.metadata.name.as_deref().unwrap())
            )
        })
        .collect();
    let listed: BTreeSet<String> = listed.into_iter().collect();
    assert_eq!(listed, expected.into_iter().collect::<BTreeSet<_>>());
}

/// GitHub's anchors for the headings of `page`: lower case, punctuation
/// dropped, spaces as hyphens, `-1`, `-2`, … on repeats.
fn anchors(page: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for line in page.lines().filter(|l| l.starts_with('#')) {
        let text = line.trim_start_matches('#').trim();
        let base: String = text
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        anchors.insert(anchor);
    }
    anchors
}

/// The targets of the Markdown links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .collect()
}

#[test]
fn every_link_resolves() {
    let files = generated_files();
    let names: BTreeSet<String> = files
        .iter()
        .map(|f| f.path.to_string_lossy().into_owned())
        .collect();
    let mut crd_links = 0;
    for file in &files {
        let at = file.path.display();
        for target in link_targets(&file.contents) {
            assert!(
                !target.contains("://"),
                "{at}: only relative links: {target}"
            );
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let linked = if path.is_empty() {
                &file.contents
            } else if let Some(crd) = path.strip_prefix("../../../package/crds/") {
                let on_disk = default_package_root().join("crds").join(crd);
                assert!(on_disk.is_file(), "{at}: {target}");
                assert!(anchor.is_empty(), "{at}: {target}");
                crd_links += 1;
                continue;
            } else {
                assert!(names.contains(path), "{at}: no page {target}");
                &files
                    .iter()
                    .find(|f| f.path == Path::new(path))
                    .unwrap()
                    .contents
            };
            if !anchor.is_empty() {
                assert!(
                    anchors(linked).contains(anchor),
                    "{at}: no heading for {target}"
                );
            }
        }
    }
    assert_eq!(
        crd_links,
        apis::generate::crds().len(),
        "each page links its CRD"
    );
}

#[test]
fn every_table_row_has_as_many_cells_as_its_header() {
    for file in generated_files() {
        let mut header: Option<usize> = None;
        for line in file.contents.lines() {
            if !line.starts_with('|') {
                header = None;
                continue;
            }
            let count = cells(line).len();
            match header {
                None => header = Some(count),
                Some(expected) => assert_eq!(count, expected, "{}: {line}", file.path.display()),
            }
        }
    }
}

#[test]
fn generated_pages_say_how_to_regenerate_them_and_have_no_trailing_whitespace() {
    let files = generated_files();
    assert_eq!(files, generated_files(), "generation is deterministic");
    for file in files {
        let at = file.path.display();
        assert!(
            file.contents.starts_with(
                "<!-- Generated from the Rust types in apis/src by \
                 `cargo run -p apis --bin generate`. Do not edit"
            ),
            "{at}"
        );
        assert!(
            file.contents.ends_with('\n') && !file.contents.ends_with("\n\n"),
            "{at}: one final newline"
        );
        for (n, line) in file.contents.lines().enumerate() {
            assert_eq!(line, line.trim_end(), "{at}:{}: trailing whitespace", n + 1);
        }
    }
}
