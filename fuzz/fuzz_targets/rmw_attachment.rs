//! Fuzzes what the ROS 2 front end reads of `rmw_zenoh`'s conventions off the network
//! (`player_ros2_msg::rmw`). The input's first byte picks what the rest is: a sample's
//! attachment (33 bytes: sequence number, source timestamp, GID length, GID), a liveliness
//! token's key expression (any node's), or a namespace and a topic name (split at the
//! first NUL) as the key helpers take them.
//!
//! An attachment decoded re-encodes to its very bytes, and one refused is refused for a
//! reason that holds; a token parsed gives a key that parses to the same token, and that
//! key is the input itself when the input was written the canonical way (nine or thirteen
//! chunks, numbers in plain decimal); a qualified name is absolute and a mangled field has
//! no `/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_ros2_msg::rmw::{
    self, Attachment, AttachmentError, EntityKind, Token, ADMIN_SPACE, ATTACHMENT_LEN, GID_LEN,
};

fn attachment(b: &[u8]) {
    match Attachment::decode(b) {
        Ok(a) => {
            assert_eq!(b.len(), ATTACHMENT_LEN);
            assert_eq!(&a.encode()[..], b);
            assert_eq!(Attachment::decode(&a.encode()), Ok(a));
        }
        Err(AttachmentError::Size(n)) => assert!(n == b.len() && n != ATTACHMENT_LEN),
        Err(AttachmentError::GidLength(g)) => {
            assert_eq!(b.len(), ATTACHMENT_LEN);
            assert!(g == b[16] && usize::from(g) != GID_LEN);
        }
    }
}

/// `s` is a number as `u64`'s `Display` writes it.
fn canonical_number(s: &str) -> bool {
    s.parse::<u64>().is_ok_and(|n| n.to_string() == s)
}

fn token(b: &[u8]) {
    let Ok(key) = std::str::from_utf8(b) else {
        return;
    };
    let Ok(t) = Token::parse(key) else {
        return;
    };
    assert!(key.starts_with(ADMIN_SPACE));
    assert_eq!(t.kind == EntityKind::Node, t.topic.is_none(), "{t:?}");
    let again = t.key();
    assert_eq!(Token::parse(&again).as_ref(), Ok(&t), "{key} -> {again}");
    let chunks: Vec<&str> = key.split('/').collect();
    let canonical =
        matches!(chunks.len(), 9 | 13) && chunks[1..5].iter().all(|c| canonical_number(c));
    if canonical {
        assert_eq!(again, key);
    }
    assert_eq!(t.gid(), rmw::gid(&again));
}

fn names(b: &[u8]) {
    let Ok(text) = std::str::from_utf8(b) else {
        return;
    };
    let (namespace, topic) = text.split_once('\0').unwrap_or((text, ""));
    let q = rmw::qualify(namespace, topic);
    assert!(q.starts_with('/'), "{namespace:?} + {topic:?} -> {q:?}");
    let stripped = rmw::strip_slashes(&q);
    assert!(stripped.len() + 2 >= q.len());
    let m = rmw::mangle(text);
    assert!(!m.contains('/'));
    if !text.contains('%') {
        assert_eq!(rmw::demangle(&m), text);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => attachment(rest),
        1 => token(rest),
        _ => names(rest),
    }
});
