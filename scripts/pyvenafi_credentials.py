"""pyvenafi's credential features against Strongroom (run by scripts/pyvenafi).

alice (writer) creates each class of credential with pyvenafi's features
(``features.credential.*.create``), bob (Read only) reads them back with
``websdk.Credentials.Retrieve`` and lists them with ``Enumerate``; bob's
writes are refused; alice updates, renames and deletes.
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")

from pyvenafi.tpp import Authenticate, Features  # noqa: E402

HOST, CLIENT, SCOPE, PASSWORD, TEAM = (os.environ[k] for k in ("HOST", "CLIENT", "SCOPE", "PASSWORD", "TEAM"))
failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def values(resp):
    return {v.name: v.value for v in resp.values}


def login(user):
    return Authenticate(host=HOST, username=user, password=PASSWORD, application_id=CLIENT, scope=SCOPE)


alice, bob = login("alice"), login("bob")
fa = Features(alice)

up = fa.credential.username_password.create(name="db", parent_folder=TEAM, username="svc", password="correct horse")
check("UsernamePasswordCredential.create returns the object", up.dn == TEAM + "\\db")
again = fa.credential.username_password.create(name="db", parent_folder=TEAM, username="svc", password="x")
check("create again returns the existing object (401, get_if_already_exists)", again.dn == up.dn)
fa.credential.password.create(name="pw", parent_folder=TEAM, password="only-a-password")
fa.credential.generic.create(name="gen", parent_folder=TEAM, generic="AAEC", password="generic-pw")
fa.credential.generic.create(name="gen-nopw", parent_folder=TEAM, generic="AAEC")
fa.credential.certificate.create(name="cert", parent_folder=TEAM, certificate="MIIB", password=None)

r = bob.websdk.Credentials.Retrieve.post(credential_path=TEAM + "\\db")
check("bob (Read only) retrieves: Result 1", r.result.code == 1)
check("the values come back", values(r) == {"Username": "svc", "Password": "correct horse"})
check("the class name", r.classname == "Username Password Credential")
r = bob.websdk.Credentials.Retrieve.post(credential_path=TEAM + "\\gen")
check("generic: byte[] and password", values(r) == {"Generic": "AAEC", "Password": "generic-pw"})

e = bob.websdk.Credentials.Enumerate.post(credential_path=TEAM, pattern=None, recursive=False)
names = sorted(i.full_name for i in e.credential_infos)
check("Enumerate lists the five", names == sorted(TEAM + "\\" + n for n in ("db", "pw", "gen", "gen-nopw", "cert")))

refused = bob.websdk.Credentials.Update.post(
    credential_path=TEAM + "\\db", friendly_name="UsernamePassword",
    values=[{"Name": "Username", "Type": "string", "Value": "svc"}, {"Name": "Password", "Type": "string", "Value": "mine"}],
)
check("bob may not update (7)", refused.result.code == 7)
refused = bob.websdk.Credentials.Delete.post(credential_path=TEAM + "\\db")
check("bob may not delete (7)", refused.result.code == 7)

u = alice.websdk.Credentials.Update.post(
    credential_path=TEAM + "\\db", friendly_name="UsernamePassword",
    values=[{"Name": "Username", "Type": "string", "Value": "svc"}, {"Name": "Password", "Type": "string", "Value": "rotated-secret"}],
)
check("alice updates (1)", u.result.code == 1)
r = bob.websdk.Credentials.Retrieve.post(credential_path=TEAM + "\\db")
check("bob reads the new value", values(r).get("Password") == "rotated-secret")

n = alice.websdk.Credentials.Rename.post(credential_path=TEAM + "\\db", new_credential_path=TEAM + "\\database")
check("alice renames (1)", n.result.code == 1)
r = bob.websdk.Credentials.Retrieve.post(credential_path=TEAM + "\\database")
check("bob reads it at its new DN", values(r).get("Password") == "rotated-secret")

fa.credential.username_password.delete(TEAM + "\\database")
r = bob.websdk.Credentials.Retrieve.post(credential_path=TEAM + "\\database")
check("deleted: 400", r.result.code == 400)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("every check passed")
