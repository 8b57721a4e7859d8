//! Secret detection (spec invariant 1: secrets are never stored in canonical artifacts).
//!
//! Four kinds of evidence, in order of confidence:
//! 1. a well-known credential format anywhere in a string: PEM private keys, cloud keys (AWS,
//!    Google, Azure), VCS tokens (GitHub, GitLab), chat (Slack, Discord, Telegram), payment
//!    (Stripe, Square, Shopify), AI providers (OpenAI, Anthropic, Hugging Face, ...), package
//!    registries (npm, PyPI, Docker Hub), JWTs, `Authorization: Bearer`/`Basic` headers,
//!    connection strings (`AccountKey=`, `scheme://user:password@host`);
//! 2. a key whose name says it holds a secret (`password`, `api_key`, `client_secret`,
//!    `auth_token`, ...) with a non-placeholder value; the key name is read word by word, so
//!    `max_tokens` or `private_key_path` are not secrets;
//! 3. the same inside any text: `DB_PASSWORD=...`, `--token=...`, `"client_secret": "..."`,
//!    when the value looks like a credential (not `$VAR`, `<redacted>`, a path or a word);
//! 4. a long, random-looking token (32+ characters of the base64 / URL-safe alphabet, mixed
//!    character classes, not made of words). Never flagged by this rule: hexadecimal strings
//!    (hashes, replay IDs, UUIDs, digests), base64 that decodes to text, parts of URLs and of
//!    absolute paths (temp directories, opaque ids in URL paths), upper-case variable names,
//!    integrity hashes (`sha512-...`, `h1:...`) and `data:` URIs.
//!
//! Findings never repeat the secret: [`Finding::masked`] keeps at most a public prefix
//! (`ghp_…[36 chars redacted]`), and [`redact`] / [`redact_line`] mask every secret in a
//! message or a source line before it is printed.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{dfa, nfa::noncontiguous, Anchored};
use base64::Engine as _;
use regex::Regex;

use crate::diag::{Diagnostic, Pos, Span};
use crate::yaml::{find, Node, Style, Value};

/// Why a value looks like a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of credential it resembles (`GitHub token`, `password in a URL`, ...).
    pub kind: &'static str,
    /// Byte range of the secret inside the value.
    pub range: Range<usize>,
    /// How many bytes at the start of `range` are a public prefix that may be shown
    /// (`ghp_`, `sk_live_`, a PEM header).
    pub visible: usize,
}

impl Finding {
    /// The secret with everything but its public prefix hidden: `ghp_…[36 chars redacted]`.
    pub fn masked(&self, value: &str) -> String {
        let text = value.get(self.range.clone()).unwrap_or("");
        let shown = text.get(..self.visible).unwrap_or("");
        let hidden = text[shown.len()..].chars().count();
        mask_text(shown, hidden)
    }

    /// The kind and the masked secret, e.g. ``GitHub token `ghp_…[36 chars redacted]` ``.
    pub fn describe(&self, value: &str) -> String {
        format!("{} `{}`", self.kind, self.masked(value))
    }
}

fn mask_text(shown: &str, hidden: usize) -> String {
    if shown.is_empty() {
        format!("[{hidden} chars redacted]")
    } else {
        format!("{shown}…[{hidden} chars redacted]")
    }
}

/// A finding located in a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// JSON pointer of the value (`/tasks/2/password`).
    pub path: String,
    /// Where the secret is: the secret itself when it can be located in the source (a
    /// one-line plain or quoted scalar), otherwise the whole value.
    pub span: Span,
    /// The credential format recognised (`GitHub token`, `value of a secret-named key`).
    pub kind: &'static str,
    /// The secret, masked (`ghp_…[36 chars redacted]`).
    pub masked: String,
    /// Human description: the kind and the masked secret (never the secret itself).
    pub what: String,
}

// ---------------------------------------------------------------------------------------
// Well-known formats

/// What to check once a format's regex matched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing more.
    None,
    /// The token body must look random: a digit, or both cases.
    Random,
    /// A PEM header: the secret runs to the matching END line (or the end of the value).
    Pem,
    /// `scheme://user:password@host`: the password must not be a placeholder or a digest.
    UrlPassword,
    /// `Basic xxx`: the base64 must decode to `user:password`.
    Basic,
    /// `Bearer xxx`: the token must look like a credential.
    Bearer,
    /// AWS key ids: documentation examples (`...EXAMPLE`) are not secrets.
    Aws,
}

struct Pattern {
    kind: &'static str,
    /// The expression's source; compiled the first time a string holds its anchor, so a
    /// command that scans only ordinary text (most do) never pays for compiling it.
    source: &'static str,
    re: OnceLock<Option<Regex>>,
    check: Check,
}

impl Pattern {
    fn re(&self) -> Option<&Regex> {
        self.re
            .get_or_init(|| {
                let compiled = Regex::new(self.source).ok();
                debug_assert!(
                    compiled.is_some(),
                    "secret format {} does not compile",
                    self.kind
                );
                compiled
            })
            .as_ref()
    }
}

/// One literal that every match of a format contains (or a word of a secret key name).
struct Anchor {
    /// The format it stands for; `None`: a word of secret key names (`pass`, `token`, ...).
    format: Option<usize>,
    /// The literal as written: compared exactly unless the format ignores case.
    text: &'static str,
    ignore_case: bool,
    /// The format's regex starts with a word boundary before the literal.
    word_start: bool,
}

struct Patterns {
    list: Vec<Pattern>,
    /// Every anchor of every format, and the key-name words, by their first byte in either
    /// case (indexes into `anchor_info`): one pass over a string, comparing the anchors that
    /// can start at each byte, says which formats can match and whether a secret key name can
    /// occur in it. Most strings contain none and are dismissed there. Nothing is built for it,
    /// which suits the commands that scan a few strings (`status` masks what it shows, a
    /// writer refuses a secret it is given).
    by_first: Vec<Vec<u16>>,
    /// Whether an anchor starts with these two bytes, in any case (bit `lower(b0) << 8 |
    /// lower(b1)`; every anchor has two bytes at least): most bytes that can start an anchor
    /// are dismissed by one bit.
    pairs: Box<[u64; 1024]>,
    /// The same anchors in one case-insensitive NFA: quick to build, and quicker per byte
    /// than the search by first bytes; built once the scans have read [`NFA_AFTER_BYTES`].
    anchors_nfa: OnceLock<Option<noncontiguous::NFA>>,
    /// The same anchors as a DFA: slower to build, faster to run; built once the scans have
    /// read [`DFA_AFTER_BYTES`] (a gate over a long log). Neither automaton has a prefilter:
    /// the strings are short and the anchors' first bytes common, so the plain walk in
    /// [`candidates_in`] is the fast way through them.
    anchors_dfa: OnceLock<Option<dfa::DFA>>,
    anchor_info: Vec<Anchor>,
    /// Formats with no literal (matched when the string has a long enough token).
    unanchored: Vec<usize>,
}

/// Words that every secret key name contains (see [`is_secret_key_name`]).
const KEY_NAME_WORDS: [&str; 7] = ["pass", "pwd", "secret", "token", "key", "cred", "pat"];

/// The formats. In each regex, group `s` (if present) is the secret and group `p` (if
/// present, at the start of `s`) its public prefix; otherwise the whole match is the secret.
const FORMATS: &[(&str, &str, Check, &[&str])] = &[
    (
        "PEM private key",
        r"(?P<p>-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)",
        Check::Pem,
        &["-----BEGIN "],
    ),
    (
        "PuTTY private key",
        r"(?P<p>PuTTY-User-Key-File-[23]: )\S+",
        Check::None,
        &["PuTTY-User-Key-File-"],
    ),
    (
        "age secret key",
        r"(?P<p>AGE-SECRET-KEY-1)[0-9A-Z]{58}",
        Check::None,
        &["AGE-SECRET-KEY-1"],
    ),
    (
        "AWS access key ID",
        r"(?-u:\b)(?P<p>AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?-u:\b)",
        Check::Aws,
        &["^AKIA", "^ASIA", "^ABIA", "^ACCA", "^A3T"],
    ),
    (
        "GitHub token",
        r"(?-u:\b)(?P<p>gh[pousr]_)[A-Za-z0-9]{36,255}(?-u:\b)",
        Check::Random,
        &["^ghp_", "^gho_", "^ghu_", "^ghs_", "^ghr_"],
    ),
    (
        "GitHub token",
        r"(?-u:\b)(?P<p>github_pat_)[A-Za-z0-9_]{22,255}",
        Check::Random,
        &["^github_pat_"],
    ),
    (
        "GitLab token",
        r"(?-u:\b)(?P<p>gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat|agent)-)[A-Za-z0-9_-]{20,}",
        Check::Random,
        &[
            "^glpat-",
            "^glptt-",
            "^gldt-",
            "^glrt-",
            "^glcbt-",
            "^gloas-",
            "^glft-",
            "^glimt-",
            "^glsoat-",
            "^glagent-",
        ],
    ),
    (
        "GitLab runner token",
        r"(?-u:\b)(?P<p>GR1348941)[A-Za-z0-9_-]{20,}",
        Check::None,
        &["^GR1348941"],
    ),
    (
        "Slack token",
        r"(?-u:\b)(?P<p>xox[abposre]-)[A-Za-z0-9-]{10,}",
        Check::None,
        &["^xox"],
    ),
    (
        "Slack app token",
        r"(?-u:\b)(?P<p>xapp-)\d-[A-Z0-9]+-\d+-[A-Za-z0-9]+",
        Check::None,
        &["^xapp-"],
    ),
    (
        "Slack webhook URL",
        r"(?P<p>https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/_-]{20,}",
        Check::None,
        &["https://hooks.slack.com/"],
    ),
    (
        "Discord webhook URL",
        r"(?P<p>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)\d+/[A-Za-z0-9_-]{50,}",
        Check::None,
        &["discord"],
    ),
    (
        "Discord bot token",
        r"(?-u:\b)[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?-u:\b)",
        Check::Random,
        &[],
    ),
    (
        "Telegram bot token",
        r"(?-u:\b)[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?-u:\b)",
        Check::None,
        &[":AA"],
    ),
    (
        "Stripe secret key",
        r"(?-u:\b)(?P<p>(?:sk|rk)_(?:live|test|prod)_)[A-Za-z0-9]{16,}",
        Check::Random,
        &[
            "^sk_live_",
            "^sk_test_",
            "^sk_prod_",
            "^rk_live_",
            "^rk_test_",
            "^rk_prod_",
        ],
    ),
    (
        "Stripe webhook secret",
        r"(?-u:\b)(?P<p>whsec_)[A-Za-z0-9]{32,}",
        Check::None,
        &["^whsec_"],
    ),
    (
        "Square token",
        r"(?-u:\b)(?P<p>sq0(?:atp|csp)-)[0-9A-Za-z_-]{22,60}",
        Check::None,
        &["^sq0atp-", "^sq0csp-"],
    ),
    (
        "Shopify token",
        r"(?-u:\b)(?P<p>shp(?:at|ss|ca|pa)_)[a-fA-F0-9]{32}(?-u:\b)",
        Check::None,
        &["^shpat_", "^shpss_", "^shpca_", "^shppa_"],
    ),
    (
        "Anthropic API key",
        r"(?-u:\b)(?P<p>sk-ant-(?:api|admin|oat|sid)[0-9]{2}-)[A-Za-z0-9_-]{32,}",
        Check::None,
        &["^sk-ant-"],
    ),
    (
        "OpenAI API key",
        r"(?-u:\b)(?P<p>sk-(?:proj-|svcacct-|admin-|None-)?)[A-Za-z0-9_-]{32,}",
        Check::Random,
        &["^sk-"],
    ),
    (
        "Hugging Face token",
        r"(?-u:\b)(?P<p>hf_)[A-Za-z0-9]{34,}(?-u:\b)",
        Check::Random,
        &["^hf_"],
    ),
    (
        "Hugging Face token",
        r"(?-u:\b)(?P<p>api_org_)[A-Za-z]{34}(?-u:\b)",
        Check::None,
        &["^api_org_"],
    ),
    (
        "Groq API key",
        r"(?-u:\b)(?P<p>gsk_)[A-Za-z0-9]{48,}",
        Check::None,
        &["^gsk_"],
    ),
    (
        "xAI API key",
        r"(?-u:\b)(?P<p>xai-)[A-Za-z0-9]{70,}",
        Check::None,
        &["^xai-"],
    ),
    (
        "Perplexity API key",
        r"(?-u:\b)(?P<p>pplx-)[A-Za-z0-9]{40,}",
        Check::None,
        &["^pplx-"],
    ),
    (
        "Replicate API token",
        r"(?-u:\b)(?P<p>r8_)[A-Za-z0-9]{37}(?-u:\b)",
        Check::Random,
        &["^r8_"],
    ),
    (
        "npm token",
        r"(?-u:\b)(?P<p>npm_)[A-Za-z0-9]{36}(?-u:\b)",
        Check::Random,
        &["^npm_"],
    ),
    (
        "PyPI token",
        r"(?-u:\b)(?P<p>pypi-)(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{40,}",
        Check::None,
        &["^pypi-"],
    ),
    (
        "Docker Hub token",
        r"(?-u:\b)(?P<p>dckr_pat_)[A-Za-z0-9_-]{27,}",
        Check::None,
        &["^dckr_pat_"],
    ),
    (
        "Google API key",
        r"(?-u:\b)(?P<p>AIza)[0-9A-Za-z_-]{35}",
        Check::None,
        &["^AIza"],
    ),
    (
        "Google OAuth client secret",
        r"(?-u:\b)(?P<p>GOCSPX-)[A-Za-z0-9_-]{28}",
        Check::None,
        &["^GOCSPX-"],
    ),
    (
        "Google OAuth access token",
        r"(?-u:\b)(?P<p>ya29\.)[0-9A-Za-z_-]{30,}",
        Check::None,
        &["^ya29."],
    ),
    (
        "Azure storage account key",
        r"(?i)(?-u:\b)(?P<s>(?P<p>AccountKey=)[A-Za-z0-9+/]{40,}={0,2})",
        Check::None,
        &["^AccountKey="],
    ),
    (
        "Azure shared access key",
        r"(?i)(?-u:\b)(?P<s>(?P<p>SharedAccessKey=)[A-Za-z0-9+/]{20,}={0,2})",
        Check::None,
        &["^SharedAccessKey="],
    ),
    (
        "Azure SAS signature",
        r"[?&](?P<s>(?P<p>sig=)[A-Za-z0-9%+/]{30,}={0,2})",
        Check::None,
        &["sig="],
    ),
    (
        "Azure AD client secret",
        r"(?-u:\b)[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        Check::None,
        &["Q~"],
    ),
    (
        "DigitalOcean token",
        r"(?-u:\b)(?P<p>do[opr]_v1_)[a-f0-9]{64}(?-u:\b)",
        Check::None,
        &["^doo_v1_", "^dop_v1_", "^dor_v1_"],
    ),
    (
        "HashiCorp Vault token",
        r"(?-u:\b)(?P<p>hv[sb]\.)[A-Za-z0-9_-]{90,}",
        Check::None,
        &["^hvs.", "^hvb."],
    ),
    (
        "Terraform Cloud token",
        r"(?-u:\b)[A-Za-z0-9]{14}\.(?P<p>atlasv1\.)[A-Za-z0-9_=-]{60,}",
        Check::None,
        &[".atlasv1."],
    ),
    (
        "Grafana token",
        r"(?-u:\b)(?P<p>glc_)[A-Za-z0-9+/]{32,}={0,2}",
        Check::None,
        &["^glc_"],
    ),
    (
        "Grafana service account token",
        r"(?-u:\b)(?P<p>glsa_)[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?-u:\b)",
        Check::None,
        &["^glsa_"],
    ),
    (
        "Sentry token",
        r"(?-u:\b)(?P<p>sntr[ysu]s?_)[A-Za-z0-9+/=_-]{40,}",
        Check::None,
        &["^sntr"],
    ),
    (
        "Atlassian API token",
        r"(?-u:\b)(?P<p>ATATT3)[A-Za-z0-9_=-]{100,}",
        Check::None,
        &["^ATATT3"],
    ),
    (
        "Linear API key",
        r"(?-u:\b)(?P<p>lin_api_)[A-Za-z0-9]{40}(?-u:\b)",
        Check::None,
        &["^lin_api_"],
    ),
    (
        "Notion token",
        r"(?-u:\b)(?P<p>ntn_)[0-9]{11}[A-Za-z0-9]{35}(?-u:\b)",
        Check::None,
        &["^ntn_"],
    ),
    (
        "Postman API key",
        r"(?-u:\b)(?P<p>PMAK-)[a-f0-9]{24}-[a-f0-9]{34}(?-u:\b)",
        Check::None,
        &["^PMAK-"],
    ),
    (
        "Pulumi token",
        r"(?-u:\b)(?P<p>pul-)[a-f0-9]{40}(?-u:\b)",
        Check::None,
        &["^pul-"],
    ),
    (
        "Heroku API key",
        r"(?-u:\b)(?P<p>HRKU-)[A-Za-z0-9_-]{40,}",
        Check::None,
        &["^HRKU-"],
    ),
    (
        "Supabase token",
        r"(?-u:\b)(?P<p>sbp_)[a-f0-9]{40}(?-u:\b)",
        Check::None,
        &["^sbp_"],
    ),
    (
        "Doppler token",
        r"(?-u:\b)(?P<p>dp\.(?:pt|st|sa|ct|scim|audit)\.)[A-Za-z0-9]{40,}",
        Check::None,
        &["^dp."],
    ),
    (
        "Databricks token",
        r"(?-u:\b)(?P<p>dapi)[a-f0-9]{32}(?:-[0-9])?(?-u:\b)",
        Check::None,
        &["^dapi"],
    ),
    (
        "Twilio API key",
        r"(?-u:\b)(?P<p>SK)[0-9a-f]{32}(?-u:\b)",
        Check::None,
        &["^SK"],
    ),
    (
        "SendGrid API key",
        r"(?-u:\b)(?P<p>SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?-u:\b)",
        Check::None,
        &["^SG."],
    ),
    (
        "Mailgun API key",
        r"(?-u:\b)(?P<p>key-)[0-9a-f]{32}(?-u:\b)",
        Check::None,
        &["^key-"],
    ),
    (
        "Mapbox secret token",
        r"(?-u:\b)(?P<p>sk\.eyJ)[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
        Check::None,
        &["^sk.eyJ"],
    ),
    (
        "Fly.io token",
        r"(?-u:\b)(?P<p>fo1_)[A-Za-z0-9_-]{43}",
        Check::None,
        &["^fo1_"],
    ),
    (
        "JSON Web Token",
        r"(?-u:\b)(?P<p>eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        Check::None,
        &["^eyJ"],
    ),
    (
        "bearer token",
        r"(?i)(?-u:\b)bearer[ \t]+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)",
        Check::Bearer,
        &["^bearer"],
    ),
    (
        "basic auth credentials",
        r"(?i)(?-u:\b)basic[ \t]+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
        Check::Basic,
        &["^basic"],
    ),
    (
        "password in a URL",
        r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:(?P<s>[^\s/@]+)@[^\s/]",
        Check::UrlPassword,
        &["://"],
    ),
];

fn compiled() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let mut list = Vec::with_capacity(FORMATS.len());
        let mut anchor_info = Vec::new();
        let mut unanchored = Vec::new();
        for &(kind, re, check, anchors) in FORMATS {
            let i = list.len();
            let ignore_case = re.starts_with("(?i)");
            if anchors.is_empty() {
                unanchored.push(i);
            }
            for a in anchors {
                let (text, word_start) = match a.strip_prefix('^') {
                    Some(t) => (t, true),
                    None => (*a, false),
                };
                anchor_info.push(Anchor {
                    format: Some(i),
                    text,
                    ignore_case,
                    word_start,
                });
            }
            list.push(Pattern {
                kind,
                source: re,
                re: OnceLock::new(),
                check,
            });
        }
        for w in KEY_NAME_WORDS {
            anchor_info.push(Anchor {
                format: None,
                text: w,
                ignore_case: true,
                word_start: false,
            });
        }
        debug_assert!(list.len() <= 128, "candidate formats are a 128-bit set");
        let mut by_first = vec![Vec::new(); 256];
        let mut pairs = Box::new([0u64; 1024]);
        for (pid, a) in anchor_info.iter().enumerate() {
            let t = a.text.as_bytes();
            debug_assert!(t.len() >= 2, "anchor {:?} is shorter than a pair", a.text);
            let pair = pair_bit(t[0], t[1]);
            pairs[pair / 64] |= 1 << (pair % 64);
            let first = t[0];
            let pid = u16::try_from(pid).expect("fewer than 65 536 anchors");
            by_first[usize::from(first.to_ascii_lowercase())].push(pid);
            if first.to_ascii_uppercase() != first.to_ascii_lowercase() {
                by_first[usize::from(first.to_ascii_uppercase())].push(pid);
            }
        }
        Patterns {
            list,
            by_first,
            pairs,
            anchors_nfa: OnceLock::new(),
            anchors_dfa: OnceLock::new(),
            anchor_info,
            unanchored,
        }
    })
}

/// What one string can contain, from one pass of the anchor automaton.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Candidates {
    /// Formats whose anchor occurs (bit i: `FORMATS[i]`).
    formats: u128,
    /// Where the first word of secret key names starts, if one occurs (an assignment may
    /// then, with its name at or after that word's start).
    key_word: Option<usize>,
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Bytes scanned before the anchors' NFA is built (see [`Patterns::anchors_nfa`]): about
/// what its build costs, in the extra work of [`candidates_by_first_byte`] per byte.
const NFA_AFTER_BYTES: usize = 16 << 10;

/// Bytes scanned before the anchors' DFA is built (see [`Patterns::anchors_dfa`]).
const DFA_AFTER_BYTES: usize = 256 << 10;

/// Bytes the scans have read so far, in this process.
static SCANNED_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Patterns {
    /// The anchors' automata, each once the scans have read enough for its build to pay
    /// (all three ways find the same candidates); `None` until then, or if one fails to
    /// build.
    fn automata(&self, len: usize) -> (Option<&dfa::DFA>, Option<&noncontiguous::NFA>) {
        use std::sync::atomic::Ordering;
        if let Some(Some(dfa)) = self.anchors_dfa.get() {
            return (Some(dfa), None);
        }
        let read = SCANNED_BYTES.fetch_add(len, Ordering::Relaxed);
        let dfa = (read >= DFA_AFTER_BYTES)
            .then(|| {
                self.anchors_dfa.get_or_init(|| {
                    dfa::Builder::new()
                        .ascii_case_insensitive(true)
                        .prefilter(false)
                        .build(self.anchor_info.iter().map(|a| a.text))
                        .ok()
                })
            })
            .and_then(Option::as_ref);
        let nfa = (dfa.is_none() && read >= NFA_AFTER_BYTES)
            .then(|| {
                self.anchors_nfa.get_or_init(|| {
                    noncontiguous::Builder::new()
                        .ascii_case_insensitive(true)
                        .prefilter(false)
                        .build(self.anchor_info.iter().map(|a| a.text))
                        .ok()
                })
            })
            .and_then(Option::as_ref);
        (dfa, nfa)
    }
}

fn candidates(pats: &Patterns, value: &str) -> Candidates {
    match pats.automata(value.len()) {
        (Some(dfa), _) => candidates_in(pats, dfa, value),
        (None, Some(nfa)) => candidates_in(pats, nfa, value),
        (None, None) => candidates_by_first_byte(pats, value),
    }
}

impl Candidates {
    /// Count anchor `a`, found (in any case) at `start..end` of `b`, if it stands there: at
    /// a word's start when it must, and as written when its format does not ignore case.
    #[inline]
    fn note(&mut self, a: &Anchor, b: &[u8], start: usize, end: usize) {
        if a.word_start && start > 0 && is_word_byte(b[start - 1]) {
            return;
        }
        if !a.ignore_case && &b[start..end] != a.text.as_bytes() {
            return;
        }
        match a.format {
            Some(f) => self.formats |= 1u128 << f,
            None => self.key_word = Some(self.key_word.map_or(start, |w| w.min(start))),
        }
    }
}

/// The bit of two bytes in [`Patterns::pairs`].
#[inline]
fn pair_bit(b0: u8, b1: u8) -> usize {
    usize::from(b0.to_ascii_lowercase()) << 8 | usize::from(b1.to_ascii_lowercase())
}

/// Every anchor at every place in `value`, by [`Patterns::pairs`] and
/// [`Patterns::by_first`]: what a walk over the anchors' automaton finds, without an
/// automaton.
fn candidates_by_first_byte(pats: &Patterns, value: &str) -> Candidates {
    let mut c = Candidates::default();
    let b = value.as_bytes();
    let Some(&first) = b.first() else {
        return c;
    };
    let mut pair = usize::from(first.to_ascii_lowercase());
    for (next, &byte) in b.iter().enumerate().skip(1) {
        pair = (pair << 8 | usize::from(byte.to_ascii_lowercase())) & 0xffff;
        if pats.pairs[pair / 64] & (1 << (pair % 64)) == 0 {
            continue;
        }
        let start = next - 1;
        for &pid in &pats.by_first[usize::from(b[start])] {
            let a = &pats.anchor_info[usize::from(pid)];
            let end = start + a.text.len();
            if b.get(start..end)
                .is_some_and(|s| s.eq_ignore_ascii_case(a.text.as_bytes()))
            {
                c.note(a, b, start, end);
            }
        }
    }
    c
}

/// One pass of an anchors' automaton over `value`, every match at every end (the automata
/// are built with the standard, overlapping semantics: a match state lists each anchor that
/// ends there). A hand-written walk rather than the crate's overlapping iterator, which costs
/// several times more per byte on strings this short.
#[inline]
fn candidates_in<A: Automaton>(pats: &Patterns, aut: &A, value: &str) -> Candidates {
    let mut c = Candidates::default();
    let b = value.as_bytes();
    let Ok(mut sid) = aut.start_state(Anchored::No) else {
        return c;
    };
    let mut from = 0;
    loop {
        let i;
        (i, sid) = to_special(aut, b, from, sid);
        if i == b.len() || aut.is_dead(sid) {
            break;
        }
        from = i + 1;
        if !aut.is_match(sid) {
            continue;
        }
        let end = i + 1;
        for k in 0..aut.match_len(sid) {
            let pid = aut.match_pattern(sid, k);
            c.note(
                &pats.anchor_info[pid.as_usize()],
                b,
                end - aut.pattern_len(pid),
                end,
            );
        }
    }
    c
}

/// The automaton's walk over `b` from byte `from` in state `sid`, up to the first byte that
/// leads to a special state (a match, or the dead state): that byte's index and the state, or
/// `b`'s length and the state after the last byte. Kept apart from the handling of matches so
/// that the loop over ordinary bytes, nearly all of them, holds its few values in registers.
#[inline(never)]
fn to_special<A: Automaton>(aut: &A, b: &[u8], from: usize, mut sid: StateID) -> (usize, StateID) {
    for (i, &byte) in b.iter().enumerate().skip(from) {
        sid = aut.next_state(Anchored::No, sid, byte);
        if aut.is_special(sid) {
            return (i, sid);
        }
    }
    (b.len(), sid)
}

/// The shortest run of token bytes any detector looks at (the formats without a literal,
/// base64 worth decoding); shorter strings are not measured.
const RUN_MIN: usize = 24;

/// Longest runs of token bytes in a string, whether it has an assignment separator, and
/// whether it is made of inert bytes only (see [`Runs::inert`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Runs {
    /// Longest run of the base64 / URL-safe alphabet when it reaches [`RUN_MIN`]; a shorter
    /// run is only known to be shorter (0 in a string shorter than [`RUN_MIN`]).
    token: usize,
    /// Longest run of that alphabet and `=`, base64 with padding (likewise).
    padded: usize,
    /// `=`, `:` or a space occurs.
    separator: bool,
    /// A `.` occurs (the formats without a literal have dots between their parts).
    dot: bool,
    /// Every byte is a [`hex_byte`].
    all_hex: bool,
    /// Every byte is a [`stamp_byte`].
    all_stamp: bool,
}

impl Runs {
    /// Whether a format without a literal can match: they need a token of 24+ characters
    /// and a dot (a Discord bot token's parts).
    fn unanchored(&self) -> bool {
        self.token >= RUN_MIN && self.dot
    }

    /// The runs, and the classes found in some byte (`any`) and in every byte (`all`).
    fn classes(any: u8, all: u8, token: usize, padded: usize) -> Runs {
        Runs {
            token,
            padded,
            separator: any & C_SEPARATOR != 0,
            dot: any & C_DOT != 0,
            all_hex: all & C_HEX != 0,
            all_stamp: all & C_STAMP != 0,
        }
    }

    /// Whether no detector can find anything in the string: hashes and replay IDs (lower-case
    /// hex digits and dashes), and timestamp-like text whose longest token is short. Every
    /// progress entry holds two such values. Why nothing can be found: no anchor is made of
    /// these bytes alone (a test checks every anchor), so no format or assignment is a
    /// candidate; the formats without an anchor need a dot and a 24-byte token; a run of hex
    /// digits and dashes is never a random token nor base64 worth decoding; and in
    /// timestamp-like text no token reaches the 24 bytes the token detectors start at.
    fn inert(&self) -> bool {
        self.all_hex || self.all_stamp && self.token < RUN_MIN
    }
}

/// Byte classes, one bit each, for [`token_runs`]' single pass.
const C_TOKEN: u8 = 1;
const C_EQUALS: u8 = 2;
const C_SEPARATOR: u8 = 4;
const C_DOT: u8 = 8;
const C_HEX: u8 = 16;
const C_STAMP: u8 = 32;

/// The classes of every byte, built from the predicates that define them.
static CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let mut k = 0;
        if token_byte(c) {
            k |= C_TOKEN;
        }
        if c == b'=' {
            k |= C_EQUALS | C_SEPARATOR;
        }
        if c == b':' || c == b' ' {
            k |= C_SEPARATOR;
        }
        if c == b'.' {
            k |= C_DOT;
        }
        if hex_byte(c) {
            k |= C_HEX;
        }
        if stamp_byte(c) {
            k |= C_STAMP;
        }
        t[i] = k;
        i += 1;
    }
    t
};

/// [`Runs`] of a string in one pass: each block of 64 bytes becomes two bit masks (token
/// bytes; token bytes and `=`) whose runs of ones are then measured a word at a time. Unlike
/// a count carried from byte to byte, no byte waits for the one before it. On x86-64 the
/// masks come 16 bytes at a time from SSE2 compares ([`sse2`]); elsewhere from the
/// [`CLASSES`] table, byte by byte.
fn token_runs(b: &[u8]) -> Runs {
    #[cfg(target_arch = "x86_64")]
    return sse2::token_runs(b);
    #[cfg(not(target_arch = "x86_64"))]
    return token_runs_by_table(b);
}

/// [`token_runs`] from the [`CLASSES`] table (the portable path, and the tests' oracle).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn token_runs_by_table(b: &[u8]) -> Runs {
    let (mut any, mut all) = (0u8, u8::MAX);
    if b.len() < RUN_MIN {
        // No run can reach what the detectors look for: the classes alone.
        for &c in b {
            let k = CLASSES[c as usize];
            any |= k;
            all &= k;
        }
        return Runs::classes(any, all, 0, 0);
    }
    let (mut tok, mut pad) = (OnesRun::default(), OnesRun::default());
    for block in b.chunks(64) {
        let (mut t, mut p) = (0u64, 0u64);
        for (i, &c) in block.iter().enumerate() {
            let k = CLASSES[c as usize];
            any |= k;
            all &= k;
            t |= u64::from(k & C_TOKEN) << i;
            p |= u64::from((k | k >> 1) & C_TOKEN) << i;
        }
        tok.add(t, block.len());
        pad.add(p, block.len());
    }
    Runs::classes(any, all, tok.longest, pad.longest)
}

// The masks above take a token byte's bit, and an `=`'s shifted onto it.
const _: () = assert!(C_TOKEN == 1 && C_EQUALS == 2);

/// [`token_runs`] on SSE2, which every x86-64 processor has: each byte class is a few
/// compares over 16 bytes, so a string costs a handful of instructions per 16 bytes instead
/// of a table lookup per byte. The whole-string classes are gathered as vectors and read once
/// at the end; only the run masks are read block by block, and only in a string long enough
/// for a run to matter.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{OnesRun, Runs, C_DOT, C_HEX, C_SEPARATOR, C_STAMP, RUN_MIN};
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128,
    };

    /// The classes of 16 bytes, a lane per byte (all ones where the byte is in the class).
    struct Classes {
        token: __m128i,
        equals: __m128i,
        separator: __m128i,
        dot: __m128i,
        hex: __m128i,
        stamp: __m128i,
    }

    /// The classes of the 16 bytes at the start of `block` (see `CLASSES`: the same
    /// predicates, as compares).
    #[inline(always)]
    #[allow(unused_unsafe)]
    fn classes(block: &[u8]) -> Classes {
        assert!(block.len() >= 16);
        // SAFETY: the load reads 16 bytes of `block` (checked above) and needs no alignment;
        // SSE2 is part of every x86-64 target, so its intrinsics are always available (they
        // are safe to call on newer compilers, hence the allowance for this block).
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            // ASCII letters in lower case (other bytes change too, but only letters can then
            // fall in a letter's range or equal one).
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let is = |x: __m128i, c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
            // Signed compares: bytes from 0x80 are negative, outside every ASCII range.
            let within = |x: __m128i, lo: u8, hi: u8| {
                _mm_and_si128(
                    _mm_cmpgt_epi8(x, _mm_set1_epi8(lo as i8 - 1)),
                    _mm_cmplt_epi8(x, _mm_set1_epi8(hi as i8 + 1)),
                )
            };
            let or = |a: __m128i, b: __m128i| _mm_or_si128(a, b);
            let digit = within(v, b'0', b'9');
            let dash = is(v, b'-');
            let plus = is(v, b'+');
            let equals = is(v, b'=');
            let colon = is(v, b':');
            let dot = is(v, b'.');
            let digit_dash = or(digit, dash);
            Classes {
                token: or(
                    or(digit_dash, within(folded, b'a', b'z')),
                    or(plus, or(is(v, b'/'), is(v, b'_'))),
                ),
                equals,
                separator: or(or(equals, colon), is(v, b' ')),
                dot,
                hex: or(digit_dash, within(v, b'a', b'f')),
                stamp: or(
                    or(digit_dash, or(colon, dot)),
                    or(plus, or(is(folded, b't'), is(folded, b'z'))),
                ),
            }
        }
    }

    /// Bit i set for lane i of `m`.
    #[inline(always)]
    #[allow(unused_unsafe)]
    fn bits(m: __m128i) -> u64 {
        // SAFETY: SSE2 is part of every x86-64 target.
        unsafe { u64::from(_mm_movemask_epi8(m) as u16) }
    }

    /// The whole-string classes, gathered block by block: a class some byte is in (`any`),
    /// a class every byte is in (`all`).
    struct Gathered {
        separator: __m128i,
        dot: __m128i,
        hex: __m128i,
        stamp: __m128i,
    }

    impl Gathered {
        /// Before any block: no byte in any class, every byte in every class.
        #[inline(always)]
        #[allow(unused_unsafe)]
        fn new() -> Gathered {
            // SAFETY: SSE2 is part of every x86-64 target.
            let (none, every) = unsafe { (_mm_setzero_si128(), _mm_set1_epi8(-1)) };
            Gathered {
                separator: none,
                dot: none,
                hex: every,
                stamp: every,
            }
        }

        #[inline(always)]
        #[allow(unused_unsafe)]
        fn add(&mut self, c: &Classes) {
            // SAFETY: SSE2 is part of every x86-64 target.
            unsafe {
                self.separator = _mm_or_si128(self.separator, c.separator);
                self.dot = _mm_or_si128(self.dot, c.dot);
                self.hex = _mm_and_si128(self.hex, c.hex);
                self.stamp = _mm_and_si128(self.stamp, c.stamp);
            }
        }

        fn runs(&self, token: usize, padded: usize) -> Runs {
            let flag = |found: bool, bit: u8| if found { bit } else { 0 };
            let any =
                flag(bits(self.separator) != 0, C_SEPARATOR) | flag(bits(self.dot) != 0, C_DOT);
            let all =
                flag(bits(self.hex) == 0xffff, C_HEX) | flag(bits(self.stamp) == 0xffff, C_STAMP);
            Runs::classes(any, all, token, padded)
        }
    }

    pub(super) fn token_runs(b: &[u8]) -> Runs {
        let len = b.len();
        if len < 16 {
            // One block, padded with a digit: in the classes every byte must be in (hex,
            // stamp) and in none that some byte must be in (separator, dot). No run is
            // measured in a string this short.
            let mut block = [b'0'; 16];
            block[..len].copy_from_slice(b);
            let mut gathered = Gathered::new();
            gathered.add(&classes(&block));
            return gathered.runs(0, 0);
        }
        let mut gathered = Gathered::new();
        // The last block ends with the string; where the string is not a whole number of
        // blocks it overlaps the one before, which is harmless for the whole-string classes
        // (its bytes are the string's) and is shifted off the run masks.
        let last = len - 16;
        if len < RUN_MIN {
            gathered.add(&classes(b));
            gathered.add(&classes(&b[last..]));
            return gathered.runs(0, 0);
        }
        let (mut tok, mut pad) = (OnesRun::default(), OnesRun::default());
        // Masks gathered into 64 bits (`n` of them filled) before their runs are measured.
        let (mut t, mut p, mut n) = (0u64, 0u64, 0usize);
        let mut at = 0;
        while at < len {
            let (c, new) = if at + 16 <= len {
                (classes(&b[at..]), 16)
            } else {
                (classes(&b[last..]), len - at)
            };
            gathered.add(&c);
            let token = bits(c.token) >> (16 - new);
            // SAFETY: SSE2 is part of every x86-64 target.
            #[allow(unused_unsafe)]
            let padded = bits(unsafe { _mm_or_si128(c.token, c.equals) }) >> (16 - new);
            t |= token << n;
            p |= padded << n;
            n += new;
            at += new;
            if n == 64 {
                tok.add(t, 64);
                pad.add(p, 64);
                (t, p, n) = (0, 0, 0);
            }
        }
        if n > 0 {
            tok.add(t, n);
            pad.add(p, n);
        }
        gathered.runs(tok.longest, pad.longest)
    }
}

/// The longest run of ones in a bit string given up to 64 bits at a time, when it reaches
/// [`RUN_MIN`] (the detectors ask no more of a shorter one than that it is shorter).
#[derive(Default)]
struct OnesRun {
    /// The run that reaches the end of the bits so far.
    open: usize,
    longest: usize,
}

impl OnesRun {
    /// The next `n` bits (1..=64), lowest first, in `m` (bits from `n` up are zero).
    fn add(&mut self, m: u64, n: usize) {
        let low = m.trailing_ones() as usize;
        if low >= n {
            self.open += n;
            self.longest = self.longest.max(self.open);
            return;
        }
        self.longest = self.longest.max(self.open + low);
        if has_run_min(m) {
            self.longest = self.longest.max(longest_ones(m));
        }
        self.open = (m << (64 - n)).leading_ones() as usize;
    }
}

/// Whether `m` has a run of [`RUN_MIN`] ones: each step keeps the bits that start a run
/// twice as long (or, at the last, 24 = 16 + 8 long).
fn has_run_min(m: u64) -> bool {
    let r2 = m & m >> 1;
    let r4 = r2 & r2 >> 2;
    let r8 = r4 & r4 >> 4;
    let r16 = r8 & r8 >> 8;
    r16 & r8 >> 16 != 0
}

const _: () = assert!(RUN_MIN == 24, "has_run_min looks for runs of 24");

/// The longest run of ones in `m`: each step shortens every run by one.
fn longest_ones(mut m: u64) -> usize {
    let mut n = 0;
    while m != 0 {
        m &= m << 1;
        n += 1;
    }
    n
}

fn char_classes(s: &str) -> (bool, bool, bool) {
    let upper = s.bytes().any(|c| c.is_ascii_uppercase());
    let lower = s.bytes().any(|c| c.is_ascii_lowercase());
    let digit = s.bytes().any(|c| c.is_ascii_digit());
    (upper, lower, digit)
}

/// A digit, or both cases: what a random token of 30+ characters nearly always has.
fn random_body(s: &str) -> bool {
    let (upper, lower, digit) = char_classes(s);
    digit || (upper && lower)
}

fn b64_engine() -> base64::engine::GeneralPurpose {
    use base64::engine::{DecodePaddingMode, GeneralPurposeConfig};
    let cfg = GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, cfg)
}

fn b64_url_engine() -> base64::engine::GeneralPurpose {
    use base64::engine::{DecodePaddingMode, GeneralPurposeConfig};
    let cfg = GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    base64::engine::GeneralPurpose::new(&base64::alphabet::URL_SAFE, cfg)
}

/// Decode standard or URL-safe base64 (padding optional). A length that cannot be base64
/// loses its last character (a blob cut short is still judged).
fn b64_decode(token: &str) -> Option<Vec<u8>> {
    let t = token.trim_end_matches('=');
    let t = if t.len() % 4 == 1 {
        &t[..t.len() - 1]
    } else {
        t
    };
    if t.contains(['-', '_']) {
        if t.contains(['+', '/']) {
            return None;
        }
        b64_url_engine().decode(t).ok()
    } else {
        b64_engine().decode(t).ok()
    }
}

/// Decoded bytes that are text: UTF-8 with no control characters but whitespace.
fn text_of(bytes: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?;
    let bad = s
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        .count();
    (bad == 0).then_some(s)
}

fn format_ok(p: &Pattern, value: &str, range: &Range<usize>, visible: usize) -> bool {
    let text = &value[range.clone()];
    match p.check {
        Check::None | Check::Pem => true,
        Check::Random => random_body(&text[visible.min(text.len())..]),
        Check::Aws => !text.ends_with("EXAMPLE"),
        Check::UrlPassword => {
            let after = value[range.end..].trim_start_matches('@');
            !is_placeholder(text)
                && !after.starts_with("sha256:")
                && !after.starts_with("sha512:")
                && !text.starts_with('%')
        }
        Check::Basic => b64_decode(text)
            .as_deref()
            .and_then(text_of)
            .is_some_and(|s| s.contains(':') && !s.ends_with(':')),
        Check::Bearer => !is_placeholder(text) && looks_like_credential(text),
    }
}

/// The formats among `formats` (and the ones without a literal, when `unanchored` says the
/// string can hold one) that match `value`.
fn scan_formats_in(
    pats: &Patterns,
    value: &str,
    formats: u128,
    unanchored: bool,
    out: &mut Vec<Finding>,
) {
    let mut set = formats;
    if unanchored {
        for &i in &pats.unanchored {
            set |= 1u128 << i;
        }
    }
    while set != 0 {
        let i = set.trailing_zeros() as usize;
        set &= set - 1;
        let p = &pats.list[i];
        let Some(re) = p.re() else { continue };
        for caps in re.captures_iter(value) {
            let whole = caps.get(0).map(|m| m.range()).unwrap_or(0..0);
            let mut range = caps.name("s").map(|m| m.range()).unwrap_or(whole);
            let visible = caps
                .name("p")
                .filter(|m| m.start() == range.start)
                .map_or(0, |m| m.len());
            if !format_ok(p, value, &range, visible) {
                continue;
            }
            if p.check == Check::Pem {
                // The key runs to its END line, or to the end of the value.
                let rest = &value[range.end..];
                range.end = match rest.find("-----END ") {
                    Some(e) => {
                        let tail = &rest[e + 9..];
                        let close = tail.find("-----").map_or(tail.len(), |c| c + 5);
                        range.end + e + 9 + close
                    }
                    None => value.len(),
                };
            }
            out.push(Finding {
                kind: p.kind,
                range,
                visible,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Secret-named keys and assignments

/// Words that, as the last word of a key name, mean the value is a secret.
const SECRET_LAST_WORDS: [&str; 10] = [
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
    "pat",
];
/// Two-word endings that mean the same (`api_key`, `privateKey`, `access-key`, ...).
const SECRET_LAST_PAIRS: [(&str, &str); 7] = [
    ("api", "key"),
    ("private", "key"),
    ("access", "key"),
    ("secret", "key"),
    ("signing", "key"),
    ("account", "key"),
    ("encryption", "key"),
];

/// Split a key name into lower-case words: `client_secret`, `clientSecret`, `client-secret`
/// all give `["client", "secret"]`.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// True if a key name says its value is a secret.
pub fn is_secret_key_name(key: &str) -> bool {
    // The protocol's own field names are never secrets.
    if matches!(
        key,
        "task_id"
            | "timestamp"
            | "status"
            | "evidence"
            | "command"
            | "commit"
            | "notes"
            | "replayId"
            | "test"
            | "link"
            | "id"
            | "title"
    ) {
        return false;
    }
    // Fast path: every secret word contains one of these (checked without allocating).
    let lower_has = |needle: &str| {
        key.as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    };
    if !KEY_NAME_WORDS.iter().any(|n| lower_has(n)) {
        return false;
    }
    let words = key_words(key);
    let Some(last) = words.last() else {
        return false;
    };
    if last == "pat" {
        // `GITHUB_PAT`, `gitlab_pat`: a personal access token; a lone `pat` is a name.
        return words.len() >= 2;
    }
    if SECRET_LAST_WORDS.contains(&last.as_str()) {
        return true;
    }
    // Names written as one word: `PGPASSWORD`, `authtoken`, `clientsecret`.
    if ["password", "passwd", "secret", "token"]
        .iter()
        .any(|w| last.len() > w.len() && last.ends_with(w))
    {
        return true;
    }
    if words.len() >= 2 {
        let prev = &words[words.len() - 2];
        return SECRET_LAST_PAIRS
            .iter()
            .any(|(a, b)| prev == a && last == b);
    }
    false
}

/// Values that stand in for a secret rather than being one.
fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty()
        || v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with("{{")
        || v.starts_with("%(")
        || v.starts_with("%{")
        || v.starts_with('@')
    {
        return true;
    }
    if v.chars()
        .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '…' | '•' | '#' | '?'))
    {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "redacted"
            | "[redacted]"
            | "(redacted)"
            | "none"
            | "null"
            | "nil"
            | "n/a"
            | "tbd"
            | "todo"
            | "true"
            | "false"
            | "undefined"
            | "masked"
            | "hidden"
            | "[hidden]"
            | "[masked]"
            | "[filtered]"
    ) || lower.starts_with("env:")
        || lower.starts_with("vault:")
        || lower.starts_with("secret://")
        || lower.starts_with("op://")
        || lower.starts_with("arn:aws:secretsmanager")
        || lower.contains("redacted")
}

/// Whether an assignment's value (`PASSWORD=<value>` in free text) looks like a credential
/// rather than a reference to one (`$VAR`, `os.environ[...]`, a path), a word or a number.
fn looks_like_credential(v: &str) -> bool {
    let v = v.trim_end_matches(['.', ',', ';', ')', ']', '}', ':']);
    if v.chars().count() < 8 || is_placeholder(v) {
        return false;
    }
    // References to a credential kept elsewhere, code, paths, URLs.
    if v.contains(['(', '[', '{'])
        || v.contains("${")
        || v.starts_with(['/', '~', '.', '%'])
        || v.contains("://")
    {
        return false;
    }
    // `TOKEN=GITHUB_TOKEN`, `password=config.db.password`: a name, not a value.
    let is_name = |s: &str| {
        s.bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
            || s.split('.').count() >= 2
                && s.split('.').all(|w| {
                    !w.is_empty()
                        && w.bytes()
                            .all(|c| c.is_ascii_lowercase() || c == b'_' || c.is_ascii_digit())
                })
    };
    if is_name(v) {
        return false;
    }
    let (upper, lower, digit) = char_classes(v);
    let symbol = v.bytes().any(|c| !c.is_ascii_alphanumeric());
    let classes = upper as u8 + lower as u8 + digit as u8 + symbol as u8;
    if classes < 2 {
        return false;
    }
    // `test-token`, `postgres-password`, `local_dev_secret`: words, not credentials.
    wordiness(v) < 0.5 || (classes >= 3 && digit && wordiness(v) < 0.8)
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// `NAME=value`, `NAME: value`, `"name": "value"`, `--name=value`, `--name value` where the
/// name says it holds a secret.
/// Whether a separator [`scan_assignments`] looks at comes after `from`: `=` or `:`, or a
/// space once a `--flag` occurs. An assignment's name contains a word of secret key names
/// (see [`is_secret_key_name`]) and ends at its separator, so with none after the first such
/// word there is no assignment to find (`214 passed, 0 failed`).
fn separates_after(value: &str, from: usize) -> bool {
    let b = &value.as_bytes()[from..];
    find::two(b, b'=', b':').is_some()
        || find::one(b, b' ').is_some() && has_double_dash(value.as_bytes())
}

/// Whether `--` occurs (a `--flag` may): dashes are few in most values, so each one found
/// is looked at, which costs less than a substring search on a short string.
fn has_double_dash(b: &[u8]) -> bool {
    find::each(b, b'-').any(|i| b.get(i + 1) == Some(&b'-'))
}

fn scan_assignments(value: &str, out: &mut Vec<Finding>) {
    let b = value.as_bytes();
    // A space separates only after a `--flag`: without a `--` the spaces need no look.
    let flags = has_double_dash(b);
    let mut i = 0;
    while i < b.len() {
        // Straight to the next byte that can separate a name from its value.
        let next = match flags {
            true => memchr::memchr3(b'=', b':', b' ', &b[i..]),
            false => memchr::memchr2(b'=', b':', &b[i..]),
        };
        let Some(skip) = next else {
            break;
        };
        i += skip;
        let c = b[i];
        let flag_space = c == b' ' && i >= 2 && is_flag_before(b, i);
        if !(c == b'=' || c == b':' || flag_space) {
            i += 1;
            continue;
        }
        let sep = i;
        i += 1;
        if c == b'=' && (b.get(sep + 1) == Some(&b'=') || sep > 0 && b"=!<>".contains(&b[sep - 1]))
        {
            continue;
        }
        if c == b':' && matches!(b.get(sep + 1), Some(b'/') | Some(b':')) {
            continue;
        }
        // The name before the separator: optional closing quote, then identifier chars.
        let mut end = sep;
        if c == b':' && sep > 0 && b[sep - 1] == b'=' {
            continue;
        }
        while end > 0 && b[end - 1] == b' ' && sep - end < 2 && c != b' ' {
            end -= 1;
        }
        let quoted_name = end > 0 && matches!(b[end - 1], b'"' | b'\'');
        if quoted_name {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && ident_byte(b[start - 1]) && end - start < 80 {
            start -= 1;
        }
        if start == end {
            continue;
        }
        let name = &value[start..end];
        if !is_secret_key_name(name) {
            continue;
        }
        // The value: optional spaces, optional quote, then up to the closing quote or a
        // delimiter.
        let mut v = sep + 1;
        if c == b':' && b.get(v) == Some(&b'=') {
            v += 1;
        }
        while v < b.len() && b[v] == b' ' {
            v += 1;
        }
        let quote = b
            .get(v)
            .copied()
            .filter(|q| matches!(q, b'"' | b'\'' | b'`'));
        if quote.is_some() {
            v += 1;
        }
        let mut e = v;
        while e < b.len() {
            let d = b[e];
            let stop = match quote {
                Some(q) => d == q || d == b'\n',
                None => {
                    d.is_ascii_whitespace() || matches!(d, b'"' | b'\'' | b'`' | b';' | b',' | b'&')
                }
            };
            if stop {
                break;
            }
            e += 1;
        }
        let mut e2 = e;
        while e2 > v && matches!(b[e2 - 1], b'.' | b')' | b']' | b'}' | b':') {
            e2 -= 1;
        }
        if e2 > v && value.is_char_boundary(v) && value.is_char_boundary(e2) {
            let secret = &value[v..e2];
            if looks_like_credential(secret) {
                out.push(Finding {
                    kind: "secret assignment",
                    range: v..e2,
                    visible: 0,
                });
                i = e;
            }
        }
    }
}

/// Is the space at `i` right after a `--flag` (so `--password hunter2` is an assignment)?
fn is_flag_before(b: &[u8], i: usize) -> bool {
    let mut s = i;
    while s > 0 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'_' | b'-')) {
        s -= 1;
    }
    let word = &b[s..i];
    word.len() > 2 && word.starts_with(b"--") && word[2] != b'-'
}

// ---------------------------------------------------------------------------------------
// Random-looking tokens

const fn token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-')
}

/// Share of a token's letters and digits that belong to dictionary-like words (3+ letters
/// with a vowel, in lower case or Capitalised form). Identifiers and paths score high, random
/// tokens low.
fn wordiness(token: &str) -> f64 {
    let b = token.as_bytes();
    let mut i = 0;
    let mut alnum = 0usize;
    let mut wordy = 0usize;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            alnum += i - start;
            continue;
        }
        if c.is_ascii_uppercase() {
            i += 1;
            if i < b.len() && b[i].is_ascii_uppercase() {
                // An upper-case run: an acronym or random letters; not counted as words.
                while i < b.len() && b[i].is_ascii_uppercase() {
                    i += 1;
                }
                alnum += i - start;
                continue;
            }
        }
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let word = &token[start..i];
        alnum += word.len();
        let has_vowel = word.bytes().any(|c| b"aeiouyAEIOUY".contains(&c));
        if word.len() >= 3 && has_vowel {
            wordy += word.len();
        }
    }
    if alnum == 0 {
        1.0
    } else {
        wordy as f64 / alnum as f64
    }
}

fn entropy(token: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in token.bytes() {
        counts[b as usize] += 1;
    }
    let n = token.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn is_hex_like(t: &str) -> bool {
    t.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')
}

/// True if a token looks like a random credential rather than a word, path, hash or text.
fn is_random_token(token: &str) -> bool {
    let t = token.trim_end_matches('=');
    if t.len() < 32 {
        return false;
    }
    // Hashes and UUIDs (hex digits, maybe with dashes) are stored on purpose.
    if is_hex_like(t) {
        return false;
    }
    // Profile 2.0.0 record identifiers (`event_<32 hex>`, `session_<32 hex>`, ...): a
    // record kind and a hash, named in messages about the records (docs/v2.md).
    if let Some((kind, id)) = t.split_once('_') {
        const KINDS: &[&str] = &[
            "project", "lineage", "session", "event", "receipt", "policy", "import", "task",
            "conflict",
        ];
        if KINDS.contains(&kind)
            && id.len() == 32
            && id
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        {
            return false;
        }
    }
    // Variable names: `YT_TRANSCRIPT_DATABASE_ENABLED`, `AWS_SECRET_ACCESS_KEY_ID`.
    if t.contains('_')
        && t.bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
    {
        return false;
    }
    // Subresource-integrity and Nix hashes (`sha512-<base64>`).
    if ["sha1-", "sha256-", "sha384-", "sha512-", "md5-"]
        .iter()
        .any(|p| t.starts_with(p))
    {
        return false;
    }
    // Content identifiers (IPFS): base58 `Qm...` and base32 `bafy...`.
    if (t.starts_with("Qm") && t.len() == 46) || t.starts_with("bafy") || t.starts_with("bafk") {
        return false;
    }
    // So are paths with a hash among their segments (`.small-cache/logs/<replayId>/...`):
    // judge the path without them. A base64 secret that happens to contain `/` has no
    // all-hex segment of hash length and is judged whole.
    let is_hash = |seg: &str| seg.len() >= 32 && seg.bytes().all(|c| c.is_ascii_hexdigit());
    if t.contains('/') {
        // A path whose segments are mostly words (`logs`, `commands`) is a path, whatever
        // its hash and timestamp segments look like.
        let segs: Vec<&str> = t
            .split('/')
            .filter(|seg| !seg.is_empty() && !is_hash(seg))
            .collect();
        let wordy = segs.iter().filter(|seg| wordiness(seg) >= 0.6).count();
        if segs.len() >= 3 && wordy * 2 > segs.len() {
            return false;
        }
        if t.split('/').any(is_hash) {
            return is_random_token(&segs.join("/"));
        }
    }
    let (upper, lower, digit) = char_classes(t);
    if (upper as u8 + lower as u8 + digit as u8) < 2 {
        return false;
    }
    if entropy(t) < 3.5 || wordiness(t) >= 0.6 {
        return false;
    }
    // Base64 of text (a file written through `base64 -d`, a JSON cursor) is content, not a
    // credential; a credential inside it is still found by the caller. Base64 of one bare
    // word (`forget-me-not-key-041`, `user:pass`) is how passwords are encoded, so it stays
    // a token.
    if let Some(bytes) = b64_decode(t) {
        if text_of(&bytes).is_some_and(is_content) {
            return false;
        }
    }
    true
}

/// Decoded text that reads as content (prose, source code, JSON) rather than one bare word:
/// it has white space or structural punctuation.
fn is_content(text: &str) -> bool {
    text.chars().any(|c| {
        c.is_whitespace()
            || matches!(
                c,
                '{' | '}' | '[' | ']' | '(' | ')' | ';' | '"' | '<' | '>' | ','
            )
    })
}

/// The whitespace-delimited word of `value` around `range`.
fn word_around(value: &str, range: &Range<usize>) -> Range<usize> {
    let b = value.as_bytes();
    let mut s = range.start;
    while s > 0 && !b[s - 1].is_ascii_whitespace() && !matches!(b[s - 1], b'"' | b'\'' | b'(') {
        s -= 1;
    }
    let mut e = range.end;
    while e < b.len() && !b[e].is_ascii_whitespace() && !matches!(b[e], b'"' | b'\'' | b')') {
        e += 1;
    }
    s..e
}

fn scan_random(value: &str, out: &mut Vec<Finding>) {
    if value.len() < 32 {
        return;
    }
    let b = value.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && token_byte(b[i]) {
            i += 1;
        }
        // Base64 padding belongs to the token; an `=` followed by more text is an
        // assignment (`NAME=value`) and ends it.
        let mut end = i;
        while end < b.len() && b[end] == b'=' && end - i < 2 {
            end += 1;
        }
        if end < b.len() && token_byte(b[end]) {
            end = i;
        }
        if i - start < 32 {
            continue;
        }
        let range = start..end;
        let word = word_around(value, &range);
        let w = &value[word.clone()];
        // Parts of URLs are ids and paths; credentials in URLs are caught by the formats
        // (userinfo passwords, webhook URLs) and secret-named query parameters.
        if w.contains("://") || w.contains("base64,") {
            continue;
        }
        // An integrity hash or digest: `h1:<base64>`, `sha256:<...>`, `sha512=<...>`.
        let before = &value[word.start..start];
        if before.ends_with("h1:")
            || before.ends_with("sha256:")
            || before.ends_with("sha512:")
            || before.ends_with("sha256=")
            || before.ends_with("sha512=")
            || before.ends_with("sha1:")
        {
            continue;
        }
        let tok = &value[range.clone()];
        if tok.starts_with('/') || matches!(before.as_bytes().last(), Some(b'.') | Some(b'~')) {
            // An absolute path: temp directories (`/var/folders/..`, `/tmp/tmp.XXXXXXXXXX`,
            // `/tmp/rustdoctestnB8pZ4..`) carry random names by design.
            continue;
        }
        if is_random_token(tok) {
            out.push(Finding {
                kind: "random-looking token",
                range,
                visible: 0,
            });
        }
    }
}

/// Credentials hidden in base64 of text (`echo <base64> | base64 -d`): the decoded text is
/// scanned for the well-known formats and assignments.
fn scan_encoded(value: &str, out: &mut Vec<Finding>) {
    scan_encoded_with(value, out, false)
}

fn scan_encoded_with(value: &str, out: &mut Vec<Finding>, exhaustive: bool) {
    if value.len() < 24 {
        return;
    }
    let b = value.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (token_byte(b[i]) || b[i] == b'=') {
            i += 1;
        }
        let tok = &value[start..i];
        if tok.len() < 24 || is_hex_like(tok) || tok.contains('/') && tok.starts_with('/') {
            continue;
        }
        let Some(bytes) = b64_decode(tok) else {
            continue;
        };
        let Some(text) = text_of(&bytes) else {
            continue;
        };
        let mut inner = Vec::new();
        let pats = compiled();
        let c = if exhaustive {
            Candidates {
                formats: u128::MAX >> (128 - pats.list.len()),
                key_word: Some(0),
            }
        } else {
            candidates(pats, text)
        };
        let unanchored = exhaustive || token_runs(text.as_bytes()).unanchored();
        scan_formats_in(pats, text, c.formats, unanchored, &mut inner);
        if c.key_word.is_some() {
            scan_assignments(text, &mut inner);
        }
        if !inner.is_empty() {
            out.push(Finding {
                kind: "base64-encoded credential",
                range: start..i,
                visible: 0,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Entry points

/// Every secret inside one string value, in order, without overlaps. `key` is the mapping
/// key holding the value, if any.
pub fn scan_all(key: Option<&str>, value: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(k) = key {
        if is_secret_key_name(k) && !is_placeholder(value) {
            out.push(Finding {
                kind: "value of a secret-named key",
                range: 0..value.len(),
                visible: 0,
            });
            return out;
        }
    }
    scan_text(value, &mut out);
    dedup(out)
}

/// The formats, assignments, random tokens and encoded credentials of one text. One pass of
/// the anchor automaton and one over the bytes decide which detectors can find anything, so
/// an ordinary string costs two passes and no allocation.
fn scan_text(value: &str, out: &mut Vec<Finding>) {
    let hash = clean::hash_of(value);
    if hash.is_some_and(|h| clean::holds(h, value)) {
        return;
    }
    scan_text_unseen(value, out);
    if let (Some(h), true) = (hash, out.is_empty()) {
        clean::remember(h, value);
    }
}

/// Short strings found to hold nothing, remembered per thread: a log repeats most of its
/// values (statuses, task ids, commands, the replay ID), and each one is scanned once instead
/// of in every entry. A slot keeps the string's bytes, so a hit is an exact match, never a
/// guess; a slot taken by another string is simply overwritten.
mod clean {
    use std::cell::RefCell;

    /// The longest string remembered.
    const MAX: usize = 64;
    /// Slots (a power of two).
    const SLOTS: usize = 1024;

    #[derive(Clone, Copy)]
    struct Slot {
        hash: u64,
        /// Length + 1 (0: empty).
        len: u8,
        text: [u8; MAX],
    }

    thread_local! {
        static SLOTS_OF_THREAD: RefCell<Option<Box<[Slot]>>> = const { RefCell::new(None) };
    }

    /// The hash of a string short enough to be remembered (`None` for a longer one), for
    /// [`holds`] and [`remember`]: the length and the first and last eight bytes, mixed.
    /// Strings that differ elsewhere only share a slot (each hit is checked byte for byte),
    /// and the values of a log differ at their ends (counters, ids, times), so this is as
    /// good as hashing every byte and costs less.
    pub(super) fn hash_of(value: &str) -> Option<u64> {
        if value.len() > MAX {
            return None;
        }
        let v = value.as_bytes();
        let n = v.len();
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(w)
        };
        let (head, tail) = if n >= 8 {
            (word(&v[..8]), word(&v[n - 8..]))
        } else {
            (word(v), 0)
        };
        Some((head ^ tail.rotate_left(29) ^ (n as u64) << 56).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The slot of a hash: its top bits (the best mixed).
    fn slot(h: u64) -> usize {
        (h >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// Whether `value` was found clean before, on this thread.
    #[cfg(test)]
    pub(super) fn seen(value: &str) -> bool {
        hash_of(value).is_some_and(|h| holds(h, value))
    }

    /// Whether the slot of hash `h` (from [`hash_of`]) holds `value`.
    pub(super) fn holds(h: u64, value: &str) -> bool {
        SLOTS_OF_THREAD.with_borrow(|slots| {
            slots.as_ref().is_some_and(|slots| {
                let s = &slots[slot(h)];
                s.hash == h
                    && usize::from(s.len) == value.len() + 1
                    && &s.text[..value.len()] == value.as_bytes()
            })
        })
    }

    /// Remember that `value` (whose hash is `h`) holds nothing.
    pub(super) fn remember(h: u64, value: &str) {
        SLOTS_OF_THREAD.with_borrow_mut(|slots| {
            let slots = slots.get_or_insert_with(|| {
                let empty = Slot {
                    hash: 0,
                    len: 0,
                    text: [0; MAX],
                };
                vec![empty; SLOTS].into_boxed_slice()
            });
            let s = &mut slots[slot(h)];
            s.hash = h;
            s.len = value.len() as u8 + 1;
            s.text[..value.len()].copy_from_slice(value.as_bytes());
        });
    }
}

/// [`scan_text`] of a string not known to be clean.
fn scan_text_unseen(value: &str, out: &mut Vec<Finding>) {
    let runs = token_runs(value.as_bytes());
    if runs.inert() {
        return;
    }
    let pats = compiled();
    let c = candidates(pats, value);
    if c.formats != 0 || runs.unanchored() {
        scan_formats_in(pats, value, c.formats, runs.unanchored(), out);
    }
    if c.key_word
        .is_some_and(|w| value.len() >= 8 && runs.separator && separates_after(value, w))
    {
        scan_assignments(value, out);
    }
    if runs.token >= 32 {
        scan_random(value, out);
    }
    if out.is_empty() && runs.padded >= RUN_MIN {
        scan_encoded(value, out);
    }
}

/// Bytes of hashes, ids and UUIDs as tools write them: lower-case hex digits and dashes.
/// (Upper-case hex can hold a case-sensitive anchor: `ACCA` starts AWS key ids.)
const fn hex_byte(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'a'..=b'f' | b'-')
}

/// Bytes of timestamps (RFC 3339, with or without a fraction or an offset).
const fn stamp_byte(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'-' | b':' | b'.' | b'+' | b'T' | b'Z' | b't' | b'z')
}

/// [`Runs::inert`] of a string (the tests ask it of single strings).
#[cfg(test)]
fn is_inert(b: &[u8]) -> bool {
    token_runs(b).inert()
}

/// [`scan_text`] without the prefilter: every format, every detector (the differential
/// tests prove the prefilter never drops a finding).
#[cfg(test)]
fn scan_text_exhaustive(value: &str, out: &mut Vec<Finding>) {
    let pats = compiled();
    scan_formats_in(pats, value, u128::MAX >> (128 - pats.list.len()), true, out);
    if value.len() >= 8 {
        scan_assignments(value, out);
    }
    scan_random(value, out);
    if out.is_empty() {
        scan_encoded_with(value, out, true);
    }
}

/// Refuse text about to be written into an artifact when it holds a secret: the writing
/// commands call this on every caller-supplied string (`progress add`, `checkpoint`, plan
/// titles, the handoff summary) so that the agent learns before the gate fails, and before a
/// credential lands in a log that is append-only. `fields` are (JSON pointer, key, text);
/// the first secret found gives an `INV1` error naming the field, the format recognised and
/// the secret masked.
pub fn refuse_secrets<'a>(
    file: &str,
    fields: impl IntoIterator<Item = (String, Option<&'a str>, &'a str)>,
) -> Result<(), Box<Diagnostic>> {
    for (path, key, text) in fields {
        let Some(f) = scan_str(key, text) else {
            continue;
        };
        let masked = f.masked(text);
        let field = key.map_or_else(|| path.clone(), |k| format!("`{k}`"));
        return Err(Box::new(
            Diagnostic::error(
                "INV1",
                format!(
                    "refusing to write {field}: it holds a secret ({} `{masked}`)",
                    f.kind
                ),
            )
            .in_file(file)
            .with_path(path)
            .with_help(
                "remove it, and rotate the credential if it is real; refer to a secret by name \
             ($GITHUB_TOKEN, a vault path) instead. Nothing was written: a secret in the \
             append-only log could not be taken back, and `small check --strict` fails on it",
            )
            .with_secret(f.kind, masked),
        ));
    }
    Ok(())
}

/// Sort by position and drop findings that overlap an earlier (or longer) one.
fn dedup(mut v: Vec<Finding>) -> Vec<Finding> {
    if v.len() <= 1 {
        return v;
    }
    v.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
    });
    let mut out: Vec<Finding> = Vec::with_capacity(v.len());
    for f in v {
        match out.last_mut() {
            Some(last) if f.range.start < last.range.end => {
                if f.range.end > last.range.end {
                    last.range.end = f.range.end;
                }
            }
            _ => out.push(f),
        }
    }
    out
}

/// The first secret inside one string value. `key` is the mapping key holding it, if any.
pub fn scan_str(key: Option<&str>, value: &str) -> Option<Finding> {
    scan_all(key, value).into_iter().next()
}

/// `text` with every secret in it masked (for messages that quote a value).
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = scan_all(None, text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.range.start]);
        out.push_str(&f.masked(text));
        at = f.range.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The text of a whole file (an artifact's YAML source) with its secrets masked, for a
/// front end that returns file contents: credentials anywhere (a PEM block across its lines
/// too), and the values of secret-named keys (`password: ...`) where the loader's parser
/// finds them ([`SecretValues`]), each line of a multi-line value masked on its own line.
pub fn redact_source(text: &str) -> Cow<'_, str> {
    let mut masks: Vec<(Range<usize>, String)> = scan_all(None, text)
        .into_iter()
        .map(|f| (f.range.clone(), f.masked(text)))
        .collect();
    let mut values = SecretValues::new(text);
    values.reach(text.len());
    for range in values.found.clone() {
        for piece in line_pieces(text, range) {
            let hidden = value_chars(&text[piece.clone()]);
            masks.push((piece, mask_text("", hidden)));
        }
    }
    if masks.is_empty() {
        return Cow::Borrowed(text);
    }
    let masks = merge_masks(masks, |r| text.get(r).map_or(0, |t| t.chars().count()));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (r, m) in masks {
        if r.start < at || text.get(r.clone()).is_none() {
            continue;
        }
        out.push_str(&text[at..r.start]);
        out.push_str(&m);
        at = r.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The pieces of `range` (a byte range of `text`) line by line, each without the line's
/// indentation and line break: how a value written across lines is masked in place.
fn line_pieces(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let Some(slice) = text.get(range.clone()) else {
        return pieces;
    };
    let mut at = range.start;
    for line in slice.split_inclusive(['\n', '\r']) {
        let body = line.trim_end_matches(['\n', '\r']);
        let lead = if at == range.start {
            0
        } else {
            body.len() - body.trim_start_matches([' ', '\t']).len()
        };
        if body.len() > lead {
            pieces.push(at + lead..at + body.len());
        }
        at += line.len();
    }
    pieces
}

/// Characters of a masked value, its quotes left out.
fn value_chars(text: &str) -> usize {
    text.trim_matches(['"', '\'']).chars().count()
}

/// Where the values of secret-named keys (`password: hunter2`) are in a YAML source, as the
/// loader's parser reads them: byte ranges found as far into the text as a caller needs, so
/// that masking a few lines of a long log does not parse the rest of it. The parse stops at
/// a syntax error; values before it are still known, and credential formats anywhere are
/// masked by [`redact_line`] whatever the parse found.
pub struct SecretValues<'a> {
    src: &'a str,
    walk: crate::yaml::KeyedScalars<'a>,
    /// Ranges found so far, in source order.
    found: Vec<Range<usize>>,
    /// The walk has passed this byte offset: every value starting before it is in `found`.
    reached: usize,
    ended: bool,
}

impl<'a> SecretValues<'a> {
    pub fn new(src: &'a str) -> Self {
        SecretValues {
            src,
            walk: crate::yaml::keyed_scalars(src),
            found: Vec::new(),
            reached: 0,
            ended: false,
        }
    }

    /// Walk on until every value that starts before `offset` is known.
    fn reach(&mut self, offset: usize) {
        while !self.ended && self.reached <= offset {
            let Some(k) = self.walk.next() else {
                self.ended = true;
                break;
            };
            let (mut start, end) = (k.span.start.offset as usize, k.span.end.offset as usize);
            self.reached = start;
            // A block scalar's header (`|`, `>-`) is not part of the value.
            let text = self.src.get(start..end).unwrap_or_default();
            if text.starts_with(['|', '>']) {
                start += text.find('\n').map_or(text.len(), |i| i + 1);
            }
            if start < end && is_secret_key_name(&k.key) && !is_placeholder(&k.value) {
                self.found.push(start..end);
            }
        }
    }

    /// The secret values on the line at byte range `line` of the source, as byte ranges of
    /// the line (indentation of a continued value left out).
    pub fn on_line(&mut self, line: Range<usize>) -> Vec<Range<usize>> {
        self.reach(line.end);
        let first = self.found.partition_point(|r| r.end <= line.start);
        let mut out = Vec::new();
        for r in &self.found[first..] {
            if r.start >= line.end.max(line.start + 1) {
                break;
            }
            let piece = r.start.max(line.start)..r.end.min(line.end);
            out.push(piece.start - line.start..piece.end - line.start);
        }
        out
    }
}

/// Every string of a JSON value (and every key) with its secrets masked, in place: what a
/// front end (the MCP server, the HTTP API) runs over a result that quotes workspace or
/// request text before returning it.
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value as J;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            J::String(s) => {
                if let Cow::Owned(m) = redact(s) {
                    *s = m;
                }
            }
            J::Array(items) => stack.extend(items.iter_mut()),
            J::Object(map) => {
                if map.keys().any(|k| matches!(redact(k), Cow::Owned(_))) {
                    let old = std::mem::take(map);
                    for (k, val) in old {
                        map.insert(redact(&k).into_owned(), val);
                    }
                }
                stack.extend(map.values_mut());
            }
            J::Null | J::Bool(_) | J::Number(_) => {}
        }
    }
}

/// A source line with its secrets masked, and how columns moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedLine {
    pub text: String,
    /// Masked spans: (character range in the original line, character range in `text`).
    pub masks: Vec<(Range<usize>, Range<usize>)>,
}

impl RedactedLine {
    /// Map a 0-based character column of the original line to the masked line. A column
    /// inside a masked span maps to the start of its mask (or to its end, for an end
    /// column).
    pub fn map_column(&self, col: usize, is_end: bool) -> usize {
        let mut shift: isize = 0;
        for (orig, new) in &self.masks {
            if col < orig.start || (is_end && col == orig.start) {
                break;
            }
            if col < orig.end || (is_end && col == orig.end) {
                return if is_end { new.end } else { new.start };
            }
            shift = new.end as isize - orig.end as isize;
        }
        (col as isize + shift).max(0) as usize
    }
}

/// Mask the secrets of one line of YAML source: credential formats and assignments anywhere
/// in it, and `values`, byte ranges of the line that hold the value of a secret-named key
/// (from [`SecretValues::on_line`]). `extra` are character ranges known to hold a secret
/// (the span of a secrets diagnostic), masked as well.
pub fn redact_line(
    line: &str,
    values: &[Range<usize>],
    extra: &[(Range<usize>, String)],
) -> RedactedLine {
    let mut found: Vec<(Range<usize>, String)> = Vec::new(); // byte ranges
    for f in scan_all(None, line) {
        let masked = f.masked(line);
        found.push((f.range, masked));
    }
    for v in values {
        let lead = line
            .get(v.clone())
            .map_or(0, |t| t.len() - t.trim_start_matches([' ', '\t']).len());
        let v = v.start + lead..v.end;
        if let Some(text) = line.get(v.clone()).filter(|t| !t.is_empty()) {
            found.push((v, mask_text("", value_chars(text))));
        }
    }
    // Convert byte ranges to character ranges, then add the known spans.
    let mut chars: Vec<(Range<usize>, String)> = found
        .into_iter()
        .filter_map(|(r, m)| {
            let s = line.get(..r.start)?.chars().count();
            let e = s + line.get(r.clone())?.chars().count();
            Some((s..e, m))
        })
        .collect();
    chars.extend(extra.iter().cloned());
    let merged = merge_masks(chars, |r| r.len());
    if merged.is_empty() {
        return RedactedLine {
            text: line.to_string(),
            masks: Vec::new(),
        };
    }
    let cs: Vec<char> = line.chars().collect();
    let mut text = String::with_capacity(line.len());
    let mut masks = Vec::new();
    let mut at = 0;
    let mut new_len = 0;
    for (r, m) in merged {
        let r = r.start.min(cs.len())..r.end.min(cs.len());
        if r.start < at {
            continue;
        }
        text.extend(&cs[at..r.start]);
        new_len += r.start - at;
        let m_len = m.chars().count();
        text.push_str(&m);
        masks.push((r.clone(), new_len..new_len + m_len));
        new_len += m_len;
        at = r.end;
    }
    text.extend(&cs[at..]);
    RedactedLine { text, masks }
}

/// Masks sorted by position, overlapping ones joined into one that hides their union
/// (`hidden` counts the characters of a range).
fn merge_masks(
    mut masks: Vec<(Range<usize>, String)>,
    hidden: impl Fn(Range<usize>) -> usize,
) -> Vec<(Range<usize>, String)> {
    masks.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut merged: Vec<(Range<usize>, String)> = Vec::new();
    for (r, m) in masks {
        match merged.last_mut() {
            Some((last, lm)) if r.start < last.end => {
                if r.end > last.end {
                    last.end = r.end;
                    *lm = mask_text("", hidden(last.clone()));
                }
            }
            _ => merged.push((r, m)),
        }
    }
    merged
}

/// Walk a document and report every string that looks like a secret (one finding per value).
pub fn scan_document(root: &Node) -> Vec<Hit> {
    scan_node(root, "")
}

/// One step of a JSON pointer, kept unformatted until a hit needs its path.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Index(usize),
    Key(&'a str),
}

/// `prefix` followed by the segments, as a JSON pointer.
fn pointer(prefix: &str, segs: &[Seg<'_>]) -> String {
    let mut p = String::from(prefix);
    for s in segs {
        p.push('/');
        match s {
            Seg::Index(i) => p.push_str(&i.to_string()),
            Seg::Key(k) if k.contains(['~', '/']) => {
                p.push_str(&k.replace('~', "~0").replace('/', "~1"))
            }
            Seg::Key(k) => p.push_str(k),
        }
    }
    p
}

/// Walk a node found at JSON pointer `prefix` (paths in the hits start with it).
pub fn scan_node(node: &Node, prefix: &str) -> Vec<Hit> {
    let mut hits = Vec::new();
    // A mapping of scalars (a progress entry, nearly always) needs no walk.
    if let Value::Map(entries) = &node.value {
        if entries.iter().all(|e| !e.value.is_collection()) {
            for e in entries {
                scan_scalar(
                    &e.value,
                    Some(&e.key),
                    prefix,
                    &[Seg::Key(&e.key)],
                    &mut hits,
                );
            }
            return hits;
        }
    }
    // Iterative walk: deeply nested documents must not exhaust the stack. Each item is a
    // node, the key holding it, its depth and its last pointer segment; `path` holds the
    // segments of the node being visited (a path is only formatted for a hit).
    let mut stack: Vec<(&Node, Option<&str>, usize, Option<Seg<'_>>)> = vec![(node, None, 0, None)];
    let mut path: Vec<Seg<'_>> = Vec::new();
    while let Some((node, key, depth, seg)) = stack.pop() {
        path.truncate(depth.saturating_sub(1));
        if let Some(seg) = seg {
            path.push(seg);
        }
        match &node.value {
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, None, depth + 1, Some(Seg::Index(i))));
                }
            }
            Value::Map(entries) => {
                for e in entries.iter().rev() {
                    stack.push((&e.value, Some(&e.key), depth + 1, Some(Seg::Key(&e.key))));
                }
            }
            _ => scan_scalar(node, key, prefix, &path, &mut hits),
        }
    }
    hits
}

/// The secret in one scalar held by `key`, found at `prefix` followed by `path`, if any.
fn scan_scalar(
    node: &Node,
    key: Option<&str>,
    prefix: &str,
    path: &[Seg<'_>],
    hits: &mut Vec<Hit>,
) {
    match &node.value {
        Value::Str(s) => {
            if let Some(f) = scan_str(key, s) {
                let masked = f.masked(s);
                hits.push(Hit {
                    span: secret_span(node, s, &f.range),
                    what: format!("{} `{masked}`", f.kind),
                    kind: f.kind,
                    masked,
                    path: pointer(prefix, path),
                });
            }
        }
        Value::Int(i) => {
            // A number under a secret-named key (`pin: 123456`) is still a secret.
            if let Some(k) = key {
                if is_secret_key_name(k) && i.unsigned_abs() >= 1000 {
                    let masked = mask_text("", i.to_string().len());
                    hits.push(Hit {
                        path: pointer(prefix, path),
                        span: node.span,
                        kind: "value of a secret-named key",
                        what: format!("value of a secret-named key `{masked}`"),
                        masked,
                    });
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Float(_) | Value::Seq(_) | Value::Map(_) => {}
    }
}

/// The span of the secret itself when the scalar is written on one line exactly as its
/// value (plain, or quoted without escapes); otherwise the span of the whole value.
fn secret_span(node: &Node, value: &str, range: &Range<usize>) -> Span {
    let sp = node.span;
    if sp.start.line != sp.end.line || sp.start.line == 0 {
        return sp;
    }
    let len = (sp.end.offset - sp.start.offset) as usize;
    let base = match node.style {
        Style::Plain if len == value.len() => 0,
        Style::SingleQuoted | Style::DoubleQuoted if len == value.len() + 2 => 1,
        _ => return sp,
    };
    if value.contains(['\n', '\r', '\t']) {
        return sp;
    }
    let col = |byte: usize| sp.start.column + base + value[..byte].chars().count() as u32;
    let off = |byte: usize| sp.start.offset + base + byte as u32;
    Span {
        start: Pos {
            line: sp.start.line,
            column: col(range.start),
            offset: off(range.start),
        },
        end: Pos {
            line: sp.start.line,
            column: col(range.end),
            offset: off(range.end),
        },
    }
}

#[cfg(test)]
mod tests;
