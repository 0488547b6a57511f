//! The documentation: the generated reference pages (`docs/reference/`)
//! are current and show what they should, and every relative link and
//! anchor of the repository's Markdown holds. No control plane, no Docker.

// A folder of its own, so Cargo does not take it for a test binary.
#[path = "docs/links.rs"]
mod links;

use std::fs;
use std::path::PathBuf;

use e2e::reference::{self, FLAGS_PAGE, METRICS_PAGE, REGENERATE_COMMAND};
use links::Link;

#[test]
fn committed_reference_pages_are_current() {
    let stale = reference::stale_files(&reference::workspace_root()).unwrap();
    assert!(
        stale.is_empty(),
        "stale generated pages {stale:?}: run `{REGENERATE_COMMAND}` and commit the result"
    );
}

#[test]
fn a_changed_or_missing_page_is_reported_stale() {
    let dir = tempfile::tempdir().unwrap();
    reference::write(dir.path()).unwrap();
    assert!(reference::stale_files(dir.path()).unwrap().is_empty());
    let flags = dir.path().join(FLAGS_PAGE);
    let text = fs::read_to_string(&flags).unwrap();
    fs::write(&flags, text.replace("PROVIDER_POLL_INTERVAL", "POLL")).unwrap();
    fs::remove_file(dir.path().join(METRICS_PAGE)).unwrap();
    assert_eq!(
        reference::stale_files(dir.path()).unwrap(),
        [PathBuf::from(FLAGS_PAGE), PathBuf::from(METRICS_PAGE)]
    );
    reference::write(dir.path()).unwrap();
    assert!(reference::stale_files(dir.path()).unwrap().is_empty());
}

#[test]
fn generated_pages_say_how_to_regenerate_them() {
    for page in [reference::flags_page(), reference::metrics_page()] {
        let first = page.lines().next().unwrap();
        assert!(
            first.starts_with("<!--") && first.contains(REGENERATE_COMMAND),
            "{first}"
        );
        assert!(first.contains("Do not edit"), "{first}");
    }
}

/// The cells of the row starting with `first` in the section headed
/// `## {section}` (not its subsections).
fn cells(page: &str, section: &str, first: &str) -> Vec<String> {
    let body = page
        .split("\n## ")
        .find_map(|s| s.strip_prefix(&format!("{section}\n")))
        .unwrap_or_else(|| panic!("no section {section} in:\n{page}"));
    let body = body.split("\n### ").next().unwrap_or_default();
    let row = body
        .lines()
        .find(|line| line.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row {first} in section {section}:\n{body}"));
    row.trim_matches('|')
        .split(" | ")
        .map(|cell| cell.trim().to_owned())
        .collect()
}

#[test]
fn the_flags_page_shows_each_flag_with_its_aliases_environment_and_default() {
    let page = reference::flags_page();
    let poll = cells(&page, "provider", "`--poll-interval`, `--poll`");
    assert_eq!(poll[1..3], ["`PROVIDER_POLL_INTERVAL`", "`1m`"]);
    assert!(
        poll[3].starts_with("How often a healthy resource is observed again"),
        "{poll:?}"
    );
    let debug = cells(&page, "provider", "`-d`, `--debug`");
    assert_eq!(debug[1..3], ["`PROVIDER_DEBUG`", "`false`"]);
    let listen = cells(&page, "fakecloud", "`--listen`");
    assert_eq!(
        listen,
        [
            "`--listen`",
            "`FAKECLOUD_LISTEN`",
            "`127.0.0.1:8787`",
            "Address to listen on (port 0: any free port)"
        ]
    );
    assert!(page.contains("\n### fakecloud replay\n"), "{page}");
    assert!(
        page.contains("\n| `<FILE>` |  |  | The recording |\n"),
        "{page}"
    );
    assert!(page.contains("\n| `--on-node` |"), "{page}");
    assert!(
        !page.contains("--clock-offset-ms"),
        "hidden flags are left out"
    );
}

#[test]
fn the_metrics_page_shows_each_family_with_its_type_labels_and_help() {
    let page = reference::metrics_page();
    assert_eq!(
        cells(&page, "provider", "`provider_reconciles_total`"),
        [
            "`provider_reconciles_total`",
            "counter",
            "",
            "`kind`, `result`",
            "Reconciles by kind and result."
        ]
    );
    assert_eq!(
        cells(&page, "provider", "`provider_reconcile_duration_seconds`")[1],
        "histogram"
    );
    assert_eq!(
        cells(&page, "fakecloud", "`fakecloud_http_requests_total`"),
        [
            "`fakecloud_http_requests_total`",
            "counter",
            "",
            "`method`, `route`, `status`",
            "HTTP requests answered."
        ]
    );
}

/// The metrics page gets one sample into each family
/// (`e2e::reference`: prometheus-client leaves out families without
/// samples, and a registry cannot be listed), so a family registered
/// without one would be missing; the registrations in the sources say
/// which to expect.
#[test]
fn every_registered_metric_family_is_on_the_metrics_page() {
    let page = reference::metrics_page();
    let root = reference::workspace_root();
    let mut sources = vec![
        root.join("runtime/src/metrics.rs"),
        root.join("fakecloud/src/metrics.rs"),
    ];
    for entry in fs::read_dir(root.join("runtime/src/metrics")).unwrap() {
        sources.push(entry.unwrap().path());
    }
    let mut registered = 0;
    for source in sources {
        let text = fs::read_to_string(&source).unwrap();
        for call in text.split(".register(").skip(1) {
            let Some(name) = call
                .trim_start()
                .strip_prefix('"')
                .and_then(|rest| rest.split('"').next())
            else {
                continue;
            };
            registered += 1;
            assert!(
                page.contains(&format!("{name}` |")) || page.contains(&format!("{name}_total` |")),
                "{name} (registered in {}) is not on the metrics page: record a sample into it \
                 in e2e::reference",
                source.display()
            );
        }
    }
    assert!(registered > 30, "found only {registered} registrations");
}

#[test]
fn a_pipe_in_help_text_is_escaped_and_a_cell_is_one_line() {
    assert_eq!(
        reference::escape_cell("`a|b` or\n  c | d"),
        "`a\\|b` or c \\| d"
    );
    let command = clap::Command::new("x").arg(
        clap::Arg::new("mode")
            .long("mode")
            .help("fast | slow,\nor neither"),
    );
    let table = reference::flags_table(&command);
    assert!(
        table.contains("\n| `--mode` |  |  | fast \\| slow, or neither |\n"),
        "{table}"
    );
    let exposition = "# HELP x A | B.\n# TYPE x counter\nx_total{k=\"a,b\\\"}\",j=\"c\"} 1\n";
    let table = reference::metrics_table(exposition);
    assert!(
        table.contains("\n| `x_total` | counter |  | `j`, `k` | A \\| B. |\n"),
        "{table}"
    );
}

#[test]
fn heading_ids_follow_github() {
    assert_eq!(links::slug("Flags reference"), "flags-reference");
    assert_eq!(links::slug("A - b_c"), "a---b_c");
    let markdown = "\
# The `--poll` flag (provider: v1.2/beta)
## Set-up
## Set-up
### See [the flags](flags.md) ##
<a id=\"here\"></a> and <a name='there'>
```
# Not a heading
```
    # Indented four: not a heading
";
    let anchors: Vec<String> = links::anchors(markdown).into_iter().collect();
    assert_eq!(
        anchors,
        [
            "here",
            "see-the-flags",
            "set-up",
            "set-up-1",
            "the---poll-flag-provider-v12beta",
            "there",
        ]
    );
}

#[test]
fn links_are_found_outside_code() {
    let markdown = "\
See [a](a.md) and ![b](img/b.png \"title\") and `[c](c.md)`.
[d](d.md#part), [e](#local) and [f](<f g.md>)
```sh
[h](h.md)
```
A span `over
[i](i.md) two lines` ends.
[id]: ref.md
<img src=\"pic.png\"> <a href=\"https://example.com\">x</a>
";
    let link = |line, target: &str| Link {
        line,
        target: target.to_owned(),
    };
    assert_eq!(
        links::links(markdown),
        [
            link(1, "a.md"),
            link(1, "img/b.png"),
            link(2, "d.md#part"),
            link(2, "#local"),
            link(2, "f g.md"),
            link(8, "ref.md"),
            link(9, "pic.png"),
            link(9, "https://example.com"),
        ]
    );
}

#[test]
fn a_broken_link_or_anchor_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::create_dir_all(root.join(".hidden")).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(
        root.join("README.md"),
        "# Top\n\
         [ok](docs/a.md#intro), [folder](docs), [web](https://example.com/x.md)\n\
         [missing](docs/missing.md)\n\
         [bad anchor](docs/a.md#nope)\n\
         [self](#top) [not here](#bottom)\n",
    )
    .unwrap();
    fs::write(
        root.join("docs/a.md"),
        "# Intro\n[up](../README.md#top) [code](../src/main.rs#L10)\n",
    )
    .unwrap();
    fs::write(root.join("target/x.md"), "[gone](nowhere.md)\n").unwrap();
    fs::write(root.join(".hidden/x.md"), "[gone](nowhere.md)\n").unwrap();
    assert_eq!(
        links::broken_links(root),
        [
            "README.md:3: docs/missing.md (no file or folder docs/missing.md)",
            "README.md:4: docs/a.md#nope (no heading or anchor #nope in docs/a.md)",
            "README.md:5: #bottom (no heading or anchor #bottom in README.md)",
        ]
    );
}

#[test]
fn every_relative_link_and_anchor_in_the_markdown_holds() {
    let broken = links::broken_links(&reference::workspace_root());
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}
