//! Custom fields (the product's metadata items) on certificate objects: the values a request
//! writes, and `Metadata/Get`, `GetItems` and `Set`.

use super::*;

/// The class of an object: one made with `Config/Create` is the class it was made as.
pub fn class_of(r: &CertRecord) -> &'static str {
    if r.template.is_empty() { ccert::CERTIFICATE_CLASS } else { ccert::CREATED_CLASS }
}

fn field_error(text: impl std::fmt::Display) -> CertError {
    CertError::Invalid(format!("Custom Field error. {text}"))
}

/// The values a Request's `CustomFields` write with the object (by the field's name, any case):
/// a field that is not defined, does not apply to the object's class or refuses a value is a
/// 400 `Custom Field error. …` and nothing is issued. A new object starts with only these; an
/// existing one keeps the values of fields not named.
pub(super) fn request_fields(defined: &[CertField], input: &RequestInput, existing: Option<&CertRecord>) -> Result<FieldValues> {
    let mut out = FieldValues { replace: existing.is_none(), values: Vec::new() };
    if input.custom_fields.is_empty() {
        return Ok(out);
    }
    let class = existing.map_or(ccert::CERTIFICATE_CLASS, class_of);
    for (name, values) in &input.custom_fields {
        let Some(f) = defined.iter().find(|f| f.name.eq_ignore_ascii_case(name.trim())) else {
            return Err(field_error(format!("Custom Field {} does not exist.", name.trim())));
        };
        if !fields::applies(&f.classes, class) {
            return Err(field_error(format!("Custom Field {} does not apply to class {class}.", f.name)));
        }
        fields::check_values(&f.name, f.kind, &f.allowed, values).map_err(|r| field_error(r.text))?;
        match out.values.iter_mut().find(|(g, _)| *g == f.guid) {
            Some((_, v)) => v.extend(values.iter().cloned()),
            None => out.values.push((f.guid.clone(), values.clone())),
        }
    }
    Ok(out)
}

/// The object of `dn` when the caller holds `need` on it (else 403; an object the caller may not
/// know of is one that does not exist).
async fn object_with(app: &App, c: &Caller, dn: &str, need: Rights, what: &str) -> Result<CertRecord> {
    let r = object(app, c, dn).await?;
    if !c.perms.effective(&r.path).implied().contains(need) {
        return Err(CertError::Denied(format!(
            "{what} of {} needs {} on it.",
            r.path,
            if need == Rights::READ { "Read" } else { "Write" }
        )));
    }
    Ok(r)
}

/// Object `r`'s custom field values with their definitions, by the field's name.
pub async fn field_values(app: &App, r: &CertRecord) -> Result<Vec<(CertField, Vec<String>)>> {
    let values = app.store.cert_field_values(r.path.key().to_owned()).await?;
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let defined = app.store.cert_fields().await?;
    Ok(defined.into_iter().filter_map(|f| values.iter().find(|(g, _)| *g == f.guid).map(|(_, v)| (f.clone(), v.clone()))).collect())
}

/// `Metadata/Get`: Read on the object; its fields that hold values (with `all`, every field
/// that applies to it, those without values with none).
pub async fn metadata_get(app: &App, c: &Caller, dn: &str, all: bool) -> Result<Vec<(CertField, Vec<String>)>> {
    let r = object_with(app, c, dn, Rights::READ, "Reading the custom fields").await?;
    if !all {
        return field_values(app, &r).await;
    }
    let values = app.store.cert_field_values(r.path.key().to_owned()).await?;
    let class = class_of(&r);
    Ok(app
        .store
        .cert_fields()
        .await?
        .into_iter()
        .filter(|f| fields::applies(&f.classes, class) || values.iter().any(|(g, _)| *g == f.guid))
        .map(|f| {
            let v = values.iter().find(|(g, _)| *g == f.guid).map(|(_, v)| v.clone()).unwrap_or_default();
            (f, v)
        })
        .collect())
}

/// `Metadata/GetItems`: Read on the object; the fields that apply to its class.
pub async fn metadata_items(app: &App, c: &Caller, dn: &str) -> Result<Vec<CertField>> {
    let r = object_with(app, c, dn, Rights::READ, "Reading the custom fields").await?;
    let class = class_of(&r);
    Ok(app.store.cert_fields().await?.into_iter().filter(|f| fields::applies(&f.classes, class)).collect())
}

/// The fields that apply to `class` (`Metadata/GetItemsForClass`; every field for `None`).
pub async fn fields_for_class(app: &App, class: Option<&str>) -> Result<Vec<CertField>> {
    let all = app.store.cert_fields().await?;
    Ok(match class {
        None => all,
        Some(k) => all.into_iter().filter(|f| fields::applies(&f.classes, k)).collect(),
    })
}

/// `Metadata/Set`: Write on the object (re-checked in the write); each `(ItemGuid, List)` sets
/// that field's values (an empty list clears it); without `keep_existing` every other field is
/// cleared. Answers the product's result code: 0, or why nothing was written
/// (`fields::result`: an unknown item 4, not for this class 18, a value not in the list 17).
pub async fn metadata_set(app: &App, c: &Caller, dn: &str, data: &[(String, Vec<String>)], keep_existing: bool) -> Result<i64> {
    let r = object_with(app, c, dn, Rights::WRITE, "Setting the custom fields").await?;
    let defined = app.store.cert_fields().await?;
    let class = class_of(&r);
    let mut set = FieldValues { replace: !keep_existing, values: Vec::new() };
    for (item, values) in data {
        let Some(f) = ObjectGuid::parse(item).and_then(|g| defined.iter().find(|f| f.guid == g.braced())) else {
            return Ok(fields::result::INVALID_ITEM);
        };
        if !fields::applies(&f.classes, class) {
            return Ok(fields::result::ITEM_NOT_VALID_FOR_CLASS);
        }
        if let Err(refused) = fields::check_values(&f.name, f.kind, &f.allowed, values) {
            return Ok(refused.code);
        }
        set.values.push((f.guid.clone(), values.clone()));
    }
    let names: Vec<&str> = set.values.iter().filter_map(|(g, _)| defined.iter().find(|f| f.guid == *g).map(|f| f.name.as_str())).collect();
    let event = c.event(app, EventKind::CertificateFieldsSet, r.cert_id()).detail(format!(
        "certificate={} fields={} keep_existing={keep_existing}",
        r.path,
        names.join(",")
    ));
    match app.store.set_cert_field_values(r.path.key().to_owned(), set, Some(c.writer()), event).await? {
        Checked::Done(true) => Ok(fields::result::SUCCESS),
        Checked::Done(false) => Err(no_certificate(r.path.as_str())),
        Checked::Denied => Err(CertError::Denied(format!("Setting the custom fields of {} needs Write on it.", r.path))),
    }
}
