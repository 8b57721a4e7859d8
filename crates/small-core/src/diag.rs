//! Diagnostics: what is wrong, where (file, line, column, JSON path), which rule, and how
//! to fix it. Every check in the library reports through this one type so that text output,
//! `--json` output, docs and tests all name problems the same way.

use serde::Serialize;

/// A position in a source file. `line` and `column` are 1-based (column counts characters);
/// `offset` is the byte offset from the start of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    #[serde(skip)]
    pub offset: u32,
}

/// A byte range in a source file, with the positions of both ends (end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    pub fn byte_range(&self) -> std::ops::Range<usize> {
        self.start.offset as usize..self.end.offset as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem found in a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable rule code (`schema`, `yaml`, `S1`, `INV2`, ...). Documented in docs/.
    pub code: String,
    pub severity: Severity,
    /// Path of the file, relative to the workspace root (`.small/plan.small.yml`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Where in the file, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// JSON pointer of the offending value inside the artifact (`/tasks/2/status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What is wrong, in one sentence.
    pub message: String,
    /// How to fix it, if we can say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// For a secret found in an artifact: the format recognised and the secret masked. The
    /// span then covers the secret, which renderers must show masked, never as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretNote>,
}

/// A credential found in an artifact, described without disclosing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretNote {
    /// The format recognised (`GitHub token`, `password in a URL`, ...).
    pub kind: String,
    /// The secret with all but a public prefix hidden (`ghp_…[36 chars redacted]`).
    pub masked: String,
}

impl Diagnostic {
    /// The diagnostic on one or two lines, for messages: `file:line:col: [CODE] message` and
    /// its help.
    pub fn plain(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.file {
            s.push_str(f);
            if let Some(sp) = &self.span {
                s.push_str(&format!(":{}:{}", sp.start.line, sp.start.column));
            }
            s.push_str(": ");
        }
        s.push_str(&format!("[{}] {}", self.code, self.message));
        if let Some(h) = &self.help {
            s.push_str(&format!("\n  help: {h}"));
        }
        s
    }

    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            code: code.into(),
            severity: Severity::Error,
            file: None,
            span: None,
            path: None,
            message: message.into(),
            help: None,
            secret: None,
        }
    }

    pub fn warning(code: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_secret(mut self, kind: impl Into<String>, masked: impl Into<String>) -> Self {
        self.secret = Some(SecretNote {
            kind: kind.into(),
            masked: masked.into(),
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Stable report order: by file, then position, then code and message.
    pub fn sort_key(&self) -> (Option<&str>, Option<Pos>, &str, &str) {
        (
            self.file.as_deref(),
            self.span.map(|s| s.start),
            &self.code,
            &self.message,
        )
    }
}

/// Sort diagnostics into the stable report order (file, then position).
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}
