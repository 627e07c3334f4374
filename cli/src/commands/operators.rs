//! `toolgate operator`: the people who sign in to the web inbox to decide —
//! added with a one-time sign-in link, listed, revoked.

use std::time::Duration;

use serde_json::json;
use toolgate_store::Store;

use crate::output::{Col, Out, date_utc, say, timestamp};
use crate::{Failure, OperatorCommand};

pub(super) async fn operator(
    store: &Store,
    out: Out,
    command: OperatorCommand,
) -> Result<(), Failure> {
    match command {
        OperatorCommand::Add {
            name,
            public_url,
            valid_for_mins,
            may_declare,
        } => {
            let link = store
                .add_operator(
                    &name,
                    Duration::from_secs(valid_for_mins.saturating_mul(60)),
                )
                .await?;
            if let Some(may) = may_declare {
                store.set_may_declare(&name, may).await?;
            }
            let url = format!(
                "{}/sign-in?token={}",
                public_url.trim_end_matches('/'),
                link.secret
            );
            if out.json {
                return out.json(&json!({
                    "operator": link.operator,
                    "link": url,
                    "expires_at": link.expires_at,
                    "may_declare": may_declare,
                }));
            }
            say!(
                "operator `{}`: sign in once, before {}, with\n{}",
                link.operator,
                timestamp(link.expires_at),
                url
            );
            Ok(())
        }
        OperatorCommand::Revoke { name } => {
            let ended = store.revoke_operator(&name).await?;
            if out.json {
                return out
                    .json(&json!({"operator": name, "revoked": true, "sessions_ended": ended}));
            }
            say!(
                "operator `{}`: revoked; {} session{} ended, every unused sign-in link stopped working",
                name,
                ended,
                if ended == 1 { "" } else { "s" }
            );
            Ok(())
        }
        OperatorCommand::List => {
            let operators = store.operators().await?;
            if out.json {
                return out.json(
                    &operators
                        .iter()
                        .map(|o| {
                            json!({
                                "operator": o.name, "added_at": o.created_at,
                                "revoked_at": o.revoked_at, "live_sessions": o.live_sessions,
                                "may_declare": o.may_declare,
                            })
                        })
                        .collect::<Vec<_>>(),
                );
            }
            let mut table = out.table(&[
                "OPERATOR",
                "ADDED (UTC)",
                "STATE",
                "LIVE SESSIONS",
                "AND FROM NOW ON",
            ]);
            for o in &operators {
                table.row([
                    Col::from(&o.name),
                    Col::from(date_utc(o.created_at)),
                    Col::from(o.revoked_at.map_or_else(
                        || "active".to_owned(),
                        |at| format!("revoked at {}", date_utc(at)),
                    )),
                    Col::from(o.live_sessions.to_string()),
                    Col::from(if o.may_declare { "may declare" } else { "-" }),
                ]);
            }
            table.print();
            Ok(())
        }
    }
}
