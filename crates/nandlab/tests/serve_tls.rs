//! `nandlab serve` over TLS from a rustls client with certificates made here (rcgen): the
//! STARTTLS upgrade with a client certificate, then a pipelined burst of writes and reads
//! whose replies the server corks into shared records — every reply must come, in order,
//! with the right data, and a lone request must be answered without more client data.

mod common;

use common::{Client, Server, ACK};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

fn port() -> u16 {
    common::free_port()
}

/// A CA, a server certificate for 127.0.0.1 signed by it and a client certificate signed
/// by it: (CA PEM, server certificate PEM, server key PEM, client certificate, client key).
fn certificates() -> (
    String,
    String,
    String,
    CertificateDer<'static>,
    PrivateKeyDer<'static>,
) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "nandlab test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names).unwrap();
        p.extended_key_usages = vec![usage];
        (p.signed_by(&key, &ca_cert, &ca_key).unwrap(), key)
    };
    let (srv, srv_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (cli, cli_key) = leaf(vec![], ExtendedKeyUsagePurpose::ClientAuth);
    (
        ca_cert.pem(),
        srv.pem(),
        srv_key.serialize_pem(),
        cli.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cli_key.serialize_der())),
    )
}

/// Sends option `opt` with `data` over `s` and reads its replies up to the final one.
fn option(s: &mut impl ReadWrite, opt: u32, data: &[u8]) -> Vec<u32> {
    let mut m = b"IHAVEOPT".to_vec();
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m).unwrap();
    s.flush().unwrap();
    let mut kinds = Vec::new();
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut d = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut d).unwrap();
        kinds.push(kind);
        if kind == ACK || kind >= 1 << 31 {
            return kinds;
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A request header (and `data`) with `cookie`, not flushed.
fn request(kind: u16, cookie: u64, offset: u64, data: &[u8], len: u32) -> Vec<u8> {
    let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&cookie.to_be_bytes());
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(data);
    m
}

/// One simple reply: (error, cookie), and `len` payload bytes when it succeeded.
fn reply(s: &mut impl Read, len: usize) -> (u32, u64, Vec<u8>) {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).unwrap();
    assert_eq!(u32::from_be_bytes(h[..4].try_into().unwrap()), 0x6744_6698);
    let err = u32::from_be_bytes(h[4..8].try_into().unwrap());
    let mut d = vec![0u8; if err == 0 { len } else { 0 }];
    s.read_exact(&mut d).unwrap();
    (err, u64::from_be_bytes(h[8..16].try_into().unwrap()), d)
}

#[test]
fn tls_pipelined_replies_are_complete_ordered_and_never_held() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, srv, srv_key, cli, cli_key) = certificates();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (ca_pem, srv_pem, key_pem) = (
        write("ca.pem", &ca),
        write("srv.pem", &srv),
        write("key.pem", &srv_key),
    );
    let p = port();
    let _srv = Server::start_with(
        &dir.path().join("tls.chip"),
        true,
        p,
        &[
            "--tls-cert",
            &srv_pem,
            "--tls-key",
            &key_pem,
            "--tls-ca",
            &ca_pem,
        ],
    );

    // STARTTLS (option 5) in the clear, then the TLS handshake with the client certificate.
    let mut c = Client::raw(p);
    assert_eq!(c.opt(5, &[]).last().unwrap().0, ACK);
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::pem::PemObject::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(vec![cli], cli_key)
    .unwrap();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
            .unwrap();
    c.s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, c.s);
    // NBD_OPT_GO (7) on the default export, no information requests.
    let mut go = 0u32.to_be_bytes().to_vec();
    go.extend_from_slice(&0u16.to_be_bytes());
    assert_eq!(*option(&mut s, 7, &go).last().unwrap(), ACK);

    // 48 writes and 48 reads of what they wrote, all sent before any reply is read.
    let page = |i: u64| vec![(i * 29 % 251) as u8 + 1; 4096];
    let mut burst = Vec::new();
    for i in 0..48u64 {
        burst.extend(request(1, i + 1, i * 8192, &page(i), 4096));
    }
    for i in 0..48u64 {
        burst.extend(request(0, 49 + i, i * 8192, &[], 4096));
    }
    s.write_all(&burst).unwrap();
    s.flush().unwrap();
    for k in 0..96u64 {
        let read = k >= 48;
        let (err, cookie, d) = reply(&mut s, if read { 4096 } else { 0 });
        assert_eq!((err, cookie), (0, k + 1), "reply {k} of the burst");
        if read {
            assert_eq!(d, page(k - 48), "read {} of the burst", k - 48);
        }
    }

    // A lone request: answered although nothing follows it (a read times out otherwise).
    s.sock
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    s.write_all(&request(1, 500, 1 << 20, &page(3), 4096))
        .unwrap();
    s.flush().unwrap();
    let (err, cookie, _) = reply(&mut s, 0);
    assert_eq!((err, cookie), (0, 500));
}
