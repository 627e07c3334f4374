//! `toolgate gateway --upstream URL --token-file PATH`: a stdio gateway
//! that opens no store and forwards to a gateway served over HTTP
//! ([`toolgate_gateway::forward`]).

use toolgate::visible::visible;

use crate::{Failure, GatewayArgs};

/// Forwards the client on stdio to `args.upstream` until it goes away.
pub(crate) async fn forward(args: &GatewayArgs) -> Result<(), Failure> {
    let Some(url) = args.upstream.as_deref() else {
        return Err(Failure::Usage(
            "`--upstream URL` names the gateway to forward to".to_owned(),
        ));
    };
    let parsed = url::Url::parse(url).map_err(|error| {
        Failure::Usage(format!(
            "`--upstream {}` is not a URL: {error}",
            visible(url)
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Failure::Usage(format!(
            "`--upstream {}`: give the gateway's `http://HOST:PORT/mcp` or `https://…/mcp`",
            visible(url)
        )));
    }
    if parsed.scheme() == "http"
        && !parsed.host_str().is_some_and(|host| {
            host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
    {
        return Err(Failure::Refused(format!(
            "`--upstream {}`: a token crosses a network only over https",
            visible(url)
        )));
    }
    let Some(path) = &args.token_file else {
        return Err(Failure::Usage(
            "`--upstream` needs `--token-file PATH`, the token to forward with".to_owned(),
        ));
    };
    let token = std::fs::read_to_string(path)
        .map_err(|error| {
            Failure::Usage(format!(
                "the token file {} cannot be read: {error}",
                visible(&path.display().to_string())
            ))
        })?
        .trim()
        .to_owned();
    if token.is_empty() {
        return Err(Failure::Usage(format!(
            "the token file {} is empty",
            visible(&path.display().to_string())
        )));
    }
    toolgate_gateway::forward::forward_stdio(url, &token)
        .await
        .map_err(|error| Failure::Error(error.to_string()))
}
