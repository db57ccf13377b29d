//! One behaviour suite for every store backend. Each case gets a fresh,
//! empty store. PostgreSQL runs when the server `STRONGROOM_TEST_POSTGRES_URL`
//! names is reachable (`strongroom_testkit::pg_url_or_skip`); with
//! `STRONGROOM_REQUIRE_ALL_TESTS=1` an unreachable server fails the run
//! instead of skipping.
//!
//! `cases`: the store's behaviour method by method; `deletion`: deleting
//! users, integrations and folders, and events newest first; `kinds`: the
//! row codec and the error kinds; `opening`: `open_existing` and `probe`
//! create nothing; `tokens`: token storage that does not grow with
//! refreshes, and the event archive; `machines`:
//! JWT issuers, mappings, machine identities and the JWT replay record,
//! attacked concurrently (on PostgreSQL through two stores, as two replicas).
//! create nothing; `groups`: groups in the rights model and on
//! integrations, and a removal racing writes; `group_admin`: groups made
//! with members, owners and teams, membership batches, renames, racing changes; `tokens`: token storage
//! that does not grow with refreshes, and the event archive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cases;
mod certs;
mod deletion;
mod findings;
mod group_admin;
mod groups;
mod integration_versions;
mod kinds;
mod machines;
mod opening;
mod recheck;
mod tokens;
mod tree;

/// Every case that needs a store alone.
mod all {
    pub(crate) use super::cases::*;
    pub(crate) use super::certs::*;
    pub(crate) use super::deletion::*;
    pub(crate) use super::findings::*;
    pub(crate) use super::group_admin::*;
    pub(crate) use super::groups::*;
    pub(crate) use super::integration_versions::*;
    pub(crate) use super::kinds::failures_are_counted_by_kind_and_expected_answers_are_not;
    pub(crate) use super::machines::{jwt_grants_at_once_each_land_once, machine_config, machine_grants_and_their_identities};
    pub(crate) use super::recheck::*;
    pub(crate) use super::tokens::archiving_moves_the_logs_start_once;
    pub(crate) use super::tree::*;
}

use std::sync::Arc;
use strongroom_core::event::Event;
use strongroom_core::identity::{GroupId, UserId};
use strongroom_core::vault::{FolderPath, Rights};
use strongroom_store::{Holder, RightsChange, RightsOutcome, Store, StoreError};

/// Rights set as fixtures, through the write production uses
/// (`change_rights`, on an existing folder, with no delegated caller).
pub(crate) trait RightsFixtures {
    async fn set_rights(&self, f: FolderPath, user: UserId, rights: Rights, event: Event) -> Result<(), StoreError>;
    async fn set_group_rights(&self, f: FolderPath, group: GroupId, rights: Rights, event: Event) -> Result<(), StoreError>;
}

impl RightsFixtures for dyn Store {
    async fn set_rights(&self, f: FolderPath, user: UserId, rights: Rights, event: Event) -> Result<(), StoreError> {
        let outcome = self.change_rights(f.clone(), Holder::User(user), RightsChange::Set(rights), None, event).await?;
        assert!(matches!(outcome, RightsOutcome::Changed | RightsOutcome::Unchanged), "{f}: {outcome:?}");
        Ok(())
    }
    async fn set_group_rights(&self, f: FolderPath, group: GroupId, rights: Rights, event: Event) -> Result<(), StoreError> {
        let outcome = self.change_rights(f.clone(), Holder::Group(group), RightsChange::Set(rights), None, event).await?;
        assert!(matches!(outcome, RightsOutcome::Changed | RightsOutcome::Unchanged), "{f}: {outcome:?}");
        Ok(())
    }
}

async fn sqlite() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = strongroom_store::open(dir.path().join("t.db").to_str().unwrap()).await.unwrap();
    (store, dir)
}

/// A fresh, empty schema on the test server.
async fn postgres() -> Option<Arc<dyn Store>> {
    let url = strongroom_testkit::pg_url_or_skip("PostgreSQL conformance")?;
    Some(strongroom_store::postgres::testing::fresh_schema(&url).await.unwrap())
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let (store, _dir) = super::sqlite().await;
                    super::all::$case(store).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    if let Some(store) = super::postgres().await {
                        super::all::$case(store).await;
                    }
                }
            )*
        }
    };
}

conformance!(
    an_integration_change_revokes_the_grants_it_stops,
    console_epochs_move_on_sign_out_password_and_disable,
    replay_records_go_at_their_tokens_expiry,
    client_events_hold_their_quota_under_concurrency,
    folders_are_objects_with_guids,
    explicit_entries_change_only_as_asked,
    racing_entry_changes_each_happen_once,
    a_delegated_permission_change_rechecks_the_managers_right,
    a_racing_removal_of_the_managers_right_is_never_bypassed,
    a_permission_change_on_a_missing_folder_is_not_found,
    a_renamed_folder_keeps_its_guid_rights_and_entries,
    users,
    integrations,
    device_flow,
    device_code_redeems_once_under_concurrency,
    refresh_rotates_once_under_concurrency,
    refreshes_of_many_grants_at_once_each_move_once,
    context_reads_at_once_each_get_their_own,
    many_row_reads_at_once_each_get_their_own,
    retry_replaces_an_unused_pair_under_concurrency,
    standing_follows_the_user_and_integration,
    vault_writes_recheck_rights,
    revoke,
    throttle,
    throttle_holds_under_concurrency,
    user_changes_end_grants,
    access_follows_the_integration_and_user,
    events_follow_rights,
    event_chain,
    purge,
    device_start_quota,
    vault_folders_and_rights,
    vault_entries_owners_and_associations,
    readiness_and_pool,
    racing_writes_on_one_row_all_answer,
    simultaneous_associations_each_get_their_answer,
    the_master_key_check_is_recorded_once,
    failures_are_counted_by_kind_and_expected_answers_are_not,
    deleting_a_user_ends_their_grants_and_takes_their_rights,
    deleting_an_integration_ends_its_grants_and_codes,
    a_folder_is_deleted_when_empty_or_with_everything_below_it,
    events_newest_first_and_before_a_sequence_number,
    archiving_moves_the_logs_start_once,
    machine_config,
    machine_grants_and_their_identities,
    jwt_grants_at_once_each_land_once,
    groups_and_their_members,
    group_rights_add_up_and_stop_with_the_membership,
    a_group_on_an_integration_admits_its_members_while_they_are_members,
    a_removal_from_a_group_wins_against_racing_writes,
    a_persons_approved_grants_are_their_live_ones,
    an_oidc_state_is_taken_once_under_concurrency,
    a_directory_sync_records_when_the_person_signed_in,
    a_grants_last_address_follows_its_token_issues,
    groups_made_with_members_owners_and_teams,
    racing_membership_changes_end_as_the_log_says,
    concurrent_integration_updates_keep_every_change,
    concurrent_issuances_on_one_dn_leave_one_current,
    a_serial_is_revoked_once_and_rights_are_rechecked,
    a_ca_certificate_is_installed_once_under_concurrency,
    an_object_without_a_certificate_is_made_once_then_enrolled,
    custom_fields_are_defined_once_and_their_values_follow_the_object,
    racing_approvals_of_one_request_issue_once,
    a_folder_policy_changes_once_from_what_was_read,
    a_request_context_is_read_in_one_call,
);

/// The same, for cases that need the store's copier too.
macro_rules! conformance_with_copier {
    ($($case:ident),* $(,)?) => {
        mod copier_on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let dir = tempfile::tempdir().unwrap();
                    let (store, copier) = strongroom_store::transfer::open(dir.path().join("t.db").to_str().unwrap()).await.unwrap();
                    super::with_copier::$case(store, copier).await;
                }
            )*
        }
        mod copier_on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(url) = strongroom_testkit::pg_url_or_skip("PostgreSQL conformance") else { return };
                    let url = strongroom_store::postgres::testing::fresh_schema_url(&url).await.unwrap();
                    let (store, copier) = strongroom_store::transfer::open(&url).await.unwrap();
                    super::with_copier::$case(store, copier).await;
                }
            )*
        }
    };
}

/// Every case that needs the store's copier too.
mod with_copier {
    pub(crate) use super::kinds::{
        a_duplicate_key_and_a_broken_reference_are_told_apart, rows_made_by_the_codec_read_back_through_the_store,
    };
    pub(crate) use super::tokens::ten_thousand_refreshes_leave_one_row;
}

conformance_with_copier!(
    rows_made_by_the_codec_read_back_through_the_store,
    a_duplicate_key_and_a_broken_reference_are_told_apart,
    ten_thousand_refreshes_leave_one_row,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_jwt_is_accepted_once_on_sqlite() {
    let (store, _dir) = sqlite().await;
    machines::one_jwt_is_accepted_once(vec![store]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_jwt_is_accepted_once_across_two_postgresql_stores() {
    let Some(url) = strongroom_testkit::pg_url_or_skip("PostgreSQL conformance") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&url).await.unwrap();
    let a = strongroom_store::open(&url).await.unwrap();
    let b = strongroom_store::open(&url).await.unwrap();
    machines::one_jwt_is_accepted_once(vec![a, b]).await;
}
