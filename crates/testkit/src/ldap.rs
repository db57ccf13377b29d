//! OpenLDAP's `slapd` (Debian's) as a directory a test makes itself: a
//! temporary directory with its own TLS certificate (made with rcgen for
//! `127.0.0.1`), a small directory loaded with `slapadd` (people, nested
//! groups, a locked account), and `slapd` in the foreground on
//! `ldaps://127.0.0.1:PORT`. Two shapes: [`Shape::Ldap`] (inetOrgPerson,
//! groupOfNames, the ppolicy overlay for locked accounts) and [`Shape::Ad`]
//! (AD's `user` and `group` classes with `sAMAccountName`, binary
//! `objectGUID`, `memberOf` and `userAccountControl` under their AD OIDs;
//! what slapd cannot hold is the in-chain rule, so nested groups are
//! followed through the groups' own `memberOf`). Stopped (SIGKILL) when dropped.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::skip;

/// The directory's suffix.
pub const BASE: &str = "dc=example,dc=org";
/// The service account and its password.
pub const READER_DN: &str = "cn=reader,dc=example,dc=org";
pub const READER_PASSWORD: &str = "reader-secret";
/// Every person's password in the test directory (but `mallory`'s).
pub const PASSWORD: &str = "directory passphrase";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Ldap,
    Ad,
}

/// A running `slapd`.
#[derive(Debug)]
pub struct Slapd {
    pub dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub shape: Shape,
    child: Option<Child>,
}

/// `/usr/sbin/slapd`, or `None` after the skip rule.
pub fn slapd_or_skip(test: &str) -> Option<PathBuf> {
    let bin = PathBuf::from("/usr/sbin/slapd");
    if bin.exists() && Path::new("/usr/sbin/slapadd").exists() {
        Some(bin)
    } else {
        skip(&format!("{test}: no slapd (Debian's slapd and ldap-utils; scripts/test installs them)"));
        None
    }
}

impl Slapd {
    /// Starts a directory of `shape`, or `None` (skipped) without slapd.
    pub fn start(shape: Shape, test: &str) -> Option<Slapd> {
        slapd_or_skip(test)?;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("db")).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        std::fs::write(d.join("cert.pem"), ck.cert.pem()).unwrap();
        std::fs::write(d.join("key.pem"), ck.key_pair.serialize_pem()).unwrap();
        std::fs::write(d.join("slapd.conf"), conf(d, shape)).unwrap();
        std::fs::write(d.join("data.ldif"), data(shape)).unwrap();
        let out = Command::new("/usr/sbin/slapadd")
            .args(["-f", d.join("slapd.conf").to_str().unwrap(), "-l", d.join("data.ldif").to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "slapadd: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let mut s = Slapd { dir, addr: "127.0.0.1:1".parse().unwrap(), shape, child: None };
        s.run();
        Some(s)
    }

    /// Starts slapd (again) on a free port: a port taken between the probe
    /// and slapd's bind is retried with another.
    pub fn run(&mut self) {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            if self.spawn(addr) {
                self.addr = addr;
                return;
            }
        }
        panic!("slapd did not start: {}", self.log());
    }

    /// Starts slapd again on the port it had (after [`Slapd::stop`]).
    pub fn resume(&mut self) {
        assert!(self.spawn(self.addr), "slapd did not start again: {}", self.log());
    }

    fn spawn(&mut self, addr: SocketAddr) -> bool {
        let d = self.dir.path();
        let log = std::fs::File::create(d.join("slapd.log")).unwrap();
        let child = Command::new("/usr/sbin/slapd")
            .args(["-d", "0", "-f", d.join("slapd.conf").to_str().unwrap(), "-h", &format!("ldaps://{addr}/")])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return true;
            }
            if let Some(c) = self.child.as_mut()
                && c.try_wait().unwrap().is_some()
            {
                self.child = None;
                return false;
            }
            #[allow(clippy::disallowed_methods)] // Waits on a real child process.
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Stops slapd (SIGKILL): the directory is down.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn url(&self) -> String {
        format!("ldaps://{}", self.addr)
    }

    /// The CA file (the self-signed certificate itself).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("slapd.log")).unwrap_or_default()
    }

    /// Applies an LDIF change (`ldapmodify` as the root DN, over the test's TLS).
    pub fn modify(&self, ldif: &str) {
        let mut c = Command::new("ldapmodify")
            .args(["-x", "-H", &self.url(), "-D", ROOT_DN, "-w", ROOT_PASSWORD])
            .env("LDAPTLS_CACERT", self.ca_file())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(c.stdin.as_mut().unwrap(), ldif.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "ldapmodify: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.stop();
    }
}

const ROOT_DN: &str = "cn=admin,dc=example,dc=org";
const ROOT_PASSWORD: &str = "root-secret";

fn conf(d: &Path, shape: Shape) -> String {
    let schemas: &[&str] = match shape {
        Shape::Ldap => &["core", "cosine", "inetorgperson"],
        Shape::Ad => &["core", "cosine", "inetorgperson"],
    };
    let mut c: String = schemas.iter().map(|s| format!("include /etc/ldap/schema/{s}.schema\n")).collect();
    if shape == Shape::Ad {
        std::fs::write(d.join("ad-account.schema"), AD_ACCOUNT_SCHEMA).unwrap();
        c.push_str(&format!("include {}/ad-account.schema\n", d.display()));
    }
    c.push_str("modulepath /usr/lib/ldap\nmoduleload back_mdb\n");
    if shape == Shape::Ldap {
        c.push_str("moduleload ppolicy\n");
    }
    c.push_str(&format!(
        "pidfile {d}/slapd.pid\nTLSCertificateFile {d}/cert.pem\nTLSCertificateKeyFile {d}/key.pem\n\
         database mdb\nmaxsize 16777216\nsuffix \"{BASE}\"\nrootdn \"{ROOT_DN}\"\nrootpw {ROOT_PASSWORD}\ndirectory {d}/db\n\
         access to attrs=userPassword by self =x by anonymous auth by * none\naccess to * by * read\n",
        d = d.display()
    ));
    if shape == Shape::Ldap {
        c.push_str("overlay ppolicy\n");
    }
    c
}

/// People: alice (in `devs`, which is in `engineering`), bob (in `ops`),
/// mallory (locked or disabled), and the service account.
fn data(shape: Shape) -> String {
    let mut l = format!(
        "dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n\
         dn: {READER_DN}\nobjectClass: person\ncn: reader\nsn: reader\nuserPassword: {READER_PASSWORD}\n\n\
         dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n\n"
    );
    let people = [
        ("alice", "Alice Liddell", "0b8f7f8e-1111-4222-8333-000000000001"),
        ("bob", "Bob Builder", "0b8f7f8e-1111-4222-8333-000000000002"),
        ("mallory", "Mallory Locked", "0b8f7f8e-1111-4222-8333-000000000003"),
    ];
    match shape {
        Shape::Ldap => {
            for (uid, cn, uuid) in people {
                l.push_str(&format!(
                    "dn: uid={uid},ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {cn}\nsn: {uid}\nmail: {uid}@example.org\n\
                     userPassword: {PASSWORD}\nentryUUID: {uuid}\n"
                ));
                if uid == "mallory" {
                    l.push_str("pwdAccountLockedTime: 000001010000Z\n");
                }
                l.push('\n');
            }
            for (cn, members) in [
                ("engineering", vec![format!("cn=devs,ou=groups,{BASE}")]),
                // The service account too: a groupOfNames keeps a member when alice leaves.
                ("devs", vec![format!("uid=alice,ou=people,{BASE}"), READER_DN.to_owned()]),
                ("ops", vec![format!("uid=bob,ou=people,{BASE}"), format!("uid=mallory,ou=people,{BASE}")]),
            ] {
                l.push_str(&format!("dn: cn={cn},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {cn}\n"));
                for m in members {
                    l.push_str(&format!("member: {m}\n"));
                }
                l.push('\n');
            }
        }
        Shape::Ad => {
            for (i, (sam, cn, _)) in people.iter().enumerate() {
                let groups: &[&str] = match *sam {
                    "alice" => &["devs"],
                    _ => &["ops"],
                };
                let guid: String =
                    (0..16).map(|b| if b == 15 { (i + 1) as u8 } else { 0x10 + b as u8 }).map(|b| format!("{b:02x}")).collect();
                let uac = if *sam == "mallory" { 514 } else { 512 };
                l.push_str(&format!(
                    "dn: cn={sam},ou=people,{BASE}\nobjectClass: user\ncn: {sam}\nsn: {sam}\nsAMAccountName: {sam}\ndisplayName: {cn}\n\
                     mail: {sam}@example.org\nuserPassword: {PASSWORD}\nuserAccountControl: {uac}\nobjectGUID:: {}\n",
                    b64(&hex(&guid))
                ));
                for g in groups {
                    l.push_str(&format!("memberOf: cn={g},ou=groups,{BASE}\n"));
                }
                l.push('\n');
            }
            for (cn, member_of) in [("engineering", None), ("devs", Some("engineering")), ("ops", None)] {
                l.push_str(&format!("dn: cn={cn},ou=groups,{BASE}\nobjectClass: group\ncn: {cn}\ngroupType: -2147483646\n"));
                if let Some(m) = member_of {
                    l.push_str(&format!("memberOf: cn={m},ou=groups,{BASE}\n"));
                }
                l.push('\n');
            }
        }
    }
    l
}

/// Active Directory's attributes and classes as far as sign-in reads them,
/// under their AD OIDs, with the matching rules AD gives them (Debian's
/// msuser.schema declares them without any, so slapd cannot search them).
const AD_ACCOUNT_SCHEMA: &str = "\
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch \
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.2 NAME 'objectGUID' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.750 NAME 'groupType' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.2.840.113556.1.5.9 NAME 'user' SUP inetOrgPerson STRUCTURAL MAY ( sAMAccountName $ objectGUID $ memberOf $ userAccountControl ) )
objectclass ( 1.2.840.113556.1.5.8 NAME 'group' SUP top STRUCTURAL MUST cn MAY ( member $ sAMAccountName $ objectGUID $ memberOf $ groupType ) )
";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[i * 2..i * 2 + 2], 16).unwrap()).collect()
}

fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}
