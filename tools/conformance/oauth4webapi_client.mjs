// An independent OAuth 2 client (oauth4webapi, strict by design) against this server's authorization server.
// Two steps, state in JSON between them, because a person (the test, over HTTP) signs in between:
//   node oauth4webapi_client.mjs start  '{"issuer": ..., "redirect_uri": ..., "resource": ...}'
// (it asks for no scope: the server grants every scope it has, which a fork's may be any)
//   node oauth4webapi_client.mjs finish '{...what start printed, "callback": <the redirect the browser got>}'
// Each prints one JSON object; a refusal of the library (a missing iss, a wrong state, a bad token) is an
// exception, printed as {"error": ...} with exit 1.
import * as oauth from "oauth4webapi";

const [step, input] = [process.argv[2], JSON.parse(process.argv[3])];
const insecure = { [oauth.allowInsecureRequests]: true }; // the test server is http on loopback

async function discover(issuer) {
  const url = new URL(issuer);
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { algorithm: "oauth2", ...insecure }));
}

async function start() {
  const as = await discover(input.issuer);
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(as, {
      redirect_uris: [input.redirect_uri], token_endpoint_auth_method: "none", client_name: "oauth4webapi",
    }, insecure));
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  for (const [k, v] of Object.entries({
    response_type: "code", client_id: registered.client_id, redirect_uri: input.redirect_uri, state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    resource: input.resource,
  })) url.searchParams.set(k, v);
  return { ...input, client_id: registered.client_id, verifier, state, authorization_url: url.href };
}

async function finish() {
  const as = await discover(input.issuer);
  const client = { client_id: input.client_id };
  const auth = oauth.None();
  // The callback: the state it was sent, and the issuer it must name (RFC 9207; the metadata promises it).
  const params = oauth.validateAuthResponse(as, client, new URL(input.callback), input.state);
  const extra = { additionalParameters: { resource: input.resource }, ...insecure };
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, await oauth.authorizationCodeGrantRequest(
    as, client, auth, params, input.redirect_uri, input.verifier, extra));
  // The access token as a resource server checks one (RFC 9068): typ at+jwt, iss, aud, exp, sub, client_id.
  const request = new Request(input.resource, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  const claims = await oauth.validateJwtAccessToken(as, request, input.resource, insecure);
  const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(
    as, client, auth, tokens.refresh_token, extra));
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, refreshed.refresh_token,
    insecure));
  let afterRevocation;
  try {
    await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(
      as, client, auth, refreshed.refresh_token, extra));
    afterRevocation = "accepted";
  } catch (error) {
    afterRevocation = error.error ?? error.code ?? String(error);
  }
  return {
    token_type: tokens.token_type, scope: tokens.scope, expires_in: tokens.expires_in,
    sub: claims.sub, aud: claims.aud, client_id: claims.client_id, rotated: refreshed.refresh_token !== tokens.refresh_token,
    access_token: refreshed.access_token, after_revocation: afterRevocation,
  };
}

try {
  console.log(JSON.stringify(step === "start" ? await start() : await finish()));
} catch (error) {
  console.log(JSON.stringify({ error: `${error.name}: ${error.message}`, code: error.code ?? null, cause: String(error.cause ?? "") }));
  process.exit(1);
}
