//! Fuzzes the P2OS codec with what a serial line can deliver: the packet parser fed the
//! input in chunks (sizes from the input), every good packet re-framed to the same
//! payload, and every payload read as a SIP (re-encoded to the bytes it came from, then
//! turned into readings across a sequence of SIPs), a host command and an identity.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::p2os::{packet, HostCommand, Identity, Parser, Sip, SipState, MAX_COUNT};

fn check_payload(p: &[u8], state: &mut SipState) {
    if let Ok(sip) = Sip::parse(p) {
        let e = sip.encode();
        let again = Sip::parse(&e).expect("an encoded SIP parses");
        // A packet holds at most 57 sonar readings; encode drops any more.
        if sip.sonars.len() <= 57 {
            assert_eq!(&p[..e.len()], &e[..], "a SIP re-encodes to its bytes");
            assert_eq!(again, sip);
        } else {
            assert_eq!(again.sonars[..], sip.sonars[..57]);
        }
        let r = state.apply(&sip);
        assert!(r.position.heading < 360 && r.position.compass < 360);
    }
    let _ = HostCommand::parse(p);
    let id = Identity::parse(p);
    let _ = Identity::parse(&id.encode());
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 13) + 1;
    let mut parser = Parser::new();
    let mut state = SipState::new();
    let mut good = 0u64;
    for chunk in data.chunks(step) {
        parser.push(chunk);
        while let Some(r) = parser.next_packet() {
            if let Ok(p) = r {
                good += 1;
                assert!(p.len() <= usize::from(MAX_COUNT) - 2);
                let mut again = Parser::new();
                again.push(&packet(&p));
                assert_eq!(again.next_packet(), Some(Ok(p.clone())));
                check_payload(&p, &mut state);
            }
        }
    }
    assert_eq!(parser.good, good);
    // The raw input as one payload too (the parser only ever yields short ones).
    check_payload(data, &mut SipState::new());
});
