"""vcert-python and pyvenafi issue, renew, revoke and retire certificates
against Strongroom (run by scripts/certificates, which starts the server, makes
the CA, the policy folder, the user and the integrations, and sets the
environment read below).

Every check prints one line, PASS or FAIL with the reason; a failure after
an error answer adds it (status line and body, cut short). The clients
are used unchanged: the only thing added is a response hook on
requests.Session.send that remembers the last answer for those messages.
Exit status 1 when any check failed.
"""
import base64
import logging
import os
import re
import secrets
import subprocess
import sys
import traceback
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)  # the clients' own loggers print tracebacks; the checks say what failed

import requests  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402
from cryptography.hazmat.primitives.serialization import pkcs7, pkcs12  # noqa: E402
from cryptography.x509.oid import ExtensionOID, NameOID  # noqa: E402

URL, TLS_CA, ISSUING_CA, ZONE, USER, PASSWORD, VCERT_CLIENT, PV_CLIENT, PV_SCOPE, WORK = (
    os.environ[k]
    for k in ("URL", "TLS_CA", "ISSUING_CA", "ZONE", "USER", "PASSWORD", "VCERT_CLIENT", "PV_CLIENT", "PV_SCOPE", "WORK")
)
POLICY_DN = "\\VED\\Policy\\" + ZONE
HOST = URL.removeprefix("https://").rstrip("/")
ONLY = os.environ.get("ONLY", "")  # a substring: run only the checks whose name holds it (debugging)

# The server's last answer, for the FAIL messages.
last = {"line": "", "body": "", "status": 0}
_send = requests.Session.send


def _recording_send(self, request, **kwargs):
    r = _send(self, request, **kwargs)
    last["line"] = f"{request.method} {request.path_url} -> {r.status_code} {r.reason}"
    last["status"] = r.status_code
    last["body"] = r.text[:600]
    return r


requests.Session.send = _recording_send

from vcert import CertificateRequest, KeyType, RevocationRequest, venafi_connection  # noqa: E402
from vcert.common import CSR_ORIGIN_SERVICE, Authentication, RetireRequest  # noqa: E402
from pyvenafi.tpp import Authenticate, Features  # noqa: E402

results = []


def check(name, fn):
    """Runs fn; PASS when it returns a true value (or a string: the detail),
    FAIL when it returns False/None-with-reason or raises."""
    if ONLY and ONLY not in name:
        return None
    last["line"], last["body"], last["status"] = "", "", 0
    try:
        out = fn()
        if isinstance(out, tuple):
            ok, detail = out
        else:
            ok, detail = (out is not False), (out if isinstance(out, str) else "")
        if ok:
            print(f"PASS {name}" + (f": {detail}" if detail else ""), flush=True)
            results.append((name, True))
            return True
        print(f"FAIL {name}: {detail}", flush=True)
    except Exception as e:  # noqa: BLE001: the reason is the report
        where = traceback.extract_tb(e.__traceback__)[-1]
        print(f"FAIL {name}: {type(e).__name__}: {e} (at {os.path.basename(where.filename)}:{where.lineno})", flush=True)
        if last["line"] and last["status"] < 300 and '"CertificateData"' not in last["body"]:
            print(f"     the server's last answer: {last['line']}\n     {last['body']}", flush=True)
    if last["status"] >= 300:
        print(f"     the server's last answer: {last['line']}\n     {last['body']}", flush=True)
    results.append((name, False))
    return False


def name(prefix):
    return f"{prefix}-{secrets.token_hex(4)}.example.com"


with open(ISSUING_CA, "rb") as f:
    CA = x509.load_pem_x509_certificate(f.read())


def load(pem):
    return x509.load_pem_x509_certificate(pem.encode() if isinstance(pem, str) else pem)


def pub(obj):
    return obj.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def cn_of(cert):
    return cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value


def dns_of(cert):
    try:
        return cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        return []


def thumbprint(cert):
    return cert.fingerprint(hashes.SHA1()).hex().upper()


def leaf_ok(cert, cn, key=None):
    """The leaf for cn, signed by the issuing CA, with key's public key."""
    try:
        cert.extensions
    except ValueError as e:
        hint = " (an explicit cA FALSE is a DEFAULT value, which DER forbids)" if "BasicConstraints" in str(e) else ""
        return False, f"the certificate is not valid DER: Python's cryptography cannot read its extensions: {e}{hint}"
    if cn_of(cert) != cn:
        return False, f"CN is {cn_of(cert)!r}, want {cn!r}"
    if cn not in dns_of(cert):
        return False, f"DNS SANs {dns_of(cert)} lack {cn}"
    try:
        cert.verify_directly_issued_by(CA)
    except Exception as e:  # noqa: BLE001
        return False, f"not signed by the issuing CA ({e})"
    if key is not None and pub(cert) != pub(key):
        return False, "the certificate's key is not the request's"
    return True, f"serial {cert.serial_number:X}"


PBES2 = bytes.fromhex("06092a864886f70d01050d")  # OID 1.2.840.113549.1.5.13


def encrypted_key_ok(key_pem, password, cert):
    """PBES2-encrypted PKCS#8 under password, matching cert."""
    if "ENCRYPTED PRIVATE KEY" not in key_pem:
        return False, f"the key is not an ENCRYPTED PRIVATE KEY: {key_pem[:40]!r}"
    der = base64.b64decode("".join(l for l in key_pem.strip().splitlines() if not l.startswith("-----")))
    if PBES2 not in der[:40]:
        return False, "the key is encrypted, but not with PBES2"
    key = serialization.load_pem_private_key(key_pem.encode(), password.encode())
    if pub(key) != pub(cert):
        return False, "the key does not match the certificate"
    return True, f"PBES2 PKCS#8, {type(key).__name__}"


# ---------------------------------------------------------------- vcert-python
conn = venafi_connection(url=URL, user=USER, password=PASSWORD, http_request_kwargs={"verify": TLS_CA, "timeout": 60})
auth = Authentication(user=USER, password=PASSWORD, client_id=VCERT_CLIENT)  # vcert's scope: certificate:manage,revoke
if not check("vcert-python: get_access_token (password grant, scope certificate:manage,revoke)",
             lambda: bool(conn.get_access_token(auth).access_token)):
    sys.exit("cannot go on without a token")

zone = {}


def read_zone():
    zone["conf"] = conn.read_zone_conf(ZONE)
    z = zone["conf"]
    return True, f"key {z.key_type}, organization {z.organization.value!r} (locked: {z.organization.locked})"


check(f"vcert-python: read_zone_conf({ZONE!r}) (Certificates/CheckPolicy)", read_zone)


def missing_zone():
    try:
        conn.read_zone_conf("no-such-zone")
    except Exception as e:  # noqa: BLE001
        # The product's answer, which vcert Go matches (reference §0.10).
        if " 400 " in last["line"] and re.search(r"PolicyDN: .+ does not exist", last["body"]):
            return True, f"raised {type(e).__name__} on {last['line']}"
        return False, f"raised {type(e).__name__}, but the answer is not 400 'PolicyDN: … does not exist'"
    return False, "read_zone_conf of a missing zone answered a policy"


check("vcert-python: read_zone_conf of a missing zone: 400 'PolicyDN: … does not exist'", missing_zone)

issued = {}  # label -> (request, Certificate)


def enroll(label, req, key_check=True, password=None):
    def run():
        conn.request_cert(req, ZONE)
        if not req.id or not req.id.startswith(POLICY_DN + "\\"):
            return False, f"request id {req.id!r} is not under {POLICY_DN}"
        if not req.cert_guid:
            return False, "no Guid in the Request answer"
        c = conn.retrieve_cert(req)
        cert = load(c.cert)
        key = req.private_key if key_check else None
        ok, detail = leaf_ok(cert, req.common_name, key)
        if not ok:
            return ok, detail
        if [load(x).subject for x in c.chain] != [CA.subject]:
            return False, f"the chain is {[load(x).subject.rfc4514_string() for x in c.chain]}, want the issuing CA only"
        if password is not None:
            if not c.key:
                return False, "no private key came back"
            ok, kd = encrypted_key_ok(c.key, password, cert)
            if not ok:
                return ok, kd
            detail += "; key " + kd
        issued[label] = (req, c)
        return True, detail + f"; DN {req.id}"
    return check(f"vcert-python: request_cert + retrieve_cert: {label}", run)


cn = name("py-rsa")
enroll("local RSA 2048 key", CertificateRequest(common_name=cn, san_dns=[cn], key_type=KeyType(KeyType.RSA, 2048), timeout=20))
cn = name("py-p256")
enroll("local P-256 key", CertificateRequest(common_name=cn, san_dns=[cn], key_type=KeyType(KeyType.ECDSA, "p256"), timeout=20))
# A local P-521 key (vcert signs its CSR with SHA-256) with a UPN name in the CSR.
cn = name("py-p521")
P521_UPN = f"{cn.split('.')[0]}@corp.example"
if enroll("local P-521 key with a UPN", CertificateRequest(common_name=cn, san_dns=[cn], user_principal_names=[P521_UPN],
                                                          key_type=KeyType(KeyType.ECDSA, "p521"), timeout=20)):
    def p521_upn():
        cert = load(issued["local P-521 key with a UPN"][1].cert)
        if cert.public_key().curve.name != "secp521r1":
            return False, f"the key is on {cert.public_key().curve.name}"
        names = cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value.get_values_for_type(x509.OtherName)
        upns = [n.value for n in names if n.type_id.dotted_string == "1.3.6.1.4.1.311.20.2.3"]
        if upns != [b"\x0c" + bytes([len(P521_UPN)]) + P521_UPN.encode()]:
            return False, f"UPN otherNames {upns}, want {P521_UPN!r} as a UTF8String"
        return True, f"secp521r1, UPN {P521_UPN}"
    check("vcert-python: the P-521 certificate holds the P-521 key and the UPN", p521_upn)

user_key = ec.generate_private_key(ec.SECP256R1())
user_cn = name("py-csr")
user_csr = (
    x509.CertificateSigningRequestBuilder()
    .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user_cn)]))
    .add_extension(x509.SubjectAlternativeName([x509.DNSName(user_cn)]), critical=False)
    .sign(user_key, hashes.SHA256())
    .public_bytes(serialization.Encoding.PEM)
    .decode()
)
r = CertificateRequest(csr=user_csr, timeout=20)
r.common_name = user_cn
r.private_key = user_key
enroll("user-provided CSR (P-256)", r)



def policy_refusal():
    """A request outside the folder's whitelisted domains: 400 with Error, nothing issued."""
    cn = name("py-outside")
    r = CertificateRequest(common_name=cn, san_dns=[cn], timeout=5)
    try:
        conn.request_cert(r, ZONE + "\\restricted")
    except Exception as e:  # noqa: BLE001
        if last["status"] == 400 and '"Error"' in last["body"]:
            return True, f"{type(e).__name__} on {last['line']}: {last['body'][:160]}"
        return False, f"raised {type(e).__name__}, but the answer was {last['line']} {last['body'][:160]}"
    return False, f"{cn} was accepted in a folder that allows only example.org ({r.id})"


check("vcert-python: request_cert outside the folder's locked domain whitelist: 400 with Error", policy_refusal)

KEY_PASSWORD = "Central-" + secrets.token_hex(6)
for label, kt in (("central RSA 2048 key with a password", KeyType(KeyType.RSA, 2048)),
                  ("central P-256 key with a password", KeyType(KeyType.ECDSA, "p256")),
                  ("central P-521 key with a password", KeyType(KeyType.ECDSA, "p521"))):
    cn = name("py-central")
    r = CertificateRequest(common_name=cn, san_dns=[cn], key_type=kt, csr_origin=CSR_ORIGIN_SERVICE,
                           include_private_key=True, key_password=KEY_PASSWORD, timeout=20)
    enroll(label, r, key_check=False, password=KEY_PASSWORD)


def chain_orders():
    req, _ = issued["local RSA 2048 key"]
    out = []
    for order, want_chain in (("last", 1), ("first", 1), ("ignore", 0)):
        req.chain_option = order
        c = conn.retrieve_cert(req)
        leaf = load(c.cert)
        if cn_of(leaf) != req.common_name:
            return False, f"chain {order}: the certificate vcert took as the leaf is {leaf.subject.rfc4514_string()}"
        if len(c.chain) != want_chain:
            return False, f"chain {order}: {len(c.chain)} chain certificates, want {want_chain}"
        out.append(order)
    req.chain_option = "last"
    return True, ", ".join(out)


if "local RSA 2048 key" in issued:
    check("vcert-python: retrieve_cert in each chain order (last, first, ignore)", chain_orders)


def legacy_pem():
    req, _ = issued["central RSA 2048 key with a password"]
    req.use_legacy_pem = True  # Format "base64"
    try:
        c = conn.retrieve_cert(req)
    finally:
        req.use_legacy_pem = False
    return encrypted_key_ok(c.key, KEY_PASSWORD, load(c.cert))


if "central RSA 2048 key with a password" in issued:
    check("vcert-python: retrieve_cert with Format base64 (legacy PEM): the key is still PBES2 PKCS#8", legacy_pem)


def search():
    req, c = issued["local P-256 key"]
    tp = thumbprint(load(c.cert))
    dn = conn.search_by_thumbprint(tp)
    return (dn == req.id), f"{tp} -> {dn}"


if "local P-256 key" in issued:
    check("vcert-python: search_by_thumbprint (GET certificates/?Thumbprint=)", search)

renewed = {}


def renew():
    """renew_cert as vcert-python does it: it sends the request's CSR again (once
    built, a request's csr_origin reads 'provided'), so the key stays; then a
    renewal with a new CSR of the caller's (a new key)."""
    req, c = issued["local RSA 2048 key"]
    old = load(c.cert)
    conn.renew_cert(req)
    new = load(conn.retrieve_cert(req).cert)
    if new.serial_number == old.serial_number:
        return False, f"retrieve after renew returned the old certificate (serial {old.serial_number:X})"
    ok, detail = leaf_ok(new, req.common_name, req.private_key)
    if not ok:
        return False, f"the renewed certificate (same CSR): {detail}"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    req.csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, req.common_name)]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(req.common_name)]), critical=False)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
        .decode()
    )
    req.private_key = key
    conn.renew_cert(req)
    newer = load(conn.retrieve_cert(req).cert)
    if newer.serial_number in (old.serial_number, new.serial_number):
        return False, f"retrieve after the second renew returned an earlier certificate (serial {newer.serial_number:X})"
    ok, detail = leaf_ok(newer, req.common_name, key)
    if not ok:
        return False, f"the certificate renewed with a new CSR: {detail}"
    renewed["old"], renewed["new"], renewed["dn"] = old, newer, req.id
    return True, f"serial {old.serial_number:X} -> {new.serial_number:X} (same CSR) -> {newer.serial_number:X} (new key)"


if "local RSA 2048 key" in issued:
    check("vcert-python: renew_cert twice (its own CSR again, then a new CSR): a new serial each time, the right key", renew)

# ------------------------------------------------------------------ pyvenafi
pv = {}


def pv_login():
    pv["api"] = Authenticate(host=HOST, username=USER, password=PASSWORD, application_id=PV_CLIENT, scope=PV_SCOPE,
                             verify_ssl=TLS_CA)
    pv["f"] = Features(pv["api"])
    return True, f"server version {pv['api']._tpp_version}"


check(f"pyvenafi: Authenticate (scope {PV_SCOPE})", pv_login)
api, features = pv.get("api"), pv.get("f")


def previous_versions():
    dn = renewed["dn"]
    versions = features.certificate.get_previous_versions(dn)
    tps = [v.certificate_details.thumbprint for v in versions]
    old_tp = thumbprint(renewed["old"])
    if old_tp not in [str(t).upper() for t in tps]:
        return False, f"the old thumbprint {old_tp} is not among the previous versions {tps}"
    vid = next(v.vault_id for v in versions if str(v.certificate_details.thumbprint).upper() == old_tp)
    d = api.websdk.Certificates.Retrieve.VaultId(vid).post(format="Base64", friendly_name=None)
    old = load(base64.b64decode(d.certificate_data))
    if old.serial_number != renewed["old"].serial_number:
        return False, f"Retrieve/{vid} returned serial {old.serial_number:X}"
    return True, f"{len(versions)} previous version(s); Retrieve/{vid} returns the old certificate"


if api and renewed:
    check("pyvenafi: the renewed certificate's old one is in PreviousVersions and Retrieve/{vaultId}", previous_versions)


def formats():
    req, c = issued["central RSA 2048 key with a password"]
    leaf = load(c.cert)
    done, bad = [], []
    for fmt in ("Base64", "Base64 (PKCS #8)", "Base64 (PKCS#8)", "DER", "PKCS #7", "PKCS #12", "JKS"):
        with_key = fmt in ("Base64", "Base64 (PKCS #8)", "Base64 (PKCS#8)", "PKCS #12", "JKS")
        try:
            d = api.websdk.Certificates.Retrieve.post(
                certificate_dn=req.id, format=fmt, friendly_name="strongroom-test", include_chain=True,
                include_private_key=with_key, password=KEY_PASSWORD if with_key else None,
                keystore_password=KEY_PASSWORD if fmt == "JKS" else None,
            )
        except Exception as e:  # noqa: BLE001
            # JKS only with a maintained writer; otherwise a clear 400 with Error (issue 33).
            if fmt == "JKS" and " 400 " in last["line"] and '"Error"' in last["body"]:
                done.append(f"JKS refused: {last['line'].split(' -> ')[-1]}")
                continue
            bad.append(f"{fmt}: {last['line'].split(' -> ')[-1]} {last['body'][:160]}" if last["line"] else f"{fmt}: {type(e).__name__}: {e}")
            continue
        try:
            why = one_format(fmt, base64.b64decode(d.certificate_data), leaf)
        except Exception as e:  # noqa: BLE001
            why = f"{type(e).__name__}: {e}"
        if why:
            bad.append(f"{fmt}: {why}")
        else:
            done.append(fmt)
    last["status"] = 0  # each failed format's answer is in the message
    if bad:
        return False, "; ".join(bad) + (f" (good: {', '.join(done)})" if done else "")
    return True, ", ".join(done)


def one_format(fmt, data, leaf):
    """None when data is what Format fmt asked for, else why not."""
    if fmt.startswith("Base64"):
        text = data.decode()
        first_key = text.find("PRIVATE KEY-----")
        last_cert = text.rfind("-----END CERTIFICATE-----")
        if first_key == -1:
            return "no private key although IncludePrivateKey and Password were sent"
        if first_key < last_cert:
            return "the private key is not after the certificates"
        if "\r\n" not in text:
            return "lines do not end in CRLF"
        certs = x509.load_pem_x509_certificates(data)
        if certs[0] != leaf or certs[-1] != CA:
            return "the certificates are not leaf then CA"
        key_pem = text[text.find("-----BEGIN ENCRYPTED PRIVATE KEY-----"):]
        ok, kd = encrypted_key_ok(key_pem.replace("\r\n", "\n"), KEY_PASSWORD, leaf)
        return None if ok else kd
    if fmt == "DER":
        return None if x509.load_der_x509_certificate(data) == leaf else "not the certificate"
    if fmt == "PKCS #7":
        try:
            certs = pkcs7.load_der_pkcs7_certificates(data)
        except ValueError:
            certs = pkcs7.load_pem_pkcs7_certificates(data)
        return None if leaf in certs and CA in certs else f"{len(certs)} certificates, not the leaf and the CA"
    if fmt == "PKCS #12":
        key, cert, _ = pkcs12.load_key_and_certificates(data, KEY_PASSWORD.encode())
        if cert != leaf or key is None or pub(key) != pub(leaf):
            return "not the certificate and its key"
        p12 = os.path.join(WORK, "py.p12")
        with open(p12, "wb") as f:
            f.write(data)
        info = subprocess.run(["openssl", "pkcs12", "-info", "-noout", "-in", p12, "-passin", "env:P12PASS"],
                              env={**os.environ, "P12PASS": KEY_PASSWORD}, capture_output=True, text=True)
        if info.returncode != 0 or "AES-256" not in info.stderr or "PBKDF2" not in info.stderr:
            return f"openssl pkcs12 -info: not PBES2/PBKDF2/AES-256: {info.stderr.strip()[:300]}"
        return None
    if fmt == "JKS":
        return None if data[:4] == bytes.fromhex("feedfeed") else "not a Java key store"
    return "unknown format"


if api and "central RSA 2048 key with a password" in issued:
    check("pyvenafi: Certificates/Retrieve in every format (key last in PEM, CRLF; PKCS #12 AES-256; JKS or a 400)", formats)


def sans_of(cert):
    try:
        return cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value
    except x509.ExtensionNotFound:
        return x509.SubjectAlternativeName([])


def feature_flow():
    """pyvenafi's certificate.create -> renew -> wait_for_enrollment_to_complete -> download,
    unchanged: Config/Create of class X509 Certificate makes an object without a certificate
    (create again answers the product's "exists", Result 401, and pyvenafi fetches the same
    object); its first Renew enrolls it from the attributes create sent (a key made by the
    server); the certificate downloaded has that subject and those SANs and chains to the CA;
    a second renew gives a new serial and keeps the first in PreviousVersions."""
    cn, alias = name("pv-flow"), name("pv-alias")
    ca_dn = "\\VED\\Policy\\CA Templates\\" + cn_of(CA)
    obj = features.certificate.create(
        name=cn, parent_folder=POLICY_DN, description="scripts/certificates", contacts=[f"local:{USER}"],
        management_type="Enrollment", service_generated_csr=True, common_name=cn, organization_unit=["Platform"],
        city="Lyon", country="FR", san_dns=[cn, alias], san_ip=["192.0.2.7"], key_algorithm="RSA", key_strength=2048,
        ca_template=ca_dn, disable_automatic_renewal=True)
    if obj.type_name != "X509 Certificate" or not obj.guid or obj.dn != f"{POLICY_DN}\\{cn}":
        return False, f"create returned {obj.dn!r} of class {obj.type_name!r}, GUID {obj.guid!r}"
    again = features.certificate.create(name=cn, parent_folder=POLICY_DN, common_name=cn)
    if again.guid != obj.guid:
        return False, f"create of an existing DN returned GUID {again.guid}, want {obj.guid}"
    before = api.websdk.Certificates.Guid(obj.guid).get()
    if before.certificate_details.thumbprint or before.processing_details.stage is not None:
        return False, f"before its first renew the object has thumbprint {before.certificate_details.thumbprint!r}, stage {before.processing_details.stage!r}"
    current = features.certificate.renew(obj)
    done = features.certificate.wait_for_enrollment_to_complete(obj, current, timeout=20)
    got = features.certificate.download(format="Base64", certificate=obj, include_chain=True, timeout=20)
    certs = x509.load_pem_x509_certificates(base64.b64decode(got.certificate_data))
    leaf = certs[0]
    ok, detail = leaf_ok(leaf, cn)
    if not ok:
        return False, f"the downloaded certificate: {detail}"
    if certs[-1] != CA:
        return False, "the chain does not end in the issuing CA"
    if thumbprint(leaf) != str(done.thumbprint).upper():
        return False, f"downloaded {thumbprint(leaf)}, wait_for_enrollment_to_complete saw {done.thumbprint}"
    sans = sans_of(leaf)
    if sorted(sans.get_values_for_type(x509.DNSName)) != sorted([cn, alias]):
        return False, f"DNS SANs {sans.get_values_for_type(x509.DNSName)}, create sent {[cn, alias]}"
    if [str(i) for i in sans.get_values_for_type(x509.IPAddress)] != ["192.0.2.7"]:
        return False, f"IP SANs {sans.get_values_for_type(x509.IPAddress)}, create sent 192.0.2.7"
    subject = {a.oid: a.value for a in leaf.subject}
    want = {NameOID.ORGANIZATIONAL_UNIT_NAME: "Platform", NameOID.LOCALITY_NAME: "Lyon", NameOID.COUNTRY_NAME: "FR"}
    if any(subject.get(k) != v for k, v in want.items()):
        return False, f"subject {leaf.subject.rfc4514_string()}, create sent OU=Platform, L=Lyon, C=FR"
    if leaf.public_key().key_size != 2048:
        return False, f"a {leaf.public_key().key_size}-bit key, create asked RSA 2048"
    # Renew again: a new serial; the first one kept in PreviousVersions.
    current = features.certificate.renew(obj)
    features.certificate.wait_for_enrollment_to_complete(obj, current, timeout=20)
    newer = load(base64.b64decode(features.certificate.download(format="Base64", certificate=obj, timeout=20).certificate_data))
    if newer.serial_number == leaf.serial_number:
        return False, f"the second renew kept serial {leaf.serial_number:X}"
    ok, detail2 = leaf_ok(newer, cn)
    if not ok:
        return False, f"the renewed certificate: {detail2}"
    previous = [str(v.certificate_details.thumbprint).upper() for v in features.certificate.get_previous_versions(obj)]
    if thumbprint(leaf) not in previous:
        return False, f"the first certificate {thumbprint(leaf)} is not among the previous versions {previous}"
    return True, f"{obj.dn}: enrolled ({detail}), renewed to serial {newer.serial_number:X}, the first in PreviousVersions"


if api:
    check("pyvenafi: certificate.create -> renew -> wait_for_enrollment_to_complete -> download, then renew again", feature_flow)


def config_write_disabled():
    """VenafiPS's Disable (Config/Write {ObjectDN, AttributeData:[{Name:"Disabled", Value}]}), sent
    through pyvenafi's endpoint: Result 1, and GET Certificates/{guid} says Disabled; "0" enables."""
    req, _ = issued["local P-256 key"]
    guid = api.websdk.Config.IsValid.post(object_dn=req.id).object.guid
    for value, want in (["1"], True), (["0"], False):
        code = api.websdk.Config.Write.post(object_dn=req.id, attribute_data=[{"Name": "Disabled", "Value": value}]).result.code
        if code != 1:
            return False, f"Config/Write Disabled={value} answered Result {code}"
        if api.websdk.Certificates.Guid(guid).get().disabled is not want:
            return False, f"after Disabled={value}, GET Certificates/{guid} says Disabled is not {want}"
    return True, "Disabled 1 then 0, read back each time"


if api and "local P-256 key" in issued:
    check("pyvenafi: Config/Write Disabled (VenafiPS's Disable) on a certificate", config_write_disabled)


def associate_refused():
    """Devices and application pushes are out of scope: associate_application is a 400 with Error."""
    req, _ = issued["local P-256 key"]
    try:
        features.certificate.associate_application(req.id, [POLICY_DN + "\\app"], push_to_new=True)
    except Exception as e:  # noqa: BLE001: the refusal is what is checked
        if last["status"] == 400 and '"Error"' in last["body"]:
            last["status"] = 0
            return True, f"{type(e).__name__} on {last['line']}"
        return False, f"raised {type(e).__name__}, but the answer was {last['line']} {last['body'][:160]}"
    return False, "Certificates/Associate was accepted"


if api and "local P-256 key" in issued:
    check("pyvenafi: certificate.associate_application is refused with 400 and Error (no devices here)", associate_refused)

# --------------------------------------------------- revoke (CRL) and retire


def crl_url(cert):
    cdp = cert.extensions.get_extension_for_oid(ExtensionOID.CRL_DISTRIBUTION_POINTS).value
    for dp in cdp:
        for n in dp.full_name or []:
            if isinstance(n, x509.UniformResourceIdentifier):
                return n.value
    raise ValueError("no URI in the CRL distribution point")


def revoke():
    cert = renewed.get("new") or load(issued["local P-256 key"][1].cert)
    dn = renewed.get("dn") or issued["local P-256 key"][0].id
    res = conn.revoke_cert(RevocationRequest(req_id=dn, reason=RevocationRequest.RevocationReasons.key_compromise,
                                             comments="scripts/certificates", disable=False))
    if not res.get("Success"):
        return False, f"revoke answered {res}"
    url = crl_url(cert)
    r = requests.get(url, verify=TLS_CA, timeout=30)  # no credentials: a CRL is public
    if r.status_code != 200:
        return False, f"GET {url} (no token) -> {r.status_code} {r.reason}"
    path = os.path.join(WORK, "py.crl")
    with open(path, "wb") as f:
        f.write(r.content)
    v = subprocess.run(["openssl", "crl", "-inform", "DER", "-in", path, "-CAfile", ISSUING_CA, "-noout", "-verify"],
                       capture_output=True, text=True)
    if v.returncode != 0 or "verify OK" not in (v.stdout + v.stderr):
        return False, f"openssl crl -verify: {(v.stdout + v.stderr).strip()[:300]}"
    crl = x509.load_der_x509_crl(r.content)
    entry = crl.get_revoked_certificate_by_serial_number(cert.serial_number)
    if entry is None:
        return False, f"serial {cert.serial_number:X} is not in the CRL of {url} ({len(list(crl))} entries)"
    return True, f"serial {cert.serial_number:X} in {url}, openssl crl -verify OK"


if renewed or "local P-256 key" in issued:
    check("vcert-python: revoke_cert, then the serial is in the CRL named by the certificate (openssl crl -verify)", revoke)


def retire():
    req, _ = issued["user-provided CSR (P-256)"]
    conn.retire_cert(RetireRequest(req_id=req.id))
    if not api:
        return True, "retired (pyvenafi is not logged in: Disabled not read back)"
    guid = conn.get_certificate_guid_from_dn(req.id)
    got = api.websdk.Certificates.Guid(guid).get()
    if not got.disabled:
        return False, f"GET Certificates/{guid}: Disabled is {got.disabled!r} after retire"
    return True, f"GET Certificates/{guid}: Disabled"


if "user-provided CSR (P-256)" in issued:
    check("vcert-python: retire_cert (Config/DnToGuid + PUT Certificates/{guid} Disabled=1)", retire)

failed = [n for n, ok in results if not ok]
print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed (vcert-python 0.22.1, pyvenafi 1.1.0)")
if failed:
    sys.exit(1)
