//! The check that every relative link of the repository's Markdown files
//! holds: the file or folder it names exists, and an anchor into a
//! Markdown file names one of its headings (as GitHub makes their ids) or
//! an explicit `<a id>`/`<a name>`. Links with a scheme (`https:`,
//! `mailto:`) are not followed, nor anchors into other files (`#L10`).
//!
//! A small reader, not a Markdown parser: it knows fenced code blocks,
//! code spans, inline links and images, reference definitions, `src=` and
//! `href=` attributes and ATX (`#`) headings, which is what the
//! repository's Markdown uses.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// One link: the line it is on (from 1) and its target as written.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub target: String,
}

/// The folders the walk skips besides hidden ones: build output and
/// fetched dependencies, whose Markdown is not the repository's.
const SKIPPED: [&str; 2] = ["target", "node_modules"];

/// Every `*.md` file under `root`, relative to it, sorted. Hidden folders
/// (`.git`, `.compose`) are skipped with the others.
pub fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let entries = fs::read_dir(root.join(&folder))
            .unwrap_or_else(|e| panic!("listing {}: {e}", root.join(&folder).display()));
        for entry in entries {
            let entry = entry.expect("a folder entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() && !name.starts_with('.') && !SKIPPED.contains(&name.as_str()) {
                folders.push(folder.join(&name));
            } else if kind.is_file() && name.ends_with(".md") {
                found.push(folder.join(&name));
            }
        }
    }
    found.sort();
    found
}

/// `markdown` with fenced code blocks and code spans blanked out (spaces;
/// line breaks kept, so positions keep their line numbers).
fn prose(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fence: Option<(char, usize)> = None;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        let blank = match fence {
            Some((c, n)) => {
                if run(c) >= n && trimmed.trim_start_matches(c).trim().is_empty() {
                    fence = None;
                }
                true
            }
            None => {
                fence = ['`', '~']
                    .into_iter()
                    .map(|c| (c, run(c)))
                    .find(|&(_, n)| n >= 3);
                fence.is_some()
            }
        };
        if blank {
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
        } else {
            out.push_str(line);
        }
    }
    without_code_spans(&out)
}

/// `text` with every code span blanked out. A span closes with a run of as
/// many backticks as opened it, within its paragraph; an unclosed run is
/// literal text.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let opening = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + opening;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '\n' && chars.get(j + 1) == Some(&'\n') {
                break;
            }
            if chars[j] == '`' {
                let run = chars[j..].iter().take_while(|&&c| c == '`').count();
                if run == opening {
                    close = Some(j + run);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                for c in &mut out[i..end] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = end;
            }
            None => i += opening,
        }
    }
    out.into_iter().collect()
}

/// A link destination at the start of `rest` (just after `(`, or after a
/// reference definition's colon): `<...>`, or up to whitespace or the
/// parenthesis that closes it. A title after it is left out.
fn destination(rest: &str) -> &str {
    let rest = rest.trim_start();
    if let Some(inner) = rest.strip_prefix('<') {
        return inner.split('>').next().unwrap_or_default();
    }
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return &rest[..i],
            ')' => depth -= 1,
            c if c.is_whitespace() => return &rest[..i],
            _ => {}
        }
    }
    rest
}

/// Every link of `markdown` outside code: inline links and images
/// (`[text](target)`, `![alt](target)`), reference definitions
/// (`[id]: target`) and HTML `src=`/`href=` attributes, in order.
pub fn links(markdown: &str) -> Vec<Link> {
    let text = prose(markdown);
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, _) in text.match_indices("](") {
        let target = destination(&text[at + 2..]);
        found.push((at, target.to_owned()));
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(rest) = line.trim_start_matches(' ').strip_prefix('[')
            && indent <= 3
            && let Some((id, after)) = rest.split_once("]:")
            && !id.starts_with('^')
        {
            found.push((offset, destination(after).to_owned()));
        }
        offset += line.len();
    }
    for attribute in ["src=", "href="] {
        for (at, _) in text.match_indices(attribute) {
            let rest = &text[at + attribute.len()..];
            let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let value = rest[1..].split(quote).next().unwrap_or_default();
            found.push((at, value.to_owned()));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found
        .into_iter()
        .filter(|(_, target)| !target.is_empty())
        .map(|(at, target)| Link {
            line: line_of(at),
            target,
        })
        .collect()
}

/// GitHub's id for a heading whose text is `text` (as rendered: see
/// [`heading_text`]): lower case, everything but letters, digits, spaces,
/// hyphens and underscores removed, spaces made hyphens.
pub fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The text a heading's Markdown renders to, as far as ids care: code
/// spans and links reduced to their text, images to their alt text, HTML
/// tags removed.
fn heading_text(markdown: &str) -> String {
    let mut text = String::new();
    let mut rest = markdown;
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            let run = rest.chars().take_while(|&x| x == '`').count();
            let fence = &rest[..run];
            if let Some(end) = rest[run..].find(fence) {
                text.push_str(rest[run..run + end].trim());
                rest = &rest[run + end + run..];
                continue;
            }
        }
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            rest = &rest[end + 1..];
            continue;
        }
        if c == ']' {
            // A link's or image's target, `(...)` or `[id]`, is not text.
            let after = &rest[1..];
            if after.starts_with('(') {
                rest = after.find(')').map_or(after, |end| &after[end + 1..]);
                continue;
            }
            if after.starts_with('[') {
                rest = after.find(']').map_or(after, |end| &after[end + 1..]);
                continue;
            }
        }
        if c == '[' || (c == '!' && rest[1..].starts_with('[')) {
            rest = &rest[1..];
            continue;
        }
        text.push(c);
        rest = &rest[c.len_utf8()..];
    }
    text
}

/// The ids a link's anchor may name in `markdown`: its ATX headings' (a
/// repeated one gets `-1`, `-2`, ...) and its explicit `<a id>` and
/// `<a name>` anchors.
pub fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let text = prose(markdown);
    // `prose` blanks code blocks' lines and keeps the others' line breaks,
    // so its lines pair with the raw ones; a heading is read from its raw
    // line, code spans and all.
    for (raw, prose_line) in markdown.lines().zip(text.lines()) {
        if prose_line.trim().is_empty() {
            continue;
        }
        let trimmed = raw.trim_start_matches(' ');
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if raw.len() - trimmed.len() > 3 || !(1..=6).contains(&level) {
            continue;
        }
        let rest = &trimmed[level..];
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            continue;
        }
        let mut content = rest.trim();
        let closing = content.trim_end_matches('#');
        if closing.is_empty() || closing.ends_with([' ', '\t']) {
            content = closing.trim_end();
        }
        let base = slug(&heading_text(content));
        let count = seen.entry(base.clone()).or_insert(0);
        let id = match *count {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        };
        *count += 1;
        found.insert(id);
    }
    for (at, _) in text.match_indices("<a ") {
        let tag = text[at..].split('>').next().unwrap_or_default();
        for attribute in ["id=", "name="] {
            for (start, _) in tag.match_indices(attribute) {
                // `id=` inside another attribute's name (`data-id=`) is not one.
                if !tag[..start].ends_with([' ', '\t', '\n']) {
                    continue;
                }
                let rest = &tag[start + attribute.len()..];
                if let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
                    found.insert(rest[1..].split(quote).next().unwrap_or_default().to_owned());
                }
            }
        }
    }
    found
}

/// Whether `target` names a scheme (`https:`, `mailto:`) or a host
/// (`//example.com`): not a file of the repository.
fn is_external(target: &str) -> bool {
    if target.starts_with("//") {
        return true;
    }
    match target.split_once(':') {
        Some((scheme, _)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// `%XX` escapes decoded (`a%20b` is `a b`); anything else kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = text.get(i + 1..i + 3);
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if bytes[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every broken relative link of the Markdown files under `root`, as
/// `file:line: target (reason)`, the file relative to `root`.
pub fn broken_links(root: &Path) -> Vec<String> {
    let mut anchors_of: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut broken = Vec::new();
    for file in markdown_files(root) {
        let markdown = fs::read_to_string(root.join(&file))
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for link in links(&markdown) {
            if is_external(&link.target) {
                continue;
            }
            let (path, anchor) = match link.target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (link.target.as_str(), None),
            };
            let path = percent_decoded(path.split('?').next().unwrap_or_default());
            let target = if path.is_empty() {
                file.clone()
            } else if let Some(from_root) = path.strip_prefix('/') {
                PathBuf::from(from_root)
            } else {
                file.parent().unwrap_or(Path::new("")).join(&path)
            };
            let mut report = |reason: String| {
                broken.push(format!(
                    "{}:{}: {} ({reason})",
                    file.display(),
                    link.line,
                    link.target
                ));
            };
            let full = root.join(&target);
            if !full.exists() {
                report(format!("no file or folder {}", target.display()));
                continue;
            }
            let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
                continue;
            };
            if !full.is_file() || full.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let known = anchors_of
                .entry(full.clone())
                .or_insert_with(|| anchors(&fs::read_to_string(&full).unwrap_or_default()));
            if !known.contains(&percent_decoded(anchor)) {
                report(format!(
                    "no heading or anchor #{anchor} in {}",
                    target.display()
                ));
            }
        }
    }
    broken
}
