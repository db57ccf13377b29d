//! Custom fields of certificate objects end to end: the real
//! binary, fields defined with `admin fields create`, then the product's
//! calls as vcert, pyvenafi and VenafiPS send them: `Certificates/Request`
//! with `CustomFields` (an unknown field or a value outside a list is 400
//! `Custom Field error. …` and issues nothing), `Metadata/Get`, `GetItems`,
//! `Set` (the product's result codes), `GetItemsForClass`, `Metadata/Items`
//! and `GET Certificates/{guid}`; Read to read, Write to set (else 403); a
//! renewal keeps the values; each set is a chained event.

use serde_json::{Value, json};

use crate::certificates::Call;
use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";
const WEB: &str = "\\VED\\Policy\\Web";

/// `Data` of `Metadata/Get` as (label, values), and the whole answer.
async fn metadata(c: &Call, token: &str, dn: &str) -> (u16, Vec<(String, Vec<String>)>, Value) {
    let (status, v) = c.post(token, "/vedsdk/metadata/get", json!({"DN": dn})).await;
    let data = v["Data"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|x| {
                    let values = x["Value"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
                    (x["Key"]["Label"].as_str().unwrap().to_owned(), values)
                })
                .collect()
        })
        .unwrap_or_default();
    (status, data, v)
}

fn pairs(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    list.iter().map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_fields_from_definition_to_request_set_and_renewal() {
    let server = Server::start(&["--insecure-http"], &[]);
    server.admin(&["ca", "create", "Issuing CA"], "");
    server.admin(&["folders", "create", WEB], "");
    server.admin(&["policy", "set", WEB, "--issuing-ca", "Issuing CA"], "");
    // Two fields: a text one and a list one (names unique whatever the case).
    let made = server.admin(&["fields", "create", "Cost Center"], "");
    assert!(made.starts_with("field Cost Center created: {"), "{made}");
    let dup = crate::process::run(&["admin", "--data-dir", &server.dir.display().to_string(), "fields", "create", "cost CENTER"], &[]);
    assert!(dup.code != 0 && dup.stderr.contains("already exists"), "{dup:?}");
    let bad =
        crate::process::run(&["admin", "--data-dir", &server.dir.display().to_string(), "fields", "create", "Tier", "--type", "list"], &[]);
    assert!(bad.code != 0 && bad.stderr.contains("needs --value"), "a list without values: {bad:?}");
    server.admin(&["fields", "create", "Environment", "--type", "list", "--value", "Staging", "--value", "UAT"], "");
    let listed: Value = serde_json::from_str(&server.admin(&["fields", "list", "--json"], "")).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!((listed[1]["name"].as_str(), listed[1]["type"].as_str()), (Some("Environment"), Some("list")));
    assert_eq!(listed[1]["values"], json!(["Staging", "UAT"]));
    assert_eq!(listed[1]["classes"], json!(["X509 Certificate"]));
    let env_guid = listed[1]["guid"].as_str().unwrap().to_owned();
    let cost_guid = listed[0]["guid"].as_str().unwrap().to_owned();

    for user in ["alice", "bob", "dave"] {
        server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    }
    server.admin(&["rights", "grant", WEB, "alice", "--rights", "view,read,write,create"], "");
    server.admin(&["rights", "grant", WEB, "bob", "--rights", "view,read,create"], "");
    server.admin(&["rights", "grant", WEB, "dave", "--rights", "view"], "");
    server
        .admin(&["integrations", "create", "vcert", "--scope", "certificate:manage", "--allow-all-users", "--password-grant", "true"], "");
    let api = Api::new(server.http_base());
    let alice = api.password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let bob = api.password_grant("vcert", "bob", PASSWORD, "certificate:manage").await.access().to_owned();
    let dave = api.password_grant("vcert", "dave", PASSWORD, "certificate:manage").await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };
    let request = |cn: &str, fields: Value| json!({"PolicyDN": WEB, "Subject": cn, "KeyAlgorithm": "ECC", "EllipticCurve": "P256", "CustomFields": fields});

    // Refused fields issue nothing: an unknown name, a value outside the list.
    let (status, v) =
        c.post(&alice, "/vedsdk/certificates/request", request("no.example.com", json!([{"Name": "Nope", "Values": ["1"]}]))).await;
    assert_eq!((status, v["Error"].as_str()), (400, Some("Custom Field error. Custom Field Nope does not exist.")), "{v}");
    let refused = json!([{"Name": "Environment", "Values": ["Prod"]}]);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request("no.example.com", refused)).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().unwrap().starts_with("Custom Field error. \"Prod\" is not an allowed value"), "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/metadata/get", json!({"DN": format!("{WEB}\\no.example.com")})).await;
    assert_eq!(status, 400, "nothing was made: {v}");

    // A request with values (names in any case, as vcert-python and VenafiPS send them).
    let fields = json!([{"Name": "cost center", "Values": ["42"]}, {"Name": "Environment", "Values": ["Staging", "UAT"]}]);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request("fields.example.com", fields)).await;
    assert_eq!(status, 200, "{v}");
    let dn = v["CertificateDN"].as_str().unwrap().to_owned();
    let guid = v["Guid"].as_str().unwrap().to_owned();
    let (status, data, whole) = metadata(&c, &alice, &dn).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(data, pairs(&[("Cost Center", &["42"]), ("Environment", &["Staging", "UAT"])]));
    let key = &whole["Data"][1]["Key"];
    assert_eq!((key["Guid"].as_str(), key["Type"].as_i64()), (Some(env_guid.as_str()), Some(2)), "{key}");
    assert_eq!(key["AllowedValues"], json!(["Staging", "UAT"]));
    assert_eq!(whole["Locked"], false);
    // GET Certificates/{guid} shows them as the product does (vcert's CustomFieldDetails).
    let (status, _, obj) = c.get(&alice, &format!("/vedsdk/certificates/{}", guid.trim_matches(['{', '}']))).await;
    assert_eq!(status, 200, "{obj}");
    assert_eq!(
        obj["CustomFields"],
        json!([{"Name": "Cost Center", "Type": "Text", "Value": ["42"]}, {"Name": "Environment", "Type": "List", "Value": ["Staging", "UAT"]}])
    );
    // Metadata/Get of an object without fields answers the minimal shape, `{"Data": [], "Locked": false}` (vcert calls it
    // after every request with custom fields).
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request("plain.example.com", json!([]))).await;
    assert_eq!(status, 200, "{v}");
    let plain = v["CertificateDN"].as_str().unwrap().to_owned();
    let (status, v) = c.post(&alice, "/vedsdk/metadata/get", json!({"DN": plain})).await;
    assert_eq!((status, v), (200, json!({"Data": [], "Locked": false})));

    // With All, every field that applies, values or not.
    let (status, v) = c.post(&alice, "/vedsdk/metadata/get", json!({"DN": plain, "All": true})).await;
    assert_eq!(status, 200, "{v}");
    let labels: Vec<(&str, &Value)> =
        v["Data"].as_array().unwrap().iter().map(|d| (d["Key"]["Label"].as_str().unwrap(), &d["Value"])).collect();
    assert_eq!(labels, vec![("Cost Center", &json!([])), ("Environment", &json!([]))]);

    // The fields that apply, per object and per class.
    let (status, v) = c.post(&alice, "/vedsdk/metadata/getitems", json!({"DN": dn})).await;
    assert_eq!((status, v["Items"].as_array().map(Vec::len), v["Result"].as_i64()), (200, Some(2), Some(0)), "{v}");
    assert_eq!(v["Items"][0]["Label"], "Cost Center");
    let (status, v) = c.post(&dave, "/vedsdk/metadata/getitemsforclass", json!({"ConfigClass": "X509 Certificate"})).await;
    assert_eq!((status, v["Items"].as_array().map(Vec::len)), (200, Some(2)), "{v}");
    let (status, v) = c.post(&dave, "/vedsdk/metadata/getitemsforclass", json!({"ConfigClass": "Device"})).await;
    assert_eq!((status, v), (200, json!({"Result": 0, "Items": []})));
    let (status, _, v) = c.get(&dave, "/vedsdk/metadata/items").await;
    assert_eq!((status, v["Items"].as_array().map(Vec::len)), (200, Some(2)), "{v}");

    // Metadata/Set as vcert's fallback sends it (KeepExisting true), and the product's result codes.
    let set = |data: Value, keep: bool| json!({"DN": dn, "GuidData": data, "KeepExisting": keep});
    let (status, v) = c.post(&alice, "/vedsdk/metadata/set", set(json!([{"ItemGuid": cost_guid, "List": ["7"]}]), true)).await;
    assert_eq!((status, v), (200, json!({"Locked": false, "Result": 0})));
    let (_, data, _) = metadata(&c, &alice, &dn).await;
    assert_eq!(data, pairs(&[("Cost Center", &["7"]), ("Environment", &["Staging", "UAT"])]));
    let unknown = json!([{"ItemGuid": "{00000000-0000-4000-8000-000000000000}", "List": ["1"]}]);
    let (status, v) = c.post(&alice, "/vedsdk/metadata/set", set(unknown, true)).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(4)), "an unknown item: {v}");
    let (status, v) = c.post(&alice, "/vedsdk/metadata/set", set(json!([{"ItemGuid": env_guid, "List": ["Prod"]}]), true)).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(17)), "a value outside the list: {v}");
    // Bodies that are not the product's shapes are 400 with Error, never a 500.
    for body in [
        json!({"DN": dn, "GuidData": "x"}),
        json!({"DN": dn, "GuidData": [{"ItemGuid": cost_guid, "List": [1]}]}),
        json!({"DN": dn, "GuidData": [{"List": ["1"]}]}),
        json!({"DN": dn, "GuidData": [], "KeepExisting": "maybe"}),
        json!({"GuidData": []}),
        json!({"DN": dn, "CustomFields": 3}),
    ] {
        let (status, v) = c.post(&alice, "/vedsdk/metadata/set", body.clone()).await;
        assert!(status == 400 && v["Error"].is_string(), "{body}: {status} {v}");
    }
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request("odd.example.com", json!([{"Values": ["1"]}]))).await;
    assert!(status == 400 && v["Error"].is_string(), "a field without a name: {status} {v}");

    // Rights: Write to set, Read to read; a missing right is 403, and nothing changes.
    let (status, v) = c.post(&bob, "/vedsdk/metadata/set", set(json!([{"ItemGuid": cost_guid, "List": ["0"]}]), true)).await;
    assert_eq!(status, 403, "{v}");
    let (status, data, _) = metadata(&c, &bob, &dn).await;
    assert_eq!((status, data), (200, pairs(&[("Cost Center", &["7"]), ("Environment", &["Staging", "UAT"])])));
    let (status, _, v) = metadata(&c, &dave, &dn).await;
    assert_eq!(status, 403, "{v}");
    let (status, v) = c.post(&dave, "/vedsdk/metadata/getitems", json!({"DN": dn})).await;
    assert_eq!(status, 403, "{v}");

    // A renewal keeps them; KeepExisting false replaces them all.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": dn})).await;
    assert_eq!(status, 200, "{v}");
    let (_, data, _) = metadata(&c, &alice, &dn).await;
    assert_eq!(data, pairs(&[("Cost Center", &["7"]), ("Environment", &["Staging", "UAT"])]), "kept by the renewal");
    let (status, v) = c.post(&alice, "/vedsdk/metadata/set", set(json!([{"ItemGuid": env_guid, "List": ["UAT"]}]), false)).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(0)), "{v}");
    let (_, data, _) = metadata(&c, &alice, &dn).await;
    assert_eq!(data, pairs(&[("Environment", &["UAT"])]));
    // A re-enrolling request sets the fields it names and keeps the others.
    let again = request("fields.example.com", json!([{"Name": "Cost Center", "Values": ["9"]}]));
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", again).await;
    assert_eq!(status, 200, "{v}");
    let (_, data, _) = metadata(&c, &alice, &dn).await;
    assert_eq!(data, pairs(&[("Cost Center", &["9"]), ("Environment", &["UAT"])]));

    // A removed field takes its values; the log has every definition and every set, chained.
    assert!(server.admin(&["fields", "remove", "ENVIRONMENT"], "").contains("removed"));
    let (_, data, _) = metadata(&c, &alice, &dn).await;
    assert_eq!(data, pairs(&[("Cost Center", &["9"])]));
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    let count = |kind: &str| events.matches(&format!("\"{kind}\"")).count();
    assert_eq!(count("certificate.field_created"), 2, "{events}");
    assert_eq!(count("certificate.field_removed"), 1);
    assert_eq!(count("certificate.fields_set"), 2, "two sets written, none for a refusal");
    let verified = server.admin(&["events", "verify"], "");
    assert!(verified.contains("event log intact"), "{verified}");
}
