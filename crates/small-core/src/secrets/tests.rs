use super::*;
use proptest::strategy::Strategy as _;

/// Tokens are assembled from parts so that the source holds no scanner-shaped credential.
fn tok(parts: &[&str]) -> String {
    parts.concat()
}

fn flagged(key: Option<&str>, v: &str) -> bool {
    scan_str(key, v).is_some()
}

fn kind(v: &str) -> &'static str {
    scan_str(None, v).map(|f| f.kind).unwrap_or("none")
}

#[test]
fn finds_what_the_reference_misses() {
    let stripe = tok(&["sk_", "live_", "51HqLyjWDarjtT1zdp7dc9xQ4"]);
    assert!(flagged(
        Some("evidence"),
        &format!("Smoke test used key {stripe} against the sandbox")
    ));
    let aws = tok(&["AKIA", "Z7Q2LMNOPQRS4TUV"]);
    assert!(flagged(Some("notes"), &format!("creds {aws} in env")));
    let pem = tok(&[
        "-----BEGIN RSA ",
        "PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    ]);
    assert!(flagged(Some("notes"), &pem));
    let gh = tok(&["ghp", "_0123456789abcdefghijABCDEFGHIJ012345"]);
    assert_eq!(kind(&gh), "GitHub token");
    assert!(flagged(
        None,
        &tok(&["token xox", "b-123456789012-abcdefghijkl"])
    ));
    assert_eq!(
        kind("postgres://app:s3cr3t@db.internal:5432/app"),
        "password in a URL"
    );
}

#[test]
fn assignments_anywhere_in_text() {
    assert_eq!(
        kind("ran DB_PASSWORD=Xk9#mQ2vLp7z ./migrate"),
        "secret assignment"
    );
    assert_eq!(
        kind("export GITHUB_PAT=Zq81Lm0PpXr7Tt2"),
        "secret assignment"
    );
    assert_eq!(
        kind(r#"{"client_secret": "a8Kq2Lm9Zp0Xc7Vb"}"#),
        "secret assignment"
    );
    assert_eq!(
        kind("curl --password=Tr0ub4dor&3x host"),
        "secret assignment"
    );
    assert_eq!(kind("login --token Zq81Lm0PpXr7Tt2wq"), "secret assignment");
    // Separators before and after a flag, and a flag at the very end.
    assert_eq!(
        kind("ran: a=b then --api-key Zq81Lm0PpXr7Tt2wq: ok"),
        "secret assignment"
    );
    assert!(!flagged(Some("command"), "ran: a=b then --token"));
    // References, placeholders, words, names.
    for ok in [
        "DB_PASSWORD=$DB_PASSWORD ./migrate",
        "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
        "POSTGRES_PASSWORD=postgres docker compose up",
        "API_TOKEN=test-token pytest",
        "token=os.environ['API_TOKEN']",
        "SECRET_NAME=prod-db",
        "PASSWORD_MIN_LENGTH=12",
        "max_tokens=4096",
        "password: <redacted>",
        "docker login --password-stdin",
        "TOKEN=GITHUB_TOKEN_FALLBACK",
        "password=config.db.password",
    ] {
        assert!(!flagged(Some("command"), ok), "{ok}");
    }
}

#[test]
fn headers_and_connection_strings() {
    assert_eq!(
        kind("curl -H 'Authorization: Bearer 9f8Aq7Lm2ZxPq0Rt5Vb3Nc'"),
        "bearer token"
    );
    assert_eq!(
        kind("Authorization: Basic YWRtaW46czNjcjN0UGFzcw=="),
        "basic auth credentials"
    );
    assert!(!flagged(None, "uses Basic authentication over TLS"));
    assert!(!flagged(None, "Authorization: Bearer $TOKEN"));
    assert!(!flagged(None, "Authorization: Bearer <token>"));
    let az = tok(&[
        "DefaultEndpointsProtocol=https;AccountName=acct;Account",
        "Key=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJDREVGR0g=;",
    ]);
    assert_eq!(kind(&az), "Azure storage account key");
    assert_eq!(
        kind("mongodb+srv://svc:Pq7Lm2Zx@cluster0.mongodb.net/app"),
        "password in a URL"
    );
    assert!(!flagged(None, "postgres://app:${PGPASSWORD}@db/app"));
    assert!(!flagged(None, "docker://alpine:3.19@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1"));
}

#[test]
fn keeps_what_the_reference_finds() {
    assert!(flagged(
        Some("aws"),
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lk2Wm"
    ));
    assert!(flagged(Some("password"), "hunter2"));
    assert!(flagged(Some("api_key"), "abc"));
    assert!(flagged(Some("clientSecret"), "abc"));
}

#[test]
fn no_false_positives() {
    for (key, v) in [
        ("commit", "3f9c2ab8e0d1c4b7a9e6f5d4c3b2a1908f7e6d5c"),
        (
            "value",
            "bf8b010e70920f9ad9ff55a4cc73249c34eb408d9cdb613e9e6345a02720d701",
        ),
        ("private_key_path", "~/.ssh/loadtest_ed25519"),
        ("max_tokens", "4096"),
        ("token_count", "12"),
        ("password", ""),
        ("password", "${DB_PASSWORD}"),
        ("test", "TestTokenBucketRefillWithInjectableClock2"),
        ("evidence", "src/Components/UserProfile2Widget/index.tsx"),
        ("id", "123e4567-e89b-12d3-a456-426614174000"),
        ("link", "https://ci.example.com/gateway/builds/4412"),
        ("evidence", "Rotated the password policy; tokens expire in 1h"),
        (
            "command",
            "cd /var/folders/93/_vxgpzjd6ks13t426qyxd03r0000gn/T/tmp.1Oa7R96HKH && ls",
        ),
        ("command", "tmpdir=$(mktemp -d) && cp x $tmpdir/tmp.ZjmVLaNsKN"),
        ("evidence", "GET /v1/transcripts/by-source/dQw4w9WgXcQ returned 200"),
        (
            "command",
            "YT_TRANSCRIPT_DATABASE_ENABLED=false YT_TRANSCRIPT_CACHE_DIRECTORY_OVERRIDE=1 cargo run",
        ),
        ("notes", "AKIAIOSFODNN7EXAMPLE is the AWS documentation key"),
    ] {
        assert!(!flagged(Some(key), v), "{key}: {v}");
    }
}

#[test]
fn base64_of_source_is_not_a_secret_but_an_encoded_credential_is() {
    use base64::Engine as _;
    let src =
        "package commands\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc Run() error { return nil }\n";
    let b64 = base64::engine::general_purpose::STANDARD.encode(src);
    let cmd = format!("python3 -c 'import base64; open(\"a.go\",\"w\").write(base64.b64decode(\"{b64}\").decode())'");
    assert!(!flagged(Some("command"), &cmd), "{cmd}");
    let inner = tok(&[
        "export GITHUB_TOKEN=gh",
        "p_0123456789abcdefghijABCDEFGHIJ012345\n",
    ]);
    let enc = base64::engine::general_purpose::STANDARD.encode(inner);
    assert_eq!(
        kind(&format!("echo {enc} | base64 -d")),
        "base64-encoded credential"
    );
}

#[test]
fn key_words_split() {
    assert_eq!(key_words("clientSecret"), vec!["client", "secret"]);
    assert_eq!(key_words("API_KEY"), vec!["api", "key"]);
    assert!(is_secret_key_name("db-password"));
    assert!(is_secret_key_name("privateKey"));
    assert!(is_secret_key_name("GITHUB_PAT"));
    assert!(!is_secret_key_name("pat"));
    assert!(!is_secret_key_name("private_key_path"));
    assert!(!is_secret_key_name("max_tokens"));
    assert!(!is_secret_key_name("tokenizer"));
}

#[test]
fn masks_keep_only_the_public_prefix() {
    let v = tok(&["key gh", "p_0123456789abcdefghijABCDEFGHIJ012345 end"]);
    let f = scan_str(None, &v).unwrap();
    assert_eq!(f.masked(&v), "ghp_…[36 chars redacted]");
    assert_eq!(f.describe(&v), "GitHub token `ghp_…[36 chars redacted]`");
    let f = scan_str(Some("password"), "hunter2").unwrap();
    assert_eq!(f.masked("hunter2"), "[7 chars redacted]");
    let r = redact(&v);
    assert_eq!(r, "key ghp_…[36 chars redacted] end");
}

#[test]
fn redact_line_masks_and_maps_columns() {
    let line = "    password: hunter2 # old";
    let values = SecretValues::new(line).on_line(0..line.len());
    let r = redact_line(line, &values, &[]);
    assert_eq!(r.text, "    password: [7 chars redacted] # old");
    let gh = tok(&["gh", "p_0123456789abcdefghijABCDEFGHIJ012345"]);
    let line = format!("  - evidence: \"token {gh} used\"");
    let r = redact_line(&line, &[], &[]);
    assert!(!r.text.contains("0123456789abcdef"), "{}", r.text);
    // Columns before the mask stay, inside map to its start, after shift.
    let start = line.find("ghp").unwrap();
    assert_eq!(r.map_column(2, false), 2);
    assert_eq!(r.map_column(start + 5, false), start);
    assert_eq!(r.map_column(line.len(), true), r.text.chars().count());
}

#[test]
fn log_paths_with_a_replay_id_are_not_secrets() {
    let path = ".small-cache/logs/5a4775972ef32d43e98e5dff04cb229dfa9d0de5138ae337ab6bfcb3e0755469/commands/20261122T131333.837229773Z.txt";
    assert_eq!(scan_str(Some("command_ref"), path), None);
    let notes = format!("apply: exit code 0; output in {path}");
    assert_eq!(scan_str(Some("notes"), &notes), None);
    // A base64 secret with `/` inside is still found.
    let aws = "aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9LkWmq9Zt";
    assert!(scan_str(Some("notes"), aws).is_some());
}

#[test]
fn deep_documents_do_not_overflow() {
    let mut node = Node {
        value: Value::Str("x".into()),
        span: Span::default(),
        style: Style::Plain,
    };
    for _ in 0..100_000 {
        node = Node {
            value: Value::Seq(vec![node]),
            span: Span::default(),
            style: Style::Flow,
        };
    }
    assert!(scan_node(&node, "").is_empty());
    // Dropping a deep tree recursively is the tree's concern; forget it here.
    std::mem::forget(node);
}

#[test]
fn base64_of_one_bare_word_is_a_token_but_base64_of_content_is_not() {
    // "forget-me-not-a-real-key-2026-041": how an encoded password looks.
    let word = "Zm9yZ2V0LW1lLW5vdC1hLXJlYWwta2V5LTIwMjYtMDQx";
    assert!(scan_str(Some("webhook"), word).is_some());
    // "package main\n\nimport \"fmt\"\n": source code written through base64 -d.
    let code = "cGFja2FnZSBtYWluCgppbXBvcnQgImZtdCIK";
    assert!(scan_str(Some("command"), code).is_none());
}

/// Every text of the labelled corpus, without its marks.
fn corpus_texts() -> Vec<String> {
    let files = [
        include_str!("../tests/secrets_corpus/true_positives.txt"),
        include_str!("../tests/secrets_corpus/false_positives.txt"),
    ];
    files
        .iter()
        .flat_map(|f| f.lines())
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t').map(|(_, t)| t))
        .map(|t| t.replace(['⟨', '⟩', '«', '»'], "").replace("\\n", "\n"))
        .collect()
}

#[test]
fn the_prefilter_never_drops_a_finding() {
    // The formats the corpus lacks, and near misses around the anchors.
    let mut texts = corpus_texts();
    texts.extend([
        tok(&["PuTTY-User-Key-", "File-3: ssh-ed25519"]),
        tok(&["runner ", "GR1348941", "aB3dE5gH7jK9mN1pQ3sT"]),
        tok(&["api_", "org_", "abcdefghijklmnopqrstuvwxyzABCDEFGH"]),
        tok(&["x", "ghp_0123456789abcdefghijABCDEFGHIJ012345"]),
        tok(&["(", "ghp_0123456789abcdefghijABCDEFGHIJ012345", ")"]),
        tok(&["Authorization: BEARER ", "aB3dE5gH7jK9mN1pQ3sT5vW7"]),
        tok(&["task-", "sk-abcdefghijklmnopqrstuvwxyz0123456789AB"]),
        tok(&["é", "sk-abcdefghijklmnopqrstuvwxyz0123456789AB"]),
        tok(&[
            "MTk4NjIyNDgzNDcxOTI1MjQ4",
            ".Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        ]),
        "echo cGFzc3dvcmQ9aHVudGVyMmh1bnRlcjI= | base64 -d".to_string(),
        "DB_PASSWORD=Zx9#kq2LmP".to_string(),
    ]);
    let mut variants = Vec::new();
    for t in &texts {
        variants.push(t.clone());
        variants.push(t.to_ascii_uppercase());
        variants.push(t.to_ascii_lowercase());
        variants.push(format!("x{t}"));
        variants.push(format!("see: {t}."));
    }
    for v in &variants {
        let mut fast = Vec::new();
        scan_text(v, &mut fast);
        let mut all = Vec::new();
        scan_text_exhaustive(v, &mut all);
        assert_eq!(dedup(fast), dedup(all), "{v:?}");
    }
}

#[test]
fn every_format_compiles() {
    // Formats compile on first use; a broken expression would otherwise only show as a
    // credential that is never found.
    let pats = compiled();
    assert_eq!(pats.list.len(), FORMATS.len());
    for p in &pats.list {
        assert!(p.re().is_some(), "{} does not compile", p.kind);
    }
}

#[test]
fn no_anchor_is_made_of_inert_bytes() {
    // `is_inert` relies on this: a hash or a timestamp can hold no anchor, so no format and
    // no assignment is ever a candidate in one.
    let fits = |a: &Anchor, alphabet: fn(u8) -> bool| {
        a.text.bytes().all(|c| {
            alphabet(c)
                || a.ignore_case
                    && (alphabet(c.to_ascii_lowercase()) || alphabet(c.to_ascii_uppercase()))
        })
    };
    for a in &compiled().anchor_info {
        assert!(!fits(a, hex_byte), "anchor {:?} fits in a hash", a.text);
        assert!(
            !fits(a, stamp_byte),
            "anchor {:?} fits in a timestamp",
            a.text
        );
    }
}

proptest::proptest! {
    #[test]
    fn inert_strings_hold_nothing_for_any_detector(
        v in proptest::string::string_regex(
            "[0-9a-fA-F-]{0,90}|[0-9:.+TZtz-]{0,40}|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,30}(Z|[+-][0-9]{2}:[0-9]{2})"
        ).unwrap()
    ) {
        let mut all = Vec::new();
        scan_text_exhaustive(&v, &mut all);
        if is_inert(v.as_bytes()) {
            proptest::prop_assert!(all.is_empty(), "{v:?}: {all:?}");
        }
        let mut fast = Vec::new();
        scan_text(&v, &mut fast);
        proptest::prop_assert_eq!(dedup(fast), dedup(all));
    }
}

#[test]
fn hashes_and_timestamps_are_inert_and_words_are_not() {
    for v in [
        "b0a8376814f0bb470496af301862b16da2cafcfb7e0971c3f5bf8239ae8c7221",
        "123e4567-e89b-12d3-a456-426614174000",
        "2026-01-01T00:00:00.000000Z",
        "2026-01-01T00:00:00+02:00",
        "",
    ] {
        assert!(is_inert(v.as_bytes()), "{v}");
    }
    for v in [
        "in_progress",
        "ACCAABCDEF2345672345",
        "task-1",
        "12:012345678901234567890123456789",
        "AKIA",
    ] {
        assert!(!is_inert(v.as_bytes()), "{v}");
    }
}

/// The candidates by the plain definition: every overlapping match of the anchors, found by
/// the crate's own iterator.
fn candidates_by_iterator(pats: &Patterns, value: &str) -> Candidates {
    let ac = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(pats.anchor_info.iter().map(|a| a.text))
        .unwrap();
    let b = value.as_bytes();
    let mut c = Candidates::default();
    for m in ac.find_overlapping_iter(value) {
        let a = &pats.anchor_info[m.pattern().as_usize()];
        if a.word_start && m.start() > 0 && is_word_byte(b[m.start() - 1]) {
            continue;
        }
        if !a.ignore_case && &b[m.start()..m.end()] != a.text.as_bytes() {
            continue;
        }
        match a.format {
            Some(i) => c.formats |= 1u128 << i,
            None => {
                c.key_word = Some(c.key_word.map_or(m.start(), |w| w.min(m.start())));
            }
        }
    }
    c
}

fn anchors_nfa(pats: &Patterns) -> &'static noncontiguous::NFA {
    static NFA: OnceLock<noncontiguous::NFA> = OnceLock::new();
    NFA.get_or_init(|| {
        noncontiguous::Builder::new()
            .ascii_case_insensitive(true)
            .prefilter(false)
            .build(pats.anchor_info.iter().map(|a| a.text))
            .unwrap()
    })
}

fn anchors_dfa(pats: &Patterns) -> &'static dfa::DFA {
    static DFA: OnceLock<dfa::DFA> = OnceLock::new();
    DFA.get_or_init(|| {
        dfa::Builder::new()
            .ascii_case_insensitive(true)
            .prefilter(false)
            .build(pats.anchor_info.iter().map(|a| a.text))
            .unwrap()
    })
}

#[test]
fn the_first_byte_scan_and_the_automaton_find_the_candidates_the_iterator_does() {
    let pats = compiled();
    let dfa = anchors_dfa(pats);
    let mut texts = corpus_texts();
    texts.extend([
        "passed 214 tests".to_string(),
        "ghp_ then sk- then xoxb-".into(),
        "xghp_ AKIAx _AKIA pwdpasskeytoken".into(),
    ]);
    for t in &texts {
        for v in [t.clone(), t.to_ascii_uppercase(), t.to_ascii_lowercase()] {
            let want = candidates_by_iterator(pats, &v);
            assert_eq!(candidates_by_first_byte(pats, &v), want, "{v:?}");
            assert_eq!(candidates_in(pats, anchors_nfa(pats), &v), want, "{v:?}");
            assert_eq!(candidates_in(pats, dfa, &v), want, "{v:?}");
        }
    }
}

proptest::proptest! {
    /// Strings made of anchors (in any case), word and non-word bytes, and any text: the
    /// first-byte scan and the walks over either automaton find what the crate's overlapping
    /// iterator finds.
    #[test]
    fn anchor_walks_equal_the_overlapping_iterator(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                (0usize..64, proptest::bool::ANY).prop_map(|(i, upper)| {
                    let a = compiled().anchor_info[i % compiled().anchor_info.len()].text;
                    if upper { a.to_ascii_uppercase() } else { a.to_string() }
                }),
                proptest::string::string_regex("[a-zA-Z0-9_ .:/=-]{0,6}").unwrap(),
                proptest::prelude::any::<String>(),
            ],
            0..12,
        )
    ) {
        let pats = compiled();
        let v = parts.concat();
        let want = candidates_by_iterator(pats, &v);
        proptest::prop_assert_eq!(candidates_by_first_byte(pats, &v), want);
        proptest::prop_assert_eq!(candidates_in(pats, anchors_nfa(pats), &v), want);
        proptest::prop_assert_eq!(candidates_in(pats, anchors_dfa(pats), &v), want);
    }
}

/// The runs measured on bit masks equal the runs counted byte by byte, across the 64-byte
/// blocks too (a string too short for any detector's run is not measured, nor is a run
/// shorter than any detector's).
#[test]
fn token_runs_equal_a_byte_by_byte_count() {
    fn counted(b: &[u8]) -> (usize, usize) {
        let (mut run, mut longest, mut prun, mut padded) = (0, 0, 0, 0);
        for &c in b {
            run = if token_byte(c) { run + 1 } else { 0 };
            prun = if token_byte(c) || c == b'=' {
                prun + 1
            } else {
                0
            };
            longest = usize::max(longest, run);
            padded = usize::max(padded, prun);
        }
        (longest, padded)
    }
    let alphabet = b"aZ9+/_-= .:#\xc3";
    proptest::proptest!(proptest::test_runner::Config::with_cases(2000), |(
        picks in proptest::collection::vec(0usize..64, 0..300),
        tokens in 0usize..8,
    )| {
        // Mostly a few letters of the alphabet, so that long runs (and runs across the
        // blocks) happen.
        let b: Vec<u8> = picks
            .iter()
            .map(|&p| alphabet[if p < 48 { p % (tokens + 1) } else { p % alphabet.len() }])
            .collect();
        let r = token_runs(&b);
        // Exact from RUN_MIN up; a shorter run is only known to be shorter.
        let measured = |n: usize| if n >= RUN_MIN { n } else { 0 };
        let want = if b.len() < RUN_MIN { (0, 0) } else { counted(&b) };
        proptest::prop_assert_eq!(
            (measured(r.token), measured(r.padded)),
            (measured(want.0), measured(want.1)),
            "{:?}",
            String::from_utf8_lossy(&b)
        );
    });
    for n in [24, 25, 30, 63, 64, 65, 127, 128, 129, 200] {
        let b = vec![b'a'; n];
        assert_eq!((token_runs(&b).token, token_runs(&b).padded), (n, n));
        let mut c = b.clone();
        c.push(b' ');
        c.extend(std::iter::repeat_n(b'=', n + 1));
        assert_eq!((token_runs(&c).token, token_runs(&c).padded), (n, n + 1));
    }
}

/// Whatever computes the runs on this machine (SSE2 compares on x86-64) agrees with the
/// byte classes of the table, on every byte value, every length and every class.
#[test]
fn token_runs_equal_the_table_on_any_bytes() {
    let alphabet = b"aAfgzZ09+/_-=.: TtZz#\x00\x7f\x80\xc3\xff";
    proptest::proptest!(proptest::test_runner::Config::with_cases(3000), |(
        picks in proptest::collection::vec(0usize..256, 0..200),
        narrow in proptest::bool::ANY,
    )| {
        // Every byte value, or (for long runs and whole-string classes) a few chosen ones.
        let b: Vec<u8> = picks
            .iter()
            .map(|&p| if narrow { alphabet[p % alphabet.len()] } else { p as u8 })
            .collect();
        proptest::prop_assert_eq!(token_runs(&b), token_runs_by_table(&b), "{:?}", b);
    });
    for s in [
        "",
        "2026-01-01T00:00:00.000000Z",
        "b0a8376814f0bb47-",
        "ABC",
        "x.y:z=w v",
    ] {
        assert_eq!(
            token_runs(s.as_bytes()),
            token_runs_by_table(s.as_bytes()),
            "{s}"
        );
    }
}

/// A run of ones is long enough for the detectors exactly when it has RUN_MIN ones, wherever
/// it lies in the word and whatever surrounds it.
#[test]
fn has_run_min_finds_runs_of_run_min() {
    for len in 1..=64usize {
        for at in 0..=(64 - len) {
            let run = (u64::MAX >> (64 - len)) << at;
            // Alternate ones around the run (never a run of 2 beside it).
            let noise = 0x5555_5555_5555_5555u64 & !(run << 1 | run | run >> 1);
            for m in [run, run | noise] {
                assert_eq!(has_run_min(m), longest_ones(m) >= RUN_MIN, "{m:064b}");
            }
        }
    }
}

#[test]
fn clean_strings_are_remembered_and_nothing_else() {
    let plain = "cargo test -p app: 214 passed (memo check)";
    assert!(!clean::seen(plain));
    assert!(scan_all(Some("evidence"), plain).is_empty());
    assert!(clean::seen(plain), "a clean string is remembered");
    assert!(scan_all(Some("evidence"), plain).is_empty());
    // A secret is never remembered, however often it is scanned.
    let secret = tok(&["token ghp_", "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"]);
    for _ in 0..3 {
        assert_eq!(kind(&secret), "GitHub token");
        assert!(!clean::seen(&secret));
    }
    // A remembered string is matched exactly: a string that starts with it is scanned.
    let near = format!("{plain} {secret}");
    assert_eq!(kind(&near), "GitHub token");
    // Long strings are not remembered.
    let long = "x ".repeat(40);
    assert!(scan_all(None, &long).is_empty());
    assert!(!clean::seen(&long));
}

#[test]
fn many_strings_through_the_memo_still_find_every_secret() {
    let secret = tok(&["AKIA", "IOSFODNN7EXAMPLQ"]);
    for i in 0..5000 {
        let v = format!("step {i}: done");
        assert!(scan_all(Some("notes"), &v).is_empty());
        if i % 97 == 0 {
            assert_eq!(kind(&secret), "AWS access key ID", "round {i}");
        }
    }
}

proptest::proptest! {
    /// Assignment-shaped strings (secret-named keys and near misses, every separator, flags,
    /// words of key names after the separators): the prefilters, the check for a separator
    /// after the first key word among them, drop nothing the exhaustive scan finds.
    #[test]
    fn assignments_are_found_whatever_stands_around_them(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::sample::select(vec![
                    "password", "DB_PASSWORD", "passed", "api_key", "key", "token", "tokens",
                    "pwd", "cred", "github_pat", "secret", "--password", "--token", "-p",
                ]).prop_map(str::to_string),
                proptest::sample::select(vec![
                    "=", ":", ": ", " = ", " ", "  ", "\"", "'", ", ", "--", ":=", "==",
                ]).prop_map(str::to_string),
                "[a-zA-Z0-9#%]{6,14}",
            ],
            1..9,
        )
    ) {
        let v = parts.concat();
        let mut fast = Vec::new();
        scan_text(&v, &mut fast);
        let mut all = Vec::new();
        scan_text_exhaustive(&v, &mut all);
        proptest::prop_assert_eq!(dedup(fast), dedup(all), "{:?}", v);
    }
}

#[test]
fn double_dashes_are_found_anywhere() {
    for (v, want) in [
        ("--x", true),
        ("a --b", true),
        ("a-b-c", false),
        ("x-", false),
        ("-", false),
        ("", false),
        ("a---", true),
        ("a-", false),
        ("end--", true),
    ] {
        assert_eq!(has_double_dash(v.as_bytes()), want, "{v}");
    }
}

#[test]
fn a_separator_after_the_first_key_word_is_needed() {
    assert!(!separates_after(
        "cargo test -p app: 214 passed, 0 failed",
        23
    ));
    assert!(separates_after("214 passed, then password: x", 4));
    assert!(separates_after("passed; password=x", 0));
    assert!(!separates_after("passed and password x", 0));
    assert!(separates_after("run --password x", 6));
}

#[test]
fn strings_sharing_a_memo_slot_are_told_apart_byte_for_byte() {
    let secret = tok(&["ghp_", "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"]);
    let clean = format!("token: {} end", "-".repeat(secret.len()));
    let with = format!("token: {secret} end");
    assert_eq!(clean.len(), with.len());
    assert!(with.len() <= 64, "both are remembered when clean");
    assert!(scan_all(None, &clean).is_empty());
    assert!(clean::seen(&clean));
    // Same length, same first and last eight bytes: the same slot, not the same string.
    assert!(!clean::seen(&with));
    assert_eq!(kind(&with), "GitHub token");
    // A secret takes no slot: the clean string is still remembered.
    assert!(clean::seen(&clean));
}

#[test]
fn secret_values_come_from_the_parser_not_from_the_line() {
    // A key with nothing after its colon and a trailing space, the file's last bytes.
    let src = "small_version: ";
    let mut v = SecretValues::new(src);
    assert!(v.on_line(0..src.len()).is_empty());
    assert_eq!(redact_line(src, &[], &[]).text, src);
    // Quoted keys, flow mappings and a value on the next line are found as the loader reads
    // them; the word `password` inside a sentence is not a key.
    let src = "a:\n  \"api_key\": \"s3cr3t-value\"\nb: {password: hunter2}\nnote: \"my password is hunter\"\nc:\n  auth_token:\n    xyzzy-plugh-1\n";
    let out = redact_source(src);
    assert!(!out.contains("s3cr3t-value"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(!out.contains("xyzzy-plugh-1"), "{out}");
    assert!(out.contains("note: \"my password is hunter\""), "{out}");
    assert_eq!(out.lines().count(), src.lines().count());
}

#[test]
fn a_block_scalar_secret_is_masked_line_by_line() {
    let src = "client_secret: |\n  first-line-of-it\n  second-line-of-it\nother: fine\n";
    let out = redact_source(src);
    assert!(
        !out.contains("first-line-of-it") && !out.contains("second-line-of-it"),
        "{out}"
    );
    assert!(out.contains("other: fine"));
    assert!(out.starts_with("client_secret: |\n"), "{out}");
    let mut v = SecretValues::new(src);
    let line2 = src.find("  first").unwrap()..src.find("\n  second").unwrap();
    let on = v.on_line(line2.clone());
    let line = &src[line2];
    assert_eq!(redact_line(line, &on, &[]).text, "  [16 chars redacted]");
}

#[test]
fn values_before_a_syntax_error_are_still_masked() {
    let src = "password: hunter2\nbroken: [\n";
    assert!(!redact_source(src).contains("hunter2"));
}

#[test]
fn v2_record_ids_are_not_secrets() {
    assert!(!flagged(
        None,
        "event event_1f8ad28ce3ea290c242e480c7c556662 is missing"
    ));
    assert!(!flagged(None, "session_9f52191b16868ae8e23aa0353f49e415"));
    // Any other prefix is judged as before.
    assert!(flagged(
        None,
        &tok(&["tok_", "aZ3kQ9xT2mW7vB4nR8pL1sD6fG0hJ5cY"])
    ));
}
