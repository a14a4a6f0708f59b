//! Two endpoints in one process (one per thread, each polling its own completion queue,
//! as two processes would) over the first available provider: writes land in the peer's
//! region, messages arrive intact and in order, misuse is refused.

use super::*;
use std::sync::mpsc;

fn have_provider() -> bool {
    if providers().map_or(true, |p| p.is_empty()) {
        eprintln!("SKIP: no libfabric provider with RDM endpoints, RMA and messages");
        return false;
    }
    true
}

/// libfabric is loaded on first use, from the library Debian installs with libfabric-dev,
/// and is then mapped into the process.
#[test]
fn libfabric_loads_on_first_use() {
    load().expect("libfabric loads");
    load().expect("a second load is a no-op");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.contains("libfabric.so.1"),
        "libfabric not mapped after load()"
    );
}

#[test]
fn provider_list_parses_lines() {
    assert_eq!(
        parse_providers("tcp;ofi_rxm\nshm\n\n sockets \n"),
        ["tcp;ofi_rxm", "shm", "sockets"]
    );
    assert!(parse_providers("").is_empty());
}

#[test]
fn unknown_provider_is_named_with_the_available_ones() {
    let e = Endpoint::open(Some("no-such-provider")).unwrap_err();
    match e {
        OfiError::NoProvider { wanted, available } => {
            assert_eq!(wanted, "no-such-provider");
            assert!(!available.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

/// The peer: opens an endpoint, hands out its address and region, takes messages until
/// it has `n`, answers `hello`, and returns the region's bytes once told the write is done.
fn peer(
    provider: String,
    n: usize,
    to_main: mpsc::Sender<(Vec<u8>, RemoteRegion)>,
    from_main: mpsc::Receiver<Vec<u8>>,
    write_done: mpsc::Receiver<()>,
) -> (Vec<u8>, Vec<u32>) {
    let mut b = Endpoint::open(Some(&provider)).unwrap();
    let dst = b.register(16384).unwrap();
    to_main
        .send((b.address().unwrap(), b.remote(dst).unwrap()))
        .unwrap();
    let pa = b.insert_peer(&from_main.recv().unwrap()).unwrap();
    let mut rx = Vec::new();
    let mut seen = Vec::new();
    let mut done = false;
    while !done || seen.len() < n {
        b.progress().unwrap();
        while let Some(len) = b.recv(&mut rx).unwrap() {
            assert_eq!(len, 4);
            seen.push(u32::from_le_bytes(rx[..4].try_into().unwrap()));
        }
        done = done || write_done.try_recv().is_ok();
    }
    b.send(pa, b"hello").unwrap();
    b.drain().unwrap();
    let mut got = vec![0u8; 8192];
    b.read(dst, 4096, &mut got).unwrap();
    // the main thread still polls until it has "hello"; keep polling until it says so
    (got, seen)
}

#[test]
fn write_lands_in_the_peer_region_and_messages_arrive() {
    if !have_provider() {
        return;
    }
    let mut a = Endpoint::open(None).unwrap();
    let (to_main, from_peer) = mpsc::channel();
    let (to_peer, from_main) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let provider = a.provider().to_string();
    let t = std::thread::spawn(move || peer(provider, 200, to_main, from_main, done_rx));
    let (addr, remote) = from_peer.recv().unwrap();
    to_peer.send(a.address().unwrap()).unwrap();
    let pb = a.insert_peer(&addr).unwrap();
    let src = a.register(8192).unwrap();
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    a.fill(src, 0, &data).unwrap();
    a.write(pb, src, 0, 8192, &remote, 4096).unwrap();
    // the source cannot change while the write is in flight
    assert_eq!(a.fill(src, 0, &[1]), Err(OfiError::Busy(src.0)));
    a.wait_writes().unwrap();
    a.fill(src, 0, &[1]).unwrap();
    done_tx.send(()).unwrap();
    for i in 0..200u32 {
        a.send(pb, &i.to_le_bytes()).unwrap();
    }
    let mut rx = Vec::new();
    while a.recv(&mut rx).unwrap().is_none() {}
    assert_eq!(rx, b"hello");
    a.drain().unwrap();
    let (got, seen) = t.join().unwrap();
    assert_eq!(got, data);
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
}

#[test]
fn out_of_bounds_and_oversized_are_refused() {
    if !have_provider() {
        return;
    }
    let mut a = Endpoint::open(None).unwrap();
    let me = a.address().unwrap();
    let pa = a.insert_peer(&me).unwrap();
    let src = a.register(100).unwrap();
    let remote = RemoteRegion {
        len: 64,
        ..a.remote(src).unwrap()
    };
    assert!(matches!(
        a.write(pa, src, 0, 65, &remote, 0),
        Err(OfiError::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.write(pa, src, 90, 20, &remote, 0),
        Err(OfiError::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.fill(src, 99, &[0, 0]),
        Err(OfiError::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.read(RegionId(99), 0, &mut [0]),
        Err(OfiError::Invalid(_))
    ));
    assert_eq!(
        a.send(pa, &vec![0u8; MSG_MAX + 1]),
        Err(OfiError::TooLong(MSG_MAX + 1))
    );
    assert_eq!(a.writes_in_flight(), 0);
}
