//! Events clients write (`POST /vedsdk/Log`).

use strongroom_core::event::{ClientLog, EventKind};
use strongroom_core::grant::AccessContext;
use strongroom_core::throttle::Rule;
use strongroom_core::time::UnixTime;
use strongroom_store::StoreError;

use super::Origin;
use crate::App;

/// Writes a client's event to the chain, under the identity and client id
/// of the token that sent it: a `client.log` event whose `object` is the
/// `Component` and whose detail holds the rest, quoted. A client adds to the
/// log; it never writes an event of another kind or in another's name.
///
/// Each identity writes at most [`Rule::IDENTITY_CLIENT_EVENTS`] (120 a
/// minute, counted in the store, so on every replica together): past it,
/// `Ok(Err(until))` and nothing is written.
pub async fn write(app: &App, ctx: &AccessContext, entry: &ClientLog, origin: &Origin) -> Result<Result<(), UnixTime>, StoreError> {
    let identity = ctx.grant.user_id.identity();
    let event = app
        .event(EventKind::ClientLog, origin)
        .identity(&identity)
        .client_id(ctx.grant.client_id.as_str())
        .object(entry.field("Component").unwrap_or_default())
        .detail(entry.detail());
    app.store.append_client_event(event, format!("log:{identity}"), Rule::IDENTITY_CLIENT_EVENTS).await
}
