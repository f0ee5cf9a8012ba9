//! The name store (docs/design.md#the-name-store): tokens per namespace, dense from 0, stable across
//! reopen and callers, for any name.

use crate::StoreFactory;
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{Backend, NameKind, NAMES_PER_DOCUMENT};

/// Checks `(name, token)` answers gathered from concurrent callers: every name got one
/// token and no token went to two names. Returns the tokens by name.
pub fn assert_one_token_per_name(
    answers: impl IntoIterator<Item = (String, u64)>,
) -> BTreeMap<String, u64> {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for (name, token) in answers {
        let prior = seen.insert(name.clone(), token);
        assert!(
            prior.is_none_or(|p| p == token),
            "{name:?}: {prior:?} and {token}"
        );
    }
    let mut by_token: BTreeMap<u64, &String> = BTreeMap::new();
    for (name, token) in &seen {
        assert!(
            by_token.insert(*token, name).is_none(),
            "token {token} issued twice"
        );
    }
    seen
}

/// Names that break naive storage: operators and dots (`$set`, `a.b.c`), spaces, non-ASCII,
/// 1 KB and more, the empty name, JSON.
pub fn odd_names() -> Vec<String> {
    vec![
        "cpu".into(),
        "$set".into(),
        "$".into(),
        "a.b.c".into(),
        ".".into(),
        "with space".into(),
        " ".into(),
        "ünïcödé ✓ 東京".into(),
        "x".repeat(1024),
        "é".repeat(600),
        String::new(),
        "{\"$gt\": 1}".into(),
    ]
}

/// Tokenizes overlapping subsets of `all` in `namespace` from `tasks` tasks at once, task
/// `k` on handle `k % handles.len()`, in chunks of 40, every other task in reverse order;
/// checks the answers with [`assert_one_token_per_name`] and returns the tokens by name.
pub async fn tokenize_at_once(
    handles: &[Arc<dyn Backend>],
    tasks: usize,
    namespace: NameKind,
    all: &[String],
) -> BTreeMap<String, u64> {
    let mut running = Vec::new();
    for k in 0..tasks {
        let b = handles[k % handles.len()].clone();
        let mut mine: Vec<String> = all
            .iter()
            .skip(k * 37)
            .step_by(1 + k % 3)
            .cloned()
            .collect();
        if k % 2 == 1 {
            mine.reverse();
        }
        running.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for chunk in mine.chunks(40) {
                let tokens = b.tokenize(namespace, chunk).await.expect("tokenize");
                out.extend(chunk.iter().cloned().zip(tokens));
            }
            out
        }));
    }
    let mut answers = Vec::new();
    for task in running {
        answers.extend(task.await.expect("task"));
    }
    assert_one_token_per_name(answers)
}

/// Odd names work, tokens are per namespace, stable across reopen, and concurrent callers
/// get one token per name.
pub async fn name_tokens_are_stable(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let odd = odd_names();
    let tokens = b
        .tokenize(NameKind::TagValue, &odd)
        .await
        .expect("tokenize");
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), odd.len(), "one token per name: {tokens:?}");
    let names = b
        .names_of(NameKind::TagValue, &tokens)
        .await
        .expect("names_of");
    assert_eq!(names, odd.iter().cloned().map(Some).collect::<Vec<_>>());
    // Repeats within a call get one token; a second call the same ones.
    let twice: Vec<String> = odd.iter().chain(&odd).cloned().collect();
    assert_eq!(
        b.tokenize(NameKind::TagValue, &twice).await.expect("again"),
        tokens.iter().chain(&tokens).copied().collect::<Vec<_>>()
    );

    // Many callers at once, overlapping names, more than one name document's worth.
    let all: Vec<String> = (0..600).map(|i| format!("host-{i}")).collect();
    let seen = tokenize_at_once(std::slice::from_ref(&b), 4, NameKind::TagKey, &all).await;
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.tokenize(NameKind::TagValue, &odd)
            .await
            .expect("after reopen"),
        tokens
    );
    let names: Vec<String> = seen.keys().cloned().collect();
    let again = b
        .tokenize(NameKind::TagKey, &names)
        .await
        .expect("after reopen");
    assert_eq!(again, seen.values().copied().collect::<Vec<_>>());
}

/// Each namespace numbers its names on its own, densely from 0 in the order first seen,
/// across name documents and across a reopen; a token never issued has no name; an empty
/// call asks for nothing.
pub async fn name_tokens_count_from_zero_per_namespace(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let names: Vec<String> = ["cpu", "mem", "cpu", "disk"].map(String::from).to_vec();
    assert_eq!(
        b.tokenize(NameKind::Measurement, &names)
            .await
            .expect("tokenize"),
        vec![0, 1, 0, 2]
    );
    assert_eq!(
        b.tokenize(NameKind::Field, &names[1..])
            .await
            .expect("tokenize"),
        vec![0, 1, 2]
    );
    // More than two name documents' worth, in pieces that do not line up with them.
    let n = NAMES_PER_DOCUMENT * 2 + 10;
    let many: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let mut tokens = Vec::new();
    for chunk in many.chunks(97) {
        tokens.extend(
            b.tokenize(NameKind::TagValue, chunk)
                .await
                .expect("tokenize"),
        );
    }
    assert_eq!(tokens, (0..n as u64).collect::<Vec<_>>());
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.tokenize(NameKind::Measurement, &["disk".into(), "net".into()])
            .await
            .expect("after reopen"),
        vec![2, 3]
    );
    let last = n as u64 - 1;
    assert_eq!(
        b.names_of(
            NameKind::TagValue,
            &[NAMES_PER_DOCUMENT as u64, 0, last, last + 1, u64::MAX]
        )
        .await
        .expect("names_of"),
        vec![
            Some(format!("v{NAMES_PER_DOCUMENT}")),
            Some("v0".into()),
            Some(format!("v{last}")),
            None,
            None
        ]
    );
    assert_eq!(
        b.names_of(NameKind::TagKey, &[0]).await.expect("names_of"),
        vec![None],
        "a namespace with no names"
    );
    assert!(b
        .tokenize(NameKind::Field, &[])
        .await
        .expect("empty call")
        .is_empty());
}
