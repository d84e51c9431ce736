// A real, independent OpenID provider on loopback for the tests: npm `oidc-provider` (panva's, OpenID
// Certified), configured by the JSON argument:
//   node oidc_provider.mjs '{"clients": [{"client_id", "client_secret", "redirect_uris"}],
//                            "accounts": {"<sub>": {"email", "email_verified", "name", ...claims}},
//                            "issued": "<file>"}'
// With "issued", every token response it sends (ID, access and refresh tokens) is appended to that file as a JSON
// line: tests look for them where they must not be (the server's log). It prints {"issuer": "http://127.0.0.1:<port>"} once it listens, then serves until killed.
// Discovery, JWKS, PKCE, the ID token (signed with a fresh RSA key), UserInfo and the RFC 9207 `iss` of the
// authorization response are the library's own. Only the person is played: the interaction page below is a
// form with a `login` field (the account's sub, no password) that finishes login and consent in one step,
// which is how oidc-provider's documentation shows custom interactions.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import Provider from "oidc-provider";

const config = JSON.parse(process.argv[2] ?? "{}");
const accounts = config.accounts ?? {};
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg: "RS256", use: "sig" };

async function start() {
  const server = (await import("node:http")).createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: (config.clients ?? []).map((c) => ({
      grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "client_secret_basic",
      ...c,
    })),
    jwks: { keys: [signing] },
    cookies: { keys: [randomUUID()] },
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], tenant: ["tid"] },
    scopes: ["openid", "email", "profile", "tenant"],
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      if (!accounts[sub]) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...accounts[sub] }) };
    },
  });
  provider.proxy = false;

  provider.use(async (ctx, next) => {
    await next();
    if (config.issued && ctx.path === "/token" && ctx.body && typeof ctx.body === "object") {
      appendFileSync(config.issued, `${JSON.stringify(ctx.body)}\n`);
    }
  });

  provider.use(async (ctx, next) => {
    const match = ctx.path.match(/^\/interaction\/([^/]+)$/);
    if (!match) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (ctx.method === "GET") {
      ctx.type = "html";
      ctx.body = `<!doctype html><form method="post" action="/interaction/${details.uid}">` +
        `<input name="login" value=""><button>Sign in</button></form>`;
      return undefined;
    }
    const chunks = [];
    for await (const chunk of ctx.req) chunks.push(chunk);
    const login = new URLSearchParams(Buffer.concat(chunks).toString()).get("login");
    if (!accounts[login]) {
      ctx.status = 400;
      ctx.body = "unknown account";
      return undefined;
    }
    const grant = new provider.Grant({ accountId: login, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    const grantId = await grant.save();
    return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: login }, consent: { grantId } },
      { mergeWithLastSubmission: false });
  });

  server.on("request", provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
}

start().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
