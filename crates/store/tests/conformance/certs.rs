//! Certificates: one current certificate per DN however many
//! issuances race on it (every other one archived, every one in the log),
//! a serial revoked once however many revocations race, the rights of the
//! asker re-checked in the write, and a deletion that takes the entries.

use std::sync::Arc;

use strongroom_core::cert::vault_type;
use strongroom_core::event::{EventKind, verify_chain};
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{Rights, VaultId};
use strongroom_store::{
    CertField, CertRecord, Checked, EventFilter, FieldValues, Issuance, NewObject, Parking, PendingChange, PendingRecord, Revocation,
    Store, VaultEntry,
};

use crate::cases::{T0, ev, first_data_key, folder, lineage, writer};

fn record(path: &str, guid: &ObjectGuid, serial: usize, cert: VaultId, csr: VaultId) -> CertRecord {
    CertRecord {
        path: folder(path),
        guid: guid.clone(),
        ca_key: "issuing ca".into(),
        cn: "www.example.com".into(),
        sans: "{}".into(),
        serial: format!("{serial:032X}"),
        thumbprint: format!("{serial:040X}"),
        valid_from: T0.secs(),
        valid_to: T0.secs() + 86_400,
        cert_vault_id: cert,
        key_vault_id: None,
        csr_vault_id: Some(csr),
        disabled: false,
        revoked: false,
        version: 0,
        created_at: T0,
        issued_at: T0,
        template: String::new(),
    }
}

fn entry(id: VaultId, t: i32, owner: &str) -> VaultEntry {
    VaultEntry {
        vault_id: id,
        vault_type: t,
        key_name: "Software:Default".into(),
        key_id: 1,
        sealed: vec![7; 40],
        owners: vec![folder(owner)],
        created_at: T0,
    }
}

async fn issuance(store: &dyn Store, path: &str, guid: &ObjectGuid, serial: usize) -> Issuance {
    let (cert, csr) = (store.allocate_vault_id().await.unwrap(), store.allocate_vault_id().await.unwrap());
    let mut l = lineage(&folder(path));
    if let Some(last) = l.last_mut() {
        last.1 = guid.clone();
    }
    Issuance {
        record: record(path, guid, serial, cert, csr),
        lineage: l,
        entries: vec![entry(cert, vault_type::CERTIFICATE, path), entry(csr, vault_type::PKCS10, path)],
        by: None,
        need: Rights::CREATE,
        policy_folder: folder("\\VED\\Policy\\Web"),
        fields: FieldValues::default(),
    }
}

pub(crate) async fn concurrent_issuances_on_one_dn_leave_one_current(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let web = folder("\\VED\\Policy\\Web");
    store.create_folders(lineage(&web), ev(EventKind::FolderCreated)).await.unwrap();
    let dn = "\\VED\\Policy\\Web\\www.example.com";
    let guid = ObjectGuid::parse("{11111111-2222-4333-8444-555555555555}").unwrap();
    const N: usize = 50;
    let mut tasks = Vec::new();
    for i in 0..N {
        let store = store.clone();
        let guid = guid.clone();
        tasks.push(tokio::spawn(async move {
            let issue = issuance(&*store, dn, &guid, i + 1).await;
            let id = issue.record.cert_vault_id;
            let events = vec![ev(EventKind::CertificateRequested), ev(EventKind::CertificateIssued).object(id.to_string())];
            (id, store.issue_certificate(issue, events).await.unwrap())
        }));
    }
    let mut issued = Vec::new();
    for t in tasks {
        let (id, outcome) = t.await.unwrap();
        assert_eq!(outcome, Checked::Done(()));
        issued.push(id);
    }
    let key = folder(dn).key().to_owned();
    let current = store.certificate(key).await.unwrap().expect("the object");
    assert_eq!(current.guid, guid, "the object keeps one GUID");
    assert_eq!(current.version, (N - 1) as i64, "each issuance replaced the row once");
    let entries = store.cert_entries(folder(dn)).await.unwrap();
    let of = |t: i32| entries.iter().filter(|e| e.vault_type == t).map(|e| e.vault_id).collect::<Vec<_>>();
    assert_eq!(of(vault_type::CERTIFICATE), vec![current.cert_vault_id], "exactly one current certificate: the row's");
    assert_eq!(of(vault_type::PKCS10), vec![current.csr_vault_id.unwrap()]);
    assert_eq!(of(vault_type::ARCHIVED_CERTIFICATE).len(), N - 1, "every other certificate archived");
    assert_eq!(of(vault_type::ARCHIVED_PKCS10).len(), N - 1);
    let mut all: Vec<VaultId> = of(vault_type::CERTIFICATE).into_iter().chain(of(vault_type::ARCHIVED_CERTIFICATE)).collect();
    all.sort();
    issued.sort();
    assert_eq!(all, issued, "every issued certificate is kept, current or archived");
    let events = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    let logged: Vec<&str> =
        events.iter().filter(|e| e.event.kind == EventKind::CertificateIssued).map(|e| e.event.object.as_str()).collect();
    assert_eq!(logged.len(), N, "every issuance is in the log");
    for id in &issued {
        assert!(logged.contains(&id.to_string().as_str()), "{id} in the log");
    }
    let all = store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
    // The folder made for the object is the tree's, with the object's GUID.
    assert_eq!(store.folder_object(folder(dn).key().to_owned()).await.unwrap().unwrap().guid, guid);
}

pub(crate) async fn a_serial_is_revoked_once_and_rights_are_rechecked(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let web = folder("\\VED\\Policy\\Web");
    store.create_folders(lineage(&web), ev(EventKind::FolderCreated)).await.unwrap();
    let dn = "\\VED\\Policy\\Web\\api";
    let guid = ObjectGuid::parse("{21111111-2222-4333-8444-555555555555}").unwrap();
    // Someone without rights asks: refused in the write, nothing written.
    let (nobody, _) = writer(&*store, false).await;
    let mut denied = issuance(&*store, dn, &guid, 1).await;
    denied.by = Some(nobody.clone());
    assert_eq!(store.issue_certificate(denied, vec![ev(EventKind::CertificateIssued)]).await.unwrap(), Checked::Denied);
    assert!(store.certificate(folder(dn).key().to_owned()).await.unwrap().is_none());
    assert!(store.cert_entries(folder(dn)).await.unwrap().is_empty());
    // A Master Admin may.
    let (admin, _) = writer(&*store, true).await;
    let mut ok = issuance(&*store, dn, &guid, 7).await;
    ok.by = Some(admin.clone());
    assert_eq!(store.issue_certificate(ok, vec![ev(EventKind::CertificateIssued)]).await.unwrap(), Checked::Done(()));
    let r = store.certificate(folder(dn).key().to_owned()).await.unwrap().unwrap();
    // Ten revocations of one serial race: one records it.
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let store = store.clone();
        let rev =
            Revocation { ca_key: r.ca_key.clone(), serial: r.serial.clone(), revoked_at: T0.secs(), reason: 1, not_after: r.valid_to };
        let key = folder(dn).key().to_owned();
        tasks.push(tokio::spawn(async move {
            store.revoke_certificate(key, rev, true, None, ev(EventKind::CertificateRevoked)).await.unwrap()
        }));
    }
    let mut firsts = 0;
    for t in tasks {
        if t.await.unwrap() == Checked::Done(true) {
            firsts += 1;
        }
    }
    assert_eq!(firsts, 1, "the serial is revoked once");
    let list = store.revocations("issuing ca".into(), T0.secs()).await.unwrap();
    assert_eq!(list.len(), 1);
    assert!(store.revocations("issuing ca".into(), r.valid_to).await.unwrap().is_empty(), "an expired one leaves the CRL");
    let r = store.certificate(folder(dn).key().to_owned()).await.unwrap().unwrap();
    assert!(r.revoked && r.disabled);
    // Someone without Revoke cannot; deletion takes the entries and the folder.
    let rev = Revocation { ca_key: r.ca_key.clone(), serial: "00".into(), revoked_at: T0.secs(), reason: 0, not_after: r.valid_to };
    assert_eq!(
        store
            .revoke_certificate(folder(dn).key().to_owned(), rev, false, Some(nobody.clone()), ev(EventKind::CertificateRevoked))
            .await
            .unwrap(),
        Checked::Denied
    );
    assert_eq!(
        store.delete_certificate(folder(dn).key().to_owned(), Some(nobody), ev(EventKind::CertificateDeleted)).await.unwrap(),
        Checked::Denied
    );
    assert_eq!(
        store.delete_certificate(folder(dn).key().to_owned(), Some(admin), ev(EventKind::CertificateDeleted)).await.unwrap(),
        Checked::Done(true)
    );
    assert!(store.certificate(folder(dn).key().to_owned()).await.unwrap().is_none());
    assert!(store.cert_entries(folder(dn)).await.unwrap().is_empty());
    assert!(store.folder_object(folder(dn).key().to_owned()).await.unwrap().is_none());
    // The janitor's purge: revocations of certificates that ended before the cut, every CA's,
    // and no other (the deleted object's revocation stayed until now).
    let later =
        Revocation { ca_key: "other ca".into(), serial: "0A".into(), revoked_at: T0.secs(), reason: 0, not_after: r.valid_to + 100 };
    assert_eq!(
        store.revoke_certificate("\\ved\\policy\\gone".into(), later, false, None, ev(EventKind::CertificateRevoked)).await.unwrap(),
        Checked::Done(true)
    );
    assert_eq!(store.purge_revocations(r.valid_to).await.unwrap(), 0, "a certificate ending at the cut stays");
    assert_eq!(store.purge_revocations(r.valid_to + 1).await.unwrap(), 1);
    assert!(store.revocations("issuing ca".into(), i64::MIN).await.unwrap().is_empty());
    assert_eq!(store.revocations("other ca".into(), i64::MIN).await.unwrap().len(), 1, "the later one stays");
    assert_eq!(store.purge_revocations(r.valid_to + 1).await.unwrap(), 0, "a second run finds nothing");
    let all = store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// An intermediate CA's certificate is installed by one conditional write: of installs racing
/// from the same (empty) certificates exactly one lands, with its event; one from certificates
/// that changed meanwhile, or on no CA, writes nothing.
pub(crate) async fn a_ca_certificate_is_installed_once_under_concurrency(store: Arc<dyn Store>) {
    use strongroom_store::CaRecord;
    let ca = CaRecord {
        name: "Sub CA".into(),
        dn: "\\VED\\Policy\\CA Templates\\Sub CA".into(),
        algorithm: "p256".into(),
        subject: "CN=Sub CA".into(),
        cert_der: Vec::new(),
        key_name: "Software:Default".into(),
        key_id: 1,
        key_sealed: vec![9; 48],
        validity_days: 90,
        created_at: T0,
        manual_approval: false,
    };
    assert!(store.insert_ca(ca.clone(), lineage(&folder(&ca.dn)), ev(EventKind::CaCreated)).await.unwrap());
    const N: usize = 16;
    let mut tasks = Vec::new();
    for i in 0..N {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let new = vec![0x30, 0x03, 0x02, 0x01, i as u8];
            let won = store.set_ca_certificate("sub ca".into(), Vec::new(), new.clone(), ev(EventKind::CaInstalled)).await.unwrap();
            (won, new)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (won, new) = t.await.unwrap();
        if won {
            winners.push(new);
        }
    }
    assert_eq!(winners.len(), 1, "one install from the empty certificates lands");
    let stored = store.cert_authorities().await.unwrap().into_iter().find(|c| c.name == "Sub CA").unwrap();
    assert_eq!(stored.cert_der, winners[0]);
    assert_eq!((stored.key_sealed, stored.key_id), (ca.key_sealed.clone(), 1), "nothing else changes");
    let events = store
        .events(EventFilter { kind: Some(EventKind::CaInstalled.as_str().into()), limit: 1000, ..EventFilter::default() })
        .await
        .unwrap();
    assert_eq!(events.len(), 1, "one event, the winner's");
    // From what it holds now, a second install lands; on no CA nothing does.
    assert!(store.set_ca_certificate("sub ca".into(), winners[0].clone(), vec![0x30, 0x00], ev(EventKind::CaInstalled)).await.unwrap());
    assert!(!store.set_ca_certificate("no such ca".into(), Vec::new(), vec![0x30, 0x00], ev(EventKind::CaInstalled)).await.unwrap());
    let all = store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// `Config/Create` of a certificate object: made once (with its folder, its template and no
/// certificate), a second one at the DN is told so, Create on the parent is re-checked in the
/// write; the first issuance at the DN replaces the row and keeps the template.
pub(crate) async fn an_object_without_a_certificate_is_made_once_then_enrolled(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let apps = folder("\\VED\\Policy\\Apps");
    store.create_folders(lineage(&apps), ev(EventKind::FolderCreated)).await.unwrap();
    let dn = "\\VED\\Policy\\Apps\\made";
    let guid = ObjectGuid::parse("{31111111-2222-4333-8444-555555555555}").unwrap();
    let pending = || {
        let mut r = record(dn, &guid, 0, VaultId(0), VaultId(0));
        (r.serial, r.thumbprint, r.csr_vault_id, r.template) = (String::new(), String::new(), None, "{\"common_name\":\"x\"}".into());
        let mut l = lineage(&folder(dn));
        if let Some(last) = l.last_mut() {
            last.1 = guid.clone();
        }
        NewObject { record: r, lineage: l, by: None, parent: apps.clone() }
    };
    let (nobody, _) = writer(&*store, false).await;
    let denied = NewObject { by: Some(nobody), ..pending() };
    assert_eq!(store.create_certificate_object(denied, ev(EventKind::FolderCreated)).await.unwrap(), Checked::Denied);
    assert!(store.folder_object(folder(dn).key().to_owned()).await.unwrap().is_none(), "nothing made for a refusal");
    // Ten creations of the DN race, each with a GUID of its own: one makes it, the others are told it exists.
    let (admin, _) = writer(&*store, true).await;
    let mut tasks = Vec::new();
    for i in 0..10u32 {
        let store = store.clone();
        let mut o = NewObject { by: Some(admin.clone()), ..pending() };
        let g = ObjectGuid::parse(&format!("{{3111{i:04}-2222-4333-8444-555555555555}}")).unwrap();
        o.record.guid = g.clone();
        if let Some(last) = o.lineage.last_mut() {
            last.1 = g.clone();
        }
        tasks.push(tokio::spawn(async move { (g, store.create_certificate_object(o, ev(EventKind::FolderCreated)).await.unwrap()) }));
    }
    let mut made = Vec::new();
    for t in tasks {
        let (g, outcome) = t.await.unwrap();
        match outcome {
            Checked::Done(true) => made.push(g),
            other => assert_eq!(other, Checked::Done(false)),
        }
    }
    assert_eq!(made.len(), 1, "one object per DN");
    let r = store.certificate(folder(dn).key().to_owned()).await.unwrap().expect("the object");
    assert!(!r.issued() && r.cert_id().is_none() && r.template.contains("common_name"));
    assert_eq!(r.guid, made[0]);
    assert_eq!(store.folder_object(folder(dn).key().to_owned()).await.unwrap().unwrap().guid, made[0], "the winner's folder");
    let guid = made[0].clone();
    // The first issuance at the DN: the row holds a certificate, the template stays.
    let mut first = issuance(&*store, dn, &guid, 9).await;
    first.record.template = r.template.clone();
    assert_eq!(store.issue_certificate(first, vec![ev(EventKind::CertificateIssued)]).await.unwrap(), Checked::Done(()));
    let r = store.certificate(folder(dn).key().to_owned()).await.unwrap().unwrap();
    assert!(r.issued() && r.cert_id().is_some() && r.template.contains("common_name"));
    assert_eq!(store.cert_entries(folder(dn)).await.unwrap().iter().filter(|e| e.vault_type == vault_type::CERTIFICATE).count(), 1);
}

fn field_def(guid: &str, name: &str, kind: i64, allowed: &[&str]) -> CertField {
    CertField {
        guid: guid.into(),
        name: name.into(),
        kind,
        allowed: allowed.iter().map(|s| (*s).to_owned()).collect(),
        classes: vec!["X509 Certificate".into()],
        created_at: T0,
    }
}

fn vals(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// Custom fields: ten definitions of one name (in different cases, each with a GUID of its own)
/// race and one is made; values are written in the issuance's own write, kept by the next one,
/// set (Write re-checked in the write) or replaced, and go with the field and with the object.
pub(crate) async fn custom_fields_are_defined_once_and_their_values_follow_the_object(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let web = folder("\\VED\\Policy\\Web");
    store.create_folders(lineage(&web), ev(EventKind::FolderCreated)).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..10u32 {
        let store = store.clone();
        let name = if i % 2 == 0 { "Cost Center" } else { "COST center" };
        let f = field_def(&format!("{{c0570000-0000-4000-8000-{i:012}}}"), name, 1, &[]);
        tasks.push(tokio::spawn(async move { store.insert_cert_field(f, ev(EventKind::CertFieldCreated)).await.unwrap() }));
    }
    let mut made = 0;
    for t in tasks {
        made += usize::from(t.await.unwrap());
    }
    assert_eq!(made, 1, "one field per name, whatever the case");
    let env = field_def("{e0000000-0000-4000-8000-000000000001}", "Environment", 2, &["Staging", "UAT"]);
    assert!(store.insert_cert_field(env.clone(), ev(EventKind::CertFieldCreated)).await.unwrap());
    assert!(
        !store.insert_cert_field(field_def(&env.guid, "Other", 1, &[]), ev(EventKind::CertFieldCreated)).await.unwrap(),
        "a GUID is one field's"
    );
    let fields = store.cert_fields().await.unwrap();
    assert_eq!(fields.len(), 2);
    assert_eq!(fields[1], env, "read back as defined, by name");
    let cost = fields[0].guid.clone();

    // The issuance writes values with the object; an undefined GUID's are left out.
    let dn = "\\VED\\Policy\\Web\\fields.example.com";
    let key = folder(dn).key().to_owned();
    let guid = ObjectGuid::parse("{41111111-2222-4333-8444-555555555555}").unwrap();
    let mut first = issuance(&*store, dn, &guid, 1).await;
    first.fields = FieldValues {
        replace: true,
        values: vec![
            (cost.clone(), vals(&["42"])),
            (env.guid.clone(), vals(&["Staging", "UAT"])),
            ("{00000000-0000-4000-8000-00000000dead}".into(), vals(&["x"])),
        ],
    };
    assert_eq!(store.issue_certificate(first, vec![ev(EventKind::CertificateIssued)]).await.unwrap(), Checked::Done(()));
    let mut want = vec![(cost.clone(), vals(&["42"])), (env.guid.clone(), vals(&["Staging", "UAT"]))];
    want.sort();
    assert_eq!(store.cert_field_values(key.clone()).await.unwrap(), want);
    // A renewal (no values given) keeps them.
    let again = issuance(&*store, dn, &guid, 2).await;
    assert_eq!(store.issue_certificate(again, vec![ev(EventKind::CertificateIssued)]).await.unwrap(), Checked::Done(()));
    assert_eq!(store.cert_field_values(key.clone()).await.unwrap(), want, "kept by a renewal");

    // Metadata/Set: Write re-checked in the write; keep the others, or replace them all.
    let (nobody, _) = writer(&*store, false).await;
    let (admin, _) = writer(&*store, true).await;
    let set = FieldValues { replace: false, values: vec![(cost.clone(), vals(&["7"]))] };
    assert_eq!(
        store.set_cert_field_values(key.clone(), set.clone(), Some(nobody), ev(EventKind::CertificateFieldsSet)).await.unwrap(),
        Checked::Denied
    );
    assert_eq!(store.cert_field_values(key.clone()).await.unwrap(), want, "nothing written for a refusal");
    assert_eq!(
        store.set_cert_field_values(key.clone(), set, Some(admin.clone()), ev(EventKind::CertificateFieldsSet)).await.unwrap(),
        Checked::Done(true)
    );
    let values = store.cert_field_values(key.clone()).await.unwrap();
    assert!(values.contains(&(cost.clone(), vals(&["7"]))) && values.len() == 2, "{values:?}");
    let replace = FieldValues { replace: true, values: vec![(env.guid.clone(), vals(&["UAT"]))] };
    assert_eq!(
        store.set_cert_field_values(key.clone(), replace, None, ev(EventKind::CertificateFieldsSet)).await.unwrap(),
        Checked::Done(true)
    );
    assert_eq!(store.cert_field_values(key.clone()).await.unwrap(), vec![(env.guid.clone(), vals(&["UAT"]))]);
    let clear = FieldValues { replace: false, values: vec![(env.guid.clone(), Vec::new())] };
    assert_eq!(
        store.set_cert_field_values(key.clone(), clear, None, ev(EventKind::CertificateFieldsSet)).await.unwrap(),
        Checked::Done(true)
    );
    assert!(store.cert_field_values(key.clone()).await.unwrap().is_empty(), "no values: cleared");
    let none = FieldValues { replace: false, values: vec![(cost.clone(), vals(&["1"]))] };
    assert_eq!(
        store
            .set_cert_field_values(folder("\\VED\\Policy\\Web\\nothing").key().to_owned(), none, None, ev(EventKind::CertificateFieldsSet))
            .await
            .unwrap(),
        Checked::Done(false),
        "no such object"
    );

    // A removed field takes its values; a deleted object takes its own.
    let both = FieldValues { replace: false, values: vec![(cost.clone(), vals(&["1"])), (env.guid.clone(), vals(&["UAT"]))] };
    store.set_cert_field_values(key.clone(), both, None, ev(EventKind::CertificateFieldsSet)).await.unwrap();
    assert!(store.delete_cert_field("ENVIRONMENT".into(), ev(EventKind::CertFieldRemoved)).await.unwrap());
    assert!(!store.delete_cert_field("Environment".into(), ev(EventKind::CertFieldRemoved)).await.unwrap(), "once");
    assert_eq!(store.cert_field_values(key.clone()).await.unwrap(), vec![(cost.clone(), vals(&["1"]))]);
    assert_eq!(store.cert_fields().await.unwrap().len(), 1);
    assert_eq!(store.delete_certificate(key.clone(), None, ev(EventKind::CertificateDeleted)).await.unwrap(), Checked::Done(true));
    assert!(store.cert_field_values(key).await.unwrap().is_empty(), "gone with the object");
    let all = store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    assert_eq!(all.iter().filter(|e| e.event.kind == EventKind::CertFieldCreated).count(), 2, "one event per field made");
    assert_eq!(all.iter().filter(|e| e.event.kind == EventKind::CertificateFieldsSet).count(), 4, "one per set, none for a refusal");
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// A request parked for approval at `dn` (its object made without a certificate).
async fn park(store: &dyn Store, dn: &str, guid: &ObjectGuid) {
    let mut l = lineage(&folder(dn));
    if let Some(last) = l.last_mut() {
        last.1 = guid.clone();
    }
    let mut placeholder = record(dn, guid, 0, VaultId(0), VaultId(0));
    placeholder.serial = String::new();
    placeholder.thumbprint = String::new();
    placeholder.csr_vault_id = None;
    let pending = PendingRecord {
        path: folder(dn),
        guid: guid.clone(),
        ca_key: "issuing ca".into(),
        request: "{\"PolicyDN\":\"\\\\VED\\\\Policy\\\\Web\"}".into(),
        renewal: false,
        requested_by: "local:{alice}".into(),
        requested_at: T0,
        rejected: false,
        status: "Pending workflow resolution".into(),
        version: 0,
    };
    let p = Parking { placeholder, lineage: l, pending, by: None, need: Rights::CREATE, policy_folder: folder("\\VED\\Policy\\Web") };
    assert_eq!(store.park_certificate(p, vec![ev(EventKind::CertificateRequested)]).await.unwrap(), Checked::Done(()));
}

pub(crate) async fn racing_approvals_of_one_request_issue_once(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let web = folder("\\VED\\Policy\\Web");
    store.create_folders(lineage(&web), ev(EventKind::FolderCreated)).await.unwrap();
    let dn = "\\VED\\Policy\\Web\\www.example.com";
    let key = folder(dn).key().to_owned();
    let guid = ObjectGuid::parse("{21111111-2222-4333-8444-555555555555}").unwrap();
    park(&*store, dn, &guid).await;
    let waiting = store.pending_certificate(key.clone()).await.unwrap().expect("waiting");
    assert!(!waiting.rejected && waiting.status.contains("Pending workflow resolution"));
    assert_eq!(store.pending_certificates().await.unwrap().len(), 1);
    let object = store.certificate(key.clone()).await.unwrap().expect("the object, without a certificate");
    assert!(!object.issued() && object.guid == guid);
    // 20 approvals at once, each with its own certificate: exactly one wins.
    const N: usize = 20;
    let mut tasks = Vec::new();
    for i in 0..N {
        let store = store.clone();
        let guid = guid.clone();
        let version = waiting.version;
        tasks.push(tokio::spawn(async move {
            let mut issue = issuance(&*store, dn, &guid, i + 1).await;
            issue.need = Rights::MANAGE_PERMISSIONS;
            issue.policy_folder = folder(dn);
            let id = issue.record.cert_vault_id;
            let events =
                vec![ev(EventKind::CertificateApproved).object(id.to_string()), ev(EventKind::CertificateIssued).object(id.to_string())];
            (id, store.approve_certificate(issue, version, events).await.unwrap())
        }));
    }
    let mut won = Vec::new();
    for t in tasks {
        let (id, outcome) = t.await.unwrap();
        match outcome {
            Checked::Done(true) => won.push(id),
            Checked::Done(false) => {}
            Checked::Denied => panic!("no writer: never denied"),
        }
    }
    assert_eq!(won.len(), 1, "one approval issues");
    let current = store.certificate(key.clone()).await.unwrap().unwrap();
    assert_eq!(current.cert_vault_id, won[0]);
    let entries = store.cert_entries(folder(dn)).await.unwrap();
    let certs: Vec<VaultId> = entries
        .iter()
        .filter(|e| e.vault_type == vault_type::CERTIFICATE || e.vault_type == vault_type::ARCHIVED_CERTIFICATE)
        .map(|e| e.vault_id)
        .collect();
    assert_eq!(certs, won, "exactly one certificate written, none archived");
    assert!(store.pending_certificate(key.clone()).await.unwrap().is_none(), "the request is taken");
    let events = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    let count = |k: EventKind| events.iter().filter(|e| e.event.kind == k).count();
    assert_eq!((count(EventKind::CertificateApproved), count(EventKind::CertificateIssued)), (1, 1), "one approval event, one issuance");
    verify_chain(&events, store.event_head().await.unwrap()).unwrap();

    // A new request waits again (its version moved on); a rejection at an old version loses,
    // at the current one it wins once; Retry and Reset.
    park(&*store, dn, &guid).await;
    let w = store.pending_certificate(key.clone()).await.unwrap().unwrap();
    let reject = |v: i64| {
        let store = store.clone();
        let key = key.clone();
        async move {
            store
                .settle_pending(
                    key,
                    v,
                    PendingChange::Reject("no".into()),
                    None,
                    Rights::MANAGE_PERMISSIONS,
                    ev(EventKind::CertificateRejected),
                )
                .await
                .unwrap()
        }
    };
    let mut tasks = Vec::new();
    for _ in 0..8 {
        tasks.push(tokio::spawn(reject(w.version)));
    }
    let mut rejected = 0;
    for t in tasks {
        if t.await.unwrap() == Checked::Done(true) {
            rejected += 1;
        }
    }
    assert_eq!(rejected, 1, "one rejection");
    let r = store.pending_certificate(key.clone()).await.unwrap().unwrap();
    assert!(r.rejected && r.status == "no" && r.version == w.version + 1);
    // An approval of the rejected request (at any version) issues nothing.
    let issue = issuance(&*store, dn, &guid, 99).await;
    assert_eq!(
        store.approve_certificate(issue.clone(), r.version, vec![ev(EventKind::CertificateApproved)]).await.unwrap(),
        Checked::Done(false)
    );
    assert_eq!(
        store
            .settle_pending(
                key.clone(),
                r.version,
                PendingChange::Retry("again".into()),
                None,
                Rights::WRITE,
                ev(EventKind::CertificateProcessingReset)
            )
            .await
            .unwrap(),
        Checked::Done(true)
    );
    let again = store.pending_certificate(key.clone()).await.unwrap().unwrap();
    assert!(!again.rejected && again.status == "again");
    assert_eq!(
        store
            .settle_pending(
                key.clone(),
                again.version,
                PendingChange::Cancel,
                None,
                Rights::WRITE,
                ev(EventKind::CertificateProcessingReset)
            )
            .await
            .unwrap(),
        Checked::Done(true)
    );
    assert!(store.pending_certificate(key.clone()).await.unwrap().is_none());
    assert_eq!(store.certificate(key).await.unwrap().unwrap().cert_vault_id, won[0], "the approved certificate stays current");
}

/// A folder's certificate policy changes by one conditional write on the policy read: of changes
/// racing from the same policy exactly one lands, with its event; from a policy that changed
/// meanwhile, or on no folder, nothing is written; clearing takes the row.
pub(crate) async fn a_folder_policy_changes_once_from_what_was_read(store: Arc<dyn Store>) {
    let zone = folder("\\VED\\Policy\\Zone");
    assert!(store.create_folders(lineage(&zone), ev(EventKind::FolderCreated)).await.unwrap());
    const N: usize = 16;
    let mut tasks = Vec::new();
    for i in 0..N {
        let (store, zone) = (store.clone(), zone.clone());
        tasks.push(tokio::spawn(async move {
            let new = format!("{{\"city\":{{\"value\":\"C{i}\",\"locked\":false}}}}");
            (store.replace_cert_policy(zone, None, Some(new.clone()), ev(EventKind::CertPolicySet)).await.unwrap(), new)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (outcome, new) = t.await.unwrap();
        assert!(outcome.is_some(), "the folder exists");
        if outcome == Some(true) {
            winners.push(new);
        }
    }
    assert_eq!(winners.len(), 1, "one change from no policy lands");
    let stored = |s: Vec<(String, String)>| s.into_iter().find(|(k, _)| k == zone.key()).map(|(_, t)| t);
    assert_eq!(stored(store.cert_policies().await.unwrap()), Some(winners[0].clone()));
    let kind = Some(EventKind::CertPolicySet.as_str().into());
    let events = store.events(EventFilter { kind: kind.clone(), limit: 1000, ..EventFilter::default() }).await.unwrap();
    assert_eq!(events.len(), 1, "one event, the winner's");
    // From a stale policy nothing lands; from the current one it does; then cleared; no folder: None.
    let stale = Some("{}".to_owned());
    assert_eq!(
        store.replace_cert_policy(zone.clone(), stale, Some("{\"x\":1}".into()), ev(EventKind::CertPolicySet)).await.unwrap(),
        Some(false)
    );
    let next = "{\"state\":{\"value\":\"S\",\"locked\":true}}".to_owned();
    let from = Some(winners[0].clone());
    assert_eq!(store.replace_cert_policy(zone.clone(), from, Some(next.clone()), ev(EventKind::CertPolicySet)).await.unwrap(), Some(true));
    assert_eq!(store.replace_cert_policy(zone.clone(), Some(next), None, ev(EventKind::CertPolicySet)).await.unwrap(), Some(true));
    assert_eq!(stored(store.cert_policies().await.unwrap()), None, "cleared");
    let nowhere = folder("\\VED\\Policy\\Nowhere");
    assert_eq!(store.replace_cert_policy(nowhere, None, Some("{}".into()), ev(EventKind::CertPolicySet)).await.unwrap(), None);
    let events = store.events(EventFilter { kind, limit: 1000, ..EventFilter::default() }).await.unwrap();
    assert_eq!(events.len(), 3, "an event per change that landed");
    let all = store.events(EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// A request's context is one read: the policies down to its folder (top first, none of the
/// folders beside it), the CAs, the object at the DN (or a folder there), the fields, the waiting
/// request; and the ids its entries take come in one call, each new.
pub(crate) async fn a_request_context_is_read_in_one_call(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let (web, team, beside) = (folder("\\VED\\Policy\\Web"), folder("\\VED\\Policy\\Web\\Team"), folder("\\VED\\Policy\\Other"));
    for f in [&team, &beside] {
        assert!(store.create_folders(lineage(f), ev(EventKind::FolderCreated)).await.unwrap());
    }
    for (f, p) in [(&folder("\\VED\\Policy"), "{\"root\":1}"), (&web, "{\"web\":1}"), (&team, "{\"team\":1}"), (&beside, "{\"other\":1}")] {
        assert!(store.set_cert_policy(f.clone(), Some(p.into()), ev(EventKind::CertPolicySet)).await.unwrap());
    }
    let dn = folder("\\VED\\Policy\\Web\\Team\\www.example.com");
    let empty = store.request_context(team.clone(), dn.clone()).await.unwrap();
    let keys: Vec<&str> = empty.policies.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["\\ved\\policy", "\\ved\\policy\\web", "\\ved\\policy\\web\\team"], "top first, not the folder beside");
    assert!(empty.folder_exists && !empty.folder_is_certificate && !empty.folder_at_dn);
    assert!(empty.existing.is_none() && empty.pending.is_none());
    let nowhere = store.request_context(folder("\\VED\\Policy\\Nowhere"), folder("\\VED\\Policy\\Nowhere\\x")).await.unwrap();
    assert!(!nowhere.folder_exists && nowhere.policies.len() == 1, "only the root's policy: {:?}", nowhere.policies);
    let root = store.request_context(folder("\\VED\\Policy"), folder("\\VED\\Policy\\x")).await.unwrap();
    assert!(root.folder_exists, "the root policy folder always is");
    // A folder at the DN; then a certificate there, waiting for approval.
    let at_dn = store.request_context(web.clone(), team.clone()).await.unwrap();
    assert!(at_dn.folder_at_dn && at_dn.existing.is_none());
    let guid = ObjectGuid::parse("{11111111-2222-4333-8444-555555555555}").unwrap();
    park(&*store, dn.as_str(), &guid).await;
    let parked = store.request_context(team.clone(), dn.clone()).await.unwrap();
    assert_eq!(parked.existing.as_ref().map(|r| &r.guid), Some(&guid));
    assert_eq!(parked.pending.as_ref().map(|p| p.version), Some(0));
    assert!(!parked.folder_at_dn, "a certificate object is not a folder at the DN");
    let inside = store.request_context(dn.clone(), folder("\\VED\\Policy\\Web\\Team\\www.example.com\\x")).await.unwrap();
    assert!(inside.folder_is_certificate, "a certificate is no policy folder");
    let ids = store.allocate_vault_ids(3).await.unwrap();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{ids:?}");
    assert!(store.allocate_vault_id().await.unwrap() > *ids.iter().max().unwrap());
}
