//! Who decided a suspension — every approver of a run that needs several,
//! not only the last — and which hosts own the stored runs.

use std::collections::BTreeMap;

use crate::db::{Query, placeholders};
use crate::{Store, StoreError};

/// How many suspensions one statement asks about: well inside either
/// backend's limit on bound arguments.
const PER_STATEMENT: usize = 500;

impl Store {
    /// The people whose decisions stand on each of `suspensions` (the
    /// [`OpenRun::suspension_id`](crate::OpenRun::suspension_id) of a
    /// listing): partial approvals included, voided decisions left out,
    /// oldest first, each name once. A suspension nobody decided is absent.
    pub async fn deciders(
        &self,
        suspensions: &[i64],
    ) -> Result<BTreeMap<i64, Vec<String>>, StoreError> {
        let mut deciders: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for chunk in suspensions.chunks(PER_STATEMENT) {
            let mut query = Query::new(format!(
                "SELECT suspension_id, decided_by FROM decision
                 WHERE voided IS NULL AND suspension_id IN ({}) ORDER BY id",
                placeholders(1, chunk.len())
            ));
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&self.pool).await? {
                let suspension: i64 = row.try_get("suspension_id")?;
                let name: String = row.try_get("decided_by")?;
                let names = deciders.entry(suspension).or_default();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        Ok(deciders)
    }
}

impl Store {
    /// The hosts that own a stored run, by name, each once, in order: the
    /// host programs that have used this store.
    pub async fn run_owners(&self) -> Result<Vec<String>, StoreError> {
        let mut owners = Vec::new();
        for row in Query::new("SELECT DISTINCT owner FROM suspended_run ORDER BY owner")
            .fetch_all(&self.pool)
            .await?
        {
            owners.push(row.try_get::<String, _>("owner")?);
        }
        Ok(owners)
    }
}
