//! What snapshots and recordings share: files of JSON lines whose first
//! line is a header naming the format, its version and the fakecloud that
//! wrote it, then one record per line.
//!
//! The versioning rule of both: a format's version grows whenever a change
//! would make an older fakecloud misread a file. A fakecloud reads every
//! version up to its own (an older file is upgraded as it is read) and
//! refuses a newer one, naming the fakecloud that wrote it.

use std::io::{BufRead, Read};

use flate2::bufread::GzDecoder;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The version of the fakecloud written into every file.
pub const FAKECLOUD_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The first bytes of a gzip file.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// One format: its header's `format`, the newest version this fakecloud
/// reads, and what people call it.
#[derive(Clone, Copy, Debug)]
pub struct FileKind {
    pub format: &'static str,
    pub version: u32,
    pub what: &'static str,
}

/// Why a file cannot be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FileError {
    /// Not a file of this format at all: another file, or empty.
    #[error("not a fakecloud {what}: {reason}")]
    NotThisFormat { what: &'static str, reason: String },
    /// Written by a newer fakecloud in a version this one cannot read.
    #[error(
        "{what} format version {found} is newer than version {supported}, the newest this \
         fakecloud ({FAKECLOUD_VERSION}) reads; it was written by fakecloud {made_by}"
    )]
    NewerFormat {
        what: &'static str,
        found: u64,
        supported: u32,
        made_by: String,
    },
    /// A file of this format, damaged: truncated, bit rot, broken edits.
    #[error("corrupt {what}, line {line}: {reason}")]
    Corrupt {
        what: &'static str,
        line: usize,
        reason: String,
    },
}

impl FileKind {
    pub fn corrupt(&self, line: usize, reason: impl Into<String>) -> FileError {
        FileError::Corrupt {
            what: self.what,
            line,
            reason: reason.into(),
        }
    }

    pub fn not_this_format(&self, reason: impl Into<String>) -> FileError {
        FileError::NotThisFormat {
            what: self.what,
            reason: reason.into(),
        }
    }

    /// The lines of `file`, gzip'd (told by its magic bytes) or not, at
    /// most `max_bytes` of them once decompressed (a bound on what a gzip
    /// bomb can make the server hold).
    pub fn lines<'a>(&self, file: &'a [u8], max_bytes: u64) -> Lines<'a> {
        let reader: Box<dyn BufRead + 'a> = if file.starts_with(&GZIP_MAGIC) {
            Box::new(std::io::BufReader::new(
                GzDecoder::new(file).take(max_bytes + 1),
            ))
        } else {
            Box::new(file.take(max_bytes + 1))
        };
        Lines {
            kind: *self,
            reader,
            max_bytes,
            number: 0,
            read: 0,
            buffer: Vec::new(),
            cut: false,
        }
    }

    /// Line 1: a header of this format, in a version this fakecloud reads.
    pub fn header<H: DeserializeOwned>(&self, line: Option<&[u8]>) -> Result<H, FileError> {
        let line = line.ok_or_else(|| self.not_this_format("the file is empty"))?;
        let value: Value = serde_json::from_slice(line)
            .map_err(|_| self.not_this_format("its first line is not a JSON header"))?;
        if value.get("format").and_then(Value::as_str) != Some(self.format) {
            return Err(self.not_this_format(format!(
                "its first line does not say \"format\": \"{}\"",
                self.format
            )));
        }
        let version = value
            .get("formatVersion")
            .and_then(Value::as_u64)
            .filter(|v| *v >= 1)
            .ok_or_else(|| self.corrupt(1, "formatVersion is not a version (1, 2, ...)"))?;
        if version > u64::from(self.version) {
            let made_by = value
                .get("fakecloudVersion")
                .and_then(Value::as_str)
                .unwrap_or("of an unknown version")
                .to_string();
            return Err(FileError::NewerFormat {
                what: self.what,
                found: version,
                supported: self.version,
                made_by,
            });
        }
        serde_json::from_value(value).map_err(|e| self.corrupt(1, format!("header: {e}")))
    }
}

/// The lines of a file, each numbered (from 1), its newline cut.
pub struct Lines<'a> {
    kind: FileKind,
    reader: Box<dyn BufRead + 'a>,
    max_bytes: u64,
    number: usize,
    read: u64,
    buffer: Vec<u8>,
    /// The line returned last had no newline: the file was cut there.
    cut: bool,
}

impl Lines<'_> {
    /// The number of the line `next` returned last.
    pub fn number(&self) -> usize {
        self.number
    }

    /// The next line; `None` at the end. Every line, the last too, must
    /// end with a newline: a last line without one is returned (so that a
    /// file of another format is told as such by its first line), and the
    /// call after it fails.
    pub fn next(&mut self) -> Result<Option<&[u8]>, FileError> {
        if self.cut {
            return Err(self.kind.corrupt(
                self.number,
                "the last line ends without a newline (truncated?)",
            ));
        }
        self.buffer.clear();
        let read = self
            .reader
            .read_until(b'\n', &mut self.buffer)
            .map_err(|e| {
                self.kind.corrupt(
                    self.number + 1,
                    format!("reading: {e} (truncated or damaged)"),
                )
            })?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        self.read += read as u64;
        if self.read > self.max_bytes {
            return Err(self.kind.corrupt(
                self.number,
                format!("larger than {} bytes uncompressed", self.max_bytes),
            ));
        }
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
        } else {
            self.cut = true;
        }
        Ok(Some(&self.buffer))
    }

    /// The next line as a `T`.
    pub fn record<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FileError> {
        let kind = self.kind;
        let Some(line) = self.next()? else {
            return Ok(None);
        };
        let record = serde_json::from_slice(line)
            .map_err(|e| kind.corrupt(self.number, format!("not a record: {e}")))?;
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    const KIND: FileKind = FileKind {
        format: "test-file",
        version: 2,
        what: "test file",
    };

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Header {
        format: String,
        format_version: u32,
    }

    fn first(file: &[u8]) -> Result<Header, FileError> {
        let mut lines = KIND.lines(file, 1 << 20);
        let line = lines.next()?.map(<[u8]>::to_vec);
        KIND.header(line.as_deref())
    }

    #[test]
    fn a_header_of_this_format_and_an_older_or_equal_version_is_read() {
        for version in [1, 2] {
            let file = format!("{{\"format\":\"test-file\",\"formatVersion\":{version}}}\n");
            assert_eq!(first(file.as_bytes()).unwrap().format_version, version);
        }
    }

    #[test]
    fn a_newer_version_is_refused_naming_its_writer() {
        let file =
            b"{\"format\":\"test-file\",\"formatVersion\":3,\"fakecloudVersion\":\"9.0.0\"}\n";
        let err = first(file).unwrap_err();
        assert!(
            matches!(&err, FileError::NewerFormat { found: 3, supported: 2, made_by, .. } if made_by == "9.0.0"),
            "{err}"
        );
    }

    #[test]
    fn other_files_are_not_this_format() {
        for file in [
            &b""[..],
            b"hello\n",
            b"{\"format\":\"other\"}\n",
            b"\x00\x01",
        ] {
            assert!(
                matches!(first(file), Err(FileError::NotThisFormat { .. })),
                "{file:?}"
            );
        }
    }

    #[test]
    fn gzip_is_read_and_a_cut_gzip_is_corrupt() {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(b"{\"format\":\"test-file\",\"formatVersion\":1}\n")
            .unwrap();
        let gz = encoder.finish().unwrap();
        assert_eq!(first(&gz).unwrap().format_version, 1);
        // Cut anywhere, even in the trailer after the last line, the file
        // does not read to its end.
        for cut in [gz.len() / 2, gz.len() - 1] {
            let mut lines = KIND.lines(&gz[..cut], 1 << 20);
            let end = loop {
                match lines.next() {
                    Ok(Some(_)) => continue,
                    other => break other.map(|_| ()),
                }
            };
            assert!(
                matches!(end, Err(FileError::Corrupt { .. })),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_last_line_without_newline_or_too_many_bytes_is_corrupt() {
        let mut lines = KIND.lines(b"{}\n{}", 1 << 20);
        assert_eq!(lines.next().unwrap(), Some(&b"{}"[..]));
        assert_eq!(lines.next().unwrap(), Some(&b"{}"[..]));
        assert!(matches!(
            lines.next(),
            Err(FileError::Corrupt { line: 2, .. })
        ));
        let mut lines = KIND.lines(b"0123456789\n", 5);
        assert!(matches!(
            lines.next(),
            Err(FileError::Corrupt { line: 1, .. })
        ));
    }
}
