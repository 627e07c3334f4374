//! The list of runs (`/s/KEY/`): how many wait, and per row what each is
//! — server, tools, requester and the way it came, its arguments in a
//! line, its age — narrowed by server, tool, requester, standing and a
//! search through a plain `GET` form, a page at a time; and the history
//! of decided runs. Every narrowing is the store's, in SQL
//! ([`toolgate_store::RunFilter`]): a page costs about the same however
//! many runs there are.

use std::fmt::Write as _;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use toolgate::visible::visible;
use toolgate_store::{OpenRun, RunFilter, RunView, Session, Standing, server_of};

use crate::guard::session_of;
use crate::pages::{at, base, page, path_segment};
use crate::{Inbox, PAGE, Refused};

/// How far the list counts: beyond it, "more than".
const COUNTED: u32 = 1_000;

/// How many characters of a run's arguments its row shows.
const SUMMARY: usize = 90;

/// How many characters of a run's id its row shows.
const SHORT_ID: usize = 8;

/// The list's query string: the page (`before`), the view, the filters.
/// Empty fields are no filter.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    before: Option<i64>,
    #[serde(default)]
    view: String,
    #[serde(default)]
    server: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    requester: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    q: String,
}

fn given(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

impl ListQuery {
    fn filter(&self) -> RunFilter {
        RunFilter {
            view: if self.view == "history" {
                RunView::History
            } else {
                RunView::Waiting
            },
            server: given(&self.server),
            tool: given(&self.tool),
            requester: given(&self.requester),
            standing: Standing::from_name(self.state.trim()),
            search: given(&self.q),
        }
    }
}

/// The query string that lists `filter`, from the suspension `before`
/// on: each value percent-encoded.
fn query_string(filter: &RunFilter, before: Option<i64>) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    if filter.view == RunView::History {
        pairs.push(("view", "history".to_owned()));
    }
    for (name, value) in [
        ("server", &filter.server),
        ("tool", &filter.tool),
        ("requester", &filter.requester),
        ("q", &filter.search),
    ] {
        if let Some(value) = value {
            pairs.push((name, value.clone()));
        }
    }
    if let Some(standing) = filter.standing {
        pairs.push(("state", standing.as_str().to_owned()));
    }
    if let Some(before) = before {
        pairs.push(("before", before.to_string()));
    }
    let mut out = String::new();
    for (index, (name, value)) in pairs.iter().enumerate() {
        out.push(if index == 0 { '?' } else { '&' });
        out.push_str(name);
        out.push('=');
        for byte in value.bytes() {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                out.push(char::from(byte));
            } else {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

pub(crate) async fn list(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Query(query): Query<ListQuery>,
) -> Result<Response, Refused> {
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let filter = query.filter();
    // Read first: a change while the list is read is sent to the page too.
    let since = crate::live::since(&inbox).await;
    let runs = inbox.store().runs_page(&filter, query.before, PAGE).await?;
    let count = inbox.store().count_runs(&filter, COUNTED).await?;
    let next = (runs.len() == PAGE as usize)
        .then(|| runs.last().map(|r| r.suspension_id))
        .flatten();
    let listed = Listed {
        session: &session,
        filter: &filter,
        runs: &runs,
        count,
        next,
        now: crate::now_ms(),
        since,
    };
    Ok(listed.page().into_response())
}

/// One page of the list, as rendered.
struct Listed<'a> {
    session: &'a Session,
    filter: &'a RunFilter,
    runs: &'a [OpenRun],
    /// How many runs the filter lists, counted up to [`COUNTED`] + 1.
    count: u64,
    /// The suspension the next page starts after.
    next: Option<i64>,
    now: i64,
    /// The newest change the list shows, which it follows from.
    since: Option<i64>,
}

impl Listed<'_> {
    /// The list's own address with `filter`.
    fn href(&self, filter: &RunFilter, before: Option<i64>) -> String {
        format!("{}/{}", base(self.session), query_string(filter, before))
    }

    /// The list narrowed further by `change`.
    fn narrowed(&self, change: impl FnOnce(&mut RunFilter)) -> String {
        let mut filter = self.filter.clone();
        change(&mut filter);
        self.href(&filter, None)
    }

    fn page(&self) -> Markup {
        let history = self.filter.view == RunView::History;
        let title = if history { "History" } else { "Waiting" };
        let filtered = self.filter.server.is_some()
            || self.filter.tool.is_some()
            || self.filter.requester.is_some()
            || self.filter.standing.is_some()
            || self.filter.search.is_some();
        let count = if self.count > u64::from(COUNTED) {
            format!("more than {COUNTED} runs")
        } else if self.count == 1 {
            "1 run".to_owned()
        } else {
            format!("{} runs", self.count)
        };
        let waiting = RunFilter::default();
        let decided = RunFilter {
            view: RunView::History,
            ..RunFilter::default()
        };
        page(
            title,
            Some(self.session),
            &html! {
                nav.views {
                    a href=(self.href(&waiting, None)) aria-current=[(!history).then_some("page")] { "Waiting" }
                    a href=(self.href(&decided, None)) aria-current=[history.then_some("page")] { "History" }
                }
                (crate::live::list_follows(self.session, self.since))
                h1 {
                    (title) " "
                    span.count #count {
                        @if history { (count) " decided" } @else { (count) " waiting" }
                        @if filtered { ", matching the filter" }
                    }
                }
                (self.filters())
                // What the inbox's script reads again when a run changes.
                div #listing {
                @if self.runs.is_empty() {
                    p.empty {
                        @if filtered { "No run matches." }
                        @else if history { "Nothing was decided yet." }
                        @else { "Nothing waits." }
                    }
                } @else {
                    (self.table())
                }
                @if let Some(next) = self.next {
                    p.more { a href=(self.href(self.filter, Some(next))) { "Older runs →" } }
                }
                }
            },
        )
    }

    /// The filters: a plain `GET` form, which works without a script.
    fn filters(&self) -> Markup {
        let value = |v: &Option<String>| v.clone().unwrap_or_default();
        let cleared = RunFilter {
            view: self.filter.view,
            ..RunFilter::default()
        };
        html! {
            form.filters method="get" action={ (base(self.session)) "/" } {
                @if self.filter.view == RunView::History {
                    input type="hidden" name="view" value="history";
                }
                input.search type="search" name="q" value=(value(&self.filter.search))
                    placeholder="Search: run id, requester, host, tool" aria-label="Search";
                input type="text" name="server" value=(value(&self.filter.server))
                    placeholder="server" aria-label="Server";
                input type="text" name="tool" value=(value(&self.filter.tool))
                    placeholder="tool" aria-label="Tool";
                input type="text" name="requester" value=(value(&self.filter.requester))
                    placeholder="requester" aria-label="Requester";
                select name="state" aria-label="State" {
                    option value="" { "any state" }
                    @for standing in Standing::ALL {
                        option value=(standing.as_str()) selected[self.filter.standing == Some(standing)] {
                            (standing.label())
                        }
                    }
                }
                button type="submit" { "Filter" }
                " "
                a.clear href=(self.href(&cleared, None)) { "Clear" }
            }
        }
    }

    fn table(&self) -> Markup {
        html! {
            table.runs {
                thead { tr {
                    th { "Run" } th { "Server" } th { "Tools" } th { "Arguments" }
                    th { "Requested by" } th { "State" } th { "Age" }
                } }
                tbody {
                    @for run in self.runs { (self.row(run)) }
                }
            }
        }
    }

    fn row(&self, run: &OpenRun) -> Markup {
        let mut tools: Vec<&str> = run.calls.iter().map(|c| c.name.as_str()).collect();
        tools.sort_unstable();
        tools.dedup();
        let mut servers: Vec<Option<&str>> = tools.iter().map(|t| server_of(t)).collect();
        servers.sort_unstable();
        servers.dedup();
        let short: String = run.run_id.chars().take(SHORT_ID).collect();
        html! {
            tr {
                td.run {
                    a href={ (base(self.session)) "/runs/" (path_segment(&run.run_id)) } title=(run.run_id) {
                        code { (visible(&short)) @if run.run_id.chars().count() > SHORT_ID { "…" } }
                    }
                }
                td.server {
                    @for server in &servers {
                        @match server {
                            Some(server) => {
                                a.chip href=(self.narrowed(|f| f.server = Some((*server).to_owned()))) { bdi { (visible(server)) } }
                            }
                            None => { span.local { "local" } }
                        }
                        " "
                    }
                }
                td.tools {
                    @for tool in &tools {
                        a.chip href=(self.narrowed(|f| f.tool = Some((*tool).to_owned()))) {
                            bdi { (visible(tool.split_once('.').map_or(*tool, |(_, name)| name))) }
                        }
                        " "
                    }
                    @if run.calls.len() > 1 { span.calls { (run.calls.len()) " calls" } }
                    @if let Some(problem) = &run.problem { span.problem title=(problem) { "unreadable" } }
                }
                td.args { (summary(run)) }
                td.who {
                    a href=(self.narrowed(|f| f.requester = Some(run.requested_by.clone()))) { bdi { (visible(&run.requested_by)) } }
                    br;
                    small { (through(run)) }
                }
                td.state {
                    (visible(&run.standing()))
                    @if let Some(by) = &run.decided_by {
                        br; small { "decided by " bdi { (visible(by)) } }
                    }
                    @if let Some(expires) = run.expires_at.and_then(|e| i64::try_from(e).ok()).filter(|_| run.state == "open") {
                        br; small title=(at(expires)) { "expires " (ago(expires, self.now)) }
                    }
                }
                td.age title=(at(run.created_at)) { (ago(run.created_at, self.now)) }
            }
        }
    }
}

/// The way a run came: through the gateway from an MCP client (as it
/// declared itself), or from an agent's host.
fn through(run: &OpenRun) -> Markup {
    html! {
        @if toolgate_store::is_reserved_host_name(&run.owner) {
            "via "
            @if let Some(client) = &run.client { bdi { (visible(client)) } " through " }
            "gateway " bdi { (visible(&run.owner)) }
        } @else {
            "agent host " bdi { (visible(&run.owner)) }
        }
    }
}

/// The first call's arguments in one line — `key: value, …` — cut at
/// [`SUMMARY`] characters, hidden characters as escapes; escaped by the
/// markup once, like everything else.
fn summary(run: &OpenRun) -> Markup {
    let Some(first) = run.calls.first() else {
        return html! {};
    };
    let text = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => format!("\"{text}\""),
        other => other.to_string(),
    };
    let line = match &first.arguments {
        serde_json::Value::Object(fields) if fields.is_empty() => "no arguments".to_owned(),
        serde_json::Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| format!("{key}: {}", text(value)))
            .collect::<Vec<_>>()
            .join(", "),
        other => text(other),
    };
    let cut = line.chars().count() > SUMMARY;
    let line: String = line.chars().take(SUMMARY).collect();
    html! {
        span.summary { bdi { (visible(&line)) } @if cut { "…" } }
    }
}

/// How long ago `ms` (milliseconds since the epoch) was, from `now`; a
/// time to come is "in …".
fn ago(ms: i64, now: i64) -> String {
    let seconds = (now - ms) / 1000;
    let (amount, future) = if seconds < 0 {
        (-seconds, true)
    } else {
        (seconds, false)
    };
    let words = match amount {
        0..60 if !future => return "just now".to_owned(),
        0..60 => "a minute".to_owned(),
        60..3_600 => format!("{} min", amount / 60),
        3_600..172_800 => format!("{} h", amount / 3_600),
        _ => format!("{} days", amount / 86_400),
    };
    if future {
        format!("in {words}")
    } else {
        format!("{words} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_words() {
        let now = 10_000_000_000;
        assert_eq!(ago(now - 5_000, now), "just now");
        assert_eq!(ago(now - 180_000, now), "3 min ago");
        assert_eq!(ago(now - 7_200_000, now), "2 h ago");
        assert_eq!(ago(now - 3 * 86_400_000, now), "3 days ago");
        assert_eq!(ago(now + 600_000, now), "in 10 min");
    }

    #[test]
    fn a_filter_is_kept_in_the_links_it_makes() {
        let filter = RunFilter {
            view: RunView::History,
            tool: Some("git.push branch".into()),
            standing: Some(Standing::Done),
            ..RunFilter::default()
        };
        assert_eq!(
            query_string(&filter, Some(7)),
            "?view=history&tool=git.push%20branch&state=done&before=7"
        );
        assert_eq!(query_string(&RunFilter::default(), None), "");
    }
}
